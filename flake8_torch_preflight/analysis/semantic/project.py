"""The project around the checked file, read as text and parsed with ``ast``, never imported or run.

``project_root(path)`` finds the top of the project (a folder holding a ``ROOT_MARKERS`` file),
``project_files(root)`` walks its files (bounded by ``MAX_PROJECT_FILES``), ``source(path)`` reads
one (bounded by ``MAX_FILE_BYTES``, kept for the process by path, size and modification time), and
``external_calls(func)`` answers where other modules of the project call a function of the checked
file, and whether autograd is off at each of those calls.
"""
from __future__ import annotations

import ast
import functools
import os
import re
import sys
from typing import Dict, FrozenSet, Iterator, List, NamedTuple, Optional, Set, Tuple

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
    return marked_root(path) or os.path.dirname(folder) or folder


def marked_root(path: str) -> Optional[str]:
    """The nearest folder holding a ``ROOT_MARKERS`` file, among the file's folder and the
    ``MAX_ROOT_LEVELS - 1`` above it; None when there is none."""
    roots = marked_roots(os.path.dirname(os.path.abspath(path)))
    return roots[0] if roots else None


@functools.lru_cache(maxsize=1024)
def marked_roots(folder: str) -> Tuple[str, ...]:
    """Every folder holding a ``ROOT_MARKERS`` file among ``folder`` and the ``MAX_ROOT_LEVELS - 1``
    above it, nearest first (a nested ``setup.py`` or ``requirements.txt`` and the repository's root);
    kept for the process, like the file listing (a lint run sees one state of the tree)."""
    found: List[str] = []
    candidate = os.path.abspath(folder)
    for _ in range(MAX_ROOT_LEVELS):
        if any(os.path.exists(os.path.join(candidate, marker)) for marker in ROOT_MARKERS):
            found.append(candidate)
        above = os.path.dirname(candidate)
        if above == candidate:
            break
        candidate = above
    return tuple(found)


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
    _MISSING.clear()
    _DEFINED.clear()
    _MENTIONS.clear()
    marked_roots.cache_clear()
    _module_names.cache_clear()


#: Files that make the project an installable package: its classes are an API that code outside it may call.
PACKAGE_MARKERS = ("setup.py", "setup.cfg", "pyproject.toml")


def packaged(path: str) -> bool:
    """The project of ``path`` is an installable package (``PACKAGE_MARKERS`` at its root)."""
    root = project_root(path)
    return any(os.path.exists(os.path.join(root, marker)) for marker in PACKAGE_MARKERS)


#: Files of the project that may name a class for a run to use: its modules, notebooks, configurations,
#: scripts and documents (``--model RCNN`` in a README or a shell script, ``model: RCNN`` in a YAML recipe).
NAMING_SUFFIXES = (
    ".py", ".pyi", ".ipynb", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".txt", ".sh", ".md", ".rst",
)


def named_elsewhere(name: str, path: str, modules_too: bool = True) -> Optional[bool]:
    """Whether another file of the project names ``name`` (a whole word, in any case: registries that
    lower-case class names count), outside comment lines of its Python modules (with ``modules_too``
    False, in its other files only: notebooks, configurations, scripts, documents): True or False, or
    None when it cannot be told (no root marker above ``path``, no other Python module in the project,
    too many files, or a file that cannot be read).  An application's file seen in its project, not a
    file linted alone."""
    path = os.path.abspath(path)
    root = marked_root(path)
    if root is None:
        return None
    word = re.compile(r"\b{}\b".format(re.escape(name)), re.IGNORECASE)
    modules = 0
    for other in project_files(root):
        if other is None:
            return None
        if os.path.abspath(other) == path or not other.endswith(NAMING_SUFFIXES):
            continue
        modules += other.endswith(".py")
        if other.endswith(".py") and not modules_too:
            continue
        text = source(other)
        if text is None:
            return None
        if word.search(text) is None:
            continue
        if not other.endswith(".py"):
            return True
        if any(word.search(line) and not line.lstrip().startswith("#") for line in text.splitlines()):
            return True
    return False if modules else None


