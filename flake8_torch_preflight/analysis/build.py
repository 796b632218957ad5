"""What one file's analysis starts from: the cheap gate, the astroid build, settings, context.

``engine.py`` (above the rules) runs the rules over the module built here;
nothing in ``analysis`` imports a rule.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Sequence

from astroid import nodes
from astroid.builder import AstroidBuilder
from astroid.manager import AstroidManager

from ..settings import SETTINGS, Settings
from . import brain

__all__ = ["SETTINGS", "Settings", "FileContext", "build_module", "worth_analysing"]

#: Text that makes a file worth an astroid build: it names torch or a torch framework.
TORCH_MARKERS = re.compile(r"torch|lightning|transformers|accelerate|timm|deepspeed")

#: A file that never names torch is still checked when it looks like a training helper that only
#: *receives* tensors: it calls ``.backward(`` and steps or zeroes an optimizer.  (``turtle.py``
#: has ``.backward(`` alone and is skipped.)
HELPER_MARKERS = (re.compile(r"\.backward\("), re.compile(r"zero_grad|\.step\(|optimi[sz]er"))


def worth_analysing(source: str) -> bool:
    """The cheap gate run before any astroid work."""
    if TORCH_MARKERS.search(source):
        return True
    return all(marker.search(source) for marker in HELPER_MARKERS)


#: Private module name for checked files; ``string_build`` caches only the
#: first module of a name, so the astroid cache does not grow per file.
_MODNAME = "__tp_preflight_checked__"


@dataclass
class FileContext:
    """What every rule sees for one file."""

    module: nodes.Module
    filename: str
    lines: Sequence[str]
    settings: Settings
    #: Memo shared by the analysis helpers for this file only.
    memo: Dict[str, Any] = field(default_factory=dict)


def build_module(source: str, path: str) -> nodes.Module:
    """The astroid module of one file's source, built as the plugin builds it: stubs installed,
    the private module name, ``path`` as its file (so sibling modules resolve beside it).

    Raises ``AstroidSyntaxError`` (and ``RecursionError`` on pathologically long expressions).
    """
    brain.install()
    return AstroidBuilder(AstroidManager()).string_build(source, _MODNAME, path)
