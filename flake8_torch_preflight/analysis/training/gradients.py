"""Where gradients are made, scaled and applied, and which loops a framework runs for the user.

Shared by TP004 (unscaled accumulation), TP005 (DDP sampler) and TP013 (AMP scaling):

* ``is_tensor_backward``: ``loss.backward()``; a positional loss argument means a framework's
  backward (``accelerator.backward(loss)``, ``fabric.backward(loss)``, ``engine.backward(loss)``),
  which scales for mixed precision itself; ``accumulating_backward`` adds those that do not divide
  by the accumulation steps (Fabric's, read from ``frameworks``);
* ``is_scale_call`` / ``is_unscale_call``: ``GradScaler.scale(...)`` and ``.unscale_(...)``;
* ``stepped_optimizer``: the optimizer an ``opt.step()`` / ``scaler.step(opt)`` updates;
* ``framework_managed``: code inside a Lightning module or a Hugging Face ``Trainer``
  subclass, whose optimisation loop (accumulation, precision, samplers) the framework runs.

Name-based fallbacks, used only where the binding cannot be resolved at all (a parameter with
no call site, an opaque factory): ``OPTIMIZER_NAME`` and ``SCALER_NAME`` (as in TP003).
"""
from __future__ import annotations

import re
from typing import Iterator, Optional, Tuple

from astroid import nodes
from astroid.bases import Instance
from astroid.exceptions import AstroidError

from ..semantic import dataflow, infer, loops
from . import derivation, frameworks
from .torch_names import GRAD_SCALERS, OPTIMIZER_BASES

#: Method names that run a backward pass: ``t.backward()``, ``accelerator.backward(loss)``,
#: Lightning's ``self.manual_backward(loss)``.
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})

#: Names people give optimizers; consulted only when a receiver's binding is unresolvable.
OPTIMIZER_NAME = re.compile(r"(^|_)(opt|optim|optimizer|optimiser)s?(_|\d|$)", re.IGNORECASE)

#: Names people give gradient scalers; consulted only when a receiver's binding is unresolvable.
SCALER_NAME = re.compile(r"scaler", re.IGNORECASE)

#: Import prefixes of frameworks that run the optimisation loop for the user: a class deriving
#: from one of them (a ``LightningModule``, a ``transformers.Trainer`` subclass) gets gradient
#: accumulation, loss scaling and distributed samplers from the framework.
FRAMEWORK_PREFIXES = ("lightning", "pytorch_lightning", "transformers", "accelerate")

_SCOPES = (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef, nodes.Module)

#: How many local base classes are followed to reach a framework base.
MAX_BASE_DEPTH = 4


def is_backward(call: nodes.NodeNG) -> bool:
    """Any backward: a tensor's, a framework's (``accelerator.backward(loss)``), Lightning's
    ``self.manual_backward(loss)`` or a project's own ``backward`` method."""
    return isinstance(call, nodes.Call) and infer.method_name(call) in BACKWARD_METHODS


def is_tensor_backward(call: nodes.Call) -> bool:
    """``x.backward()`` / ``x.backward(retain_graph=True)``: a backward on a tensor.

    A positional argument means a framework's backward (``accelerator.backward(loss)``,
    ``fabric.backward(loss)``, ``engine.backward(loss)``; ``Tensor.backward(gradient)`` on a scalar
    loss is not used in training code): ``frameworks`` says what each one does.
    """
    return infer.method_name(call) == "backward" and not call.args


def accumulating_backward(call: nodes.Call) -> bool:
    """A backward whose gradients add up in ``.grad`` unscaled: a tensor's, a framework's that
    does not divide by the accumulation steps itself (Lightning Fabric's, unlike Accelerate's),
    or a project's own ``backward(loss)`` method that differentiates its argument undivided
    (``delegated_backward``)."""
    if is_tensor_backward(call):
        return True
    if infer.method_name(call) != "backward" or not call.args:
        return False
    meaning = frameworks.method_meaning(call)
    if meaning is not None:
        return meaning.backward and not meaning.divides_accumulation
    return delegated_backward(call) is not None


#: Helper levels searched inside a project's own ``backward(loss)`` for the tensor backward it runs.
DELEGATE_DEPTH = 1


