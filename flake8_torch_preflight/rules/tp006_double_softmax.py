"""TP006 double-softmax: softmax or log_softmax output fed into CrossEntropyLoss."""
from __future__ import annotations

from typing import Optional, Set

from astroid import nodes

from ..analysis import dataflow, infer
from ..analysis.torch_names import LOG_SOFTMAX_FUNCTIONS, MODULE_BASES, SOFTMAX_FUNCTIONS, SOFTMAX_LAYERS
from ._base import Rule, register

#: Losses that apply log_softmax to their input themselves.
LOG_SOFTMAX_LOSSES = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.functional.cross_entropy"})

#: ``torch.log``/``Tensor.log`` of a softmax is a log_softmax too.
LOG_FUNCTIONS = frozenset({"torch.log", "torch.Tensor.log"})

#: Tensor methods recognised by name when the receiver cannot be inferred.
TENSOR_METHODS = frozenset({"softmax", "log_softmax"})

#: How deep value origins are followed (assignments, forward() returns).
MAX_DEPTH = 4


@register
class DoubleSoftmax(Rule):
    code, slug = "TP006", "double-softmax"
    message = (
        "{what} output is fed into {loss}, which applies log_softmax itself: the loss sees squashed "
        "probabilities, its gradients shrink and training stalls or converges to a worse model. "
        "Pass the raw logits to the loss and use softmax only for predictions or metrics."
    )
    rationale = (
        "CrossEntropyLoss and F.cross_entropy expect unnormalised logits and compute log_softmax "
        "internally. Feeding them probabilities (softmax) or log-probabilities (log_softmax) applies the "
        "normalisation twice: the loss stays finite and training runs, but the gradient is compressed "
        "and the model learns slowly or plateaus. The rule follows the loss through aliases and "
        "assignments, and the input back through local assignments, softmax layers, and the forward() "
        "of a model defined in the file whose every return is a softmax."
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
        loss = infer.callee_qname(node)
        if loss is None:
            return
        if loss not in LOG_SOFTMAX_LOSSES and not infer.is_instance_of(node.func, frozenset({"torch.nn.CrossEntropyLoss"})):
            return
        first = _input_argument(node)
        if first is None:
            return
        what = softmax_origin(first, MAX_DEPTH, set())
        if what is not None:
            self.report(node, what=what, loss="CrossEntropyLoss" if "functional" not in loss else "F.cross_entropy")


def _input_argument(call: nodes.Call) -> Optional[nodes.NodeNG]:
    if call.args:
        first = call.args[0]
        return None if isinstance(first, nodes.Starred) else first
    for kw in call.keywords or ():
        if kw.arg == "input":
            return kw.value
    return None


def softmax_origin(expr: nodes.NodeNG, depth: int, seen: Set[int]) -> Optional[str]:
    """``"softmax"``/``"log_softmax"`` when ``expr`` is (always) such an output, else None."""
    if depth <= 0 or id(expr) in seen:
        return None
    seen.add(id(expr))
    if isinstance(expr, nodes.Name):
        values = dataflow.assigned_values(expr)
        if not values:
            return None
        kinds = {softmax_origin(v, depth - 1, seen) for v in values}
        return kinds.pop() if len(kinds) == 1 else None  # every reaching value must agree
    if not isinstance(expr, nodes.Call):
        return None
    name = infer.callee_qname(expr)
    if name is None and infer.method_name(expr) in TENSOR_METHODS:
        # ``out.softmax(-1)`` on a value inference cannot follow (a model's output):
        # only tensors have these methods.
        name = "torch.Tensor." + str(infer.method_name(expr))
    if name in SOFTMAX_FUNCTIONS:
        return "softmax"
    if name in LOG_SOFTMAX_FUNCTIONS:
        return "log_softmax"
    if name in LOG_FUNCTIONS:
        inner = expr.args[0] if name == "torch.log" and expr.args else _receiver(expr)
        if inner is not None and softmax_origin(inner, depth - 1, seen) == "softmax":
            return "log(softmax)"
        return None
    if name in SOFTMAX_LAYERS:
        return "nn.Softmax" if name == "torch.nn.Softmax" else "nn.LogSoftmax"
    return _model_output(expr, depth, seen)


def _receiver(call: nodes.Call) -> Optional[nodes.NodeNG]:
    return call.func.expr if isinstance(call.func, nodes.Attribute) else None


def _model_output(call: nodes.Call, depth: int, seen: Set[int]) -> Optional[str]:
    """A model call whose forward() ends in softmax: a file-defined Module or an inline Sequential."""
    klass = infer.instance_class(call.func)
    if klass is None or not infer.class_is_subclass_of(klass, MODULE_BASES):
        return None
    if klass.qname() == "torch.nn.Sequential":
        values = dataflow.assigned_values(call.func) if isinstance(call.func, (nodes.Name, nodes.Attribute)) else None
        if not values or len(values) != 1 or not isinstance(values[0], nodes.Call) or not values[0].args:
            return None
        last = values[0].args[-1]
        if isinstance(last, nodes.Call) and infer.callee_qname(last) in SOFTMAX_LAYERS:
            return "nn.Softmax" if infer.callee_qname(last) == "torch.nn.Softmax" else "nn.LogSoftmax"
        return None
    if klass.root() is not call.root():
        return None
    try:
        forward = klass.getattr("forward")[0]
    except Exception:
        return None
    if not isinstance(forward, nodes.FunctionDef) or forward.root() is not call.root():
        return None
    returns = [r for r in forward.nodes_of_class(nodes.Return, skip_klass=(nodes.FunctionDef, nodes.ClassDef))]
    if not returns or any(r.value is None for r in returns):
        return None
    kinds = {softmax_origin(r.value, depth - 1, seen) for r in returns}
    if len(kinds) == 1:
        kind = kinds.pop()
        return None if kind is None else "{} (ending {}.forward)".format(kind, klass.name)
    return None
