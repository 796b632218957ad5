"""Rule base class, the registry, and the Finding record."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, NamedTuple, Optional, Pattern, Type, TypeVar

if TYPE_CHECKING:
    from astroid import nodes

    from ..analysis.build import FileContext


class Finding(NamedTuple):
    """One result: 1-based line, 0-based column (flake8 adds 1 when printing)."""

    line: int
    col: int
    message: str


class Rule:
    """Base of every rule: declares its code, slug, message and rationale.

    ``message`` is the text after the code: one sentence naming the bug and what
    it costs, then the fix.  It may hold ``{name}`` fields filled by ``report``.
    """

    code: ClassVar[str]
    slug: ClassVar[str]
    message: ClassVar[str]
    rationale: ClassVar[str]
    #: Text a file must contain for the rule to look at it at all (a cheap gate
    #: before any astroid work); None = every torch file.
    requires: ClassVar[Optional[Pattern[str]]] = None

    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self.findings: List[Finding] = []

    def report(self, node: "nodes.NodeNG", **fields: Any) -> None:
        text = self.message.format(**fields) if fields else self.message
        line = getattr(node, "lineno", None) or 1
        col = getattr(node, "col_offset", None) or 0
        self.findings.append(Finding(line, col, "{} {}".format(self.code, text)))


def text_gate(pattern: str) -> Pattern[str]:
    """Compile a rule's ``requires`` gate."""
    return re.compile(pattern)


REGISTRY: Dict[str, Type[Rule]] = {}
R = TypeVar("R", bound=Type[Rule])


def register(cls: R) -> R:
    """Class decorator adding a rule to ``REGISTRY``; a second rule with the same code raises."""
    if cls.code in REGISTRY:
        raise ValueError("duplicate rule code {}".format(cls.code))
    REGISTRY[cls.code] = cls
    return cls