def delegated_backward(call: nodes.Call) -> Optional[nodes.Call]:
    """The tensor backward that ``trainer.backward(loss)`` runs on its argument, when ``backward`` is
    a method or function of the project (this file or a module it reads) whose body differentiates
    its first parameter, scaled or not, but never divided (``(loss * self.loss_scale).backward()``,
    ``self.scaler.scale(loss).backward()``): to the caller, the call is the loss's backward."""
    if infer.method_name(call) != "backward" or not call.args or isinstance(call.args[0], nodes.Starred):
        return None
    func = infer.function_def(call.func)
    if func is None or str(func.root().name).split(".")[0] == "torch":
        return None
    params = [a.name for a in func.args.args or []]
    if func.is_method() and params and isinstance(call.func, nodes.Attribute):
        params = params[1:]
    if not params:
        return None
    for inner in loops.calls_in(func.body, DELEGATE_DEPTH):
        if inner is call or not is_tensor_backward(inner):
            continue
        receiver = backward_receiver(inner)
        if is_scale_call(receiver) and receiver.args:
            receiver = receiver.args[0]
        trace = derivation.derive(receiver)
        own = [n for n in trace.nodes if n.scope() is func or loops.inside(n, func)]
        if any(derivation.is_division(n) for n in own):
            return None
        if any(isinstance(n, nodes.Name) and n.name == params[0] for n in own):
            return inner
    return None


def backward_receiver(call: nodes.Call) -> nodes.NodeNG:
    """The tensor a backward call differentiates: ``x`` of ``x.backward()``, ``loss`` of
    ``fabric.backward(loss)`` and of ``trainer.backward(loss)``."""
    if call.args and not is_tensor_backward(call):
        return call.args[0]
    return call.func.expr  # type: ignore[union-attr, no-any-return]


def _scaler_receiver(call: nodes.Call) -> bool:
    receiver = call.func.expr  # type: ignore[union-attr]
    if infer.is_instance_of(receiver, GRAD_SCALERS):
        return True
    inferred = infer.safe_infer(receiver)
    if inferred is not None and not isinstance(inferred, nodes.Const):
        return False
    # Nothing inferred, or a constant, which has no ``scale`` method: the binding the source shows is
    # replaced at run time (``scaler: Optional[GradScaler] = 'Default'`` filled in by a configuration
    # system), so the name decides.
    name = dataflow.terminal_name(receiver)
    return name is not None and SCALER_NAME.search(name) is not None


def is_scale_call(call: nodes.NodeNG) -> bool:
    """``scaler.scale(loss)`` on a GradScaler (or on an unresolvable ``*scaler*``)."""
    return isinstance(call, nodes.Call) and infer.method_name(call) == "scale" and _scaler_receiver(call)


def scaled_by_context(expr: nodes.NodeNG) -> bool:
    """``expr`` is the target of ``with amp.scale_loss(loss, optimizer) as expr:`` (apex and
    look-alikes): a loss scaled by a context manager."""
    if not isinstance(expr, nodes.Name):
        return False
    try:
        _, bindings = expr.lookup(expr.name)
    except (AstroidError, RecursionError):
        return False
    for binding in bindings:
        parent = binding.parent
        if isinstance(parent, (nodes.With, nodes.AsyncWith)):
            for item, target in parent.items:
                name = infer.call_name(item)
                if target is binding and name is not None and "scale" in name.lower():
                    return True
    return False


def is_unscale_call(call: nodes.NodeNG) -> bool:
    """``scaler.unscale_(optimizer)``: only GradScaler has this method, so the name decides."""
    return isinstance(call, nodes.Call) and infer.method_name(call) == "unscale_"


def is_scaler_step(call: nodes.NodeNG) -> bool:
    """``scaler.step(optimizer)`` on a GradScaler (or on an unresolvable ``*scaler*``)."""
    return isinstance(call, nodes.Call) and infer.method_name(call) == "step" and _scaler_receiver(call)


def is_optimizer(expr: nodes.NodeNG, depth: int = 2) -> bool:
    """Resolved to a torch optimizer, or to an object of the project whose ``step()`` steps an optimizer
    it holds (a learning-rate wrapper: ``def step(self): ...; self.optimizer.step()``); or unresolvable
    and named like one."""
    if infer.is_instance_of(expr, OPTIMIZER_BASES):
        return True
    value = infer.safe_infer(expr)
    if value is not None:
        return depth > 0 and _steps_held_optimizer(value, depth - 1)  # else a scheduler, an environment
    name = dataflow.terminal_name(expr)
    return name is not None and OPTIMIZER_NAME.search(name) is not None


