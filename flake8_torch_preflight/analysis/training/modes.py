"""Train/eval mode switches, forward passes and backward() of one loop iteration, in execution order.

Used by TP008.  ``iteration_events(loop)`` lists what one iteration of a loop
does, in evaluation order (a call's receiver and arguments before the call):

* ``EVAL``: ``X.eval()`` or ``X.train(False)``;
* ``TRAIN``: ``X.train()`` / ``X.train(True)`` / ``X.train(flag)``;
* ``FORWARD``: ``X(...)`` or ``X.forward(...)``, or ``loss = helper(X, ...)`` where ``helper``
  is imported from a module inference cannot read (a loss function that runs the model), with
  whether autograd is off there (``no_grad`` blocks and decorators, including those around the
  helper call that leads to it);
* ``BACKWARD``: any ``.backward()`` call;
* ``STEP``: ``X.step(...)`` (optimizers, scalers and schedulers alike), with
  the stepped object (``scaler.step(opt)`` steps ``opt``), or ``train_op()``, a callable built
  from a model's parameters (:func:`is_update_call`).

Helpers of the checked file called from the loop are expanded where they are
called, their parameters bound to the call's arguments (``self`` to the
receiver), so a model is named the same way wherever it is used: the key of
``model`` inside ``evaluate(model)`` is the caller's ``model``.  A helper that
picks the switch from an argument is read with the argument's value, by
``static_values.evaluate`` with the frame's bindings as its environment
(:class:`FrameValues`; the caller's argument evaluated in the caller's frame):
in ``set_mode('eval', [g, d])`` an ``if mode == 'train':`` whose test the bound
values decide walks only the branch taken, ``m.train(flag)`` with ``flag``
bound to ``False`` is an ``EVAL``, and ``for m in models:`` over a literal list
or tuple is read once per element, ``m`` bound to it.  A parameter the call
leaves at a constant default (``opt=None``) is bound to that default.  A model's key
is its access path (``self.model``), rooted at the scope that binds the first
name; plain aliases (``net = model``) are followed, also through a re-binding
to a wrapper of the same name (``model = DataParallel(model)``), and ``.module``
(a DDP wrapper's inner model) is dropped.

``calls_when_called`` gives TP002 the calls of a shared train/eval pass that a
call with constant arguments runs (the same reading of decided ``if`` tests).
"""
from __future__ import annotations

from typing import Callable, Dict, FrozenSet, Iterator, List, Mapping, NamedTuple, Optional, Set, Tuple, TypeVar

from astroid import nodes
from astroid.bases import BoundMethod, Instance, UnboundMethod
from astroid.exceptions import AstroidError

from ..semantic import dataflow, infer, loops, static_values
from . import grad, gradients
from .torch_names import MODEL_WRAPPERS, MODULE_BASES, OPTIMIZER_BASES

EVAL, TRAIN, FORWARD, BACKWARD, STEP = "eval", "train", "forward", "backward", "step"

#: Names followed per key (aliases and bound parameters).
MAX_HOPS = 6

_T = TypeVar("_T")


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
    #: ``id`` of the ``if`` statements on the way here whose branch the bound constants decided.
    decided: FrozenSet[int] = frozenset()


def sets_eval(call: nodes.Call) -> bool:
    """``X.eval()`` or ``X.train(False)`` (syntactic)."""
    name = infer.method_name(call)
    if name == "eval":
        return not call.args and not call.keywords
    if name == "train":
        mode = _mode_argument(call)
        return isinstance(mode, nodes.Const) and mode.value is False
    return False


def may_set_eval(call: nodes.Call) -> bool:
    """``sets_eval``, or ``X.train(flag)`` whose flag a helper's caller may bind to ``False``."""
    if sets_eval(call):
        return True
    mode = _mode_argument(call) if infer.method_name(call) == "train" else None
    return isinstance(mode, nodes.Name)


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
    decided: FrozenSet[int] = frozenset(),
) -> None:
    for statement in statements:
        for call, call_frame, call_decided in _calls_in_frame(statement, frame, decided):
            _classify(call, call_frame, chain, grad_off, out, call_decided)
            if depth <= 0:
                continue
            helper = loops.local_helper(call)
            if helper is None or id(helper) in active:
                continue
            inner = bind(helper, call, call_frame)
            off = grad_off or grad.grad_disabled(call) or grad.function_grad_off(helper)
            active_here = active | {id(helper)}
            _collect(list(helper.body), inner, chain + (call,), off, depth - 1, active_here, out, call_decided)


