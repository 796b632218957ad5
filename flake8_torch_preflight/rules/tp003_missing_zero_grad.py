"""TP003 missing-zero-grad: backward() in a loop that steps an optimizer it never zeroes."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astroid import nodes

from ..analysis.semantic import dataflow, infer, loops
from ..analysis.training import entrypoint, gradients
from ._base import Rule, register, text_gate

#: Method names that clear gradients when called on an optimizer or a module.
GRAD_RESETS = frozenset({"zero_grad"})

#: Tensor methods that clear a ``.grad`` in place (``p.grad.zero_()``).
GRAD_TENSOR_RESETS = frozenset({"zero_", "detach_", "fill_"})


@register
class MissingZeroGrad(Rule):
    code, slug = "TP003", "missing-zero-grad"
    requires = text_gate(r"backward")
    message = "{name}.zero_grad() is missing in this backward() loop: gradients add up into wrong updates"
    quoted = ("name",)
    rationale = (
        "PyTorch adds new gradients into .grad instead of overwriting them. A loop that calls backward() and "
        "optimizer.step() without zero_grad() (on the optimizer, or on the model whose parameters it holds) "
        "applies the sum of every gradient so far at every step: the run does not crash, it diverges or "
        "learns garbage. The rule looks at the smallest loop that steps the optimizer, including helper "
        "functions of the file called from it; zero_grad() anywhere in that loop, even inside an if (for "
        "deliberate gradient accumulation), counts."
    )
    leaves_alone = (
        "Resets written out count as zero_grad(): p.grad = None or p.grad.zero_() for each parameter, in the "
        "loop or in a helper it calls (``self._train_batch(X, y)``), and so does calling a model of the project "
        "whose forward() starts with self.zero_grad() (it clears the optimizers over it and its submodules). "
        "A loop that never steps (full-batch accumulation) is not flagged, nor a benchmark: a function that"
        " times or measures the memory of forward/backward/step on tensors it makes up (``torch.ones``,"
        " ``torch.randn``; no data read) and never reads the trained module or the loss afterwards."
    )
    example_bad = """
        import torch

        model = torch.nn.Linear(10, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    """
    example_good = """
        import torch

        model = torch.nn.Linear(10, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    """

    def visit_for(self, node: nodes.For) -> None:
        self._check_loop(node)

    def visit_while(self, node: nodes.While) -> None:
        self._check_loop(node)

    def _check_loop(self, loop: "loops.Loop") -> None:
        calls = loops.loop_calls(loop)
        if not any(infer.method_name(c) == "step" for c in calls):
            return  # cheap syntactic check first
        backwards = [c for c in calls if _is_backward(c)]
        if not backwards:
            return
        clears_all = any(_clears_grad_tensor(c) or _zeroing_function(c) for c in calls) or any(
            _assigns_grad_none(body) for body in _bodies_run(loop, calls)
        )
        if clears_all or entrypoint.made_up_benchmark(loops.enclosing_function(loop) or loop.root()):
            return  # zeroed, or a benchmark on made-up tensors whose gradients nothing reads
        resets = [
            c.func.expr for c in calls if infer.method_name(c) in GRAD_RESETS and isinstance(c.func, nodes.Attribute)
        ] + [c.func for c in calls if _forward_zeroes(c)]
        for step_call, optimizer in _owned_steps(loop, calls):
            if any(_clears(reset, optimizer) for reset in resets):
                continue
            target = _backward_before(backwards, calls, step_call, loop)
            self.report(target, name=dataflow.binding_text(optimizer))


def _is_backward(call: nodes.Call) -> bool:
    """``loss.backward()``, ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``,
    ``torch.autograd.backward(loss)``: a method call named backward."""
    return infer.method_name(call) == "backward" and not entrypoint.is_context_backward(call)


def _clears_grad_tensor(call: nodes.Call) -> bool:
    """``p.grad.zero_()`` or ``p.grad = None`` style resets clear every parameter in reach."""
    if infer.method_name(call) not in GRAD_TENSOR_RESETS:
        return False
    receiver = call.func.expr  # type: ignore[union-attr]
    while isinstance(receiver, nodes.Attribute) and receiver.attrname == "data":
        receiver = receiver.expr
    return isinstance(receiver, nodes.Attribute) and receiver.attrname == "grad"


def _assigns_grad_none(loop: nodes.NodeNG) -> bool:
    for assign in loop.nodes_of_class(nodes.AssignAttr):
        if assign.attrname == "grad":
            return True
    return False


def _bodies_run(loop: "loops.Loop", calls: List[nodes.Call]) -> List[nodes.NodeNG]:
    """The loop and the helper functions whose calls ``loops.loop_calls`` gathered for it (a
    ``self._train_batch(X, y)`` whose body sets ``param.grad = None``)."""
    helpers = {id(c.scope()): c.scope() for c in calls if isinstance(c.scope(), nodes.FunctionDef)}
    helpers.pop(id(loop.scope()), None)
    return [loop] + list(helpers.values())


def _zeroing_function(call: nodes.Call) -> bool:
    """A function (not a method) that zeroes the gradients of the parameters it is handed:
    ``zero_grad(self.model_params)`` from the project's utilities, whose body resets ``p.grad``; a
    function named ``zero_grad`` that cannot be read counts too (in doubt: zeroed)."""
    if not isinstance(call.func, nodes.Name):
        return False
    func = infer.function_def(call.func)
    if func is None:
        return call.func.name in GRAD_RESETS
    if func.root() is call.root():
        return False  # a helper of the file: its calls are already among the loop's
    inner = list(func.nodes_of_class(nodes.Call))
    return _assigns_grad_none(func) or any(
        _clears_grad_tensor(c) or (infer.method_name(c) in GRAD_RESETS) for c in inner
    )


def _forward_zeroes(call: nodes.Call) -> bool:
    """``call`` runs a module of a project class whose ``forward`` starts by zeroing its own gradients
    (``self.zero_grad()``): calling the model clears every parameter it holds, submodules included."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return False
    klass = infer.instance_class(call.func)
    if klass is None or klass.root().name.startswith("torch"):
        return False
    forward = infer.class_method(klass, "forward")
    return forward is not None and any(
        gradients.is_zero_grad(inner) and dataflow.is_self_attr(inner.func)
        for inner in forward.nodes_of_class(nodes.Call)
    )


def _owned_steps(loop: "loops.Loop", calls: List[nodes.Call]) -> List[Tuple[nodes.Call, nodes.NodeNG]]:
    """(step call, optimizer expression) for optimizer steps whose innermost loop is ``loop``."""
    owned = []
    for call in calls:
        if infer.method_name(call) != "step":
            continue
        if not _owned_by(call, loop):
            continue
        optimizer = gradients.stepped_optimizer(call)
        if optimizer is not None:
            owned.append((call, optimizer))
    return owned


def _owned_by(call: nodes.Call, loop: "loops.Loop") -> bool:
    """Is ``loop`` the innermost loop that runs ``call``?  A call in a loop-free helper runs once
    per iteration of the loop that calls the helper."""
    inner = loops.innermost(call)
    if loops.inside(call, loop):
        return inner is loop
    return inner is None


def _clears(reset: nodes.NodeNG, optimizer: nodes.NodeNG) -> bool:
    """Does ``reset.zero_grad()`` clear the gradients ``optimizer`` steps with?  In doubt: yes."""
    if dataflow.binding_text(reset) == dataflow.binding_text(optimizer):
        return True
    if gradients.is_optimizer(reset):
        return not _different_optimizers(reset, optimizer)
    # A module (or something unknown): it clears the optimizer's gradients unless
    # the optimizer provably holds another module's parameters.
    owner = _parameter_owner(optimizer)
    module = dataflow.binding_text(_unwrap_module(reset))
    return owner is None or owner == module or owner.startswith(module + ".")  # ``model.enc``: a submodule


def _different_optimizers(a: nodes.NodeNG, b: nodes.NodeNG) -> bool:
    sites_a = _construction_sites(a)
    sites_b = _construction_sites(b)
    if sites_a and sites_b:
        return not (sites_a & sites_b)
    # Two differently named optimizer-like bindings that cannot be resolved.
    return sites_a is None and sites_b is None


def _construction_sites(expr: nodes.NodeNG) -> Optional[set]:
    values = dataflow.assigned_values(expr) if isinstance(expr, (nodes.Name, nodes.Attribute)) else None
    if not values or not all(isinstance(v, nodes.Call) for v in values):
        return None
    return {id(v) for v in values}


def _parameter_owner(optimizer: nodes.NodeNG) -> Optional[str]:
    """``model`` for an optimizer built as ``Adam(model.parameters(), ...)``; None when unknown."""
    values = dataflow.assigned_values(optimizer) if isinstance(optimizer, (nodes.Name, nodes.Attribute)) else None
    if not values or len(values) != 1 or not isinstance(values[0], nodes.Call) or not values[0].args:
        return None
    params = values[0].args[0]
    if isinstance(params, nodes.Call) and infer.method_name(params) in ("parameters", "named_parameters"):
        return dataflow.binding_text(_unwrap_module(params.func.expr))  # type: ignore[union-attr]
    return None


def _unwrap_module(expr: nodes.NodeNG) -> nodes.NodeNG:
    """``model`` for ``model.module`` (a DDP wrapper's inner model)."""
    if isinstance(expr, nodes.Attribute) and expr.attrname == "module":
        return expr.expr
    return expr


def _backward_before(
    backwards: List[nodes.Call], calls: List[nodes.Call], step: nodes.Call, loop: "loops.Loop"
) -> nodes.Call:
    """The last backward() before ``step`` in iteration order (else the first backward); one the
    loop itself calls (``self.backward(loss)``, a trainer's own method) before one inside it."""
    position = {id(c): i for i, c in enumerate(calls)}
    before = [b for b in backwards if position[id(b)] < position[id(step)]] or backwards[:1]
    own = [b for b in before if loops.inside(b, loop)]
    return (own or before)[-1]
