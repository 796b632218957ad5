"""A deterministic work budget for one file's analysis: the number of astroid inferences.

The CPU-time budget (``engine.BUDGET_SECONDS``) depends on the machine and its load, so a file near
it can be skipped in one run and analysed in the next.  Counting inferences gives every run the same
answer: ``install`` wraps astroid's ``NodeNG.infer`` (every inference, recursive ones included, goes
through it) with a counter that ``begin_file`` resets and that raises ``BudgetExceeded`` past
``MAX_INFERENCES``.  The CPU-time budget stays, far above, as the safety net for a single astroid
call that never returns to the counter.
"""
from __future__ import annotations

from typing import Any, Callable

from astroid.nodes import NodeNG

from .walker import BudgetExceeded

#: Inferences one file's analysis may start: several times what the most demanding file of the ten
#: scanned training repositories (2,090 files) needs, about 27,000.  A file past it is skipped with
#: a note, the same in every run.
MAX_INFERENCES = 200_000

_state = {"count": 0, "limit": MAX_INFERENCES, "active": False}
_installed = False


def install() -> None:
    """Wrap ``NodeNG.infer`` once per process (idempotent)."""
    global _installed
    if _installed:
        return
    original: Callable[..., Any] = NodeNG.infer

    def counted_infer(self: NodeNG, context: Any = None, **kwargs: Any) -> Any:
        if _state["active"]:
            _state["count"] += 1
            if _state["count"] > _state["limit"]:
                _state["active"] = False  # one raise per file; the engine notes it
                raise BudgetExceeded()
        return original(self, context, **kwargs)

    NodeNG.infer = counted_infer  # type: ignore[method-assign]
    _installed = True


def begin_file() -> None:
    _state["count"] = 0
    _state["limit"] = MAX_INFERENCES
    _state["active"] = True


def end_file() -> int:
    """Stop counting; the number of inferences the file made."""
    _state["active"] = False
    return int(_state["count"])


def used() -> int:
    return int(_state["count"])
