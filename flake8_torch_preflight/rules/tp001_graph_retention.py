"""TP001 graph-retention: a tensor still attached to its autograd graph is kept across loop iterations."""
from __future__ import annotations

import re
from typing import FrozenSet, Optional, Set

from astroid import nodes

from ..analysis import infer, loops, provenance
from ..analysis.provenance import Backward, Prov, Provenance
from ._base import Rule, register

#: Container methods that keep their argument beyond the iteration (lists, deques).
STORE_METHODS = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})

#: In-place tensor accumulation into a receiver that outlives the iteration.
INPLACE_ACCUMULATE = frozenset({"add_", "sub_"})

#: Operators that fold a value into the name on the left (``x = x + loss``).
ACCUMULATING_OPERATORS = frozenset({"+", "-", "*", "/"})

#: torch functions that grow a tensor from itself (``outs = torch.cat([outs, out])``).
GROWING_FUNCTIONS = frozenset({"torch.cat", "torch.concat", "torch.stack", "torch.add", "torch.vstack", "torch.hstack"})

#: Fallback by name: an opaque callee (nothing resolves it) that receives the stored value and may
#: run backward itself (timm's NativeScaler ``loss_scaler(loss, opt)``, apex ``scale_loss``, a
#: ``train_step`` from another module).  Which of the two cases applies is then unknown: silence.
MAY_BACKPROPAGATE = re.compile(r"backward|scaler|scale_loss|step|optimi[sz]e", re.IGNORECASE)

#: Longest stored expression quoted in the message.
MAX_TEXT = 32

_OOM = (
    "and no backward() in the loop frees it, so every iteration's activations stay in GPU memory "
    "until the run goes out of memory"
)
_AFTER = (
    "after its backward() ran, so its graph nodes keep piling up in host memory every step and the "
    "stored value stays differentiable"
)


