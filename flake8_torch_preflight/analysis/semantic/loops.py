"""Loops around a node, the calls a loop makes each iteration, the training loop, and how many items a loop takes."""
from __future__ import annotations

import itertools
import operator
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from astroid import nodes
from astroid.exceptions import AstroidError

from ..setup import brain
from . import dataflow, infer, memo, static_values

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


#: The fields of a compound statement that hold statement lists.
BLOCK_FIELDS = ("body", "orelse", "handlers", "finalbody")


def earlier_in_block(statement: nodes.NodeNG) -> Optional[List[nodes.NodeNG]]:
    """The statements before ``statement`` in the statement list that holds it (a body, an ``else``, a
    handler list, a ``finally``), in order; None when its parent holds it in no such list."""
    found = _split_block(statement)
    return None if found is None else found[0]


def later_in_block(statement: nodes.NodeNG) -> Optional[List[nodes.NodeNG]]:
    """The statements after ``statement`` in the statement list that holds it, in order; None when its
    parent holds it in no such list."""
    found = _split_block(statement)
    return None if found is None else found[1]


def _split_block(statement: nodes.NodeNG) -> "Optional[Tuple[List[nodes.NodeNG], List[nodes.NodeNG]]]":
    parent = statement.parent
    for field in BLOCK_FIELDS:
        block = getattr(parent, field, None)
        if isinstance(block, list):
            for index, item in enumerate(block):
                if item is statement:
                    return block[:index], block[index + 1:]
    return None


def run_before(node: nodes.NodeNG, within_iteration: bool = False) -> Iterator[nodes.NodeNG]:
    """What runs on every path to ``node`` before it, within its function (or module): the statements
    ahead of it in its block and in each enclosing block, and the test of each ``if`` around it, nearest
    first.  With ``within_iteration`` the walk stops at the innermost loop: what ran earlier in the same
    iteration.  A branch's or loop's body ahead of ``node`` is yielded as its statement: the caller
    decides which of its parts always run."""
    child: nodes.NodeNG = node.statement()
    parent = child.parent
    stops = _SCOPES + ((nodes.For, nodes.While) if within_iteration else ())
    while parent is not None:
        if isinstance(parent, nodes.If) and (child in parent.body or child in parent.orelse):
            yield parent.test
        if not isinstance(parent, nodes.ClassDef) and not isinstance(child, nodes.ExceptHandler):
            yield from reversed(earlier_in_block(child) or [])  # an earlier handler is an alternative
        if isinstance(parent, stops):
            return
        child, parent = parent, parent.parent


def enclosing_function(node: nodes.NodeNG) -> Optional[nodes.FunctionDef]:
    """The ``def`` a node runs in, looking through comprehensions (None at module level or in a lambda)."""
    scope = node.scope()
    while isinstance(scope, (nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)):
        scope = scope.parent.scope()
    return scope if isinstance(scope, nodes.FunctionDef) else None


def body_nodes(loop: Loop) -> Iterator[nodes.NodeNG]:
    """The statements of a loop's body (not its iterable, test or else)."""
    yield from loop.body


def calls_in(
    statements: "List[nodes.NodeNG] | Iterator[nodes.NodeNG]",
    helper_depth: int = 2,
    *,
    callee: "Optional[Callable[[nodes.Call], Optional[nodes.FunctionDef]]]" = None,
    expanded: Optional[Set[int]] = None,
    as_run: bool = False,
) -> List[nodes.Call]:
    """Calls made by ``statements``, plus calls inside helpers of this file they call.

    A helper is a function or method defined in the checked file that a call
    resolves to (``self.optimizer_step()``, ``train_step(...)``; ``callee`` when given, for a
    layer that knows more calls that run a body, such as constructors); its body is expanded up to
    ``helper_depth`` levels, each helper once (``expanded``: the ids of functions not to expand,
    shared by the caller across walks).  ``as_run``: the statements as they execute, calls in
    evaluation order (``infer.calls_in_order``) and definitions skipped (a ``def`` runs nothing);
    otherwise a nested definition's calls are counted with its enclosing statements (a closure
    handed to ``optimizer.step(closure)`` runs in that loop).
    """
    found: List[nodes.Call] = []
    seen: Set[int] = set() if expanded is None else expanded
    resolve = local_helper if callee is None else callee
    calls_of = infer.calls_in_order if as_run else infer.iter_calls

    def visit(stmts: "List[nodes.NodeNG] | Iterator[nodes.NodeNG]", depth: int) -> None:
        for stmt in stmts:
            if as_run and isinstance(stmt, (nodes.FunctionDef, nodes.ClassDef)):
                continue
            for call in calls_of(stmt):
                found.append(call)
                if depth <= 0:
                    continue
                helper = resolve(call)
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
    if not imported_from_project(call.func):
        return None  # no def of that name in the file and not a project import: not a helper
    func = infer.function_def(call.func)
    if func is None or func.is_method() or not brain.project_module(str(func.root().name)):
        return None
    return func


