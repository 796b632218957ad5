"""TP007 bce-pairing: sigmoid output into BCEWithLogitsLoss, or raw logits into BCELoss.

Both directions need resolved evidence.  The loss is resolved through its
binding (aliases, assignments, call-site arguments, subclasses).  The input is
traced back with ``analysis.training.origins``:

* *sigmoid output*: ``torch.sigmoid``/``F.sigmoid``/``x.sigmoid()``, an
  ``nn.Sigmoid`` layer, an ``nn.Sequential`` ending in one, or a model defined
  in the file whose every ``forward`` return is one of these;
* *raw logits*: the output of a layer that produces unbounded scores
  (``nn.Linear``, convolutions, ``F.linear``), an ``nn.Sequential`` ending in
  one, or a model defined in the file whose every ``forward`` return is one.

Shape-only tensor methods (``squeeze``, ``view``...) keep what their receiver
was.  A model whose forward ends in anything else (an opaque call, a library
model, a tensor expression) is unknown, and the rule stays silent: a sigmoid
used for gating inside a block whose forward returns a linear layer's output
is therefore still logits, and a sigmoid computed for metrics next to a loss on
the logits is never an input of the loss.
"""
from __future__ import annotations

from typing import Optional, Tuple

from astroid import nodes

from ..analysis.semantic import branches, dataflow, infer
from ..analysis.training import models, origins
from ..analysis.training.torch_names import CROSS_ENTROPY_CLASSES, LOG_SOFTMAX_LOSSES, SIGMOID_FUNCTIONS, SIGMOID_LAYERS
from ._base import Rule, register, text_gate

#: Losses that apply sigmoid to their input themselves: they need raw logits.
LOGIT_LOSSES = frozenset({"torch.nn.BCEWithLogitsLoss", "torch.nn.functional.binary_cross_entropy_with_logits"})

#: Losses that take probabilities in [0, 1]: they need a sigmoid first.
PROBABILITY_LOSSES = frozenset({"torch.nn.BCELoss", "torch.nn.functional.binary_cross_entropy"})

#: Loss classes, for subclasses defined in the file (``class Weighted(nn.BCELoss)``).
LOGIT_LOSS_CLASSES = frozenset({"torch.nn.BCEWithLogitsLoss"})
PROBABILITY_LOSS_CLASSES = frozenset({"torch.nn.BCELoss"})

#: In-place sigmoid returns its (now squashed) receiver.
SIGMOID_INPLACE = frozenset({"torch.Tensor.sigmoid_"})

#: Tensor methods recognised by name when the receiver cannot be inferred (a model's output).
SIGMOID_METHODS = frozenset({"sigmoid", "sigmoid_"})

#: Layers whose output is an unbounded affine score: raw logits when they end a model.
LOGIT_LAYERS = frozenset(
    {
        "torch.nn.Linear",
        "torch.nn.Bilinear",
        "torch.nn.LazyLinear",
        "torch.nn.Conv1d",
        "torch.nn.Conv2d",
        "torch.nn.Conv3d",
        "torch.nn.ConvTranspose1d",
        "torch.nn.ConvTranspose2d",
        "torch.nn.ConvTranspose3d",
    }
)

#: Functions whose output is an affine score.
LOGIT_FUNCTIONS = frozenset({"torch.nn.functional.linear"})

#: How deep origins are followed (names, shape methods, forward() returns, Sequential layers).
MAX_DEPTH = 6

_MESSAGES = {
    "sigmoid": ("{}", "applies sigmoid twice: a worse model", "pass raw logits"),
    "logits": ("raw logits of {}", "wants probabilities: wrong loss or CUDA assert", "use BCEWithLogitsLoss"),
    "scores": ("logits shared with {}", "wants probabilities: CUDA assert", "use BCEWithLogitsLoss"),
}


