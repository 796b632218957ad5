"""TP006 double-softmax: softmax or log_softmax output fed into CrossEntropyLoss."""
from __future__ import annotations

from typing import Optional

from astroid import nodes

from ..analysis import infer, origins
from ..analysis.torch_names import LOG_SOFTMAX_FUNCTIONS, SOFTMAX_FUNCTIONS, SOFTMAX_LAYERS
from ._base import Rule, register, text_gate

#: Losses that apply log_softmax to their input themselves.
LOG_SOFTMAX_LOSSES = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.functional.cross_entropy"})

#: ``torch.log``/``Tensor.log`` of a softmax is a log_softmax too.
LOG_FUNCTIONS = frozenset({"torch.log", "torch.Tensor.log"})

#: ``torch.exp``/``Tensor.exp`` of a log_softmax is a softmax again.
EXP_FUNCTIONS = frozenset({"torch.exp", "torch.Tensor.exp"})

#: Tensor methods recognised by name when the receiver cannot be inferred.
TENSOR_METHODS = frozenset({"softmax", "log_softmax"})

#: How deep value origins are followed (assignments, forward() returns).
MAX_DEPTH = 4


@register
class DoubleSoftmax(Rule):
    code, slug = "TP006", "double-softmax"
    requires = text_gate(r"(?i)softmax")
    message = "{what} into {loss} applies log_softmax twice: a worse model; pass raw logits"
    quoted = ("what",)
    rationale = (
        "CrossEntropyLoss and F.cross_entropy expect unnormalised logits and compute log_softmax internally. "
        "Feeding them probabilities (softmax) or log-probabilities (log_softmax) applies the normalisation "
        "twice: the loss stays finite and training runs, but the gradient is compressed and the model learns "
        "slowly or plateaus. The rule follows the loss through aliases and assignments, and the input back "
        "through local assignments, softmax layers, and the forward() of a model defined in the file whose "
        "every return is a softmax."
    )
    leaves_alone = (
        "Softmax used only for predictions, metrics or sampling (not fed to the loss), NLLLoss after "
        "log_softmax (the correct pairing), and models whose forward() it cannot read are left alone."
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

    def visit_call(self, node: nodes.Call) -> None:
        if not node.args and not node.keywords:
            return
        if not isinstance(node.func, (nodes.Name, nodes.Attribute, nodes.Call)):
            return
        if isinstance(node.func, nodes.Attribute) and node.func.attrname == "forward":
            # ``criterion.forward(out, y)`` runs the loss like ``criterion(out, y)``
            loss = "torch.nn.CrossEntropyLoss"
            cross_entropy = infer.is_instance_of(node.func.expr, frozenset({loss}))
        else:
            loss = infer.callee_qname(node)
            if loss is None:
                return
            cross_entropy = infer.is_instance_of(node.func, frozenset({"torch.nn.CrossEntropyLoss"}))
        if loss not in LOG_SOFTMAX_LOSSES and not cross_entropy:
            return
        first = origins.input_argument(node)
        if first is None:
            return
        what = softmax_origin(first)
        if what is not None:
            self.report(node, what=what, loss="CrossEntropyLoss" if "functional" not in loss else "F.cross_entropy")


def _call_kind(call: nodes.Call, name: Optional[str], tracer: origins.Tracer) -> Optional[origins.Origin]:
    """Softmax-family functions and methods, and ``log`` of a softmax."""
    if name is None and infer.method_name(call) in TENSOR_METHODS:
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


def softmax_origin(expr: nodes.NodeNG) -> Optional[str]:
    """``"softmax"``/``"log_softmax"``/... (the message text) when ``expr`` is always such an output."""
    found = origins.Tracer(_call_kind, _layer_kind, MAX_DEPTH).trace(expr)
    return None if found is None else found.text