#: Most elements of a literal list or tuple a ``for`` loop is read once for.
MAX_UNROLLED = 8

_Walked = Tuple[nodes.Call, Frame, FrozenSet[int]]


def _calls_in_frame(node: nodes.NodeNG, frame: Frame, decided: FrozenSet[int]) -> Iterator[_Walked]:
    """``infer.calls_in_order(node)`` read in ``frame``: an ``if`` whose test the bound constants decide
    gives the calls of the branch taken only, and a ``for`` over a literal list or tuple gives its
    body's calls once per element, the loop variable bound to it."""
    if isinstance(node, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
        return
    if isinstance(node, nodes.If):
        for call in infer.calls_in_order(node.test):
            yield call, frame, decided
        verdict = _decide(node.test, frame)
        inner = decided if verdict is None else decided | {id(node)}
        branches = [node.body, node.orelse] if verdict is None else [node.body if verdict else node.orelse]
        for branch in branches:
            for statement in branch:
                yield from _calls_in_frame(statement, frame, inner)
        return
    elements = _unrolled(node, frame) if isinstance(node, nodes.For) else None
    if elements is not None:
        assert isinstance(node, nodes.For) and isinstance(node.target, nodes.AssignName)
        for call in infer.calls_in_order(node.iter):
            yield call, frame, decided
        for element in elements:
            bound = Frame({**frame.env, node.target.name: element})
            for statement in node.body:
                yield from _calls_in_frame(statement, bound, decided)
        for statement in node.orelse:
            yield from _calls_in_frame(statement, frame, decided)
        return
    if node.is_statement and any(child.is_statement for child in node.get_children()):
        for child in node.get_children():  # a compound statement: its headers and blocks in order
            yield from _calls_in_frame(child, frame, decided)
        return
    for call in infer.calls_in_order(node):
        yield call, frame, decided


def calls_when_called(helper: nodes.FunctionDef, call: nodes.Call) -> List[Tuple[nodes.Call, Frame]]:
    """The calls of ``helper``'s body (not entering nested defs or other helpers), in order, that
    can run when ``call`` calls it: an ``if`` that ``call``'s constant arguments or the defaults it
    leaves decide gives only the branch taken (``run_epoch(model, val_b, cross_valid=True)`` skips
    ``if not cross_valid: loss.backward()``).  Each call comes with the frame binding the helper's
    parameters to ``call``'s arguments."""
    frame = bind(helper, call, ROOT)
    return [(c, f) for statement in helper.body for c, f, _ in _calls_in_frame(statement, frame, frozenset())]


def switches_to_eval(call: nodes.Call, frame: Frame) -> bool:
    """``X.eval()``, ``X.train(False)``, or ``X.train(flag)`` with ``flag`` bound to ``False``."""
    return sets_eval(call) or _bound_false(call, frame)


def caller_text(expr: nodes.NodeNG, frame: Frame) -> Optional[str]:
    """``expr`` (a name or attribute path in a helper) as the caller writes it: ``self.model`` in
    ``run_epoch(self, ...)`` called as ``self._run(...)`` is the caller's ``self.model``; None for
    any other expression."""
    if isinstance(expr, nodes.Name):
        bound = frame.env.get(expr.name)
        if bound is None:
            return expr.name
        value, outer = bound
        return caller_text(value, outer) if isinstance(value, (nodes.Name, nodes.Attribute)) else None
    if isinstance(expr, nodes.Attribute):
        base = caller_text(expr.expr, frame)
        if base is None:
            return None
        return base if expr.attrname == "module" else base + "." + expr.attrname
    return None


def _unrolled(loop: nodes.For, frame: Frame) -> Optional[List[Tuple[nodes.NodeNG, Frame]]]:
    """The elements (with the frame that names them) of the literal list or tuple ``loop``
    iterates, directly or through bound names; None for any other loop."""
    if not isinstance(loop.target, nodes.AssignName):
        return None
    value, where = _argument(loop.iter, frame)
    if not isinstance(value, (nodes.List, nodes.Tuple)) or not 0 < len(value.elts) <= MAX_UNROLLED:
        return None
    if any(isinstance(e, nodes.Starred) for e in value.elts):
        return None
    return [(element, where) for element in value.elts]


def _argument(expr: nodes.NodeNG, frame: Frame, hops: int = MAX_HOPS) -> Tuple[nodes.NodeNG, Frame]:
    """The caller's argument expression (with its frame) that a parameter bound in ``frame``
    stands for; ``expr`` itself when it is no bound parameter."""
    while isinstance(expr, nodes.Name) and expr.name in frame.env and hops > 0:
        expr, frame = frame.env[expr.name]
        hops -= 1
    return expr, frame


class FrameValues(Mapping):  # type: ignore[type-arg]
    """The values a frame binds, as ``static_values.evaluate``'s environment: a parameter's value
    is the caller's argument evaluated in the caller's frame (``UNKNOWN`` when it is no constant),
    read when it is asked for."""

    def __init__(self, frame: Frame, hops: int = MAX_HOPS) -> None:
        self._frame = frame
        self._hops = hops
        self._read: Dict[str, object] = {}

    def __getitem__(self, name: str) -> object:
        if name not in self._read:
            expr, outer = self._frame.env[name]
            inner: static_values.Env = FrameValues(outer, self._hops - 1) if self._hops > 1 else {}
            found = static_values.evaluate(expr, inner)
            self._read[name] = static_values.UNKNOWN if found is None else found
        return self._read[name]

    def __contains__(self, name: object) -> bool:
        return name in self._frame.env

    def __iter__(self) -> Iterator[str]:
        return iter(self._frame.env)

    def __len__(self) -> int:
        return len(self._frame.env)


_Reader = Callable[[nodes.NodeNG, static_values.Env], Optional[_T]]


def by_frame(read: "_Reader[_T]", expr: nodes.NodeNG, frame: Frame) -> Optional[_T]:
    """What ``read`` (``static_values.evaluate`` or ``truth``) makes of ``expr`` with the values
    ``frame`` binds, when those values decide it: None when nothing is bound, when it stays unknown,
    and when it is known with every bound parameter unknown (then the caller's arguments do not
    decide it: ``if DEBUG:``)."""
    if not frame.env:
        return None
    if read(expr, {name: static_values.UNKNOWN for name in frame.env}) is not None:
        return None
    return read(expr, FrameValues(frame))


def _decide(test: nodes.NodeNG, frame: Frame) -> Optional[bool]:
    """The truth of an ``if`` test from the values bound in ``frame`` (``mode == 'train'``,
    ``not train``, ``flag``, ``is_train`` after ``is_train = mode == 'train'``), or None when they
    do not decide it."""
    return by_frame(static_values.truth, test, frame)


def _classify(
    call: nodes.Call,
    frame: Frame,
    chain: Tuple[nodes.Call, ...],
    grad_off: bool,
    out: List[Event],
    decided: FrozenSet[int] = frozenset(),
) -> None:
    name = infer.method_name(call)
    func = call.func
    if name == "backward":
        out.append(Event(BACKWARD, call, chain, None, grad_off))
        return
    if name == "step" and isinstance(func, nodes.Attribute):
        stepped = call.args[0] if call.args and not isinstance(call.args[0], nodes.Starred) else func.expr
        out.append(Event(STEP, call, chain, resolve(stepped, frame), grad_off))
        return
    if is_update_call(call):
        out.append(Event(STEP, call, chain, resolve(func, frame), grad_off))
        return
    if name in ("eval", "train") and isinstance(func, nodes.Attribute):
        if name == "eval" and (call.args or call.keywords):
            return
        kind = EVAL if sets_eval(call) or _bound_false(call, frame) else TRAIN
        out.append(Event(kind, call, chain, resolve(func.expr, frame), grad_off, decided))
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
    if _opaque_loss_helper(call):
        # ``loss = dsm_loss(score, x, ...)``: a function of another module that receives the model
        # and gives a value runs its forward (the model is used there, not only named)
        off = grad_off or grad.grad_disabled(call)
        for arg in call.args:
            if isinstance(arg, (nodes.Name, nodes.Attribute)):
                ref = resolve(arg, frame)
                if ref is not None:
                    out.append(Event(FORWARD, call, chain, ref, off))


def is_update_call(call: nodes.Call) -> bool:
    """``train_op()``: a call, without arguments, of a callable that every assignment reaching its
    name builds from a model's parameters (``train_op = get_train_op(params=model.parameters())``,
    a training op of a TF-style library).  Such a callable applies the gradients: the step, where
    no ``optimizer.step()`` is written.  A forward takes inputs, so a call with arguments is not one."""
    func = call.func
    if call.args or call.keywords or not isinstance(func, (nodes.Name, nodes.Attribute)):
        return False
    values = dataflow.assigned_values(func)
    if not values:
        return False
    for value in values:
        if not isinstance(value, nodes.Call):
            return False
        arguments = list(value.args) + [kw.value for kw in value.keywords or ()]
        if not any(_parameters_owner(a) is not None for a in arguments):
            return False
    return True


def _bound_false(call: nodes.Call, frame: Frame) -> bool:
    """``X.train(flag)`` with ``flag`` bound to ``False`` (or 0) by a caller: an eval switch."""
    mode = _mode_argument(call) if infer.method_name(call) == "train" else None
    if not isinstance(mode, nodes.Name):
        return False
    found = by_frame(static_values.evaluate, mode, frame)
    return found is not None and isinstance(found.value, (bool, int)) and not found.value


def _opaque_loss_helper(call: nodes.Call) -> bool:
    """``call`` calls a function this file imports from a module inference cannot read (the
    project's loss helpers, a library's) and keeps its result: ``loss = helper(model, batch)``."""
    parent = call.parent
    if not (isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is call):
        return False
    func = call.func
    if isinstance(func, nodes.Attribute):
        func = func.expr  # ``losses.dsm(...)``: the imported module
    if not isinstance(func, nodes.Name):
        return False
    if not isinstance(dataflow.sole_binding(func), (nodes.Import, nodes.ImportFrom)):
        return False
    return infer.safe_infer(call.func) is None


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
    if any(isinstance(a, nodes.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords or ()):
        return Frame(env)  # ``*args`` / ``**kwargs``: the parameters left may be passed there
    for param, default in _constant_defaults(helper):
        if param not in env and _bound_once(helper, param):
            env[param] = (default, ROOT)  # ``run_epoch(model, val_b)`` with ``opt=None`` not passed
    return Frame(env)


def _constant_defaults(helper: nodes.FunctionDef) -> List[Tuple[str, nodes.Const]]:
    """(parameter, default) of the parameters whose default is a literal constant."""
    arguments = helper.args
    positional = (arguments.posonlyargs or []) + (arguments.args or [])
    pairs = list(zip(positional[len(positional) - len(arguments.defaults or []):], arguments.defaults or []))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs or [], arguments.kw_defaults or []) if d is not None]
    return [(a.name, d) for a, d in pairs if isinstance(d, nodes.Const)]


