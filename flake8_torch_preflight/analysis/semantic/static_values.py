"""Plain Python values read out of the source: constants, arithmetic, argparse defaults, configs.

``evaluate(expr, env)`` returns a ``Resolved`` (the value and the node it was written at, whose
line is the value's source) or ``None`` when the value cannot be known without running the
script.  It follows

* literals, module-level and local names (every reaching assignment must agree), function
  parameters through their in-file call sites (``infer.parameter_arguments``) and defaults,
  ``__init__`` parameters through the class's constructor calls; a module-level name assigned
  before a module-level ``exec(...)`` or ``globals()`` write is unknown (nanoGPT's
  configurator overrides globals from the command line);
* ``+ - * / // % **``, unary minus, ``min``/``max``/``int``/``float``/``abs``/``len``, f-strings
  and string concatenation, conditional expressions whose test is known;
* ``args.batch_size`` where ``args`` comes from ``parser.parse_args()`` (or
  ``parse_known_args()[0]``, or a local function returning either): the ``default=`` of the
  matching ``add_argument`` (``type=`` applied to a string default, ``store_true`` = False),
  overridden by ``set_defaults``; the value the script runs with when no flag is given;
* ``cfg["k"]`` / ``cfg.get("k", d)`` on dict literals and ``dict(k=...)``;
* ``cfg.k`` on an instance of an in-file (data)class: the keyword passed to the constructor,
  else the field default or class attribute; ``Config.k`` on the class itself;
* ``NAME`` imported from a sibling module the guard lets astroid read.

Environment variables, files, ``input()`` and anything computed at run time are unknown.
``env`` maps names (``"width"``, ``"self.width"``) to values an interpreter already bound
(``param_count`` binds constructor parameters); its values may be any object, ``UNKNOWN``
included, and are returned as they are.
"""
from __future__ import annotations

import operator
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional

from astroid import nodes
from astroid.exceptions import AstroidError
from astroid.manager import AstroidManager

from . import dataflow, infer, memo

#: How deep name and attribute chains are followed before giving up.
MAX_DEPTH = 12

#: Largest exponent / repetition accepted in arithmetic (keeps ``2 ** 10**9`` out).
MAX_POWER = 64

#: Builtins evaluated on known arguments.
_BUILTINS: Dict[str, Callable[..., Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "abs": abs,
    "min": min,
    "max": max,
    "round": round,
    "len": len,
}

#: Methods that read an ``argparse`` namespace out of a parser.
_PARSE_METHODS = frozenset({"parse_args", "parse_known_args"})

#: argparse actions whose default is fixed by the action itself.
_ACTION_DEFAULTS = {"store_true": False, "store_false": True}

_BINOPS: Dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}

_COMPARE: Dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "is": operator.is_,
    "is not": operator.is_not,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


