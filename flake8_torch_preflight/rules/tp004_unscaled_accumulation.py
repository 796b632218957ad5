"""TP004 unscaled-accumulation: gradients summed over N micro-batches before a step, loss never divided by N.

Accumulation is read from the loop structure (``analysis.training.accumulation``): a step gated by
``if (i + 1) % N == 0`` (a flag computed from one, a counter, a ``continue`` gate) in a loop or
in a step function called per batch, or an inner loop over micro-batches (a ``for`` over
micro-batches, or a ``while`` that fetches a batch with ``next()`` until a counter it increments
reaches a bound) that never steps while the enclosing loop or function steps after it (or, for a
loop alone in its function, the caller steps after calling that function).

The loss passed to ``backward()`` is then traced back (``analysis.training.derivation``, arithmetic spine
only): any division on the way (``loss / N``, ``loss /= N``, ``loss.div(N)``, ``* (1 / N)``, a
helper or lambda of the file that divides), or gradients divided before the step
(``p.grad /= N``, ``p.grad.div_(N)``), counts as the fix; a division that only touches a logged
value (``running += loss.item() / N``) does not.  Silent when the trace is incomplete, when a
call the loss comes from cannot be seen into but is handed N (or the object holding N), inside
``accelerator.accumulate(...)``, under ``accelerator.backward``/DeepSpeed, and in Lightning or
Hugging Face Trainer classes, which scale for you.

Then ``scale_effect`` asks whether the N-times-larger gradient changes the update: clipping
where the step is taken, an SGD-like optimizer, or an Adam-like one with a non-zero coupled
``weight_decay`` (read from the constructor call, through assignments, call sites, wrappers and
helpers); an Adam-like optimizer otherwise takes the same step and is left alone, and so is an
optimizer that cannot be resolved.  Clipping helpers are recognised by name (``CLIP_NAME``) as well as by resolution.

Name-based evidence lives in ``analysis.training.accumulation`` (``MICRO_BATCH_NAME``, to recognise an
inner micro-batch loop) and ``analysis.training.gradients`` (an unresolvable optimizer or scaler named
like one); neither decides a finding alone.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator, List, Optional, Set, Tuple

from astroid import nodes

from ..analysis.training import accumulation, derivation, gradients, models
from ..analysis.semantic import dataflow, infer, loops, static_values
from ..analysis.training.torch_names import OPTIMIZER_BASES
from ._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ..analysis.setup.build import FileContext

#: ``with accelerator.accumulate(model):`` — Accelerate divides the loss itself.
ACCUMULATE_CONTEXTS = frozenset({"accumulate"})

#: Optimizers whose update grows with the gradient's scale (plain or momentum SGD and relatives).
SCALE_SENSITIVE = frozenset({"SGD", "SGD8bit", "ASGD", "LBFGS", "Adadelta"})

#: Optimizers that divide the gradient by a running estimate of its own scale (or take its sign),
#: with weight decay applied to the weights directly: the update is the same, up to eps, whatever
#: the gradient's scale.
SCALE_INVARIANT = frozenset({
    "AdamW", "AdamW8bit", "AdamW32bit", "PagedAdamW", "PagedAdamW8bit", "PagedAdamW32bit", "Adafactor",
    "Lion", "Lion8bit", "Lion32bit", "PagedLion", "PagedLion8bit", "Rprop", "SparseAdam", "FusedAdam",
    "FusedLAMB", "LAMB", "Lamb", "DeepSpeedCPUAdam",
})

#: Scale-invariant as above, but ``weight_decay`` is L2 added to the gradient: a summed gradient
#: weakens it N times (``decoupled_weight_decay=True`` makes NAdam/RAdam decouple it).
COUPLED_DECAY = frozenset({
    "Adam", "Adam8bit", "Adam32bit", "PagedAdam", "PagedAdam8bit", "Adamax", "Adagrad", "Adagrad8bit",
    "RMSprop", "RMSprop8bit", "NAdam", "RAdam",
})

#: Packages whose optimizer classes are recognised by their import (they are not read).
OPTIMIZER_PACKAGES = ("torch.optim", "bitsandbytes", "transformers", "apex", "deepspeed", "lion_pytorch", "timm.optim")

#: Calls that hand an optimizer back wrapped (Accelerate, Fabric, Horovod, DeepSpeed-style setups).
OPTIMIZER_WRAPPERS = frozenset({"prepare", "setup_optimizers", "setup", "DistributedOptimizer", "wrap_optimizer"})

#: Calls that clip gradients (torch, Accelerate, Fabric, Lightning, and helpers named for it).
CLIP_NAME = re.compile(r"clip_grad|clip_gradient|clip_norm", re.IGNORECASE)

#: In-place methods that clip gradients by value (``p.grad.clamp_(-c, c)``).
CLAMP_METHODS = frozenset({"clamp_", "clip_"})

#: What the unscaled sum does, by what the step is sensitive to (the message's second half).
EFFECTS = {
    "clip": "clipping's threshold is that many times too low",
    "sgd": "each {optimizer} update is that many times too large",
    "decay": "{optimizer}'s weight_decay is that many times too weak",
    "either": "the step sees that many times the mean gradient",
    "mixed": "it weighs that many times the divided loss",
}


@register
class UnscaledAccumulation(Rule):
    code, slug = "TP004", "unscaled-accumulation"
    requires = text_gate(r"backward")  # every finding is a backward call of this file
    message = "accumulating {n} micro-batches, loss not divided by it: {effect}"
    quoted = ("n",)
    rationale = (
        "Gradient accumulation emulates a large batch by calling backward() on several micro-batches before "
        "one optimizer.step(). PyTorch sums the gradients in .grad, so unless each micro-batch loss is "
        "divided by the number of micro-batches the step sees N times the mean gradient. That changes the "
        "update wherever the step depends on the gradient's scale: SGD (with or without momentum) moves N "
        "times too far, so the effective learning rate grows with the accumulation count; clipping by norm "
        "or value before the step compares the sum with a threshold meant for the mean; and L2 weight decay "
        "added to the gradient (Adam, RMSprop or Adagrad with weight_decay > 0) is N times too weak. The "
        "rule recognises a step gated by `if (i + 1) % N == 0` (or a counter, or a `continue` gate) and an "
        "inner loop over micro-batches (also in a function or method whose caller takes the step), then "
        "traces the loss given to backward() back through assignments "
        "and helpers of the file: a division anywhere on that path, or gradients divided before the step, "
        "is accepted; a division of a logged copy is not. The message names which of these the sum changes "
        "(when a config picks the optimizer on several branches, it says only that the step sees N times "
        "the mean gradient; when another backward of the same micro-batch is divided, as a task loss "
        "beside an undivided adversarial or auxiliary loss, it says that the undivided term weighs N times "
        "the divided one)."
    )
    leaves_alone = (
        "Optimizers that divide the gradient by a running estimate of its own scale (Adam, AdamW, RMSprop, "
        "Adagrad, Adamax, NAdam, RAdam, Adafactor, Lion and their 8-bit or fused versions) take the same "
        "step, up to eps, from the sum as from the mean, so they are not reported unless the gradients are "
        "clipped before the step or a non-zero coupled weight_decay is seen (a literal, a constant, an "
        "argparse default, a parameter-group dict; decay read from a config at run time is not seen). The "
        "optimizer is read from the call that built it, through assignments, in-file call sites, helpers "
        "that return it and fabric.setup / accelerator.prepare. One that cannot be resolved (built in "
        "another module, passed in by a caller the file does not show, a custom optimizer class) is not "
        "reported unless the gradients are clipped: nothing then shows that the scale reaches the update, "
        "and accumulation is most often paired with an Adam-like optimizer. Gradient caching, where each "
        "micro-step concatenates the cached outputs of the other micro-batches around the live one "
        "(torch.cat(cache[:j] + [out] + cache[j + 1:])) so that every micro-step's loss is already the "
        "whole batch's loss, is left alone. So is a loss reduced by sum (reduction='sum', size_average=False, "
        "or a loss class of the project whose losses all sum): N summed micro-batches give the full batch's "
        "summed loss, exactly as without accumulation, and such code scales the learning rate instead. "
        "Accelerate's accumulate(), accelerator.backward, Lightning and the Hugging Face Trainer scale for "
        "you and are left alone."
    )
    example_bad = (
        "import torch\n"
        "\n"
        "model = torch.nn.Linear(8, 2)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "criterion = torch.nn.CrossEntropyLoss()\n"
        "\n"
        "\n"
        "def train(loader, accum_steps):\n"
        "    for i, (x, y) in enumerate(loader):\n"
        "        loss = criterion(model(x), y)\n"
        "        loss.backward()\n"
        "        if (i + 1) % accum_steps == 0:\n"
        "            optimizer.step()\n"
        "            optimizer.zero_grad()\n"
    )
    example_good = (
        "import torch\n"
        "\n"
        "model = torch.nn.Linear(8, 2)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "criterion = torch.nn.CrossEntropyLoss()\n"
        "\n"
        "\n"
        "def train(loader, accum_steps):\n"
        "    for i, (x, y) in enumerate(loader):\n"
        "        loss = criterion(model(x), y) / accum_steps\n"
        "        loss.backward()\n"
        "        if (i + 1) % accum_steps == 0:\n"
        "            optimizer.step()\n"
        "            optimizer.zero_grad()\n"
    )

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        self._reported: Set[int] = set()

    def visit_for(self, node: nodes.For) -> None:
        self._check(accumulation.accumulation_in(node))

    def visit_while(self, node: nodes.While) -> None:
        self._check(accumulation.accumulation_in(node))

    def visit_functiondef(self, node: nodes.FunctionDef) -> None:
        self._check(accumulation.accumulation_in(node))  # a step function called per batch

    def _check(self, found: "Optional[accumulation.Accumulation]") -> None:
        if found is None or found.rescaled:
            return  # no accumulation, or the summed gradients are divided before the step
        effect = scale_effect(found)
        if effect is None:
            return  # the optimizer's update does not depend on the gradient's scale
        if _lr_divided(found):
            return  # lr = base_lr / batch_size / subdivision: the update scales the summed gradient back
        if any(_divided(_loss_trace(call)) for call in found.backwards):
            effect = EFFECTS["mixed"]  # another backward of the step is divided: the sum is lopsided
        for call in found.backwards:
            self._check_backward(call, found.divisor, found.text, effect)

    # -- the loss ----------------------------------------------------------------------------
    def _check_backward(self, call: nodes.Call, divisor: Optional[nodes.NodeNG], text: str, effect: str) -> None:
        if id(call) in self._reported:
            return
        if gradients.framework_managed(call) or _under_accumulate(call):
            return
        trace = _loss_trace(call)
        if trace is None or _divided(trace):
            return
        if any(isinstance(node, nodes.Call) and models.sum_reduced(node) for node in trace.nodes):
            return  # a summed loss: N micro-batches sum to the full batch's loss, as without accumulation
        if not trace.complete:
            return
        if any(_handed(c, divisor) for c in trace.opaque_calls):
            return  # an unseen loss function that receives N may divide by it
        self._reported.add(id(call))
        self.report(call, n=text, effect=effect)


def _loss_trace(call: nodes.Call) -> "Optional[derivation.Derivation]":
    """How the loss a backward differentiates was derived (through ``scaler.scale(loss)``); None for
    a ``scale()`` with no argument."""
    receiver = gradients.backward_receiver(call)
    if gradients.is_scale_call(receiver):
        if not receiver.args:
            return None
        receiver = receiver.args[0]
    return derivation.derive(receiver)


def _divided(trace: "Optional[derivation.Derivation]") -> bool:
    return trace is not None and any(derivation.is_division(node) for node in trace.nodes)


def _handed(call: nodes.Call, divisor: Optional[nodes.NodeNG]) -> bool:
    """The opaque ``call`` (or the call that built its callee) receives N or the object holding it."""
    if divisor is None:
        return False
    roots = {dataflow.binding_text(divisor)}
    if isinstance(divisor, nodes.Attribute):
        base = divisor.expr
        if not (isinstance(base, nodes.Name) and base.name == "self"):
            roots.add(dataflow.binding_text(base))
    sources: List[nodes.NodeNG] = [call]
    if isinstance(call.func, (nodes.Name, nodes.Attribute)):
        sources.extend(v for v in dataflow.assigned_values(call.func) or [] if isinstance(v, nodes.Call))
    for source in sources:
        exprs = list(source.args) + [kw.value for kw in source.keywords or ()]
        func = source.func
        if isinstance(func, nodes.Attribute) and dataflow.binding_text(func.expr).split(".")[0] != "self":
            exprs.append(func.expr)
        if any(dataflow.binding_text(sub) in roots for expr in exprs for sub in _derived_names(expr, HANDED_DEPTH)):
            return True
    return False


#: How many assignments back a value handed to an unseen loss function is followed for N
#: (``denominator = token_counts[(i // accum) * accum]``: the group's count, looked up by N).
HANDED_DEPTH = 2


def _derived_names(expr: nodes.NodeNG, depth: int) -> Iterator[nodes.NodeNG]:
    """The names handed over in ``expr``, and those the local names among them were computed from."""
    for sub in _names(expr):
        yield sub
        if depth and isinstance(sub, nodes.Name):
            for value in dataflow.assigned_values(sub) or ():
                if not _is_flag(value):  # ``is_log_step = step % N == 0`` says when, never how much
                    yield from _derived_names(value, depth - 1)


def _is_flag(value: nodes.NodeNG) -> bool:
    """A comparison, a boolean combination or a negation: a flag, which no loss divides by."""
    return isinstance(value, (nodes.Compare, nodes.BoolOp)) or (
        isinstance(value, nodes.UnaryOp) and value.op == "not")


def _names(expr: nodes.NodeNG) -> Iterator[nodes.NodeNG]:
    """Names and attribute chains handed over in ``expr``.  An attribute hands only itself: the call
    given ``args.label_smoothing`` does not receive ``args`` (nor ``args.accum_steps``)."""
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        yield expr
    if isinstance(expr, nodes.Attribute) and isinstance(expr.expr, (nodes.Name, nodes.Attribute)):
        return
    for child in expr.get_children():
        yield from _names(child)


def _under_accumulate(call: nodes.Call) -> bool:
    """Inside ``with accelerator.accumulate(model):``."""
    return any(
        isinstance(item, nodes.Call) and infer.call_name(item) in ACCUMULATE_CONTEXTS
        for _, item in gradients.with_items_around(call)
    )


# -- what the unscaled sum changes -----------------------------------------------------------------
def scale_effect(found: "accumulation.Accumulation") -> Optional[str]:
    """The message's account of what the N-times-larger gradient changes, or None when nothing does:
    clipping (by norm or value) before the step compares the sum with a threshold meant for the mean;
    SGD-like optimizers step in proportion to the gradient; Adam-like ones with L2 decay in the gradient
    weaken it; Adam-like ones otherwise normalise the scale away.  An optimizer that cannot be resolved
    (or a class the tables do not know) shows no harm, so it is left alone unless gradients are clipped."""
    if found.scope is not None and _clips(found.scope):
        return EFFECTS["clip"]
    kinds = [_optimizer_kind(step) for step in found.steps]
    if any(kind == "either" for kind, _ in kinds):
        return EFFECTS["either"]
    for kind, name in kinds:
        if kind == "sgd":
            return EFFECTS["sgd"].format(optimizer=name)
    for kind, name in kinds:
        if kind == "decay":
            return EFFECTS["decay"].format(optimizer=name)
    return None


def _lr_divided(found: "accumulation.Accumulation") -> bool:
    """Every optimizer the accumulation steps is built with a learning rate divided by its count
    (``lr = cfg.LR / batch_size / subdivision``, the darknet convention for summed losses): the sum
    of the micro-batches' gradients is scaled back in the update itself."""
    divided = False
    for step in found.steps:
        optimizer = gradients.stepped_optimizer(step)
        built = _constructions(optimizer, 4) if optimizer is not None else None
        if not built:
            return False
        for call, _ in built:
            lr = infer.argument(call, "lr", 1)
            if lr is None or not _divides_by(lr, found.text, LR_HOPS):
                return False
            divided = True
    return divided


