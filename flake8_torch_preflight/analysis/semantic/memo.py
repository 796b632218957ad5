"""Memos keyed on astroid nodes (by identity), emptied when the checked file ends.

Helpers that scan a whole module once (its call sites by name, its aliases of ``cuda``, ...)
keep the answer in a table made here.  ``end_file`` empties every table, so nothing a table
holds outlives the file: a table whose values hold the module's own nodes (its calls, say)
would keep the module alive through a ``WeakKeyDictionary`` for ever, because the value
reaches its own key through the nodes' ``parent`` links.
"""
from __future__ import annotations

from typing import Any, Dict, List

__all__ = ["per_file", "end_file"]

_TABLES: List[Dict[Any, Any]] = []


def per_file() -> Dict[Any, Any]:
    """A new table for the checked file, keyed on nodes (astroid nodes hash by identity) or on
    tuples of them, emptied by ``end_file``."""
    table: Dict[Any, Any] = {}
    _TABLES.append(table)
    return table


def end_file() -> None:
    """Forget everything the tables hold (called by the engine after each file)."""
    for table in _TABLES:
        table.clear()
