"""Stores that outlive a loop iteration: what a statement folds into itself and what a container hangs from.

Syntactic helpers for rules about values kept across iterations (TP001): ``x = x + loss`` and
``outs = torch.cat([outs, out])`` fold the previous value of ``x``/``outs`` into the new one;
``history[k].append(v)`` stores into the container rooted at ``history``.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from astroid import nodes

from ...analysis.semantic import infer, memo

#: Operators that fold a value into the name on the left (``x = x + loss``).
ACCUMULATING_OPERATORS = frozenset({"+", "-", "*", "/"})

#: torch functions that grow a tensor from itself (``outs = torch.cat([outs, out])``).
GROWING_FUNCTIONS = frozenset({"torch.cat", "torch.concat", "torch.stack", "torch.add", "torch.vstack", "torch.hstack"})


def is_name_or_self_attr(target: nodes.NodeNG) -> bool:
    """``x`` or ``self.x`` as an assignment target."""
    if isinstance(target, nodes.AssignName):
        return True
    return isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) and target.expr.name == "self"


def same_binding(expr: nodes.NodeNG, target: nodes.NodeNG) -> bool:
    if isinstance(target, nodes.AssignName):
        return isinstance(expr, nodes.Name) and expr.name == target.name
    return (
        isinstance(expr, nodes.Attribute)
        and expr.attrname == target.attrname  # type: ignore[union-attr]
        and isinstance(expr.expr, nodes.Name)
        and expr.expr.name == "self"
    )


def folded_operand(value: nodes.NodeNG, target: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    """The read of ``target`` that ``value`` folds into itself: ``x + loss``, ``torch.cat([x, out])``."""
    if isinstance(value, nodes.BinOp) and value.op in ACCUMULATING_OPERATORS:
        for side in (value.left, value.right):
            if same_binding(side, target):
                return side
            found = folded_operand(side, target) if isinstance(side, nodes.BinOp) else None
            if found is not None:
                return found
        return None
    if isinstance(value, nodes.Call):
        if infer.method_name(value) in ("add", "sub") and isinstance(value.func, nodes.Attribute):
            return value.func.expr if same_binding(value.func.expr, target) else None
        name = infer.call_name(value)
        if name in ("cat", "concat", "stack", "add", "vstack", "hstack") and value.args:
            if infer.callee_qname(value) not in GROWING_FUNCTIONS:
                return None
            first = value.args[0]
            parts = first.elts if isinstance(first, (nodes.List, nodes.Tuple)) else value.args
            for part in parts:
                if same_binding(part, target):
                    return part
    return None


def added_value(value: nodes.NodeNG, folded: nodes.NodeNG) -> nodes.NodeNG:
    """What is folded into the accumulator (for the message): the other operand when there is one."""
    if isinstance(value, nodes.BinOp):
        if value.left is folded:
            return value.right
        if value.right is folded:
            return value.left
    if isinstance(value, nodes.Call):
        if isinstance(value.func, nodes.Attribute) and value.func.expr is folded and value.args:
            return value.args[0]
        first = value.args[0] if value.args else None
        if isinstance(first, (nodes.List, nodes.Tuple)):
            others = [e for e in first.elts if e is not folded]
            if len(others) == 1:
                return others[0]
    return value


def container_root(container: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    """The name (or ``self.attr``) a container expression hangs from: ``history`` in ``history[k].append``."""
    node = container
    while True:
        if isinstance(node, (nodes.Name, nodes.AssignName)):
            return node
        if isinstance(node, (nodes.Attribute, nodes.AssignAttr)):
            if isinstance(node.expr, nodes.Name) and node.expr.name == "self":
                return node
            node = node.expr
        elif isinstance(node, nodes.Subscript):
            node = node.value
        elif isinstance(node, nodes.Call) and infer.method_name(node) == "setdefault":
            node = node.func.expr  # type: ignore[union-attr]
        else:
            return None


def _binding_key(node: nodes.NodeNG) -> Optional[str]:
    """``x`` for a Name/AssignName ``x``, ``self.x`` for ``self.x``; None otherwise."""
    if isinstance(node, (nodes.Name, nodes.AssignName)):
        return str(node.name)
    if (
        isinstance(node, (nodes.Attribute, nodes.AssignAttr))
        and isinstance(node.expr, nodes.Name)
        and node.expr.name == "self"
    ):
        return "self." + str(node.attrname)
    return None


def _reads(expr: nodes.NodeNG, key: str) -> bool:
    return any(_binding_key(n) == key for n in expr.nodes_of_class((nodes.Name, nodes.Attribute)))


def reset_in_loop(root: nodes.NodeNG, loop: nodes.NodeNG, store: nodes.NodeNG) -> bool:
    """The accumulator ``root`` is re-bound to a fresh value (one that does not read it) or emptied in
    place (``losses.clear()``) somewhere in ``loop``'s own body, other than by ``store``: ``running_loss
    = 0`` in the optimizer-step branch of the step loop.  What was kept is then dropped at least once per such window, so the retention
    is bounded by the accumulation window and nothing piles up across the loop.  Nested functions
    and classes are not the loop's code; a reset in a nested loop counts (it runs in the iteration)."""
    key = _binding_key(root)
    if key is None:
        return False
    return any(assign is not store for assign in _resets(loop).get(key, ()))


