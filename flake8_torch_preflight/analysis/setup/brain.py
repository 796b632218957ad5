"""Install the packaged torch stubs into astroid and guard module lookup.

``torch`` and every ``torch.*`` module resolve only to the stubs shipped in
``flake8_torch_preflight/stubs``; a ``torch.*`` name without a stub is an import
error (so it infers as Uninferable).  Other modules are read only from a few
small standard-library modules (``STDLIB_READ``) and from the checked file's
own folder tree, at most ``MAX_PROJECT_MODULES`` per file and none larger than
``MAX_PROJECT_MODULE_BYTES``; installed packages, parent folders and the rest of
the standard library are refused, so results never depend on what is installed
and a large project is never parsed whole.

A file's findings depend only on that file and the project modules it reads, never on the files
checked before it in the same process (``begin_file`` / ``end_file``):

* the project modules read for a file are dropped from astroid's cache when the file ends, so each
  file reads them afresh, under its own count of project modules;
* astroid records an assignment to an attribute (``torch.nn.Linear = MyLinear``, ``t.flag = 1`` on
  a tensor, ``nn.Module.register_buffer = f``) in the module or class the target infers to, which may
  be a torch stub or a standard-library module that outlives the file; those records are undone when
  the file ends (``_guarded_delayed_assattr``).

Nothing here imports torch.  ``install()`` is idempotent and cheap after the
first call.
"""
from __future__ import annotations

import functools
import os
from importlib import resources
from typing import Any, Dict, List, Optional, Set, Tuple

from astroid import modutils
from astroid.builder import AstroidBuilder
from astroid.exceptions import InferenceError
from astroid.exceptions import AstroidImportError
from astroid.manager import AstroidManager
from astroid.nodes import Module

from ..semantic import lookups, project

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
    "torch.random": "torch/random.pyi",
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
#: ``infer.dotted_name``).  Parsing typing, argparse, re, functools, logging and os is most of
#: a process's start-up and inference through them a large share of each file's time, and
#: refusing them changed no finding over the ten scanned training repositories
#: (``benchmarks/scan.py``).  Kept: ``builtins`` (astroid needs
#: it), ``collections`` (astroid's namedtuple inference, which runs while it builds a subclass of
#: a ``typing.NamedTuple`` class, asserts without it; ``OrderedDict`` of ``nn.Sequential``),
#: ``copy`` (``deepcopy`` of layers), ``contextlib`` (``nullcontext`` beside ``autocast``) and
#: ``math``: small modules that the analyses read values through.
STDLIB_READ = frozenset({"builtins", "collections", "_collections_abc", "copy", "contextlib", "math"})

_STUBS: Dict[str, Module] = {}
_ORIGINAL: Optional[Any] = None
_ORIGINAL_ASSATTR: Optional[Any] = None
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

#: Project modules larger than this (bytes of source) are not read: inference through a name
#: imported from one is unknown, and the importing file keeps every other finding.  astroid's time
#: and memory grow with the source it reads, so a multi-megabyte sibling would cost its importer
#: the whole time budget; the largest module of the ten scanned training repositories is 331 kB,
#: most model files are under 200 kB.
MAX_PROJECT_MODULE_BYTES = 512 * 1024

_project_reads: Set[str] = set()
_current_dir: str = ""
#: (dict, attribute name, AssignAttr) for each assignment of the checked file (or a project module
#: read for it) that astroid recorded in a module or class outside that file; undone by ``end_file``.
_foreign_assignments: List[Tuple[Dict[str, List[Any]], str, Any]] = []


def begin_file(filename: str) -> None:
    """Start a file: reset the count of project modules read and remember the file's folder.

    astroid's ``Module.import_module`` asks for modules without a context file, so the folder of
    the file being checked is what sibling imports are resolved against (as ``python script.py``
    would), wherever flake8 was started from."""
    global _current_dir
    _project_reads.clear()
    _current_dir = os.path.dirname(os.path.abspath(filename)) if filename and filename != "stdin" else ""