#: How many assignments ``_divides_by`` follows from the ``lr=`` argument to its division.
LR_HOPS = 3


def _divides_by(expr: nodes.NodeNG, text: str, hops: int) -> bool:
    """``expr`` is a division chain with ``text`` among its divisors (``base / batch / subdivision``),
    through the names it is bound to."""
    if isinstance(expr, nodes.BinOp) and expr.op == "/":
        return expr.right.as_string() == text or _divides_by(expr.left, text, hops)
    if isinstance(expr, nodes.Name) and hops > 0:
        values = infer.bound_values(expr)
        return bool(values) and all(_divides_by(v, text, hops - 1) for v in values)  # type: ignore[union-attr]
    return False


def _clips(scope: nodes.NodeNG) -> bool:
    """Gradients are clipped where the steps are taken (helpers of the file included):
    ``clip_grad_norm_``/``clip_grad_value_``, ``accelerator.clip_grad_norm_``, ``fabric.clip_gradients``,
    a helper named for it, or ``p.grad.clamp_(-c, c)``."""
    if isinstance(scope, (nodes.For, nodes.While)):
        calls = loops.loop_calls(scope, accumulation.HELPER_DEPTH)
    else:
        calls = loops.calls_in(scope.body, accumulation.HELPER_DEPTH) if hasattr(scope, "body") else []
    for call in calls:
        name = infer.call_name(call)
        if name is not None and CLIP_NAME.search(name):
            return True
        if name in CLAMP_METHODS and isinstance(call.func, nodes.Attribute) and _is_grad(call.func.expr):
            return True
    return False


