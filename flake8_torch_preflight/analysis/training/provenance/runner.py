"""The runner: the whole-file dataflow that gives every expression of a file its ``Prov``.

**Sources** (a value gets a graph): calling a model (``models.kind`` resolves the callee
to an ``nn.Module`` with parameters: stubs, the file's classes, DDP/FSDP, ``from_pretrained``
models ...); calling a loss (a ``_Loss`` instance or functional loss) unless its input is
provably detached; tensors created with ``requires_grad=True``, ``nn.Parameter``,
``x.requires_grad_()``; ``autograd.grad(..., create_graph=True)``; and the receiver of
``.backward()`` (what is backpropagated had a graph, whatever produced it).

**Propagation**: assignment (flow-sensitive, see below), tuple unpacking (element-wise
when both sides have the same shape), arithmetic, indexing, attributes of model outputs
(``out.loss``, ``out.logits``), tensor methods, ``torch.*`` functions, builtins that pass
values through (``sum``, ``max``, ``list`` ...), containers (a list something grad-bearing
was appended to), and the returns of functions of the same file (a summary per function:
a helper returning ``loss`` is grad-bearing, one returning ``loss.item()`` is not;
parameters flowing to a return are substituted with the call's arguments).

**Stops**: ``.item()``, ``.detach()``, ``.tolist()``, ``.numpy()``, ``.data``, integer
casts, ``float()``/``int()``/``len()``, ``argmax``/``argsort``, comparisons, shape and
dtype queries, factories, ``math``/``numpy`` calls, ``torch.autograd.grad`` without
``create_graph=True``, and every computation that runs with autograd off: inside
``no_grad()``/``inference_mode()``/``set_grad_enabled(False)`` (``with`` blocks and
statement calls, flow-sensitively), in a function decorated with them, in Lightning's
``validation_step``/``test_step``/``predict_step``, or in a function whose every in-file
call site runs under ``no_grad``.  Under ``set_grad_enabled(<expression>)`` the mode is
DYNAMIC: results there count only once a backward() confirms them.

**Flow**: each function (and the module body) is analysed on its own with reaching
definitions over its statements: ``if``/``else`` join, loops iterate to a fixed point,
``break``/``continue``/``return`` cut paths.  So ``loss`` bound in a training loop and
``loss`` bound again under ``no_grad`` in a following evaluation loop are two values;
a local of one function says nothing about a same-named local of another.  ``self.x``
is tracked like a local name within one method.

**Opaque grad-mode contexts** (fallback by name): a ``with`` context or decorator that is not
torch's but is named for grad mode (``maybe_no_grad(...)``) makes the mode DYNAMIC.

**Budgets**: each loop body runs at most MAX_LOOP_ITERATIONS times per round (nesting stays
polynomial); a file needing more than MAX_STEPS statement runs, or deep enough to exhaust the
recursion limit, is given up on: every query then answers "unknown", rules stay silent, and a
note says so (``analysis.semantic.notes``).

**Unknown models** (the documented fallback): a callee nothing resolves but that is named
like a model (``models.model_named``: ``model``, ``net``, ``self.encoder`` ...) yields a
*maybe* source.  It becomes grad-bearing only when corroborated: a backward() on a value
derived from it, or the value flowing into a resolved torch loss.  Function parameters are
*unknown*, not grad-bearing (their models are resolved through call sites by ``infer``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Set, TypeVar

from astroid import nodes
from astroid.bases import BoundMethod, Instance, UnboundMethod

from ...setup import brain
from ...semantic import dataflow, infer, loops, notes, static_values
from .. import device, evaluation, grad, gradients, models
from ..torch_names import GRAD_MODE_SETTERS, GRAD_OFF_CONTEXTS
from .callers import CallSites
from .lattice import (
    _EMPTY,
    CONSTANT,
    DYNAMIC,
    OFF,
    ON,
    UNKNOWN,
    Backward,
    Def,
    Escape,
    Prov,
    _element,
    _Env,
    _instantiate,
    _join_envs,
    _join_mode,
    _pick,
    _plain,
    _read,
    derived,
    join,
    join_all,
    stop,
)

#: ``call_kind`` results.
MODEL_CALL, MAYBE_MODEL_CALL, LOSS_CALL = "model", "maybe-model", "loss"

#: Tensor methods whose result carries no graph.
STOP_METHODS = frozenset(
    {
        "item", "tolist", "numpy", "detach", "argmax", "argmin", "argsort", "size", "dim", "numel", "nelement",
        "element_size", "stride", "data_ptr", "is_contiguous", "get_device", "eq", "ne", "lt", "le", "gt", "ge",
        "isnan", "isinf", "isfinite", "nonzero", "long", "int", "bool", "short", "byte", "char", "any", "all",
        "count_nonzero", "unique", "equal", "allclose", "dim_order", "is_floating_point", "__len__", "tobytes",
        "multinomial",
    }
)

#: Tensor methods and torch functions that return a ``(values, indices)`` pair: the indices are
#: int64 and carry no graph.  Those of the second set return the pair only when given a dimension
#: (``x.max(1)``; ``x.max()`` is one tensor, ``torch.max(a, b)`` the elementwise maximum).
VALUES_INDICES = frozenset({"topk", "sort", "kthvalue", "mode", "cummax", "cummin"})
VALUES_INDICES_WITH_DIM = frozenset({"max", "min", "median", "nanmedian"})

#: Attributes of a tensor that are no graph (shape queries, the detached ``.data``).
STOP_ATTRIBUTES = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "grad", "data", "grad_fn", "is_leaf", "layout",
     "names", "itemsize", "nbytes"}
)

#: Builtins whose result carries no graph.
STOP_BUILTINS = frozenset(
    {"float", "int", "bool", "len", "str", "repr", "format", "isinstance", "issubclass", "type", "hash", "id",
     "print", "round", "callable", "hasattr", "complex"}
)

#: Builtins that hand their arguments through (containers, reductions).
PASS_BUILTINS = frozenset(
    {"sum", "max", "min", "abs", "list", "tuple", "sorted", "reversed", "zip", "enumerate", "iter", "next", "map",
     "filter", "dict", "set", "getattr", "frozenset"}
)

#: The builtins among those that pass their argument's values on (a list, a dict of them): the
#: result holds the same values (parameters stay leaves); the others compute a new value.
CONTAINER_BUILTINS = frozenset({"list", "tuple", "iter", "next", "reversed", "sorted", "dict"})

#: Methods of a dict that return its own entries (``dict(model.named_parameters()).items()``).
ENTRY_METHODS = dataflow.ENTRY_METHODS

#: Libraries whose functions turn tensors into host numbers/arrays.
STOP_LIBRARIES = ("math.", "numpy.", "statistics.")

#: torch functions whose result carries no graph: indices, comparisons, factories, grad mode.
TORCH_STOP_FUNCTIONS = frozenset(
    "torch." + name
    for name in (
        "argmax", "argmin", "argsort", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "numel",
        "is_tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "rand", "randn",
        "randint", "randperm", "tensor", "as_tensor", "from_numpy", "zeros_like", "ones_like", "empty_like",
        "full_like", "rand_like", "randn_like", "randint_like", "no_grad", "enable_grad", "set_grad_enabled",
        "inference_mode", "is_grad_enabled", "manual_seed", "save", "load", "device", "bucketize", "searchsorted",
        "nonzero", "count_nonzero", "unique", "allclose", "equal", "empty_strided", "get_default_dtype",
        "multinomial",
    )
)

#: torch functions that keep their first argument's graph but are not math: none of these is a source.
AUTOGRAD_GRAD = frozenset({"torch.autograd.grad"})
AUTOGRAD_BACKWARD = frozenset({"torch.autograd.backward"})
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter"})
CHECKPOINT_FUNCTIONS = frozenset({"torch.utils.checkpoint.checkpoint"})

#: Methods that store their argument in the receiver (a container).
STORE_METHODS = frozenset({"append", "extend", "insert", "appendleft", "extendleft", "update", "setdefault"})

#: Tensor methods that combine their receiver with tensor arguments, even when the receiver is unknown.
TENSOR_ARG_METHODS = frozenset(
    {"mul", "add", "sub", "div", "matmul", "mm", "bmm", "masked_fill", "expand_as", "type_as", "view_as", "where",
     "copy_", "add_", "mul_", "sub_", "div_", "addcmul_", "addcdiv_", "lerp_"}
)

#: In-place tensor methods: the receiver takes in the arguments' graph.
INPLACE_METHODS = frozenset({"copy_", "add_", "mul_", "sub_", "div_", "addcmul_", "addcdiv_", "lerp_"})

BACKWARD_METHODS = gradients.BACKWARD_METHODS


#: Fallback by name: a ``with`` context that is not torch's but is named for grad mode makes the mode DYNAMIC.
OPAQUE_GRAD_CONTEXT = re.compile(r"grad|inference", re.IGNORECASE)

#: Loop body runs per loop and round, and whole-file rounds for corroboration.
MAX_LOOP_ITERATIONS = 3
MAX_ROUNDS = 3

#: Statements executed per round before the file is given up on (every query then answers
#: "unknown", so the rules stay silent).  Realistic training scripts need a few thousand.
MAX_STEPS = 200_000


class _TooBig(Exception):
    """The file needs more work than MAX_STEPS: give up on it."""


_TRY_NODES = tuple(getattr(nodes, name) for name in ("Try", "TryStar") if hasattr(nodes, name))


@dataclass
class _Loop:
    breaks: List[_Env] = field(default_factory=list)
    continues: List[_Env] = field(default_factory=list)


class Analysis(CallSites):
    """The runs over one file: every function (and the module body) analysed, in rounds until the
    corroborated sources stop growing; the records they leave are what the queries read."""

    def __init__(self, module: nodes.Module) -> None:
        super().__init__(module)
        self._kind_memo: Dict[int, Optional[str]] = {}
        self._qname_memo: Dict[int, Optional[str]] = {}
        self._unresolved_memo: Dict[int, bool] = {}
        self._callee_memo: Dict[int, Optional[object]] = {}
        self._start_memo: Dict[int, str] = {}
        self._confirmed: Set[int] = set()
        self._confirmed_defs: Set[int] = set()
        self._maybe_models: Set[int] = set()
        for _ in range(MAX_ROUNDS):
            before = (len(self._confirmed), len(self._confirmed_defs))
            self._reset()
            try:
                self._run()
            except (_TooBig, RecursionError) as exc:
                self._reset()  # nothing is known: every query answers "unknown"
                why = "needed more than {} statement runs".format(MAX_STEPS) if isinstance(exc, _TooBig) else (
                    "ran past Python's recursion limit")
                notes.add("autograd provenance (TP001, TP002)", "{} and was given up".format(why))
                break
            if (len(self._confirmed), len(self._confirmed_defs)) == before:
                break

    # ------------------------------------------------------------ the runs
    def _reset(self) -> None:
        self._expr: Dict[int, Prov] = {}
        self._reach: Dict[int, FrozenSet[Def]] = {}
        self._mode: Dict[int, str] = {}
        self._defs: Dict[int, Def] = {}
        self._defs_by_id: Dict[int, Def] = {}
        self._call_kinds: Dict[int, str] = {}
        self._summaries: Dict[int, Prov] = {}
        self._in_progress: Set[int] = set()
        self.backwards: List[Backward] = []
        self.escapes: List[Escape] = []
        self._backward_ids: Dict[int, Backward] = {}
        self._loop_runs: Dict[int, int] = {}
        self._steps = 0
        self._escape_ids: Dict[int, Escape] = {}
        self._changed = False

    def _run(self) -> None:
        self._analyse(self.module)
        for func in self.module.nodes_of_class(nodes.FunctionDef):
            self._summary(func)

    def _summary(self, func: nodes.FunctionDef) -> Prov:
        done = self._summaries.get(id(func))
        if done is not None:
            return done
        if id(func) in self._in_progress:
            return UNKNOWN  # recursion: unknown
        self._in_progress.add(id(func))
        returns = self._analyse(func)
        self._in_progress.discard(id(func))
        summary = join_all(returns, CONSTANT)
        self._summaries[id(func)] = summary
        return summary

    def _analyse(self, scope: nodes.NodeNG) -> List[Prov]:
        runner = _Runner(self, scope)
        env = _Env({}, self._start_mode(scope))
        if isinstance(scope, nodes.FunctionDef):
            runner.bind_parameters(scope, env)
        runner.block(scope.body, env)
        return runner.returns

    def _start_mode(self, scope: nodes.NodeNG) -> str:
        if not isinstance(scope, nodes.FunctionDef):
            return ON
        cached = self._start_memo.get(id(scope))
        if cached is None:
            off = (
                grad.function_grad_off(scope)
                or grad.grad_disabled(scope)
                or self.is_lightning_eval_hook(scope)
                or self.calls_only_without_grad(scope)
            )
            cached = OFF if off else (DYNAMIC if self._grad_named_decorator(scope) else ON)
            self._start_memo[id(scope)] = cached
        return cached

    @staticmethod
    def _grad_named_decorator(func: nodes.FunctionDef) -> bool:
        """A decorator that is not torch's but is named for grad mode (``@maybe_no_grad``): mode unknown."""
        for decorator in func.decorators.nodes if func.decorators else ():
            target = decorator.func if isinstance(decorator, nodes.Call) else decorator
            label = dataflow.terminal_name(target)
            name = infer.qname(target)
            if label is not None and OPAQUE_GRAD_CONTEXT.search(label) and not (name or "").startswith("torch."):
                return True
        return False

    # ------------------------------------------------------- memoised inference
    def _qname(self, call: nodes.Call) -> Optional[str]:
        key = id(call)
        if key not in self._qname_memo:
            name = infer.callee_qname(call)
            if name is None:
                name = infer.dotted_name(call.func)
            self._qname_memo[key] = name
        return self._qname_memo[key]

    def _callee(self, call: nodes.Call) -> Optional[object]:
        key = id(call.func)
        if key not in self._callee_memo:
            self._callee_memo[key] = infer.safe_infer(call.func)
        return self._callee_memo[key]

    def _unresolved(self, expr: nodes.NodeNG) -> bool:
        key = id(expr)
        if key not in self._unresolved_memo:
            self._unresolved_memo[key] = infer.safe_infer(expr) is None
        return self._unresolved_memo[key]

    def _kind(self, expr: nodes.NodeNG) -> Optional[str]:
        return models.kind(expr, self._kind_memo)

    # ------------------------------------------------------------ recording
    def _record(self, node: nodes.NodeNG, prov: Prov) -> Prov:
        old = self._expr.get(id(node))
        self._expr[id(node)] = prov if old is None else join(old, prov)
        return prov

    def _backward(self, event: Backward) -> None:
        _merge_event(self._backward_ids, self.backwards, id(event.call), event)

    def _escape(self, event: Escape) -> None:
        _merge_event(self._escape_ids, self.escapes, id(event.node), event)

    def _def(self, node: nodes.NodeNG, name: str, scope: nodes.NodeNG) -> Def:
        d = self._defs.get(id(node))
        if d is None:
            d = Def(node, name, scope)
            self._defs[id(node)] = d
            self._defs_by_id[id(d)] = d
        return d

    def _grow(self, d: Def, prov: Prov) -> None:
        if id(d.node) in self._confirmed_defs and id(d.node) not in prov.sources:
            prov = join(prov, Prov(sources=frozenset({id(d.node)})))
        new = join(d.prov, prov) if d.prov is not UNKNOWN else prov
        if new != d.prov:
            d.prov = new
            self._changed = True


