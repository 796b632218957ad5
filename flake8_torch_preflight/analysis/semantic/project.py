"""The project around the checked file, read as text and parsed with ``ast``, never imported or run.

``project_root(path)`` finds the top of the project (a folder holding a ``ROOT_MARKERS`` file),
``project_files(root)`` walks its files (bounded by ``MAX_PROJECT_FILES``), ``source(path)`` reads
one (bounded by ``MAX_FILE_BYTES``, kept for the process by path, size and modification time), and
``external_calls(func)`` answers where other modules of the project call a function of the checked
file, and whether autograd is off at each of those calls.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from astroid import nodes

#: Files naming the top of a project; the folder tree above the checked file is searched for one.
ROOT_MARKERS = (".git", "setup.py", "setup.cfg", "pyproject.toml", "requirements.txt")

#: How many folders (the file's own and those above it) are searched for a root marker; without
#: one, the project is the folder above the file's folder.
MAX_ROOT_LEVELS = 4

#: Files looked at in a project, and how much of each is read; past either the answer is unknown.
MAX_PROJECT_FILES, MAX_FILE_BYTES = 3000, 1_000_000

#: Folders never part of the project's own source.
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "venv", "env"})

#: Context managers and decorators that turn autograd off (matched on the last part of the name).
GRAD_OFF = frozenset({"no_grad", "inference_mode"})


def project_root(path: str) -> str:
    """The nearest folder holding a ``ROOT_MARKERS`` file, among the file's folder and the
    ``MAX_ROOT_LEVELS - 1`` above it; else the folder above the file's folder."""
    folder = os.path.dirname(os.path.abspath(path))
    candidate = folder
    for _ in range(MAX_ROOT_LEVELS):
        if any(os.path.exists(os.path.join(candidate, marker)) for marker in ROOT_MARKERS):
            return candidate
        above = os.path.dirname(candidate)
        if above == candidate:
            break
        candidate = above
    return os.path.dirname(folder) or folder


_FILES: "Dict[str, Tuple[List[str], bool]]" = {}


def project_files(root: str) -> Iterator[Optional[str]]:
    """Paths of the project's files; a final None when there are more than ``MAX_PROJECT_FILES``.
    The listing is made once per root and process (a lint run sees one state of the tree)."""
    listed = _FILES.get(root)
    if listed is None:
        paths: List[str] = []
        over = False
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
            for filename in sorted(files):
                if len(paths) >= MAX_PROJECT_FILES:
                    over = True
                    break
                paths.append(os.path.join(folder, filename))
            if over:
                break
        listed = _FILES[root] = (paths, over)
    yield from listed[0]
    if listed[1]:
        yield None


def forget() -> None:
    """Drop the listings, sources and indexes kept for the process (a long-lived server between requests)."""
    _FILES.clear()
    _SOURCES.clear()
    _INDEXES.clear()


#: Files that make the project an installable package: its classes are an API that code outside it may call.
PACKAGE_MARKERS = ("setup.py", "setup.cfg", "pyproject.toml")


def packaged(path: str) -> bool:
    """The project of ``path`` is an installable package (``PACKAGE_MARKERS`` at its root)."""
    root = project_root(path)
    return any(os.path.exists(os.path.join(root, marker)) for marker in PACKAGE_MARKERS)


_SOURCES: "Dict[str, Tuple[Tuple[int, float], Optional[str]]]" = {}


