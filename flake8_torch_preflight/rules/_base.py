"""Rule base class, the registry, and the Finding record."""
from __future__ import annotations

import re
from typing import (
    TYPE_CHECKING, Any, ClassVar, Dict, List, NamedTuple, Optional, Pattern, Sequence, Tuple, Type, TypeVar,
)

if TYPE_CHECKING:
    from astroid import nodes

    from ..analysis.setup.build import FileContext


class Finding(NamedTuple):
    """One result: 1-based line, 0-based column (flake8 adds 1 when printing)."""

    line: int
    col: int
    message: str


class Rule:
    """Base of every rule: declares its code, slug, message and rationale.

    ``message`` is the text after the code: one short sentence naming the bug, what it costs and
    the fix, at most ``MAX_MESSAGE`` characters once filled (INTERFACE.md).  It may hold ``{name}``
    fields filled by ``report``; those named in ``quoted`` hold source text, which ``report``
    shortens (the longest first, ending in "...") when the filled message would be too long.
    The long form is ``rationale`` (what it catches and why it costs), ``leaves_alone`` (what the
    rule deliberately does not report) and ``configure``, read by ``explain`` and the docs.
    """

    code: ClassVar[str]
    slug: ClassVar[str]
    message: ClassVar[str]
    rationale: ClassVar[str]
    leaves_alone: ClassVar[str] = ""
    configure: ClassVar[str] = ""
    quoted: ClassVar[Tuple[str, ...]] = ()
    #: Text a file must contain for the rule to look at it at all (a cheap gate
    #: before any astroid work); None = every torch file.
    requires: ClassVar[Optional[Pattern[str]]] = None
    #: A finding inside a branch no run takes (``analysis.semantic.branches.reached_only_when_off``:
    #: ``if multi_class:`` where every call passes a flag the run fixes False) is not recorded.
    skips_branches_not_taken: ClassVar[bool] = False

    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self.findings: List[Finding] = []

    def report(self, node: "nodes.NodeNG", **fields: Any) -> None:
        """Record a finding on ``node``; one on a node of another module of the project (reached
        through a helper it defines) is left to that module, which reports it when it is checked."""
        module = getattr(self.ctx, "module", None)
        if module is not None and node.root() is not module:
            return
        from ..analysis.training import evaluation  # astroid only once a file is analysed

        if not evaluation.reported_code(node):
            return  # a test, a scratch copy, code an import stops: the project's policy for every code
        if self.skips_branches_not_taken:
            from ..analysis.semantic import branches

            if branches.reached_only_when_off(node):
                return
        text = fit_message(self.message, fields, self.quoted)
        line = getattr(node, "lineno", None) or 1
        col = getattr(node, "col_offset", None) or 0
        self.findings.append(Finding(line, col, "{} {}".format(self.code, text)))


#: Longest message after the code (INTERFACE.md): editors' problem panes and hovers cut longer ones.
MAX_MESSAGE = 120

#: Shortest a quoted expression is cut to before the message is left as it is.
_MIN_QUOTE = 8


def fit_message(template: str, fields: Dict[str, Any], quoted: Sequence[str] = ()) -> str:
    """``template`` filled with ``fields``; quoted source text is shortened until it fits."""
    values = {k: str(v) for k, v in fields.items()}
    text = template.format(**values) if values else template
    while len(text) > MAX_MESSAGE:
        longest = max((k for k in quoted if len(values.get(k, "")) > _MIN_QUOTE), key=lambda k: len(values[k]),
                      default=None)
        if longest is None:
            break
        value = values[longest]
        cut = max(_MIN_QUOTE - 3, len(value) - (len(text) - MAX_MESSAGE) - 3)
        values[longest] = value[:cut].rstrip() + "..."
        text = template.format(**values)
    return text


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
