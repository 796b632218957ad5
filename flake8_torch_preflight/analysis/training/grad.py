"""Is autograd off where a node runs?  ``no_grad``/``inference_mode`` blocks and decorators."""
from __future__ import annotations


from astroid import nodes

from ..semantic import infer
from .torch_names import GRAD_MODE_SETTERS, GRAD_OFF_CONTEXTS


def turns_grad_off(expr: nodes.NodeNG) -> bool:
    """``expr`` (a ``with`` item or decorator) disables autograd: ``torch.no_grad()``,
    ``torch.inference_mode()``, ``torch.set_grad_enabled(False)``, bare ``@torch.no_grad``."""
    target = expr.func if isinstance(expr, nodes.Call) else expr
    name = infer.qname(target)
    if name is None:
        return False
    if name in GRAD_OFF_CONTEXTS:
        if isinstance(expr, nodes.Call) and name == "torch.inference_mode":
            return _first_arg_is_not_false(expr, "mode")
        return True
    if name in GRAD_MODE_SETTERS and isinstance(expr, nodes.Call):
        arg = infer.argument(expr, "mode", 0)
        return isinstance(arg, nodes.Const) and arg.value is False
    return False


def _first_arg_is_not_false(call: nodes.Call, keyword: str) -> bool:
    arg = infer.argument(call, keyword, 0)
    return not (isinstance(arg, nodes.Const) and arg.value is False)


def function_grad_off(func: nodes.FunctionDef) -> bool:
    """The function is decorated with ``no_grad``/``inference_mode``/``set_grad_enabled(False)``."""
    decorators = func.decorators.nodes if func.decorators else []
    return any(turns_grad_off(d) for d in decorators)


def grad_disabled(node: nodes.NodeNG) -> bool:
    """``node`` runs with autograd off: inside such a ``with`` block in its own
    function, or in a function decorated to turn it off (enclosing defs included)."""
    child = node
    parent = node.parent
    while parent is not None:
        if isinstance(parent, nodes.With) and child in parent.body:
            if any(turns_grad_off(item) for item, _ in parent.items):
                return True
        if isinstance(parent, nodes.FunctionDef) and function_grad_off(parent):
            return True
        child = parent
        parent = parent.parent
    return False