def mentions(path: str, pattern: "re.Pattern[str]") -> Optional[bool]:
    """Whether a file of the project of ``path`` (a module, notebook, configuration, script or document,
    ``NAMING_SUFFIXES``; ``path`` itself included) matches ``pattern``; None when it cannot be told (no
    root marker above ``path``, no other Python module beside it, too many files, a file that cannot be
    read)."""
    path = os.path.abspath(path)
    root = marked_root(path)
    if root is None:
        return None
    key = (root, pattern.pattern, pattern.flags)
    if key not in _MENTIONS:
        found: Optional[bool] = False
        for other in project_files(root):
            if other is None or (other.endswith(NAMING_SUFFIXES) and source(other) is None):
                found = None
                break
            if other.endswith(NAMING_SUFFIXES) and pattern.search(source(other) or ""):
                found = True
                break
        _MENTIONS[key] = found
    found = _MENTIONS[key]
    return found if found is not False or _holds_others(root, path) else None


_MENTIONS: "Dict[Tuple[str, str, int], Optional[bool]]" = {}
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
    #: (method name, number of targets) of each ``a, b, c = x.name(...)`` in the loops around the call
    #: (``obs, reward, done, info = env.step(action)``): what those loops step, read by the torch layer.
    loop_unpacks: FrozenSet[Tuple[str, int]] = frozenset()
    #: The function making the call also calls ``.backward(...)`` (the result may feed a loss).
    trains: bool = False


def external_calls(func: nodes.FunctionDef) -> Optional[List[ExternalCall]]:
    """The calls other modules of the project make of ``func``: of a module-level function, calls of
    its name in a module that imports it from the checked module (``from .validation import
    validate``) or of ``<that module>.name(...)``; of a method, every ``.name(...)`` call (the
    receiver is not resolved: more calls, never fewer) but ``self.name(...)`` in a class that defines
    ``name`` itself (that class's own method); a module Python cannot parse calls nothing.
    None when the project cannot be read (no file on disk, too many files, an unreadable file)."""
    naming = _modules_naming(func)
    if naming is None:
        return None
    stem, indexes = naming
    found: List[ExternalCall] = []
    target = os.path.abspath(str(func.root().file))
    for other, index in indexes:
        found.extend(_calls_in(index, other, func.name, stem, func.is_method(), target))
    return found


def _modules_naming(func: nodes.FunctionDef) -> Optional[Tuple[str, List[Tuple[str, "_Index"]]]]:
    """The stem of ``func``'s module, and (path, index) of each other module of the project whose text
    names ``func`` (a whole word) and that Python can parse (one that cannot never runs); None when the
    project cannot be read (no file on disk, too many files, an unreadable file)."""
    module = func.root()
    path = getattr(module, "file", None)
    if not path or not os.path.isfile(str(path)):
        return None
    path = os.path.abspath(str(path))
    word = re.compile(r"\b{}\b".format(re.escape(func.name)))
    found: List[Tuple[str, _Index]] = []
    for other in project_files(project_root(path)):
        if other is None:
            return None
        if not other.endswith(".py") or os.path.abspath(other) == path:
            continue
        text = source(other)
        if text is None:
            return None
        if word.search(text):
            index = _index(other, text)
            if index is not None:
                found.append((other, index))
    return os.path.splitext(os.path.basename(path))[0], found


def imported_elsewhere(func: nodes.FunctionDef) -> Optional[bool]:
    """Whether another module of the project may reach the module-level function ``func`` without
    calling it where ``external_calls`` sees: it imports the name from ``func``'s module (``from .tools
    import evaluate``, kept as a callback) or star-imports that module, and reads the name; or it reads
    ``tools.evaluate``.  A module Python cannot parse reaches nothing.  None when the project cannot be
    read."""
    naming = _modules_naming(func)
    if naming is None:
        return None
    stem, indexes = naming
    target = os.path.abspath(str(func.root().file))
    for other, index in indexes:
        for home, imported, local in _imports_reaching(index, other, target):
            if home == stem and imported in (func.name, "*"):
                if (local if imported == func.name else func.name) in index.reads:
                    return True  # imported and read: an unused import runs nothing
            elif (home == stem and not imported) or imported == stem:
                if (local, func.name) in index.attributes:
                    return True
    return False


_IndexedCall = Tuple[int, bool, str, bool, FrozenSet[Tuple[str, int]], bool]