class _Runner:
    """Reaching definitions and values over one function (or the module body)."""

    def __init__(self, owner: Analysis, scope: nodes.NodeNG) -> None:
        self.p = owner
        self.scope = scope
        self.loops: List[_Loop] = []
        self.returns: List[Prov] = []

    # ---------------------------------------------------------- bindings
    def bind_parameters(self, func: nodes.FunctionDef, env: _Env) -> None:
        args = func.args
        params = list(args.posonlyargs or []) + list(args.args or []) + list(args.kwonlyargs or [])
        for index, param in enumerate(params):
            if not isinstance(param, nodes.AssignName):
                continue
            d = self.p._def(param, param.name, self.scope)
            if index == 0 and func.is_method() and param.name in ("self", "cls"):
                self.p._grow(d, UNKNOWN)
            else:
                self.p._grow(d, Prov(params=frozenset({param.name}), deps=frozenset({id(d)})))
            env.names[param.name] = frozenset({d})

    def bind(self, target: nodes.NodeNG, prov: Prov, env: _Env) -> None:
        if isinstance(target, nodes.AssignName):
            d = self.p._def(target, target.name, self.scope)
            self.p._grow(d, prov)
            env.names[target.name] = frozenset({d})
        elif isinstance(target, (nodes.Tuple, nodes.List)):
            elts = target.elts
            starred = any(isinstance(e, nodes.Starred) for e in elts)
            if prov.elts is not None and len(prov.elts) == len(elts) and not starred:
                for elt, part in zip(elts, prov.elts):
                    self.bind(elt, part, env)
            else:
                whole = Prov(prov.sources, prov.maybe, prov.params, prov.deps, prov.leaf, prov.stopped)
                for elt in elts:
                    self.bind(elt, whole, env)
        elif isinstance(target, nodes.Starred):
            self.bind(target.value, prov, env)
        elif isinstance(target, nodes.AssignAttr):
            self.expr(target.expr, env)
            if isinstance(target.expr, nodes.Name) and target.expr.name == "self":
                key = "self." + target.attrname
                d = self.p._def(target, key, self.scope)
                self.p._grow(d, prov)
                env.names[key] = frozenset({d})
                self.p._escape(Escape(target, prov, self.scope))
            else:
                if target.attrname == "requires_grad":
                    self.mark_requires_grad(target.expr, target, env)
                self.mutate(target.expr, prov, env)
        elif isinstance(target, nodes.Subscript):
            self.expr(target.value, env)
            self.expr(target.slice, env)
            if isinstance(target.slice, nodes.Const) and isinstance(target.slice.value, str):
                # ``best['loss'] = avg_loss``: the dict holds it too, and under that key only, so that
                # ``best['epoch']`` read later stays the int it was (a display's per-key records)
                prov = Prov(prov.sources, prov.maybe, prov.params, prov.deps, prov.leaf, prov.stopped, None,
                            ((target.slice.value, prov),))
            self.mutate(target.value, prov, env)

    def mutate(self, container: nodes.NodeNG, prov: Prov, env: _Env) -> None:
        """``container`` (a name, ``self.x``, or a chain on one) now holds ``prov`` too."""
        root = container
        while isinstance(root, (nodes.Attribute, nodes.Subscript)) and not dataflow.is_self_attr(root):
            root = root.value if isinstance(root, nodes.Subscript) else root.expr
        key = _env_key(root)
        if key is None:
            return
        defs = env.names.get(key)
        if defs:
            for d in defs:
                self.p._grow(d, prov)
        if key.startswith("self.") or defs is None:
            self.p._escape(Escape(container, prov, self.scope))

    def mark_requires_grad(self, target: nodes.NodeNG, node: nodes.NodeNG, env: _Env) -> None:
        key = _env_key(target)
        if key is not None:
            for d in env.names.get(key, ()):
                self.p._grow(d, Prov(sources=frozenset({id(node)}), leaf=True))

    # -------------------------------------------------------- statements
    def block(self, stmts: List[nodes.NodeNG], env: Optional[_Env]) -> Optional[_Env]:
        for stmt in stmts:
            if env is None:
                return None
            self.p._steps += 1
            if self.p._steps > MAX_STEPS:
                raise _TooBig()
            self.p._mode[id(stmt)] = _join_mode(self.p._mode.get(id(stmt)), env.mode)
            env = self.statement(stmt, env)
        return env

    def statement(self, stmt: nodes.NodeNG, env: _Env) -> Optional[_Env]:
        if isinstance(stmt, nodes.Assign):
            value = self.expr(stmt.value, env)
            for target in stmt.targets:
                self.bind(target, value, env)
            return env
        if isinstance(stmt, nodes.AugAssign):
            return self.augassign(stmt, env)
        if isinstance(stmt, nodes.AnnAssign):
            if stmt.value is not None:
                self.bind(stmt.target, self.expr(stmt.value, env), env)
            return env
        if isinstance(stmt, nodes.Expr):
            self.expr(stmt.value, env)
            mode = self.statement_mode(stmt.value)
            if mode is not None:
                env.mode = mode
            return env
        if isinstance(stmt, nodes.If):
            self.expr(stmt.test, env)
            return _join_envs([self.block(stmt.body, env.copy()), self.block(stmt.orelse, env.copy())])
        if isinstance(stmt, (nodes.For, nodes.While)):
            return self.loop(stmt, env)
        if isinstance(stmt, nodes.With):
            return self.with_(stmt, env)
        if isinstance(stmt, nodes.Return):
            if stmt.value is not None:
                prov = self.expr(stmt.value, env)
                self.returns.append(prov)
                self.p._escape(Escape(stmt, prov, self.scope))
            else:
                self.returns.append(CONSTANT)
            return None
        if isinstance(stmt, nodes.Raise):
            if stmt.exc is not None:
                self.expr(stmt.exc, env)
            return None
        if isinstance(stmt, nodes.Break):
            if self.loops:
                self.loops[-1].breaks.append(env)
            return None
        if isinstance(stmt, nodes.Continue):
            if self.loops:
                self.loops[-1].continues.append(env)
            return None
        if isinstance(stmt, (nodes.FunctionDef, nodes.ClassDef)):
            return env
        if isinstance(stmt, _TRY_NODES):
            return self.try_(stmt, env)
        match = getattr(nodes, "Match", None)
        if match is not None and isinstance(stmt, match):
            self.expr(stmt.subject, env)
            outs = [env] + [self.block(case.body, env.copy()) for case in stmt.cases]
            return _join_envs(outs)
        if isinstance(stmt, nodes.Assert):
            self.expr(stmt.test, env)
            return env
        for child in stmt.get_children():
            if not child.is_statement:
                self.expr(child, env)
        return env

    def augassign(self, stmt: nodes.AugAssign, env: _Env) -> _Env:
        target = stmt.target
        value = self.expr(stmt.value, env)
        own_attr = isinstance(target, nodes.AssignAttr) and dataflow.is_self_attr(target)
        if isinstance(target, nodes.AssignName) or own_attr:
            # ``total += loss`` / ``self.total += loss``: the old value, joined with the new one
            if own_attr:
                old_defs = env.names.get("self." + target.attrname, _EMPTY)  # type: ignore[union-attr]
            else:
                old_defs = env.names.get(target.name)  # type: ignore[union-attr]
                if old_defs is None:
                    old_defs = self.outer_defs(target, target.name)  # type: ignore[union-attr]
            self.p._reach[id(target)] = self.p._reach.get(id(target), _EMPTY) | old_defs
            new = self.gate(derived(join(_read(old_defs), value)), stmt, env)
            self.p._record(target, new)
            self.bind(target, new, env)
            return env
        if isinstance(target, nodes.Subscript):
            self.expr(target.value, env)
            self.expr(target.slice, env)
            self.mutate(target.value, self.gate(derived(value), stmt, env), env)
        elif isinstance(target, nodes.AssignAttr):
            self.expr(target.expr, env)
            self.mutate(target.expr, self.gate(derived(value), stmt, env), env)
        return env

    def loop(self, stmt: nodes.NodeNG, env: _Env) -> Optional[_Env]:
        is_for = isinstance(stmt, nodes.For)
        element = UNKNOWN
        if is_for:
            element = _element(self.expr(stmt.iter, env))
            if _dict_items(stmt.iter) and isinstance(stmt.target, nodes.Tuple) and len(stmt.target.elts) == 2:
                # ``for k, v in d.items()``: the keys are names or numbers, not graphs
                element = Prov(**_plain(element), elts=(stop(element), element))
        head = env
        frame = _Loop()
        # Each loop gets MAX_LOOP_ITERATIONS body runs per round in all; later entries (from
        # an enclosing loop's next iteration) run once, so nesting costs O(depth^2), not 3^depth.
        used = self.p._loop_runs.get(id(stmt), 0)
        for _ in range(max(1, MAX_LOOP_ITERATIONS - used)):
            self.p._loop_runs[id(stmt)] = self.p._loop_runs.get(id(stmt), 0) + 1
            outer_changed = self.p._changed
            self.p._changed = False
            body_env = head.copy()
            if is_for:
                self.bind(stmt.target, element, body_env)
            else:
                self.expr(stmt.test, body_env)
            frame = _Loop()
            self.loops.append(frame)
            out = self.block(stmt.body, body_env)
            self.loops.pop()
            new_head = _join_envs([head, out] + frame.continues)
            assert new_head is not None
            changed = self.p._changed
            self.p._changed = outer_changed or changed
            if new_head.same(head) and not changed:
                break
            head = new_head
        if not is_for:
            self.expr(stmt.test, head)
        after = self.block(stmt.orelse, head.copy()) if stmt.orelse else head
        return _join_envs([after] + frame.breaks)

    def with_(self, stmt: nodes.With, env: _Env) -> Optional[_Env]:
        mode = env.mode
        for item, alias in stmt.items:
            prov = self.expr(item, env)
            mode = self.context_mode(item, mode)
            if alias is not None:
                self.bind(alias, Prov(deps=prov.deps), env)
        outer = env.mode
        inner = env.copy()
        inner.mode = mode
        out = self.block(stmt.body, inner)
        if out is not None:
            out.mode = outer
        return out

    def try_(self, stmt: nodes.NodeNG, env: _Env) -> Optional[_Env]:
        body = self.block(stmt.body, env.copy())
        start = _join_envs([env, body])
        assert start is not None
        outs: List[Optional[_Env]] = []
        for handler in stmt.handlers:
            henv = start.copy()
            if handler.type is not None:
                self.expr(handler.type, henv)
            if handler.name is not None:
                self.bind(handler.name, CONSTANT, henv)
            outs.append(self.block(handler.body, henv))
        outs.append(self.block(stmt.orelse, body.copy()) if (stmt.orelse and body is not None) else body)
        final = _join_envs(outs)
        if stmt.finalbody:
            after = self.block(stmt.finalbody, (final or start).copy())
            return after if final is not None else None
        return final

    # ----------------------------------------------------------- grad mode
    def context_mode(self, item: nodes.NodeNG, current: str) -> str:
        target = item.func if isinstance(item, nodes.Call) else item
        if not isinstance(target, (nodes.Name, nodes.Attribute)):
            return current
        name = self.p._qname(item) if isinstance(item, nodes.Call) else infer.qname(item)
        if name is None or not name.startswith("torch."):
            # An opaque context named for grad mode (``maybe_no_grad(cond)``, ``self.inference_ctx()``)
            # may switch autograd: the mode is unknown.
            label = dataflow.terminal_name(target)
            if label is not None and OPAQUE_GRAD_CONTEXT.search(label):
                return DYNAMIC
            return current
        arg = _first_argument(item, "mode") if isinstance(item, nodes.Call) else None
        if name in GRAD_OFF_CONTEXTS:
            if arg is None:
                return OFF
            if isinstance(arg, nodes.Const):
                return OFF if arg.value else current
            return DYNAMIC
        if name == "torch.enable_grad":
            return ON
        if name in GRAD_MODE_SETTERS:
            if isinstance(arg, nodes.Const):
                return ON if arg.value else OFF
            return DYNAMIC
        return current

    def statement_mode(self, value: nodes.NodeNG) -> Optional[str]:
        """``torch.set_grad_enabled(False)`` called as a statement switches the mode from there on."""
        if not isinstance(value, nodes.Call) or infer.call_name(value) != "set_grad_enabled":
            return None
        if self.p._qname(value) not in GRAD_MODE_SETTERS:
            return None
        arg = _first_argument(value, "mode")
        if isinstance(arg, nodes.Const):
            return ON if arg.value else OFF
        return DYNAMIC

    def gate(self, prov: Prov, node: nodes.NodeNG, env: _Env) -> Prov:
        """A result computed at ``node`` under the current grad mode."""
        if env.mode == ON:
            return prov
        if env.mode == OFF:
            return stop(prov)
        if not (prov.sources or prov.maybe):
            return prov
        if id(node) in self.p._confirmed:
            return Prov(sources=prov.sources | {id(node)}, maybe=prov.maybe, params=prov.params, deps=prov.deps)
        return Prov(maybe=prov.maybe | prov.sources | {id(node)}, params=prov.params, deps=prov.deps)

    # --------------------------------------------------------- expressions
    def expr(self, node: nodes.NodeNG, env: _Env) -> Prov:
        return self.p._record(node, self._expr(node, env))

    def _expr(self, node: nodes.NodeNG, env: _Env) -> Prov:
        if isinstance(node, nodes.Name):
            return self.name(node, env)
        if isinstance(node, nodes.Const):
            return CONSTANT
        if isinstance(node, nodes.Call):
            return _values_indices(node, self.call(node, env))
        if isinstance(node, nodes.Attribute):
            return self.attribute(node, env)
        if isinstance(node, nodes.Subscript):
            base = self.expr(node.value, env)
            self.expr(node.slice, env)
            picked = _pick(base, node.slice)
            if picked is not None:
                return picked
            if env.mode == OFF:
                return stop(base)
            return self.gate(derived(base), node, env)
        if isinstance(node, nodes.BinOp):
            both = join(self.expr(node.left, env), self.expr(node.right, env))
            return self.gate(derived(both), node, env)
        if isinstance(node, nodes.UnaryOp):
            operand = self.expr(node.operand, env)
            return stop(operand) if node.op == "not" else self.gate(derived(operand), node, env)
        if isinstance(node, nodes.BoolOp):
            return join_all(self.expr(v, env) for v in node.values)
        if isinstance(node, nodes.Compare):
            parts = [self.expr(node.left, env)] + [self.expr(right, env) for _, right in node.ops]
            return stop(join_all(parts))
        if isinstance(node, nodes.IfExp):
            self.expr(node.test, env)
            return join(self.expr(node.body, env), self.expr(node.orelse, env))
        if isinstance(node, (nodes.Tuple, nodes.List, nodes.Set)):
            parts = tuple(self.expr(e, env) for e in node.elts)
            whole = join_all(parts, CONSTANT)
            if isinstance(node, nodes.Set) or any(isinstance(e, nodes.Starred) for e in node.elts):
                return whole
            return Prov(whole.sources, whole.maybe, whole.params, whole.deps, whole.leaf, whole.stopped, elts=parts)
        if isinstance(node, nodes.Dict):
            keyed: Dict[str, Prov] = {}
            values: List[Prov] = []
            constant_keys = True
            for key, value in node.items:
                if not isinstance(key, nodes.DictUnpack):
                    self.expr(key, env)
                v = self.expr(value, env)
                values.append(v)
                if isinstance(key, nodes.Const) and isinstance(key.value, str):
                    keyed[key.value] = v
                else:
                    constant_keys = False
            whole = join_all(values, CONSTANT)
            if constant_keys:
                return Prov(whole.sources, whole.maybe, whole.params, whole.deps, whole.leaf, whole.stopped,
                            keys=tuple(sorted(keyed.items())))
            return whole
        if isinstance(node, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp, nodes.DictComp)):
            return self.comprehension(node, env)
        if isinstance(node, nodes.NamedExpr):
            value = self.expr(node.value, env)
            self.bind(node.target, value, env)
            return value
        if isinstance(node, (nodes.Starred, nodes.Await)):
            return self.expr(node.value, env)
        if isinstance(node, (nodes.Yield, nodes.YieldFrom)):
            if node.value is not None:
                prov = self.expr(node.value, env)
                self.p._escape(Escape(node, prov, self.scope))
            return UNKNOWN
        if isinstance(node, (nodes.Lambda, nodes.FunctionDef, nodes.ClassDef)):
            return UNKNOWN
        if isinstance(node, nodes.JoinedStr):
            return stop(join_all(self.expr(v, env) for v in node.values))
        parts = [self.expr(child, env) for child in node.get_children() if isinstance(child, nodes.NodeNG)]
        return Prov(deps=join_all(parts).deps)

    def name(self, node: nodes.Name, env: _Env) -> Prov:
        defs = env.names.get(node.name)
        if defs is None:
            defs = self.outer_defs(node, node.name)
        self.p._reach[id(node)] = self.p._reach.get(id(node), _EMPTY) | defs
        if not defs:
            return UNKNOWN
        return _read(defs)

    def outer_defs(self, node: nodes.NodeNG, name: str) -> FrozenSet[Def]:
        """Defs of a name bound in an enclosing scope (module globals, closures): all of them."""
        from astroid.exceptions import AstroidError

        try:
            scope, bindings = node.lookup(name)
        except (AstroidError, RecursionError):
            return _EMPTY
        if scope is self.scope:
            return _EMPTY
        found = [self.p._defs.get(id(b)) for b in bindings]
        return frozenset(d for d in found if d is not None)

    def attribute(self, node: nodes.Attribute, env: _Env) -> Prov:
        if dataflow.is_self_attr(node):
            self.expr(node.expr, env)
            key = "self." + node.attrname
            defs = env.names.get(key, _EMPTY)
            self.p._reach[id(node)] = self.p._reach.get(id(node), _EMPTY) | defs
            if not defs:
                return UNKNOWN
            return _read(defs)
        base = self.expr(node.expr, env)
        if node.attrname in STOP_ATTRIBUTES:
            return stop(base)
        if base.keys is not None:
            for key, value in base.keys:
                if key == node.attrname:
                    return value
        if base.leaf and not device.tensor_attribute(node.attrname):
            return stop(base)  # metadata a library set on a parameter (``p.ds_numel``): no tensor of the graph
        # an attribute of a parameter (``p.T``) holds no operation's graph either
        return Prov(base.sources, base.maybe, base.params, base.deps, base.leaf, base.stopped)

    def comprehension(self, node: nodes.NodeNG, env: _Env) -> Prov:
        inner = env.copy()
        for gen in node.generators:
            element = _element(self.expr(gen.iter, inner))
            self.bind(gen.target, element, inner)
            for cond in gen.ifs:
                self.expr(cond, inner)
        if isinstance(node, nodes.DictComp):
            self.expr(node.key, inner)
            return Prov(**_plain(self.expr(node.value, inner)))
        return Prov(**_plain(self.expr(node.elt, inner)))

    # ---------------------------------------------------------------- calls
    def call(self, call: nodes.Call, env: _Env) -> Prov:
        func = call.func
        receiver: Optional[Prov] = None
        if isinstance(func, nodes.Attribute):
            receiver = self.expr(func.expr, env)
        elif not isinstance(func, nodes.Name):
            self.expr(func, env)
        else:
            self.name(func, env)  # records the Defs reaching the callee (``reaching_defs``); value unused
        args = [self.expr(a, env) for a in call.args]
        kwargs = {kw.arg: self.expr(kw.value, env) for kw in call.keywords or ()}
        self.p._mode[id(call)] = _join_mode(self.p._mode.get(id(call)), env.mode)
        everything = join_all(args + list(kwargs.values()) + ([receiver] if receiver is not None else []), CONSTANT)
        method = func.attrname if isinstance(func, nodes.Attribute) else None

        # cheap syntactic families first
        if method in BACKWARD_METHODS:
            self.backward(call, receiver, args, env)
            return stop(everything)
        if method in STOP_METHODS:
            return stop(everything)
        if method in gradients.PARAMETER_METHODS and receiver is not None and not call.args:
            # a module's parameters: leaves that require grad, never an operation's graph
            return Prov(sources=frozenset({id(call)}), deps=everything.deps, leaf=True)
        if method == "requires_grad_":
            flag = _first_argument(call, "requires_grad")
            if not (isinstance(flag, nodes.Const) and not flag.value):
                self.mark_requires_grad(func.expr, call, env)
                assert receiver is not None
                return join(receiver, Prov(sources=frozenset({id(call)}), leaf=True))
            return stop(everything)
        if method in STORE_METHODS and receiver is not None and not receiver.grad and not _opaque_object(
                call, [bool(a.sources or a.maybe) for a in args]):
            stored = join_all(args + list(kwargs.values()), CONSTANT)
            self.mutate(func.expr, Prov(**_plain(stored)), env)
            return Prov(deps=everything.deps)

        name = self.p._qname(call)
        if name is not None:
            result = self.named_call(call, name, args, kwargs, everything, env)
            if result is not None:
                return result

        kind = self.p._kind(func)
        if kind is None and method == "forward":
            kind = self.p._kind(func.expr)  # type: ignore[union-attr]
        if kind == models.MODEL:
            self.p._call_kinds[id(call)] = MODEL_CALL
            callee = func.expr if method == "forward" else func  # type: ignore[union-attr]
            if not everything.sources and not everything.maybe and evaluation.frozen_model(
                    callee, loops.enclosing_function(call), self.p.reaching_defs):
                return Prov(deps=everything.deps)  # a frozen model on inputs with no graph records none
            return self.gate(Prov(sources=frozenset({id(call)}), deps=everything.deps), call, env)
        if kind == models.LOSS:
            return self.loss(call, args, kwargs, everything, env)
        if kind == models.LAYER:
            return self.gate(derived(join_all(args, CONSTANT)), call, env)

        helper = self.p._function_of(func)
        if helper is not None:
            return self.helper_call(call, helper, args, kwargs, env)

        if method is not None and receiver is not None:
            if method in ENTRY_METHODS and not call.args and receiver.leaf:
                return receiver  # a container of parameters: its entries are the same leaves
            if method in INPLACE_METHODS:
                self.mutate(func.expr, derived(everything), env)
            if receiver.sources and receiver.sources <= self.p._confirmed_defs and method not in _tensor_attributes():
                # Grad-bearing only because backward() is called on it, yet it has a method no tensor
                # has (seq2seq's ``loss.get_loss()``): a loss object with its own backward(), whose
                # other methods return what they return.
                return Prov(deps=everything.deps)
            if receiver.sources or receiver.maybe or method in TENSOR_ARG_METHODS:
                return self.gate(derived(everything), call, env)
            if receiver.stopped and all(a.stopped for a in args):
                return stop(everything)

        callee = func.expr if method == "forward" else func  # type: ignore[union-attr]
        if kind is None and models.model_named(callee) and self.p._unresolved(callee):
            self.p._call_kinds[id(call)] = MAYBE_MODEL_CALL
            self.p._maybe_models.add(id(call))
            if id(call) in self.p._confirmed:
                return self.gate(Prov(sources=frozenset({id(call)}), deps=everything.deps), call, env)
            if env.mode == OFF:
                return stop(everything)
            return Prov(maybe=frozenset({id(call)}), deps=everything.deps)
        return Prov(deps=everything.deps)

    def named_call(
        self,
        call: nodes.Call,
        name: str,
        args: List[Prov],
        kwargs: Dict[Optional[str], Prov],
        everything: Prov,
        env: _Env,
    ) -> Optional[Prov]:
        """Calls resolved by qualified name (torch, builtins, math/numpy); None = not decided here."""
        if name in AUTOGRAD_BACKWARD:
            self.backward(call, None, args, env)
            return stop(everything)
        if name in AUTOGRAD_GRAD:
            self.backward(call, None, args, env)
            create = infer.argument(call, "create_graph")
            if isinstance(create, nodes.Const) and create.value:
                return self.gate(Prov(sources=frozenset({id(call)}), deps=everything.deps), call, env)
            return stop(everything)
        if name.startswith("builtins."):
            short = name.split(".", 1)[1]
            if short in STOP_BUILTINS:
                return stop(everything)
            if short in PASS_BUILTINS:
                passed = join_all(args, CONSTANT)
                return passed if short in CONTAINER_BUILTINS else derived(passed)
            return None
        if name.startswith(STOP_LIBRARIES):
            return stop(everything)
        if name in models.LOSS_FUNCTIONS:
            return self.loss(call, args, kwargs, everything, env)
        if name in PARAMETER_CLASSES:
            flag = infer.argument(call, "requires_grad")
            if flag is None and len(call.args) > 1:
                flag = call.args[1]
            if isinstance(flag, nodes.Const) and not flag.value:
                return stop(everything)
            return Prov(sources=frozenset({id(call)}), deps=everything.deps, leaf=True)
        requires = infer.argument(call, "requires_grad")
        if name.startswith("torch.") and isinstance(requires, nodes.Const) and requires.value:
            return Prov(sources=frozenset({id(call)}), deps=everything.deps, leaf=True)
        if name in TORCH_STOP_FUNCTIONS:
            return stop(everything)
        if name in CHECKPOINT_FUNCTIONS and call.args and self.p._kind(call.args[0]) == models.MODEL:
            self.p._call_kinds[id(call)] = MODEL_CALL
            return self.gate(Prov(sources=frozenset({id(call)}), deps=everything.deps), call, env)
        if name.startswith("torch.") and not name.startswith("torch.nn.") or name.startswith("torch.nn.functional."):
            callee = self.p._callee(call)
            if isinstance(callee, nodes.ClassDef):
                return Prov(deps=everything.deps)  # constructing a torch object
            if isinstance(callee, Instance) and not isinstance(callee, (BoundMethod, UnboundMethod)):
                return None  # calling a torch object (an FSDP-wrapped model): decided by models.kind
            return self.gate(derived(everything), call, env)  # torch functions and Tensor methods
        return None

    def loss(
        self, call: nodes.Call, args: List[Prov], kwargs: Dict[Optional[str], Prov], everything: Prov, env: _Env
    ) -> Prov:
        self.p._call_kinds[id(call)] = LOSS_CALL
        first = args[0] if args else kwargs.get("input")
        if first is not None and first.stopped:
            return stop(everything)  # a loss of detached predictions: a metric
        if env.mode == ON:
            corroborated = everything.maybe & self.p._maybe_models
            if corroborated - self.p._confirmed:
                self.p._confirmed |= corroborated
        return self.gate(Prov(sources=frozenset({id(call)}) | everything.sources, deps=everything.deps), call, env)

    def helper_call(
        self,
        call: nodes.Call,
        helper: nodes.FunctionDef,
        args: List[Prov],
        kwargs: Dict[Optional[str], Prov],
        env: _Env,
    ) -> Prov:
        summary = self.p._summary(helper)
        params = [a.name for a in list(helper.args.posonlyargs or []) + list(helper.args.args or [])]
        if params and helper.is_method() and isinstance(call.func, nodes.Attribute) and params[0] in ("self", "cls"):
            params = params[1:]
        mapping: Dict[str, Prov] = {}
        for index, prov in enumerate(args):
            if index < len(params) and not isinstance(call.args[index], nodes.Starred):
                mapping[params[index]] = prov
        for key, prov in kwargs.items():
            if key is not None:
                mapping[key] = prov
        everything = join_all(args + list(kwargs.values()), CONSTANT)
        result = _instantiate(summary, mapping, everything.deps)
        if env.mode == OFF:
            return stop(result)
        return self.gate(result, call, env) if env.mode == DYNAMIC else result

    def backward(self, call: nodes.Call, receiver: Optional[Prov], args: List[Prov], env: _Env) -> None:
        func = call.func
        targets: List[nodes.NodeNG] = []
        method = func.attrname if isinstance(func, nodes.Attribute) else None
        if method == "manual_backward" or receiver is None:
            if call.args:
                targets.append(call.args[0])
            else:
                for kw in call.keywords or ():
                    if kw.arg in ("tensors", "outputs", "loss"):
                        targets.append(kw.value)
        else:
            owner = func.expr  # type: ignore[union-attr]
            if isinstance(owner, nodes.Call) and infer.method_name(owner) == "scale" and owner.args:
                targets.append(owner.args[0])  # scaler.scale(loss).backward()
            targets.append(owner)
            if not gradients.is_tensor_backward(call) and not (receiver.sources or receiver.maybe):
                # ``accelerator.backward(loss)``, ``engine.backward(loss)``, ``model.backward(loss)`` on a
                # DeepSpeed engine: the receiver is no graph, the loss is the argument
                targets = [call.args[0]]
        provs = []
        for target in targets:
            prov = self.p._expr.get(id(target), UNKNOWN)
            provs.append(prov)
            new = prov.maybe - self.p._confirmed
            if new:
                self.p._confirmed |= new
            for root in _receiver_roots(target):
                for d in self.p._reach.get(id(root), _EMPTY):
                    self.p._confirmed_defs.add(id(d.node))
        retain = any(
            isinstance(v, nodes.Const) and bool(v.value)
            for v in (infer.argument(call, "retain_graph"), infer.argument(call, "create_graph"))
        ) or (method is None and self.p._qname(call) in AUTOGRAD_GRAD)
        self.p._backward(Backward(call, targets, join_all(provs), retain, self.scope))


