"""Static parameter count of ``nn.Module`` subclasses and torch layers built in the source.

``count_params(expr)`` takes the expression that builds a model (``Classifier()``,
``nn.Sequential(...)``, ``nn.Linear(512, 10)``) and returns what
``sum(p.numel() for p in model.parameters())`` would give, or ``None`` when any part of it
cannot be known statically.  Never a guess: a layer whose size is not inferable, a call that
may return a module but cannot be read (``timm.create_model``, ``getattr(nn, name)()``), a
loop over something unknown that registers modules, tied weights (``head.weight =
embed.weight``) or a lazy layer make the whole count unknown.

How it reads a class: ``__init__`` is interpreted statement by statement with its parameters
bound to the constructor call's arguments (or their defaults, module constants, argparse
defaults: ``static_values``), as torch's ``Module.__setattr__`` would register things:
a module or ``nn.Parameter`` assigned to ``self.x`` is registered (replacing an earlier one
of that name); a plain Python list of modules is *not* (torch does not see it either).
``for`` loops over ``range``/known lists, ``if`` on known tests, list/generator
comprehensions, ``ModuleList.append``/``extend``, ``add_module``, ``register_parameter``,
``super().__init__(...)`` into in-file base classes, ``self._make_layer(...)``-style helper
methods and in-file factory functions are followed.  A module object reachable twice (the
same layer in two containers) counts once, as ``parameters()`` deduplicates.

Layer formulas follow the parameter shapes documented in ``torch.nn`` (2.x): see ``LAYERS``.
Positional arguments are bound through the ``__init__`` signatures of the packaged stubs, so
``nn.Conv2d(3, 64, 7, 2, 3, bias=False)`` and keyword forms read alike.
"""
from __future__ import annotations

import itertools
import math
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

from astroid import nodes
from astroid.exceptions import AstroidError

from ..semantic import dataflow, infer, static_values
from . import frameworks
from ..semantic.static_values import UNKNOWN, Resolved, Unknown
from .torch_names import LOSS_BASES, MODULE_BASES

#: Statements interpreted per count before giving up (keeps 10 000-layer loops bounded).
MAX_STEPS = 50_000

#: Nested constructor / helper calls followed.
MAX_CALL_DEPTH = 24

#: torch.nn classes without parameters (activations, dropout, pooling, reshaping, losses).
PARAMETER_FREE = frozenset(
    "torch.nn." + name
    for name in (
        "Identity Dropout Dropout1d Dropout2d Dropout3d AlphaDropout ReLU ReLU6 LeakyReLU ELU GELU SiLU Mish "
        "Hardswish Hardsigmoid Tanh Sigmoid Softplus Softmax LogSoftmax Softmax2d Flatten Unflatten MaxPool1d "
        "MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
        "AdaptiveMaxPool2d Upsample PixelShuffle ZeroPad2d"
    ).split()
)


#: Third-party module bases that add no parameters of their own (resolved by import name).
PARAMETER_FREE_BASES = frameworks.LIGHTNING_MODULES

#: Tensor factories whose positional sizes give a parameter's element count.
TENSOR_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn"})

#: Containers whose arguments are their children.
CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})

#: Container methods that add children; calling them on ``self.x`` or a list is followed.
_MUTATORS = frozenset({"append", "extend", "insert", "add_module", "register_module", "register_parameter",
                       "update"})

_ids = itertools.count(1)


class GiveUp(Exception):
    """The count cannot be known; raised through the interpreter and turned into None."""


class Opaque:
    """A value that may be a module but cannot be read (an unknown call's result)."""

    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE = Opaque()


class ModuleValue:
    """A module built in the source: its own parameters and its registered children."""

    def __init__(self, kind: str, own: Optional[Dict[int, int]] = None) -> None:
        self.kind = kind
        self.own: Dict[int, int] = dict(own or {})
        self.children: Dict[str, "ModuleValue"] = {}
        self.attributes: Dict[str, Any] = {}

    def add_child(self, name: Optional[str], child: "ModuleValue") -> None:
        self.children[name if name is not None else "#{}".format(len(self.children))] = child

    def atoms(self, seen: Optional[set] = None) -> Dict[int, int]:  # type: ignore[type-arg]
        """Parameter groups reachable from this module, by identity."""
        seen = set() if seen is None else seen
        found: Dict[int, int] = {}
        if id(self) in seen:
            return found
        seen.add(id(self))
        found.update(self.own)
        for child in self.children.values():
            found.update(child.atoms(seen))
        return found

    @property
    def params(self) -> int:
        return sum(self.atoms().values())

    def clone(self, memo: Optional[Dict[int, "ModuleValue"]] = None) -> "ModuleValue":
        """A deep copy with fresh parameters (``copy.deepcopy`` of a layer)."""
        memo = {} if memo is None else memo
        if id(self) in memo:
            return memo[id(self)]
        copy = ModuleValue(self.kind, {next(_ids): n for n in self.own.values()})
        memo[id(self)] = copy
        copy.attributes = dict(self.attributes)
        for name, child in self.children.items():
            copy.children[name] = child.clone(memo)
        return copy


def _leaf(kind: str, count: int, attributes: Mapping[str, Any]) -> ModuleValue:
    value = ModuleValue(kind, {next(_ids): count} if count else {})
    value.attributes = dict(attributes)
    return value


#: Parameters of a module some call builds that the counter cannot read itself (a catalogue
#: model: ``AutoModel.from_pretrained("bert-base-uncased")``), or None when unknown.
External = Callable[[nodes.Call], Optional[int]]


def count_params(expr: nodes.NodeNG, env: Optional[Mapping[str, Any]] = None,
                 external: Optional[External] = None) -> Optional[int]:
    """Parameters of the module ``expr`` builds, or None when not statically known."""
    value = module_value(expr, env, external)
    return None if value is None else value.params


def module_value(expr: nodes.NodeNG, env: Optional[Mapping[str, Any]] = None,
                 external: Optional[External] = None) -> Optional[ModuleValue]:
    """The ``ModuleValue`` ``expr`` builds, or None (unknown, or not a module)."""
    counter = _Counter(external)
    try:
        value = counter.value(expr, dict(env or {}))
    except (GiveUp, AstroidError, RecursionError, ArithmeticError, TypeError, ValueError):
        return None
    return value if isinstance(value, ModuleValue) else None


def class_params(cls: nodes.ClassDef) -> Optional[int]:
    """Parameters of ``cls()`` built with its constructor defaults, or None."""
    if not is_module_class(cls):
        return None
    counter = _Counter()
    try:
        value = counter.instantiate(cls, None, {})
    except (GiveUp, AstroidError, RecursionError, ArithmeticError, TypeError, ValueError):
        return None
    return value.params


def is_module_class(cls: nodes.ClassDef) -> bool:
    """``cls`` subclasses ``torch.nn.Module`` (or a Lightning module, read by import name)."""
    if infer.class_is_subclass_of(cls, MODULE_BASES):
        return True
    return _external_base(cls) is not None