class _Index(NamedTuple):
    """What ``external_calls`` reads of a module: its imports and its calls by the callee's last name."""

    imports: List[Tuple[str, str, str]]  #: (module's last part, imported name, local name); "" name for ``import m``
    #: name -> (line, attribute call, receiver, grad off, the unpacked method calls of the loops around it,
    #: the calling function runs a backward)
    calls: Dict[str, List["_IndexedCall"]]
    #: the names the module reads, and the (receiver, attribute) pairs it reads (``tools.evaluate``)
    reads: FrozenSet[str] = frozenset()
    attributes: FrozenSet[Tuple[str, str]] = frozenset()
    #: for each import, the module as written and its level (``from ..engine import x``: ``("engine", 2)``)
    sources: Tuple[Tuple[str, int], ...] = ()


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
    sources: List[Tuple[str, int]] = []
    parents: Dict[ast.AST, ast.AST] = {}
    calls: Dict[str, List[_IndexedCall]] = {}
    unpacks: Dict[int, FrozenSet[Tuple[str, int]]] = {}
    backwards: Dict[int, bool] = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    reads: Set[str] = set()
    attributes: Set[Tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            reads.add(node.id)
        elif isinstance(node, ast.Attribute):
            attributes.add((_dotted(node.value), node.attr))
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imports.append(((node.module or "").split(".")[-1], alias.name, alias.asname or alias.name))
                sources.append((node.module or "", node.level or 0))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports.append((alias.name.split(".")[-1], "", alias.asname or alias.name))
                sources.append((alias.name, 0))
        elif isinstance(node, ast.Call):
            callee = node.func
            if isinstance(callee, ast.Name):
                calls.setdefault(callee.id, []).append(
                    (node.lineno, False, "", _grad_off(node, parents), _loop_unpacks(node, parents, unpacks),
                     _caller_backwards(node, parents, backwards))
                )
            elif isinstance(callee, ast.Attribute):
                if _own_method_call(callee, parents):
                    continue  # ``self.predict(x)`` in a class defining ``predict``: that class's method
                calls.setdefault(callee.attr, []).append(
                    (node.lineno, True, _dotted(callee.value), _grad_off(node, parents),
                     _loop_unpacks(node, parents, unpacks), _caller_backwards(node, parents, backwards))
                )
    index = _Index(imports, calls, frozenset(reads), frozenset(attributes), tuple(sources))
    _INDEXES[path] = (text, index)
    return index


def _calls_in(index: _Index, path: str, name: str, stem: str, method: bool, target: str) -> List[ExternalCall]:
    imports = _imports_reaching(index, path, target)
    local_names = {local for module, imported, local in imports if imported == name and module == stem}
    modules = {local for module, imported, local in imports if (imported or module) == stem and not imported}
    modules |= {local for module, imported, local in imports if imported == stem}
    found: List[ExternalCall] = []
    for line, attribute, receiver, grad_off, loop_unpacks, trains in _index_calls(index, name, local_names):
        if method:
            hit = attribute
        elif attribute:
            hit = receiver in modules
        else:
            hit = True
        if hit:
            found.append(ExternalCall(path, line, grad_off, loop_unpacks, trains))
    return found


def _imports_reaching(index: _Index, importer: str, target: str) -> List[Tuple[str, str, str]]:
    """The imports of the module ``importer`` (its ``_Index``) that may load the module file ``target``:
    all but those that resolve, from the importer's folder, the project root and its ``src`` folder (or
    the folder a relative import names), to another file of the project (``from trainer import iteration``
    loads the ``trainer.py`` beside the script, not ``check_cuda/trainer.py``).  An import no base holds
    may reach it through a changed import path: kept."""
    root = project_root(importer)
    folder = os.path.dirname(importer)
    kept = []
    for position, entry in enumerate(index.imports):
        written, level = index.sources[position] if position < len(index.sources) else ("", 0)
        bases = _relative_base(folder, level) if level else _absolute_bases(root, folder)
        names = [written] + ([written + "." + entry[1] if written else entry[1]] if entry[1] else [])
        found = [f for base in bases for dotted in names if dotted for f in _module_files(base, dotted)]
        if not found or target in found:
            kept.append(entry)
    return kept


def _module_files(base: str, dotted: str) -> List[str]:
    """The file a module ``dotted`` loads from ``base`` (a module file or a package's ``__init__.py``), if any."""
    path = os.path.join(base, *dotted.split("."))
    found = [candidate for candidate in (path + ".py", os.path.join(path, "__init__.py")) if os.path.isfile(candidate)]
    return [os.path.abspath(candidate) for candidate in found]


def _own_method_call(callee: ast.Attribute, parents: Dict[ast.AST, ast.AST]) -> bool:
    """``self.<name>(...)`` in a method of a class that defines ``<name>`` itself."""
    if not (isinstance(callee.value, ast.Name) and callee.value.id == "self"):
        return False
    current = parents.get(callee)
    while current is not None and not isinstance(current, ast.ClassDef):
        current = parents.get(current)
    return current is not None and any(
        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == callee.attr
        for item in current.body
    )


def _loop_unpacks(
    node: ast.AST, parents: Dict[ast.AST, ast.AST], cache: Dict[int, FrozenSet[Tuple[str, int]]]
) -> FrozenSet[Tuple[str, int]]:
    """(method name, number of targets) of every ``a, b = x.method(...)`` in the loops around ``node``
    (up to its function)."""
    found: Set[Tuple[str, int]] = set()
    current = parents.get(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(current, (ast.For, ast.While)):
            if id(current) not in cache:
                cache[id(current)] = frozenset(
                    (stmt.value.func.attr, len(stmt.targets[0].elts))
                    for stmt in ast.walk(current)
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, ast.Attribute)
                )
            found |= cache[id(current)]
        current = parents.get(current)
    return frozenset(found)


def _caller_backwards(node: ast.AST, parents: Dict[ast.AST, ast.AST], cache: Dict[int, bool]) -> bool:
    """The function around ``node`` calls ``<x>.backward(...)``."""
    current = parents.get(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
        current = parents.get(current)
    if current is None:
        return False
    if id(current) not in cache:
        cache[id(current)] = any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
            for n in ast.walk(current)
        )
    return cache[id(current)]


def _index_calls(index: _Index, name: str, local_names: "set[str]") -> List[_IndexedCall]:
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


# -- imports that cannot succeed ------------------------------------------------------------------

#: Folders a project keeps its importable packages in besides its root (the ``src`` layout).
SOURCE_FOLDERS = ("", "src")

_MISSING: "Dict[str, Optional[str]]" = {}
_DEFINED: "Dict[str, Tuple[str, Optional[frozenset]]]" = {}


def missing_import(module: nodes.Module) -> Optional[str]:
    """An import at the file's top level that stops it with an ImportError before any of its code runs,
    as the import reads (``from setfit.modeling import SKLearnWrapper``), or None.

    Only imports from the project's own modules are judged: a ``from M import name`` (absolute, with M
    found under the project root, its ``src`` folder or the file's folder; or relative) whose module does
    not define ``name`` (no def, class, assignment or import of it at any level outside functions, no
    submodule of that name); or an import of a module of a package the project holds that has no file or
    folder of that name.  Nothing is judged for an import inside ``try``, ``if`` or a function, for a
    module that may define names dynamically (a star import, a module ``__getattr__``, ``globals()`` or
    ``exec``, a ``global`` statement), or for a module that cannot be read.  Kept per file for the process."""
    path = getattr(module, "file", None)
    if not path or not os.path.isfile(str(path)):
        return None
    path = os.path.abspath(str(path))
    if path not in _MISSING:
        _MISSING[path] = _first_missing(module.body, path)
    return _MISSING[path]


def missing_import_before(node: nodes.NodeNG) -> Optional[str]:
    """An import of the project's own code that stops a function before ``node`` runs, as the import
    reads, or None: among the statements of each function around ``node`` that come before the one
    holding it, an unconditional import (not inside ``try``, ``if`` or a nested block) judged as
    ``missing_import`` judges the module's (``from src.models.rotation2xyz import Rotation2xyz`` in an
    evaluation function of a copied module whose ``src`` package the project does not hold)."""
    module = node.root()
    path = getattr(module, "file", None)
    if not path or not os.path.isfile(str(path)):
        return None
    path = os.path.abspath(str(path))
    statement = node.statement() if not isinstance(node, nodes.FunctionDef) else node
    while statement is not None and not isinstance(statement.parent, nodes.Module):
        parent = statement.parent
        if isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef)) and statement in parent.body:
            before = parent.body[: parent.body.index(statement)]
            imports = [s for s in before if isinstance(s, (nodes.Import, nodes.ImportFrom))]
            if imports:
                text = _first_missing(imports, path)
                if text is not None:
                    return text
        statement = parent
    return None


