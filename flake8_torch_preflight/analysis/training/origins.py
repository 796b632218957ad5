"""Which activation produced a value: softmax, sigmoid, raw logits... traced back syntactically.

astroid infers a ``softmax`` result as a plain ``Tensor`` and forgets how it
was made, so rules that check what a loss receives (TP006, TP007) trace the
producing expression instead:

* a Name is followed through its reaching assignments (``dataflow``); every
  reaching value must give the same answer, otherwise the answer is unknown;
* a shape-only tensor method (``x.view(-1, n)``, ``.squeeze()``, ``.float()``) is what its
  receiver was;
* a call is first shown to the rule's ``call_kind`` (``F.softmax(x)``,
  ``x.sigmoid()``, ``torch.log(p)``...);
* a call of a module instance is then answered from the module: a torch layer
  through the rule's ``layer_kind`` (``nn.Sigmoid`` -> sigmoid, ``nn.Linear``
  -> logits), an ``nn.Sequential`` built in the file from its last layer (the last
  ``add_module`` when layers are added after construction; the Sequential may come from a
  helper function of the file or reach a function as an argument), and a ``Module``
  subclass defined in the file or in a project module it imports from what every ``return`` of
  its ``forward`` produces;
  ``model.forward(x)`` is read as ``model(x)``.

A tuple element (``validity, label = discriminator(imgs)``, ``model(x)[1]``) is
answered from the same position of every tuple the file-defined ``forward``
returns.  Anything else (parameters, opaque calls, wrappers such as DDP) is
unknown: ``None``, and the rules stay silent.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Set

from astroid import nodes

from ..setup import brain
from ..semantic import dataflow, infer
from . import param_count

#: How deep origins are followed (assignments, forward() returns, Sequential layers).
MAX_DEPTH = 4

#: How many bindings, call-site arguments and helper returns are followed to find where an
#: ``nn.Sequential`` was constructed.
CONSTRUCTION_DEPTH = 6

#: ``nn.Module`` methods that return the module itself: ``nn.Sequential(...).to(device)`` is still
#: that Sequential.
MODULE_SELF_METHODS = frozenset(
    {"to", "cuda", "cpu", "train", "eval", "float", "half", "double", "bfloat16", "requires_grad_", "type"}
)


#: Tensor methods that change shape or dtype only: their result is what the receiver was.
SHAPE_METHODS = frozenset(
    {"squeeze", "unsqueeze", "view", "reshape", "resize", "flatten", "expand", "repeat", "t", "float", "double",
     "half", "bfloat16", "contiguous"}
)


class Origin(NamedTuple):
    """What produced a value: a rule-defined ``kind`` and the text a message shows."""

    kind: str
    text: str


class Tracer:
    """Traces values back to the activation that produced them, for one rule's notion of kinds.

    ``call_kind(call, callee_qname, tracer)`` names the output of a plain call
    (or returns None to let the tracer look at module calls);
    ``layer_kind(class_qname)`` names the output of a torch layer class.  Both
    may recurse through ``tracer.origin``.
    """

    def __init__(
        self,
        call_kind: "Callable[[nodes.Call, Optional[str], Tracer], Optional[Origin]]",
        layer_kind: "Callable[[str], Optional[Origin]]",
        depth: int = MAX_DEPTH,
    ) -> None:
        self.call_kind = call_kind
        self.layer_kind = layer_kind
        self.depth = depth
        self._seen: Set[int] = set()
        self._level = 0

    def trace(self, expr: nodes.NodeNG) -> Optional[Origin]:
        """Entry point: the origin of ``expr``, starting a fresh search."""
        self._seen = set()
        self._level = 0
        return self.origin(expr)

    def origin(self, expr: nodes.NodeNG) -> Optional[Origin]:
        """The origin of ``expr`` (every reaching value agreeing), or None when unknown."""
        if self._level >= self.depth or id(expr) in self._seen:
            return None
        self._seen.add(id(expr))  # guards the current path only: two paths may reach one node
        self._level += 1
        try:
            return self._origin(expr)
        finally:
            self._level -= 1
            self._seen.discard(id(expr))

    def _origin(self, expr: nodes.NodeNG) -> Optional[Origin]:
        if isinstance(expr, nodes.Name):
            unpacked = dataflow.unpacked_from_call(expr)
            if unpacked is not None:
                return self.element(unpacked[0], unpacked[1])
            iterated = dataflow.loop_iterable(expr)
            if iterated is not None:  # ``for out in outputs``: a slice of the batch, activated as it was
                return self.origin(iterated)
            values = infer.bound_values(expr)  # its assignments, or what every call site passes
            if not values:
                return None
            kinds = {self.origin(v) for v in values}
            return kinds.pop() if len(kinds) == 1 else None  # every reaching value must agree
        if isinstance(expr, nodes.Subscript) and isinstance(expr.value, nodes.Call):
            index = expr.slice
            if isinstance(index, nodes.Const) and isinstance(index.value, int) and index.value >= 0:
                return self.element(expr.value, index.value)  # model(x)[1]
            return None
        if not isinstance(expr, nodes.Call):
            return None
        qname = infer.callee_qname(expr)
        if infer.method_name(expr) in SHAPE_METHODS and (qname is None or qname.startswith("torch.Tensor.")):
            inner = receiver(expr)  # x.view(-1, n): what x was
            return self.origin(inner) if inner is not None else None
        found = self.call_kind(expr, qname, self)
        if found is not None:
            return found
        return self.module_call(expr)

    def module_call(self, call: nodes.Call) -> Optional[Origin]:
        """Output of ``call`` when it calls a module instance: ``head(x)``, ``self.fc(x)``, ``model(x)``,
        ``model.forward(x)``."""
        return self._instance_output(_called_module(call))

    def module_output(self, module: nodes.NodeNG) -> Optional[Origin]:
        """Output of the module ``module`` refers to when it is called: an instance (``model``), or
        a module class handed to code that builds and calls it (``NeuralNet(MyModule, ...)``)."""
        value = infer.safe_infer(module)
        if isinstance(value, nodes.ClassDef):
            if not param_count.is_module_class(value) or value.qname() == "torch.nn.Sequential":
                return None  # ``nn.Sequential`` as a class says nothing of its layers
            return self.class_output(value, module.root())
        return self._instance_output(module)

    def _instance_output(self, module: nodes.NodeNG) -> Optional[Origin]:
        klass = infer.instance_class(module)
        if klass is None or not param_count.is_module_class(klass):
            return None
        if klass.qname() == "torch.nn.Sequential":
            built = _sequential_construction(module, CONSTRUCTION_DEPTH)
            return None if built is None else self.sequential_output(built)
        return self.class_output(klass, module.root())

    def element(self, call: nodes.Call, index: int) -> Optional[Origin]:
        """Element ``index`` of the tuple a file-defined module's ``forward`` returns
        (``validity, label = discriminator(imgs)``): every ``return`` must be a tuple that agrees."""
        klass = infer.instance_class(call.func)
        if klass is None:
            return None

        def element_of(value: nodes.NodeNG) -> Optional[nodes.NodeNG]:
            return value.elts[index] if isinstance(value, nodes.Tuple) and len(value.elts) > index else None

        return self._forward_output(klass, call.root(), element_of)

    def sequential_output(self, built: nodes.NodeNG) -> Optional[Origin]:
        """Output of ``nn.Sequential(a, b, last)`` built by the call ``built``: that of ``last``, or of
        the layer the last ``add_module`` on the name it is bound to appends."""
        if not isinstance(built, nodes.Call):
            return None
        last = _last_added_module(built)
        if last is None:
            if not built.args:
                return None
            last = built.args[-1]
        if not isinstance(last, nodes.Call) or isinstance(last, nodes.Starred):
            return None
        klass = _constructed_class(last)
        if klass is None:
            return None
        if klass.qname() == "torch.nn.Sequential":
            return self._nested(lambda: self.sequential_output(last))
        return self._nested(lambda: self.class_output(klass, built.root()))

    def class_output(self, klass: nodes.ClassDef, module: nodes.Module) -> Optional[Origin]:
        """Output of an instance of ``klass``: a torch layer's kind, or what a file-defined forward returns."""
        qname = klass.qname()
        if qname.startswith("torch."):
            return self.layer_kind(qname)
        return self._forward_output(klass, module, lambda value: value)

    def _forward_output(
        self,
        klass: nodes.ClassDef,
        module: nodes.Module,
        pick: "Callable[[nodes.NodeNG], Optional[nodes.NodeNG]]",
    ) -> Optional[Origin]:
        """What every ``return`` of the ``forward`` of ``klass`` (a module class of ``module``)
        produces, each returned value narrowed by ``pick`` (None: unknown); named ``X in Model.forward``.
        The class may be defined in another module of the project (``from model import Net``)."""
        if klass.root() is not module and not brain.project_module(str(klass.root().name)):
            return None
        if not param_count.is_module_class(klass):
            return None
        forward = _own_forward(klass)
        if forward is None:
            return None
        returns = list(forward.nodes_of_class(nodes.Return, skip_klass=(nodes.FunctionDef, nodes.ClassDef)))
        picked = [pick(r.value) if r.value is not None else None for r in returns]
        if not picked or any(p is None for p in picked):
            return None
        kinds = {self.origin(p) for p in picked}
        kind = kinds.pop() if len(kinds) == 1 else None
        if kind is None or kind.text.endswith(".forward"):
            return kind
        return Origin(kind.kind, "{} in {}.forward".format(kind.text, klass.name))

    def _nested(self, step: "Callable[[], Optional[Origin]]") -> Optional[Origin]:
        if self._level >= self.depth:
            return None
        self._level += 1
        try:
            return step()
        finally:
            self._level -= 1