@register
class GraphRetention(Rule):
    code, slug = "TP001", "graph-retention"
    message = (
        "{value} is kept across loop iterations still attached to its autograd graph {case}. "
        "Keep {value}.item() (a number) or {value}.detach() (a tensor) instead."
    )
    rationale = (
        "A loss or model output is a tensor that references the autograd graph that produced it. "
        "Appending it to a list, adding it into a running total (`total += loss`, `x = x + loss`), "
        "or storing it under a changing key keeps that graph alive for as long as the container lives. "
        "When no backward() ran on it, every iteration's saved activations stay on the GPU and memory "
        "grows until the run dies; when backward() already ran, the activations are freed but the "
        "graph nodes still accumulate in host memory and the stored values stay differentiable. "
        "The rule follows grad-bearing values through the provenance analysis (model and loss calls, "
        "arithmetic, tensor methods, helper returns; `.item()`, `.detach()` and `no_grad` stop them) "
        "and reports a store in a loop into a container that outlives the iteration. It stays silent "
        "for containers created inside the loop, and for retention that a later backward() needs: "
        "micro-batch losses summed and backpropagated, and loops that run no backward() themselves and "
        "hand their result to a caller (a model's forward, a chunked loss, a pipeline schedule)."
    )
    example_bad = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "model = nn.Linear(8, 2)\n"
        "criterion = nn.CrossEntropyLoss()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "losses = []\n"
        "for x, y in [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * 10:\n"
        "    optimizer.zero_grad()\n"
        "    loss = criterion(model(x), y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    losses.append(loss)\n"
    )
    example_good = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "model = nn.Linear(8, 2)\n"
        "criterion = nn.CrossEntropyLoss()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "losses = []\n"
        "for x, y in [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * 10:\n"
        "    optimizer.zero_grad()\n"
        "    loss = criterion(model(x), y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    losses.append(loss.item())\n"
    )

    # ------------------------------------------------------------ patterns
    def visit_call(self, node: nodes.Call) -> None:
        method = infer.method_name(node)
        if method not in STORE_METHODS and method not in INPLACE_ACCUMULATE:
            return
        index = 1 if method == "insert" else 0
        if len(node.args) <= index or isinstance(node.args[index], nodes.Starred):
            return
        loop = loops.innermost(node)
        if loop is None:
            return
        container = node.func.expr  # type: ignore[union-attr]
        value = node.args[index]
        shown = value.elts[0] if isinstance(value, (nodes.List, nodes.Tuple)) and len(value.elts) == 1 else None
        self._check(node, value, container, loop, frozenset(), shown=shown)

    def visit_augassign(self, node: nodes.AugAssign) -> None:
        loop = loops.innermost(node)
        if loop is None:
            return
        p = provenance.of(self.ctx)
        target = node.target
        if isinstance(target, (nodes.AssignName, nodes.AssignAttr)) and _self_or_name(target):
            new = p.value(target)
            if new is None or not new.graph:
                return  # computed with autograd off, or nothing grad-bearing was added
            made = p.def_of(target)
            self._check(node, node.value, target, loop, frozenset({id(made)}) if made is not None else frozenset())
        elif isinstance(target, nodes.Subscript) and p.grad_mode(node) == provenance.ON:
            self._check(node, node.value, target.value, loop, frozenset())

    def visit_assign(self, node: nodes.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0]
        if isinstance(target, nodes.Subscript):
            if isinstance(target.slice, nodes.Const):
                return  # the same key every iteration: the old value is dropped
            loop = loops.innermost(node)
            if loop is not None:
                self._check(node, node.value, target.value, loop, frozenset())
            return
        if not isinstance(target, (nodes.AssignName, nodes.AssignAttr)) or not _self_or_name(target):
            return
        folded = _folded_operand(node.value, target)
        if folded is None:
            return
        loop = loops.innermost(node)
        if loop is None:
            return
        p = provenance.of(self.ctx)
        if not p.carries_graph(node.value):
            return
        made = p.def_of(target)
        added = _added_value(node.value, folded)
        self._check(node, added, folded, loop, frozenset({id(made)}) if made is not None else frozenset(),
                    whole=node.value)

    # ------------------------------------------------------------ the check
    def _check(
        self,
        store: nodes.NodeNG,
        value: nodes.NodeNG,
        container: nodes.NodeNG,
        loop: "loops.Loop",
        made: FrozenSet[int],
        whole: Optional[nodes.NodeNG] = None,
        shown: Optional[nodes.NodeNG] = None,
    ) -> None:
        p = provenance.of(self.ctx)
        stored = p.value(whole if whole is not None else value)
        if stored is None or not stored.graph:
            return
        root = _root(container)
        if root is None:
            return
        defs = p.reaching_defs(root)
        if defs is None:
            return
        if not defs and not isinstance(root, (nodes.Attribute, nodes.AssignAttr)):
            return  # a name the analysis cannot bind (a builtin, a star import): unknown
        if defs and all(_inside(d.node, loop) for d in defs):
            return  # a container created fresh in this iteration
        holders = frozenset(id(d) for d in defs) | made
        scope = p.scope_of(store)
        in_loop = {id(c) for c in loops.loop_calls(loop)}
        for b in p.backwards_in(scope):
            if b.prov.deps & holders:
                return  # a later backward() needs what was kept (micro-batches summed, then backpropagated)
            if id(b.call) not in in_loop and _covers(p, b, stored):
                return  # a backward() outside the loop runs through it anyway (decoder steps, unrolled RNNs)
        per_iteration = [b for b in p.backwards if id(b.call) in in_loop]
        covering = [b for b in per_iteration if _covers(p, b, stored)]
        if not per_iteration:
            if _escapes(p, scope, holders, root, defs):
                return  # handed to the caller, who may backpropagate it (a forward, a chunked loss)
            if _may_backpropagate(p, loop, stored):
                return
            case = _OOM
        elif covering and not all(b.retain for b in covering):
            case = _AFTER
        else:
            if not covering and _may_backpropagate(p, loop, stored):
                return
            case = _OOM
        self.report(store, value=_text(shown if shown is not None else value), case=case)