# ------------------------------------------------------------------ helpers
def _env_key(node: nodes.NodeNG) -> Optional[str]:
    if isinstance(node, (nodes.Name, nodes.AssignName)):
        return str(node.name)
    if dataflow.is_self_attr(node):
        return "self." + str(node.attrname)
    return None


_TENSOR_ATTRIBUTES: Dict[str, FrozenSet[str]] = {}


def _tensor_attributes() -> FrozenSet[str]:
    """Names of the methods and attributes of the stub ``torch.Tensor``."""
    if "names" not in _TENSOR_ATTRIBUTES:
        stub = brain.stub_module("torch")
        klass = stub.locals.get("Tensor", [None])[0] if stub is not None else None
        _TENSOR_ATTRIBUTES["names"] = frozenset(klass.locals) if isinstance(klass, nodes.ClassDef) else frozenset()
    return _TENSOR_ATTRIBUTES["names"]


def _receiver_roots(target: nodes.NodeNG) -> List[nodes.NodeNG]:
    """Names a backpropagated expression is read from along its receiver chain
    (``loss`` for ``loss``, ``loss.mean()``, ``out.loss``, ``losses[0]``).

    A call of a member of the object (``self.loss(out, y)``, ``self.compute_loss(batch)``) is a
    callee's result, not a value read from ``self``: it has no root (otherwise ``self`` itself would
    be confirmed grad-bearing, and with it every value computed through ``self``, timing floats
    included)."""
    node = target
    while True:
        if isinstance(node, nodes.Name) or dataflow.is_self_attr(node):
            return [node]
        if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute):
            if isinstance(node.func.expr, nodes.Name) and node.func.expr.name in ("self", "cls"):
                return []
            node = node.func.expr
        elif isinstance(node, nodes.Attribute):
            node = node.expr
        elif isinstance(node, nodes.Subscript):
            node = node.value
        else:
            return []


