"""How a value was computed: the expressions and statements it derives from, read in the file.

``derive(expr)`` follows a value backwards through plain and augmented assignments
(``loss = ce / n``, ``loss /= n``, ``loss += aux``), attribute and subscript reads
(``out.loss``, ``outputs[0]``), tensor methods on its receiver (``loss.mean()``), the returns
of helpers defined in the file (``self.compute_loss(batch)``, a lambda), ``self.attr``
assignments, and function parameters through their in-file call sites.  It records every
expression reached, the calls it could not see into, and whether the walk was complete.

Two modes:

* the **spine** (default): only what the value *is* arithmetically, so ``criterion(out / t, y)``
  does not count the division of ``out`` as a division of the loss; used by TP004;
* **all** (``follow_all=True``): every name an expression reads, e.g. the model outputs a loss
  was computed from; ``.detach()`` stops it, since no gradient flows there; used by TP013.

The walk is bounded (``MAX_DEPTH`` bindings deep, ``MAX_NODES`` expressions); hitting a bound,
a loop target, a ``with ... as`` target or a parameter without call sites makes it incomplete.
"""
from __future__ import annotations

from typing import List, Optional, Set, Tuple

from astroid import nodes
from astroid.exceptions import AstroidError

from ..semantic import dataflow, infer, loops

#: Bindings (assignments, helper returns, call sites) followed from the starting expression.
MAX_DEPTH = 5

#: Expressions visited before the walk gives up (and reports itself incomplete).
MAX_NODES = 128

#: Tensor methods whose result is their receiver reduced, reshaped, cast or scaled: the spine
#: goes on through the receiver (and, for the arithmetic ones, the argument).
RECEIVER_METHODS = frozenset(
    {
        "mean", "sum", "float", "double", "half", "bfloat16", "squeeze", "unsqueeze", "view",
        "reshape", "flatten", "clone", "contiguous", "to", "cuda", "type_as", "clamp", "nan_to_num",
        "requires_grad_", "abs", "neg", "nanmean", "nansum",
    }
)

#: Tensor methods that divide their receiver by their argument.
DIVIDE_METHODS = frozenset({"div", "div_", "divide", "true_divide"})

#: torch functions that divide their first argument by their second.
DIVIDE_FUNCTIONS = frozenset({"torch.div", "torch.divide", "torch.true_divide"})

#: Tensor methods that combine the receiver with their argument arithmetically.
ARITHMETIC_METHODS = DIVIDE_METHODS | frozenset({"mul", "mul_", "multiply", "add", "add_", "sub", "sub_"})

#: torch (and builtin) functions whose result is arithmetic on their arguments.
ARITHMETIC_FUNCTIONS = DIVIDE_FUNCTIONS | frozenset(
    {
        "torch.mul", "torch.multiply", "torch.add", "torch.sub", "torch.mean", "torch.sum",
        "torch.stack", "torch.cat", "builtins.sum",
    }
)

#: Methods through which no gradient flows (``follow_all`` stops there).
GRADIENT_STOPS = frozenset({"detach", "detach_", "item", "tolist", "numpy"})


def is_division(node: nodes.NodeNG) -> bool:
    """A node of a derivation that divides the value: ``a / n``, ``a //= n``, ``a.div(n)``,
    ``torch.div(a, n)`` (``DIVIDE_METHODS`` on a receiver, ``DIVIDE_FUNCTIONS`` on a first
    argument)."""
    if isinstance(node, nodes.BinOp):
        return node.op in ("/", "//")
    if isinstance(node, nodes.AugAssign):
        return node.op in ("/=", "//=")
    if isinstance(node, nodes.Call):
        if infer.method_name(node) in DIVIDE_METHODS:
            return True
        return infer.callee_qname(node) in DIVIDE_FUNCTIONS
    return False


class Derivation:
    """What ``derive`` found: every expression (and augmented assignment) reached, the calls
    whose result it could not follow, and whether nothing was left unknown."""

    def __init__(self) -> None:
        self.nodes: List[nodes.NodeNG] = []
        self.opaque_calls: List[nodes.Call] = []
        self.complete = True


