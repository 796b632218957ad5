"""Loops that add up gradients over several backward() calls before one optimizer step.

Two shapes, both read from the loop structure (helpers of the file included):

* a **gated step** (``gated_accumulation``): the loop runs ``backward()`` every iteration, but
  its optimizer step sits under ``if (i + 1) % N == 0`` (any ``%`` test, a flag computed from one,
  or a counter the loop increments: ``if micro == N``), or after ``if i % N != 0: continue``;
  no ungated step or ``zero_grad`` in the same loop, and the backward is not under the gate;
* an **inner micro-batch loop** (``micro_batch_accumulation``): ``backward()`` runs in a loop over
  micro-batches (``x.chunk(N)``, ``x.split(size)``, ``range(N)`` that fetches a batch with
  ``next()`` or slices by the loop variable, or an iterable named for micro-batches; or a ``while``
  loop that fetches a batch with ``next()`` and is bounded by a counter it increments:
  ``while done < N``, ``if seen >= total: break``) that never
  steps or clears gradients, while the enclosing loop steps, or the function steps after it, or
  (a loop with neither) a caller of that function steps after the call, in its loop or function.

An inner loop that rebuilds the whole batch around micro-batch j (gradient caching:
``torch.cat(cache[:j] + [out] + cache[j + 1:])``) is not accumulation of per-micro-batch losses.

Both give the backward calls that accumulate, N (None when only the iterable is known), the
optimizer steps that apply the sum and the loop or function that takes them.
``rescales_gradients`` recognises the other fix: gradients divided in place before the step
(``p.grad /= N``), or a call that cannot be read handed the model and a quotient
(``scale_grads(model, 1 / num_tokens)``, torchtune's normalisation by the token count).

Name-based evidence: ``MICRO_BATCH_NAME`` recognises an inner loop as a micro-batch loop (a count
has no binding to resolve); it never decides alone that gradients accumulate, the loop must
still run backward() with the step outside it.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, Iterator, List, NamedTuple, Optional, Set, Tuple, Union

from astroid import nodes

from ..semantic import dataflow, infer, loops, memo
from . import gradients
from .torch_names import MODULE_BASES

#: Loop counts, iterables and loop variables named for gradient accumulation (``range(accum_steps)``,
#: ``for mb in micro_batches``, ``for micro_step in range(8)``): only used to recognise an inner
#: micro-batch loop.
MICRO_BATCH_NAME = re.compile(
    r"accum|micro|grad_?acc|update_?freq|(^|_)gas($|_)|chunks|sub_?batch|ubatch", re.IGNORECASE
)

#: Tensor methods and torch functions that cut a batch into micro-batches.
SPLIT_METHODS = frozenset({"chunk", "split", "tensor_split"})

#: In-place tensor methods that rescale accumulated gradients before the step (``p.grad.div_(N)``).
GRAD_RESCALE_METHODS = frozenset({"div_", "mul_"})

#: torch functions that rescale a list of gradients in place.
FOREACH_RESCALES = frozenset({"_foreach_div_", "_foreach_mul_"})

#: torch functions that join tensors along a dimension.
CONCATENATIONS = frozenset({"cat", "concat", "concatenate", "stack"})

#: How many helper levels of the file are searched for a step, zero_grad or backward.
HELPER_DEPTH = 2


#: A loop, or a function run once per batch.
Scope = Union[nodes.For, nodes.While, nodes.FunctionDef]


class Accumulation(NamedTuple):
    """Backward calls whose gradients are summed over ``text`` micro-batches before a step."""

    backwards: List[nodes.Call]
    divisor: Optional[nodes.NodeNG]  # N, when it is an expression of the file
    text: str  # N as a message shows it: ``accum_steps``, ``len(micro_batches)``
    steps: Tuple[nodes.Call, ...] = ()  # the optimizer steps that apply the summed gradients
    scope: Optional[nodes.NodeNG] = None  # the loop or function that takes those steps
    rescaled: bool = False  # the summed gradients are divided in place before the step


def gated_accumulation(loop: "Scope") -> Optional[Accumulation]:
    """The backward calls of ``loop`` that run every iteration while its step runs every N.

    ``loop`` may also be a function run once per batch (``def train_step(self, batch)``) whose
    step is gated on a counter (``if self.step % N == 0``) or by an early ``return``."""
    if not _has_gate(loop):
        return None  # cheap syntactic check first: no ``if`` that holds every N iterations
    if isinstance(loop, nodes.FunctionDef):
        if not any(infer.method_name(c) == "backward" for c in infer.iter_calls(loop)):
            return None
        calls = loops.calls_in(loop.body, HELPER_DEPTH)
    else:
        calls = loops.loop_calls(loop, HELPER_DEPTH)
    names = {infer.method_name(c) for c in calls}
    if "backward" not in names or "step" not in names:
        return None  # cheap syntactic check first
    steps: List[Tuple[nodes.NodeNG, nodes.NodeNG]] = []
    step_calls: List[nodes.Call] = []
    backwards: List[Tuple[nodes.Call, List[nodes.Call]]] = []
    for anchor, kind, inner in _anchors(loop):
        if kind == "backward":
            if _backward_owned_by(anchor, loop):
                backwards.append((anchor, inner))
            continue
        if _owner(anchor) is not loop:
            continue
        gate = _gate(anchor, loop)
        if gate is None:
            return None  # gradients cleared, or a step taken, every iteration
        if kind == "step":
            steps.append(gate)
            step_calls.extend(_step_calls(anchor))
    if not steps or not backwards:
        return None
    gate_node, divisor = steps[0]
    found = [call for anchor, inner in backwards if not _gated_by(anchor, gate_node) for call in inner]
    if not found:
        return None
    return Accumulation(found, divisor, dataflow.binding_text(divisor), tuple(step_calls), loop,
                        rescales_gradients(loop))


def micro_batch_accumulation(loop: "Union[nodes.For, nodes.While]") -> Optional[Accumulation]:
    """The backward calls of an inner micro-batch ``loop`` whose step comes after it."""
    micro = _micro_batch_count(loop) if isinstance(loop, nodes.For) else _counted_batches(loop)
    if micro is None:
        return None  # cheap check first: not a loop over micro-batches
    calls = loops.loop_calls(loop, HELPER_DEPTH)
    if not any(infer.method_name(c) == "backward" for c in calls):
        return None
    if any(gradients.stepped_optimizer(c) is not None or gradients.is_zero_grad(c) for c in calls):
        return None  # this loop steps (or clears) itself
    step_calls, where = _steps_after(loop)
    if not step_calls:
        return None
    if _rebuilds_full_batch(loop):
        return None  # each micro-step's loss is the whole batch's loss (cached features): the sum is the batch gradient
    found = [
        call
        for anchor, kind, inner in _anchors(loop)
        if kind == "backward" and loops.innermost(anchor) is loop
        for call in inner
    ]
    if not found:
        return None
    # the steps may be taken by a caller: the function holding the loop may rescale too
    rescaled = (rescales_gradients(loop) or rescales_gradients(where)
                or (not loops.inside(loop, where) and rescales_gradients(loop.scope())))
    return Accumulation(found, micro[0], micro[1], step_calls, where, rescaled)


_FOUND: "Dict[nodes.NodeNG, Optional[Accumulation]]" = memo.per_file()


def accumulation_in(scope: "Scope") -> Optional[Accumulation]:
    """The accumulation ``scope`` runs: a gated step (a loop, or a step function called per
    batch), else an inner micro-batch loop whose step comes after it.  The one answer TP004 and
    the estimator's reader share."""
    if scope not in _FOUND:
        found = gated_accumulation(scope)
        if found is None and isinstance(scope, (nodes.For, nodes.While)):
            found = micro_batch_accumulation(scope)
        _FOUND[scope] = found
    return _FOUND[scope]