def _external_base(cls: nodes.ClassDef) -> Optional[str]:
    for base in cls.bases:
        name = infer.dotted_name(base)
        if name in PARAMETER_FREE_BASES:
            return name
    try:
        ancestors = list(itertools.islice(cls.ancestors(), 32))
    except (AstroidError, RecursionError):
        return None
    for ancestor in ancestors:
        if isinstance(ancestor, nodes.ClassDef):
            for base in ancestor.bases:
                name = infer.dotted_name(base)
                if name in PARAMETER_FREE_BASES:
                    return name
    return None


def resolve_class(func: nodes.NodeNG) -> Optional[nodes.ClassDef]:
    """The class a constructor call's callee names: by inference, or in a sibling module."""
    value = infer.safe_infer(func)
    if isinstance(value, nodes.ClassDef):
        return value
    if isinstance(func, nodes.Name):
        try:
            _, bindings = func.lookup(func.name)
        except (AstroidError, RecursionError):
            return None
        if len(bindings) == 1 and isinstance(bindings[0], nodes.ImportFrom):
            module = static_values.sibling_module(bindings[0])
            if module is not None:
                for name, alias in bindings[0].names:
                    if (alias or name) == func.name:
                        found = module.locals.get(name, [])
                        if len(found) == 1 and isinstance(found[0], nodes.ClassDef):
                            return found[0]
    return None


def named_callee(func: nodes.NodeNG) -> Any:
    """What a callee picked by a name that is a value of the script resolves to: ``NS.__dict__[key]``,
    ``getattr(NS, key)`` and ``TABLE[key]`` (``TABLE`` a dict literal of the file or of a sibling
    module) with ``key`` known statically (a constant, an argparse default).

    Returns the dotted name for a third-party namespace (``torchvision.models.resnet18`` for
    ``models.__dict__[args.arch]``), the ``ClassDef`` / ``FunctionDef`` for one of the project's
    modules, or None when the key or the namespace cannot be read."""
    key_node: Optional[nodes.NodeNG] = None
    space: Optional[nodes.NodeNG] = None
    table: Optional[nodes.NodeNG] = None
    if isinstance(func, nodes.Subscript):
        key_node = func.slice
        if isinstance(func.value, nodes.Attribute) and func.value.attrname == "__dict__":
            space = func.value.expr
        else:
            table = func.value
    elif (isinstance(func, nodes.Call) and isinstance(func.func, nodes.Name) and func.func.name == "getattr"
          and len(func.args) == 2 and not func.keywords):
        space, key_node = func.args
    if key_node is None:
        return None
    key = static_values.str_value(key_node)
    if key is None:
        return None
    name = str(key.value)
    if space is not None:
        dotted = infer.dotted_name(space)
        module = static_values.project_module(space)
        if module is not None:
            return _module_member(module, name)
        return f"{dotted}.{name}" if dotted else None
    if isinstance(table, (nodes.Name, nodes.Attribute)):
        found = static_values.evaluate_node(table)
        if isinstance(found, nodes.Dict):
            for key_expr, item in found.items:
                if isinstance(key_expr, nodes.Const) and key_expr.value == name:
                    return _member_value(item, 0)
    return None


def _module_member(module: nodes.Module, name: str, depth: int = 0) -> Any:
    """The class or function ``name`` is bound to at the top of ``module`` (through aliases
    ``short = long_name``), or None."""
    bound = module.locals.get(name, [])
    if len(bound) != 1 or depth > 4:
        return None
    node = bound[0]
    if isinstance(node, (nodes.ClassDef, nodes.FunctionDef)):
        return node
    if isinstance(node, nodes.AssignName) and isinstance(node.parent, nodes.Assign):
        return _member_value(node.parent.value, depth + 1)
    return None


def _member_value(item: nodes.NodeNG, depth: int) -> Any:
    if isinstance(item, nodes.Name):
        if depth > 4:
            return None
        cls = resolve_class(item)
        if cls is not None:
            return cls
        function = infer.function_def(item)
        if function is not None:
            return function
        root = item.root()
        return _module_member(root, item.name, depth + 1) if isinstance(root, nodes.Module) else None
    return None


# ------------------------------------------------------------------------------ interpreter

#: Key under which an interpreted function's frame sits in its environment (not an identifier,
#: so it never shadows a name of the source).
FRAME = "<frame>"


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Frame:
    """One interpreted function: its instance (``self``), the instance's class (for
    ``self.helper()``), the class whose method runs (for ``super()``), and its return value."""

    def __init__(self, instance: Optional[ModuleValue], cls: Optional[nodes.ClassDef],
                 owner: Optional[nodes.ClassDef]) -> None:
        self.instance = instance
        self.cls = cls
        self.owner = owner
        self.returned: Any = None
        self.done = False


def _frame(env: Mapping[str, Any]) -> Optional[_Frame]:
    frame = env.get(FRAME)
    return frame if isinstance(frame, _Frame) else None


#: Methods of ``self`` that an ``__init__`` may call without registering anything.
_SELF_NO_REGISTRATION = frozenset({"register_buffer", "apply", "reset_parameters", "to", "requires_grad_",
                                   "train", "eval", "float", "half", "double", "bfloat16", "cuda", "cpu"})