@register
class BcePairing(Rule):
    code, slug = "TP007", "bce-pairing"
    skips_branches_not_taken = True  # ``if multi_class:`` with the flag False in every run: no run pairs them
    requires = text_gate(r"BCE|binary_cross_entropy")
    message = "{what} into {loss} {cost}; {fix}"
    quoted = ("what",)
    rationale = (
        "BCEWithLogitsLoss and F.binary_cross_entropy_with_logits apply sigmoid to their input; BCELoss and "
        "F.binary_cross_entropy expect probabilities. Feeding a sigmoid output to the first squashes twice: "
        "the run trains, but on inputs confined to [0.5, 0.73], with shrunken gradients and a worse model. "
        "Feeding raw logits to the second stops the run with an error as soon as one leaves [0, 1] (on CUDA a "
        "device-side assert), after training on scores misread as probabilities. The rule resolves the loss "
        "through its binding and traces the input back through local assignments, shape-only tensor methods, "
        "sigmoid calls and layers, nn.Sequential models, and the forward() of a model defined in the file. "
        "A loss picked by a branch (a conditional expression, or a method returning F.cross_entropy or "
        "F.binary_cross_entropy by task) is checked alternative by alternative; when the input cannot be "
        "traced but one alternative is cross-entropy, which takes logits, the BCE alternative gets logits too."
    )
    leaves_alone = (
        "It reports raw logits only when the model provably ends in a linear or convolution layer, and stays "
        "silent for sigmoid gating inside a block that still returns logits, for sigmoid used for metrics, "
        "and for models it cannot read. A choice between BCE and its with-logits form on an input it cannot "
        "trace is left alone (the model may squash its output in the same case)."
    )
    example_bad = """
        import torch
        import torch.nn as nn

        head = nn.Linear(128, 1)
        criterion = nn.BCEWithLogitsLoss()
        loss = criterion(torch.sigmoid(head(features)), targets)
    """
    example_good = """
        import torch
        import torch.nn as nn

        head = nn.Linear(128, 1)
        criterion = nn.BCEWithLogitsLoss()
        logits = head(features)
        loss = criterion(logits, targets)
        accuracy = ((torch.sigmoid(logits) > 0.5) == targets).float().mean()
    """

    def visit_call(self, node: nodes.Call) -> None:
        if not node.args and not node.keywords:
            return
        if not isinstance(node.func, (nodes.Name, nodes.Attribute, nodes.Call)):
            return
        expects = _expected_input(node.func)
        if expects is None:
            self._check_alternatives(node)
            return
        first = origins.input_argument(node)
        if first is None:
            return
        found = origins.Tracer(_call_kind, _layer_kind, MAX_DEPTH).trace(first)
        if found is None or found.kind == expects[0]:
            return
        what, cost, fix = _MESSAGES[found.kind]
        self.report(node, what=what.format(found.text), loss=expects[1], cost=cost, fix=fix)

    def _check_alternatives(self, node: nodes.Call) -> None:
        """A loss picked by a branch (``self.loss_func = self._get_loss_func(task)`` returning
        ``F.cross_entropy`` or ``F.binary_cross_entropy``): the BCE alternative is checked against
        the input.  An input that cannot be traced is logits when another alternative is
        cross-entropy, which takes logits: whichever the run picks, the same tensor reaches both."""
        if infer.safe_infer(node.func) is not None:
            return  # one value: a loss _expected_input does not know, not a choice between losses
        leaves = branches.alternatives(node.func)
        if not leaves or len(leaves) < 2:
            return
        needs = [_expected_input(leaf, scores=True) for leaf in leaves]
        first = origins.input_argument(node)
        if first is None:
            return
        found = origins.Tracer(_call_kind, _layer_kind, MAX_DEPTH).trace(first)
        cross_entropy = next((n[1] for n in needs if n is not None and n[0] == "scores"), None)
        for need in needs:
            if need is None or need[0] == "scores":
                continue
            if found is not None and found.kind != need[0]:
                what, cost, fix = _MESSAGES[found.kind]
                self.report(node, what=what.format(found.text), loss=need[1], cost=cost, fix=fix)
                return
            if found is None and need[0] == "sigmoid" and cross_entropy is not None:
                if _may_output_probabilities(first):
                    return  # ``Sequential(..., Sigmoid()) if k == 2 else ...``: the same choice may pick both
                what, cost, fix = _MESSAGES["scores"]
                self.report(node, what=what.format(cross_entropy), loss=need[1], cost=cost, fix=fix)
                return


