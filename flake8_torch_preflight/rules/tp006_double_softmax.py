"""TP006 double-softmax: softmax or log_softmax output fed into CrossEntropyLoss.

Two ways a loss meets its input: a call of the loss (``criterion(out, y)``), whose first argument
is traced back (``analysis.training.origins``); and a trainer object of a library that is handed the module
and the loss and calls both itself (``NeuralNet(MyModule, criterion=nn.CrossEntropyLoss)``), where
the module's own output is read.  The latter is only read for a callee whose code the file cannot
see (a library's or an unresolved one): the file's own functions show their loss calls.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Set

from astroid import nodes

from ..analysis.setup import brain
from ..analysis.semantic import dataflow, infer
from ..analysis.training import origins
from ..analysis.training.torch_names import (
    CROSS_ENTROPY_CLASSES, LOG_SOFTMAX_FUNCTIONS, LOG_SOFTMAX_LOSSES, SOFTMAX_FUNCTIONS, SOFTMAX_LAYERS,
)
from ._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ..analysis.setup.build import FileContext


#: ``torch.log``/``Tensor.log`` of a softmax is a log_softmax too.
LOG_FUNCTIONS = frozenset({"torch.log", "torch.Tensor.log"})

#: ``torch.exp``/``Tensor.exp`` of a log_softmax is a softmax again.
EXP_FUNCTIONS = frozenset({"torch.exp", "torch.Tensor.exp"})

#: Tensor methods recognised by name when the receiver cannot be inferred.
TENSOR_METHODS = frozenset({"softmax", "log_softmax"})

#: How deep value origins are followed (assignments, shape-only methods, forward() returns): a
#: reshape of a name bound to the model's output, whose forward returns a name bound to a softmax.
MAX_DEPTH = 6

#: Keywords under which a trainer object takes the loss it applies to its module's output.
CRITERION_KEYWORDS = frozenset({"criterion", "loss_fn", "loss_function"})

#: Keywords under which it takes the module (else its first positional argument).
MODULE_KEYWORDS = frozenset({"module", "model"})


@register
class DoubleSoftmax(Rule):
    code, slug = "TP006", "double-softmax"
    skips_branches_not_taken = True  # ``if multi_class:`` with the flag False in every run: no run pairs them
    requires = text_gate(r"(?i)softmax")
    message = "{what} into {loss} {effect}; pass raw logits"
    quoted = ("what",)
    rationale = (
        "CrossEntropyLoss and F.cross_entropy expect unnormalised logits and compute log_softmax internally. "
        "Feeding them probabilities (softmax) applies the normalisation twice: the loss stays finite and "
        "training runs, but the gradient is compressed and the model learns slowly or plateaus. Feeding them "
        "log-probabilities (log_softmax) repeats a normalisation that changes nothing (log_softmax of a "
        "log_softmax is itself: the same loss and gradients), at the cost of one more kernel and a model whose "
        "outputs no longer say what the loss expects; the message says so. The rule follows the loss through "
        "aliases and assignments, and the input back "
        "through local assignments, softmax layers, and the forward() of a model defined in the file whose "
        "every return is a softmax. A library trainer handed the model and the loss "
        "(`NeuralNet(MyModule, criterion=nn.CrossEntropyLoss)`) feeds the model's output to the loss itself: "
        "the model's forward is read there. A loop over such an output (``for out in torch.softmax(scores, -1)``: "
        "one row-normalised score matrix per graph) gives softmax outputs too. A loss that is a parameter's "
        "default (``def __init__(self, loss=nn.CrossEntropyLoss()): self.loss = loss``) is that default when no "
        "call in the file passes the parameter: the loss the class ships with."
    )
    leaves_alone = (
        "A model's forward that ends in a softmax is reported once, at the first loss in the file it feeds "
        "(its training step's; a validation step's loss on the same outputs is the same fix). "
        "Softmax used only for predictions, metrics or sampling (not fed to the loss), NLLLoss after "
        "log_softmax (the correct pairing), skorch's NeuralNetClassifier with its default NLLLoss (it takes the "
        "log of the probabilities itself), and models whose forward() it cannot read are left alone. A "
        "parameter that a call in the file passes is read with what the calls pass (``loss=nn.NLLLoss()``), "
        "not its default."
    )
    example_bad = """
        import torch.nn as nn
        import torch.nn.functional as F

        criterion = nn.CrossEntropyLoss()
        loss = criterion(F.softmax(logits, dim=1), labels)
    """
    example_good = """
        import torch.nn as nn
        import torch.nn.functional as F

        criterion = nn.CrossEntropyLoss()
        loss = criterion(logits, labels)
        probs = F.softmax(logits, dim=1)  # for predictions and metrics only
    """

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        #: Softmax-ending forwards already reported (``"softmax in LitCassava.forward"``): the first loss
        #: in the file they feed is the finding, the fix is in the forward.
        self._forwards: Set[str] = set()

    def visit_call(self, node: nodes.Call) -> None:
        if not node.args and not node.keywords:
            return
        if node.keywords and self._trainer_pairing(node):
            return
        if not isinstance(node.func, (nodes.Name, nodes.Attribute, nodes.Call)):
            return
        if isinstance(node.func, nodes.Attribute) and node.func.attrname == "forward":
            # ``criterion.forward(out, y)`` runs the loss like ``criterion(out, y)``
            loss = "torch.nn.CrossEntropyLoss"
            cross_entropy = infer.is_instance_of(node.func.expr, frozenset({loss}))
        else:
            loss = infer.callee_qname(node)
            if loss is not None:
                cross_entropy = infer.is_instance_of(node.func, frozenset({"torch.nn.CrossEntropyLoss"}))
            elif _default_cross_entropy(node.func):  # ``loss=nn.CrossEntropyLoss()``, the parameter's default
                loss, cross_entropy = "torch.nn.CrossEntropyLoss", True
            else:
                return
        if loss not in LOG_SOFTMAX_LOSSES and not cross_entropy:
            return
        first = origins.input_argument(node)
        if first is None:
            return
        found = softmax_origin(first)
        if found is None:
            return
        what = found.text
        if what.endswith(".forward"):
            if what in self._forwards:
                return  # the same model's forward fed to a second loss (its validation step): one root cause
            self._forwards.add(what)
        self.report(node, what=what, loss="CrossEntropyLoss" if "functional" not in loss else "F.cross_entropy",
                    effect=_effect(found))

    def _trainer_pairing(self, node: nodes.Call) -> bool:
        """``Trainer(MyModule, criterion=nn.CrossEntropyLoss)`` (class or instance, the module a class
        or an instance) where every return of the module's forward is a softmax: reported on the loss.
        skorch's ``NeuralNetClassifier(MyModule)`` expects probabilities (its default NLLLoss takes
        their log) and names no cross-entropy: silent.  True when the call was such a pairing."""
        criterion = next((kw.value for kw in node.keywords if kw.arg in CRITERION_KEYWORDS), None)
        if criterion is None or not _is_cross_entropy(criterion):
            return False
        module = next((kw.value for kw in node.keywords if kw.arg in MODULE_KEYWORDS), None)
        if module is None and node.args and not isinstance(node.args[0], nodes.Starred):
            module = node.args[0]
        if module is None or _readable_callee(node):
            return False
        found = origins.Tracer(_call_kind, _layer_kind, MAX_DEPTH).module_output(module)
        if found is None:
            return False
        self.report(criterion, what=found.text, loss="CrossEntropyLoss", effect=_effect(found))
        return True


def _is_cross_entropy(expr: nodes.NodeNG) -> bool:
    """``expr`` is the class ``nn.CrossEntropyLoss`` (or a subclass) or an instance of one."""
    value = infer.safe_infer(expr)
    if isinstance(value, nodes.ClassDef):
        return infer.class_is_subclass_of(value, CROSS_ENTROPY_CLASSES)
    return infer.is_instance_of(expr, CROSS_ENTROPY_CLASSES)


def _default_cross_entropy(func: nodes.NodeNG) -> bool:
    """``func`` (a name, or ``self.loss`` assigned from one) is a parameter whose default is a
    CrossEntropyLoss and whose function no call in the file passes it: ``def __init__(self,
    loss=nn.CrossEntropyLoss()): self.loss = loss`` in a class built in another module.  Its callers
    elsewhere may pass another loss; the default is the one the class ships with."""
    values = [func] if isinstance(func, nodes.Name) else dataflow.assigned_values(func)
    if not values or not all(isinstance(v, nodes.Name) for v in values):
        return False
    for value in values:
        default = infer.parameter_default(value)
        if default is None or infer.parameter_arguments(value) is not None or not _is_cross_entropy(default):
            return False
    return True


def _readable_callee(call: nodes.Call) -> bool:
    """The call runs a function or class of the file or of the project, whose loss calls are read
    where they are written."""
    value = infer.safe_infer(call.func)
    if value is None:
        return False
    root = getattr(value, "root", None)
    if root is None:
        return False
    module = root()
    return module is call.root() or brain.project_module(str(module.name))


def _call_kind(call: nodes.Call, name: Optional[str], tracer: origins.Tracer) -> Optional[origins.Origin]:
    """Softmax-family functions and methods, and ``log`` of a softmax."""
    if name is None and infer.method_name(call) in TENSOR_METHODS:
        if isinstance(infer.safe_infer(call.func.expr), nodes.Module):  # type: ignore[union-attr]
            return None  # ``nn.softmax(x)``: a module's function that does not exist, not a tensor's method
        # ``out.softmax(-1)`` on a value inference cannot follow (a model's output):
        # only tensors have these methods.
        name = "torch.Tensor." + str(infer.method_name(call))
    if name in SOFTMAX_FUNCTIONS:
        return origins.Origin("softmax", "softmax")
    if name in LOG_SOFTMAX_FUNCTIONS:
        return origins.Origin("log_softmax", "log_softmax")
    if name in LOG_FUNCTIONS:
        inner = call.args[0] if name == "torch.log" and call.args else origins.receiver(call)
        found = tracer.origin(inner) if inner is not None else None
        if found is not None and found.kind == "softmax" and found.text == "softmax":
            return origins.Origin("log_softmax", "log(softmax)")
        return None
    if name in EXP_FUNCTIONS:
        inner = call.args[0] if name == "torch.exp" and call.args else origins.receiver(call)
        found = tracer.origin(inner) if inner is not None else None
        if found is not None and found.kind == "log_softmax":
            return origins.Origin("softmax", "exp({})".format(found.text))
        return None
    if name in SOFTMAX_LAYERS:
        return _layer_kind(name)
    return None


def _layer_kind(name: str) -> Optional[origins.Origin]:
    if name == "torch.nn.Softmax":
        return origins.Origin("softmax", "nn.Softmax")
    if name == "torch.nn.LogSoftmax":
        return origins.Origin("log_softmax", "nn.LogSoftmax")
    return None


def softmax_origin(expr: nodes.NodeNG) -> "Optional[origins.Origin]":
    """The softmax or log_softmax ``expr`` always is the output of (its kind and the message text), or None."""
    return origins.Tracer(_call_kind, _layer_kind, MAX_DEPTH).trace(expr)


def _effect(found: "origins.Origin") -> str:
    """What the pairing costs: probabilities normalised again train a worse model; log-probabilities
    normalised again give the same loss (log_softmax is idempotent), a wasted kernel."""
    if found.kind == "log_softmax":
        return "repeats its log_softmax: the same loss, a wasted kernel"
    return "applies log_softmax twice: a worse model"
