"""TP005 ddp-sampler: a distributed run that trains from a DataLoader without a DistributedSampler,
or with a DistributedSampler whose set_epoch() is never called in the epoch loop.

A file is a distributed run when it calls (any alias, module aliases included)
``DistributedDataParallel``, ``FullyShardedDataParallel``/``fully_shard`` or
``torch.distributed.init_process_group``.  Then:

* a ``DataLoader`` built with ``shuffle=True``, with no sampler, or with a resolved
  non-distributed torch sampler (``RandomSampler``...) is reported when a training loop (one
  whose iteration runs a backward, ``analysis.training.loader_use``) iterates it; ``shuffle=True`` alone
  is enough when no loop using it is found at all (a loader returned in a tuple), but not when
  every loop found only evaluates;
* a ``DistributedSampler`` (``shuffle`` not ``False``) feeding a loader that a training loop
  iterates inside an epoch loop (the loader followed through helpers, trainer classes and the
  worker a ``mp.spawn`` starts, ``analysis.training.loader_use``) is reported when no ``set_epoch``
  call in the file can be it:
  ``sampler.set_epoch(e)``, ``loader.sampler.set_epoch(e)``, ``loader.batch_sampler.sampler...``,
  ``loader.set_epoch(e)`` and a call on an unresolvable receiver (a parameter) all count, unless
  the call sits once before the epoch loop, outside any loop, in that loop's own function.
  Where the file shows no training step at all (the step runs in a project's model class:
  ``model.feed_data(batch); model.optimize_parameters(step)``), a loop that hands its batch to
  code nothing resolves trains out of sight (``loader_use.trains_out_of_sight``), unless it runs
  with autograd off, on rank 0 only, over a held-out split or in an evaluation function.

Silent: a loader drawn with ``next()`` once per step of another loader's loop (an auxiliary stream:
each rank draws its own random extra batch), a sampler that cannot be resolved (a custom or
conditional one), ``batch_sampler=``, an ``IterableDataset`` (it shards itself; an unresolvable
dataset without ``shuffle=True`` may be one), loaders only read on rank 0, loaders handed to
Accelerate's ``prepare()`` or Fabric's
``setup_dataloaders()``, and Lightning/Hugging Face classes and ``*_dataloader`` hooks, whose
frameworks insert the sampler.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Set

from astroid import nodes

from ..analysis.semantic import branches, dataflow, infer, loops
from ..analysis.training import entrypoint, gradients, loader_use
from ..analysis.training.torch_names import DATALOADERS, MODEL_WRAPPERS
from ._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ..analysis.setup.build import FileContext

#: Text one of which a distributed file must contain (an alias is imported by its real name).
DISTRIBUTED_MARKERS = ("DistributedDataParallel", "init_process_group", "FullyShardedDataParallel", "fully_shard")

#: Wrappers that make every rank train the same model on its own shard of the data.
DATA_PARALLEL_WRAPPERS = MODEL_WRAPPERS - frozenset({"torch.nn.parallel.DataParallel"})

#: Calls that start a distributed run.
DISTRIBUTED_FUNCTIONS = frozenset({"torch.distributed.init_process_group", "torch.distributed.fsdp.fully_shard"})

#: Lightning hooks whose DataLoader the Trainer re-samples per rank.
LIGHTNING_LOADER_HOOKS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"})


@register
class DdpSampler(Rule):
    code, slug = "TP005", "ddp-sampler"
    requires = text_gate("|".join(DISTRIBUTED_MARKERS + ("DistributedSampler",)))  # no distributed run named
    message = "{name} {problem}: {cost}; {fix}"
    quoted = ("name",)
    rationale = (
        "Under DistributedDataParallel every process runs the same script. A DataLoader without a "
        "DistributedSampler (shuffle=True, no sampler, or a RandomSampler) gives every rank the whole "
        "dataset, so the N GPUs compute gradients on the same batches: each epoch costs N times the compute "
        "for the data of one GPU, and the effective batch is not what the script says. A DistributedSampler "
        "splits the indices per rank, but it shuffles with a seed plus the epoch number: without "
        "sampler.set_epoch(epoch) at the start of every epoch each epoch replays the same order. A generator "
        "of the project that cycles the loader (``while True: for batch in loader: yield batch``) starts a "
        "new epoch on each pass; it needs set_epoch before each pass too."
    )
    leaves_alone = (
        "A loader built in one arm of an if whose other arm builds a DistributedSampler (``if "
        "args.distributed: ... else: DataLoader(ds, shuffle=True)``) is the run's single-process alternative "
        "and is left alone. "
        "The rule only fires in files that wrap a model in DDP/FSDP or initialise a process group, and only "
        "for loaders that a training loop iterates (one that runs backward, or, in a file that shows no "
        "step at all, one that hands its batches to code the file cannot read); a loader drawn with next() "
        "once per step of another loader's loop is an auxiliary stream (each rank draws its own random extra "
        "batch) and is left alone; Accelerate's prepare(), "
        "Lightning, IterableDatasets and rank-0-only loaders are left alone. Where the process group is set "
        "up elsewhere (an imported init_dist()), a DistributedSampler the file builds is still checked for "
        "set_epoch (unless num_replicas=1), but loaders without one are not judged. A wrapper or process "
        "group under a branch no run takes (``world_size = 1`` then ``if world_size > 1: model = DDP(model)``) "
        "starts no distributed run."
    )
    example_bad = (
        "import torch\n"
        "import torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "\n"
        "dist.init_process_group(\"nccl\")\n"
        "model = DDP(torch.nn.Linear(8, 2).cuda())\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "dataset = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))\n"
        "loader = DataLoader(dataset, batch_size=8, shuffle=True)\n"
        "for epoch in range(10):\n"
        "    for x, y in loader:\n"
        "        optimizer.zero_grad()\n"
        "        torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()\n"
        "        optimizer.step()\n"
    )
    example_good = (
        "import torch\n"
        "import torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from torch.utils.data import DataLoader, DistributedSampler, TensorDataset\n"
        "\n"
        "dist.init_process_group(\"nccl\")\n"
        "model = DDP(torch.nn.Linear(8, 2).cuda())\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "dataset = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))\n"
        "sampler = DistributedSampler(dataset)\n"
        "loader = DataLoader(dataset, batch_size=8, sampler=sampler)\n"
        "for epoch in range(10):\n"
        "    sampler.set_epoch(epoch)\n"
        "    for x, y in loader:\n"
        "        optimizer.zero_grad()\n"
        "        torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()\n"
        "        optimizer.step()\n"
    )

    #: The two kinds of finding, filled into ``message``.
    NO_SAMPLER = dict(
        problem="{how}lacks a DistributedSampler",
        cost="ranks repeat each other's batches",
        fix="add one",
    )
    NO_SET_EPOCH = dict(
        name="DistributedSampler",
        problem="never gets set_epoch",
        cost="every epoch repeats one shuffle",
        fix="call {target}.set_epoch(epoch)",
    )

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        self._calls: List[nodes.Call] = []
        self._loaders: List[nodes.Call] = []
        self._samplers: List[nodes.Call] = []

    def visit_call(self, node: nodes.Call) -> None:
        if isinstance(node.func, (nodes.Name, nodes.Attribute)):
            self._calls.append(node)

    def leave_module(self, node: nodes.Module) -> None:
        names = _distributed_names(node)
        started = any(
            infer.call_name(c) in names and _starts_distributed(c) and not branches.reached_only_when_off(c)
            for c in self._calls
        )  # a DDP wrapper under ``if world_size > 1:`` with ``world_size = 1`` starts nothing
        for call in self._calls:
            target = infer.safe_infer(call.func)
            if isinstance(target, nodes.ClassDef):
                if infer.class_is_subclass_of(target, DATALOADERS):
                    self._loaders.append(call)
                elif infer.class_is_subclass_of(target, loader_use.DISTRIBUTED_SAMPLERS):
                    self._samplers.append(call)
        if not started:
            # The run is set up elsewhere (an imported ``init_dist()``): a DistributedSampler the
            # file builds is the evidence of a distributed run, enough to ask for its set_epoch.
            # Whether the other loaders should shard is unknown without the launch: left alone.
            for sampler in self._samplers:
                if not _single_replica(sampler):
                    self._check_sampler(sampler)
            return
        for loader in self._loaders:
            self._check_loader(loader)
        for sampler in self._samplers:
            self._check_sampler(sampler)

    # -- DataLoader without a DistributedSampler ----------------------------------------------
    def _check_loader(self, call: nodes.Call) -> None:
        if _framework(call) or loader_use.rank_zero_only(call):
            return
        if self._other_arm_shards(call):
            return  # ``if opts.distributed: ... DistributedSampler ... else: DataLoader(shuffle=True)``
        batch_sampler = infer.argument(call, "batch_sampler", 4)
        if batch_sampler is not None and not infer.is_none(batch_sampler):
            return
        shuffle = infer.argument(call, "shuffle", 2)
        shuffled = shuffle is not None and infer.const_values(shuffle) == [True]
        sampler = infer.argument(call, "sampler", 3)
        if sampler is None and any(kw.arg is None for kw in call.keywords or ()):
            return  # ``DataLoader(ds, **kwargs)``: the sampler may be among them
        if sampler is not None and not infer.is_none(sampler):
            plain = loader_use.plain_sampler(sampler)
            if plain is None:
                return
            how = "sampler={}()".format(plain)
        elif shuffled:
            how = "shuffle=True"
        else:
            how = "no sampler"
        dataset = infer.argument(call, "dataset", 0)
        if dataset is None or loader_use.may_be_iterable_dataset(dataset, trust_map_style=shuffled):
            return
        uses = loader_use.uses_of(call)
        if uses.prepared:
            return
        training = [loop for loop in uses.training_loops if not loader_use.rank_zero_only(loop)]
        if not training and not (shuffled and not uses.training_loops and not uses.other_loops):
            return
        if training and all(_auxiliary(loop, uses) for loop in training):
            return  # one extra batch per step of another loader's loop: each rank draws its own
        fields = dict(self.NO_SAMPLER, name=_display(call))
        fields["problem"] = fields["problem"].format(how="" if how == "no sampler" else "({}) ".format(how))
        self.report(call, **fields)

    def _other_arm_shards(self, call: nodes.Call) -> bool:
        """``call`` is in one arm of an ``if`` whose other arm builds a DistributedSampler: the loader is
        the run's non-distributed alternative, built only when no process group shards the data."""
        samplers = {id(sampler) for sampler in self._samplers}
        return any(
            id(c) in samplers for other in branches.other_arms(call) for s in other for c in s.nodes_of_class(nodes.Call)
        )

    # -- DistributedSampler without set_epoch ---------------------------------------------------
    def _check_sampler(self, call: nodes.Call) -> None:
        if _framework(call):
            return
        shuffle = infer.argument(call, "shuffle", 3)
        if shuffle is not None and infer.const_values(shuffle) == [False]:
            return  # a fixed order is the intent: set_epoch changes nothing
        binding = _bound_to(call)
        sampler_text = dataflow.binding_text(binding) if binding is not None else None
        epoch_loops: List[loops.Loop] = []
        loaders = self._loaders_of(call, sampler_text)
        for loader in loaders:
            uses = loader_use.uses_of(loader, through_prepare=True)
            if uses.prepared:
                return
            trained = list(zip(uses.training_loops, uses.routes))
            if not trained:  # the step may run in code the file does not show (a project's model class)
                trained = [(loop, via) for loop, via in zip(uses.other_loops, uses.other_routes)
                           if loader_use.trains_out_of_sight(loop)]
            for loop, via in trained:
                epoch_loops.extend(loader_use.epoch_loops(loop, via))
        if not epoch_loops:
            return  # not trained from, or trained for one pass only
        for setter in self.ctx.module.nodes_of_class(nodes.Call):
            if infer.method_name(setter) != "set_epoch":
                continue
            if loader_use.may_set_epoch(setter, call, loaders):
                if not loader_use.set_before_epoch_loop(setter, epoch_loops):
                    return
        if sampler_text is not None and any(binding.scope() is loop.scope() for loop in epoch_loops):  # type: ignore
            target = sampler_text
        else:  # an inline sampler, or one bound in a helper: named through the loader it feeds
            bound = [_bound_to(loader) for loader in loaders]
            target = next((dataflow.binding_text(b) for b in bound if b is not None), "loader") + ".sampler"
        fields = dict(self.NO_SET_EPOCH)
        fields["fix"] = fields["fix"].format(target=target)
        self.report(call, **fields)

    def _loaders_of(self, sampler: nodes.Call, sampler_text: Optional[str]) -> List[nodes.Call]:
        """DataLoader calls of the file that receive ``sampler`` (inline, by name, or wrapped in
        a BatchSampler)."""
        found = []
        for loader in self._loaders:
            for arg in (infer.argument(loader, "sampler", 3), infer.argument(loader, "batch_sampler", 4)):
                if arg is None:
                    continue
                if arg is sampler or loops.inside(sampler, arg):
                    found.append(loader)
                elif sampler_text is not None and any(
                    dataflow.binding_text(n) == sampler_text and loader_use.bound_among(n, [sampler])
                    for n in arg.nodes_of_class((nodes.Name, nodes.Attribute))
                ):
                    found.append(loader)
        return found