class Unknown:
    """A value bound in an environment that is known not to be knowable."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()


@dataclass(frozen=True)
class Resolved:
    """A value and the node that wrote it (``node.lineno`` is its source line)."""

    value: Any
    node: nodes.NodeNG

    @property
    def line(self) -> int:
        return int(getattr(self.node, "lineno", None) or 1)


Env = Mapping[str, Any]


def evaluate(expr: Optional[nodes.NodeNG], env: Optional[Env] = None, depth: int = 0) -> Optional[Resolved]:
    """The value of ``expr``, or None when it cannot be known statically."""
    if expr is None or depth > MAX_DEPTH:
        return None
    env = env or {}
    try:
        return _evaluate(expr, env, depth)
    except (AstroidError, RecursionError, ArithmeticError, TypeError, ValueError, LookupError):
        return None


def value_of(expr: Optional[nodes.NodeNG], env: Optional[Env] = None) -> Any:
    """``evaluate(...).value`` or ``UNKNOWN``."""
    found = evaluate(expr, env)
    return UNKNOWN if found is None else found.value


def truth(expr: Optional[nodes.NodeNG], env: Optional[Env] = None, depth: int = 0) -> Optional[bool]:
    """Whether ``expr``, read as an ``if`` test, is true; None when that cannot be known.  ``not``,
    ``and`` and ``or`` are decided by one known operand whatever the others are (``x and False`` is
    false, ``x or True`` is true, with ``x`` unknown); anything else by the truth of its value."""
    if isinstance(expr, nodes.UnaryOp) and expr.op == "not":
        inner = truth(expr.operand, env, depth)
        return None if inner is None else not inner
    if isinstance(expr, nodes.BoolOp) and expr.op in ("and", "or"):
        verdicts = [truth(operand, env, depth) for operand in expr.values]
        deciding = expr.op == "or"  # the operand value that decides the whole test
        if deciding in verdicts:
            return deciding
        return (not deciding) if all(v is not None for v in verdicts) else None
    found = evaluate(expr, env, depth)
    if found is None or not _known(found.value):
        return None
    return bool(found.value)


def int_value(expr: Optional[nodes.NodeNG], env: Optional[Env] = None) -> Optional[Resolved]:
    """A resolved ``int`` (not a bool), or None."""
    found = evaluate(expr, env)
    if found is None or isinstance(found.value, bool) or not isinstance(found.value, int):
        return None
    return found


def str_value(expr: Optional[nodes.NodeNG], env: Optional[Env] = None) -> Optional[Resolved]:
    found = evaluate(expr, env)
    if found is None or not isinstance(found.value, str):
        return None
    return found


def _known(value: Any) -> bool:
    return not isinstance(value, Unknown)


def _evaluate(expr: nodes.NodeNG, env: Env, depth: int) -> Optional[Resolved]:
    if isinstance(expr, nodes.Const):
        return Resolved(expr.value, expr)
    if isinstance(expr, nodes.Name):
        return _name(expr, env, depth)
    if isinstance(expr, nodes.Attribute):
        return _attribute(expr, env, depth)
    if isinstance(expr, nodes.BinOp):
        return _binop(expr, env, depth)
    if isinstance(expr, nodes.UnaryOp):
        operand = evaluate(expr.operand, env, depth + 1)
        if operand is None:
            return None
        if expr.op == "-" and is_number(operand.value):
            return Resolved(-operand.value, expr)
        if expr.op == "+" and is_number(operand.value):
            return operand
        if expr.op == "not":
            return Resolved(not operand.value, expr)
        return None
    if isinstance(expr, (nodes.Tuple, nodes.List)):
        items = []
        for elt in expr.elts:
            if isinstance(elt, nodes.Starred):
                return None
            item = evaluate(elt, env, depth + 1)
            if item is None:
                return None
            items.append(item.value)
        return Resolved(tuple(items) if isinstance(expr, nodes.Tuple) else items, expr)
    if isinstance(expr, nodes.Dict):
        return _dict_literal(expr, env, depth)
    if isinstance(expr, nodes.JoinedStr):
        return _fstring(expr, env, depth)
    if isinstance(expr, nodes.IfExp):
        return _ifexp(expr, env, depth)
    if isinstance(expr, nodes.BoolOp):
        return _boolop(expr, env, depth)
    if isinstance(expr, nodes.Compare):
        return _compare(expr, env, depth)
    if isinstance(expr, nodes.Subscript):
        return _subscript(expr, env, depth)
    if isinstance(expr, nodes.Call):
        return _call(expr, env, depth)
    return None


def literal_values(node: nodes.NodeNG) -> Optional[int]:
    """How many values a literal written in the source holds (``[[0, 1], [1, 0]]``: 4; ``[0.0] * 4096``
    repeats its list; ``-1`` is one), or None when something in it is not written out (a name, a call)."""
    if isinstance(node, nodes.Const) or (isinstance(node, nodes.UnaryOp) and isinstance(node.operand, nodes.Const)):
        return 1
    if isinstance(node, (nodes.List, nodes.Tuple)):
        counts = [literal_values(element) for element in node.elts]
        return None if any(c is None for c in counts) else sum(counts)  # type: ignore[arg-type]
    if isinstance(node, nodes.BinOp) and node.op == "*":
        for literal, times in ((node.left, node.right), (node.right, node.left)):
            if isinstance(times, nodes.Const) and isinstance(times.value, int):
                inner = literal_values(literal)
                return None if inner is None else inner * times.value
    return None


def is_number(value: Any) -> bool:
    """An int or float value (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ------------------------------------------------------------------------------------ names


def _name(name: nodes.Name, env: Env, depth: int) -> Optional[Resolved]:
    if name.name in env:
        return _from_env(env[name.name], name)
    if name.name in ("True", "False", "None"):
        return Resolved({"True": True, "False": False, "None": None}[name.name], name)
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    if not bindings or len(bindings) > dataflow.MAX_BINDINGS:
        return None
    if len(bindings) > 1:
        bindings = [b for b in bindings if not _branch_not_taken(b, depth)] or bindings
    found: Optional[Resolved] = None
    for binding in bindings:
        value = _binding_value(binding, name, env, depth)
        if value is None:
            return None
        if found is not None and found.value != value.value:
            return None
        found = found or value
    return found


def live_value(expr: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    """The one expression a name is bound to once the assignments in branches that known tests
    rule out are left aside (``strategy = FSDPStrategy(...)`` under ``if devices > 1`` with
    ``devices`` 8); the expression itself when it is not a name; None when several remain."""
    if not isinstance(expr, nodes.Name):
        return expr
    try:
        _, bindings = expr.lookup(expr.name)
    except (AstroidError, RecursionError):
        return None
    if not bindings or len(bindings) > dataflow.MAX_BINDINGS:
        return None
    live = [b for b in bindings if not _branch_not_taken(b, 0)]
    if len(live) != 1 or not isinstance(live[0], nodes.AssignName):
        return None
    if isinstance(live[0].scope(), nodes.Module) and rewritten_later(live[0]):
        return None
    return dataflow._value_of_binding(live[0])


#: ``_branch_not_taken`` per binding, for the file: names in branch tests lead to other names' bindings and
#: their branches, so without it a module of chained ``if`` flags is read exponentially often.
_NOT_TAKEN: "Dict[int, bool]" = memo.per_file()


def _branch_not_taken(binding: nodes.NodeNG, depth: int) -> bool:
    """The assignment sits in an ``if`` branch that the known test of an enclosing ``if`` (in the
    same scope) rules out: ``if tpu: devices = "auto"`` with ``tpu`` False. Answered once per binding
    and file (a binding met again while its answer is being worked out counts as taken)."""
    key = id(binding)
    if key not in _NOT_TAKEN:
        _NOT_TAKEN[key] = False  # provisional, guards the recursion through the tests' names
        _NOT_TAKEN[key] = _not_taken(binding, depth)
    return _NOT_TAKEN[key]


def _not_taken(binding: nodes.NodeNG, depth: int) -> bool:
    scope = binding.scope()
    child, parent = binding, binding.parent
    while parent is not None and parent is not scope:
        if isinstance(parent, nodes.If) and child is not parent.test:
            test = truth(parent.test, {}, depth + 1)
            if test is not None:
                in_body = any(child is statement for statement in parent.body)
                if test != in_body:
                    return True
        child, parent = parent, parent.parent
    return False


def _from_env(bound: Any, node: nodes.NodeNG) -> Optional[Resolved]:
    """A value an interpreter bound: a ``Resolved`` as it is; a Python list or tuple of
    ``Resolved`` items as one value; ``UNKNOWN`` and lists holding other things as unknown."""
    if isinstance(bound, Resolved):
        return bound
    if isinstance(bound, Unknown):
        return None
    if isinstance(bound, (list, tuple)):
        if not all(isinstance(item, Resolved) for item in bound):
            return None
        return Resolved(type(bound)(item.value for item in bound), node)
    return Resolved(bound, node)


def _binding_value(binding: nodes.NodeNG, use: nodes.NodeNG, env: Env, depth: int) -> Optional[Resolved]:
    same_scope = binding.scope() is use.scope()
    if isinstance(binding.scope(), nodes.Module) and rewritten_later(binding):
        return None
    scope_env = env if same_scope else {}
    if isinstance(binding, nodes.AssignName):
        parent = binding.parent
        if isinstance(parent, nodes.Arguments):
            return _parameter(use, depth) if isinstance(use, nodes.Name) else None
        value = dataflow._value_of_binding(binding)
        if value is not None:
            return evaluate(value, scope_env, depth + 1)
        if isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
            return _unpacked(binding, parent, scope_env, depth)
        return None
    if isinstance(binding, nodes.ImportFrom):
        return _imported_constant(binding, use, depth)
    return None


def parameter_arguments(use: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """Argument expressions every in-file call site passes for a parameter: plain functions
    through ``infer.parameter_arguments``; ``__init__`` parameters through the class's
    constructor calls (``Trainer(args)``). None when unknown."""
    found = infer.parameter_arguments(use)
    if found is not None:
        return found
    try:
        _, bindings = use.lookup(use.name)
    except (AstroidError, RecursionError):
        return None
    parameters = [b for b in bindings if isinstance(b.parent, nodes.Arguments)]
    if len(parameters) != 1:
        return None
    arguments = parameters[0].parent
    function = arguments.parent
    if isinstance(function, nodes.FunctionDef) and function.name != "__init__":
        return _cli_default(use, function, arguments)
    if len(bindings) != 1:
        return None
    if not isinstance(function, nodes.FunctionDef):
        return None
    cls = function.parent
    if not isinstance(cls, nodes.ClassDef):
        return None
    positional = [a.name for a in (arguments.posonlyargs or []) + (arguments.args or [])][1:]
    calls = [c for c in cls.root().nodes_of_class(nodes.Call)
             if isinstance(c.func, nodes.Name) and c.func.name == cls.name]
    if not calls:
        return None
    result: List[nodes.NodeNG] = []
    for call in calls:
        if has_opaque_arguments(call):
            return None
        value = infer.argument(call, use.name, positional.index(use.name) if use.name in positional else None)
        if value is None:
            try:
                value = arguments.default_value(use.name)
            except Exception:
                return None
        result.append(value)
    return result


#: Command-line builders that call a function with its parameters filled from the command line
#: (``CLI(setup)``, ``fire.Fire(main)``): with no flag given, every parameter keeps its default.
CLI_ENTRIES = frozenset({"jsonargparse.CLI", "jsonargparse.auto_cli", "fire.Fire", "litgpt.utils.CLI",
                         "lit_gpt.utils.CLI"})


def _cli_default(use: nodes.Name, function: nodes.FunctionDef, arguments: nodes.Arguments
                 ) -> Optional[List[nodes.NodeNG]]:
    """The default of a parameter of a module-level function that the file hands to a command-line
    builder (``CLI_ENTRIES``) and never calls itself: the value the run has when no flag is given,
    as an ``argparse`` default is. None otherwise."""
    if not isinstance(function.parent, nodes.Module) or function.is_method():
        return None
    handed = False
    for call in function.root().nodes_of_class(nodes.Call):
        if isinstance(call.func, nodes.Name) and call.func.name == function.name:
            return None  # called in the file: its call sites decide
        if any(isinstance(a, nodes.Name) and a.name == function.name for a in call.args) and (
                infer.dotted_name(call.func) in CLI_ENTRIES):
            handed = True
    if not handed:
        return None
    try:
        return [arguments.default_value(use.name)]
    except Exception:  # astroid's NoDefault: a required parameter
        return None


_GLOBAL_REWRITES: "Dict[nodes.Module, List[int]]" = memo.per_file()


def rewritten_later(binding: nodes.NodeNG) -> bool:
    """A module-level name assigned before a module-level ``exec(...)`` or ``globals()``
    write (nanoGPT's ``exec(open('configurator.py').read())`` overrides globals from the
    command line): its value is whatever runs, not what is written."""
    module = binding.root()
    lines = _GLOBAL_REWRITES.get(module)
    if lines is None:
        lines = []
        for call in module.nodes_of_class(nodes.Call):
            if isinstance(call.scope(), nodes.Module) and _rewrites_globals(call):
                lines.append(int(call.lineno or 0))
        _GLOBAL_REWRITES[module] = lines
    line = int(getattr(binding, "lineno", 0) or 0)
    return any(line < rewrite for rewrite in lines)


def _rewrites_globals(call: nodes.Call) -> bool:
    func = call.func
    if isinstance(func, nodes.Name) and func.name in ("exec", "execfile"):
        return not _command_line_configurator(call)
    if isinstance(func, nodes.Attribute) and func.attrname in ("update", "__setitem__", "setdefault"):
        receiver = func.expr
        return isinstance(receiver, nodes.Call) and infer.call_name(receiver) in ("globals", "vars")
    return False


#: Largest configurator file read to tell what it does.
MAX_CONFIGURATOR_BYTES = 64 * 1024


def _command_line_configurator(call: nodes.Call) -> bool:
    """``exec(open('configurator.py').read())`` where that file, next to the script, overrides the
    globals only from the command line (it reads ``sys.argv``): like ``argparse``, the globals
    written before it are the run's values when no flag is given. The file is read as text,
    never run."""
    if len(call.args) != 1 or call.keywords:
        return False
    read = call.args[0]
    if not (isinstance(read, nodes.Call) and infer.method_name(read) == "read" and not read.args
            and isinstance(read.func, nodes.Attribute) and isinstance(read.func.expr, nodes.Call)):
        return False
    opened = read.func.expr
    if not (isinstance(opened.func, nodes.Name) and opened.func.name == "open" and opened.args
            and isinstance(opened.args[0], nodes.Const) and isinstance(opened.args[0].value, str)):
        return False
    context = getattr(call.root(), "file", None)
    if not context:
        return False
    path = os.path.join(os.path.dirname(os.path.abspath(str(context))), opened.args[0].value)
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_CONFIGURATOR_BYTES:
            return False
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return False
    return "sys.argv" in text


def _parameter(use: nodes.Name, depth: int) -> Optional[Resolved]:
    """A parameter: the value every in-file call site passes (defaults count)."""
    arguments = parameter_arguments(use)
    if not arguments:
        return None
    found: Optional[Resolved] = None
    for argument in arguments:
        value = evaluate(argument, {}, depth + 1)
        if value is None or (found is not None and found.value != value.value):
            return None
        found = found or value
    return found


def _unpacked(binding: nodes.AssignName, target: nodes.Tuple, env: Env, depth: int) -> Optional[Resolved]:
    assign = target.parent
    index = target.elts.index(binding)
    value = assign.value
    if isinstance(value, nodes.Tuple) and len(value.elts) == len(target.elts):
        return evaluate(value.elts[index], env, depth + 1)
    if index == 0 and isinstance(value, nodes.Call) and infer.method_name(value) == "parse_known_args":
        return Resolved(_Namespace(value), value)
    return None


def _imported_constant(binding: nodes.ImportFrom, use: nodes.NodeNG, depth: int) -> Optional[Resolved]:
    module = sibling_module(binding)
    if module is None:
        return None
    for name, alias in binding.names:
        if (alias or name) == getattr(use, "name", None):
            try:
                assigned = module.locals.get(name, [])
            except AttributeError:
                return None
            if len(assigned) != 1:
                return None
            target = assigned[0]
            if isinstance(target, nodes.AssignName):
                value = dataflow._value_of_binding(target)
                return None if value is None else evaluate(value, {}, depth + 1)
    return None


def sibling_module(binding: nodes.ImportFrom) -> Optional[nodes.Module]:
    """The module a ``from X import ...`` of the checked file names, read next to that file.

    The guard in ``brain`` still refuses torch and installed packages; only the user's own
    modules (in the script's folder) are read, never executed.
    """
    return _module_named(binding.modname, binding.root(), binding.level or 0)


def project_module(expr: nodes.NodeNG) -> Optional[nodes.Module]:
    """The project module a name stands for (``import models_mae``; ``from pkg import models``),
    read next to the checked file under the same guard as ``sibling_module``, and only from the
    checked file's folder tree; None otherwise."""
    binding = dataflow.sole_binding(expr) if isinstance(expr, nodes.Name) else None
    if binding is None:
        return None
    names: List[str] = []
    level = 0
    if isinstance(binding, nodes.Import):
        names = [name for name, alias in binding.names if (alias or name) == expr.name and "." not in name]
    elif isinstance(binding, nodes.ImportFrom) and binding.modname is not None:
        level = binding.level or 0
        names = [
            "{}.{}".format(binding.modname, name) if binding.modname else name
            for name, alias in binding.names if (alias or name) == expr.name
        ]
    if len(names) != 1:
        return None
    root = binding.root()
    module = _module_named(names[0], root, level)
    if module is None:
        return None
    path = getattr(module, "file", None) or ""
    here = os.path.dirname(os.path.abspath(str(root.file)))
    if not path or not os.path.abspath(path).startswith(here + os.sep):
        return None  # an installed package, not the project
    return module


def _module_named(name: Optional[str], root: nodes.Module, level: int) -> Optional[nodes.Module]:
    """The module ``name`` (relative to ``root`` by ``level`` dots) as astroid reads it from
    ``root``'s file under ``brain``'s guard; None when it cannot be read or is ``root`` itself."""
    context = getattr(root, "file", None)
    if not context or name is None:
        return None
    try:
        if level:
            name = root.relative_to_absolute_name(name, level)
        module = AstroidManager().ast_from_module_name(name, context_file=context)
    except (AstroidError, RecursionError, ValueError, ImportError, OSError):
        return None
    return module if isinstance(module, nodes.Module) and module is not root else None


def evaluate_node(expr: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    """The expression a name is bound to once (in the file, or in the sibling module it is
    imported from): ``DiT_models`` -> the dict literal of ``models.py``; None otherwise."""
    binding = dataflow.sole_binding(expr) if isinstance(expr, nodes.Name) else None
    if binding is None:
        return None
    if isinstance(binding, nodes.AssignName):
        if isinstance(binding.scope(), nodes.Module) and rewritten_later(binding):
            return None
        return dataflow._value_of_binding(binding)
    if isinstance(binding, nodes.ImportFrom):
        module = sibling_module(binding)
        if module is None:
            return None
        for name, alias in binding.names:
            if (alias or name) == expr.name:
                assigned = module.locals.get(name, [])
                if len(assigned) == 1 and isinstance(assigned[0], nodes.AssignName):
                    return dataflow._value_of_binding(assigned[0])
    return None


# ------------------------------------------------------------------------------- attributes


@dataclass(frozen=True)
class _Namespace:
    """An argparse namespace: the ``parse_args`` call that made it."""

    call: nodes.Call


@dataclass(frozen=True)
class _Instance:
    """An instance of an in-file class: the constructor call and the class."""

    call: nodes.Call
    cls: nodes.ClassDef


def _attribute(attr: nodes.Attribute, env: Env, depth: int) -> Optional[Resolved]:
    key = attr.as_string()
    if key in env:
        return _from_env(env[key], attr)
    base = _base_object(attr.expr, env, depth)
    if isinstance(base, _Namespace):
        return _argparse_default(base.call, attr.attrname, depth)
    if isinstance(base, _Instance):
        return _instance_attribute(base, attr.attrname, depth)
    if isinstance(base, nodes.ClassDef):
        return _class_attribute(base, attr.attrname, depth)
    if isinstance(base, nodes.Module):
        assigned = base.locals.get(attr.attrname, [])
        if len(assigned) == 1 and isinstance(assigned[0], nodes.AssignName):
            value = dataflow._value_of_binding(assigned[0])
            return None if value is None else evaluate(value, {}, depth + 1)
    if isinstance(attr.expr, nodes.Name) and attr.expr.name == "self":
        values = dataflow.assigned_values(attr)
        if values and len(values) == 1:
            return evaluate(values[0], {}, depth + 1)
    return None


def _base_object(expr: nodes.NodeNG, env: Env, depth: int) -> Any:
    """What the receiver of an attribute read is: a namespace, an instance, a class, a module."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, nodes.Name) and expr.name in env:
        bound = env[expr.name]
        return bound.value if isinstance(bound, Resolved) else bound
    if isinstance(expr, nodes.Call):
        return _call_object(expr, depth)
    if isinstance(expr, nodes.Subscript):
        if isinstance(expr.value, nodes.Call) and infer.method_name(expr.value) == "parse_known_args":
            index = evaluate(expr.slice, env, depth + 1)
            if index is not None and index.value == 0:
                return _Namespace(expr.value)
        return None
    if not isinstance(expr, nodes.Name):
        return None
    try:
        _, bindings = expr.lookup(expr.name)
    except (AstroidError, RecursionError):
        return None
    found: Any = None
    for binding in bindings:
        obj: Any = None
        if isinstance(binding, nodes.ClassDef):
            obj = binding
        elif isinstance(binding, nodes.AssignName):
            value = dataflow._value_of_binding(binding)
            if value is not None:
                obj = _base_object(value, {}, depth + 1)
            elif isinstance(binding.parent, nodes.Tuple):
                resolved = _unpacked(binding, binding.parent, {}, depth) if isinstance(
                    binding.parent.parent, nodes.Assign) else None
                obj = resolved.value if resolved is not None else None
            elif isinstance(binding.parent, nodes.Arguments):
                arguments = parameter_arguments(expr) or []
                objs = [_base_object(a, {}, depth + 1) for a in arguments]
                if objs and all(o is not None and o == objs[0] for o in objs):
                    obj = objs[0]
        elif isinstance(binding, nodes.Import):
            obj = None
        if obj is None or (found is not None and found != obj):
            return None
        found = obj
    return found


def _call_object(call: nodes.Call, depth: int) -> Any:
    method = infer.method_name(call)
    if method in _PARSE_METHODS:
        return _Namespace(call) if method == "parse_args" else None
    func = call.func
    if isinstance(func, nodes.Name):
        target = dataflow.sole_binding(func)
        if target is None:
            return None
        if isinstance(target, nodes.ClassDef):
            return _Instance(call, target)
        if isinstance(target, nodes.FunctionDef):
            returns = [r.value for r in target.nodes_of_class(nodes.Return) if r.scope() is target]
            objs = [_base_object(r, {}, depth + 1) if r is not None else None for r in returns]
            if objs and all(o is not None and o == objs[0] for o in objs):
                return objs[0]
    return None


def _argparse_default(parse_call: nodes.Call, dest: str, depth: int) -> Optional[Resolved]:
    """The value ``args.<dest>`` has when the script runs without that flag."""
    module = parse_call.root()
    found: List[Resolved] = []
    for call in module.nodes_of_class(nodes.Call):
        method = infer.method_name(call)
        if method == "set_defaults":
            for kw in call.keywords or ():
                if kw.arg == dest:
                    value = evaluate(kw.value, {}, depth + 1)
                    return value
        if method != "add_argument" or _argument_dest(call) != dest:
            continue
        value = _add_argument_default(call, depth)
        if value is None:
            return None
        found.append(value)
    if not found or any(v.value != found[0].value for v in found[1:]):
        return None
    return found[0]


def _argument_dest(call: nodes.Call) -> Optional[str]:
    for kw in call.keywords or ():
        if kw.arg == "dest":
            return kw.value.value if isinstance(kw.value, nodes.Const) and isinstance(kw.value.value, str) else None
    flags = [a.value for a in call.args if isinstance(a, nodes.Const) and isinstance(a.value, str)]
    longs = [f for f in flags if f.startswith("--")]
    if longs:
        return str(longs[0][2:].replace("-", "_"))
    if flags and not flags[0].startswith("-"):
        return str(flags[0])
    if flags:
        return str(flags[0].lstrip("-").replace("-", "_"))
    return None


def _add_argument_default(call: nodes.Call, depth: int) -> Optional[Resolved]:
    keywords = {kw.arg: kw.value for kw in call.keywords or () if kw.arg}
    action = keywords.get("action")
    action_name = action.value if isinstance(action, nodes.Const) else None
    if "default" not in keywords:
        if action_name in _ACTION_DEFAULTS:
            return Resolved(_ACTION_DEFAULTS[action_name], call)
        return None  # argparse gives None: the script must be told the value
    value = evaluate(keywords["default"], {}, depth + 1)
    if value is None:
        return None
    kind = keywords.get("type")
    if isinstance(value.value, str) and isinstance(kind, nodes.Name) and kind.name in ("int", "float"):
        convert = int if kind.name == "int" else float
        return Resolved(convert(value.value), value.node)
    return value


def _instance_attribute(instance: _Instance, name: str, depth: int) -> Optional[Resolved]:
    call, cls = instance.call, instance.cls
    for kw in call.keywords or ():
        if kw.arg == name:
            return evaluate(kw.value, {}, depth + 1)
        if kw.arg is None:
            return None
    fields = _dataclass_fields(cls)
    if fields is not None:
        if name in fields:
            index = fields.index(name)
            if any(isinstance(a, nodes.Starred) for a in call.args):
                return None
            if index < len(call.args):
                return evaluate(call.args[index], {}, depth + 1)
        elif call.args:
            return None
    elif call.args:
        return None
    return _class_attribute(cls, name, depth)


def _dataclass_fields(cls: nodes.ClassDef) -> Optional[List[str]]:
    """Field names of a ``@dataclass`` class in order, or None for other classes."""
    decorators = cls.decorators.nodes if cls.decorators else []
    is_dataclass = False
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, nodes.Call) else decorator
        name = target.attrname if isinstance(target, nodes.Attribute) else getattr(target, "name", None)
        if name == "dataclass":
            is_dataclass = True
    if not is_dataclass:
        return None
    return [stmt.target.name for stmt in cls.body
            if isinstance(stmt, nodes.AnnAssign) and isinstance(stmt.target, nodes.AssignName)]


def _class_attribute(cls: nodes.ClassDef, name: str, depth: int) -> Optional[Resolved]:
    for stmt in cls.body:
        if isinstance(stmt, nodes.AnnAssign) and isinstance(stmt.target, nodes.AssignName):
            if stmt.target.name == name:
                value = stmt.value
                if isinstance(value, nodes.Call) and infer.call_name(value) == "field":
                    value = next((kw.value for kw in value.keywords or () if kw.arg == "default"), None)
                return evaluate(value, {}, depth + 1) if value is not None else None
        if isinstance(stmt, nodes.Assign):
            for target in stmt.targets:
                if isinstance(target, nodes.AssignName) and target.name == name:
                    return evaluate(stmt.value, {}, depth + 1)
    return None


# ------------------------------------------------------------------------------ expressions


def _binop(expr: nodes.BinOp, env: Env, depth: int) -> Optional[Resolved]:
    left = evaluate(expr.left, env, depth + 1)
    right = evaluate(expr.right, env, depth + 1)
    if left is None or right is None or expr.op not in _BINOPS:
        return None
    a, b = left.value, right.value
    if expr.op == "**" and (not is_number(b) or abs(b) > MAX_POWER):
        return None
    if expr.op == "*" and (isinstance(a, (str, list, tuple)) or isinstance(b, (str, list, tuple))):
        count = b if isinstance(a, (str, list, tuple)) else a
        if not isinstance(count, int) or count > 10_000:
            return None
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    return Resolved(_BINOPS[expr.op](a, b), expr)


def _dict_literal(expr: nodes.Dict, env: Env, depth: int) -> Optional[Resolved]:
    result: Dict[Any, Resolved] = {}
    for key, value in expr.items:
        if isinstance(key, nodes.DictUnpack):
            return None
        k = evaluate(key, env, depth + 1)
        if k is None:
            return None
        v = evaluate(value, env, depth + 1)
        result[k.value] = v if v is not None else Resolved(UNKNOWN, value)
    return Resolved(ConfigDict(result), expr)


class ConfigDict(dict):  # type: ignore[type-arg]
    """A dict literal's items as ``Resolved`` values (unknown items hold ``UNKNOWN``)."""

    def plain(self) -> Dict[Any, Any]:
        return {k: (v.value.plain() if isinstance(v.value, ConfigDict) else v.value) for k, v in self.items()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigDict) and self.plain() == other.plain()

    def __hash__(self) -> int:  # pragma: no cover - not used as a key
        return id(self)


def _fstring(expr: nodes.JoinedStr, env: Env, depth: int) -> Optional[Resolved]:
    parts: List[str] = []
    for value in expr.values:
        if isinstance(value, nodes.Const):
            parts.append(str(value.value))
        elif isinstance(value, nodes.FormattedValue):
            if value.format_spec is not None or value.conversion not in (-1, None):
                return None
            inner = evaluate(value.value, env, depth + 1)
            if inner is None or not isinstance(inner.value, (str, int, float)):
                return None
            parts.append(str(inner.value))
        else:
            return None
    return Resolved("".join(parts), expr)


def _ifexp(expr: nodes.IfExp, env: Env, depth: int) -> Optional[Resolved]:
    test = evaluate(expr.test, env, depth + 1)
    if test is not None:
        return evaluate(expr.body if test.value else expr.orelse, env, depth + 1)
    body = evaluate(expr.body, env, depth + 1)
    orelse = evaluate(expr.orelse, env, depth + 1)
    if body is not None and orelse is not None and body.value == orelse.value:
        return body
    return None


def _boolop(expr: nodes.BoolOp, env: Env, depth: int) -> Optional[Resolved]:
    result: Optional[Resolved] = None
    for operand in expr.values:
        result = evaluate(operand, env, depth + 1)
        if result is None:
            return None
        if expr.op == "or" and result.value:
            return result
        if expr.op == "and" and not result.value:
            return result
    return result


def _compare(expr: nodes.Compare, env: Env, depth: int) -> Optional[Resolved]:
    left = evaluate(expr.left, env, depth + 1)
    if left is None:
        return None
    current = left.value
    for op, right_node in expr.ops:
        right = evaluate(right_node, env, depth + 1)
        if right is None or op not in _COMPARE:
            return None
        if not _COMPARE[op](current, right.value):
            return Resolved(False, expr)
        current = right.value
    return Resolved(True, expr)


def _subscript(expr: nodes.Subscript, env: Env, depth: int) -> Optional[Resolved]:
    base = evaluate(expr.value, env, depth + 1)
    if base is None:
        return None
    index = evaluate(expr.slice, env, depth + 1)
    if index is None:
        return None
    container = base.value
    if isinstance(container, ConfigDict):
        item = container.get(index.value)
        if item is None or isinstance(item.value, Unknown):
            return None
        return item
    if isinstance(container, (list, tuple, str)) and isinstance(index.value, int):
        if not -len(container) <= index.value < len(container):
            return None  # an index the source's value does not reach (a list filled later, at run time)
        return Resolved(container[index.value], expr)
    if isinstance(container, dict):
        return Resolved(container[index.value], expr) if index.value in container else None
    return None


def _call(call: nodes.Call, env: Env, depth: int) -> Optional[Resolved]:
    func = call.func
    obj = _call_object(call, depth)
    if obj is not None:
        return Resolved(obj, call)
    if isinstance(func, nodes.Attribute) and func.attrname == "get" and len(call.args) in (1, 2):
        base = evaluate(func.expr, env, depth + 1)
        key = evaluate(call.args[0], env, depth + 1)
        if base is None or key is None or not isinstance(base.value, ConfigDict):
            return None
        item = base.value.get(key.value)
        if item is not None:
            return None if isinstance(item.value, Unknown) else item
        return evaluate(call.args[1], env, depth + 1) if len(call.args) == 2 else Resolved(None, call)
    if not isinstance(func, nodes.Name) or call.keywords and func.name != "dict":
        return None
    if func.name == "dict" and not call.args and _is_builtin(func):
        items: Dict[Any, Resolved] = {}
        for kw in call.keywords or ():
            if kw.arg is None:
                return None
            value = evaluate(kw.value, env, depth + 1)
            items[kw.arg] = value if value is not None else Resolved(UNKNOWN, kw.value)
        return Resolved(ConfigDict(items), call)
    builtin = _BUILTINS.get(func.name)
    if builtin is None or not _is_builtin(func):
        return None
    args: List[Any] = []
    for arg in call.args:
        if isinstance(arg, nodes.Starred):
            return None
        value = evaluate(arg, env, depth + 1)
        if value is None:
            return None
        args.append(value.value)
    if func.name in ("min", "max") and len(args) == 1 and not isinstance(args[0], (list, tuple)):
        return None
    return Resolved(builtin(*args), call)


def _is_builtin(name: nodes.Name) -> bool:
    """``name`` is not rebound in the file (so ``int`` is the builtin)."""
    try:
        scope, _ = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return False
    return scope.name == "builtins" if isinstance(scope, nodes.Module) else False


def has_opaque_arguments(call: nodes.Call) -> bool:
    """``*args`` or ``**kwargs`` in the call: any argument may be hidden there."""
    return any(isinstance(a, nodes.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords or ())


def bind_arguments(
    call: nodes.Call,
    function: nodes.FunctionDef,
    evaluator: Callable[[nodes.NodeNG, Env], Any],
    env: Env,
) -> Optional[Dict[str, Any]]:
    """Parameters of ``function`` (``self`` left out for methods) bound to what ``evaluator``
    makes of ``call``'s arguments in ``env``, or of the defaults in the definition's scope.

    None when the call cannot be matched: ``*args``/``**kwargs`` at the call, too many
    positional arguments, an unknown keyword, or a required parameter not given.
    """
    if has_opaque_arguments(call):
        return None
    args = function.args
    positional = [a.name for a in (args.posonlyargs or []) + (args.args or [])]
    if positional and function.is_method() and function.type != "staticmethod":
        positional = positional[1:]
    kwonly = [a.name for a in args.kwonlyargs or []]
    given: Dict[str, nodes.NodeNG] = {}
    if len(call.args) > len(positional):
        return None
    for name, arg in zip(positional, call.args):
        given[name] = arg
    for kw in call.keywords or ():
        if kw.arg not in positional and kw.arg not in kwonly:
            return None
        given[str(kw.arg)] = kw.value
    result: Dict[str, Any] = {}
    for name in positional + kwonly:
        if name in given:
            result[name] = evaluator(given[name], env)
            continue
        try:
            default = args.default_value(name)
        except Exception:
            return None
        result[name] = evaluator(default, {})
    return result
