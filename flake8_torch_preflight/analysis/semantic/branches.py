"""Branches that no run takes: an ``if`` on a flag that every assignment the project makes leaves off.

``never_taken(branch)`` holds when the ``if``'s test (or one operand of an ``and``) is a flag, a
name or ``self.attr``, that is off in every run the source shows:

* in the checked file, each of its bindings is an assignment (a parameter, a loop target or an
  augmented assignment is unknown) of a false literal (``DEBUG = False``, ``self.debug_mode =
  None``) or a copy of the same-named attribute of another object (``self.debug_mode =
  config.debug_mode``);
* in the project (the folder tree above the file, ``project_root``), read as text and parsed with
  ``ast``, never run, the name is stored only as a false literal or such a copy, at least one false
  literal is seen, and nothing else can set it: no other value, no parameter, loop target,
  augmented assignment or keyword argument of that name, no definition, no string naming it
  (``setattr``, a dict key, an ``argparse`` flag ``--debug-mode``) and no configuration file that
  mentions it.

A test on local names that the function binds only to literals (``world_size = 1`` then
``if world_size > 1:``) is decided by its value (``static_values.truth``).  Anything else is
unknown and the branch may be taken: a flag read from the command line or a configuration file is
on in some runs.  ``reached_only_when_off(node)`` asks it of every ``if``
between ``node`` and its function, then of every in-file call site of that function.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Dict, Iterator, List, Optional, Tuple

from astroid import nodes
from astroid.exceptions import AstroidError

from . import dataflow, infer, loops, memo, static_values
from . import project
from .project import project_files, project_root

#: Configuration files: a flag named in one may be set from it.
CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".conf")

#: How many helper levels ``reached_only_when_off`` follows through call sites.
MAX_CALL_DEPTH = 2


def _fixed_locally(test: nodes.NodeNG) -> bool:
    """Every value ``test`` reads is a name local to its function that each of its bindings there sets
    to a literal (no parameter, global, attribute or call: nothing a run could change)."""
    names = list(test.nodes_of_class(nodes.Name))
    if not names or any(True for _ in test.nodes_of_class((nodes.Attribute, nodes.Call, nodes.Subscript))):
        return False
    for name in names:
        scope = name.scope()
        if not isinstance(scope, nodes.FunctionDef) or name.name not in scope.locals:
            return False  # a global or a closure's name: another function may set it
        values = dataflow.assigned_values(name)  # None for a parameter, a loop target, an augmented assignment
        if not values or not all(isinstance(value, nodes.Const) for value in values):
            return False
    return True


def other_arms(node: nodes.NodeNG) -> Iterator[List[nodes.NodeNG]]:
    """For each ``if`` around ``node`` in its function (or module), innermost first, the statements of
    the arm that does not hold ``node`` (``else`` for a node in the body, the body for one in ``else``);
    an ``if`` whose test holds ``node`` has none."""
    child: nodes.NodeNG = node
    parent = node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.If):
            if child in parent.body:
                yield list(parent.orelse)
            elif child in parent.orelse:
                yield list(parent.body)
        child, parent = parent, parent.parent


def reached_only_when_off(node: nodes.NodeNG, depth: int = MAX_CALL_DEPTH) -> bool:
    """``node`` runs only inside a branch no run takes: an ``if`` between it and its function, or
    every call site in the file of the function it is in (followed ``depth`` levels)."""
    child: nodes.NodeNG = node
    parent = node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef,
                                                         nodes.Module)):
        if isinstance(parent, nodes.If) and child in parent.body and never_taken(parent):
            return True
        child, parent = parent, parent.parent
    if depth <= 0 or not isinstance(parent, nodes.FunctionDef):
        return False
    sites = loops.call_sites(parent)
    return bool(sites) and all(reached_only_when_off(site, depth - 1) for site in sites)


def never_taken(branch: nodes.If) -> bool:
    """The body of ``branch`` runs in no run: its test, or one operand of an ``and``, is a flag
    that is off wherever the project sets it (see the module docstring)."""
    key = ("never", branch)
    if key not in _ANSWERS:
        test = branch.test
        operands = test.values if isinstance(test, nodes.BoolOp) and test.op == "and" else [test]
        _ANSWERS[key] = any(_off(operand) for operand in operands) or (
            _fixed_locally(test) and static_values.truth(test) is False
        )
    return bool(_ANSWERS[key])


_ANSWERS: "Dict[object, bool]" = memo.per_file()


def _off(flag: nodes.NodeNG) -> bool:
    if isinstance(flag, nodes.Const):
        return not flag.value
    name = dataflow.terminal_name(flag)
    if name is None:
        return False
    if isinstance(flag, nodes.Attribute) and not dataflow.is_self_attr(flag):
        return False  # ``args.debug``, ``cfg.debug``: whatever the object is, it is read from elsewhere
    values = _file_values(flag)
    if not values or not all(_off_value(value, name) for value in values):
        return False
    return _project_leaves_off(flag.root(), name, _called_here_only(flag))


def _called_here_only(flag: nodes.NodeNG) -> bool:
    """``flag`` is a parameter of a function that no other module of the project calls: its values
    are those the file's call sites pass (``_passed_values``), and a parameter of that name elsewhere
    in the project is another function's."""
    function = _parameter_of(flag)
    return function is not None and project.external_calls(function) == []


