"""TP008 stuck-eval-mode: model.eval() in the training loop with no model.train() before the next step.

One iteration of a loop that calls ``backward()`` is read as an ordered list of
events (``analysis.modes``): ``X.eval()`` / ``X.train(False)``, ``X.train()``,
forward passes ``X(...)`` with autograd on, and ``backward()``; helpers of the
file called from the loop are expanded in place with their parameters bound to
the call's arguments, so ``evaluate(model)`` puts the caller's ``model`` in
eval mode.  The loop repeats, so after an ``eval()`` the rule reads on to the
end of the iteration and then from the top of the next one: a ``train()`` on
the same model fixes it; a forward pass of that model followed by
``backward()`` first is the bug.

The report goes on the ``eval()`` call, or on the call, in the function where
the eval and the training step part ways, of the helper that makes it
(``evaluate(model, ...)`` in the epoch loop).

Silent: a model that is not the one being trained (its forward runs under
``no_grad``, it is frozen with ``requires_grad_(False)``, or every optimizer
built in the file provably holds another model's parameters: a teacher, an EMA
copy, a target network); an ``eval()`` followed by an unconditional ``break``
or ``return`` (the loop ends there); a receiver that resolves to something
other than an ``nn.Module``.  A ``train()`` on a receiver that is not provably
a different model (both resolved to different classes) counts as bringing it
back: in doubt, silence.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Set

from astroid import nodes

from ..analysis import infer, loops, modes
from ._base import Rule, register

if TYPE_CHECKING:
    from ..analysis.build import FileContext

#: Expansion depth for helpers called from the loop (evaluate -> run_validation -> model.eval()).
HELPER_DEPTH = 3


@register
class StuckEvalMode(Rule):
    code, slug = "TP008", "stuck-eval-mode"
    message = (
        "{what} puts {model} in eval mode inside the training loop and nothing calls {model}.train() before its "
        "next training step, so every later iteration trains with dropout off and batch-norm statistics frozen, "
        "silently giving a worse model. Call {model}.train() at the start of each epoch or right after evaluation."
    )
    rationale = (
        "model.eval() switches dropout off and makes batch-norm use its running statistics; the switch stays "
        "until model.train() is called. A training loop that evaluates every epoch (directly or through a "
        "validate()/evaluate() helper) and never switches back trains every epoch after the first in eval "
        "mode: nothing crashes, the loss still falls, but regularisation is gone and batch-norm statistics "
        "stop adapting. The rule reads one iteration of each loop that calls backward(), helpers of the file "
        "included, and reports an eval() (or the helper call that makes it) when a forward pass of the same "
        "model followed by backward() comes before any train() on it, wrapping around to the next iteration. "
        "model.train() at the top of the epoch, in the train helper, or right after validation all fix it; "
        "a bare self.model.train without the call does not. Frozen models (teachers, EMA copies) are left "
        "alone when their forward runs under no_grad, they are frozen with requires_grad_(False), or the "
        "file's optimizers provably train another model."
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
        self._facts: Optional[modes.ModelFacts] = None

    def visit_for(self, node: nodes.For) -> None:
        self._check_loop(node)

    def visit_while(self, node: nodes.While) -> None:
        self._check_loop(node)

    def _check_loop(self, loop: "loops.Loop") -> None:
        calls = loops.loop_calls(loop, HELPER_DEPTH)
        names = {infer.method_name(c) for c in calls}
        if "backward" not in names or not ({"eval", "train"} & names):
            return  # cheap syntactic check first
        if not any(modes.sets_eval(c) for c in calls):
            return
        events = modes.iteration_events(loop, HELPER_DEPTH)
        for index, event in enumerate(events):
            if event.kind != modes.EVAL or event.model is None:
                continue
            if modes.ends_loop_after(event, loop) or not modes.may_be_module(event):
                continue
            step = self._next_step_in_eval(events, index)
            if step is None:
                continue
            if self._not_trained(loop, event.model):
                continue
            anchor = modes.report_anchor(event, step)
            if id(anchor) in self._reported:
                continue
            self._reported.add(id(anchor))
            what = "{}()".format(infer.call_name(anchor)) if anchor is not event.node else event.model.text + ".eval()"
            if anchor is not event.node:
                what = "{} (through {}.eval())".format(what, event.model.text)
            elif infer.method_name(anchor) == "train":
                what = event.model.text + ".train(False)"
            self.report(anchor, what=what, model=event.model.text)

    def _next_step_in_eval(self, events: List[modes.Event], index: int) -> Optional[modes.Event]:
        """The backward() of a training step on the eval'd model that comes before any train() on it."""
        model = events[index].model
        assert model is not None
        forwarded = False
        for event in events[index + 1 :] + events[:index]:
            if event.kind == modes.TRAIN and event.model is not None and modes.same_model(model, event.model):
                return None
            if event.kind == modes.TRAIN and event.model is None:
                return None  # a train() on something unresolvable: in doubt, it brings the model back
            if event.kind == modes.FORWARD and not event.grad_off and event.model is not None:
                if event.model.key == model.key:
                    forwarded = True
            elif event.kind == modes.BACKWARD and forwarded:
                return event
        return None

    def _not_trained(self, loop: "loops.Loop", model: modes.ModelRef) -> bool:
        if self._facts is None:
            self._facts = modes.ModelFacts(loop.root())
        return self._facts.frozen_or_untrained(model)