def _bound_once(helper: nodes.FunctionDef, param: str) -> bool:
    """``param`` is bound only as the parameter in ``helper`` (never re-assigned in its body)."""
    return len(helper.locals.get(param, ())) == 1


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
    """``model`` for ``net`` after ``net = model`` (the only reaching assignment).  A re-binding to a
    wrapper of the same name, ``model = DataParallel(model)`` (optional or not), keeps the model:
    the wrapper's inner model is the one the earlier binding names."""
    values = dataflow.assigned_values(name)
    if not values:
        return None
    kept = [v for v in values if not _rewraps(v, name.name)]
    if not kept and len(values) == 1:
        return values[0].args[0]  # type: ignore[attr-defined]  # ``model = DDP(model)``: the model before it
    if len(kept) == 1 and isinstance(kept[0], (nodes.Name, nodes.Attribute)):
        return kept[0]
    return None


def _rewraps(value: nodes.NodeNG, name: str) -> bool:
    """``value`` is ``Wrapper(name, ...)`` for a DDP/DataParallel/FSDP wrapper: ``model = DDP(model)``."""
    if not (isinstance(value, nodes.Call) and value.args and isinstance(value.args[0], nodes.Name)):
        return False
    if value.args[0].name != name:
        return False
    klass = infer.safe_infer(value.func)
    return isinstance(klass, nodes.ClassDef) and infer.class_is_subclass_of(klass, MODEL_WRAPPERS)


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


