"""Install the packaged torch stubs into astroid and guard module lookup.

``torch`` and every ``torch.*`` module resolve only to the stubs shipped in
``flake8_torch_preflight/stubs``; a ``torch.*`` name without a stub is an import
error (so it infers as Uninferable).  Other modules are read only from a few
small standard-library modules (``STDLIB_READ``) and from the checked file's
own folder tree, at most ``MAX_PROJECT_MODULES`` per file; installed packages,
parent folders and the rest of the standard library are refused, so results
never depend on what is installed and a large project is never parsed whole.

Nothing here imports torch.  ``install()`` is idempotent and cheap after the
first call.
"""
from __future__ import annotations

import functools
import os
from importlib import resources
from typing import Any, Dict, Optional, Set

from astroid import modutils
from astroid.builder import AstroidBuilder
from astroid.exceptions import AstroidImportError
from astroid.manager import AstroidManager
from astroid.nodes import Module

#: Module name of every stub file, relative to ``stubs/``.
_STUB_FILES = {
    "torch": "torch/__init__.pyi",
    "torch.nn": "torch/nn/__init__.pyi",
    "torch.nn.functional": "torch/nn/functional.pyi",
    "torch.nn.utils": "torch/nn/utils.pyi",
    "torch.nn.init": "torch/nn/init.pyi",
    "torch.nn.parallel": "torch/nn/parallel.pyi",
    "torch.optim": "torch/optim/__init__.pyi",
    "torch.optim.lr_scheduler": "torch/optim/lr_scheduler.pyi",
    "torch.utils": "torch/utils/__init__.pyi",
    "torch.utils.checkpoint": "torch/utils/checkpoint.pyi",
    "torch.utils.data": "torch/utils/data/__init__.pyi",
    "torch.utils.data.distributed": "torch/utils/data/distributed.pyi",
    "torch.amp": "torch/amp.pyi",
    "torch.cuda": "torch/cuda/__init__.pyi",
    "torch.cuda.amp": "torch/cuda/amp.pyi",
    "torch.autograd": "torch/autograd.pyi",
    "torch.distributed": "torch/distributed/__init__.pyi",
    "torch.distributed.fsdp": "torch/distributed/fsdp.pyi",
    "torch.distributed.optim": "torch/distributed/optim.pyi",
    "torch.distributed.autograd": "torch/distributed/autograd.pyi",
}

#: The standard-library modules astroid may read; every other one is refused like an installed
#: package (inference answers "unknown"; a name bound by its import still resolves through
#: ``infer.dotted_name``).  Measured with astroid 4.3.4 on Python 3.11 (benchmarks/bench.py,
#: benchmarks/scan.py): parsing typing, argparse, re, functools, logging and os cost ~1 s per
#: process, inference through them was a fifth of the per-file time, and refusing them changed
#: no finding over 2,090 files of 10 training repositories.  Kept: ``builtins`` (astroid needs
#: it), ``collections`` (astroid's namedtuple inference, which runs while it builds a subclass of
#: a ``typing.NamedTuple`` class, asserts without it; ``OrderedDict`` of ``nn.Sequential``),
#: ``copy`` (``deepcopy`` of layers), ``contextlib`` (``nullcontext`` beside ``autocast``) and
#: ``math``: small modules that the analyses read values through.
STDLIB_READ = frozenset({"builtins", "collections", "_collections_abc", "copy", "contextlib", "math"})

_STUBS: Dict[str, Module] = {}
_ORIGINAL: Optional[Any] = None
_THIRD_PARTY_MARKERS = ("site-packages", "dist-packages")


def stub_root_path() -> str:
    """Folder holding the stub files (used by tests to check where nodes come from)."""
    return str(resources.files("flake8_torch_preflight") / "stubs")


def _read_stub(relpath: str) -> str:
    node = resources.files("flake8_torch_preflight") / "stubs"
    for part in relpath.split("/"):
        node = node / part
    return node.read_text(encoding="utf-8")


def _stub(modname: str) -> Optional[Module]:
    """The stub module for ``modname``, built on first use (a file that never reaches
    ``torch.distributed`` never pays for parsing it); None when there is no stub of that name."""
    module = _STUBS.get(modname)
    if module is None and modname in _STUB_FILES:
        manager = AstroidManager()
        manager.astroid_cache.pop(modname, None)
        relpath = _STUB_FILES[modname]
        # A path that does not end in __init__ keeps the stub a plain module;
        # submodules are bound explicitly by ``import torch.x as x`` lines.
        path = os.path.join(stub_root_path(), relpath.replace("/", os.sep))
        module = AstroidBuilder(manager).string_build(_read_stub(relpath), modname, path)
        _STUBS[modname] = module
    return module


#: Project modules (outside the standard library) read per analysed file; past this, further
#: ones are refused.  timm's own ``benchmark.py`` pulled ~150 timm modules through ``import timm``
#: before this cap and took 10 s; training scripts that import a model from a sibling file need 1-3.
MAX_PROJECT_MODULES = 8

_project_reads: Set[str] = set()
_current_dir: str = ""