def _values_indices(call: nodes.Call, prov: Prov) -> Prov:
    """The record of ``x.topk(k)`` / ``x.max(1)`` / ``torch.sort(x)``: a pair whose second element
    (``[1]``, ``.indices``) is integer indices with no graph; other calls keep ``prov``."""
    if not (prov.sources or prov.maybe) or prov.elts is not None:
        return prov
    name = infer.method_name(call)
    qname = infer.dotted_name(call.func)
    args = list(call.args)
    if qname is not None and qname.startswith("torch.") and name is not None:
        args = args[1:]  # ``torch.max(x, 1)``: the tensor is the first argument
    elif not isinstance(call.func, nodes.Attribute):
        return prov
    if name in VALUES_INDICES_WITH_DIM:
        if static_values.int_value(infer.argument(call, "dim") or (args[0] if args else None)) is None:
            return prov
    elif name not in VALUES_INDICES:
        return prov
    indices = stop(prov)
    return Prov(prov.sources, prov.maybe, prov.params, prov.deps, prov.leaf, prov.stopped, elts=(prov, indices),
                keys=(("indices", indices), ("values", prov)))


def _first_argument(call: nodes.Call, keyword: str) -> Optional[nodes.NodeNG]:
    if call.args:
        return call.args[0]
    return infer.argument(call, keyword)


