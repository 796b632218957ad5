"""The only place that calls astroid's ``.infer()``.

Every helper returns ``None`` when inference fails, is Uninferable, or gives
answers that disagree: doubt means silence.  At most ``MAX_RESULTS`` inferred
values are looked at per node, and the manager's global limits are never
changed.
"""
from __future__ import annotations

import itertools
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from astroid import nodes
from astroid.bases import BoundMethod, Instance, UnboundMethod
from astroid.exceptions import AstroidError
from astroid.util import UninferableBase

from . import dataflow, memo

#: Inferred values looked at per node; more than this is treated as "unknown".
MAX_RESULTS = 8


def _infer_all(node: nodes.NodeNG) -> Optional[List[object]]:
    try:
        values = list(itertools.islice(node.infer(), MAX_RESULTS + 1))
    except (AstroidError, RecursionError, StopIteration, AssertionError):
        # AssertionError: astroid's inference tips assert on what they find (the namedtuple tip
        # when ``typing`` is a refused module); for us that is one more "unknown".
        return None
    if not values or len(values) > MAX_RESULTS:
        return None
    return values


def _qname_of(value: object) -> Optional[str]:
    if isinstance(value, UninferableBase):
        return None
    if isinstance(value, (BoundMethod, UnboundMethod)):
        return str(value._proxied.qname())
    if isinstance(value, Instance):
        return str(value._proxied.qname())
    qname = getattr(value, "qname", None)
    if callable(qname):
        try:
            return str(qname())
        except Exception:
            return None
    return None


#: ``safe_infer`` answers for the checked file: the rules and analyses ask about the same callee
#: several times (its qualified name, its function, its kind), and a parameter resolved through
#: call sites is not in astroid's own inference cache.
_SAFE_INFER: "Dict[Tuple[nodes.NodeNG, int], Optional[object]]" = memo.per_file()


def safe_infer(node: nodes.NodeNG, _depth: int = 2) -> Optional[object]:
    """The single value ``node`` infers to, or None when unknown or ambiguous.

    A function parameter that astroid cannot infer is resolved through the
    call sites of its function in the same file: when every call passes an
    argument that infers to the same thing, that is the parameter's value
    (``train(model, loader, criterion)`` called as ``train(net, dl, nn.CrossEntropyLoss())``).
    """
    key = (node, _depth)
    if key in _SAFE_INFER:
        return _SAFE_INFER[key]
    value = _SAFE_INFER[key] = _safe_infer(node, _depth)
    return value


def _safe_infer(node: nodes.NodeNG, _depth: int) -> Optional[object]:
    values = _infer_all(node)
    if values is None or all(isinstance(v, UninferableBase) for v in values):
        if _depth > 0 and isinstance(node, nodes.Name):
            return _infer_from_call_sites(node, _depth - 1)
        return None
    first = values[0]
    if isinstance(first, UninferableBase):
        return None
    if len(values) > 1:
        key = _qname_of(first)
        if key is None:
            return None
        for other in values[1:]:
            if isinstance(other, UninferableBase) or _qname_of(other) != key or type(other) is not type(first):
                return None
    return first


def attribute_value(node: nodes.Attribute) -> Optional[object]:
    """The single value ``a.b`` infers to; when plain inference fails, ``a`` is resolved with
    ``safe_infer`` (so a parameter bound through in-file call sites counts) and ``b`` looked up
    on that instance (``model.head`` where ``model`` is a parameter and ``head`` a layer)."""
    value = safe_infer(node)
    if value is not None:
        return value
    owner = safe_infer(node.expr)
    if not isinstance(owner, Instance) or isinstance(owner, (BoundMethod, UnboundMethod)):
        return None
    try:
        values = list(itertools.islice(owner.igetattr(node.attrname), MAX_RESULTS + 1))
    except (AstroidError, RecursionError, StopIteration):
        return None
    if not values or len(values) > MAX_RESULTS or isinstance(values[0], UninferableBase):
        return None
    key = _qname_of(values[0])
    if key is None or any(_qname_of(v) != key or type(v) is not type(values[0]) for v in values[1:]):
        return None
    return values[0]