def _is_grad(expr: nodes.NodeNG) -> bool:
    while isinstance(expr, nodes.Attribute) and expr.attrname == "data":
        expr = expr.expr
    return isinstance(expr, nodes.Attribute) and expr.attrname == "grad"


def _optimizer_kind(step: nodes.Call) -> Tuple[Optional[str], str]:
    """``("sgd" | "decay" | "invariant" | "either" | None, class name)`` for the optimizer ``step`` updates
    (``either``: built on several branches, some of which feel the scale),
    read from the call that built it (through assignments, parameters, wrappers and helpers of the
    file) or, failing that, from the class astroid infers for it."""
    optimizer = gradients.stepped_optimizer(step)
    if optimizer is None:
        return None, ""
    built = _constructions(optimizer, 4)
    if built:
        kinds = [_kind_of_call(call, name) for call, name in built]
        if len(set(kinds)) > 1 and any(kind in ("sgd", "decay") for kind, _ in kinds):
            return "either", ""  # built on several branches (SGD or Adam by a config): no one effect
        for wanted in ("sgd", "decay", None):
            for kind, name in kinds:
                if kind == wanted:
                    return kind, name
        return kinds[0]
    klass = infer.instance_class(optimizer)
    if klass is not None and infer.class_is_subclass_of(klass, OPTIMIZER_BASES):
        return _kind_of_class(klass.name, None), klass.name
    return None, ""