def _steps_held_optimizer(value: object, depth: int) -> bool:
    """``value`` is an instance of a class whose own ``step()`` calls ``step()`` on an optimizer and
    neither runs a backward nor zeroes gradients (a learning-rate schedule wrapped around the optimizer)."""
    klass = getattr(value, "_proxied", None) if isinstance(value, Instance) else None
    if not isinstance(klass, nodes.ClassDef):
        return False
    step = klass.locals.get("step", [None])[0]
    if not isinstance(step, nodes.FunctionDef):
        return False
    if any(is_zero_grad(call) or is_backward(call) for call in step.nodes_of_class(nodes.Call)):
        return False  # a trainer's whole update (backward, step, zero_grad), not an optimizer's step
    return any(
        infer.method_name(call) == "step" and is_optimizer(call.func.expr, depth)  # type: ignore[union-attr]
        for call in step.nodes_of_class(nodes.Call)
        if isinstance(call.func, nodes.Attribute)
    )


def stepped_optimizer(call: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    """The optimizer an ``opt.step()`` or ``scaler.step(opt)`` call updates; None for other steps
    (schedulers, environments)."""
    if not isinstance(call, nodes.Call) or infer.method_name(call) != "step":
        return None
    receiver = call.func.expr  # type: ignore[union-attr]
    if _scaler_receiver(call):
        if call.args and not isinstance(call.args[0], nodes.Starred) and is_optimizer(call.args[0]):
            return call.args[0]  # type: ignore[no-any-return]
        return None
    return receiver if is_optimizer(receiver) else None


#: Methods whose call hands over a model's parameters (``AdamW(model.parameters())``).
PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})


def parameter_owners(module: nodes.Module) -> "set[str]":
    """Texts of every receiver of ``.parameters()`` / ``.named_parameters()`` in the file: the models
    whose parameters are optimised or whose gradients are handled (``self._model`` for
    ``self._model.parameters()``)."""
    owners: "set[str]" = set()
    for call in module.nodes_of_class(nodes.Call):
        if isinstance(call.func, nodes.Attribute) and call.func.attrname in PARAMETER_METHODS:
            owners.add(dataflow.binding_text(call.func.expr))
    return owners


def is_zero_grad(call: nodes.NodeNG) -> bool:
    """``optimizer.zero_grad()`` / ``model.zero_grad()``."""
    return isinstance(call, nodes.Call) and infer.method_name(call) == "zero_grad"


def framework_managed(node: nodes.NodeNG) -> bool:
    """``node`` sits in a class deriving (directly or through classes of the file) from a
    Lightning, Hugging Face or Accelerate class: that framework runs the loop."""
    scope = node.scope()
    while scope is not None and not isinstance(scope, nodes.Module):
        if isinstance(scope, nodes.ClassDef) and _framework_class(scope, MAX_BASE_DEPTH):
            return True
        parent = scope.parent
        scope = parent.scope() if parent is not None else None
    return False


def _framework_class(klass: nodes.ClassDef, depth: int) -> bool:
    if depth <= 0:
        return False
    for base in klass.bases:
        dotted = infer.dotted_name(base)
        if dotted is not None and dotted.split(".")[0] in FRAMEWORK_PREFIXES:
            return True
        local = infer.safe_infer(base)
        if isinstance(local, nodes.ClassDef) and local.root() is klass.root() and local is not klass:
            if _framework_class(local, depth - 1):
                return True
    return False


def with_items_around(node: nodes.NodeNG) -> Iterator[Tuple[nodes.NodeNG, nodes.NodeNG]]:
    """``(with_node, item_expr)`` for every ``with`` whose body holds ``node``, innermost first,
    within its function."""
    child = node
    parent = node.parent
    while parent is not None and not isinstance(parent, _SCOPES):
        if isinstance(parent, (nodes.With, nodes.AsyncWith)) and child in parent.body:
            for item, _ in parent.items:
                yield parent, item
        child = parent
        parent = parent.parent