def accumulations(module: nodes.Module) -> Iterator[Accumulation]:
    """Every accumulation of ``module``, in source order."""
    for scope in module.nodes_of_class((nodes.For, nodes.While, nodes.FunctionDef)):
        found = accumulation_in(scope)
        if found is not None:
            yield found


def _has_gate(scope: "Scope") -> bool:
    """Some ``if`` directly in ``scope`` (not in a nested def) tests an accumulation gate."""
    stack: List[nodes.NodeNG] = list(scope.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
            continue
        if isinstance(node, nodes.If) and _gate_divisor(node.test, scope, 2) is not None:
            return True
        stack.extend(node.get_children())
    return False


def _owner(node: nodes.NodeNG) -> nodes.NodeNG:
    """The innermost loop running ``node``, else its function."""
    inner = loops.innermost(node)
    return inner if inner is not None else node.scope()


def _anchors(loop: "Scope") -> Iterator[Tuple[nodes.Call, str, List[nodes.Call]]]:
    """``(call in the loop, kind, backward calls)`` for each call lexically in ``loop`` that is
    (or is a helper of the file making, outside its own loops) a step, a zero_grad or a backward."""
    for stmt in loops.body_nodes(loop):
        for call in infer.iter_calls(stmt):
            if gradients.stepped_optimizer(call) is not None:
                yield call, "step", []
                continue
            if gradients.is_zero_grad(call):
                yield call, "zero_grad", []
                continue
            if gradients.accumulating_backward(call):
                yield call, "backward", [call]
                continue
            helper = loops.local_helper(call)
            if helper is None:
                continue
            inner = [c for c in loops.calls_in(helper.body, HELPER_DEPTH - 1) if loops.innermost(c) is None]
            if any(gradients.stepped_optimizer(c) is not None for c in inner):
                yield call, "step", []
            elif any(gradients.is_zero_grad(c) for c in inner):
                yield call, "zero_grad", []
            backs = [c for c in inner if gradients.accumulating_backward(c)]
            if backs:
                yield call, "backward", backs


def _backward_owned_by(anchor: nodes.Call, loop: "Scope") -> bool:
    """No loop between ``anchor`` and ``loop`` steps on its own (that loop owns the backward)."""
    for inner in loops.enclosing_loops(anchor):
        if inner is loop:
            return True
        if any(gradients.stepped_optimizer(c) is not None for c in loops.loop_calls(inner, HELPER_DEPTH)):
            return False
    return isinstance(loop, nodes.FunctionDef) and anchor.scope() is loop


def _gate(anchor: nodes.NodeNG, loop: "Scope") -> Optional[Tuple[nodes.NodeNG, nodes.NodeNG]]:
    """``(gating statement, N)`` when ``anchor`` runs only every N iterations of ``loop``."""
    child = anchor
    parent = anchor.parent
    while parent is not None and parent is not loop:
        if isinstance(parent, nodes.If) and (child in parent.body or child in parent.orelse):
            divisor = _gate_divisor(parent.test, loop, 2)
            if divisor is not None:
                return parent, divisor
        found = _continue_gate(parent, child, loop)
        if found is not None:
            return found
        child, parent = parent, parent.parent
    if parent is loop:
        return _continue_gate(parent, child, loop)
    return None


def _continue_gate(
    block: nodes.NodeNG, child: nodes.NodeNG, loop: "Scope"
) -> Optional[Tuple[nodes.NodeNG, nodes.NodeNG]]:
    """``if i % N != 0: continue`` earlier in the same statement list as ``child``."""
    for field in ("body", "orelse", "handlers", "finalbody"):
        stmts = getattr(block, field, None)
        if not isinstance(stmts, list) or child not in stmts:
            continue
        for stmt in stmts[: stmts.index(child)]:
            if isinstance(stmt, nodes.If) and _exits_early(stmt):
                divisor = _gate_divisor(stmt.test, loop, 2)
                if divisor is not None:
                    return stmt, divisor
    return None


def _exits_early(branch: nodes.If) -> bool:
    """``if ...: continue`` (in a loop) or ``if ...: return`` (in a step function)."""
    return bool(branch.body) and isinstance(branch.body[-1], (nodes.Continue, nodes.Return))


def _gate_divisor(test: nodes.NodeNG, loop: "Scope", depth: int) -> Optional[nodes.NodeNG]:
    """N for a test that holds once every N iterations: a ``% N`` or a counter compared with N."""
    for binop in test.nodes_of_class(nodes.BinOp):
        if binop.op == "%" and not (isinstance(binop.left, nodes.Const) and isinstance(binop.left.value, str)):
            return None if _trivial(binop.right) else binop.right
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        return _gate_divisor(test.operand, loop, depth)
    if isinstance(test, (nodes.Name, nodes.Attribute)) and depth > 0:
        values = dataflow.assigned_values(test)
        if values and len(values) == 1:
            return _gate_divisor(values[0], loop, depth - 1)
        return None
    if isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in ("==", ">="):
        left, right = test.left, test.ops[0][1]
        for counter, divisor in ((left, right), (right, left)):
            if _incremented_in(counter, loop) and not _trivial(divisor):
                return divisor
    return None


def _incremented_in(counter: nodes.NodeNG, loop: "Scope") -> bool:
    if not isinstance(counter, (nodes.Name, nodes.Attribute)):
        return False
    return dataflow.binding_text(counter) in _incremented(loop)


#: The names (as ``binding_text`` writes them) each loop of the checked file increments with ``+=``.
_INCREMENTED: "Dict[nodes.NodeNG, FrozenSet[str]]" = memo.per_file()


def _incremented(loop: "Scope") -> FrozenSet[str]:
    """Read once per loop: an ``if``-ladder asks for every one of its tests."""
    found = _INCREMENTED.get(loop)
    if found is None:
        found = _INCREMENTED[loop] = frozenset(
            dataflow.binding_text(aug.target) for aug in loop.nodes_of_class(nodes.AugAssign) if aug.op == "+="
        )
    return found


def _trivial(divisor: nodes.NodeNG) -> bool:
    """N is a literal 1 (or a name only ever bound to one): no accumulation."""
    values = [divisor]
    if isinstance(divisor, nodes.Name):
        values = dataflow.assigned_values(divisor) or [divisor]
    return all(isinstance(v, nodes.Const) and isinstance(v.value, int) and v.value <= 1 for v in values)


def _gated_by(node: nodes.NodeNG, gate: nodes.NodeNG) -> bool:
    """``node`` runs under ``gate`` (inside the ``if``, or after the ``continue`` gate)."""
    if loops.inside(node, gate):
        return True
    if isinstance(gate, nodes.If) and _exits_early(gate):
        return bool(node.lineno and gate.lineno and node.lineno > gate.tolineno)
    return False


def _micro_batch_count(loop: nodes.For) -> Optional[Tuple[Optional[nodes.NodeNG], str]]:
    """``(N, text)`` when ``loop`` iterates over micro-batches; N is None when only the iterable
    is known (the text then reads ``len(...)``)."""
    iterable = loops.unwrap_iteration(loop.iter)  # enumerate(x.chunk(4))
    name = infer.call_name(iterable)
    if isinstance(iterable, nodes.Call) and name in SPLIT_METHODS:
        count = None
        if name == "chunk":
            index = 0 if isinstance(iterable.func, nodes.Attribute) and not _is_torch_module(iterable.func.expr) else 1
            count = iterable.args[index] if len(iterable.args) > index else None
        if count is not None:
            return count, dataflow.binding_text(count)
        return None, "len({})".format(iterable.as_string())
    if isinstance(iterable, nodes.Call) and name == "range" and infer.qname(iterable.func) == "builtins.range":
        args = iterable.args
        count = args[0] if len(args) == 1 else args[1] if len(args) == 2 else None
        named = (count is not None and MICRO_BATCH_NAME.search(dataflow.binding_text(count)) is not None) or (
            isinstance(loop.target, nodes.AssignName) and MICRO_BATCH_NAME.search(loop.target.name) is not None)
        if named or _fetches_batches(loop):
            if count is not None and not _trivial(count):
                return count, dataflow.binding_text(count)
            if count is None:
                return None, "len({})".format(iterable.as_string())
        return None
    if isinstance(iterable, (nodes.Name, nodes.Attribute)):
        terminal = dataflow.terminal_name(iterable)
        if terminal is not None and MICRO_BATCH_NAME.search(terminal):
            return iterable, "len({})".format(iterable.as_string())
    return None


def _counted_batches(loop: nodes.While) -> Optional[Tuple[Optional[nodes.NodeNG], str]]:
    """``(N, text)`` for a ``while`` loop that fetches a batch with ``next()`` each iteration and
    stops when a counter it increments reaches a bound: its test (``while done < N``) or a ``break``
    directly in its body (``seen += micro_bs; if seen >= total: break``).  The count is N when the
    counter grows by one, else N / step (``total / micro_bs``)."""
    if not _fetches_batches(loop):
        return None
    bounds = [_counter_bound(loop.test, loop, ("<", "<=", "!="))]
    for stmt in loop.body:
        if isinstance(stmt, nodes.If) and stmt.body and isinstance(stmt.body[-1], nodes.Break) and not stmt.orelse:
            bounds.append(_counter_bound(stmt.test, loop, (">=", ">", "==")))
    found = [b for b in bounds if b is not None]
    if len(found) != 1:
        return None
    counter, bound = found[0]
    steps = [aug.value for aug in loop.nodes_of_class(nodes.AugAssign)
             if aug.op == "+=" and dataflow.binding_text(aug.target) == counter]
    if len(steps) != 1:
        return None
    step = steps[0]
    text = dataflow.binding_text(bound)
    if isinstance(step, nodes.Const) and step.value == 1:
        return bound, text
    return bound, "{}/{}".format(dataflow.terminal_name(bound) or text,
                                 dataflow.terminal_name(step) or step.as_string())


def _counter_bound(test: nodes.NodeNG, loop: nodes.While, ops: Tuple[str, ...]) -> Optional[Tuple[str, nodes.NodeNG]]:
    """``(counter, bound)`` when ``test`` compares a counter ``loop`` increments with a bound that is
    not a literal 1 or less (``ops`` as written counter first; the mirrored form is read too)."""
    mirrored = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
    if not (isinstance(test, nodes.Compare) and len(test.ops) == 1):
        return None
    op, right = test.ops[0]
    for counter, bound, written in ((test.left, right, op), (right, test.left, mirrored.get(op))):
        if written in ops and _incremented_in(counter, loop) and not _incremented_in(bound, loop):
            if isinstance(bound, (nodes.Name, nodes.Attribute, nodes.Call, nodes.BinOp)) and not _trivial(bound):
                return dataflow.binding_text(counter), bound
    return None


def _is_torch_module(expr: nodes.NodeNG) -> bool:
    return infer.qname(expr) == "torch"


def _fetches_batches(loop: "Union[nodes.For, nodes.While]") -> bool:
    """The loop body pulls a batch with ``next()`` or slices a batch with the loop variable."""
    for stmt in loop.body:
        for call in infer.iter_calls(stmt):
            if infer.call_name(call) == "next" and isinstance(call.func, nodes.Name):
                return True
    if not isinstance(loop, nodes.For):
        return False
    targets = {t.name for t in loop.target.nodes_of_class(nodes.AssignName)}
    for sub in loop.nodes_of_class(nodes.Subscript):
        if isinstance(sub.slice, nodes.Slice) and any(n.name in targets for n in sub.slice.nodes_of_class(nodes.Name)):
            return True
    return False


def _steps_after(loop: "Union[nodes.For, nodes.While]") -> Tuple[Tuple[nodes.Call, ...], nodes.NodeNG]:
    """``(steps, where)``: the optimizer steps that apply what ``loop`` accumulates and the loop or
    function taking them.  Those are the steps taken once per pass of the enclosing loop, or after
    ``loop`` in its function; failing both, the steps after each in-file call of that function in
    its caller's loop iteration or function (``train_step`` calls ``self.forward_backward(batch)``
    and then steps).  No steps: an empty tuple."""
    found = _steps_following(loop)
    scope = loop.scope()
    if found or loops.innermost(loop) is not None or not isinstance(scope, nodes.FunctionDef):
        outer = loops.innermost(loop)
        return found, outer if outer is not None else scope
    for site in loops.call_sites(scope):
        steps = _steps_following(site)
        if steps:
            outer = loops.innermost(site)
            return steps, outer if outer is not None else site.scope()
    return (), scope


def _steps_following(node: nodes.NodeNG) -> Tuple[nodes.Call, ...]:
    """The optimizer steps taken once per pass of the loop around ``node``, or, outside any loop,
    after ``node`` in its function or module (empty when there is none)."""
    outer = loops.innermost(node)
    if outer is not None:
        return tuple(
            call
            for a, kind, _ in _anchors(outer)
            if kind == "step" and loops.innermost(a) is outer
            for call in _step_calls(a)
        )
    scope = node.scope()
    body = scope.body if isinstance(scope, (nodes.FunctionDef, nodes.Module)) else []
    end = node.tolineno or 0
    found: List[nodes.Call] = []
    for stmt in body:
        if isinstance(stmt, (nodes.FunctionDef, nodes.ClassDef)):
            continue
        for call in loops.calls_in([stmt], HELPER_DEPTH):
            after = (call.lineno or 0) > end and not loops.inside(call, node)
            if after and gradients.stepped_optimizer(call) is not None:
                found.append(call)
    return tuple(found)


def _step_calls(anchor: nodes.Call) -> List[nodes.Call]:
    """The optimizer steps an anchor takes: itself, or the steps inside the helper it calls."""
    if gradients.stepped_optimizer(anchor) is not None:
        return [anchor]
    helper = loops.local_helper(anchor)
    if helper is None:
        return []
    inner = loops.calls_in(helper.body, HELPER_DEPTH - 1)
    return [c for c in inner if loops.innermost(c) is None and gradients.stepped_optimizer(c) is not None]


def _rebuilds_full_batch(loop: "Union[nodes.For, nodes.While]") -> bool:
    """Gradient caching: each micro-step concatenates the cached outputs of the other micro-batches
    around the live one (``torch.cat(cache[:j] + [out] + cache[j + 1:])``), so every micro-step's
    loss is already the loss of the whole batch and the summed gradients are its gradient."""
    if not isinstance(loop, nodes.For):
        return False
    targets = {t.name for t in loop.target.nodes_of_class(nodes.AssignName)}
    if not targets:
        return False
    for call in loop.nodes_of_class(nodes.Call):
        if infer.call_name(call) not in CONCATENATIONS or not call.args:
            continue
        if (infer.qname(call.func) or "").split(".")[0] != "torch":
            continue
        for sub in call.args[0].nodes_of_class(nodes.Subscript):
            if isinstance(sub.slice, nodes.Slice) and any(
                n.name in targets for n in sub.slice.nodes_of_class(nodes.Name)
            ):
                return True
    return False


def rescales_gradients(scope: nodes.NodeNG) -> bool:
    """Gradients divided in place before the step: ``p.grad /= N``, ``p.grad.div_(N)``,
    ``torch._foreach_div_(grads, N)``, or an unreadable helper handed the model and a quotient
    (``training.scale_grads_(model.parameters(), 1.0 / num_tokens)``)."""
    if isinstance(scope, (nodes.For, nodes.While)):
        calls = loops.loop_calls(scope, HELPER_DEPTH)
    else:
        calls = list(infer.iter_calls(scope))
    owners: Optional[Set[str]] = None
    for call in calls:
        method = infer.method_name(call)
        if method in GRAD_RESCALE_METHODS and _is_grad(call.func.expr):  # type: ignore[union-attr]
            return True
        if infer.call_name(call) in FOREACH_RESCALES:
            return True
        if _quotient_argument(call):
            if owners is None:
                owners = gradients.parameter_owners(scope.root())
            if _opaque_gradient_scaling(call, owners):
                return True
    for aug in scope.nodes_of_class(nodes.AugAssign):
        if aug.op in ("/=", "*=") and _is_grad(aug.target):
            return True
    return False


def _quotient_argument(call: nodes.Call) -> bool:
    """Some argument of ``call`` is a quotient (``1.0 / num_tokens``, ``world_size / n``): cheap, syntactic."""
    args = list(call.args) + [kw.value for kw in call.keywords or ()]
    return any(isinstance(arg, nodes.BinOp) and arg.op == "/" for arg in args)


def _opaque_gradient_scaling(call: nodes.Call, owners: Set[str]) -> bool:
    """A call that cannot be read (a library helper, not a torch function) is handed a model's
    gradients and a quotient: ``training.scale_grads_(model.parameters(), 1.0 / num_tokens)``,
    ``scale_grads(self._model, world_size / num_tokens)``.  It may divide the accumulated gradients
    before the step, so it gets the benefit of the doubt; torch functions (``clip_grad_norm_``) are
    resolved and never count."""
    name = infer.qname(call.func)
    if name is not None and (name.split(".")[0] == "torch" or loops.local_helper(call) is not None):
        return False  # resolved: a torch function, or a helper of the file whose body is searched
    args = list(call.args) + [kw.value for kw in call.keywords or ()]
    for arg in args:
        if isinstance(arg, nodes.Call) and infer.method_name(arg) in gradients.PARAMETER_METHODS:
            return True
        if isinstance(arg, (nodes.Name, nodes.Attribute)):
            if dataflow.binding_text(arg) in owners or infer.is_instance_of(arg, MODULE_BASES):
                return True
    return False


def _is_grad(expr: nodes.NodeNG) -> bool:
    while isinstance(expr, nodes.Attribute) and expr.attrname == "data":
        expr = expr.expr
    return isinstance(expr, (nodes.Attribute, nodes.AssignAttr)) and expr.attrname == "grad"