class _Counter:
    def __init__(self, external: Optional[External] = None) -> None:
        self.external = external
        self.steps = 0
        self.depth = 0
        self.shared: Dict[int, Any] = {}

    # ---------------------------------------------------------------- expressions

    def value(self, expr: Optional[nodes.NodeNG], env: Dict[str, Any]) -> Any:
        """What ``expr`` evaluates to: ModuleValue, Resolved, a list/dict of values, a class,
        ``UNKNOWN`` (not a module) or ``OPAQUE`` (may be a module)."""
        if expr is None:
            return UNKNOWN
        if isinstance(expr, nodes.Call):
            return self.call(expr, env)
        if isinstance(expr, nodes.Name):
            if expr.name in env:
                return env[expr.name]
            cls = _class_named(expr)
            if cls is not None:
                return cls
            shared = _module_level_call(expr)
            if shared is not None:
                if id(shared) not in self.shared:
                    self.shared[id(shared)] = self.value(shared, {})
                return self.shared[id(shared)]
        if isinstance(expr, nodes.Attribute):
            key = expr.as_string()
            if key in env:
                return env[key]
            if not _is_self(expr.expr):
                base = self.value(expr.expr, env)
                if isinstance(base, ModuleValue):
                    if expr.attrname in base.attributes:
                        return base.attributes[expr.attrname]
                    return base.children.get(expr.attrname, UNKNOWN)
                if isinstance(base, nodes.ClassDef):
                    found = static_values._class_attribute(base, expr.attrname, 0)
                    return found if found is not None else UNKNOWN
        if isinstance(expr, (nodes.List, nodes.Tuple)):
            items: List[Any] = []
            for elt in expr.elts:
                if isinstance(elt, nodes.Starred):
                    items.extend(self._iterate(self.value(elt.value, env)))
                else:
                    items.append(self.value(elt, env))
            return items
        if isinstance(expr, (nodes.ListComp, nodes.GeneratorExp)):
            return self._comprehension(expr, env)
        if isinstance(expr, nodes.DictComp):
            pairs = self._comprehension(expr, env)
            return {_plain(k): v for k, v in pairs}
        if isinstance(expr, nodes.Dict):
            result: Dict[Any, Any] = {}
            for key_node, item in expr.items:
                k = static_values.evaluate(key_node, env)
                if k is None:
                    raise GiveUp("dict key")
                result[k.value] = self.value(item, env)
            return result
        found = static_values.evaluate(expr, env)
        return found if found is not None else UNKNOWN

    def _iterate(self, value: Any) -> List[Any]:
        if isinstance(value, list):
            return list(value)
        if isinstance(value, Resolved) and isinstance(value.value, (list, tuple)):
            return [Resolved(v, value.node) for v in value.value]
        if isinstance(value, ModuleValue) and value.kind in ("torch.nn.ModuleList", "torch.nn.Sequential"):
            return list(value.children.values())
        raise GiveUp("iterating an unknown value")

    def _comprehension(self, expr: nodes.NodeNG, env: Dict[str, Any]) -> List[Any]:
        results: List[Any] = []

        def run(index: int, scope: Dict[str, Any]) -> None:
            if index == len(expr.generators):
                if isinstance(expr, nodes.DictComp):
                    key = static_values.evaluate(expr.key, scope)
                    if key is None:
                        raise GiveUp("dict key")
                    results.append((key, self.value(expr.value, scope)))
                else:
                    results.append(self.value(expr.elt, scope))
                return
            gen = expr.generators[index]
            for item in self._loop_items(gen.iter, scope):
                self._tick()
                inner = dict(scope)
                self._bind_target(gen.target, item, inner)
                if all(self._truth(test, inner) for test in gen.ifs):
                    run(index + 1, inner)

        run(0, dict(env))
        return results

    def _truth(self, test: nodes.NodeNG, env: Dict[str, Any]) -> bool:
        found = static_values.evaluate(test, env)
        if found is None:
            raise GiveUp("unknown condition")
        return bool(found.value)

    def _loop_items(self, iterable: nodes.NodeNG, env: Dict[str, Any]) -> List[Any]:
        if isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name):
            name = iterable.func.name
            if name in ("range", "enumerate", "zip", "reversed") and static_values._is_builtin(iterable.func):
                if iterable.keywords or any(isinstance(a, nodes.Starred) for a in iterable.args):
                    raise GiveUp("loop arguments")
                args = [self.value(a, env) for a in iterable.args]
                if name == "range":
                    bounds = [_as_int(a) for a in args]
                    if not 1 <= len(bounds) <= 3 or any(b is None for b in bounds):
                        raise GiveUp("range of unknown bounds")
                    items = range(*[b for b in bounds if b is not None])
                    if len(items) > MAX_STEPS:
                        raise GiveUp("range too long")
                    return [Resolved(i, iterable) for i in items]
                lists = [self._iterate(a) for a in args]
                if not lists:
                    raise GiveUp("loop arguments")
                if name == "enumerate":
                    return [[Resolved(i, iterable), v] for i, v in enumerate(lists[0])]
                if name == "reversed":
                    return list(reversed(lists[0]))
                return [list(group) for group in zip(*lists)]
        return self._iterate(self.value(iterable, env))

    def _bind_target(self, target: nodes.NodeNG, item: Any, env: Dict[str, Any]) -> None:
        if isinstance(target, nodes.AssignName):
            env[target.name] = item
            return
        if isinstance(target, (nodes.Tuple, nodes.List)):
            parts = self._iterate(item)
            if len(parts) != len(target.elts):
                raise GiveUp("unpacking")
            for sub, part in zip(target.elts, parts):
                self._bind_target(sub, part, env)
            return
        raise GiveUp("loop target")

    # ---------------------------------------------------------------------- calls

    def call(self, call: nodes.Call, env: Dict[str, Any]) -> Any:
        self._tick()
        func = call.func
        if isinstance(func, nodes.Attribute) and _is_self(func.expr):
            return self._self_method(call, env)
        callee: Any = env.get(func.name) if isinstance(func, nodes.Name) and func.name in env else None
        if callee is None:
            callee = resolve_class(func)
        named = named_callee(func) if callee is None and isinstance(func, (nodes.Subscript, nodes.Call)) else None
        if isinstance(named, nodes.ClassDef):
            callee = named
        if isinstance(callee, nodes.ClassDef):
            return self._class_call(callee, call, env)
        if callee is not None:
            return OPAQUE if isinstance(callee, (ModuleValue, Opaque)) else UNKNOWN
        function = named if isinstance(named, nodes.FunctionDef) else infer.function_def(func)
        if function is not None:
            root = function.root()
            modname = root.name if isinstance(root, nodes.Module) else ""
            if modname == "copy" and function.name == "deepcopy" and len(call.args) == 1:
                original = self.value(call.args[0], env)
                return original.clone() if isinstance(original, ModuleValue) else original
            if _is_user_module(root, call.root()):
                return self._inline(function, call, env, None, None, None)
            found = static_values.evaluate(call, env)
            return found if found is not None else UNKNOWN
        found = static_values.evaluate(call, env)
        if found is not None:
            return found
        count = self.external(call) if self.external is not None else None
        return _leaf("external", count, {}) if count is not None else OPAQUE

    def _class_call(self, cls: nodes.ClassDef, call: nodes.Call, env: Dict[str, Any]) -> Any:
        qname = cls.qname()
        if qname in ("builtins.list", "builtins.tuple") and len(call.args) == 1 and not call.keywords:
            return self._iterate(self.value(call.args[0], env))
        if qname == "collections.OrderedDict" or (qname == "builtins.dict" and len(call.args) <= 1):
            # ``dict(wte=nn.Embedding(...), h=nn.ModuleList(...))``, ``OrderedDict([(name, layer)])``
            pairs = self._pairs(self.value(call.args[0], env)) if call.args else []
            found = dict(pairs)
            for keyword in call.keywords or ():
                if keyword.arg is None:
                    raise GiveUp("dict(**mapping)")
                found[keyword.arg] = self.value(keyword.value, env)
            return found
        if qname == "torch.nn.Parameter":
            return self._parameter(call, env)
        if qname.startswith("torch.") or is_module_class(cls):
            return self.construct(cls, call, env)
        found = static_values.evaluate(call, env)
        return found if found is not None else UNKNOWN

    def _pairs(self, items: Any) -> List[Any]:
        return list(items.items()) if isinstance(items, dict) else [self._pair(i) for i in self._iterate(items)]

    def _pair(self, item: Any) -> Any:
        parts = self._iterate(item)
        if len(parts) != 2:
            raise GiveUp("pair")
        return _plain(parts[0]), parts[1]

    def _parameter(self, call: nodes.Call, env: Dict[str, Any]) -> ModuleValue:
        count = self._numel(infer.argument(call, "data", 0), env)
        if count is None:
            raise GiveUp("parameter of unknown size")
        return _leaf("torch.nn.Parameter", count, {})

    def _numel(self, expr: Optional[nodes.NodeNG], env: Dict[str, Any]) -> Optional[int]:
        """Elements of a tensor built by a factory (``torch.zeros(1, n, d) * 0.02`` included)."""
        if isinstance(expr, nodes.BinOp):
            for tensor, other in ((expr.left, expr.right), (expr.right, expr.left)):
                count = self._numel(tensor, env)
                scalar = static_values.evaluate(other, env)
                if count is not None and scalar is not None and static_values.is_number(scalar.value):
                    return count
            return None
        if not isinstance(expr, nodes.Call):
            return None
        name = infer.callee_qname(expr)
        if name in TENSOR_FACTORIES and not any(kw.arg in ("size", "out") for kw in expr.keywords or ()):
            sizes: List[Optional[int]] = []
            for arg in expr.args:
                inner = arg.value if isinstance(arg, nodes.Starred) else arg
                value = self.value(inner, env)
                if isinstance(arg, nodes.Starred) or isinstance(value, list) or (
                        isinstance(value, Resolved) and isinstance(value.value, (list, tuple))):
                    sizes.extend(_as_int(v) for v in self._iterate(value))
                else:
                    sizes.append(_as_int(value))
            if not sizes or any(s is None or s < 0 for s in sizes):
                return None
            return math.prod(s for s in sizes if s is not None)
        if name == "torch.tensor" and expr.args:
            value = static_values.evaluate(expr.args[0], env)
            if value is not None and static_values.is_number(value.value):
                return 1
            if (
                value is not None
                and isinstance(value.value, (list, tuple))
                and all(static_values.is_number(v) for v in value.value)
            ):
                return len(value.value)
        return None

    def construct(self, cls: nodes.ClassDef, call: Optional[nodes.Call], env: Dict[str, Any]) -> ModuleValue:
        qname = cls.qname()
        if qname.startswith("torch."):
            return self._torch_layer(cls, qname, call, env)
        return self.instantiate(cls, call, env)

    def _torch_layer(self, cls: nodes.ClassDef, qname: str, call: Optional[nodes.Call],
                     env: Dict[str, Any]) -> ModuleValue:
        if qname in CONTAINERS:
            return self._container(qname, call, env)
        if qname in PARAMETER_FREE or infer.class_is_subclass_of(cls, LOSS_BASES):
            return _leaf(qname, 0, {})
        formula = LAYERS.get(qname)
        init = _init_of(cls)
        if formula is None or call is None or init is None:
            raise GiveUp("torch layer without a formula: " + qname)
        bound = static_values.bind_arguments(call, init, self.value, env)
        if bound is None:
            raise GiveUp("arguments")
        return formula(self, qname, bound)

    def _container(self, qname: str, call: Optional[nodes.Call], env: Dict[str, Any]) -> ModuleValue:
        container = ModuleValue(qname)
        if call is None:
            return container
        if call.keywords:
            raise GiveUp("container keywords")
        if qname == "torch.nn.Sequential":
            args: List[Any] = []
            for arg in call.args:
                if isinstance(arg, nodes.Starred):
                    args.extend(self._iterate(self.value(arg.value, env)))
                else:
                    args.append(self.value(arg, env))
            if len(args) == 1 and isinstance(args[0], dict):
                for name, child in args[0].items():
                    container.add_child(str(name), _need_module(child))
                return container
            for child in args:
                container.add_child(None, _need_module(child))
            return container
        if not call.args:
            return container
        items = self.value(call.args[0], env)
        if qname == "torch.nn.ModuleDict":
            pairs = list(items.items()) if isinstance(items, dict) else [self._pair(i) for i in self._iterate(items)]
            for name, child in pairs:
                container.add_child(str(name), _need_module(child))
            return container
        for child in self._iterate(items):
            container.add_child(None, _need_module(child))
        return container

    def instantiate(self, cls: nodes.ClassDef, call: Optional[nodes.Call], env: Dict[str, Any]) -> ModuleValue:
        """Interpret ``cls.__init__`` for this call, registering what it assigns to ``self``."""
        instance = ModuleValue(cls.qname())
        self._init_from(cls, cls, instance, call, env, skip_owner=False)
        return instance

    def _init_from(self, cls: nodes.ClassDef, owner: nodes.ClassDef, instance: ModuleValue,
                   call: Optional[nodes.Call], env: Dict[str, Any], skip_owner: bool) -> None:
        """Run the ``__init__`` that ``owner`` (or, with ``skip_owner``, its base) resolves to."""
        if self.depth >= MAX_CALL_DEPTH:
            raise GiveUp("too deep")
        chain = _mro(cls)
        if chain is None or owner not in chain:
            raise GiveUp("unreadable class hierarchy")
        start = chain.index(owner) + (1 if skip_owner else 0)
        for klass in chain[start:]:
            qname = klass.qname()
            if qname in MODULE_BASES or qname == "builtins.object":
                return  # torch.nn.Module.__init__ registers nothing
            if qname.startswith("torch."):
                if call is None:
                    raise GiveUp("torch base class built with unknown arguments")
                layer = self._torch_layer(klass, qname, call, env)
                for name, child in layer.children.items():
                    instance.children.setdefault(name, child)
                instance.own.update(layer.own)
                instance.attributes.update(layer.attributes)
                return
            init = klass.locals.get("__init__")
            if init and isinstance(init[0], nodes.FunctionDef):
                function = init[0]
                bound = (_defaults(function, self.value) if call is None
                         else static_values.bind_arguments(call, function, self.value, env))
                if bound is None:
                    raise GiveUp("constructor arguments")
                frame_env: Dict[str, Any] = dict(bound)
                frame_env.update({"self." + k: v for k, v in instance.attributes.items()})
                frame_env[FRAME] = _Frame(instance, cls, klass)
                self._run_function(function, frame_env)
                return
        if _external_base(cls) is not None:
            return
        raise GiveUp("no __init__ found")

    def _run_function(self, function: nodes.FunctionDef, env: Dict[str, Any]) -> Any:
        self.depth += 1
        try:
            self._run_block(function.body, env)
        finally:
            self.depth -= 1
        frame = _frame(env)
        return frame.returned if frame is not None and frame.returned is not None else UNKNOWN

    def _inline(self, function: nodes.FunctionDef, call: nodes.Call, env: Dict[str, Any],
                instance: Optional[ModuleValue], cls: Optional[nodes.ClassDef],
                owner: Optional[nodes.ClassDef]) -> Any:
        if self.depth >= MAX_CALL_DEPTH:
            raise GiveUp("too deep")
        bound = static_values.bind_arguments(call, function, self.value, env)
        if bound is None:
            return OPAQUE
        frame_env: Dict[str, Any] = dict(bound)
        if instance is not None:
            frame_env.update({k: v for k, v in env.items() if k.startswith("self.")})
        frame_env[FRAME] = _Frame(instance, cls, owner)
        result = self._run_function(function, frame_env)
        if instance is not None:
            env.update({k: v for k, v in frame_env.items() if k.startswith("self.")})
        return result

    def _self_method(self, call: nodes.Call, env: Dict[str, Any]) -> Any:
        """``self.helper(...)`` inside an interpreted method: inline it on the same instance."""
        frame = _frame(env)
        func = call.func
        assert isinstance(func, nodes.Attribute)
        if frame is None or frame.cls is None or frame.instance is None:
            return OPAQUE
        method = _method(frame.cls, func.attrname)
        if method is None:
            return OPAQUE
        owner = method.parent if isinstance(method.parent, nodes.ClassDef) else frame.cls
        return self._inline(method, call, env, frame.instance, frame.cls, owner)

    # ----------------------------------------------------------------- statements

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise GiveUp("too many steps")

    def _run_block(self, body: Sequence[nodes.NodeNG], env: Dict[str, Any]) -> None:
        frame = _frame(env)
        for stmt in body:
            if frame is not None and frame.done:
                return
            self._tick()
            self._statement(stmt, env)

    def _statement(self, stmt: nodes.NodeNG, env: Dict[str, Any]) -> None:
        if isinstance(stmt, nodes.Assign) and self._tie(stmt, env):
            return
        if isinstance(stmt, nodes.Assign):
            value = self.value(stmt.value, env)
            for target in stmt.targets:
                self._assign(target, value, env)
        elif isinstance(stmt, nodes.AnnAssign):
            if stmt.value is not None:
                self._assign(stmt.target, self.value(stmt.value, env), env)
        elif isinstance(stmt, nodes.AugAssign):
            self._augassign(stmt, env)
        elif isinstance(stmt, nodes.Expr):
            if isinstance(stmt.value, nodes.Call):
                self._call_statement(stmt.value, env)
        elif isinstance(stmt, nodes.For):
            self._for(stmt, env)
        elif isinstance(stmt, nodes.If):
            test = static_values.evaluate(stmt.test, env)
            if test is None:
                self._skip(stmt, env, "modules built under an unknown condition")
            else:
                self._run_block(stmt.body if test.value else stmt.orelse, env)
        elif isinstance(stmt, nodes.With):
            self._run_block(stmt.body, env)
        elif isinstance(stmt, nodes.Return):
            frame = _frame(env)
            if frame is not None:
                frame.returned = self.value(stmt.value, env) if stmt.value is not None else UNKNOWN
                frame.done = True
        elif isinstance(stmt, nodes.Break):
            raise _Break()
        elif isinstance(stmt, nodes.Continue):
            raise _Continue()
        elif isinstance(stmt, nodes.Delete):
            self._delete(stmt, env)
        elif isinstance(stmt, (nodes.Pass, nodes.Import, nodes.ImportFrom, nodes.Global, nodes.Nonlocal,
                               nodes.Assert, nodes.FunctionDef, nodes.ClassDef)):
            return
        elif isinstance(stmt, nodes.Try):
            self._run_block(stmt.body, env)
        else:
            self._skip(stmt, env, "statement not understood: " + type(stmt).__name__)

    def _tie(self, stmt: nodes.Assign, env: Dict[str, Any]) -> bool:
        """``a.weight = b.weight`` between two layers whose only parameter is that weight, of the
        same size (a bias-free output head and its embedding): ``a`` then holds ``b``'s parameter,
        which ``parameters()`` counts once. False when the statement is not such a tie; any other
        replaced weight is left to ``_assign`` (which gives up)."""
        if len(stmt.targets) != 1:
            return False
        target, source = stmt.targets[0], stmt.value
        if not (isinstance(target, nodes.AssignAttr) and isinstance(source, nodes.Attribute)
                and target.attrname == "weight" and source.attrname == "weight"):
            return False
        layers = [self.value(target.expr, env), self.value(source.expr, env)]
        if not all(isinstance(layer, ModuleValue) and len(layer.own) == 1 and not layer.children
                   and layer.attributes.get("weight_only") for layer in layers):
            return False
        receiver, giver = layers
        if sum(receiver.own.values()) != sum(giver.own.values()):
            raise GiveUp("tied weights of different sizes")
        receiver.own = dict(giver.own)
        return True

    def _delete(self, stmt: nodes.Delete, env: Dict[str, Any]) -> None:
        frame = _frame(env)
        for target in stmt.targets:
            if isinstance(target, nodes.DelAttr) and _is_self(target.expr) and frame and frame.instance:
                frame.instance.children.pop(target.attrname, None)
                frame.instance.attributes.pop(target.attrname, None)
                env.pop("self." + target.attrname, None)
            elif isinstance(target, nodes.DelName):
                env.pop(target.name, None)
            else:
                raise GiveUp("del")

    def _skip(self, stmt: nodes.NodeNG, env: Dict[str, Any], why: str) -> None:
        """Leave out a statement that cannot be followed, unless it may register modules."""
        if _registers(stmt):
            raise GiveUp(why)
        for name in _assigned_names(stmt):
            env.pop(name, None)

    def _for(self, stmt: nodes.For, env: Dict[str, Any]) -> None:
        try:
            items = self._loop_items(stmt.iter, env)
        except GiveUp:
            self._skip(stmt, env, "loop over an unknown iterable")
            return
        frame = _frame(env)
        for item in items:
            self._bind_target(stmt.target, item, env)
            try:
                self._run_block(stmt.body, env)
            except _Continue:
                continue
            except _Break:
                return
            if frame is not None and frame.done:
                return
        self._run_block(stmt.orelse, env)

    def _assign(self, target: nodes.NodeNG, value: Any, env: Dict[str, Any]) -> None:
        if isinstance(target, nodes.AssignName):
            if isinstance(value, Unknown):
                env.pop(target.name, None)
            else:
                env[target.name] = value
            return
        if isinstance(target, nodes.AssignAttr):
            frame = _frame(env)
            if _is_self(target.expr) and frame is not None and frame.instance is not None:
                self._set_self(target.attrname, value, env, frame.instance)
            elif target.attrname in ("weight", "bias"):  # ``self.head.weight = ...``, ``head.weight = ...``
                raise GiveUp("parameters replaced or tied")
            elif isinstance(value, (ModuleValue, Opaque)):
                raise GiveUp("module stored on another object")
            return
        if isinstance(target, (nodes.Tuple, nodes.List)):
            try:
                parts: Optional[List[Any]] = self._iterate(value)
            except GiveUp:
                parts = None
            if parts is None or len(parts) != len(target.elts):
                if any(True for _ in target.nodes_of_class(nodes.AssignAttr)):
                    raise GiveUp("unpacking into attributes")
                for name in _assigned_names(target):
                    env.pop(name, None)
                return
            for sub, part in zip(target.elts, parts):
                self._assign(sub, part, env)
            return
        if isinstance(target, nodes.Subscript):
            self._assign_item(target, value, env)
            return
        raise GiveUp("assignment target")

    def _assign_item(self, target: nodes.Subscript, value: Any, env: Dict[str, Any]) -> None:
        container = self.value(target.value, env)
        key = static_values.evaluate(target.slice, env)
        if isinstance(container, ModuleValue):
            if key is None:
                raise GiveUp("container key")
            container.add_child(str(key.value), _need_module(value))
        elif isinstance(container, list):
            index = _as_int(key)
            if index is None or not -len(container) <= index < len(container):
                raise GiveUp("list index")
            container[index] = value
        elif isinstance(container, dict):
            if key is None:
                raise GiveUp("dict key")
            container[key.value] = value
        elif isinstance(value, (ModuleValue, Opaque)):
            raise GiveUp("module stored in an unknown container")

    def _set_self(self, name: str, value: Any, env: Dict[str, Any], instance: ModuleValue) -> None:
        """``self.<name> = value`` as ``Module.__setattr__`` does it."""
        if isinstance(value, Opaque):
            raise GiveUp("self.{} may be a module".format(name))
        instance.children.pop(name, None)
        if isinstance(value, ModuleValue):
            instance.children[name] = value  # a Parameter is a leaf child of its own
        if isinstance(value, Unknown):
            env.pop("self." + name, None)
            instance.attributes.pop(name, None)
        else:
            env["self." + name] = value
            instance.attributes[name] = value

    def _augassign(self, stmt: nodes.AugAssign, env: Dict[str, Any]) -> None:
        target = stmt.target
        if isinstance(target, nodes.AssignName):
            current = env.get(target.name, UNKNOWN)
        elif isinstance(target, nodes.AssignAttr) and _is_self(target.expr):
            current = env.get("self." + target.attrname, UNKNOWN)
        else:
            self._skip(stmt, env, "augmented target")
            return
        addend = self.value(stmt.value, env)
        if isinstance(current, list) and stmt.op == "+=":
            current.extend(self._iterate(addend))
            return
        if isinstance(current, ModuleValue):
            if stmt.op == "+=" and current.kind == "torch.nn.ModuleList":
                for child in self._iterate(addend):
                    current.add_child(None, _need_module(child))
                return
            raise GiveUp("augmented module")
        if isinstance(addend, (ModuleValue, Opaque)):
            raise GiveUp("augmented module")
        operation = static_values._BINOPS.get(stmt.op[:-1])
        result: Any = UNKNOWN
        if isinstance(current, Resolved) and isinstance(addend, Resolved) and operation is not None:
            try:
                result = Resolved(operation(current.value, addend.value), stmt)
            except (ArithmeticError, TypeError, ValueError):
                result = UNKNOWN
        self._assign(target, result, env)

    def _call_statement(self, call: nodes.Call, env: Dict[str, Any]) -> None:
        func = call.func
        method = infer.method_name(call)
        frame = _frame(env)
        if method == "__init__" and isinstance(func, nodes.Attribute):
            self._base_init(call, func, env)
            return
        if isinstance(func, nodes.Attribute) and method in _MUTATORS:
            receiver = func.expr
            if _is_self(receiver):
                self._self_mutator(call, str(method), env)
                return
            self._mutate(call, str(method), self.value(receiver, env), env, dataflow.is_self_attr(receiver))
            return
        if isinstance(func, nodes.Name) and func.name == "setattr" and call.args and _is_self(call.args[0]):
            name = static_values.str_value(call.args[1], env) if len(call.args) == 3 else None
            if name is None or frame is None or frame.instance is None:
                raise GiveUp("setattr")
            self._set_self(str(name.value), self.value(call.args[2], env), env, frame.instance)
            return
        if isinstance(func, nodes.Attribute) and _is_self(func.expr):
            if method not in _SELF_NO_REGISTRATION and isinstance(self._self_method(call, env), Opaque):
                raise GiveUp("unknown self method")
            return
        if any(_is_self(a) for a in call.args) or any(_is_self(k.value) for k in call.keywords or ()):
            function = infer.function_def(func)
            if function is not None and _is_user_module(function.root(), call.root()):
                self._inline(function, call, env, frame.instance if frame else None,
                             frame.cls if frame else None, frame.owner if frame else None)
                return
            raise GiveUp("self passed to an unknown function")

    def _mutate(self, call: nodes.Call, method: str, target: Any, env: Dict[str, Any], on_self: bool) -> None:
        if isinstance(target, list):
            if method == "append" and len(call.args) == 1:
                target.append(self.value(call.args[0], env))
            elif method == "extend" and len(call.args) == 1:
                target.extend(self._iterate(self.value(call.args[0], env)))
            elif method == "insert" and len(call.args) == 2:
                index = _as_int(self.value(call.args[0], env))
                if index is None:
                    raise GiveUp("insert index")
                target.insert(index, self.value(call.args[1], env))
            else:
                raise GiveUp("list mutation")
        elif isinstance(target, ModuleValue):
            if method == "append" and len(call.args) == 1:
                target.add_child(None, _need_module(self.value(call.args[0], env)))
            elif method == "extend" and len(call.args) == 1:
                for child in self._iterate(self.value(call.args[0], env)):
                    target.add_child(None, _need_module(child))
            elif method in ("add_module", "register_module") and len(call.args) == 2:
                name = static_values.str_value(call.args[0], env)
                target.add_child(name.value if name else None, _need_module(self.value(call.args[1], env)))
            elif method == "update" and len(call.args) == 1:
                items = self.value(call.args[0], env)
                pairs = self._pairs(items)
                for name, child in pairs:
                    target.add_child(str(name), _need_module(child))
            else:
                raise GiveUp("container mutation")
        elif isinstance(target, dict):
            if method == "update":
                raise GiveUp("dict update")
        elif on_self or isinstance(target, Opaque):
            raise GiveUp("mutating an unknown container")

    def _self_mutator(self, call: nodes.Call, method: str, env: Dict[str, Any]) -> None:
        frame = _frame(env)
        if frame is None or frame.instance is None:
            raise GiveUp("self outside a module")
        if method in ("add_module", "register_module", "register_parameter") and len(call.args) == 2:
            name = static_values.str_value(call.args[0], env)
            value = self.value(call.args[1], env)
            if name is None or not (isinstance(value, ModuleValue) or (
                    isinstance(value, Resolved) and value.value is None)):
                raise GiveUp(method)
            self._set_self(str(name.value), value, env, frame.instance)
            return
        raise GiveUp("self." + method)

    def _base_init(self, call: nodes.Call, func: nodes.Attribute, env: Dict[str, Any]) -> None:
        """``super().__init__(...)`` or ``Base.__init__(self, ...)``."""
        frame = _frame(env)
        if frame is None or frame.cls is None or frame.owner is None or frame.instance is None:
            raise GiveUp("__init__ outside a module")
        receiver = func.expr
        if isinstance(receiver, nodes.Call) and infer.call_name(receiver) == "super":
            if receiver.args and not (len(receiver.args) == 2 and _is_self(receiver.args[1])):
                raise GiveUp("super(...) with arguments")
            owner = frame.owner
            if receiver.args:
                named = resolve_class(receiver.args[0])
                if named is None:
                    raise GiveUp("super(...) class")
                owner = named
            self._init_from(frame.cls, owner, frame.instance, call, env, skip_owner=True)
            return
        base = resolve_class(receiver)
        if base is None or not call.args or not _is_self(call.args[0]):
            raise GiveUp("unknown __init__ call")
        if base.qname() in MODULE_BASES:
            return
        shifted = nodes.Call(lineno=call.lineno, col_offset=call.col_offset, parent=call.parent,
                             end_lineno=call.end_lineno, end_col_offset=call.end_col_offset)
        shifted.postinit(func=call.func, args=list(call.args[1:]), keywords=list(call.keywords or []))
        self._init_from(frame.cls, base, frame.instance, shifted, env, skip_owner=False)