def _distributed_names(module: nodes.Module) -> Set[str]:
    """Names under which the file may call a DDP/FSDP wrapper or init_process_group: the real
    names plus their import aliases and plain rebindings (``DDP = nn.parallel.DistributedDataParallel``)."""
    real = {marker for marker in DISTRIBUTED_MARKERS}
    names = set(real)
    for imp in module.nodes_of_class((nodes.ImportFrom, nodes.Import)):
        for name, alias in imp.names:
            if alias and name.split(".")[-1] in real:
                names.add(alias)
    for assign in module.nodes_of_class(nodes.Assign):
        if dataflow.terminal_name(assign.value) in real:
            names.update(t.name for t in assign.targets if isinstance(t, nodes.AssignName))
    return names


def _starts_distributed(call: nodes.Call) -> bool:
    """A resolved DDP/FSDP wrapper or process-group initialisation."""
    target = infer.safe_infer(call.func)
    if isinstance(target, nodes.ClassDef):
        return target.qname() in DATA_PARALLEL_WRAPPERS
    return isinstance(target, nodes.FunctionDef) and target.qname() in DISTRIBUTED_FUNCTIONS


def _single_replica(sampler: nodes.Call) -> bool:
    """``DistributedSampler(ds, num_replicas=1, rank=0)``: one process, a sampler used for its split."""
    replicas = infer.argument(sampler, "num_replicas", 1)
    return replicas is not None and infer.const_values(replicas) == [1]


def _framework(call: nodes.Call) -> bool:
    func = call.scope()
    if isinstance(func, nodes.FunctionDef) and func.name in LIGHTNING_LOADER_HOOKS:
        return True
    return gradients.framework_managed(call)


def _auxiliary(loop: "loops.Loop", uses: loader_use.Uses) -> bool:
    """The loader is drawn with ``next()`` in ``loop`` (not its header), and ``loop`` iterates other
    data (not a counting ``range``/``while``): an auxiliary stream beside the loader that drives the step."""
    return loop not in uses.headers and not entrypoint.counting_loop(loop)


def _bound_to(call: nodes.Call) -> Optional[nodes.NodeNG]:
    """The name or attribute ``call`` is assigned to, also as one element of a literal tuple unpacked
    into as many targets (``train_sampler, shuffle = DistributedSampler(ds), False``)."""
    return dataflow.assignment_target(call, unpack=True)


def _display(call: nodes.Call) -> str:
    binding = _bound_to(call)
    return "DataLoader " + dataflow.binding_text(binding) if binding is not None else "This DataLoader"