def in_mode_choice(event: Event) -> bool:
    """The eval (or a helper call leading to it) sits in one branch of an ``if``/``else`` whose other
    branch calls ``train()``: ``if phase == "train": model.train() else: model.eval()`` picks the mode
    each pass, which a static reading cannot follow (unless the constants bound to a helper's
    parameters decided that ``if``).  Two ``if`` statements testing the same name, one calling
    ``train()`` and the other ``eval()`` (``if mode == "train": ...`` then ``if mode == "eval": ...``),
    are the same choice."""
    for node in event.chain + (event.node,):
        child: nodes.NodeNG = node
        parent = node.parent
        while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            if isinstance(parent, (nodes.If, nodes.IfExp)) and id(parent) not in event.decided:
                branches = _branches(parent)
                other = [b for b in branches if not any(_contains(n, child) for n in b)]
                if len(other) < len(branches) and any(_calls_train(n) for b in other for n in b):
                    return True
                if isinstance(parent, nodes.If) and _sibling_train_choice(parent):
                    return True
            child = parent
            parent = parent.parent
    return False


def _sibling_train_choice(branch: nodes.If) -> bool:
    """Another ``if`` of the same function, outside ``branch``, tests a name ``branch`` tests and
    calls ``train()``: the two pick the mode between them."""
    tested = _tested_names(branch)
    if not tested:
        return False
    scope = branch.scope()
    for other in scope.nodes_of_class(nodes.If, skip_klass=(nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
        if other is branch or _contains(branch, other) or _contains(other, branch):
            continue
        if _tested_names(other) & tested and any(_calls_train(n) for n in other.body + other.orelse):
            return True
    return False


def _tested_names(branch: nodes.If) -> Set[str]:
    """Plain names an ``if`` test reads (``mode`` in ``mode == "train"``; not ``args`` of ``args.x``)."""
    return {n.name for n in branch.test.nodes_of_class(nodes.Name) if not isinstance(n.parent, nodes.Attribute)}


def _branches(node: nodes.NodeNG) -> List[List[nodes.NodeNG]]:
    if isinstance(node, nodes.IfExp):
        return [[node.body], [node.orelse]]
    return [list(node.body), list(node.orelse)]


def _contains(tree: nodes.NodeNG, node: nodes.NodeNG) -> bool:
    while node is not None:
        if node is tree:
            return True
        node = node.parent
    return False


def _calls_train(tree: nodes.NodeNG) -> bool:
    return any(infer.method_name(c) == "train" and not sets_eval(c) for c in infer.iter_calls(tree))


def ends_loop_after(event: Event, loop: "loops.Loop") -> bool:
    """An unconditional ``break``/``return`` follows the eval in its block: no next iteration."""
    anchor = event.chain[0] if event.chain else event.node
    statement = anchor.statement()
    crossed_loop = False
    while statement is not None and statement is not loop:
        parent = statement.parent
        if isinstance(parent, (nodes.For, nodes.While)) and parent is not loop:
            crossed_loop = True  # a break from here on leaves only that inner loop
        for block in _blocks(parent):
            if statement in block:
                position = block.index(statement) + 1
                after = block[position:]
                if any(isinstance(s, nodes.Return) for s in after):
                    return True
                if not crossed_loop and any(isinstance(s, nodes.Break) for s in after):
                    return True
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


def trained_models(events: List[Event]) -> Optional[Set[str]]:
    """Last names of the models whose parameters the optimizers stepped in ``events`` hold, and of
    the models holding them (``model`` for ``SGD(model.encoder.parameters())``).

    None when any stepped optimizer's parameters cannot be attributed (built
    elsewhere, from a filter or parameter groups): then any model may be
    trained.  Steps of other objects built in the file (schedulers) are ignored.
    """
    owners: Set[str] = set()
    for event in events:
        if event.kind != STEP:
            continue
        found = step_owners(event)
        if found is None:
            return None
        owners |= found
    return owners or None


def step_owners(event: Event) -> Optional[Set[str]]:
    """For a ``STEP`` event, the last names of the models whose parameters its optimizer holds (with
    the models holding them, see ``trained_models``); an empty set for a stepped object of a known
    type that is no optimizer (a scheduler); None when the optimizer cannot be attributed."""
    if event.model is None or not isinstance(event.model.node, (nodes.Name, nodes.Attribute)):
        return None
    held = _held_optimizer(event.model.node)
    if held is not None:
        return held
    values = dataflow.assigned_values(event.model.node)
    if not values or len(values) != 1 or not isinstance(values[0], nodes.Call):
        return None
    return _optimizer_owners(values[0])


def _optimizer_owners(built: nodes.Call) -> Optional[Set[str]]:
    """For the call that builds a stepped object: ``step_owners``' answer (the models whose parameters
    the optimizer holds, an empty set for a known type that is no optimizer, None when not attributed)."""
    klass = infer.safe_infer(built.func)
    if not isinstance(klass, nodes.ClassDef):
        return None
    if not infer.class_is_subclass_of(klass, OPTIMIZER_BASES):
        return set()  # a scheduler or another stepped object of known type
    params = infer.argument(built, "params", 0)
    if _input_tensors(params):
        return set()  # ``Adam([generated])``: an image or a latent optimised through a fixed model
    owner = _parameters_owner(params)
    if owner is None:
        return None
    return {owner} | _parents(params.func.expr)  # type: ignore[union-attr]


def _input_tensors(params: Optional[nodes.NodeNG]) -> bool:
    """``params`` is a list written in the call of names each bound only to a tensor made in the file from
    something other than a module (``generated = content.clone().requires_grad_(True)``, ``z =
    nn.Parameter(torch.randn(1, 100))``): no value read from a module (``model.fc.weight``) nor its
    ``parameters()``.  Such an optimizer trains no module."""
    if not isinstance(params, (nodes.List, nodes.Tuple)) or not params.elts:
        return False
    for element in params.elts:
        values = dataflow.assigned_values(element) if isinstance(element, nodes.Name) else None
        if not values or not all(_made_from_tensors(value) for value in values):
            return False
    return True


def _made_from_tensors(value: nodes.NodeNG) -> bool:
    """A call chain (``x.clone().requires_grad_(True)``, ``torch.randn(...)``, ``nn.Parameter(...)``) whose
    every attribute is a method it calls or a name of torch, and which reads no module: no attribute read
    off an object (``model.fc.weight``), no ``parameters()``."""
    if not isinstance(value, nodes.Call):
        return False
    for node in value.nodes_of_class((nodes.Name, nodes.Attribute)):
        called = isinstance(node.parent, nodes.Call) and node.parent.func is node
        if isinstance(node, nodes.Attribute) and not called and not (infer.dotted_name(node) or "").startswith(
            "torch."
        ):
            return False  # ``model.fc.weight``, ``self.latent``: a value kept on an object
        if isinstance(node, nodes.Attribute) and node.attrname in gradients.PARAMETER_METHODS:
            return False
        if not called and infer.is_instance_of(node, MODULE_BASES):
            return False  # a module handed in: ``nn.Parameter(model)`` makes no sense, ``x.type_as(net)``
    return True


def _held_optimizer(node: nodes.NodeNG) -> Optional[Set[str]]:
    """For ``net.optimizer`` (not ``self.optimizer``): when ``net``'s class (read) binds that attribute once,
    to an optimizer over its own ``self.parameters()``, the names of ``net`` and the models holding it
    (``critic`` and ``gan`` for ``gan.critic.optimizer``); else None."""
    if not isinstance(node, nodes.Attribute) or dataflow.is_self_attr(node):
        return None
    klass = infer.instance_class(node.expr)
    name = dataflow.terminal_name(node.expr)
    if klass is None or name is None:
        return None
    bound = [
        target.parent.value for target in klass.nodes_of_class(nodes.AssignAttr)
        if target.attrname == node.attrname and dataflow.is_self_attr(target)
        and isinstance(target.parent, nodes.Assign)
    ]
    if len(bound) != 1 or not isinstance(bound[0], nodes.Call) or _optimizer_owners(bound[0]) != {"self"}:
        return None  # not one optimizer over the holder's own ``self.parameters()``
    return {name} | _parents(node)


def _parents(expr: nodes.NodeNG) -> Set[str]:
    """Names of the modules holding the one whose parameters are trained: ``model`` for
    ``model.encoder.parameters()`` (its ``eval()`` puts the encoder in eval mode too); ``self``
    and ``.module`` are not models of their own."""
    found: Set[str] = set()
    while isinstance(expr, nodes.Attribute):
        expr = expr.expr
        name = dataflow.terminal_name(expr)
        if name is not None and name not in ("self", "module"):
            found.add(name)
    return found


def _parameters_owner(params: Optional[nodes.NodeNG]) -> Optional[str]:
    """``model`` for ``model.parameters()`` / ``self.model.module.named_parameters()``."""
    if isinstance(params, nodes.Call) and infer.method_name(params) in ("parameters", "named_parameters"):
        return _owner_name(params.func.expr)  # type: ignore[union-attr]
    return None


def _owner_name(expr: nodes.NodeNG) -> Optional[str]:
    while isinstance(expr, nodes.Attribute) and expr.attrname == "module":
        expr = expr.expr
    return dataflow.terminal_name(expr)
