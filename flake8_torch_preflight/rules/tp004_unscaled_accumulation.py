"""TP004 unscaled-accumulation: gradients summed over N micro-batches before a step, loss never divided by N.

Accumulation is read from the loop structure (``analysis.accumulation``): a step gated by
``if (i + 1) % N == 0`` (a flag computed from one, a counter, a ``continue`` gate) in a loop or
in a step function called per batch, or an inner loop over micro-batches that never steps while
the enclosing loop or function steps after it.

The loss passed to ``backward()`` is then traced back (``analysis.derivation``, arithmetic spine
only): any division on the way (``loss / N``, ``loss /= N``, ``loss.div(N)``, ``* (1 / N)``, a
helper or lambda of the file that divides), or gradients divided before the step
(``p.grad /= N``, ``p.grad.div_(N)``), counts as the fix; a division that only touches a logged
value (``running += loss.item() / N``) does not.  Silent when the trace is incomplete, when a
call the loss comes from cannot be seen into but is handed N (or the object holding N), inside
``accelerator.accumulate(...)``, under ``accelerator.backward``/DeepSpeed, and in Lightning or
Hugging Face Trainer classes, which scale for you.

Name-based evidence lives in ``analysis.accumulation`` (``MICRO_BATCH_NAME``, to recognise an
inner micro-batch loop) and ``analysis.gradients`` (an unresolvable optimizer or scaler named
like one); neither decides a finding alone.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set

from astroid import nodes

from ..analysis import accumulation, dataflow, derivation, gradients, infer
from ._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ..analysis.build import FileContext

#: Tensor methods and torch functions that divide the loss.
DIVIDE_METHODS = frozenset({"div", "div_", "divide", "true_divide"})
DIVIDE_FUNCTIONS = frozenset({"torch.div", "torch.divide", "torch.true_divide"})

#: ``with accelerator.accumulate(model):`` — Accelerate divides the loss itself.
ACCUMULATE_CONTEXTS = frozenset({"accumulate"})


@register
class UnscaledAccumulation(Rule):
    code, slug = "TP004", "unscaled-accumulation"
    requires = text_gate(r"backward")  # every finding is a backward call of this file
    message = "accumulating {n} micro-batches, loss not divided by it: each update is that many times too large"
    quoted = ("n",)
    rationale = (
        "Gradient accumulation emulates a large batch by calling backward() on several micro-batches before "
        "one optimizer.step(). PyTorch sums the gradients in .grad, so unless each micro-batch loss is "
        "divided by the number of micro-batches the step applies the sum instead of the mean: the effective "
        "learning rate grows with the accumulation count, and changing that count silently changes the "
        "optimisation. The rule recognises a step gated by `if (i + 1) % N == 0` (or a counter, or a "
        "`continue` gate) and an inner loop over micro-batches, then traces the loss given to backward() back "
        "through assignments and helpers of the file: a division anywhere on that path, or gradients divided "
        "before the step, is accepted; a division of a logged copy is not."
    )
    leaves_alone = (
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
        self._check(accumulation.gated_accumulation(node))
        self._check(accumulation.micro_batch_accumulation(node))

    def visit_while(self, node: nodes.While) -> None:
        self._check(accumulation.gated_accumulation(node))

    def visit_functiondef(self, node: nodes.FunctionDef) -> None:
        self._check(accumulation.gated_accumulation(node))  # a step function called per batch

    def _check(self, found: "Optional[accumulation.Accumulation]") -> None:
        if found is not None:
            for call in found.backwards:
                self._check_backward(call, found.divisor, found.text)

    # -- the loss ----------------------------------------------------------------------------
    def _check_backward(self, call: nodes.Call, divisor: Optional[nodes.NodeNG], text: str) -> None:
        if id(call) in self._reported:
            return
        if gradients.framework_managed(call) or _under_accumulate(call):
            return
        receiver = gradients.backward_receiver(call)
        if gradients.is_scale_call(receiver):
            if not receiver.args:
                return
            receiver = receiver.args[0]
        trace = derivation.derive(receiver)
        if any(_divides(node) for node in trace.nodes):
            return
        if not trace.complete:
            return
        if any(_handed(c, divisor) for c in trace.opaque_calls):
            return  # an unseen loss function that receives N may divide by it
        self._reported.add(id(call))
        self.report(call, n=text)


def _divides(node: nodes.NodeNG) -> bool:
    """A division on the loss's arithmetic spine."""
    if isinstance(node, nodes.BinOp):
        return node.op in ("/", "//")
    if isinstance(node, nodes.AugAssign):
        return node.op in ("/=", "//=")
    if isinstance(node, nodes.Call):
        if infer.method_name(node) in DIVIDE_METHODS:
            return True
        return infer.callee_qname(node) in DIVIDE_FUNCTIONS
    return False


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
        for expr in exprs:
            for sub in _names(expr):
                if dataflow.binding_text(sub) in roots:
                    return True
    return False


def _names(expr: nodes.NodeNG) -> Iterator[nodes.NodeNG]:
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        yield expr
    for child in expr.get_children():
        yield from _names(child)


def _under_accumulate(call: nodes.Call) -> bool:
    """Inside ``with accelerator.accumulate(model):``."""
    return any(
        isinstance(item, nodes.Call) and infer.call_name(item) in ACCUMULATE_CONTEXTS
        for _, item in gradients.with_items_around(call)
    )