# ------------------------------------------------------------------------------- helpers


def _is_self(node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.Name) and node.name == "self"


def _as_int(value: Any) -> Optional[int]:
    if isinstance(value, Resolved):
        value = value.value
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _plain(value: Any) -> Any:
    """A Python value out of a ``Resolved`` (lists and tuples element by element)."""
    if isinstance(value, Resolved):
        value = value.value
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def _need_module(value: Any) -> ModuleValue:
    if isinstance(value, ModuleValue):
        return value
    raise GiveUp("not a module")


def _is_user_module(root: nodes.NodeNG, checked: nodes.NodeNG) -> bool:
    """``root`` is the checked file or a module of the user's own beside it (not a library)."""
    if root is checked:
        return True
    here, there = getattr(checked, "file", None), getattr(root, "file", None)
    if not here or not there:
        return False
    return os.path.dirname(os.path.abspath(here)) == os.path.dirname(os.path.abspath(there))


def _class_named(name: nodes.Name) -> Optional[nodes.ClassDef]:
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    if len(bindings) == 1 and isinstance(bindings[0], nodes.ClassDef):
        return bindings[0]
    if len(bindings) == 1 and isinstance(bindings[0], nodes.ImportFrom):
        return resolve_class(name)
    return None


def _module_level_call(name: nodes.Name) -> Optional[nodes.Call]:
    """A module-level ``layer = nn.Linear(...)`` read from inside a function: its call (one object)."""
    try:
        scope, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    if not isinstance(scope, nodes.Module) or len(bindings) != 1:
        return None
    binding = bindings[0]
    if isinstance(binding, nodes.AssignName) and isinstance(binding.parent, nodes.Assign):
        value = binding.parent.value
        if isinstance(value, nodes.Call) and resolve_class(value.func) is not None:
            return value
    return None


