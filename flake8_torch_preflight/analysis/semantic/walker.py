"""One walk over the astroid tree, dispatching each node to every rule.

A rule defines ``visit_<node class in lower case>`` and/or ``leave_<...>``
methods (pylint's spelling: ``visit_call``, ``leave_for``, ``leave_module``).
An exception inside one rule disables that rule for the file (its findings are
dropped and the error is reported by the caller); the other rules go on.
"""
from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional, Protocol, Tuple

from astroid import nodes


class Rule(Protocol):
    """What the walker needs of a rule (the rules package defines the real base class)."""

    code: str


Handler = Callable[[nodes.NodeNG], None]


class BudgetExceeded(BaseException):
    """Raised when a file's analysis runs past its time budget.

    A BaseException so that no ``except Exception`` inside astroid swallows it.
    """


def _handlers(rules: "List[Rule]", prefix: str) -> Dict[str, List[Tuple["Rule", Handler]]]:
    table: Dict[str, List[Tuple["Rule", Handler]]] = {}
    for rule in rules:
        for attr in dir(rule):
            if attr.startswith(prefix):
                table.setdefault(attr[len(prefix):], []).append((rule, getattr(rule, attr)))
    return table


def walk(
    module: nodes.Module,
    rules: "List[Rule]",
    failures: "Dict[str, BaseException]",
    deadline: Optional[float] = None,
) -> None:
    """Visit every node once, calling each live rule's handlers.

    ``failures`` receives ``code -> exception`` for rules that raised; such a
    rule gets no further calls.  ``deadline`` (a ``time.process_time()`` value) is
    checked every few hundred nodes, for platforms without SIGPROF.
    """
    enter = _handlers(rules, "visit_")
    leave = _handlers(rules, "leave_")

    def call(table: Dict[str, List[Tuple["Rule", Handler]]], node: nodes.NodeNG) -> None:
        for rule, handler in table.get(type(node).__name__.lower(), ()):
            if rule.code in failures:
                continue
            try:
                handler(node)
            except Exception as exc:  # one rule's bug (RecursionError included) must not stop the others
                failures[rule.code] = exc

    count = 0
    stack: List[Tuple[nodes.NodeNG, bool]] = [(module, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            call(leave, node)
            continue
        count += 1
        if deadline is not None and count % 256 == 0 and time.process_time() > deadline:
            raise BudgetExceeded()
        call(enter, node)
        stack.append((node, True))
        children = list(node.get_children())
        stack.extend((child, False) for child in reversed(children))
