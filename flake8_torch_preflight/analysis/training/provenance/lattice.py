"""The abstract values of the provenance analysis, and how they join.

A ``Prov`` (see the class) holds the source calls of the graph a value carries, the Defs its
expression reads (``depends_on`` follows them transitively: liberal "depends on", stops
included), and whether it is a bare leaf or provably detached.  ``join`` is the least upper
bound (the value may be either); ``derived`` and ``stop`` are what an operation and a stop make
of a value.  A ``Def`` is one binding with the join of every value bound there; an environment
maps each name to the Defs reaching it, with the grad mode (ON, OFF, or DYNAMIC where paths
disagree or a run-time expression sets it).  ``Backward`` and ``Escape`` are the events the
runner records.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

from astroid import nodes

#: Grad modes (``grad_mode``): autograd on, off, or set by a run-time expression.
ON, OFF, DYNAMIC = "on", "off", "dynamic"

_EMPTY: FrozenSet = frozenset()


@dataclass(frozen=True)
class Prov:
    """What a value is made of.

    ``sources``: ids of the source nodes whose graph it carries (non-empty = grad-bearing).
    ``maybe``: ids of unconfirmed candidate sources (unknown models, DYNAMIC-mode results).
    ``params``: parameters of the analysed function that flow into it (for function summaries).
    ``deps``: ids of the Defs it was computed from directly (the bindings its expression reads, stops
    included); what those were computed from is followed by ``Provenance.depends_on`` when asked.
    Kept direct so that a chain of n rebindings (``v2 = v1 * 2``, ``loss = loss + term``) holds n
    small sets, not n sets of up to n ids (1 GB for 2,900 lines when each held the whole chain).
    ``leaf``: a leaf requiring grad (a parameter, ``requires_grad=True``), no operation's graph.
    ``stopped``: provably carries no graph (a stop, a constant, computed with autograd off).
    ``elts``/``keys``: per-element records of a tuple/list display or a dict with constant keys.
    """

    sources: FrozenSet[int] = _EMPTY
    maybe: FrozenSet[int] = _EMPTY
    params: FrozenSet[str] = _EMPTY
    deps: FrozenSet[int] = _EMPTY
    leaf: bool = False
    stopped: bool = False
    elts: Optional[Tuple["Prov", ...]] = None
    keys: Optional[Tuple[Tuple[str, "Prov"], ...]] = None

    @property
    def grad(self) -> bool:
        return bool(self.sources)

    @property
    def graph(self) -> bool:
        """Grad-bearing through an operation's graph (not only a bare leaf)."""
        return bool(self.sources) and not self.leaf


UNKNOWN = Prov()
CONSTANT = Prov(stopped=True)


def join(a: Prov, b: Prov) -> Prov:
    """The value may be ``a`` or ``b`` (or holds both)."""
    if a is b:
        return a
    elts = None
    if a.elts is not None and b.elts is not None and len(a.elts) == len(b.elts):
        elts = tuple(join(x, y) for x, y in zip(a.elts, b.elts))
    keys = None
    if a.keys is not None and b.keys is not None:
        merged: Dict[str, Prov] = dict(a.keys)
        for k, v in b.keys:
            merged[k] = join(merged[k], v) if k in merged else v
        keys = tuple(sorted(merged.items()))
    sources = a.sources | b.sources
    return Prov(
        sources=sources,
        maybe=a.maybe | b.maybe,
        params=a.params | b.params,
        deps=a.deps | b.deps,
        leaf=bool(sources) and (a.leaf or not a.sources) and (b.leaf or not b.sources),
        stopped=a.stopped and b.stopped,
        elts=elts,
        keys=keys,
    )


def join_all(provs: Iterable[Prov], empty: Prov = UNKNOWN) -> Prov:
    """``join`` over ``provs`` (``empty`` when there is none).  Many records (a name that an
    ``if``-ladder rebinds reaches through every rung) are joined in one pass over their sets."""
    items = provs if isinstance(provs, list) else list(provs)
    if len(items) <= 2:
        result: Optional[Prov] = None
        for p in items:
            result = p if result is None else join(result, p)
        return empty if result is None else result
    if all(p.elts is None and p.keys is None for p in items):
        return _flat_join(items, _EMPTY.union(*(p.deps for p in items)))
    result = items[0]
    for p in items[1:]:
        result = join(result, p)
    return result


def derived(p: Prov) -> Prov:
    """The result of an operation on ``p``: same graph, no longer a leaf or a container."""
    return Prov(sources=p.sources, maybe=p.maybe, params=p.params, deps=p.deps, stopped=p.stopped)


def stop(p: Prov) -> Prov:
    """A stop: no graph, still computed from ``p``."""
    return Prov(deps=p.deps, stopped=True)