def qname(node: nodes.NodeNG) -> Optional[str]:
    """Qualified name of what ``node`` infers to (class name for an instance)."""
    value = safe_infer(node)
    return None if value is None else _qname_of(value)


def const_values(node: nodes.NodeNG, _depth: int = 2) -> Optional[List[object]]:
    """Every literal value ``node`` may take (``["cuda"]``; ``["cuda", "cpu"]`` for a conditional),
    or None when any possibility is not a literal or cannot be inferred.  Unlike ``safe_infer``,
    two different strings are not merged into one answer.  A parameter is resolved through
    the file's call sites, as in ``safe_infer``."""
    values = _infer_all(node)
    if values is None or any(isinstance(v, UninferableBase) for v in values):
        if _depth > 0 and isinstance(node, nodes.Name):
            args = parameter_arguments(node)
            if not args or len(args) > MAX_RESULTS:
                return None
            merged: List[object] = []
            for arg in args:
                found = const_values(arg, _depth - 1)
                if found is None:
                    return None
                merged.extend(v for v in found if not any(type(v) is type(m) and v == m for m in merged))
            return merged
        return None
    result: List[object] = []
    for value in values:
        if not isinstance(value, nodes.Const):
            return None
        if not any(type(value.value) is type(r) and value.value == r for r in result):
            result.append(value.value)
    return result


def is_instance_of(node: nodes.NodeNG, qnames: "frozenset[str]") -> bool:
    """``node`` infers to an instance of a class in ``qnames`` or of a subclass of one."""
    value = safe_infer(node)
    if not isinstance(value, Instance) or isinstance(value, (BoundMethod, UnboundMethod)):
        return False
    cls = value._proxied
    return class_is_subclass_of(cls, qnames)


def class_is_subclass_of(cls: object, qnames: "frozenset[str]") -> bool:
    if not isinstance(cls, nodes.ClassDef):
        return False
    if cls.qname() in qnames:
        return True
    try:
        return any(anc.qname() in qnames for anc in itertools.islice(cls.ancestors(), 64))
    except (AstroidError, RecursionError):
        return False


def callee_qname(call: nodes.Call) -> Optional[str]:
    """Qualified name of the function or class a call invokes.

    Calling an instance (``crit(p, y)`` where ``crit = nn.CrossEntropyLoss()``)
    gives the instance's class name.
    """
    return qname(call.func)


def instance_class(node: nodes.NodeNG) -> Optional[nodes.ClassDef]:
    """The class of the instance ``node`` infers to, or None."""
    value = safe_infer(node)
    if isinstance(value, Instance) and not isinstance(value, (BoundMethod, UnboundMethod)):
        proxied = value._proxied
        if isinstance(proxied, nodes.ClassDef):
            return proxied
    return None


def own_method(klass: nodes.NodeNG, name: str) -> Optional[nodes.FunctionDef]:
    """The method ``name`` that the class ``klass`` itself defines (``forward``, ``__init__``), or None."""
    if not isinstance(klass, nodes.ClassDef):
        return None
    found = klass.locals.get(name)
    return found[0] if found and isinstance(found[0], nodes.FunctionDef) else None


def class_method(klass: nodes.NodeNG, name: str) -> Optional[nodes.FunctionDef]:
    """The method ``name`` that instances of ``klass`` run: its own, or the first of its ancestors' (a
    subclass that inherits ``__init__`` and overrides the ``_build_model`` it calls), or None."""
    if not isinstance(klass, nodes.ClassDef):
        return None
    return own_method(klass, name) or _inherited_method(klass, name)