def source(path: str) -> Optional[str]:
    """The text of a project file, or None when it cannot be read or is over ``MAX_FILE_BYTES``."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    key = (stat.st_size, stat.st_mtime)
    cached = _SOURCES.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    text: Optional[str] = None
    if stat.st_size <= MAX_FILE_BYTES:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            text = None
    _SOURCES[path] = (key, text)
    return text


class ExternalCall(NamedTuple):
    """A call of a function of the checked file made in another module of the project."""

    path: str
    line: int
    grad_off: bool  #: under ``with torch.no_grad()`` / ``inference_mode()``, or in a function decorated so


def external_calls(func: nodes.FunctionDef) -> Optional[List[ExternalCall]]:
    """The calls other modules of the project make of ``func``: of a module-level function, calls of
    its name in a module that imports it from the checked module (``from .validation import
    validate``) or of ``<that module>.name(...)``; of a method, every ``.name(...)`` call (the
    receiver is not resolved: more calls, never fewer). None when the project cannot be read (no
    file on disk, too many files, one unreadable or unparseable file that names the function)."""
    module = func.root()
    path = getattr(module, "file", None)
    if not path or not os.path.isfile(str(path)):
        return None
    path = os.path.abspath(str(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    method = func.is_method()
    word = re.compile(r"\b{}\b".format(re.escape(func.name)))
    found: List[ExternalCall] = []
    for other in project_files(project_root(path)):
        if other is None:
            return None
        if not other.endswith(".py") or os.path.abspath(other) == path:
            continue
        text = source(other)
        if text is None:
            return None
        if not word.search(text):
            continue
        index = _index(other, text)
        if index is None:
            return None
        found.extend(_calls_in(index, other, func.name, stem, method))
    return found


class _Index(NamedTuple):
    """What ``external_calls`` reads of a module: its imports and its calls by the callee's last name."""

    imports: List[Tuple[str, str, str]]  #: (module's last part, imported name, local name); "" name for ``import m``
    calls: Dict[str, List[Tuple[int, bool, str, bool]]]  #: name -> (line, attribute call, receiver, grad off)


_INDEXES: "Dict[str, Tuple[str, Optional[_Index]]]" = {}


def _index(path: str, text: str) -> Optional[_Index]:
    cached = _INDEXES.get(path)
    if cached is not None and cached[0] is text:
        return cached[1]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        _INDEXES[path] = (text, None)
        return None
    imports: List[Tuple[str, str, str]] = []
    parents: Dict[ast.AST, ast.AST] = {}
    calls: Dict[str, List[Tuple[int, bool, str, bool]]] = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imports.append(((node.module or "").split(".")[-1], alias.name, alias.asname or alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports.append((alias.name.split(".")[-1], "", alias.asname or alias.name))
        elif isinstance(node, ast.Call):
            callee = node.func
            if isinstance(callee, ast.Name):
                calls.setdefault(callee.id, []).append((node.lineno, False, "", _grad_off(node, parents)))
            elif isinstance(callee, ast.Attribute):
                calls.setdefault(callee.attr, []).append(
                    (node.lineno, True, _dotted(callee.value), _grad_off(node, parents))
                )
    index = _Index(imports, calls)
    _INDEXES[path] = (text, index)
    return index


def _calls_in(index: _Index, path: str, name: str, stem: str, method: bool) -> List[ExternalCall]:
    local_names = {local for module, imported, local in index.imports if imported == name and module == stem}
    modules = {local for module, imported, local in index.imports if (imported or module) == stem and not imported}
    modules |= {local for module, imported, local in index.imports if imported == stem}
    found: List[ExternalCall] = []
    for line, attribute, receiver, grad_off in _index_calls(index, name, local_names):
        if method:
            hit = attribute
        elif attribute:
            hit = receiver in modules
        else:
            hit = True
        if hit:
            found.append(ExternalCall(path, line, grad_off))
    return found


def _index_calls(index: _Index, name: str, local_names: "set[str]") -> List[Tuple[int, bool, str, bool]]:
    """The calls of ``name`` as an attribute or a plain name, and of the local names it was imported as."""
    found = [c for c in index.calls.get(name, []) if c[1]]
    for local in local_names:
        found.extend(c for c in index.calls.get(local, []) if not c[1])
    return found


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return ""


def _grad_off(node: ast.AST, parents: Dict[ast.AST, ast.AST]) -> bool:
    current = parents.get(node)
    while current is not None:
        if isinstance(current, (ast.With, ast.AsyncWith)):
            if any(_switches_off(item.context_expr) for item in current.items):
                return True
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return any(_switches_off(d) for d in current.decorator_list)
        current = parents.get(current)
    return False


def _switches_off(expr: ast.AST) -> bool:
    """``torch.no_grad()``, ``torch.inference_mode()``, ``no_grad`` or ``torch.set_grad_enabled(False)``."""
    call = expr if isinstance(expr, ast.Call) else None
    target = call.func if call is not None else expr
    name = _dotted(target).split(".")[-1]
    if name in GRAD_OFF:
        return True
    if name == "set_grad_enabled" and call is not None and call.args:
        first = call.args[0]
        return isinstance(first, ast.Constant) and first.value is False
    return False