def of_project(node: nodes.NodeNG, site: nodes.NodeNG) -> bool:
    """``node`` is defined in the file of ``site`` or in another module of the project (not torch's
    stubs, not a library)."""
    root = node.root()
    return root is site.root() or brain.project_module(str(root.name))


def project_callee(call: nodes.Call) -> "Tuple[Optional[nodes.FunctionDef], Optional[nodes.ClassDef]]":
    """The function of another module of the project that ``call`` runs, and the class when it builds
    one: a function (``utils.setup(cfg)``), a method of an instance of a project class
    (``solver.train(n)``), or a project class's ``__init__`` (``Solver(cfg)``, with the class).
    (None, None) for the checked file's own functions (expanded by the run where it calls them),
    torch's stubs and libraries."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return None, None
    target = infer.safe_infer(call.func)
    klass = target if isinstance(target, nodes.ClassDef) else None
    func = infer.class_method(klass, "__init__") if klass is not None else infer.function_def(call.func)
    if func is None or func.root() is call.root() or not brain.project_module(str(func.root().name)):
        return None, None
    return func, klass


def rejected_argument(call: nodes.Call) -> Optional[str]:
    """The argument ``call`` passes that its callee does not take, so that the call raises a TypeError
    (the keyword's name, or ``"positional"``), or None.  Judged for an undecorated function or class of
    the project (``of_project``) whose signature is read: a keyword that is none of its parameters with
    no ``**kwargs``, more positional arguments than it takes with no ``*args``
    (``AFADDataset(root, transforms=t)`` for ``def __init__(self, root, transform=None)``).  A class is
    judged by the ``__init__`` it runs, when every class up to the one defining it is read and none has
    a decorator, a metaclass or a ``__new__``; a call unpacking ``*args``/``**kwargs`` is not judged."""
    if any(isinstance(a, nodes.Starred) for a in call.args) or any(k.arg is None for k in call.keywords or ()):
        return None
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return None
    target = infer.safe_infer(call.func)
    bound = isinstance(target, nodes.ClassDef)
    if bound:
        func = _constructor(target)
    elif isinstance(target, nodes.FunctionDef) and isinstance(target.parent, (nodes.Module, nodes.FunctionDef)):
        func = target
    else:
        return None
    if func is None or func.decorators is not None or func.args.args is None or not of_project(func, call):
        return None
    arguments = func.args
    positional = list(arguments.posonlyargs or []) + list(arguments.args)
    names = {a.name for a in list(arguments.args) + list(arguments.kwonlyargs or [])}
    for keyword in call.keywords or ():
        if keyword.arg not in names and arguments.kwarg is None:
            return str(keyword.arg)
    if len(call.args) > len(positional) - bound and arguments.vararg is None:
        return "positional"
    return None


def _constructor(klass: nodes.ClassDef) -> Optional[nodes.FunctionDef]:
    """The ``__init__`` an instance of ``klass`` runs, when it and every class before it are read and
    plain (no decorator, metaclass or ``__new__``); else None."""
    current: Optional[nodes.ClassDef] = klass
    for _ in range(16):
        if current is None or current.decorators is not None or current.declared_metaclass() is not None:
            return None
        if "__new__" in current.locals:
            return None
        own = infer.own_method(current, "__init__")
        if own is not None:
            return own
        bases = [infer.safe_infer(base) for base in current.bases]
        if len(bases) != 1 or not isinstance(bases[0], nodes.ClassDef) or not of_project(bases[0], klass):
            return None  # several bases (an order to follow), a base not read, or a library's
        current = bases[0]
    return None


_PROJECT_IMPORTS: "Dict[nodes.Module, Set[str]]" = memo.per_file()


def imported_from_project(func: nodes.NodeNG) -> bool:
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


_CALLS_BY_LAST_NAME: "Dict[nodes.Module, Dict[Optional[str], List[nodes.Call]]]" = memo.per_file()
_SITES: "Dict[nodes.FunctionDef, List[nodes.Call]]" = memo.per_file()


def call_sites(func: nodes.FunctionDef) -> List[nodes.Call]:
    """Calls in the file that resolve to ``func`` (``train(...)``, ``self.train(...)``) by name and
    inference; provenance's ``call_sites`` also finds calls under other names.  Asked once per
    function and file (the module's calls are indexed by last name once)."""
    found = _SITES.get(func)
    if found is None:
        found = _SITES[func] = [call for call in calls_named(func.root(), func.name) if local_helper(call) is func]
    return list(found)


def calls_named(module: nodes.Module, name: str) -> List[nodes.Call]:
    """The module's calls whose callee's last name is ``name`` (``train(...)``, ``self.val(...)``),
    resolved or not; the module's calls are indexed by last name once per file."""
    table = _CALLS_BY_LAST_NAME.get(module)
    if table is None:
        table = _CALLS_BY_LAST_NAME[module] = {}
        for call in module.nodes_of_class(nodes.Call):
            table.setdefault(infer.call_name(call), []).append(call)
    return list(table.get(name, []))


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


#: Wrappers that read their whole argument before yielding anything: a bound outside them does not
#: limit what they take from it (``islice(list(loader), 4)`` reads the whole loader).
CONSUMING_WRAPPERS = frozenset({"list", "tuple"})

#: Largest number of value combinations tried for the names a ``break`` test reads (one per call site
#: passing a different constant for a parameter).
MAX_BOUND_COMBINATIONS = 16

#: How many assignments and call sites a bound's name is followed through.
MAX_BOUND_DEPTH = 4


def iteration_bound(loop: Loop, limit: int) -> Optional[int]:
    """The most items a ``for`` loop takes from its iterable, when that is certainly at most ``limit``;
    None otherwise (a ``while`` loop, an unbounded or unknown loop, a bound above ``limit``).

    A loop is bounded by its header, ``islice(x, k)`` (``k`` items of ``x``) or ``zip(range(k), x)``
    (``k``, or ``k + 1`` for an argument zip reads before the range), through ``enumerate``/``tqdm``/
    ``iter`` wrappers (``list(...)``/``tuple(...)`` inside the bound read everything), written there
    or bound once to a name; or by a ``break`` under an ``if`` that runs every iteration (a statement
    of the body, or of a ``with`` in it, with no ``continue`` of the loop anywhere) whose test compares
    a counter that grows every iteration, the ``enumerate`` index or a ``count += 1`` started at a
    constant beside the loop, with fixed numbers (``if count == num_examples: break``).  A fixed number
    is a literal, or a name every assignment, in-file call site or default binds to one (a parameter's
    default included); a value of the command line, a configuration object or anything computed is
    not fixed, since a run may make it large."""
    if not isinstance(loop, nodes.For):
        return None
    bounds = [b for b in (header_bound(loop.iter), _break_bound(loop, limit)) if b is not None]
    found = min(bounds) if bounds else None
    return found if found is not None and found <= limit else None


#: A loop or a comprehension (whose first generator is its header).
Element = Union[Loop, nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp]


def few_fixed_items(loop: Element, limit: int) -> bool:
    """``loop`` (a ``for``, or a comprehension's first generator) takes at most ``limit`` items, fixed in
    its header (``header_bound``: ``range(3)``, a literal, a name bound once to one); a ``while`` never."""
    if isinstance(loop, nodes.While):
        return False
    iterable = loop.iter if isinstance(loop, nodes.For) else loop.generators[0].iter  # type: ignore[union-attr]
    bound = header_bound(iterable)
    return bound is not None and bound <= limit


def header_bound(iterable: nodes.NodeNG) -> Optional[int]:
    """The most items a loop or comprehension header's iterable yields, when the source fixes it:
    ``range(k)`` with fixed bounds, a literal list, tuple, set or dict (no unpacking in it), ``islice``
    and ``zip`` with a range (see ``iteration_bound``), through the ``ITERATION_WRAPPERS``, written
    there or bound once to a name (a dict's ``.items()``, ``.keys()``, ``.values()`` too); None otherwise."""
    if isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Attribute) and not iterable.args:
        if iterable.func.attrname in ("items", "keys", "values"):
            iterable = iterable.func.expr
    if isinstance(iterable, nodes.Name):
        values = dataflow.assigned_values(iterable)
        if not values or len(values) != 1:
            return None
        iterable = values[0]
    bound: Optional[int] = None
    while isinstance(iterable, nodes.Call) and iterable.args:
        name = infer.call_name(iterable)
        if name not in ITERATION_WRAPPERS:
            length = _range_length(iterable)
            if length is not None:
                bound = length if bound is None else min(bound, length)
            break
        if name in CONSUMING_WRAPPERS:
            bound = None  # read in full whatever takes items from it
        elif name == "islice" and len(iterable.args) >= 2 and infer.qname(iterable.func) in (None, "itertools.islice"):
            stop = _fixed_ints(iterable.args[2] if len(iterable.args) >= 3 else iterable.args[1], MAX_BOUND_DEPTH)
            if stop is not None:
                bound = max(stop) if bound is None else min(bound, max(stop))
        elif name == "zip":
            ranges = [_range_length(a) for a in iterable.args]
            known = [r for r in ranges if r is not None]
            if known:
                shortest = min(known)
                pulled = shortest if ranges[0] == shortest else shortest + 1
                bound = pulled if bound is None else min(bound, pulled)
            break  # which argument is the iterable asked about is not known here
        iterable = iterable.args[0]
    else:
        if isinstance(iterable, nodes.Name):  # ``enumerate(prompts)``, ``prompts`` bound once to a literal
            values = dataflow.assigned_values(iterable)
            iterable = values[0] if values and len(values) == 1 else iterable
        length = _literal_length(iterable)
        if length is not None:
            bound = length if bound is None else min(bound, length)
    return bound


def _literal_length(expr: nodes.NodeNG) -> Optional[int]:
    """How many items a literal list, tuple, set or dict holds; None where one is unpacked into it."""
    if isinstance(expr, (nodes.List, nodes.Tuple, nodes.Set)):
        return None if any(isinstance(e, nodes.Starred) for e in expr.elts) else len(expr.elts)
    if isinstance(expr, nodes.Dict):
        return None if any(isinstance(k, nodes.DictUnpack) for k, _ in expr.items) else len(expr.items)
    return None


def _range_length(expr: nodes.NodeNG, bound: Optional[Callable[[nodes.NodeNG], Optional[int]]] = None) -> Optional[int]:
    """How many numbers ``range(k)`` / ``range(a, b)`` yields, when ``bound`` knows each of its bounds
    (by default, when they are fixed: ``_fixed_ints``)."""
    if not isinstance(expr, nodes.Call) or infer.call_name(expr) != "range" or not 1 <= len(expr.args) <= 2:
        return None
    if infer.qname(expr.func) not in (None, "builtins.range"):
        return None
    values = [(bound or _one_fixed_int)(a) for a in expr.args]
    if any(v is None for v in values):
        return None
    return max(0, values[0] if len(values) == 1 else values[1] - values[0])  # type: ignore[operator]


def _one_fixed_int(expr: nodes.NodeNG) -> Optional[int]:
    found = _fixed_ints(expr, MAX_BOUND_DEPTH)
    return next(iter(found)) if found is not None and len(found) == 1 else None


def default_range_length(loop: Loop) -> Optional[int]:
    """How many times ``for epoch in range(args.epochs)`` runs in the run a script makes by default: its
    bounds as the command line's or a configuration's defaults give them (``static_values``), which a
    user may change; None when a bound has no such value."""
    if not isinstance(loop, nodes.For):
        return None

    def default(expr: nodes.NodeNG) -> Optional[int]:
        value = static_values.int_value(expr)
        return None if value is None else value.value

    return _range_length(loop.iter, default)


#: Arithmetic ``_fixed_ints`` applies to fixed operands (``range(1, EPOCHS + 1)``), and how many
#: value combinations it computes.
_FIXED_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
MAX_FIXED_VALUES = 16


def _fixed_ints(expr: nodes.NodeNG, depth: int) -> Optional[Set[int]]:
    """The ints ``expr`` may hold when every one is fixed in the source (see ``iteration_bound``),
    else None: a literal or arithmetic on literals (``static_values.evaluate``), or a name followed
    through ``infer.bound_values`` (assignments; a parameter's call sites and default).  A module-level
    name that ``exec``/``globals()`` may rewrite from the command line is not fixed."""
    if isinstance(expr, nodes.Name):
        if depth <= 0 or _rewritable_global(expr):
            return None
        values = infer.bound_values(expr)
        if not values:
            return None
        found: Set[int] = set()
        for value in values:
            ints = _fixed_ints(value, depth - 1)
            if ints is None:
                return None
            found |= ints
        return found
    if isinstance(expr, nodes.BinOp) and expr.op in _FIXED_OPERATORS:  # ``EPOCHS + 1``
        left, right = _fixed_ints(expr.left, depth), _fixed_ints(expr.right, depth)
        if left is None or right is None or len(left) * len(right) > MAX_FIXED_VALUES:
            return None
        return {_FIXED_OPERATORS[expr.op](a, b) for a in left for b in right}
    if not all(isinstance(n, (nodes.Const, nodes.BinOp, nodes.UnaryOp)) for n in expr.nodes_of_class(nodes.NodeNG)):
        return None
    value = static_values.int_value(expr)
    return {value.value} if value is not None else None


def _rewritable_global(name: nodes.Name) -> bool:
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return True
    return any(isinstance(b.scope(), nodes.Module) and static_values.rewritten_later(b) for b in bindings)


def _each_iteration(loop: nodes.For) -> List[nodes.NodeNG]:
    """The statements every iteration of ``loop`` runs in order, until one leaves it: the body's,
    with those of a ``with`` block in it."""
    found: List[nodes.NodeNG] = []
    pending = list(loop.body)
    while pending:
        statement = pending.pop(0)
        found.append(statement)
        if isinstance(statement, nodes.With):
            pending[:0] = statement.body
    return found


def _break_bound(loop: nodes.For, limit: int) -> Optional[int]:
    """The iteration at which a ``break`` under a test of a counter against fixed numbers is taken
    (see ``iteration_bound``), when that is at most ``limit``; None otherwise."""
    if any(innermost(c) is loop for c in loop.nodes_of_class(nodes.Continue)):
        return None  # an iteration may skip the test
    statements = _each_iteration(loop)
    counters = _counters(loop, statements)
    if not counters:
        return None
    found: Optional[int] = None
    for position, statement in enumerate(statements):
        if not isinstance(statement, nodes.If) or not any(isinstance(s, nodes.Break) for s in statement.body):
            continue
        stop = _stopping_iteration(statement.test, counters, position, limit)
        if stop is not None:
            found = stop if found is None else min(found, stop)
    return found


#: A counter: its value before the loop's first iteration, what it grows by, and the position (among
#: ``_each_iteration``'s statements) of its increment (-1: it grows in the header, ``enumerate``).
_Counter = Tuple[int, int, int]


def _counters(loop: nodes.For, statements: List[nodes.NodeNG]) -> Dict[str, _Counter]:
    """Names that grow by a fixed step every iteration and are bound nowhere else in the loop: the
    index of ``for i, x in enumerate(...)`` (from its fixed ``start``), and a name incremented by a
    statement of ``_each_iteration`` (``count += 1``) whose only other binding is a fixed int assigned
    before the loop, in the same function and the same enclosing loops (reset for each run of it)."""
    found: Dict[str, _Counter] = {}
    iterable, target = loop.iter, loop.target
    if (isinstance(iterable, nodes.Call) and infer.call_name(iterable) == "enumerate"
            and infer.qname(iterable.func) in (None, "builtins.enumerate")
            and isinstance(target, nodes.Tuple) and target.elts and isinstance(target.elts[0], nodes.AssignName)):
        start_node = infer.argument(iterable, "start", 1)
        start = {0} if start_node is None else _fixed_ints(start_node, MAX_BOUND_DEPTH)
        if start is not None and len(start) == 1:
            found[target.elts[0].name] = (next(iter(start)) - 1, 1, -1)
    for position, statement in enumerate(statements):
        if isinstance(statement, nodes.AugAssign) and statement.op == "+=":
            step = _fixed_ints(statement.value, 0)
            if isinstance(statement.target, nodes.AssignName) and step is not None and len(step) == 1:
                initial = _initial_value(loop, statement.target)
                if initial is not None and next(iter(step)) > 0:
                    found[statement.target.name] = (initial, next(iter(step)), position)
    for name in list(found):
        bound_in_loop = [
            n for n in loop.nodes_of_class(nodes.AssignName)
            if n.name == name and not (isinstance(n.parent, nodes.AugAssign) and n.parent in statements)
            and not (found[name][2] == -1 and n.parent is loop.target)
        ]
        if bound_in_loop or sum(isinstance(s, nodes.AugAssign) and s.target.as_string() == name
                                for s in statements) > 1:
            del found[name]
    return found


def _initial_value(loop: nodes.For, counter: nodes.AssignName) -> Optional[int]:
    scope = counter.scope()
    others = [
        n for n in scope.nodes_of_class(nodes.AssignName)
        if n.name == counter.name and n is not counter and n.scope() is scope
    ]
    if len(others) != 1 or not isinstance(others[0].parent, nodes.Assign):
        return None
    assign = others[0].parent
    if assign.lineno >= loop.lineno or enclosing_loops(assign) != enclosing_loops(loop):
        return None
    value = _fixed_ints(assign.value, 0)
    return next(iter(value)) if value is not None and len(value) == 1 else None


def _stopping_iteration(test: nodes.NodeNG, counters: Dict[str, _Counter], position: int, limit: int) -> Optional[int]:
    """The first iteration (1-based) at which ``test`` holds, for every value the fixed names it reads
    may have, when that is at most ``limit``; the names that are not fixed are unknown to it."""
    if not all(isinstance(n, (nodes.Name, nodes.Const, nodes.Compare, nodes.BinOp, nodes.UnaryOp, nodes.BoolOp))
               for n in test.nodes_of_class(nodes.NodeNG)):
        return None  # an attribute, a subscript, a call: read at run time
    names = {n.name for n in test.nodes_of_class(nodes.Name)}
    if not names & set(counters):
        return None
    fixed: Dict[str, List[object]] = {}
    for name in names - set(counters):
        use = next(n for n in test.nodes_of_class(nodes.Name) if n.name == name)
        values = _fixed_ints(use, MAX_BOUND_DEPTH)
        # a name that is not fixed is unknown to the test (``or`` may still be decided without it)
        fixed[name] = [static_values.UNKNOWN] if values is None else sorted(values)
    combinations = list(itertools.islice(itertools.product(*fixed.values()), MAX_BOUND_COMBINATIONS + 1))
    if len(combinations) > MAX_BOUND_COMBINATIONS:
        return None
    latest = 0
    for combination in combinations:
        env: Dict[str, object] = dict(zip(fixed, combination))
        stop = None
        for iteration in range(1, limit + 1):
            for name, (initial, step, grown_at) in counters.items():
                grown = iteration if grown_at < position else iteration - 1
                env[name] = initial + step * grown
            if static_values.truth(test, env):
                stop = iteration
                break
        if stop is None:
            return None
        latest = max(latest, stop)
    return latest