def _called_module(call: nodes.Call) -> nodes.NodeNG:
    """The module a call runs: ``model`` for ``model(x)`` and for ``model.forward(x)``."""
    if isinstance(call.func, nodes.Attribute) and call.func.attrname == "forward":
        return call.func.expr
    return call.func


def _sequential_construction(expr: nodes.NodeNG, depth: int) -> Optional[nodes.Call]:
    """The ``nn.Sequential(...)`` call that built the module ``expr`` refers to: through one reaching
    assignment or call-site argument, Module methods returning the module itself, and a function
    of the file whose every ``return`` gives the same construction (``model = build_model()``)."""
    if depth <= 0:
        return None
    if isinstance(expr, (nodes.Name, nodes.Attribute)) and not isinstance(expr, nodes.Call):
        values = infer.bound_values(expr)
        if not values or len(values) != 1:
            return None
        return _sequential_construction(values[0], depth - 1)
    if not isinstance(expr, nodes.Call):
        return None
    expr = _unwrap_self_methods(expr)
    klass = _constructed_class(expr)
    if klass is not None:
        return expr if klass.qname() == "torch.nn.Sequential" else None
    func = infer.function_def(expr.func)
    if func is None or func.root() is not expr.root() or func.is_method():
        return None
    returns = [r.value for r in func.nodes_of_class(nodes.Return, skip_klass=(nodes.FunctionDef, nodes.ClassDef))]
    if not returns or any(value is None for value in returns):
        return None
    built = {_sequential_construction(value, depth - 1) for value in returns}
    found = built.pop() if len(built) == 1 else None
    return found


