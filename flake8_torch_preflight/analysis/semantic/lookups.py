"""Bounded name lookup: astroid's lookup of a name stays cheap on long chains of rebindings.

astroid resolves a name by filtering every binding of that name in its scope
(``astroid.filter_statements._filter_stmts``): for ``loss`` after n statements
``loss = loss + term`` that is O(n) per lookup, and inferring the chain looks
each link up again, so the cost of a file grew with the square of its length
(``benchmarks/rebinding_chain.py`` prints it).  ``install`` wraps that
filter, for this process, with two bounds that give the same answers wherever
astroid's own would be usable:

* **Latest unconditional rebinding.**  A plain assignment (``=``, annotated
  ``=``, ``+=``) of the name in the same block as the lookup (same parent, not an
  exclusive branch), before it, hides every earlier binding: astroid's filter
  empties its candidates there, by the same tests.  The
  filter is started at the latest such assignment among the ``LOOKBACK``
  bindings nearest the lookup (found by bisection on the bindings' lines, kept
  per binding list for the checked file), so a lookup costs what its nearest
  bindings cost, not the whole chain.
* **Too many bindings.**  A name bound more than ``MAX_EARLIER`` times before
  the lookup with none of those nearest ``LOOKBACK`` hiding the rest (an
  ``if``-ladder of rebindings), or a lookup left with more than
  ``MAX_CANDIDATES`` possible bindings, answers "unknown" (astroid's
  ``Uninferable``): the analyses look at most ``infer.MAX_RESULTS`` values of a
  name and call more than that unknown anyway.
"""
from __future__ import annotations

import bisect
from typing import Any, Dict, List, Optional, Tuple

from astroid import nodes
from astroid.util import Uninferable

from . import memo

#: Bindings of the name nearest the lookup searched for an unconditional rebinding.
LOOKBACK = 64
#: Bindings of a name before a lookup beyond which, with no rebinding that hides them among the
#: nearest ``LOOKBACK``, the lookup answers "unknown".
MAX_EARLIER = 256
#: Possible bindings one lookup may leave (astroid's filter result); more is "unknown".
MAX_CANDIDATES = 64
#: Binding lists shorter than this are filtered by astroid alone (the common case).
_SHORT = 16

#: Statements that rebind a name unconditionally when they run.
_REBINDING = (nodes.Assign, nodes.AnnAssign, nodes.AugAssign)

_ORIGINAL: Optional[Any] = None

#: Per binding list (``scope.locals[name]``) of the checked file: the list itself (kept so that its
#: ``id`` stays unique), its length when measured, and its statements' first lines (None when the
#: list is not in line order, as when astroid appended an attribute assignment to it).
_LINES: "Dict[int, Tuple[List[Any], int, Optional[List[int]]]]" = memo.per_file()


def install() -> None:
    """Wrap astroid's binding filter (once per process)."""
    global _ORIGINAL
    if _ORIGINAL is not None:
        return
    from astroid.nodes.scoped_nodes import mixin

    original = getattr(mixin, "_filter_stmts", None)
    if original is None:  # pragma: no cover - another astroid layout: lookups stay unbounded
        return
    _ORIGINAL = original
    mixin._filter_stmts = _bounded_filter_stmts


def _bounded_filter_stmts(base_node: Any, stmts: List[Any], frame: Any, offset: int) -> List[Any]:
    assert _ORIGINAL is not None
    if len(stmts) < _SHORT or offset != 0:
        return _ORIGINAL(base_node, stmts, frame, offset)  # type: ignore[no-any-return]
    start = _start(base_node, stmts, frame)
    if start is None:
        return [Uninferable]
    found = _ORIGINAL(base_node, stmts[start:] if start else stmts, frame, offset)
    if len(found) > MAX_CANDIDATES:
        return [Uninferable]
    return found  # type: ignore[no-any-return]


def _start(base_node: Any, stmts: List[Any], frame: Any) -> Optional[int]:
    """Where astroid's filter may start for ``base_node`` with the same result (0: the start), or
    None when the lookup is to answer "unknown"."""
    if base_node.parent is None or base_node.frame() is not frame:
        return 0
    mystmt = base_node.statement()
    if mystmt is frame or mystmt.fromlineno is None:
        return 0
    lines = _lines(stmts)
    if lines is None:
        return 0
    before = bisect.bisect_left(lines, mystmt.fromlineno)
    for index in range(before - 1, max(before - LOOKBACK, 0) - 1, -1):
        node = stmts[index]
        if not isinstance(node, nodes.AssignName):
            continue
        statement = node.statement()
        if (
            isinstance(statement, _REBINDING)
            and statement.parent is mystmt.parent
            and statement is not mystmt
            and not nodes.are_exclusive(base_node, node)  # ``if`` and ``else`` bodies share a parent
        ):
            return index
    return None if before > MAX_EARLIER else 0


def _lines(stmts: List[Any]) -> Optional[List[int]]:
    known = _LINES.get(id(stmts))
    if known is not None and known[0] is stmts and known[1] == len(stmts):
        return known[2]
    lines: Optional[List[int]] = []
    for node in stmts:
        line = getattr(node.statement(), "fromlineno", None) if isinstance(node, nodes.NodeNG) else None
        if line is None or (lines and line < lines[-1]):
            lines = None
            break
        lines.append(line)  # type: ignore[union-attr]
    _LINES[id(stmts)] = (stmts, len(stmts), lines)
    return lines