def derive(expr: nodes.NodeNG, follow_all: bool = False, max_depth: int = MAX_DEPTH) -> Derivation:
    """The derivation of ``expr`` (see the module docstring)."""
    result = Derivation()
    seen: Set[int] = set()
    stack: List[Tuple[nodes.NodeNG, int]] = [(expr, max_depth)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if len(result.nodes) >= MAX_NODES:
            result.complete = False
            break
        result.nodes.append(node)
        stack.extend(reversed(_expand(node, depth, follow_all, result)))
    return result


def _expand(node: nodes.NodeNG, depth: int, follow_all: bool, result: Derivation) -> List[Tuple[nodes.NodeNG, int]]:
    if isinstance(node, nodes.Name):
        return _bindings(node, depth, result)
    if isinstance(node, nodes.AugAssign):
        out = [(node.value, depth)]
        if isinstance(node.target, nodes.AssignName):
            out.extend(_bindings(node.target, depth, result, exclude=node.target))
        else:
            result.complete = False
        return out
    if isinstance(node, nodes.Attribute):
        if isinstance(node.expr, nodes.Name) and node.expr.name == "self":
            values = dataflow.assigned_values(node)
            if values is None or depth <= 0:
                result.complete = False
                return []
            return [(v, depth - 1) for v in values]
        return [(node.expr, depth)]
    if isinstance(node, nodes.Subscript):
        out = [(node.value, depth)]
        if follow_all:
            out.append((node.slice, depth))
        return out
    if isinstance(node, nodes.BinOp):
        return [(node.left, depth), (node.right, depth)]
    if isinstance(node, nodes.UnaryOp):
        return [(node.operand, depth)]
    if isinstance(node, nodes.BoolOp):
        return [(v, depth) for v in node.values]
    if isinstance(node, nodes.IfExp):
        return [(node.body, depth), (node.orelse, depth)]
    if isinstance(node, (nodes.Tuple, nodes.List)):
        return [(e, depth) for e in node.elts]
    if isinstance(node, nodes.Starred):
        return [(node.value, depth)]
    if isinstance(node, nodes.Call):
        return _expand_call(node, depth, follow_all, result)
    return []


def _arguments(call: nodes.Call, depth: int) -> List[Tuple[nodes.NodeNG, int]]:
    out = [(a, depth) for a in call.args]
    out.extend((kw.value, depth) for kw in call.keywords or ())
    return out


def _expand_call(call: nodes.Call, depth: int, follow_all: bool, result: Derivation) -> List[Tuple[nodes.NodeNG, int]]:
    method = infer.method_name(call)
    if follow_all and method in GRADIENT_STOPS:
        return []
    extra = _arguments(call, depth) if follow_all else []
    helper = loops.local_helper(call)
    if helper is not None:
        if depth <= 0:
            result.complete = False
            return extra
        returns = [
            r.value
            for r in helper.nodes_of_class(nodes.Return, skip_klass=(nodes.FunctionDef, nodes.ClassDef, nodes.Lambda))
            if r.value is not None
        ]
        if not returns:
            result.complete = False
        return [(r, depth - 1) for r in returns] + extra
    target = infer.safe_infer(call.func)
    if isinstance(target, nodes.Lambda):
        return [(target.body, depth - 1)] + extra if depth > 0 else extra
    if isinstance(call.func, nodes.Attribute):
        receiver = call.func.expr
        if method in ARITHMETIC_METHODS:
            return [(receiver, depth)] + _arguments(call, depth)
        qname = infer.qname(call.func)
        if method in RECEIVER_METHODS or (qname is not None and qname.startswith("torch.Tensor.")):
            return [(receiver, depth)] + extra
        if qname is None:
            result.opaque_calls.append(call)
            return [(receiver, depth)] + extra if follow_all else []
        return extra  # a resolved callable: a torch loss module, a library function
    qname = infer.callee_qname(call)
    if qname in ARITHMETIC_FUNCTIONS:
        return _arguments(call, depth)
    if qname is None:
        result.opaque_calls.append(call)
    return extra


def _bindings(
    name: nodes.NodeNG,
    depth: int,
    result: Derivation,
    exclude: Optional[nodes.NodeNG] = None,
) -> List[Tuple[nodes.NodeNG, int]]:
    """Values reaching ``name`` (a Name use, or the target of an augmented assignment)."""
    if depth <= 0:
        result.complete = False
        return []
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        result.complete = False
        return []
    out: List[Tuple[nodes.NodeNG, int]] = []
    for binding in bindings:
        if binding is exclude:
            continue
        value = _binding_value(binding, name, result)
        if value is not None:
            out.extend((v, depth - 1) for v in value)
    if not out and bindings and all(isinstance(b, (nodes.FunctionDef, nodes.ClassDef)) for b in bindings):
        return []  # a function or class name: not a value path
    return out


def _binding_value(binding: nodes.NodeNG, name: nodes.NodeNG, result: Derivation) -> Optional[List[nodes.NodeNG]]:
    if isinstance(binding, (nodes.FunctionDef, nodes.ClassDef)):
        return None
    if not isinstance(binding, nodes.AssignName):
        result.complete = False  # imports, globals, ...
        return None
    parent = binding.parent
    if isinstance(parent, nodes.Assign):
        return [parent.value]
    if isinstance(parent, (nodes.AnnAssign, nodes.NamedExpr)) and parent.value is not None:
        return [parent.value]
    if isinstance(parent, nodes.AugAssign):
        return [parent]
    if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
        element = dataflow.unpacked_value(binding)
        return [element if element is not None else parent.parent.value]
    if isinstance(parent, nodes.Arguments):
        args = infer.parameter_arguments(name) if isinstance(name, nodes.Name) else _parameter_arguments_at(binding)
        if args is None:
            result.complete = False
            return None
        return list(args)
    result.complete = False  # a loop target, a ``with ... as`` target, an except name...
    return None


def _parameter_arguments_at(binding: nodes.AssignName) -> Optional[List[nodes.NodeNG]]:
    """Call-site arguments for a parameter reached from an augmented assignment's target."""
    func = binding.parent.parent if binding.parent is not None else None
    if not isinstance(func, nodes.FunctionDef):
        return None
    for use in func.nodes_of_class(nodes.Name):
        if use.name == binding.name and use.lookup(use.name)[1] == [binding]:
            return infer.parameter_arguments(use)
    return None