def _last_added_module(built: nodes.Call) -> Optional[nodes.Call]:
    """The layer the last ``add_module(name, Layer(...))`` appends to the Sequential ``built``, where
    ``built`` is assigned to a name or ``self.attr`` and the layers are added in the same function:
    ``model = nn.Sequential(); model.add_module("softmax", nn.Softmax())``."""
    assign = built.parent
    if not isinstance(assign, nodes.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0]
    if isinstance(target, nodes.AssignName):
        receiver_text = target.name
    elif isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) and target.expr.name == "self":
        receiver_text = "self." + target.attrname
    else:
        return None
    last: Optional[nodes.Call] = None
    for call in assign.scope().nodes_of_class(nodes.Call, skip_klass=(nodes.FunctionDef, nodes.ClassDef)):
        if not (isinstance(call.func, nodes.Attribute) and call.func.attrname == "add_module"):
            continue
        if call.lineno is None or call.lineno < (assign.lineno or 0):
            continue
        if dataflow.binding_text(call.func.expr) != receiver_text or len(call.args) != 2:
            continue
        if last is None or (call.lineno, call.col_offset) > (last.lineno, last.col_offset):
            last = call
    if last is None:
        return None
    layer = last.args[1]
    return layer if isinstance(layer, nodes.Call) else None


def _own_forward(klass: nodes.ClassDef) -> Optional[nodes.FunctionDef]:
    """The ``forward`` an instance of ``klass`` runs, when the class's own module defines it."""
    try:
        forward = klass.getattr("forward")[0]
    except Exception:
        return None
    if not isinstance(forward, nodes.FunctionDef) or forward.root() is not klass.root():
        return None
    return forward


def user_forward(module: nodes.NodeNG) -> bool:
    """The module ``module`` infers to gets its ``forward`` from code outside the torch stubs
    (a subclass of a torch loss or layer that redefines it)."""
    klass = infer.instance_class(module)
    if klass is None:
        return False
    try:
        forward = klass.getattr("forward")[0]
    except Exception:
        return False
    return not str(forward.qname()).startswith("torch.")


def _unwrap_self_methods(built: nodes.NodeNG) -> nodes.NodeNG:
    """``nn.Sequential(...)`` for ``nn.Sequential(...).to(device).train()``: Module methods that
    return the module itself are looked through (syntactically; the caller checked the class)."""
    while (
        isinstance(built, nodes.Call)
        and isinstance(built.func, nodes.Attribute)
        and built.func.attrname in MODULE_SELF_METHODS
        and isinstance(built.func.expr, nodes.Call)
    ):
        built = built.func.expr
    return built


def _constructed_class(call: nodes.Call) -> Optional[nodes.ClassDef]:
    """The class a constructor call ``nn.Linear(4, 1)`` / ``Head()`` builds, or None."""
    value = infer.safe_infer(call.func)
    return value if isinstance(value, nodes.ClassDef) else None


def receiver(call: nodes.Call) -> Optional[nodes.NodeNG]:
    """``x`` for ``x.method(...)``; None for a plain function call."""
    return call.func.expr if isinstance(call.func, nodes.Attribute) else None


def input_argument(call: nodes.Call) -> Optional[nodes.NodeNG]:
    """The ``input`` a loss call receives: its first positional argument or ``input=``."""
    if call.args:
        first = call.args[0]
        return None if isinstance(first, nodes.Starred) else first
    for kw in call.keywords or ():
        if kw.arg == "input":
            return kw.value
    return None
