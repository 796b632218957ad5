"""Loops around a node, the calls a loop makes each iteration, and the training loop."""
from __future__ import annotations

from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from astroid import nodes

from ..setup import brain
from . import infer, memo

Loop = Union[nodes.For, nodes.While]

#: Calls that keep yielding the items of their first argument: ``enumerate(loader)``,
#: ``tqdm(loader)``, ``islice(loader, n)``, ``zip(a, b)`` (its first), ``iter(loader)``.
ITERATION_WRAPPERS = frozenset({"enumerate", "zip", "tqdm", "islice", "cycle", "chain", "list", "tuple", "iter"})
_SCOPES = (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef, nodes.Module)


def unwrap_iteration(iterable: nodes.NodeNG) -> nodes.NodeNG:
    """What ``iterable`` iterates once its ``ITERATION_WRAPPERS`` are taken off:
    ``loader`` for ``enumerate(tqdm(loader))``."""
    while isinstance(iterable, nodes.Call) and infer.call_name(iterable) in ITERATION_WRAPPERS and iterable.args:
        iterable = iterable.args[0]
    return iterable


def enclosing_loops(node: nodes.NodeNG) -> List[Loop]:
    """``for``/``while`` loops whose body or else holds ``node``, innermost first, within its function."""
    loops: List[Loop] = []
    child = node
    parent = node.parent
    while parent is not None and not isinstance(parent, _SCOPES):
        header = (getattr(parent, "iter", None), getattr(parent, "test", None))
        if isinstance(parent, (nodes.For, nodes.While)) and all(child is not part for part in header):
            loops.append(parent)
        child = parent
        parent = parent.parent
    return loops


def inside(node: nodes.NodeNG, ancestor: nodes.NodeNG) -> bool:
    """``ancestor`` is a strict ancestor of ``node``."""
    parent = node.parent
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False


def innermost(node: nodes.NodeNG) -> Optional[Loop]:
    loops = enclosing_loops(node)
    return loops[0] if loops else None


def enclosing_function(node: nodes.NodeNG) -> Optional[nodes.FunctionDef]:
    """The ``def`` a node runs in, looking through comprehensions (None at module level or in a lambda)."""
    scope = node.scope()
    while isinstance(scope, (nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)):
        scope = scope.parent.scope()
    return scope if isinstance(scope, nodes.FunctionDef) else None


def body_nodes(loop: Loop) -> Iterator[nodes.NodeNG]:
    """The statements of a loop's body (not its iterable, test or else)."""
    yield from loop.body


def calls_in(statements: "List[nodes.NodeNG] | Iterator[nodes.NodeNG]", helper_depth: int = 2) -> List[nodes.Call]:
    """Calls made by ``statements``, plus calls inside helpers of this file they call.

    A helper is a function or method defined in the checked file that a call
    resolves to (``self.optimizer_step()``, ``train_step(...)``); its body is
    expanded up to ``helper_depth`` levels, each helper once.
    """
    found: List[nodes.Call] = []
    seen: Set[int] = set()

    def visit(stmts: "List[nodes.NodeNG] | Iterator[nodes.NodeNG]", depth: int) -> None:
        for stmt in stmts:
            for call in infer.iter_calls(stmt):
                found.append(call)
                if depth <= 0:
                    continue
                helper = local_helper(call)
                if helper is not None and id(helper) not in seen:
                    seen.add(id(helper))
                    visit(helper.body, depth - 1)

    visit(statements, helper_depth)
    return found


_DEFINED: "Dict[nodes.Module, Dict[type, Set[str]]]" = memo.per_file()


def _defined_names(module: nodes.Module, kind: type) -> Set[str]:
    table = _DEFINED.setdefault(module, {})
    names = table.get(kind)
    if names is None:
        names = table[kind] = {d.name for d in module.nodes_of_class(kind)}
    return names