def _first_missing(statements: "List[nodes.NodeNG]", path: str) -> Optional[str]:
    """The first of ``statements`` (a body's own statements) that is an import of the project that fails."""
    root = marked_root(path)
    if root is None:
        return None  # where the project's imports start is not known
    folder = os.path.dirname(path)
    absolute = _absolute_bases(root, folder)
    complete = _holds_others(root, path)
    for node in statements:
        if isinstance(node, nodes.ImportFrom):
            text = _unresolved_from(_relative_base(folder, node.level) if node.level else absolute, node, complete)
            if text is None and not node.level and _out_of_reach(root, path, absolute, node.modname or ""):
                text = "from {} import {}".format(node.modname, node.names[0][0])
        elif isinstance(node, nodes.Import):
            text = next((n for n, _ in node.names if _resolutions(absolute, n, complete) == [None]
                         or _out_of_reach(root, path, absolute, n)), None)
            text = "import " + text if text else None
        else:
            continue
        if text is not None:
            return text
    return None


#: Texts by which a project puts more folders on the import path (a file changing ``sys.path``, a
#: launch script or README exporting ``PYTHONPATH``): a module of another folder may then be found.
IMPORT_PATH_CHANGES = re.compile(r"sys\.path|PYTHONPATH|addsitedir")


