"""What one file's analysis starts from: the cheap gate, the astroid build, settings, context.

``engine.py`` (above the rules) runs the rules over the module built here;
nothing in ``analysis`` imports a rule.
"""
from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, Sequence

from astroid import builder as astroid_builder
from astroid import nodes
from astroid.builder import AstroidBuilder
from astroid.manager import AstroidManager

from ...settings import SETTINGS, Settings
from . import brain
from ..semantic import depth

__all__ = ["SETTINGS", "Settings", "FileContext", "build_module", "worth_analysing"]

#: Text that makes a file worth an astroid build: it names torch or a torch framework.
TORCH_MARKERS = re.compile(r"torch|lightning|transformers|accelerate|timm|deepspeed")

#: A file that never names torch is still checked when it looks like a training helper that only
#: *receives* tensors: it calls ``.backward(`` and steps or zeroes an optimizer.  (``turtle.py``
#: has ``.backward(`` alone and is skipped.)
HELPER_MARKERS = (re.compile(r"\.backward\("), re.compile(r"zero_grad|\.step\(|optimi[sz]er"))

#: Or when it switches a model it receives between its modes: a trainer module whose backward runs in
#: another module (a loss helper) still validates with ``model.eval()`` and goes back with ``.train()``.
MODE_MARKERS = (re.compile(r"\.eval\(\)"), re.compile(r"\.train\(\)"))

#: Or when it is an entry script handing its run to the project's modules (``Runner(cfg).train()`` under
#: ``if __name__ == "__main__":``): the run's draws and seeds are read where that code lives.
ENTRY_MARKERS = (re.compile(r"\.(?:train|fit)\("), re.compile(r"__main__"))


#: A file that imports another deep-learning framework and imports neither torch nor a torch framework
#: is that framework's code (a PaddlePaddle port beside the torch version: ``optimizer.clear_grad()`` is
#: its ``zero_grad()``), even where a comment links to the PyTorch docs.
OTHER_FRAMEWORKS = re.compile(
    r"(?m)^[ \t]*(?:import|from)[ \t]+(?:paddle|tensorflow|jax|flax|mindspore|oneflow|mxnet|megengine|jittor)\b"
)
TORCH_IMPORTS = re.compile(
    r"(?m)^[ \t]*(?:import|from)[ \t]+"
    r"(?:torch|lightning|pytorch_lightning|transformers|accelerate|timm|deepspeed|peft|trl|torchvision)\b"
)


def worth_analysing(source: str) -> bool:
    """The cheap gate run before any astroid work."""
    if OTHER_FRAMEWORKS.search(source) and not TORCH_IMPORTS.search(source):
        return False
    if TORCH_MARKERS.search(source):
        return True
    return any(
        all(marker.search(source) for marker in markers) for markers in (HELPER_MARKERS, MODE_MARKERS, ENTRY_MARKERS)
    )


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


def build_module(source: str, path: str, tree: object = None) -> nodes.Module:
    """The astroid module of one file's source, built as the plugin builds it: stubs installed,
    the private module name, ``path`` as its file (so sibling modules resolve beside it).

    ``tree``, when it is an ``ast.Module`` (flake8's, parsed from the same source), is what astroid
    rebuilds its nodes from instead of parsing the source a second time.

    A tree nested too deep for astroid's recursive walks is built from a copy with its deepest
    parts cut (``analysis.semantic.depth``), so that the rest of the file is analysed as usual.

    Raises ``AstroidSyntaxError``.
    """
    brain.install()
    builder = AstroidBuilder(AstroidManager())
    if not isinstance(tree, ast.Module):
        try:  # parsed here once, the way astroid parses (type comments kept), for the depth check too
            tree = ast.parse(source + "\n", type_comments=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None  # astroid reports it as it parses
    if tree is not None and depth.too_deep(tree):
        tree = depth.bounded(tree)  # a copy: flake8's tree is every plugin's
    if tree is None:
        return builder.string_build(source, _MODNAME, path)
    with _parsed_as(tree):
        return builder.string_build(source, _MODNAME, path)


@contextlib.contextmanager
def _parsed_as(tree: ast.Module) -> Iterator[None]:
    """Make astroid's next parse (``astroid.builder._parse_string``, which ``string_build``
    calls before anything else) hand back ``tree``, once: modules that inference reads while
    the transforms run are parsed as usual. Its result is ``node`` in astroid 4 and
    ``(node, parser_module)`` in astroid 3; the original runs on an empty source to get the
    shape and the parser module of this astroid."""
    original = astroid_builder._parse_string

    def parsed(data: str, *args: Any, **kwargs: Any) -> Any:
        astroid_builder._parse_string = original
        shape = original("", *args, **kwargs)
        return (tree, shape[1]) if isinstance(shape, tuple) else tree

    astroid_builder._parse_string = parsed
    try:
        yield
    finally:
        astroid_builder._parse_string = original