def end_file() -> None:
    """Leave astroid's cache as the next file must find it, whatever this file did.

    * The assignments of this file recorded in modules that outlive it are undone (see
      ``_guarded_delayed_assattr``).
    * The project modules read for this file, and the checked module itself, leave the cache:
      the next file reads the ones it imports afresh (a module built for one file reflects what
      that file's count of project modules allowed; served to the next file it would make that
      file's findings depend on the order of the files).  What stays is the torch stubs and the
      standard-library modules of ``STDLIB_READ``, which depend on nothing else.
    * Every cached module is detached from the file: astroid's transforms of builtin calls give a
      result that has no parent the call as its parent (``getattr(torch, name, torch.cuda)`` infers
      to the ``torch.cuda`` stub, which then names that call its parent for good); its ``root()``
      would then be the old file for every later file, which would stay in memory."""
    while _foreign_assignments:
        iattrs, name, node = _foreign_assignments.pop()
        values = iattrs.get(name)
        if values is None:
            continue
        kept = [value for value in values if value is not node]
        if kept:
            values[:] = kept
        else:
            del iattrs[name]
    cache = AstroidManager().astroid_cache
    stubs = set(map(id, _STUBS.values()))
    for modname, module in list(cache.items()):
        if id(module) not in stubs and not _lasting(modname):
            del cache[modname]
        elif module.parent is not None:
            module.parent = None


def _lasting(modname: str) -> bool:
    """A module that stays in astroid's cache from file to file: ``builtins`` and the other
    standard-library modules astroid may read (they depend on nothing a checked file has)."""
    top = modname.split(".")[0]
    return top in STDLIB_READ or modutils.is_stdlib_module(top)


def _outside_project(modname: str, context_dir: str) -> Optional[bool]:
    """None for the standard-library modules of ``STDLIB_READ``; True when ``modname`` is another
    standard-library module, lives outside the checked file's folder tree (an installed
    distribution, a parent folder) or is not found at all; False for the user's own modules below it."""
    return _locate(modname, context_dir)[0]


@functools.lru_cache(maxsize=4096)
def _locate(modname: str, context_dir: str) -> Tuple[Optional[bool], str]:
    """(``_outside_project``'s answer, the module's source file for a project module, else "")."""
    top = modname.split(".")[0]
    if modutils.is_stdlib_module(top):
        return (None if top in STDLIB_READ else True), ""
    try:
        spec = modutils.file_info_from_modpath(
            modname.split("."), context_file=os.path.join(context_dir, "__init__.py") if context_dir else None
        )
    except Exception:  # not found for this file: refused, so that astroid's cache never serves
        return True, ""  # a same-named module read for a file of another folder
    location = getattr(spec, "location", None) or ""
    if not location and spec.type == modutils.spec.ModuleType.PY_NAMESPACE:
        folders = list(getattr(spec, "submodule_search_locations", None) or ())
        if context_dir and len(folders) == 1 and _below(folders[0], context_dir) and _holds_python(folders[0]):
            return False, ""  # a folder of the project's modules with no __init__.py (PEP 420): ``models/``
    if not location or not context_dir or any(marker in location for marker in _THIRD_PARTY_MARKERS):
        return True, ""
    if not _below(location, context_dir):
        return True, ""
    if os.path.isdir(location):
        location = os.path.join(location, "__init__.py")
    return False, os.path.abspath(location)


def _holds_python(folder: str) -> bool:
    """``folder`` or one of its subfolders holds a ``.py`` file: a package of code, not of data or configs."""
    try:
        for entry in os.scandir(folder):
            if entry.is_file() and entry.name.endswith(".py"):
                return True
            if entry.is_dir() and any(name.endswith(".py") for name in os.listdir(entry.path)):
                return True
    except OSError:
        return False
    return False


def _import_base(modname: str, context_dir: str) -> str:
    """Where an absolute import of ``modname`` is resolved: the importing file's folder, or, for a
    module of that same folder named by its full path from a marked folder above it (``from
    trainer.utils.fid.inception import InceptionV3`` in ``trainer/utils/fid/score.py``, run from the
    repository's root), that marked folder.  Other imports from the root are not followed this way:
    reading every package module a file imports costs more than the per-file budget allows."""
    if not context_dir or modname.startswith("."):
        return context_dir
    outside, location = _locate(modname, context_dir)
    if location or outside is None:
        return context_dir  # found beside the file, or a standard-library module read from its stub
    for root in project.marked_roots(context_dir):
        if root == context_dir or not _below(context_dir, root):
            continue
        package = os.path.relpath(context_dir, root).replace(os.sep, ".")
        if modname.startswith(package + ".") and "." not in modname[len(package) + 1:]:
            return root if _locate(modname, root)[1] else context_dir
    return context_dir