def _out_of_reach(root: str, path: str, bases: List[str], dotted: str) -> bool:
    """An absolute import of a module that the project holds only in a folder the import cannot reach:
    no base of the file holds its top package, not a standard-library name, the project is no
    installable package (``packaged``), changes no import path (``IMPORT_PATH_CHANGES``), and one of
    its other folders holds a module or package of that name (``import ml_data`` in ``WRMF/bpr.py``
    copied from ``PMF/``, where ``ml_data.py`` lives): a stale copy that stops with an ImportError."""
    top = dotted.split(".")[0]
    if not top or top in getattr(sys, "stdlib_module_names", ()) or packaged(path):
        return False
    if any(_has_entry(base, top) for base in bases + [os.path.dirname(path)]):
        return False  # the file's own folder too: first on the path when it runs as a script
    return top in _module_names(root) and mentions(path, IMPORT_PATH_CHANGES) is False


@functools.lru_cache(maxsize=64)
def _module_names(root: str) -> FrozenSet[str]:
    """The names of the project's module files and of the folders holding them, wherever they are."""
    names: Set[str] = set()
    for other in project_files(root):
        if other is not None and other.endswith(".py"):
            names.add(os.path.basename(other)[:-3])
            names.add(os.path.basename(os.path.dirname(other)))
    return frozenset(names)


def _relative_base(folder: str, level: int) -> List[str]:
    base = folder
    for _ in range(level - 1):
        base = os.path.dirname(base)
    return [base]


def _absolute_bases(root: str, folder: str) -> List[str]:
    """Where an absolute import may find a project module: the folder of a script (first on ``sys.path``
    when it is run; a package's module is imported, not run), the project root and its ``src`` folder."""
    bases = [] if os.path.isfile(os.path.join(folder, "__init__.py")) else [folder]
    for sub in SOURCE_FOLDERS:
        base = os.path.join(root, sub) if sub else root
        if base not in bases:
            bases.append(base)
    return bases


#: Top-level packages that are only ever a project's own folder (the ``src`` layout run from the
#: project's root), never an installed distribution: importing one the project lacks fails.
PROJECT_ONLY_PACKAGES = frozenset({"src"})

#: Files a module may be imported from (source, stubs, compiled extensions: ``_ext.cpython-311-x86_64.so``).
MODULE_SUFFIXES = (".py", ".pyi", ".pyx", ".so", ".pyd")


def _has_entry(folder: str, name: str) -> bool:
    """A package folder or a module file of that name in ``folder``."""
    if os.path.isdir(os.path.join(folder, name)):
        return True
    try:
        entries = os.listdir(folder)
    except OSError:
        return False
    return any(entry.split(".")[0] == name and entry.endswith(MODULE_SUFFIXES) for entry in entries)