def _init_of(cls: nodes.ClassDef) -> Optional[nodes.FunctionDef]:
    for klass in [cls] + _ancestors(cls):
        init = klass.locals.get("__init__")
        if init and isinstance(init[0], nodes.FunctionDef):
            return init[0]
    return None


def _ancestors(cls: nodes.ClassDef) -> List[nodes.ClassDef]:
    try:
        return [a for a in itertools.islice(cls.ancestors(), 32) if isinstance(a, nodes.ClassDef)]
    except (AstroidError, RecursionError):
        return []


def _mro(cls: nodes.ClassDef) -> Optional[List[nodes.ClassDef]]:
    """The method resolution order, or None when a base class of the chain cannot be read
    (an uninferable base may build layers of its own)."""
    try:
        chain = [k for k in cls.mro() if isinstance(k, nodes.ClassDef)]
    except Exception:  # astroid raises several kinds on unreadable hierarchies
        return None
    for klass in chain:
        if klass.qname().startswith("torch."):
            continue
        for base in klass.bases:
            if isinstance(infer.safe_infer(base), nodes.ClassDef) or resolve_class(base) is not None:
                continue
            if infer.dotted_name(base) in PARAMETER_FREE_BASES:
                continue
            return None
    return chain


def _method(cls: nodes.ClassDef, name: str) -> Optional[nodes.FunctionDef]:
    for klass in [cls] + _ancestors(cls):
        if klass.qname().startswith("torch."):
            return None
        found = klass.locals.get(name)
        if found and isinstance(found[0], nodes.FunctionDef):
            return found[0]
    return None