def _too_large(location: str) -> bool:
    try:
        return os.path.getsize(location) > MAX_PROJECT_MODULE_BYTES
    except OSError:
        return False


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
    file (found below its folder, or a module of its folder named by its full path from the marked
    root above it: ``_import_base``); False for torch, the standard library, installed packages and
    modules that are not found."""
    top = modname.split(".")[0]
    if not top or top == "torch":
        return False
    if _outside_project(top, _current_dir) is False:
        return True
    base = _import_base(modname, _current_dir)  # a module of the file's own folder named from the root
    return base != _current_dir and _locate(modname, base)[0] is False


def _refused(modname: str, context_dir: str) -> bool:
    outside, location = _locate(modname, context_dir)
    if outside is None:
        return False
    if outside or _too_large(location):
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
        context_dir = _import_base(modname, context_dir)
        if top == "builtins" and modname != "builtins":
            # astroid first tries an import inside builtins as relative to it ("builtins.io" for
            # the ``io`` behind ``open``); builtins is no package, so that is ``io`` itself.
            if _refused(modname[len("builtins."):], context_dir):
                raise AstroidImportError("module {modname} is not read (not stdlib, not a sibling)", modname=modname)
        if _refused(modname, context_dir):
            raise AstroidImportError("module {modname} is not read (not stdlib, not a sibling)", modname=modname)
        outside, location = _locate(modname, context_dir)
        if outside is False:
            cached = self.astroid_cache.get(modname)
            if cached is not None and location and os.path.abspath(getattr(cached, "file", None) or "") != location:
                del self.astroid_cache[modname]  # the same name in another project folder: read this one
            if context_file is None and context_dir:
                context_file = os.path.join(context_dir, "__init__.py")
    assert _ORIGINAL is not None
    return _ORIGINAL(self, modname, context_file, use_cache)  # type: ignore[no-any-return]


def _below(path: str, folder: str) -> bool:
    return bool(path) and bool(folder) and os.path.abspath(path).startswith(os.path.abspath(folder) + os.sep)


def _guarded_delayed_assattr(self: AstroidBuilder, node: Any) -> None:
    """astroid's ``delayed_assattr`` (run while a module is built: it records ``x.attr = value`` in
    the locals or instance attributes of what ``x`` infers to), with every record made outside the
    module being built remembered, so that ``end_file`` can undo it.  Without this, a checked file's
    ``torch.nn.Linear = MyLinear`` stayed in the shared ``torch.nn`` stub: every later file of the
    process saw two values for ``nn.Linear`` and lost its TP009, TP006 or TPV001 findings."""
    assert _ORIGINAL_ASSATTR is not None
    _ORIGINAL_ASSATTR(self, node)
    built = node.root()
    try:
        targets = list(node.expr.infer())  # astroid's inference cache answers: the same values
    except (InferenceError, RecursionError):
        return
    seen: Set[int] = set()
    for target in targets:
        owner = getattr(target, "_proxied", target)
        for candidate in (owner, target):
            try:
                if candidate.root() is built:
                    continue
            except Exception:  # Uninferable and other values without a tree
                continue
            for attrs in (getattr(candidate, "instance_attrs", None), getattr(candidate, "locals", None)):
                if isinstance(attrs, dict) and id(attrs) not in seen:
                    seen.add(id(attrs))
                    if any(value is node for value in attrs.get(node.attrname, ())):
                        _foreign_assignments.append((attrs, node.attrname, node))


def install() -> None:
    """Route ``torch*`` imports to the stubs (each built on first use) and keep a checked file's
    assignments out of the modules that outlive it.  Safe to call often."""
    global _ORIGINAL, _ORIGINAL_ASSATTR
    manager = AstroidManager()
    if _ORIGINAL is None:
        _ORIGINAL = AstroidManager.ast_from_module_name
        AstroidManager.ast_from_module_name = _guarded_ast_from_module_name  # type: ignore[method-assign]
    if _ORIGINAL_ASSATTR is None:
        _ORIGINAL_ASSATTR = AstroidBuilder.delayed_assattr
        AstroidBuilder.delayed_assattr = _guarded_delayed_assattr  # type: ignore[method-assign]
    lookups.install()
    for modname, module in _STUBS.items():
        manager.astroid_cache.setdefault(modname, module)


def build_all_stubs() -> None:
    """Build every stub module now rather than on first use (for a process that analyses many
    files: the analysis server)."""
    manager = AstroidManager()
    for modname in _STUB_FILES:
        module = _stub(modname)
        if module is not None:
            manager.astroid_cache.setdefault(modname, module)


def stub_module(modname: str) -> Optional[Module]:
    """The stub module for ``modname``, or None."""
    return _stub(modname)