def _inherited_method(klass: nodes.ClassDef, name: str) -> Optional[nodes.FunctionDef]:
    """The method ``name`` of the first of ``klass``'s ancestors that defines it, or None."""
    try:
        for ancestor in itertools.islice(klass.ancestors(), 64):
            found = own_method(ancestor, name)
            if found is not None:
                return found
    except (AstroidError, RecursionError):
        return None
    return None


def super_method(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The method ``super().name(...)`` / ``super(C, self).name(...)`` runs: the first ancestor of the
    class whose method makes the call that defines ``name`` (read without inference, which often cannot
    follow ``super`` inside a method), or None."""
    func = call.func
    if not (isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Call)):
        return None
    if not (isinstance(func.expr.func, nodes.Name) and func.expr.func.name == "super"):
        return None
    method = call.scope()
    klass = method.parent if isinstance(method, nodes.FunctionDef) else None
    if not isinstance(klass, nodes.ClassDef):
        return None
    return _inherited_method(klass, func.attrname)


def function_def(node: nodes.NodeNG) -> Optional[nodes.FunctionDef]:
    """The function (or bound method's function) ``node`` infers to, or None."""
    value = safe_infer(node)
    while isinstance(value, (BoundMethod, UnboundMethod)):  # a BoundMethod may proxy an UnboundMethod
        value = value._proxied
    if isinstance(value, nodes.FunctionDef):
        return value
    return None


def argument(call: nodes.Call, keyword: str, index: Optional[int] = None) -> Optional[nodes.NodeNG]:
    """The argument a call passes for the parameter ``keyword`` at position ``index``: the keyword
    if given, else the positional argument there (None when a ``*args`` at or before it hides it,
    and for a keyword-only parameter, ``index`` None, when the keyword is not given)."""
    for kw in call.keywords or ():
        if kw.arg == keyword:
            return kw.value  # type: ignore[no-any-return]
    if index is None:
        return None
    if len(call.args) > index and not any(isinstance(a, nodes.Starred) for a in call.args[: index + 1]):
        return call.args[index]  # type: ignore[no-any-return]
    return None


def method_name(call: nodes.NodeNG) -> Optional[str]:
    """``"backward"`` for ``x.backward()``: the attribute name a call invokes (no inference)."""
    if isinstance(call, nodes.Call) and isinstance(call.func, nodes.Attribute):
        return str(call.func.attrname)
    return None


def call_name(call: nodes.NodeNG) -> Optional[str]:
    """Last name of what a call invokes: ``f`` for ``f()`` and ``a.b.f()`` (no inference)."""
    if not isinstance(call, nodes.Call):
        return None
    func = call.func
    if isinstance(func, nodes.Attribute):
        return str(func.attrname)
    if isinstance(func, nodes.Name):
        return str(func.name)
    return None


def star_import(node: nodes.NodeNG) -> bool:
    """``node`` is a ``from module import *``."""
    return isinstance(node, nodes.ImportFrom) and any(name == "*" for name, _ in node.names)


def _explicit_imports(name: nodes.Name) -> List[nodes.NodeNG]:
    """The imports of the module's top level that bind ``name`` by name, when the lookup only meets star
    imports after them: a star import of the project's own modules rarely rebinds a torch name it does
    not define, and the module it reads is not resolved here."""
    module = name.root()
    found: List[nodes.NodeNG] = []
    for statement in module.body:
        if isinstance(statement, nodes.ImportFrom) and not star_import(statement):
            if any((alias or imported) == name.name for imported, alias in statement.names):
                found = [statement]
        elif isinstance(statement, nodes.Import):
            if any((alias or imported.split(".")[0]) == name.name for imported, alias in statement.names):
                found = [statement]
    return found


def dotted_name(node: nodes.NodeNG) -> Optional[str]:
    """Resolve a Name/Attribute chain through the file's imports, without reading modules.

    ``from lightning.pytorch import LightningModule as LM; LM`` gives
    ``lightning.pytorch.LightningModule``; ``import numpy as np; np.random.seed``
    gives ``numpy.random.seed``.  Used for third-party names (numpy, transformers,
    accelerate, lightning) that the guard never reads.  None when the chain does
    not start at an import.
    """
    attrs: List[str] = []
    while isinstance(node, nodes.Attribute):
        attrs.append(str(node.attrname))
        node = node.expr
    if not isinstance(node, nodes.Name):
        return None
    try:
        _, assignments = node.lookup(node.name)
    except (AstroidError, RecursionError):
        return None
    if assignments and all(star_import(a) for a in assignments):
        assignments = _explicit_imports(node)  # ``from models import *`` after ``from torch.autograd import Variable``
    base: Optional[str] = None
    for assignment in assignments:
        if isinstance(assignment, nodes.Import):
            for name, alias in assignment.names:
                if (alias or name.split(".")[0]) == node.name:
                    candidate = name if alias else name.split(".")[0]
                    base = _agree(base, candidate)
        elif isinstance(assignment, nodes.ImportFrom):
            for name, alias in assignment.names:
                if (alias or name) == node.name:
                    modname = assignment.modname
                    if assignment.level:
                        modname = "." * assignment.level + modname
                    base = _agree(base, "{}.{}".format(modname, name) if modname else name)
        else:
            return None
        if base == "":
            return None
    if not base:
        return None
    return ".".join([base] + list(reversed(attrs)))


def _agree(current: Optional[str], candidate: str) -> str:
    if current is None or current == candidate:
        return candidate
    return ""


def iter_calls(node: nodes.NodeNG) -> Iterator[nodes.Call]:
    """All calls under ``node`` (itself included), not entering nested defs or classes."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, nodes.Call):
            yield current
        children = [
            child
            for child in current.get_children()
            if not isinstance(child, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda))
        ]
        stack.extend(reversed(children))


def calls_in_order(node: nodes.NodeNG) -> Iterator[nodes.Call]:
    """Calls under ``node`` in evaluation order (receiver and arguments first), not entering defs."""
    stack: List[Tuple[nodes.NodeNG, bool]] = [(node, False)]
    while stack:
        current, ready = stack.pop()
        if ready:
            yield current  # type: ignore[misc]
            continue
        if isinstance(current, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
            continue
        if isinstance(current, nodes.Call):
            stack.append((current, True))
            children = [current.func, *current.args, *(kw.value for kw in current.keywords or ())]
        else:
            children = list(current.get_children())
        stack.extend((child, False) for child in reversed(children))


_CALL_SITES: "Dict[nodes.Module, Dict[str, List[nodes.Call]]]" = memo.per_file()


def _calls_by_name(module: nodes.Module) -> Dict[str, List[nodes.Call]]:
    table = _CALL_SITES.get(module)
    if table is None:
        table = {}
        for call in module.nodes_of_class(nodes.Call):
            if isinstance(call.func, nodes.Name):
                table.setdefault(call.func.name, []).append(call)
        _CALL_SITES[module] = table
    return table


def parameter_default(name: nodes.Name) -> Optional[nodes.NodeNG]:
    """The default value written for the parameter ``name`` is bound to (``loss=nn.CrossEntropyLoss()``),
    or None when ``name`` is no parameter or its parameter has no default."""
    binding = dataflow.single_binding(name)
    arguments = binding.parent if binding is not None else None
    if not isinstance(arguments, nodes.Arguments):
        return None
    try:
        return arguments.default_value(name.name)  # type: ignore[no-any-return]
    except (AstroidError, RecursionError):
        return None


def parameter_arguments(name: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """Argument expressions every in-file call site passes for the parameter ``name`` is bound to.

    A plain function's call sites are the calls of its name; a method's are the calls
    ``obj.method(...)`` / ``self.method(...)`` of the file that resolve to it (``self`` is not a
    parameter a call site passes; a call of the same name on a receiver that cannot be resolved,
    such as a framework object's ``fabric.backward(loss)``, is not counted), and for ``__init__``
    also the constructions ``Klass(...)`` of its class and of the file's subclasses that inherit it.
    A call site passes its keyword, else its position (never a keyword for a positional-only
    parameter; ``Klass.method(obj, x)`` passes ``self`` first), else the default.  None when
    ``name`` is not such a parameter, when the function has no call site in the file, when one is
    opaque for this parameter (``*args`` at or before its position, ``**kwargs`` without its
    keyword, nothing passed and no default), or when the function is handed on as a value
    (``map(f, xs)``, ``hook=self.on_step``): then some calls are not in sight.  A function handed
    to a launcher whose way of calling it is known (``LAUNCH_CONVENTIONS``, filled by the layers
    that know the library) counts as a call site with the arguments that launcher passes.
    """
    binding = dataflow.single_binding(name)
    if binding is None:
        return None
    arguments = binding.parent
    func = arguments.parent if isinstance(arguments, nodes.Arguments) else None
    if not isinstance(func, nodes.FunctionDef):
        return None
    positional = [a.name for a in (arguments.posonlyargs or []) + (arguments.args or [])]
    keywords = [a.name for a in (arguments.args or []) + (arguments.kwonlyargs or [])]
    if name.name not in positional and name.name not in keywords:
        return None  # ``*args`` / ``**kwargs``
    unbound = positional
    if func.is_method():
        if func.type == "classmethod" or func.type == "method":
            if not positional or positional[0] == name.name:
                return None  # ``self`` / ``cls``: no call site passes it
            positional = positional[1:]
        calls = _method_call_sites(func)
    else:
        calls = _calls_by_name(func.root()).get(func.name, [])
    launches = []
    for read in _value_reads(func):
        launch = _launch_of(read)
        if launch is None:
            return None  # handed on where its calls cannot be seen
        launches.append(launch)
    if not calls and not launches:
        return None
    found: List[nodes.NodeNG] = []
    for call in calls:
        order = positional
        if func.type == "method" and _unbound_call(call):
            order = unbound  # ``Base.__init__(self, x)``: the instance is passed first
        value = _argument_for(call, name.name, order, keywords, arguments)
        if value is None:
            return None
        found.append(value)
    for passed, named in launches:
        value = named.get(name.name) if name.name in keywords else None
        if value is None and name.name in positional and positional.index(name.name) < len(passed):
            value = passed[positional.index(name.name)]
        if value is None:
            return None  # a value the launcher makes (a process rank), or one not passed
        found.append(value)
    return found


#: A launch: the arguments a launcher passes to the function it was handed, positional (None for a
#: value the launcher makes itself, such as a worker's rank) and by keyword.
Launch = Tuple[List[Optional[nodes.NodeNG]], Dict[str, nodes.NodeNG]]

#: How launchers call the function they are handed (``Process(target=f, args=(a,))``): each entry
#: takes the node that reads the function as a value and gives the launch, or None when that node is
#: not handed to a launcher it knows.  Filled by the layers that know the libraries (this layer knows
#: none), at their import.
LAUNCH_CONVENTIONS: List[Callable[[nodes.NodeNG], Optional[Launch]]] = []


def _launch_of(read: nodes.NodeNG) -> Optional[Launch]:
    for convention in LAUNCH_CONVENTIONS:
        launch = convention(read)
        if launch is not None:
            return launch
    return None


def _unbound_call(call: nodes.Call) -> bool:
    """``Klass.method(obj, ...)``: a method called through its class, the instance passed first."""
    if not isinstance(call.func, nodes.Attribute):
        return False
    value = safe_infer(call.func)
    return isinstance(value, UnboundMethod) and not isinstance(value, BoundMethod)


_METHOD_SITES: "Dict[nodes.FunctionDef, Optional[List[nodes.Call]]]" = memo.per_file()


def _method_call_sites(func: nodes.FunctionDef) -> Optional[List[nodes.Call]]:
    """Calls ``x.<func.name>(...)`` of the file that resolve to the method ``func``; for ``__init__``
    also the constructor calls of its class and of the file's subclasses that do not redefine it."""
    if func in _METHOD_SITES:
        return _METHOD_SITES[func]
    _METHOD_SITES[func] = None  # provisional: inferring a call site may ask for this parameter again
    module = func.root()
    found = [call for call in _calls_by_attribute(module).get(func.name, []) if function_def(call.func) is func]
    klass = func.parent
    if func.name == "__init__" and isinstance(klass, nodes.ClassDef):
        for cls in module.nodes_of_class(nodes.ClassDef):
            if cls is not klass and not class_is_subclass_of(cls, frozenset({klass.qname()})):
                continue
            try:
                inherited = cls.getattr("__init__")[0] is func
            except (AstroidError, RecursionError, IndexError):
                inherited = False
            if not inherited:
                continue
            if _handed_on(cls) or _builds_itself(cls):
                found = []  # built where the call cannot be read: no answer
                break
            found.extend(call for call in _calls_by_name(module).get(cls.name, []) if safe_infer(call.func) is cls)
    _METHOD_SITES[func] = found
    return found


def _builds_itself(klass: nodes.ClassDef) -> bool:
    """A method of ``klass`` builds an instance of its own class without naming it: ``cls(...)``,
    ``type(self)(...)``, ``self.__class__(...)``."""
    for call in klass.nodes_of_class(nodes.Call):
        func = call.func
        if isinstance(func, nodes.Name) and func.name == "cls":
            return True
        if isinstance(func, nodes.Call) and call_name(func) == "type":
            return True
        if isinstance(func, nodes.Attribute) and func.attrname == "__class__":
            return True
    return False


_READS: "Dict[nodes.Module, Dict[str, List[nodes.NodeNG]]]" = memo.per_file()


def _handed_on(func: "nodes.FunctionDef | nodes.ClassDef") -> bool:
    """``func`` (a function, or a class whose constructions are read) is read in its file other than
    as the callee of a call (``map(f, xs)``, ``register_hook(self.on_grad)``, ``Thread(target=worker)``,
    ``REGISTRY = {"mlp": MLP}``): it may be called where its call sites cannot be seen.  A class
    named as a base, in ``isinstance`` or in an annotation is not handed on."""
    return bool(_value_reads(func))


def _value_reads(func: "nodes.FunctionDef | nodes.ClassDef") -> List[nodes.NodeNG]:
    """The nodes of its file that read ``func`` other than as a callee or a type (``_handed_on``)."""
    module = func.root()
    table = _READS.get(module)
    if table is None:
        table = {}
        for node in module.nodes_of_class((nodes.Name, nodes.Attribute)):
            if isinstance(node.parent, nodes.Call) and node.parent.func is node or _names_a_type(node):
                continue
            table.setdefault(str(node.name if isinstance(node, nodes.Name) else node.attrname), []).append(node)
        _READS[module] = table
    reads = []
    for node in table.get(func.name, ()):
        if isinstance(node, nodes.Name):
            try:
                _, bindings = node.lookup(node.name)
            except (AstroidError, RecursionError):
                bindings = [func]  # cannot tell: taken as a read of ``func``
            if func in bindings:
                reads.append(node)
        elif isinstance(func, nodes.FunctionDef) and func.is_method() and function_def(node) is func:
            reads.append(node)
    return reads


def _names_a_type(node: nodes.NodeNG) -> bool:
    """``node`` names a type without calling it: a base class, ``isinstance(x, T)``, an annotation."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, nodes.Module):
        if isinstance(parent, nodes.ClassDef) and child in parent.bases:
            return True
        if isinstance(parent, nodes.Call) and call_name(parent) in ("isinstance", "issubclass"):
            return child in parent.args[1:]
        if isinstance(parent, nodes.AnnAssign) and child is parent.annotation:
            return True
        if isinstance(parent, nodes.FunctionDef) and child is parent.returns:
            return True
        if isinstance(parent, nodes.Arguments) and child in (
                list(parent.annotations or []) + list(parent.kwonlyargs_annotations or [])
                + list(parent.posonlyargs_annotations or []) + [parent.varargannotation, parent.kwargannotation]):
            return True
        if parent.is_statement:
            return False
        child, parent = parent, parent.parent
    return False


_ATTRIBUTE_CALLS: "Dict[nodes.Module, Dict[str, List[nodes.Call]]]" = memo.per_file()


def _calls_by_attribute(module: nodes.Module) -> Dict[str, List[nodes.Call]]:
    table = _ATTRIBUTE_CALLS.get(module)
    if table is None:
        table = {}
        for call in module.nodes_of_class(nodes.Call):
            if isinstance(call.func, nodes.Attribute):
                table.setdefault(call.func.attrname, []).append(call)
        _ATTRIBUTE_CALLS[module] = table
    return table


def _argument_for(
    call: nodes.Call, param: str, positional: List[str], keywords: List[str], arguments: nodes.Arguments
) -> Optional[nodes.NodeNG]:
    """What ``call`` passes for ``param``: its keyword (when it may be given so), else its position,
    else the default; None when ``*args`` / ``**kwargs`` may hold it or nothing is passed."""
    if param in keywords:
        for kw in call.keywords or ():
            if kw.arg == param:
                return kw.value
    if param in positional:
        index = positional.index(param)
        if any(isinstance(a, nodes.Starred) for a in call.args[: index + 1]):
            return None
        if index < len(call.args):
            return call.args[index]
    if any(kw.arg is None for kw in call.keywords or ()):
        return None  # **kwargs may hold it
    try:
        default = arguments.default_value(param)
    except Exception:
        return None
    return default if isinstance(default, nodes.NodeNG) else None


_BOUND: "Dict[nodes.NodeNG, Optional[List[nodes.NodeNG]]]" = memo.per_file()


def bound_values(expr: nodes.NodeNG) -> Optional[List[nodes.NodeNG]]:
    """What a Name or ``self.attr`` may hold: the right-hand side of every assignment that may reach
    it, else, for a parameter, what every in-file call site passes (``parameter_arguments``:
    keyword, else position, else the default).  None when unknown: any binding that is not a
    plain assignment (a loop target, an import, an unpacking: the rules that follow a tuple
    element ask ``dataflow.assigned_values(unpack=True)`` or read the call themselves), a parameter
    with a call site out of sight, or another expression.

    One step: a value that is itself a name is returned as is, and a caller that follows it
    further bounds its own walk; the answer is kept for the file.
    """
    if expr in _BOUND:
        return _BOUND[expr]
    _BOUND[expr] = None  # provisional: resolving a call site may come back to this name
    values = dataflow.assigned_values(expr)
    if not values and isinstance(expr, nodes.Name):
        values = parameter_arguments(expr)
    found = _BOUND[expr] = values or None
    return found


def _infer_from_call_sites(name: nodes.Name, depth: int) -> Optional[object]:
    args = parameter_arguments(name)
    if not args or len(args) > MAX_RESULTS:
        return None
    results = [safe_infer(a, depth) for a in args]
    first = results[0]
    if first is None:
        return None
    key = _qname_of(first)
    if key is None or any(r is None or _qname_of(r) != key or type(r) is not type(first) for r in results[1:]):
        return None
    return first


def is_none(expr: Optional[nodes.NodeNG]) -> bool:
    """Whether ``expr`` is the literal ``None``."""
    return isinstance(expr, nodes.Const) and expr.value is None