def _defaults(function: nodes.FunctionDef, evaluator: Callable[[nodes.NodeNG, Any], Any]) -> Optional[Dict[str, Any]]:
    args = function.args
    names = [a.name for a in (args.posonlyargs or []) + (args.args or [])][1:] + [a.name for a in args.kwonlyargs or []]
    bound: Dict[str, Any] = {}
    for name in names:
        try:
            default = args.default_value(name)
        except Exception:
            return None
        bound[name] = evaluator(default, {})
    return bound


def _assigned_names(stmt: nodes.NodeNG) -> Iterator[str]:
    for node in stmt.nodes_of_class(nodes.AssignName):
        yield node.name
    for node in stmt.nodes_of_class(nodes.AssignAttr):
        if _is_self(node.expr):
            yield "self." + node.attrname


#: Methods of ``self`` that only read the module tree.
_SELF_READERS = frozenset({"modules", "named_modules", "children", "named_children", "parameters",
                           "named_parameters", "buffers", "named_buffers", "state_dict"})


def _registers(stmt: nodes.NodeNG) -> bool:
    """The statement may register modules or parameters (so leaving it out is unsafe).
    A loop's or branch's header (``for m in self.modules()``) only reads."""
    parts: List[nodes.NodeNG] = [stmt]
    if isinstance(stmt, (nodes.For, nodes.While, nodes.If)):
        parts = list(stmt.body) + list(stmt.orelse)
    for part in parts:
        if any(True for _ in part.nodes_of_class(nodes.AssignAttr)):
            return True
        for node in part.nodes_of_class(nodes.Call):
            if infer.method_name(node) in _MUTATORS or infer.call_name(node) in ("setattr", "__init__"):
                return True
            if isinstance(node.func, nodes.Attribute) and _is_self(node.func.expr) and \
                    node.func.attrname not in _SELF_READERS | _SELF_NO_REGISTRATION:
                return True
        for node in part.nodes_of_class(nodes.Subscript):
            if isinstance(node.parent, nodes.Assign) and node in node.parent.targets:
                return True
    return False