def begin_file(filename: str) -> None:
    """Start a file: reset the count of project modules read and remember the file's folder.

    astroid's ``Module.import_module`` asks for modules without a context file, so the folder of
    the file being checked is what sibling imports are resolved against (as ``python script.py``
    would), wherever flake8 was started from."""
    global _current_dir
    _project_reads.clear()
    _current_dir = os.path.dirname(os.path.abspath(filename)) if filename and filename != "stdin" else ""


def end_file() -> None:
    """Detach every cached module from the file just checked.

    astroid's transforms of builtin calls give a result that has no parent the call as its parent:
    ``getattr(torch, name, torch.cuda)`` infers to the ``torch.cuda`` stub, which then names that
    call its parent for good.  Its ``root()`` would then be the old file for every later file (and
    that file would stay in memory); a module has no parent, so the link is cut here."""
    for module in list(AstroidManager().astroid_cache.values()):
        if module.parent is not None:
            module.parent = None


@functools.lru_cache(maxsize=4096)
def _outside_project(modname: str, context_dir: str) -> Optional[bool]:
    """None for the standard-library modules of ``STDLIB_READ``; True when ``modname`` is another
    standard-library module, lives outside the checked file's folder tree (an installed
    distribution, a parent folder) or is not found at all; False for the user's own modules below it."""
    top = modname.split(".")[0]
    if modutils.is_stdlib_module(top):
        return None if top in STDLIB_READ else True
    try:
        spec = modutils.file_info_from_modpath(
            modname.split("."), context_file=os.path.join(context_dir, "__init__.py") if context_dir else None
        )
    except Exception:  # not found for this file: refused, so that astroid's cache never serves
        return True  # a same-named module read for a file of another folder
    location = getattr(spec, "location", None) or ""
    if not location or not context_dir or any(marker in location for marker in _THIRD_PARTY_MARKERS):
        return True
    return not _below(location, context_dir)


def never_read(modname: str) -> bool:
    """True when astroid is never given ``modname`` while checking the current file (an installed
    package, a standard-library module outside ``STDLIB_READ``, a module not found for the file):
    inference through a name imported from it is always unknown, so callers may skip asking."""
    top = modname.split(".")[0]
    if not top or top == "torch":
        return False
    return _outside_project(top, _current_dir) is True


def project_module(modname: str) -> bool:
    """True when ``modname`` is one of the user's own modules that astroid may read for the current
    file (found below its folder); False for torch, the standard library, installed packages and
    modules that are not found."""
    top = modname.split(".")[0]
    return bool(top) and top != "torch" and _outside_project(top, _current_dir) is False


def _refused(modname: str, context_dir: str) -> bool:
    outside = _outside_project(modname, context_dir)
    if outside is None:
        return False
    if outside:
        return True
    if modname not in _project_reads and len(_project_reads) >= MAX_PROJECT_MODULES:
        return True
    _project_reads.add(modname)
    return False


def _guarded_ast_from_module_name(
    self: AstroidManager, modname: Optional[str], context_file: Optional[str] = None, use_cache: bool = True
) -> Module:
    if modname:
        top = modname.split(".")[0]
        if top == "torch":
            stub = _stub(modname)
            if stub is None:
                raise AstroidImportError("no torch stub for {modname}", modname=modname)
            return stub
        context_dir = os.path.dirname(context_file) if context_file else _current_dir
        if top == "builtins" and modname != "builtins":
            # astroid first tries an import inside builtins as relative to it ("builtins.io" for
            # the ``io`` behind ``open``); builtins is no package, so that is ``io`` itself.
            if _refused(modname[len("builtins."):], context_dir):
                raise AstroidImportError("module {modname} is not read (not stdlib, not a sibling)", modname=modname)
        if _refused(modname, context_dir):
            raise AstroidImportError("module {modname} is not read (not stdlib, not a sibling)", modname=modname)
        if _outside_project(modname, context_dir) is False:
            cached = self.astroid_cache.get(modname)
            if cached is not None and not _below(getattr(cached, "file", None) or "", context_dir):
                del self.astroid_cache[modname]  # the same name in another project folder: read this one
            if context_file is None and context_dir:
                context_file = os.path.join(context_dir, "__init__.py")
    assert _ORIGINAL is not None
    return _ORIGINAL(self, modname, context_file, use_cache)  # type: ignore[no-any-return]


def _below(path: str, folder: str) -> bool:
    return bool(path) and bool(folder) and os.path.abspath(path).startswith(os.path.abspath(folder) + os.sep)


def install() -> None:
    """Route ``torch*`` imports to the stubs (each built on first use).  Safe to call often."""
    global _ORIGINAL
    manager = AstroidManager()
    if _ORIGINAL is None:
        _ORIGINAL = AstroidManager.ast_from_module_name
        AstroidManager.ast_from_module_name = _guarded_ast_from_module_name  # type: ignore[method-assign]
    for modname, module in _STUBS.items():
        manager.astroid_cache.setdefault(modname, module)


def stub_module(modname: str) -> Optional[Module]:
    """The stub module for ``modname``, or None."""
    return _stub(modname)