class Def:
    """One binding of a name (or ``self.attr``): its node and the union of values it was bound to."""

    __slots__ = ("node", "name", "prov", "scope")

    def __init__(self, node: nodes.NodeNG, name: str, scope: nodes.NodeNG) -> None:
        self.node = node
        self.name = name
        self.scope = scope
        self.prov: Prov = UNKNOWN

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "Def({}@{})".format(self.name, getattr(self.node, "lineno", "?"))


@dataclass
class Backward:
    """A backward pass: ``call`` backpropagates ``values`` (their joined record is ``prov``)."""

    call: nodes.Call
    values: List[nodes.NodeNG]
    prov: Prov
    #: ``retain_graph=True``/``create_graph=True``, or ``autograd.grad``: the saved activations may stay.
    retain: bool
    scope: nodes.NodeNG


@dataclass
class Escape:
    """A value leaving its function: returned, yielded, or stored on ``self``/an outer object."""

    node: nodes.NodeNG
    prov: Prov
    scope: nodes.NodeNG


class _Env:
    __slots__ = ("names", "mode")

    def __init__(self, names: Dict[str, FrozenSet[Def]], mode: str) -> None:
        self.names = names
        self.mode = mode

    def copy(self) -> "_Env":
        return _Env(dict(self.names), self.mode)

    def same(self, other: "_Env") -> bool:
        return self.mode == other.mode and self.names == other.names


def _join_envs(envs: Iterable[Optional[_Env]]) -> Optional[_Env]:
    live = [e for e in envs if e is not None]
    if not live:
        return None
    names: Dict[str, FrozenSet[Def]] = dict(live[0].names)
    mode = live[0].mode
    for env in live[1:]:
        for key, defs in env.names.items():
            names[key] = names[key] | defs if key in names else defs
        if env.mode != mode:
            mode = DYNAMIC
    return _Env(names, mode)


def _join_mode(a: Optional[str], b: str) -> str:
    return b if a is None or a == b else DYNAMIC


# ------------------------------------------------------------------ helpers
def _plain(p: Prov) -> Dict[str, object]:
    return {"sources": p.sources, "maybe": p.maybe, "params": p.params, "deps": p.deps, "leaf": p.leaf,
            "stopped": p.stopped}


def _element(p: Prov) -> Prov:
    """An element of an iterable with record ``p``."""
    if p.elts is not None:
        return Prov(**_plain(join_all(p.elts, CONSTANT)))
    return Prov(**_plain(p))


def _pick(base: Prov, index: nodes.NodeNG) -> Optional[Prov]:
    if isinstance(index, nodes.Const):
        if base.elts is not None and isinstance(index.value, int) and -len(base.elts) <= index.value < len(base.elts):
            return base.elts[index.value]
        if base.keys is not None and isinstance(index.value, str):
            for key, value in base.keys:
                if key == index.value:
                    return value
    return None


def _read(defs: FrozenSet[Def]) -> Prov:
    """The value of a name (or ``self.attr``) that ``defs`` reach: their records joined, depending
    directly on those Defs (not on what they depend on: ``depends_on`` follows that)."""
    if not defs:
        return UNKNOWN
    deps = frozenset(id(d) for d in defs)
    if len(defs) <= 2 or any(d.prov.elts is not None or d.prov.keys is not None for d in defs):
        prov = join_all(d.prov for d in defs)
        return Prov(prov.sources, prov.maybe, prov.params, deps, prov.leaf, prov.stopped, prov.elts, prov.keys)
    return _flat_join([d.prov for d in defs], deps)  # many Defs (an ``if``-ladder's rungs): one pass


def _flat_join(provs: List[Prov], deps: FrozenSet[int]) -> Prov:
    """``join`` of records without element or key structure, in one pass over their sets, with
    ``deps`` as the result's direct dependencies."""
    sources = _EMPTY.union(*(p.sources for p in provs))
    return Prov(
        sources=sources,
        maybe=_EMPTY.union(*(p.maybe for p in provs)),
        params=_EMPTY.union(*(p.params for p in provs)),
        deps=deps,
        leaf=bool(sources) and all(p.leaf or not p.sources for p in provs),
        stopped=all(p.stopped for p in provs),
    )


def _instantiate(summary: Prov, mapping: Dict[str, Prov], deps: FrozenSet[int]) -> Prov:
    """A function summary with its parameters replaced by the call's arguments."""
    result = Prov(summary.sources, summary.maybe, _EMPTY, summary.deps | deps, summary.leaf, summary.stopped)
    for param in summary.params:
        arg = mapping.get(param)
        if arg is not None:
            result = join(result, Prov(**_plain(arg)))
        else:
            result = Prov(result.sources, result.maybe, result.params, result.deps, result.leaf, False)
    elts = None
    if summary.elts is not None:
        elts = tuple(_instantiate(e, mapping, deps) for e in summary.elts)
    keys = None
    if summary.keys is not None:
        keys = tuple((k, _instantiate(v, mapping, deps)) for k, v in summary.keys)
    return Prov(result.sources, result.maybe, result.params, result.deps, result.leaf, result.stopped, elts, keys)
