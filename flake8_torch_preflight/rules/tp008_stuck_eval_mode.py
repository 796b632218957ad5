"""TP008 stuck-eval-mode: model.eval() in the training loop with no model.train() before the next step.

One iteration of a loop that calls ``backward()`` is read as an ordered list of
events (``analysis.training.modes``): ``X.eval()`` / ``X.train(False)``, ``X.train()``,
forward passes ``X(...)`` with autograd on, ``backward()`` and ``.step()`` (or ``train_op()``, a
callable built from a model's parameters, ``modes.is_update_call``); helpers of the
file called from the loop are expanded in place with their parameters bound to
the call's arguments, so ``evaluate(model)`` puts the caller's ``model`` in
eval mode, and ``set_mode('eval', [g, d])`` runs the ``eval()`` branch of its
dispatch on ``g`` and on ``d``.  The loop repeats, so after an ``eval()`` the rule reads on to the
end of the iteration and then from the top of the next one: a ``train()`` on
the same model fixes it; a training step of that model first (its forward
pass with autograd on, then ``backward()``, then an optimizer ``step()``) is the
bug.

The report goes on the ``eval()`` call, or on the call, in the function where
the eval and the training step part ways, of the helper that makes it
(``evaluate(model, ...)`` in the epoch loop).

A forward inside the helper call that makes the ``eval()`` is the evaluation's
own, not a training forward, when the ``backward()`` is outside that helper.

Silent: gradients taken in eval mode with no optimizer step (saliency,
attribution); an ``if``/``else`` (or conditional expression) that picks
``train()`` or ``eval()`` per phase, which a static reading cannot follow; a
model that is not the one being trained (its forward runs under
``no_grad``, it is frozen with ``requires_grad_(False)``, or every optimizer
the loop steps provably holds another model's parameters: a teacher, an EMA
copy, a target network; or only tensors made in the file: a style-transfer
image); an ``eval()`` followed by an unconditional ``break`` or ``return``
(the loop ends there); a receiver that resolves to something other than an
``nn.Module``; a model whose classes are all read and hold no layer that
``eval()`` changes (``models.mode_dependent``: no dropout, batch norm or ``self.training``
branch, e.g. a ``Linear``/``ReLU`` MLP).  A ``train()`` on a receiver that is not provably
a different model (both resolved to different classes) counts as bringing it
back: in doubt, silence.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Set, Tuple

from astroid import nodes

from ..analysis.semantic import dataflow, infer, loops
from ..analysis.training import evaluation, models, modes, provenance
from ._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ..analysis.setup.build import FileContext

#: Expansion depth for helpers called from the loop (evaluate -> run_validation -> model.eval()).
HELPER_DEPTH = 3


@register
class StuckEvalMode(Rule):
    code, slug = "TP008", "stuck-eval-mode"
    #: The file backwards and switches modes, or imports what may do it from a module of its own
    #: (``from engine import train_one_epoch, evaluate``): helpers of the project are read.
    requires = text_gate(
        r"(?m)\A(?s:(?=.*backward)(?=.*\.(?:eval\(\)|train\()))"
        r"|^\s*from\s+[\w.]+\s+import\s+(?:\([^)]*|[^\n]*)(?:train|eval|valid|epoch|fit|test)"
    )
    message = "{what}: {model} then trains in eval mode (no dropout, BN frozen); call {model}.train() after it"
    quoted = ("what", "model")
    rationale = (
        "model.eval() switches dropout off and makes batch-norm use its running statistics; the switch stays "
        "until model.train() is called. A training loop that evaluates every epoch (directly or through a "
        "validate()/evaluate() helper) and never switches back trains every epoch after the first in eval "
        "mode: nothing crashes, the loss still falls, but regularisation is gone and batch-norm statistics "
        "stop adapting. The rule reads one iteration of each loop that calls backward(), helpers of the file "
        "included, and reports an eval() (or the helper call that makes it) when a training step of the same "
        "model (forward with autograd on, backward(), optimizer step) comes before any train() on it, "
        "wrapping around to the next iteration. A training op called without arguments and built from the "
        "model's parameters (train_op = get_train_op(params=model.parameters())) counts as the optimizer step. "
        "A helper that picks the switch from an argument "
        "(set_mode('eval', [models]) calling m.train() or m.eval() on a string, set_train(models, False) "
        "passing a bool to m.train()) is read with the argument's constant value, once per model of a "
        "literal list, and a helper's if on a parameter the call leaves at a constant default "
        "(run_epoch(model, val_b) with opt=None skips 'if opt is not None: loss.backward()') is read the "
        "same way. A model re-bound to its wrapper (model = DataParallel(model), optional or not) is the "
        "same model, and an optimizer over a child's parameters (SGD(model.encoder.parameters())) trains "
        "the model whose eval() switches that child. model.train() at the top of the epoch, in the train "
        "helper, or right after validation all fix it; a bare self.model.train without the call does not."
    )
    leaves_alone = (
        "Frozen models (teachers, EMA copies) are left alone when their forward runs under no_grad, they are "
        "frozen with requires_grad_(False), or the loop's optimizers provably train another model or no model "
        "(Adam([generated]) over an image or a latent made in the file: style transfer through a network held "
        "in eval mode). A mode "
        "picked per phase (an if/else, or two ifs on the same name, one calling train() and one eval()) is "
        "left alone unless the helper's constant argument decides it. One finding per eval() call and "
        "function: a helper called twice in the loop, or once per model of a list, is reported once. An "
        "evaluation helper's own forward is not a training forward: eval_sample(model, x) between a step's "
        "forward and its backward() leaves that step in train mode, so with model.train() opening every "
        "iteration it is silent. A model for which eval() changes nothing is left alone: its class and every "
        "submodule class are read (in the file or a project module) and hold no dropout, batch norm, "
        "InstanceNorm with running statistics, recurrent or attention layer and no self.training read (a "
        "Linear/ReLU MLP). A library model, a layer picked from a config or a module handed in is not read "
        "and keeps the finding. A container built in place is read through its arguments "
        "(``nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))`` has dropout). A model whose every forward "
        "in the step is detached where it is made (``extractor(x).detach()``: a frozen feature extractor "
        "switched to eval() on purpose) is not trained by the step: left alone."
    )
    example_bad = """
        for epoch in range(epochs):
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                val_loss = sum(criterion(model(x), y).item() for x, y in val_loader)
    """
    example_good = """
        for epoch in range(epochs):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                val_loss = sum(criterion(model(x), y).item() for x, y in val_loader)
    """

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        self._reported: Set[int] = set()
        self._switches: Set[Tuple[int, int]] = set()

    def visit_for(self, node: nodes.For) -> None:
        self._check_loop(node)

    def visit_while(self, node: nodes.While) -> None:
        self._check_loop(node)

    def _check_loop(self, loop: "loops.Loop") -> None:
        calls = loops.loop_calls(loop, HELPER_DEPTH)
        names = {infer.method_name(c) for c in calls}
        if "backward" not in names or not ({"eval", "train"} & names):
            return  # cheap syntactic check first
        if "step" not in names and not any(modes.is_update_call(c) for c in calls):
            return  # no optimizer step (``opt.step()``, or a ``train_op()`` built from the parameters)
        if not any(modes.may_set_eval(c) for c in calls):
            return
        events = modes.iteration_events(loop, HELPER_DEPTH)
        for index, event in enumerate(events):
            if event.kind != modes.EVAL or event.model is None:
                continue
            if modes.ends_loop_after(event, loop) or modes.in_mode_choice(event) or not modes.may_be_module(event):
                continue
            step = self._next_step_in_eval(events, index)
            if step is None:
                continue
            if self._not_trained(loop, event.model, events):
                continue
            if models.mode_dependent(event.model.node) is False:
                continue  # every layer computes the same in eval mode (a Linear/ReLU MLP): nothing is lost
            anchor = modes.report_anchor(event, step)
            switch_here = (id(event.node), id(anchor.scope()))
            if id(anchor) in self._reported or switch_here in self._switches:
                continue  # one finding per switch and function: a helper called twice, once per model of a list
            self._reported.add(id(anchor))
            self._switches.add(switch_here)
            switch = "{}.{}".format(
                dataflow.binding_text(event.node.func.expr),  # type: ignore[union-attr]
                "eval()" if infer.method_name(event.node) == "eval" else "train(False)",
            )
            what = switch if anchor is event.node else "{}() (through {})".format(infer.call_name(anchor), switch)
            self.report(anchor, what=what, model=event.model.text)

    def _next_step_in_eval(self, events: List[modes.Event], index: int) -> Optional[modes.Event]:
        """The backward() of a training step on the eval'd model (its forward with autograd on, then
        backward(), then an optimizer step) that comes before any train() on it, read to the end of
        the next iteration (the step after the switch in this one may differentiate a forward made
        before it)."""
        switch = events[index]
        model = switch.model
        assert model is not None
        forwards: List[modes.Event] = []
        backward: Optional[modes.Event] = None
        for event in events[index + 1:] + events:  # the rest of this iteration, then all of the next
            if event.kind == modes.TRAIN and (event.model is None or modes.same_model(model, event.model)):
                return None  # brought back (a train() on something unresolvable counts: in doubt, silence)
            if event.kind == modes.FORWARD and not event.grad_off and event.model is not None:
                if event.model.key == model.key and not _detached_at_once(event.node):
                    forwards.append(event)
            elif event.kind == modes.BACKWARD and backward is None and any(
                _trains(switch, forward, event) for forward in forwards
            ):
                backward = event
            elif event.kind == modes.STEP and backward is not None:
                owners = modes.step_owners(event)
                if owners is not None and not owners:
                    continue  # a scheduler's step
                if owners is not None and model.terminal not in owners:
                    backward = None  # another model's optimizer (a GAN's generator step): not this model's
                    continue
                return backward
        return None

    def _not_trained(self, loop: "loops.Loop", model: modes.ModelRef, events: List[modes.Event]) -> bool:
        """A frozen model, or one the loop's optimizers provably do not train (a teacher, an EMA copy)."""
        if evaluation.frozen_model(model.node, loops.enclosing_function(model.node)):
            return True
        owners = modes.trained_models(events)
        return owners is not None and model.terminal not in owners


def _detached_at_once(forward: nodes.NodeNG) -> bool:
    """The forward's output is detached in the expression that makes it (``enc(x).detach()``): a frozen
    feature extractor switched to eval() on purpose, not a model the step trains."""
    parent = forward.parent
    return (
        isinstance(parent, nodes.Attribute) and parent.attrname in provenance.STOP_METHODS
        and isinstance(parent.parent, nodes.Call) and parent.parent.func is parent
    )


def _trains(switch: modes.Event, forward: modes.Event, backward: modes.Event) -> bool:
    """``forward`` can be the training forward ``backward`` differentiates: it is not inside the
    helper call that makes ``switch`` when ``backward`` is outside it.  An evaluation helper's own
    forward (``eval_model(model, x)`` between the step's forward and its ``backward()``) runs in
    eval mode on purpose; the ``backward()`` after it belongs to the forward before the helper."""
    anchor = modes.report_anchor(switch, backward)
    return not any(call is anchor for call in forward.chain)
