"""Does a value stay the same across the iterations of a loop?  Read syntactically.

A name (or ``name.attr`` chain) is loop-invariant when nothing in the loop rebinds it: not
the loop target, no assignment, augmented assignment, ``with ... as``, ``global`` rebinding
in its body, and no assignment to the attribute in a helper of the file the loop calls; and
nothing changes it in place (``buf.copy_(x)``, ``w[i] = 0``, ``w += 1``).  When a binding
cannot be looked up the answer is "it changes": in doubt, the value is not invariant.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Set

from astroid import nodes
from astroid.exceptions import AstroidError

from ...analysis.semantic import dataflow, infer, loops

#: Predicate on an assignment target: True when that rebinding should not count
#: (TP011 ignores ``x = x.to(device)``, the transfer it reports).
Ignore = Callable[[nodes.NodeNG], bool]


def loop_nodes(loop: "loops.Loop") -> List[nodes.NodeNG]:
    """Every node of the loop's target and body (its iterable and ``else`` excluded), or of a function's body."""
    found: List[nodes.NodeNG] = []
    parts: List[nodes.NodeNG] = list(loop.body)
    if isinstance(loop, nodes.For):
        parts.append(loop.target)
    for part in parts:
        found.append(part)
        found.extend(part.nodes_of_class(nodes.NodeNG))
    return found


def root_name(expr: nodes.NodeNG) -> Optional[nodes.Name]:
    """``cfg`` for ``cfg.optim.weights``; None when the chain does not start at a name."""
    while isinstance(expr, nodes.Attribute):
        expr = expr.expr
    return expr if isinstance(expr, nodes.Name) else None


def rebound_in(loop: "loops.Loop", expr: nodes.NodeNG, ignore: Optional[Ignore] = None) -> bool:
    """The loop (target, body, or a helper of the file it calls) rebinds ``expr``'s root name
    or an attribute on its chain.  True when ``expr`` is not a name chain or cannot be looked up."""
    root = root_name(expr)
    if root is None:
        return True
    scope = _defining_scope(root)
    if scope is None:
        return True
    attrs = _attribute_names(expr)
    for node in loop_nodes(loop):
        if isinstance(node, nodes.AssignName) and node.name == root.name and node.scope() is scope:
            if ignore is None or not ignore(node):
                return True
        elif isinstance(node, nodes.AssignAttr) and node.attrname in attrs:
            if ignore is None or not ignore(node):
                return True
        elif isinstance(node, (nodes.Global, nodes.Nonlocal)) and root.name in node.names:
            return True
    for helper in _helpers(loop):
        for node in helper.nodes_of_class((nodes.AssignAttr, nodes.Global)):
            if isinstance(node, nodes.AssignAttr) and node.attrname in attrs:
                return True
            if isinstance(node, nodes.Global) and root.name in node.names:
                return True
    return False


def mutated_in(loop: "loops.Loop", expr: nodes.NodeNG, before: Optional[nodes.NodeNG] = None) -> bool:
    """The loop (or a function's body) changes ``expr`` in place: an in-place method (``buf.copy_(x)``,
    trailing underscore), an item store (``w[i] = 0``) or an augmented assignment (``w += 1``); with
    ``before``, only on a line above it."""
    text = dataflow.binding_text(expr)
    for node in loop_nodes(loop):
        if before is not None and (node.lineno is None or node.lineno >= before.lineno):
            continue
        if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute):
            name = node.func.attrname
            if name.endswith("_") and not name.startswith("_") and dataflow.binding_text(node.func.expr) == text:
                return True
        elif isinstance(node, nodes.Subscript) and isinstance(node.parent, (nodes.Assign, nodes.AugAssign)):
            stored = node in getattr(node.parent, "targets", ()) or node is getattr(node.parent, "target", None)
            if stored and dataflow.binding_text(node.value) == text:
                return True
        elif isinstance(node, nodes.AugAssign) and dataflow.binding_text(node.target) == text:
            return True
    return False


def _attribute_names(expr: nodes.NodeNG) -> Set[str]:
    names: Set[str] = set()
    while isinstance(expr, nodes.Attribute):
        names.add(str(expr.attrname))
        expr = expr.expr
    return names


def _defining_scope(name: nodes.Name) -> Optional[nodes.NodeNG]:
    try:
        scope, _ = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    return scope


def _helpers(loop: "loops.Loop") -> List[nodes.FunctionDef]:
    """Functions of the file the loop body calls (only calls named like one are resolved)."""
    defined = {str(f.name) for f in loop.root().nodes_of_class(nodes.FunctionDef)}
    helpers: List[nodes.FunctionDef] = []
    for stmt in loop.body:
        for call in infer.iter_calls(stmt):
            if infer.call_name(call) not in defined:
                continue
            helper = loops.local_helper(call)
            if helper is not None and helper not in helpers:
                helpers.append(helper)
    return helpers
