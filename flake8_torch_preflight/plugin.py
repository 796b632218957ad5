"""flake8 entry points: one thin class per code, all reading one shared analysis.

Each class is constructed by flake8 once per file with the same ``tree``; the
first one to run analyses the file (``_findings``) and every
class then yields only its own code's findings.  Only ``TPV001Checker``
registers options: flake8 calls ``add_options`` on every plugin class.
"""
from __future__ import annotations

import ast
from typing import Any, ClassVar, Dict, Generator, List, Optional, Sequence, Tuple

from . import __version__, options
from .settings import SETTINGS

Result = Tuple[int, int, str, type]


class _Entry:
    name = "flake8-torch-preflight"
    version = __version__
    code: ClassVar[str]

    def __init__(self, tree: ast.AST, filename: str = "stdin", lines: Optional[Sequence[str]] = None) -> None:
        self.tree = tree
        self.filename = filename
        self.lines: List[str] = list(lines) if lines is not None else []

    def run(self) -> Generator[Result, None, None]:
        if SETTINGS.selected is not None and self.code not in SETTINGS.selected:
            return  # flake8 runs every plugin; without a TP code selected, astroid is never imported
        for line, col, message in _findings(self.tree, self.filename, self.lines).get(self.code, []):
            yield line, col, message, type(self)


Findings = Dict[str, List[Tuple[int, int, str]]]
_last: Optional[Tuple[object, str, Findings]] = None


def _findings(tree: ast.AST, filename: str, lines: Sequence[str]) -> Findings:
    """Every selected code's findings for this file, analysed on the first class's request (flake8
    hands all of them the same ``tree``): by the analysis server with ``--tp-server`` and one file,
    else (or when no server answers) by the engine in this process."""
    global _last
    if _last is None or _last[0] is not tree or _last[1] != filename:
        found = None
        if SETTINGS.server:
            from .server import ask

            found = ask(filename, lines, SETTINGS)
        if found is None:
            from .engine import analyse_file

            found = analyse_file(filename, lines, SETTINGS, tree)
        _last = (tree, filename, found)
    return _last[2]


class TP001Checker(_Entry):
    code = "TP001"


class TP002Checker(_Entry):
    code = "TP002"


class TP003Checker(_Entry):
    code = "TP003"


class TP004Checker(_Entry):
    code = "TP004"


class TP005Checker(_Entry):
    code = "TP005"


class TP006Checker(_Entry):
    code = "TP006"


class TP007Checker(_Entry):
    code = "TP007"


class TP008Checker(_Entry):
    code = "TP008"


class TP009Checker(_Entry):
    code = "TP009"


class TP010Checker(_Entry):
    code = "TP010"


class TP011Checker(_Entry):
    code = "TP011"


class TP012Checker(_Entry):
    code = "TP012"


class TP013Checker(_Entry):
    code = "TP013"


class TPV001Checker(_Entry):
    code = "TPV001"

    @staticmethod
    def add_options(option_manager: Any) -> None:
        options.add_options(option_manager)

    @staticmethod
    def parse_options(parsed: Any) -> None:
        options.parse_options(parsed)


ENTRY_CLASSES = (
    TP001Checker, TP002Checker, TP003Checker, TP004Checker, TP005Checker, TP006Checker, TP007Checker,
    TP008Checker, TP009Checker, TP010Checker, TP011Checker, TP012Checker, TP013Checker, TPV001Checker,
)