_Event = TypeVar("_Event", Backward, Escape)


def _merge_event(by_id: Dict[int, _Event], events: List[_Event], key: int, event: _Event) -> None:
    """Record ``event`` once per node (``key``): a later round's event for the same node joins
    its record into the first one."""
    old = by_id.get(key)
    if old is None:
        by_id[key] = event
        events.append(event)
    else:
        old.prov = join(old.prov, event.prov)


def _dict_items(iterable: nodes.NodeNG) -> bool:
    """``d.items()``: an iteration over (key, value) pairs, whose keys are names or numbers."""
    return (
        isinstance(iterable, nodes.Call)
        and isinstance(iterable.func, nodes.Attribute)
        and iterable.func.attrname == "items"
        and not iterable.args
        and not iterable.keywords
    )


#: Store methods that a container shares with many other objects (a meter's or a tracker's ``update``).
SHARED_STORE_NAMES = frozenset({"update", "setdefault"})


def _opaque_object(call: nodes.Call, graphs: List[bool]) -> bool:
    """``tracker.update(loss)`` that is not a store: on an object built by a class the analysis cannot
    read (``tracker = LossTracker(n)`` imported from a module it cannot follow), whether ``update``
    keeps its argument or only its ``.item()`` is not in sight; on an object of the project's own
    class, its ``update`` is read (``_keeps_arguments``) for the positional arguments that carry a
    graph (``graphs``).  A dict's ``update`` is a store."""
    if infer.method_name(call) not in SHARED_STORE_NAMES:
        return False
    receiver = call.func.expr  # type: ignore[union-attr]
    value = infer.safe_infer(receiver)
    if isinstance(value, Instance) and not isinstance(value, nodes.Dict) and value.qname().split(".")[0] not in (
            "builtins", "collections"):
        method_def = infer.function_def(call.func)
        if method_def is None:
            return False
        names = [a.name for a in (method_def.args.args or [])[1:]]
        carried = {names[i] for i, graph in enumerate(graphs) if graph and i < len(names)}
        carried |= {kw.arg for kw in call.keywords or () if kw.arg}  # keywords: read whatever they carry
        return not _keeps_arguments(method_def, carried)
    if value is not None:
        return False
    values = dataflow.assigned_values(receiver) if isinstance(receiver, (nodes.Name, nodes.Attribute)) else None
    return bool(values) and all(
        isinstance(v, nodes.Call) and isinstance(v.func, (nodes.Name, nodes.Attribute))
        and infer.safe_infer(v.func) is None for v in values
    )