# ------------------------------------------------------------------------------ formulas


def _int(bound: Mapping[str, Any], name: str) -> int:
    value = _as_int(bound.get(name))
    if value is None or value < 0:
        raise GiveUp(name)
    return value


def _bool(bound: Mapping[str, Any], name: str) -> bool:
    value = _plain(bound.get(name))
    if not isinstance(value, (bool, int)) and value is not None:
        raise GiveUp(name)
    return bool(value)


def _sizes(bound: Mapping[str, Any], name: str, dims: int) -> List[int]:
    value = _plain(bound.get(name))
    if isinstance(value, bool):
        raise GiveUp(name)
    if isinstance(value, int):
        return [value] * max(dims, 1)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        if dims and len(value) != dims:
            raise GiveUp(name)
        return list(value)
    raise GiveUp(name)


def _linear(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    # weight (out, in), bias (out)
    i, o = _int(b, "in_features"), _int(b, "out_features")
    bias = _bool(b, "bias")
    return _leaf(qname, i * o + (o if bias else 0), {"in_features": i, "out_features": o, "weight_only": not bias})


def _bilinear(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    # weight (out, in1, in2), bias (out)
    i1, i2, o = _int(b, "in1_features"), _int(b, "in2_features"), _int(b, "out_features")
    return _leaf(qname, o * i1 * i2 + (o if _bool(b, "bias") else 0), {"out_features": o})


def _conv(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    # ConvNd weight (out, in/groups, *k); ConvTransposeNd weight (in, out/groups, *k); bias (out)
    dims = int(qname[-2])
    i, o, g = _int(b, "in_channels"), _int(b, "out_channels"), _int(b, "groups")
    if g == 0 or i % g or o % g:
        raise GiveUp("groups")
    kernel = math.prod(_sizes(b, "kernel_size", dims))
    weight = (i * (o // g) if "Transpose" in qname else o * (i // g)) * kernel
    return _leaf(qname, weight + (o if _bool(b, "bias") else 0), {"in_channels": i, "out_channels": o})


def _batchnorm(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    # weight, bias (num_features) when affine; running stats are buffers
    n = _int(b, "num_features")
    return _leaf(qname, 2 * n if _bool(b, "affine") else 0, {"num_features": n})


def _layernorm(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    # weight (and bias, LayerNorm only, torch >= 2.1 ``bias=``) of normalized_shape
    n = math.prod(_sizes(b, "normalized_shape", 0))
    if not _bool(b, "elementwise_affine"):
        return _leaf(qname, 0, {})
    with_bias = qname == "torch.nn.LayerNorm" and _bool(b, "bias")
    return _leaf(qname, n * (2 if with_bias else 1), {})


def _groupnorm(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    c = _int(b, "num_channels")
    return _leaf(qname, 2 * c if _bool(b, "affine") else 0, {})


def _embedding(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    n, d = _int(b, "num_embeddings"), _int(b, "embedding_dim")
    return _leaf(qname, n * d, {"num_embeddings": n, "embedding_dim": d, "weight_only": True})


def _prelu(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    return _leaf(qname, _int(b, "num_parameters"), {})


_GATES = {"torch.nn.RNN": 1, "torch.nn.LSTM": 4, "torch.nn.GRU": 3}


def _rnn(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    # per layer and direction: w_ih (g*h, in), w_hh (g*h, out), b_ih, b_hh (g*h), w_hr (proj, h)
    gates = _GATES[qname]
    size, hidden, layers = _int(b, "input_size"), _int(b, "hidden_size"), _int(b, "num_layers")
    proj = _int(b, "proj_size") if "proj_size" in b else 0
    directions = 2 if _bool(b, "bidirectional") else 1
    bias = _bool(b, "bias")
    out = proj if proj > 0 else hidden
    total = 0
    for layer in range(layers):
        width = size if layer == 0 else out * directions
        one = gates * hidden * width + gates * hidden * out + (2 * gates * hidden if bias else 0)
        one += proj * hidden if proj > 0 else 0
        total += one * directions
    return _leaf(qname, total, {"hidden_size": hidden})


def _mha_count(embed: int, bias: bool, kdim: Optional[int], vdim: Optional[int], add_bias_kv: bool) -> int:
    # in_proj (3E, E) or q/k/v_proj (E,E),(E,kdim),(E,vdim); in_proj_bias 3E; out_proj Linear(E, E)
    k = embed if kdim is None else kdim
    v = embed if vdim is None else vdim
    total = embed * embed + embed * k + embed * v
    total += 3 * embed if bias else 0
    total += embed * embed + (embed if bias else 0)
    total += 2 * embed if add_bias_kv else 0
    return total


def _optional_int(bound: Mapping[str, Any], name: str) -> Optional[int]:
    value = _plain(bound.get(name))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise GiveUp(name)
    return value


def _mha(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    embed = _int(b, "embed_dim")
    total = _mha_count(embed, _bool(b, "bias"), _optional_int(b, "kdim"), _optional_int(b, "vdim"),
                       _bool(b, "add_bias_kv"))
    return _leaf(qname, total, {"embed_dim": embed})


def _transformer_layer(d: int, ff: int, bias: bool, decoder: bool) -> int:
    attention = _mha_count(d, bias, None, None, False) * (2 if decoder else 1)
    mlp = d * ff + (ff if bias else 0) + ff * d + (d if bias else 0)
    norms = (3 if decoder else 2) * d * (2 if bias else 1)
    return attention + mlp + norms


def _encoder_layer(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    d, ff = _int(b, "d_model"), _int(b, "dim_feedforward")
    decoder = qname.endswith("DecoderLayer")
    return _leaf(qname, _transformer_layer(d, ff, _bool(b, "bias"), decoder), {"d_model": d})


def _stack(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    # TransformerEncoder/Decoder deep-copy the given layer num_layers times, plus the norm
    layer = b.get("encoder_layer", b.get("decoder_layer"))
    if not isinstance(layer, ModuleValue):
        raise GiveUp("layer")
    stack = ModuleValue(qname)
    for _ in range(_int(b, "num_layers")):
        stack.add_child(None, layer.clone())
    norm = b.get("norm")
    if isinstance(norm, ModuleValue):
        stack.add_child("norm", norm)
    elif _plain(norm) is not None:
        raise GiveUp("norm")
    return stack


def _transformer(counter: _Counter, qname: str, b: Mapping[str, Any]) -> ModuleValue:
    if _plain(b.get("custom_encoder")) is not None or _plain(b.get("custom_decoder")) is not None:
        raise GiveUp("custom encoder")
    d, ff, bias = _int(b, "d_model"), _int(b, "dim_feedforward"), _bool(b, "bias")
    norm = d * (2 if bias else 1)
    total = _int(b, "num_encoder_layers") * _transformer_layer(d, ff, bias, False) + norm
    total += _int(b, "num_decoder_layers") * _transformer_layer(d, ff, bias, True) + norm
    return _leaf(qname, total, {"d_model": d})


_Formula = Callable[[_Counter, str, Mapping[str, Any]], ModuleValue]

#: Parameter formula of each torch.nn layer, by qualified name.
LAYERS: Dict[str, _Formula] = {
    "torch.nn.Linear": _linear,
    "torch.nn.Bilinear": _bilinear,
    **{"torch.nn.Conv{}d".format(n): _conv for n in (1, 2, 3)},
    **{"torch.nn.ConvTranspose{}d".format(n): _conv for n in (1, 2, 3)},
    **{"torch.nn.BatchNorm{}d".format(n): _batchnorm for n in (1, 2, 3)},
    "torch.nn.SyncBatchNorm": _batchnorm,
    **{"torch.nn.InstanceNorm{}d".format(n): _batchnorm for n in (1, 2)},
    "torch.nn.LayerNorm": _layernorm,
    "torch.nn.RMSNorm": _layernorm,
    "torch.nn.GroupNorm": _groupnorm,
    "torch.nn.Embedding": _embedding,
    "torch.nn.EmbeddingBag": _embedding,
    "torch.nn.PReLU": _prelu,
    "torch.nn.RNN": _rnn,
    "torch.nn.LSTM": _rnn,
    "torch.nn.GRU": _rnn,
    "torch.nn.MultiheadAttention": _mha,
    "torch.nn.TransformerEncoderLayer": _encoder_layer,
    "torch.nn.TransformerDecoderLayer": _encoder_layer,
    "torch.nn.TransformerEncoder": _stack,
    "torch.nn.TransformerDecoder": _stack,
    "torch.nn.Transformer": _transformer,
}