def _constructions(expr: nodes.NodeNG, depth: int) -> Optional[List[Tuple[nodes.Call, str]]]:
    """The optimizer constructor calls ``expr`` may be bound to, each with its class name; None when
    some binding cannot be followed to one."""
    if depth <= 0:
        return None
    values: Optional[List[nodes.NodeNG]] = None
    if isinstance(expr, nodes.Call):
        values = [expr]
    elif isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = infer.bound_values(expr)
        if not values and isinstance(expr, nodes.Name):
            values = _unpacked_from_wrapper(expr)
    if not values:
        return None
    found: List[Tuple[nodes.Call, str]] = []
    for value in values:
        if isinstance(value, (nodes.Name, nodes.Attribute)) and value is not expr:
            rebound = _constructions(value, depth - 1)  # ``stepper = adam``
            if rebound is None:
                return None
            found.extend(rebound)
            continue
        if not isinstance(value, nodes.Call) or not isinstance(value.func, (nodes.Name, nodes.Attribute)):
            return None
        name = _optimizer_class(value)
        if name is not None:
            found.append((value, name))
            continue
        inner = _wrapped_optimizer(value, depth)
        if inner is None:
            return None
        found.extend(inner)
    return found


def _optimizer_class(call: nodes.Call) -> Optional[str]:
    """The class name when ``call`` builds an optimizer of torch or of a known optimizer package."""
    klass = infer.safe_infer(call.func)
    if isinstance(klass, nodes.ClassDef) and infer.class_is_subclass_of(klass, OPTIMIZER_BASES):
        return str(klass.name)
    dotted = infer.dotted_name(call.func)
    if dotted is not None and dotted.startswith(OPTIMIZER_PACKAGES):
        name = dotted.rsplit(".", 1)[-1]
        if name in SCALE_SENSITIVE | SCALE_INVARIANT | COUPLED_DECAY:
            return name
    return None