def defined_function_names(module: nodes.Module) -> Set[str]:
    """Names of every ``def`` in the file (functions and methods): a cheap filter before inference."""
    return _defined_names(module, nodes.FunctionDef)


def defined_class_names(module: nodes.Module) -> Set[str]:
    """Names of every ``class`` in the file: a cheap filter before inferring a constructor call."""
    return _defined_names(module, nodes.ClassDef)


def local_helper(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The function of the project that ``call`` invokes, or None (stubs and libraries excluded):
    one defined in the checked file (a function or a method), or a function imported by name from
    one of the project's own modules (``from engine import train_one_epoch``,
    ``engine.train_one_epoch(...)`` after ``import engine``), which the analysis expands where it
    is called like one of the file's.  A finding on a node of another module is not reported with
    the checked file's: that module reports it when it is checked."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return None
    root = call.root()
    name = infer.call_name(call)
    if name in defined_function_names(root):
        func = infer.function_def(call.func)
        if func is None or func.root() is not root:
            return None
        return func
    if not _imported_from_project(call.func):
        return None  # no def of that name in the file and not a project import: not a helper
    func = infer.function_def(call.func)
    if func is None or func.is_method() or not brain.project_module(str(func.root().name)):
        return None
    return func


_PROJECT_IMPORTS: "Dict[nodes.Module, Set[str]]" = memo.per_file()


def _imported_from_project(func: nodes.NodeNG) -> bool:
    """``func`` is a name the file imports from one of the project's modules (``from engine import
    train_one_epoch``), or an attribute of a project module it imports (``engine.train_one_epoch``)."""
    if isinstance(func, nodes.Attribute):
        func = func.expr
    if not isinstance(func, nodes.Name):
        return False
    root = func.root()
    names = _PROJECT_IMPORTS.get(root)
    if names is None:
        names = _PROJECT_IMPORTS[root] = set()
        for node in root.nodes_of_class((nodes.ImportFrom, nodes.Import)):
            if isinstance(node, nodes.ImportFrom):
                if node.level or brain.project_module(str(node.modname)):
                    names.update(alias or name for name, alias in node.names if name != "*")
            else:
                names.update(
                    (alias or name).split(".")[0] for name, alias in node.names if brain.project_module(name)
                )
    return func.name in names


def call_sites(func: nodes.FunctionDef) -> List[nodes.Call]:
    """Calls in the file that resolve to ``func`` (``train(...)``, ``self.train(...)``) by name and
    inference; provenance's ``call_sites`` also finds calls under other names."""
    return [
        call
        for call in func.root().nodes_of_class(nodes.Call)
        if infer.call_name(call) == func.name and local_helper(call) is func
    ]


def loop_calls(loop: Loop, helper_depth: int = 2) -> List[nodes.Call]:
    """Calls one iteration of ``loop`` makes (its body, nested loops and local helpers included).
    Collected once per loop and depth for the checked file (a rule asks for every statement of a
    long loop); each caller gets its own list."""
    key = (loop, helper_depth)
    found = _LOOP_CALLS.get(key)
    if found is None:
        found = _LOOP_CALLS[key] = calls_in(list(body_nodes(loop)), helper_depth)
    return list(found)


def loop_call_ids(loop: Loop, helper_depth: int = 2) -> FrozenSet[int]:
    """``id`` of each call of ``loop_calls(loop, helper_depth)``, kept once per loop."""
    key = (loop, helper_depth)
    found = _LOOP_CALL_IDS.get(key)
    if found is None:
        found = _LOOP_CALL_IDS[key] = frozenset(id(call) for call in loop_calls(loop, helper_depth))
    return found


_LOOP_CALLS: "Dict[Tuple[nodes.NodeNG, int], List[nodes.Call]]" = memo.per_file()
_LOOP_CALL_IDS: "Dict[Tuple[nodes.NodeNG, int], FrozenSet[int]]" = memo.per_file()
