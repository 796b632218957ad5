"""TP010 sync-in-hot-loop: a host-device sync run once per element inside the training step."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Set, Tuple

from astroid import nodes

from ..analysis.semantic import branches, infer, loops
from ..analysis.training import device, evaluation, grad, loader_use, training_step
from ._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ..analysis.setup.build import FileContext

#: Tensor methods that download a value and so wait for the GPU queue (``device.SYNC_METHODS``).
SYNC_METHODS = device.SYNC_METHODS

_SCOPES = (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef, nodes.Module)

#: Call names worth a look before any inference: the methods, the builtins' short names, synchronize.
CANDIDATE_NAMES = frozenset(SYNC_METHODS | {"float", "int", "bool", "synchronize"})


@register
class SyncInHotLoop(Rule):
    code, slug = "TP010", "sync-in-hot-loop"
    requires = text_gate(r"cuda|nccl|cudnn|accelerator")  # no CUDA evidence without one of these words
    message = "{sync} per element of {loop}: a GPU stall each, every step; sync once per step"
    quoted = ("sync", "loop")
    rationale = (
        "CUDA kernels run asynchronously: the host queues work and moves on. Reading a value back (.item(), "
        ".cpu(), .numpy(), .tolist(), float(t)) or calling torch.cuda.synchronize() blocks the host until the "
        "queue is empty. Once per step, for a logged loss, is normal. Inside a loop or comprehension nested "
        "in the step (one .item() per parameter for gradient norms, one per sample for a metric) the queue is "
        "drained again and again, and the GPU idles between the small kernels. The training step is found "
        "from evidence: a loop that calls backward() or a resolved optimizer.step(), a function that does so "
        "outside its loops, and helpers of the file called from them. A helper with no loop of its own whose "
        "every call in the file is made per element (``for p in model.parameters(): record(p)``) syncs per "
        "element too; what its parameters hold is read from those calls. A function of another module of the "
        "project that the step calls (``from utils import get_grad_norm``) and that syncs per element of a "
        "loop of its own is reported at the call, once per function: the helper's module alone shows no step."
    )
    leaves_alone = (
        "Syncs under a periodic logging branch (if step % 100 == 0), on tensors that are provably on the "
        "host, and in files that never use CUDA are not reported."
        " A loop over a few items fixed in the source (``for mask in [train, val, test]``, ``for j in "
        "range(6)``), a loop over a DataLoader (each element is a batch: an evaluation the training loop "
        "calls syncs once per batch, as the step does) and an "
        "evaluation function run with autograd off (``@torch.no_grad() def test():`` beside ``train()``) are "
        "not reported. Nor is the test suite (no code reports in it: a test runs its step once)."
        " Nor is a sync under a branch no run takes: ``if self.debug_mode:`` where every assignment the "
        "project makes sets the flag False or None (a flag read from the command line, a parameter or a "
        "configuration file may be on, and is still reported)."
    )
    example_bad = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "model = nn.Linear(10, 2).cuda()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(100):\n"
        "    loss = model(torch.randn(8, 10, device='cuda')).sum()\n"
        "    loss.backward()\n"
        "    norms = [p.grad.norm().item() for p in model.parameters()]\n"
        "    optimizer.step()\n"
        "    optimizer.zero_grad()\n"
    )
    example_good = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "model = nn.Linear(10, 2).cuda()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(100):\n"
        "    loss = model(torch.randn(8, 10, device='cuda')).sum()\n"
        "    loss.backward()\n"
        "    norms = torch.stack([p.grad.norm() for p in model.parameters()]).tolist()\n"
        "    optimizer.step()\n"
        "    optimizer.zero_grad()\n"
    )

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        self._helpers: Set[int] = set()
        #: (element loop, statement line) already reported: two syncs of one statement are one fix.
        self._statements: Set[Tuple[int, int]] = set()

    def visit_call(self, node: nodes.Call) -> None:
        name = infer.call_name(node)
        if name not in CANDIDATE_NAMES and name not in device.local_aliases(node.root(), "synchronize"):
            self._check_helper(node)
            return  # cheap syntactic check first
        if not _inside_loop_or_comprehension(node):
            return
        if not device.uses_cuda(node.root()):
            return  # no device to wait for (computed once per file)
        sync = device.sync_text(node)
        if sync is None:
            return
        loop = training_step.per_element_loop(node)
        if loop is None or _few_fixed_items(loop) or _batch_loop(loop) or _evaluation(node):
            return
        if branches.reached_only_when_off(node):
            return  # ``if self.debug_mode:`` with the flag off wherever the project sets it
        statement = (id(loop), node.statement().lineno)
        if statement in self._statements:
            return  # ``uniform_(-eps[j].item(), eps[j].item())``: one statement, one fix, one finding
        self._statements.add(statement)
        self.report(node, sync=sync, loop=_loop_text(loop))

    def _check_helper(self, node: nodes.Call) -> None:
        """A function of another project module (``from utils import get_grad_norm``) called once per step
        here, that syncs per element of a loop of its own: reported at this call, once per function, since
        this file's step is what makes it run per step (the helper's module alone shows no step)."""
        if not isinstance(node.func, (nodes.Name, nodes.Attribute)) or not loops.imported_from_project(node.func):
            return  # cheap: only a name imported from the project's own modules can be such a helper
        if infer.call_name(node) in loops.defined_function_names(node.root()):
            return  # the file's own helpers are read from the sync (``per_element_loop``)
        helper = loops.local_helper(node)
        if helper is None or helper.root() is node.root() or id(helper) in self._helpers:
            return
        if not device.uses_cuda(node.root()) or not training_step.in_step(node):
            return
        if _evaluation(node) or branches.reached_only_when_off(node):
            return
        found = _element_sync(helper)
        if found is None:
            return
        self._helpers.add(id(helper))
        sync, loop = found
        self.report(node, sync="{}()'s {}".format(helper.name, sync), loop=_loop_text(loop))


def _element_sync(helper: nodes.FunctionDef) -> "Optional[Tuple[str, training_step.Element]]":
    """The first sync ``helper`` makes per element of a loop or comprehension of its own (not a loop
    over a few fixed items or over a DataLoader, not under a periodic branch), as the message names it."""
    for call in helper.nodes_of_class(nodes.Call):
        if infer.call_name(call) not in CANDIDATE_NAMES:
            continue
        sync = device.sync_text(call)
        if sync is None:
            continue
        loop = training_step.per_element_loop(call, depth=0, per_step=True)
        if loop is not None and not _few_fixed_items(loop) and not _batch_loop(loop):
            return sync, loop
    return None


def _inside_loop_or_comprehension(node: nodes.NodeNG) -> bool:
    """Structural pre-check: some loop or comprehension of the same function encloses ``node``, or
    ``node`` is in a function (which its callers may run per element)."""
    parent = node.parent
    while parent is not None and not isinstance(parent, _SCOPES):
        if isinstance(parent, (nodes.For, nodes.While) + training_step.COMPREHENSIONS):
            return True
        parent = parent.parent
    return isinstance(parent, nodes.FunctionDef)


def _evaluation(node: nodes.NodeNG) -> bool:
    """An evaluation function with autograd off (``@torch.no_grad() def test():`` called once per
    epoch beside ``train()``): not the training step, even where one epoch is one step."""
    func = loops.enclosing_function(node)
    return func is not None and evaluation.eval_named(func) and grad.grad_disabled(node)


#: A loop whose header fixes at most this many items (``for mask in (train, val, test)``, ``for stage in
#: range(6)``, a literal dict of loss terms) syncs a handful of times a step, not once per element of the
#: data or the model: the first read waits for the step's queue, as the once-per-step logging read does,
#: and each later one copies a few bytes from an idle device. Per-sample and per-parameter loops run
#: over the batch size or the model's parameter tensors, dozens to hundreds of times.
MAX_FIXED_ITEMS = 8


def _few_fixed_items(loop: training_step.Element) -> bool:
    return loops.few_fixed_items(loop, MAX_FIXED_ITEMS)


def _batch_loop(loop: training_step.Element) -> bool:
    """A loop over a DataLoader (``for i, batch in enumerate(test_loader)`` in an evaluation the training
    loop calls): each element is a batch, so a sync in its body runs once per batch, as the step's own
    logging read does, not once per sample or parameter."""
    if isinstance(loop, nodes.While):
        return False
    iterable = loop.iter if isinstance(loop, nodes.For) else loop.generators[0].iter
    return loader_use.is_loader(loops.unwrap_iteration(iterable))


def _loop_text(loop: training_step.Element) -> str:
    """How the message names the loop; a long iterable is shortened with the message (``quoted``)."""
    if isinstance(loop, nodes.For):
        return "the loop over {}".format(loop.iter.as_string())
    if isinstance(loop, nodes.While):
        return "the while loop"
    return "a comprehension over {}".format(loop.generators[0].iter.as_string())