#: Per loop of the checked file: binding key -> the assignments in its body that re-bind it fresh.
_RESETS: "Dict[nodes.NodeNG, Dict[str, List[nodes.Assign]]]" = memo.per_file()


def _resets(loop: nodes.NodeNG) -> Dict[str, List[nodes.Assign]]:
    """Read once per loop (TP001 asks for each value kept in it)."""
    found = _RESETS.get(loop)
    if found is not None:
        return found
    found = {}
    stack: List[nodes.NodeNG] = list(loop.body)  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if isinstance(node, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
            continue
        emptied = _emptied(node)
        if emptied is not None:
            found.setdefault(emptied, []).append(node)  # type: ignore[arg-type]
        if isinstance(node, nodes.Assign):
            for target in node.targets:
                elts = target.elts if isinstance(target, (nodes.Tuple, nodes.List)) else [target]
                values = (
                    node.value.elts
                    if isinstance(node.value, (nodes.Tuple, nodes.List)) and len(node.value.elts) == len(elts)
                    else [node.value] * len(elts)
                )
                for elt, value in zip(elts, values):
                    key = _binding_key(elt)
                    if key is not None and not _reads(value, key):
                        found.setdefault(key, []).append(node)
        stack.extend(node.get_children())
    _RESETS[loop] = found
    return found


def _emptied(node: nodes.NodeNG) -> Optional[str]:
    """The binding key of a container ``node`` empties in place, like re-binding it to a fresh one:
    ``losses.clear()``, ``del losses[:]``, ``losses[:] = []``."""
    if isinstance(node, nodes.Expr) and isinstance(node.value, nodes.Call):
        call = node.value
        if isinstance(call.func, nodes.Attribute) and call.func.attrname == "clear" and not call.args:
            return _binding_key(call.func.expr)
    targets: List[nodes.NodeNG] = []
    if isinstance(node, nodes.Delete):
        targets = list(node.targets)
    elif isinstance(node, nodes.Assign) and isinstance(node.value, (nodes.List, nodes.Tuple)) and not node.value.elts:
        targets = list(node.targets)
    for target in targets:
        if isinstance(target, nodes.Subscript) and _whole_slice(target.slice):
            return _binding_key(target.value)
    return None


def _whole_slice(index: nodes.NodeNG) -> bool:
    return isinstance(index, nodes.Slice) and index.lower is None and index.upper is None and index.step is None


def element_rewrites(root: nodes.NodeNG, loop: nodes.NodeNG) -> List[nodes.Assign]:
    """Assignments in ``loop``'s own body that overwrite an element of the container ``root`` with a
    value read from that container (``losses[-1] = losses[-1].detach()``); whether the new value
    still carries a graph is the caller's question.  Nested functions and classes are skipped."""
    key = _binding_key(root)
    if key is None:
        return []
    found: List[nodes.Assign] = []
    stack: List[nodes.NodeNG] = list(loop.body)  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if isinstance(node, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
            continue
        if isinstance(node, nodes.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], nodes.Subscript):
            target_root = container_root(node.targets[0].value)
            if target_root is not None and _binding_key(target_root) == key and _reads(node.value, key):
                found.append(node)
        stack.extend(node.get_children())
    return found


def same_binding_key(a: nodes.NodeNG, b: nodes.NodeNG) -> bool:
    """``a`` and ``b`` name the same binding by their text (``x``/``x``, ``self.x``/``self.x``)."""
    key = _binding_key(a)
    return key is not None and key == _binding_key(b)


def reads_binding(expr: nodes.NodeNG, root: nodes.NodeNG) -> bool:
    """``expr`` reads the binding ``root`` names (by its text) somewhere."""
    key = _binding_key(root)
    return key is not None and _reads(expr, key)