def _parameter_of(flag: nodes.NodeNG) -> Optional[nodes.FunctionDef]:
    """The function whose parameter ``flag`` is (its one binding where it is read), or None."""
    binding = dataflow.single_binding(flag) if isinstance(flag, nodes.Name) else None
    if binding is None or not isinstance(binding.parent, nodes.Arguments):
        return None
    function = binding.parent.parent
    return function if isinstance(function, nodes.FunctionDef) else None


def _file_values(flag: nodes.NodeNG) -> Optional[List[nodes.NodeNG]]:
    """What the flag is assigned in the file: plain assignments only (``dataflow.assigned_values``);
    a module-level name a configurator rewrites (``static_values.rewritten_later``) is unknown."""
    if isinstance(flag, nodes.Name):
        try:
            _, bindings = flag.lookup(flag.name)
        except (AstroidError, RecursionError):
            return None
        for binding in bindings:
            if isinstance(binding.scope(), nodes.Module) and static_values.rewritten_later(binding):
                return None
        if _parameter_of(flag) is not None:
            return _passed_values(flag)  # a parameter: what every call site of the file passes
    return dataflow.assigned_values(flag)


def _passed_values(parameter: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """What the call sites pass for ``parameter`` (``infer.bound_values``), a name passed on read
    through its own plain assignments (``multi_class = False`` in the caller, passed at each call)."""
    values = infer.bound_values(parameter)
    if not values:
        return None
    found: List[nodes.NodeNG] = []
    for value in values:
        if isinstance(value, nodes.Name):
            inner = dataflow.assigned_values(value)
            if not inner:
                return None
            found.extend(inner)
        else:
            found.append(value)
    return found


def _off_value(value: nodes.NodeNG, name: str) -> bool:
    """A false literal (``False``, ``None``, ``0``) or a copy of the same-named attribute."""
    if isinstance(value, nodes.Attribute):
        return value.attrname == name
    if any(True for _ in value.nodes_of_class((nodes.Name, nodes.Attribute, nodes.Call))):
        return False
    found = static_values.evaluate(value)
    return found is not None and not found.value


# ----------------------------------------------------------------------- values chosen by a branch

#: Expressions ``alternatives`` returns at most; more is unknown.
MAX_ALTERNATIVES = 8


def alternatives(expr: nodes.NodeNG, depth: int = MAX_CALL_DEPTH) -> Optional[List[nodes.NodeNG]]:
    """The expressions a value may be, split where a branch picks it: both sides of a conditional
    expression (``F.cross_entropy if multi else F.binary_cross_entropy``), each assignment a name or
    ``self.attr`` may hold (``infer.bound_values``) and each ``return`` of a function of the file it
    is the result of (``self.loss = self._pick_loss(task)``), followed ``depth`` calls deep.  An
    expression none of these apply to is its own one alternative.  None when there are more than
    ``MAX_ALTERNATIVES`` or a function returns nothing."""
    found: List[nodes.NodeNG] = []
    if not _collect(expr, depth, found, 0) or len(found) > MAX_ALTERNATIVES:
        return None
    return found


def _collect(expr: nodes.NodeNG, depth: int, found: List[nodes.NodeNG], hops: int) -> bool:
    if len(found) > MAX_ALTERNATIVES or hops > MAX_ALTERNATIVES:
        return False
    if isinstance(expr, nodes.IfExp):
        return _collect(expr.body, depth, found, hops + 1) and _collect(expr.orelse, depth, found, hops + 1)
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = infer.bound_values(expr)
        if values and not any(v is expr for v in values):
            return all(_collect(v, depth, found, hops + 1) for v in values)
    if isinstance(expr, nodes.Call) and depth > 0:
        function = infer.function_def(expr.func)
        if function is not None and function.root() is expr.root():
            returned = [r.value for r in function.nodes_of_class(nodes.Return) if r.scope() is function]
            if not returned or any(value is None for value in returned):
                return False
            return all(_collect(value, depth - 1, found, hops + 1) for value in returned)
    found.append(expr)
    return True


# ------------------------------------------------------------------------------ the project


_PROJECT: "Dict[Tuple[str, str, bool], bool]" = memo.per_file()


def _project_leaves_off(module: nodes.Module, name: str, parameters_known: bool = False) -> bool:
    """No file of the project stores anything but an off value under ``name``; with
    ``parameters_known``, a parameter of that name does not count (its call sites were read)."""
    path = getattr(module, "file", None)
    if not path or not os.path.isfile(str(path)):
        return False  # source not on disk (standard input): the project cannot be read
    root = project_root(str(path))
    key = (root, name, parameters_known)
    if key not in _PROJECT:
        _PROJECT[key] = _stores_only_off(root, name, parameters_known)
    return _PROJECT[key]


def _stores_only_off(root: str, name: str, parameters_known: bool = False) -> bool:
    word = re.compile(r"\b(?:{}|{})\b".format(re.escape(name), re.escape(name.replace("_", "-"))))
    literal_seen = False
    for path in project_files(root):
        if path is None:
            return False
        if not path.endswith(".py") and not path.endswith(CONFIG_SUFFIXES):
            continue
        text = project.source(path)
        if text is None:
            return False
        if not word.search(text):
            continue
        if not path.endswith(".py"):
            return False  # a configuration file names it: a run may turn it on
        verdict = _stores_in(text, name, parameters_known)
        if verdict is None:
            return False
        literal_seen = literal_seen or verdict
    return literal_seen


def _stores_in(text: str, name: str, parameters_known: bool = False) -> Optional[bool]:
    """None when the source may set ``name`` to something other than off; else whether it
    stores a false literal under it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    parents: Dict[ast.AST, ast.AST] = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    literal = False
    dashed = name.replace("_", "-")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.lstrip("-") in (name, dashed):
                return None  # ``setattr(o, "debug", ...)``, ``{"debug": ...}``, ``--debug``
        elif isinstance(node, ast.arg) and node.arg == name and not parameters_known:
            return None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return None
        elif isinstance(node, ast.alias) and node.asname == name:
            return None
        elif isinstance(node, ast.keyword) and node.arg == name:
            kind = _ast_value_kind(node.value, name)
            if kind is None:
                return None
            literal = literal or kind
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            if (node.id if isinstance(node, ast.Name) else node.attr) != name:
                continue
            kind = _stored_kind(node, parents, name)
            if kind is None:
                return None
            literal = literal or kind
    return literal


def _stored_kind(target: ast.AST, parents: Dict[ast.AST, ast.AST], name: str) -> Optional[bool]:
    """What a store assigns: True for a false literal, False for a same-named attribute copy,
    None for anything else (a loop target, an augmented assignment, an unaligned unpacking)."""
    parent = parents.get(target)
    value: Optional[ast.AST] = None
    if isinstance(parent, ast.AnnAssign) and isinstance(parents.get(parent), ast.ClassDef):
        return None  # a dataclass / NamedTuple field: a constructor argument, positional ones too
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        value = parent.value
    elif isinstance(parent, (ast.Tuple, ast.List)):
        assign = parents.get(parent)
        if isinstance(assign, ast.Assign) and isinstance(assign.value, (ast.Tuple, ast.List)):
            if len(assign.value.elts) == len(parent.elts):
                value = assign.value.elts[parent.elts.index(target)]
    if value is None:
        return None
    return _ast_value_kind(value, name)


def _ast_value_kind(value: ast.AST, name: str) -> Optional[bool]:
    if isinstance(value, ast.Constant) and not isinstance(value.value, str):
        return True if not value.value else None
    if isinstance(value, ast.Attribute) and value.attr == name:
        return False
    return None
