"""Notes of the checked file: an analysis that gives up says so, once, instead of going quiet.

An analysis that cannot finish on a file (past its size bound, past Python's recursion limit)
answers "unknown" to every question, which keeps the rules silent where it would have found
something; ``add`` records why, and the engine prints each note as one line on stderr when the
file ends (``engine._note``), as it does for a file over its time budget.
"""
from __future__ import annotations

from typing import List, Tuple

__all__ = ["add", "take"]

_NOTES: List[Tuple[str, str]] = []


def add(what: str, text: str) -> None:
    """Record that ``what`` (an analysis, a rule) ``text`` (what happened) on the current file."""
    if (what, text) not in _NOTES:
        _NOTES.append((what, text))


def take() -> List[Tuple[str, str]]:
    """The notes recorded since the last call, in order; forgets them."""
    found = list(_NOTES)
    del _NOTES[:]
    return found
