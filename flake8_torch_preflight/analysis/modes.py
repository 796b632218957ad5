"""Train/eval mode switches, forward passes and backward() of one loop iteration, in execution order.

Used by TP008.  ``iteration_events(loop)`` lists what one iteration of a loop
does, in evaluation order (a call's receiver and arguments before the call):

* ``EVAL``: ``X.eval()`` or ``X.train(False)``;
* ``TRAIN``: ``X.train()`` / ``X.train(True)`` / ``X.train(flag)``;
* ``FORWARD``: ``X(...)`` or ``X.forward(...)``, with whether autograd is off
  there (``no_grad`` blocks and decorators, including those around the helper
  call that leads to it);
* ``BACKWARD``: any ``.backward()`` call.

Helpers of the checked file called from the loop are expanded where they are
called, their parameters bound to the call's arguments (``self`` to the
receiver), so a model is named the same way wherever it is used: the key of
``model`` inside ``evaluate(model)`` is the caller's ``model``.  A model's key
is its access path (``self.model``), rooted at the scope that binds the first
name; plain aliases (``net = model``) are followed and ``.module`` (a DDP
wrapper's inner model) is dropped.
"""
from __future__ import annotations

from typing import Dict, Iterator, List, NamedTuple, Optional, Set, Tuple

from astroid import nodes
from astroid.bases import BoundMethod, Instance, UnboundMethod
from astroid.exceptions import AstroidError

from . import dataflow, grad, infer, loops
from .torch_names import MODEL_WRAPPERS, MODULE_BASES, OPTIMIZER_BASES

EVAL, TRAIN, FORWARD, BACKWARD = "eval", "train", "forward", "backward"

#: Names followed per key (aliases and bound parameters).
MAX_HOPS = 6


class Frame(NamedTuple):
    """A helper's parameters bound to the caller's argument expressions (and the caller's frame)."""

    env: "Dict[str, Tuple[nodes.NodeNG, Frame]]"


ROOT = Frame({})


class ModelRef(NamedTuple):
    """A model as the loop's frame names it."""

    key: str  # access path rooted at the binding scope: "<scope id>:self.model"
    text: str  # as written in the loop's frame: "self.model"
    terminal: str  # last name: "model"
    node: nodes.NodeNG  # the outermost expression it was resolved to


class Event(NamedTuple):
    kind: str
    node: nodes.Call
    #: Calls in enclosing frames leading here, outermost (in the loop body) first.
    chain: Tuple[nodes.Call, ...]
    model: Optional[ModelRef]
    grad_off: bool


def sets_eval(call: nodes.Call) -> bool:
    """``X.eval()`` or ``X.train(False)`` (syntactic)."""
    name = infer.method_name(call)
    if name == "eval":
        return not call.args and not call.keywords
    if name == "train":
        mode = _mode_argument(call)
        return isinstance(mode, nodes.Const) and mode.value is False
    return False


def _mode_argument(call: nodes.Call) -> Optional[nodes.NodeNG]:
    if call.args:
        return call.args[0]
    for kw in call.keywords or ():
        if kw.arg == "mode":
            return kw.value
    return None


def iteration_events(loop: "loops.Loop", helper_depth: int) -> List[Event]:
    """What one iteration of ``loop`` does, in order, helpers of the file expanded."""
    events: List[Event] = []
    _collect(list(loop.body), ROOT, (), False, helper_depth, frozenset(), events)
    return events


def _collect(
    statements: List[nodes.NodeNG],
    frame: Frame,
    chain: Tuple[nodes.Call, ...],
    grad_off: bool,
    depth: int,
    active: "frozenset[int]",
    out: List[Event],
) -> None:
    for statement in statements:
        for call in calls_in_order(statement):
            _classify(call, frame, chain, grad_off, out)
            if depth <= 0:
                continue
            helper = loops.local_helper(call)
            if helper is None or id(helper) in active:
                continue
            inner = bind(helper, call, frame)
            off = grad_off or grad.grad_disabled(call) or grad.function_grad_off(helper)
            _collect(list(helper.body), inner, chain + (call,), off, depth - 1, active | {id(helper)}, out)