def _holds_others(root: str, path: str) -> bool:
    """The project holds a Python module besides ``path``: a checkout, not one file copied out of one."""
    for other in project_files(root):
        if other is None or (other.endswith(".py") and os.path.abspath(other) != path):
            return True
    return False


def _resolutions(bases: List[str], dotted: str, complete: bool = True) -> Optional[List[Optional[str]]]:
    """For each base holding the import's top package as a module file or regular package: the module's
    file, or its package's ``__init__.py``, or None when that base lacks the module.  None (no judgement)
    when no base holds it (an installed package; but ``[None]`` for one of ``PROJECT_ONLY_PACKAGES`` in a
    ``complete`` project, one holding other modules than the file, not one file copied out of it), when
    it is a standard-library name, or when a namespace folder or a compiled module is met on the way
    (another entry of ``sys.path`` may win, or the module is not read)."""
    parts = [p for p in dotted.split(".") if p]
    if parts and parts[0] in getattr(sys, "stdlib_module_names", ()):
        return None
    found: List[Optional[str]] = []
    for base in bases:
        if parts:
            top = os.path.join(base, parts[0])
            if os.path.isdir(top) and not os.path.isfile(os.path.join(top, "__init__.py")):
                return None
            if not os.path.isdir(top) and not os.path.isfile(top + ".py"):
                if _has_entry(base, parts[0]):
                    return None
                continue
            if not os.path.isdir(top) and len(parts) > 1:
                return None  # a module where the import needs a package: not the import's own base
        target = os.path.join(base, *parts)
        if os.path.isfile(os.path.join(target, "__init__.py")):
            found.append(os.path.join(target, "__init__.py"))
        elif os.path.isfile(target + ".py") and parts:
            found.append(target + ".py")
        elif os.path.isdir(target) or _has_entry(os.path.dirname(target), parts[-1] if parts else ""):
            return None
        else:
            found.append(None)
    if not found and parts and parts[0] in PROJECT_ONLY_PACKAGES and complete:
        return [None]  # ``from src.models import X`` in a project of several modules with no ``src`` folder
    return found or None


def _unresolved_from(bases: List[str], node: nodes.ImportFrom, complete: bool) -> Optional[str]:
    """The text of ``from M import name`` when every base holding M lacks M or its name (``complete``:
    see ``_resolutions``), or when M is relative and its folder holds no module of that name in a
    ``complete`` project (``from .model import Net`` in a copied folder without ``model.py``: no installed
    package serves it; one file copied out of its project says nothing of its folder)."""
    found = _resolutions(bases, node.modname or "", complete)
    top = (node.modname or "").split(".")[0]
    if (not found and complete and node.level and top and len(bases) == 1 and os.path.isdir(bases[0])
            and not _has_entry(bases[0], top)):
        return "from {}{} import {}".format("." * node.level, node.modname, node.names[0][0])  # never installed
    if not found:
        return None
    missing: Optional[str] = None
    for path in found:
        if path is None:
            missing = missing or node.names[0][0]
            continue
        names = _defined_names(path)
        if names is None:
            return None
        package = os.path.basename(path) == "__init__.py"
        absent = [
            name for name, _ in node.names
            if name != "*" and name not in names and not (package and _has_entry(os.path.dirname(path), name))
        ]
        if not absent:
            return None  # this base provides every name
        missing = missing or absent[0]
    return "from {}{} import {}".format("." * (node.level or 0), node.modname or "", missing) if missing else None


def _defined_names(path: str) -> Optional[frozenset]:
    """Every name a module binds outside its functions and classes, or None when it cannot be read or may
    bind names dynamically."""
    text = source(path)
    if text is None:
        return None
    cached = _DEFINED.get(path)
    if cached is not None and cached[0] is text:
        return cached[1]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    names = _bound_at_top(tree) if tree is not None else None
    _DEFINED[path] = (text, names)
    return names


def _bound_at_top(tree: ast.Module) -> Optional[frozenset]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "exec"):
            return None
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return None
    stack: List[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__":
                return None
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
            continue
        if isinstance(node, ast.expr):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
            continue
        if isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(names)