def _keeps_arguments(method: nodes.FunctionDef, params: "Set[str]") -> bool:
    """A method of the project's own (a meter's ``update``) writes one of ``params`` into an
    attribute of ``self`` other than through a value-only read (``val.item()``, ``float(val)``,
    ``val.detach()``): ``self.sum += val * n`` keeps the tensor, ``self.values.append(val.item())``
    does not."""
    for node in method.nodes_of_class((nodes.Assign, nodes.AugAssign, nodes.Call)):
        if isinstance(node, nodes.Call):
            if not (isinstance(node.func, nodes.Attribute) and node.func.attrname in STORE_METHODS
                    and _on_self(node.func.expr)):
                continue
            values = list(node.args) + [kw.value for kw in node.keywords or ()]
        else:
            targets = node.targets if isinstance(node, nodes.Assign) else [node.target]
            if not any(_on_self(t) for t in targets):
                continue
            values = [node.value]
        if any(_reads_raw(v, params) for v in values):
            return True
    return False


def _on_self(node: nodes.NodeNG) -> bool:
    while isinstance(node, (nodes.Attribute, nodes.AssignAttr, nodes.Subscript)):
        node = node.expr if not isinstance(node, nodes.Subscript) else node.value
    return isinstance(node, nodes.Name) and node.name == "self"


def _reads_raw(value: nodes.NodeNG, params: "Set[str]") -> bool:
    """``value`` reads one of ``params`` other than inside a value-only call (``x.item()``, ``float(x)``)."""
    for name in value.nodes_of_class(nodes.Name):
        if name.name not in params:
            continue
        node, stopped = name, False
        while node is not value and node.parent is not None:
            parent = node.parent
            if isinstance(parent, nodes.Attribute) and parent.attrname in STOP_METHODS:
                stopped = True
                break
            if isinstance(parent, nodes.Call) and node in parent.args and infer.call_name(parent) in STOP_BUILTINS:
                stopped = True
                break
            node = parent
        if not stopped:
            return True
    return False