def _wrapped_optimizer(call: nodes.Call, depth: int) -> Optional[List[Tuple[nodes.Call, str]]]:
    """Through ``fabric.setup_optimizers(opt)`` and similar wrappers, and through a helper of the file
    that returns the optimizer it builds."""
    if infer.call_name(call) in OPTIMIZER_WRAPPERS:
        args = [a for a in call.args if not isinstance(a, nodes.Starred)]
        candidates = [a for a in args if isinstance(a, (nodes.Name, nodes.Attribute)) and gradients.is_optimizer(a)]
        if len(candidates) == 1:
            return _constructions(candidates[0], depth - 1)
        return None
    func = infer.function_def(call.func)
    if func is None or str(func.root().name).split(".")[0] == "torch":
        return None
    returned = [r.value for r in func.nodes_of_class(nodes.Return) if r.value is not None and r.scope() is func]
    if not returned:
        return None
    found: List[Tuple[nodes.Call, str]] = []
    for value in returned:
        inner = _constructions(value, depth - 1)
        if inner is None:
            return None
        found.extend(inner)
    return found


def _unpacked_from_wrapper(name: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """``model, optimizer = accelerator.prepare(model, optimizer)``: the argument at the same position."""
    binding = dataflow.single_binding(name)
    if binding is None or not isinstance(binding.parent, nodes.Tuple):
        return None
    assign = binding.parent.parent
    if not isinstance(assign, nodes.Assign) or not isinstance(assign.value, nodes.Call):
        return None
    call = assign.value
    if infer.call_name(call) not in OPTIMIZER_WRAPPERS or any(isinstance(a, nodes.Starred) for a in call.args):
        return None
    index = binding.parent.elts.index(binding)
    if len(call.args) != len(binding.parent.elts):
        return None
    return [call.args[index]]


def _kind_of_call(call: nodes.Call, name: str) -> Tuple[Optional[str], str]:
    return _kind_of_class(name, call), name


def _kind_of_class(name: str, call: Optional[nodes.Call]) -> Optional[str]:
    if name in SCALE_SENSITIVE:
        return "sgd"
    if name in SCALE_INVARIANT:
        return "invariant"
    if name not in COUPLED_DECAY:
        return None
    if call is None:
        return "invariant"  # built where it cannot be read: no decay is seen
    decoupled = static_values.value_of(infer.argument(call, "decoupled_weight_decay"))
    if decoupled is True:
        return "invariant"
    return "decay" if _decay_seen(call) else "invariant"


def _decay_seen(call: nodes.Call) -> bool:
    """A non-zero ``weight_decay`` is seen: the keyword (or its position in the constructor), or a
    ``"weight_decay"`` of a parameter group written as a dict literal."""
    position = None
    klass = infer.safe_infer(call.func)
    init = klass.locals.get("__init__") if isinstance(klass, nodes.ClassDef) else None
    if init and isinstance(init[0], nodes.FunctionDef):
        names = [a.name for a in init[0].args.args or []][1:]
        if "weight_decay" in names:
            position = names.index("weight_decay")
    values = [infer.argument(call, "weight_decay", position)]
    params = call.args[0] if call.args and not isinstance(call.args[0], nodes.Starred) else None
    if isinstance(params, nodes.Name):
        bound = dataflow.assigned_values(params)
        params = bound[0] if bound and len(bound) == 1 else None
    if isinstance(params, (nodes.List, nodes.Tuple)):
        for group in params.elts:
            if isinstance(group, nodes.Dict):
                values.extend(v for k, v in group.items if isinstance(k, nodes.Const) and k.value == "weight_decay")
    for value in values:
        found = static_values.value_of(value) if value is not None else 0
        if isinstance(found, (int, float)) and not isinstance(found, bool) and found != 0:
            return True
    return False
