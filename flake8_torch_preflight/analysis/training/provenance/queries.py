"""What the rules ask of a file's provenance.

Computed once per file and memoised in ``ctx.memo`` (see :func:`of`)::

    p = provenance.of(ctx)
    p.is_grad_bearing(expr)     # attached to an autograd graph (or a leaf that requires grad)
    p.carries_graph(expr)       # attached to a graph that an operation built (not a bare leaf)
    p.value(expr)               # the full record (a Prov), None where the analysis never ran
    p.reaching_defs(name)       # the Defs that may reach a Name load / AugAssign target / self.attr
    p.grad_mode(node)           # ON, OFF or DYNAMIC where ``node`` runs; None when unknown
    p.call_kind(call)           # MODEL_CALL / MAYBE_MODEL_CALL / LOSS_CALL for the calls that make graphs
    p.backwards, p.escapes      # every backward() seen, every value that leaves its function
    p.covers(backward, prov)    # that backward() runs through the graph of a value recorded as prov
    p.scope_of(node)            # the function (or module) whose analysis covers node
    p.call_sites(func)          # the file's calls of func (also under other names, by inference)
    p.calls_only_without_grad(func)   # every in-file call site runs the function under no_grad
    p.callers_unknown(func)     # func is handed on as a value and never called in the file

``source_text(node, lines)`` gives an expression as written, for messages; ``host_value(expr)``
and ``could_be_model_call(call, memo)`` answer from the syntax alone, before the analysis runs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from astroid import nodes

from ...semantic import infer
from .. import models
from .lattice import Backward, Def, Escape, Prov
from .runner import CHECKPOINT_FUNCTIONS, STOP_ATTRIBUTES, STOP_BUILTINS, STOP_METHODS, Analysis

if TYPE_CHECKING:
    from ...setup.build import FileContext

#: Transitive dependency sets kept per file (``Provenance._closure``).
_CLOSURES_KEPT = 64
_MEMO_KEY = "provenance"


def host_value(expr: nodes.NodeNG) -> bool:
    """``expr`` is, by its syntax alone, a value without a graph: a literal, ``t.item()`` and the
    other stop methods, ``t.shape``, a builtin such as ``len(t)`` or ``float(t)`` that the file does
    not rebind, or arithmetic on those.  The whole-file analysis gives the same answer; rules ask
    this first so that ``total += loss.item()`` or ``i += 1`` does not start it."""
    if isinstance(expr, nodes.Const):
        return True
    if isinstance(expr, (nodes.BinOp, nodes.BoolOp, nodes.UnaryOp, nodes.Compare)):
        return all(host_value(child) for child in expr.get_children())
    if isinstance(expr, nodes.Attribute):
        return expr.attrname in STOP_ATTRIBUTES
    if isinstance(expr, nodes.Subscript):
        return host_value(expr.value)  # ``t.shape[0]``
    if isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute):
        return expr.func.attrname in STOP_METHODS
    if isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Name) and expr.func.name in STOP_BUILTINS:
        try:
            scope, _ = expr.func.lookup(expr.func.name)
        except Exception:  # astroid lookup failure: not known to be the builtin
            return False
        return isinstance(scope, nodes.Module) and scope.name == "builtins"
    return False


def could_be_model_call(call: nodes.Call, memo: Dict[int, Optional[str]]) -> bool:
    """A necessary condition, without the whole-file analysis, for ``call_kind(call)`` to be
    MODEL_CALL or MAYBE_MODEL_CALL: the callee is named like a model, resolves to a model, or is
    ``checkpoint(model, ...)``.  ``memo`` caches ``models.kind`` per expression for one file.
    It mirrors the ways ``_Runner.call`` records MODEL_CALL/MAYBE_MODEL_CALL: a new way there needs
    a matching case here."""
    func = call.func
    if not isinstance(func, (nodes.Name, nodes.Attribute)):
        return False
    method = func.attrname if isinstance(func, nodes.Attribute) else None
    callee = func.expr if method == "forward" else func  # type: ignore[union-attr]
    if models.model_named(callee) or models.kind(func, memo) == models.MODEL:
        return True
    if method == "forward" and models.kind(func.expr, memo) == models.MODEL:  # type: ignore[union-attr]
        return True
    return bool(call.args) and (infer.callee_qname(call) or infer.dotted_name(func)) in CHECKPOINT_FUNCTIONS


class Provenance(Analysis):
    """The provenance of every expression of one file (see the module docstring)."""

    def __init__(self, module: nodes.Module) -> None:
        self._closures: Dict[int, Tuple[Prov, FrozenSet[int]]] = {}
        super().__init__(module)

    # ------------------------------------------------------------------ API
    def value(self, expr: nodes.NodeNG) -> Optional[Prov]:
        """The record of ``expr`` (joined over every time it was evaluated), None if never evaluated."""
        return self._expr.get(id(expr))

    def is_grad_bearing(self, expr: nodes.NodeNG) -> bool:
        p = self._expr.get(id(expr))
        return p is not None and p.grad

    def carries_graph(self, expr: nodes.NodeNG) -> bool:
        p = self._expr.get(id(expr))
        return p is not None and p.graph

    def reaching_defs(self, node: nodes.NodeNG) -> Optional[FrozenSet[Def]]:
        """Defs reaching a Name load, an AugAssign target or a ``self.attr`` load (None: not analysed)."""
        return self._reach.get(id(node))

    def def_of(self, binding: nodes.NodeNG) -> Optional[Def]:
        """The Def created by a binding node (AssignName, AssignAttr on self)."""
        return self._defs.get(id(binding))

    def grad_mode(self, node: nodes.NodeNG) -> Optional[str]:
        """ON / OFF / DYNAMIC where ``node`` runs (nearest analysed enclosing node), None when unknown."""
        current: Optional[nodes.NodeNG] = node
        while current is not None:
            mode = self._mode.get(id(current))
            if mode is not None:
                return mode
            if isinstance(current, (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef, nodes.Module)):
                return None
            current = current.parent
        return None

    def call_kind(self, call: nodes.Call) -> Optional[str]:
        """MODEL_CALL, MAYBE_MODEL_CALL (unresolved, named like a model) or LOSS_CALL; None otherwise."""
        return self._call_kinds.get(id(call))

    def graph_defs(self, prov: Prov) -> Set[int]:
        """Ids of the Defs ``prov`` was computed from (transitively) that themselves carry a graph."""
        return {ident for ident in self._closure(prov) if self._carries(ident)}

    def source_calls(self, prov: Prov) -> FrozenSet[int]:
        """Ids of the source nodes (forwards, losses, leaves) whose graph ``prov`` may carry, directly or
        through the bindings it was computed from."""
        found: Set[int] = set(prov.sources | prov.maybe)
        for ident in self._closure(prov):
            d = self._defs_by_id.get(ident)
            if d is not None:
                found |= d.prov.sources | d.prov.maybe
        return frozenset(found)

    def depends_on(self, prov: Prov, idents: "FrozenSet[int] | Set[int]") -> bool:
        """``prov`` was computed, directly or through other bindings, from one of the Defs ``idents``."""
        return bool(idents) and not self._closure(prov).isdisjoint(idents)

    def graph_depends_on(self, prov: Prov, idents: "FrozenSet[int] | Set[int]") -> bool:
        """``prov``'s graph runs through one of the Defs ``idents``: as ``depends_on``, but a binding
        that provably carries no graph (``values = torch.cat(values).detach()``) cuts the path, so a
        backward computed from the detached copy needs none of what the Defs kept."""
        return bool(idents) and any(ident in idents for ident in self._reached(prov, cut_stopped=True))

    def covers(self, backward: Backward, prov: Prov) -> bool:
        """Does ``backward`` run through the graph of a value recorded as ``prov`` (same source
        calls, or computed from the same grad-bearing bindings), freeing its saved activations?"""
        if backward.prov.sources & prov.sources:
            return True
        through = self._closure(backward.prov)
        # Walk what ``prov`` was computed from, nearest bindings first, and stop at the first
        # grad-bearing one the backward also runs through (usually the first: ``loss = loss + t``).
        return any(ident in through and self._carries(ident) for ident in self._reached(prov, cut_stopped=False))

    def _reached(self, prov: Prov, cut_stopped: bool) -> Iterator[int]:
        """The Defs ``prov`` was computed from, nearest bindings first; with ``cut_stopped``, not past
        a binding that carries no graph."""
        seen: Set[int] = set()
        stack = list(prov.deps)
        while stack:
            ident = stack.pop()
            if ident in seen:
                continue
            seen.add(ident)
            yield ident
            d = self._defs_by_id.get(ident)
            if d is not None and not (cut_stopped and d.prov.stopped):
                stack.extend(d.prov.deps)

    def _carries(self, ident: int) -> bool:
        d = self._defs_by_id.get(ident)
        return d is not None and d.prov.graph

    def _closure(self, prov: Prov) -> FrozenSet[int]:
        """Every Def ``prov`` was computed from, followed through the Defs' own records.  The last
        few are memoised (a backward's is asked for every value kept in its loop); a bounded
        memo keeps memory linear in the file."""
        cached = self._closures.get(id(prov))
        if cached is not None and cached[0] is prov:
            return cached[1]
        seen: Set[int] = set(prov.deps)
        stack = list(seen)
        while stack:
            d = self._defs_by_id.get(stack.pop())
            if d is None:
                continue
            for ident in d.prov.deps:
                if ident not in seen:
                    seen.add(ident)
                    stack.append(ident)
        closure = frozenset(seen)
        if len(self._closures) >= _CLOSURES_KEPT:
            self._closures.clear()
        self._closures[id(prov)] = (prov, closure)
        return closure

    def backwards_in(self, scope: nodes.NodeNG) -> List[Backward]:
        return [b for b in self.backwards if b.scope is scope]

    def escapes_in(self, scope: nodes.NodeNG) -> List[Escape]:
        return [e for e in self.escapes if e.scope is scope]


def source_text(node: nodes.NodeNG, lines: Sequence[str]) -> Optional[str]:
    """The source of ``node`` as written, whitespace collapsed (None without positions).

    Read from the file's lines rather than unparsed with ``as_string()``, which recurses
    and overflows on long expressions."""
    start, col = getattr(node, "lineno", None), getattr(node, "col_offset", None)
    end, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if None in (start, col, end, end_col) or not 0 < start <= end <= len(lines) or end - start > 20:
        return None
    if start == end:
        text = lines[start - 1][col:end_col]
    else:
        text = lines[start - 1][col:] + "".join(lines[start:end - 1]) + lines[end - 1][:end_col]
    return " ".join(text.split())


def of(ctx: "FileContext") -> Provenance:
    """The file's provenance, computed on first use and memoised in ``ctx.memo``."""
    result = ctx.memo.get(_MEMO_KEY)
    if result is None:
        result = Provenance(ctx.module)
        ctx.memo[_MEMO_KEY] = result
    return result