#: Levels of plain assignments followed back from a loss input to the module call that made it.
_INPUT_HOPS = 3


def _may_output_probabilities(expr: nodes.NodeNG) -> bool:
    """``expr`` is (through plain assignments and shape methods) the output of a module whose class,
    read in the file or the project, builds a sigmoid layer somewhere (``self.seq = Sequential(...,
    Sigmoid()) if k == 2 else ...``): which branch runs is not known, so the output may be
    probabilities."""
    for _ in range(_INPUT_HOPS):
        if isinstance(expr, nodes.IfExp):
            return _may_output_probabilities(expr.body) or _may_output_probabilities(expr.orelse)
        if isinstance(expr, nodes.Name):
            unpacked = dataflow.unpacked_from_call(expr)  # ``real_pre, real_label = classifier(real)``
            values = [unpacked[0]] if unpacked is not None else infer.bound_values(expr)
            if not values or len(values) != 1:
                return False
            expr = values[0]
        while isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute) and \
                expr.func.attrname in origins.SHAPE_METHODS:
            expr = expr.func.expr  # ``head(x).view(-1)``
        if isinstance(expr, nodes.Call):
            forward = isinstance(expr.func, nodes.Attribute) and expr.func.attrname == "forward"
            classes = models.model_classes(expr.func.expr if forward else expr.func)  # type: ignore[union-attr]
            return bool(classes) and any(
                infer.callee_qname(call) in SIGMOID_LAYERS or infer.callee_qname(call) in SIGMOID_FUNCTIONS
                for klass in classes  # type: ignore[union-attr]
                for call in klass.nodes_of_class(nodes.Call)
            )
    return False


def _expected_input(loss: nodes.NodeNG, scores: bool = False) -> Optional[Tuple[str, str]]:
    """(kind the loss needs, loss name for the message), or None when ``loss`` (the called
    expression) is not a BCE loss; with ``scores``, cross-entropy too, as ``"scores"``."""
    name = infer.qname(loss)
    if name is None:
        return None
    if name not in LOGIT_LOSSES and name not in PROBABILITY_LOSSES and origins.user_forward(loss):
        return None  # a subclass with its own forward() may take either
    if name in LOGIT_LOSSES or infer.is_instance_of(loss, LOGIT_LOSS_CLASSES):
        return "logits", "F.binary_cross_entropy_with_logits" if "functional" in name else "BCEWithLogitsLoss"
    if name in PROBABILITY_LOSSES or infer.is_instance_of(loss, PROBABILITY_LOSS_CLASSES):
        return "sigmoid", "F.binary_cross_entropy" if "functional" in name else "BCELoss"
    if scores and (name in LOG_SOFTMAX_LOSSES or infer.is_instance_of(loss, CROSS_ENTROPY_CLASSES)):
        return "scores", "F.cross_entropy" if "functional" in name else "CrossEntropyLoss"
    return None


def _call_kind(call: nodes.Call, name: Optional[str], tracer: origins.Tracer) -> Optional[origins.Origin]:
    """Sigmoid and affine functions and methods; shape-only methods pass their receiver's kind on."""
    method = infer.method_name(call)
    if name is None and method in SIGMOID_METHODS:
        # ``model(x).sigmoid()`` where the model's output cannot be inferred: only tensors have it.
        name = "torch.Tensor." + str(method)
    if name in SIGMOID_FUNCTIONS or name in SIGMOID_INPLACE:
        return origins.Origin("sigmoid", "sigmoid")
    if name in LOGIT_FUNCTIONS:
        return origins.Origin("logits", "F.linear")
    return None


def _layer_kind(name: str) -> Optional[origins.Origin]:
    if name in SIGMOID_LAYERS:
        return origins.Origin("sigmoid", "nn.Sigmoid")
    if name in LOGIT_LAYERS:
        return origins.Origin("logits", "nn." + name.rsplit(".", 1)[-1])
    return None