def _classify(call: nodes.Call, frame: Frame, chain: Tuple[nodes.Call, ...], grad_off: bool, out: List[Event]) -> None:
    name = infer.method_name(call)
    func = call.func
    if name == "backward":
        out.append(Event(BACKWARD, call, chain, None, grad_off))
        return
    if name in ("eval", "train") and isinstance(func, nodes.Attribute):
        if name == "eval" and (call.args or call.keywords):
            return
        kind = EVAL if sets_eval(call) else TRAIN
        out.append(Event(kind, call, chain, resolve(func.expr, frame), grad_off))
        return
    target: Optional[nodes.NodeNG] = None
    if isinstance(func, nodes.Attribute) and func.attrname == "forward":
        target = func.expr
    elif isinstance(func, (nodes.Name, nodes.Attribute)):
        target = func
    if target is not None:
        ref = resolve(target, frame)
        if ref is not None:
            out.append(Event(FORWARD, call, chain, ref, grad_off or grad.grad_disabled(call)))


def calls_in_order(node: nodes.NodeNG) -> Iterator[nodes.Call]:
    """Calls under ``node`` in evaluation order (receiver and arguments first), not entering defs."""
    if isinstance(node, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
        return
    if isinstance(node, nodes.Call):
        yield from calls_in_order(node.func)
        for arg in node.args:
            yield from calls_in_order(arg)
        for kw in node.keywords or ():
            yield from calls_in_order(kw.value)
        yield node
        return
    for child in node.get_children():
        yield from calls_in_order(child)


def bind(helper: nodes.FunctionDef, call: nodes.Call, frame: Frame) -> Frame:
    """``helper``'s parameters bound to ``call``'s arguments (in ``frame``)."""
    arguments = helper.args
    positional = [a.name for a in (arguments.posonlyargs or []) + (arguments.args or [])]
    env: Dict[str, Tuple[nodes.NodeNG, Frame]] = {}
    if helper.type == "method" and isinstance(call.func, nodes.Attribute) and positional:
        env[positional[0]] = (call.func.expr, frame)
        positional = positional[1:]
    for param, arg in zip(positional, call.args):
        if isinstance(arg, nodes.Starred):
            break
        env[param] = (arg, frame)
    names = set(positional) | {a.name for a in arguments.kwonlyargs or []}
    for kw in call.keywords or ():
        if kw.arg in names:
            env[kw.arg] = (kw.value, frame)
    return Frame(env)


def resolve(expr: nodes.NodeNG, frame: Frame, hops: int = MAX_HOPS) -> Optional[ModelRef]:
    """The model ``expr`` names, keyed in the loop's frame; None for anything but a name/attribute path."""
    if hops <= 0:
        return None
    if isinstance(expr, nodes.Name):
        bound = frame.env.get(expr.name)
        if bound is not None:
            return resolve(bound[0], bound[1], hops - 1)
        alias = _alias_of(expr)
        if alias is not None:
            return resolve(alias, frame, hops - 1)
        scope = _binding_scope(expr)
        key = expr.name if scope is None else "{}:{}".format(id(scope), expr.name)
        return ModelRef(key, expr.name, expr.name, expr)
    if isinstance(expr, nodes.Attribute):
        base = resolve(expr.expr, frame, hops - 1)
        if base is None:
            return None
        if expr.attrname == "module":
            return base
        return ModelRef(base.key + "." + expr.attrname, base.text + "." + expr.attrname, expr.attrname, expr)
    return None


def _alias_of(name: nodes.Name) -> Optional[nodes.NodeNG]:
    """``model`` for ``net`` after ``net = model`` (the only reaching assignment)."""
    values = dataflow.assigned_values(name)
    if values and len(values) == 1 and isinstance(values[0], (nodes.Name, nodes.Attribute)):
        return values[0]
    return None


def _binding_scope(name: nodes.Name) -> Optional[nodes.NodeNG]:
    """The function (or other local scope) binding ``name``; None for a module-level name."""
    try:
        scope, _ = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    return None if isinstance(scope, nodes.Module) else scope


def same_model(a: ModelRef, b: ModelRef) -> bool:
    """Could ``a`` and ``b`` be the same model?  False only when they provably differ."""
    if a.key == b.key:
        return True
    class_a, class_b = _module_class(a.node), _module_class(b.node)
    if class_a is None or class_b is None:
        return True
    for klass in (class_a, class_b):
        if infer.class_is_subclass_of(klass, MODEL_WRAPPERS):
            return True
    return class_a.qname() == class_b.qname()  # two different model classes are two models


def _module_class(node: nodes.NodeNG) -> Optional[nodes.ClassDef]:
    klass = infer.instance_class(node)
    if klass is None or not infer.class_is_subclass_of(klass, MODULE_BASES):
        return None
    return klass


def may_be_module(event: Event) -> bool:
    """The eval'd receiver is an ``nn.Module`` or cannot be resolved (not some other class's ``eval``)."""
    assert event.model is not None
    value = infer.safe_infer(event.model.node)
    if isinstance(value, Instance) and not isinstance(value, (BoundMethod, UnboundMethod)):
        return infer.class_is_subclass_of(value._proxied, MODULE_BASES)
    return value is None


def ends_loop_after(event: Event, loop: "loops.Loop") -> bool:
    """An unconditional ``break``/``return`` follows the eval in its block: no next iteration."""
    anchor = event.chain[0] if event.chain else event.node
    statement = anchor.statement()
    crossed_loop = False
    while statement is not None and statement is not loop:
        parent = statement.parent
        for block in _blocks(parent):
            if statement in block:
                after = block[block.index(statement) + 1 :]
                if any(isinstance(s, nodes.Return) for s in after):
                    return True
                if not crossed_loop and any(isinstance(s, nodes.Break) for s in after):
                    return True
        if isinstance(parent, (nodes.For, nodes.While)) and parent is not loop:
            crossed_loop = True
        statement = parent if isinstance(parent, nodes.NodeNG) and not isinstance(parent, nodes.Module) else None
    return False


def _blocks(parent: nodes.NodeNG) -> List[List[nodes.NodeNG]]:
    blocks = []
    for attr in ("body", "orelse", "handlers", "finalbody"):
        value = getattr(parent, attr, None)
        if isinstance(value, list):
            blocks.append(value)
    return blocks


def report_anchor(event: Event, step: Event) -> nodes.Call:
    """The call on ``event``'s path in the first frame where it and ``step``'s path part ways."""
    path = event.chain + (event.node,)
    other = step.chain + (step.node,)
    shared = 0
    while shared < min(len(path), len(other)) - 1 and path[shared] is other[shared]:
        shared += 1
    return path[shared]


class ModelFacts:
    """File-wide facts: frozen models and the models whose parameters optimizers hold."""

    def __init__(self, module: nodes.Module) -> None:
        self.frozen: Set[str] = set()
        self.owners: Optional[Set[str]] = set()
        for call in module.nodes_of_class(nodes.Call):
            self._read(call)
        for loop in module.nodes_of_class(nodes.For):
            self._read_freeze_loop(loop)

    def _read(self, call: nodes.Call) -> None:
        name = infer.method_name(call)
        if name == "requires_grad_":
            mode = call.args[0] if call.args else None
            if isinstance(mode, nodes.Const) and mode.value is False:
                owner = _owner_name(call.func.expr)  # type: ignore[union-attr]
                if owner is not None:
                    self.frozen.add(owner)
            return
        if self.owners is None or not call.args and not call.keywords:
            return
        if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
            return
        last = infer.call_name(call)
        if last is None or not last[:1].isupper():
            return  # optimizers are classes: cheap check before inference
        klass = infer.safe_infer(call.func)
        if not isinstance(klass, nodes.ClassDef) or not infer.class_is_subclass_of(klass, OPTIMIZER_BASES):
            return
        params = call.args[0] if call.args else next((k.value for k in call.keywords or () if k.arg == "params"), None)
        owner = _parameters_owner(params)
        if owner is None:
            self.owners = None  # an optimizer over parameters we cannot attribute: any model may be trained
        else:
            self.owners.add(owner)

    def _read_freeze_loop(self, loop: nodes.For) -> None:
        """``for p in teacher.parameters(): p.requires_grad = False``."""
        owner = _parameters_owner(loop.iter)
        if owner is None:
            return
        for assign in loop.nodes_of_class(nodes.Assign):
            if isinstance(assign.value, nodes.Const) and assign.value.value is False:
                if any(isinstance(t, nodes.AssignAttr) and t.attrname == "requires_grad" for t in assign.targets):
                    self.frozen.add(owner)

    def frozen_or_untrained(self, model: ModelRef) -> bool:
        if model.terminal in self.frozen:
            return True
        return bool(self.owners) and model.terminal not in (self.owners or set())


def _parameters_owner(params: Optional[nodes.NodeNG]) -> Optional[str]:
    """``model`` for ``model.parameters()`` / ``self.model.module.named_parameters()``."""
    if isinstance(params, nodes.Call) and infer.method_name(params) in ("parameters", "named_parameters"):
        return _owner_name(params.func.expr)  # type: ignore[union-attr]
    return None


def _owner_name(expr: nodes.NodeNG) -> Optional[str]:
    while isinstance(expr, nodes.Attribute) and expr.attrname == "module":
        expr = expr.expr
    return dataflow.terminal_name(expr)