def _self_or_name(target: nodes.NodeNG) -> bool:
    if isinstance(target, nodes.AssignName):
        return True
    return isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) and target.expr.name == "self"


def _same_binding(expr: nodes.NodeNG, target: nodes.NodeNG) -> bool:
    if isinstance(target, nodes.AssignName):
        return isinstance(expr, nodes.Name) and expr.name == target.name
    return (
        isinstance(expr, nodes.Attribute)
        and expr.attrname == target.attrname  # type: ignore[union-attr]
        and isinstance(expr.expr, nodes.Name)
        and expr.expr.name == "self"
    )


def _folded_operand(value: nodes.NodeNG, target: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    """The read of ``target`` that ``value`` folds into itself: ``x + loss``, ``torch.cat([x, out])``."""
    if isinstance(value, nodes.BinOp) and value.op in ACCUMULATING_OPERATORS:
        for side in (value.left, value.right):
            if _same_binding(side, target):
                return side
            found = _folded_operand(side, target) if isinstance(side, nodes.BinOp) else None
            if found is not None:
                return found
        return None
    if isinstance(value, nodes.Call):
        if infer.method_name(value) in ("add", "sub") and isinstance(value.func, nodes.Attribute):
            return value.func.expr if _same_binding(value.func.expr, target) else None
        name = infer.call_name(value)
        if name in ("cat", "concat", "stack", "add", "vstack", "hstack") and value.args:
            if infer.callee_qname(value) not in GROWING_FUNCTIONS:
                return None
            first = value.args[0]
            parts = first.elts if isinstance(first, (nodes.List, nodes.Tuple)) else value.args
            for part in parts:
                if _same_binding(part, target):
                    return part
    return None


def _added_value(value: nodes.NodeNG, folded: nodes.NodeNG) -> nodes.NodeNG:
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


def _root(container: nodes.NodeNG) -> Optional[nodes.NodeNG]:
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
        elif isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and node.func.attrname == "setdefault":
            node = node.func.expr
        else:
            return None


def _inside(node: nodes.NodeNG, ancestor: nodes.NodeNG) -> bool:
    parent = node.parent
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False


def _covers(p: Provenance, backward: Backward, stored: Prov) -> bool:
    """Does ``backward`` run through the stored value's graph (so its saved activations are freed)?"""
    if backward.prov.sources & stored.sources:
        return True
    return bool(backward.prov.deps & _graph_defs(p, stored))


def _escapes(p: Provenance, scope: nodes.NodeNG, holders: FrozenSet[int], root: nodes.NodeNG, defs: FrozenSet) -> bool:
    """The container leaves the function: returned, yielded, stored on ``self``, or owned by a caller."""
    if isinstance(root, (nodes.Attribute, nodes.AssignAttr)):
        return True  # self.x: the object outlives the call
    for d in defs:
        if d.scope is not scope or isinstance(d.node.parent, nodes.Arguments):
            return True  # a global or a parameter: the caller owns it
    return any(e.prov.deps & holders and not e.prov.stopped for e in p.escapes_in(scope))


def _may_backpropagate(p: Provenance, loop: "loops.Loop", stored: Prov) -> bool:
    for call in loops.calls_in(list(loop.body), 0):
        name = infer.call_name(call)
        if name is None or not MAY_BACKPROPAGATE.search(name):
            continue
        if infer.callee_qname(call) is not None:
            continue  # resolved: an optimizer step, a scheduler, a helper of this file
        for arg in list(call.args) + [kw.value for kw in call.keywords or ()]:
            value = p.value(arg)
            if value is not None and (value.sources & stored.sources or value.deps & stored.deps & _graph_defs(p, stored)):
                return True
    return False


def _graph_defs(p: Provenance, stored: Prov) -> Set[int]:
    found: Set[int] = set()
    for ident in stored.deps:
        d = p.def_by_id(ident)
        if d is not None and d.prov.graph:
            found.add(ident)
    return found


def _text(value: nodes.NodeNG) -> str:
    text = value.as_string()
    return text if len(text) <= MAX_TEXT else "(...)"
