"""TP012 starved-dataloader: a DataLoader with no worker processes or no pinned memory in a CUDA training file."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Tuple

from astroid import nodes
from astroid.exceptions import AstroidError

from ..analysis.semantic import dataflow, infer, loops, static_values
from ..analysis.training import device, entrypoint, loader_use, training_step
from ..analysis.training.torch_names import DATALOADERS
from ._base import MAX_MESSAGE, Rule, fit_message, register, text_gate

if TYPE_CHECKING:
    from ..analysis.setup.build import FileContext

#: DataLoader parameters read here, with their position in ``DataLoader(dataset, batch_size, ...)``.
POSITIONS = {"dataset": 0, "num_workers": 5, "collate_fn": 6, "pin_memory": 7}

#: Dataset classes of torch that only wrap the datasets or tensors they are given.
WRAPPING_DATASETS = frozenset(
    {"torch.utils.data.TensorDataset", "torch.utils.data.Subset", "torch.utils.data.ConcatDataset"}
)

#: Datasets that index tensors already in memory: no per-item work for worker processes to take over.
IN_MEMORY_DATASETS = frozenset({"torch.utils.data.TensorDataset"})

#: Functions that cut a dataset into Subsets of it.
SPLITTERS = frozenset({"torch.utils.data.random_split"})

#: Where torchvision's datasets live (resolved through the file's imports: torchvision is not read).
TORCHVISION_DATASETS = "torchvision.datasets."

#: torchvision datasets that load the whole split into an array in memory; their item is that
#: array converted to an image and passed through the transform.
TORCHVISION_IN_MEMORY = frozenset(
    {"MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST", "CIFAR10", "CIFAR100", "SVHN", "USPS"}
)

#: torchvision transforms that only convert an image to a normalised tensor (no resize, crop or augmentation).
CONVERSION_TRANSFORMS = frozenset(
    {"ToTensor", "PILToTensor", "Normalize", "ConvertImageDtype", "ToImage", "ToDtype", "ToPureTensor"}
)

#: Modules whose functions and methods a ``__getitem__`` may call and still only index memory
#: (methods of a list, dict or str; the ``random`` module or a ``random.Random`` instance).
CHEAP_MODULES = frozenset({"builtins", "random"})

#: Keywords through which a dataset class that is not read is handed a per-item transform
#: (``TUDataset(root, transform=T.Compose([...]))``).
TRANSFORM_KEYWORDS = frozenset({"transform", "transforms"})

#: How many bindings, wrappers and helpers are followed to the dataset's class.
MAX_DATASET_DEPTH = 6

#: Per-item work of an array held in memory that is only converted to a tensor (``_torchvision_work``):
#: real but small (tens of microseconds an item), so it matters over a long run, not a short one.
LIGHT = "light"

#: A run of at most this many epochs over a ``LIGHT`` dataset is a demonstration (a tutorial's few
#: epochs): what workers would take off the step is the conversion of one small array per item, seconds
#: an epoch, and the DataLoader starts its workers again every epoch (re-importing the script where
#: they are spawned); the whole run saves too little to be worth restructuring it.  A dataset with
#: real per-item work (a resize, a crop, an augmentation, a file read) is reported whatever the length.
SHORT_RUN_EPOCHS = 10

#: An evaluation loader over a ``LIGHT`` dataset read in at most this many epochs is left alone too.
#: A torchvision test split holds 10,000 items; converting one took 24-107 us (FashionMNIST, ToTensor and
#: Normalize) and 72 us (CIFAR10) on one CPU core (measured with torchvision 0.29 for fresh21's readings),
#: so a pass costs about 0.3-1 s and this many passes about a minute of a run, part of which the workers,
#: started again for every evaluation, would cost back.
LIGHT_EVALUATION_EPOCHS = 100

#: A loop that takes at most this many batches from a loader gains nothing from worker processes:
#: the fix's pool of 4 workers, with the default prefetch_factor of 2, asks for 8 batches before the
#: first one is used, so such a loop is over within a couple of rounds of that prefetch, while every
#: run of the loop starts the pool again (a process per worker that receives a copy of the dataset,
#: and re-imports the script where processes are spawned): fewer batches than the start amortises.
FEW_BATCHES = 16

#: Calls a ``__getitem__`` may make and still only index memory (building a tensor or a number from
#: what ``__init__`` loaded, or drawing a random one); any other call is taken as per-item work
#: that workers would take over.
CHEAP_ITEM_CALLS = frozenset(
    {"len", "int", "float", "bool", "str", "list", "tuple", "dict", "range", "min", "max", "abs",
     "tensor", "as_tensor", "from_numpy", "LongTensor", "FloatTensor", "array", "asarray", "long", "float32",
     "ones", "zeros", "full", "empty", "arange", "ones_like", "zeros_like", "full_like",
     "rand", "randn", "randint", "randperm", "rand_like", "randn_like"}
)

#: Base class of map-style and iterable datasets (a file-defined subclass may move data to the GPU).
DATASET_BASES = frozenset({"torch.utils.data.Dataset"})

#: Methods on a dict that change its keys after it is built (the ``**kwargs`` then cannot be read).
DICT_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__"})

#: Sentinel for "this setting cannot be known statically".
_OPAQUE = object()


@register
class StarvedDataLoader(Rule):
    code, slug = "TP012", "starved-dataloader"
    requires = text_gate(r"(?s)^(?=.*DataLoader)(?=.*(cuda|nccl|cudnn|accelerator))")  # a loader and CUDA evidence
    message = "DataLoader has {problems}: {cost}; set {fix}"
    rationale = (
        "With num_workers=0 (the default) every batch is read, decoded and collated in the training process "
        "between steps, while the GPU sits idle; with pin_memory=False (the default) a copy made with "
        "non_blocking=True goes through pageable memory and cannot overlap with compute. Neither changes "
        "results, so this is a tuning observation for files that train on CUDA (device strings, .cuda(), "
        "torch.cuda, nccl). The rule reports a loader with no worker processes when the dataset's per-item "
        "work is seen: a dataset class of the project (this file or a module it imports) whose __getitem__ "
        "reads or decodes files, runs a transform or a tokenizer, or a torchvision dataset (one that reads "
        "files, or one such as MNIST or CIFAR that holds its split as an array and converts each item to a "
        "tensor, with or without augmentation), or a dataset class that is not read but is handed a "
        "transform= to run per item (the dataset is followed through assignments, in-file call sites, "
        "random_split, Subset/ConcatDataset, slices and helpers that return it). It reports it when its "
        "batches feed a training loop, or an evaluation of the trained model that runs every epoch; the same "
        "message names a missing pin_memory. A loader that only lacks pinned memory is reported when the "
        "loop training from it copies its batches with non_blocking=True. Worker processes are started with "
        "spawn on Windows and macOS, which re-imports the script: the fix then needs an `if __name__ == "
        "\"__main__\":` guard, and the message says so when the file has none. A loader whose iterator the "
        "step loop makes again each time it runs out (``batches = iter(loader)`` under ``except StopIteration``) "
        "would start its workers at every pass: the fix adds persistent_workers=True."
    )
    leaves_alone = (
        "The loader is resolved as torch.utils.data.DataLoader through any alias. Not reported: loaders over "
        "data already in memory (a TensorDataset, a range, a literal list or a tensor; a dataset class of "
        "the project whose __getitem__ only indexes what __init__ loaded, pre-built graphs or pre-tokenized "
        "samples included, read through a mapping's items(), keys() or values() as well, "
        "with helpers of the project that do the same, and with a transform its "
        "constructor call hands it that only wraps the array in a tensor, such as a project class whose "
        "__call__ returns torch.from_numpy(x), followed through a helper of the project that builds the "
        "datasets and returns them in a tuple, its parameters bound to the call's arguments); MNIST, CIFAR, "
        "SVHN and the other "
        "torchvision datasets that hold their split as an array, when the transform only converts it "
        "(ToTensor, Normalize) and every loop reading the loader runs at most 10 epochs, a count the "
        "command line's or a configuration's default gives included (a tutorial's "
        "demonstration run: workers would take only one small array conversion per item off the step, and are "
        "started again every epoch, so the whole run saves seconds; an augmentation, resize or crop is per-item "
        "work and is reported whatever the length), or, for a loader that only evaluates, at most 100 "
        "epochs (a 10,000-item test split converted per item costs about a second a pass); loaders "
        "whose dataset's per-item work cannot be seen (a dataset of another package such as Hugging Face "
        "datasets, a factory of another module, a parameter no call site shows), for which only the pinning "
        "check applies; a loader that has workers but no pinned memory when no loop training from it copies "
        "with non_blocking=True (the copy blocks either way); values passed through a **kwargs dict that "
        "cannot be read; datasets whose tensors are already on the GPU (pinning them raises, and CUDA cannot "
        "be used in forked workers); collate functions that move batches to the GPU; files that never use "
        "CUDA; a loader read once before or after training (a final test pass, a next(iter(...)) to look at "
        "a batch, also once per epoch: one batch, which workers started for it would only delay), where "
        "there is no training step for loading to overlap with; a loader every loop of which stops after "
        "at most 16 batches (islice(loader, 4), zip(range(4), loader), a break once a counter reaches a "
        "number fixed in the source, such as a parameter's default: two sample translations printed each "
        "epoch), since a pool of workers started for a few batches, every time the loop runs, costs more "
        "than it saves (a bound read from the command line or a configuration may be large, and is reported); "
        "and a loader whose batches "
        "reach no training loop and no evaluation of the trained model in the file (a test that only "
        "inspects the loader, prompts fed to an image pipeline, a helper module returning it to another "
        "file), unless it is never iterated here and is built beside a loader that feeds training (the "
        "evaluation loader of a run); and a loader whose name is never read: bound again before any read, "
        "a function's local nothing reads, or a module's name no statement reads and no other file of the "
        "project names (a val_loader built beside the training loader and forgotten); and a loader every "
        "loop training from which moves its batches only to the CPU (``images.to(device)`` in a "
        "``train(..., device='cpu')`` its calls pass the CPU to), whatever else in the file uses CUDA."
    )
    example_bad = """
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Images(Dataset):
            def __init__(self, paths):
                self.paths = paths

            def __len__(self):
                return len(self.paths)

            def __getitem__(self, i):
                return torch.load(self.paths[i])  # read and decoded per item


        model = torch.nn.Linear(10, 1).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(Images(["a.pt", "b.pt"]), batch_size=8)
        for x in loader:
            model(x.cuda()).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
    """
    example_good = """
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Images(Dataset):
            def __init__(self, paths):
                self.paths = paths

            def __len__(self):
                return len(self.paths)

            def __getitem__(self, i):
                return torch.load(self.paths[i])  # read and decoded per item


        def main():
            model = torch.nn.Linear(10, 1).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loader = DataLoader(Images(["a.pt", "b.pt"]), batch_size=8, num_workers=4, pin_memory=True)
            for x in loader:
                model(x.cuda(non_blocking=True)).sum().backward()
                optimizer.step()
                optimizer.zero_grad()


        if __name__ == "__main__":
            main()
    """

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        names = device.local_aliases(ctx.module, "DataLoader")
        self._consumers = loader_use.LoaderConsumers(ctx.module, DATALOADERS, names)

    def visit_call(self, node: nodes.Call) -> None:
        if not (node.args or node.keywords) or not isinstance(node.func, (nodes.Name, nodes.Attribute)):
            return  # cheap syntactic checks first
        if infer.call_name(node) not in device.local_aliases(node.root(), "DataLoader"):
            return
        if infer.qname(node.func) not in DATALOADERS:
            return  # subclasses may change the defaults: only the torch class itself
        settings = _settings(node)
        if settings is None:
            return
        work = _per_item_work(settings.get("dataset"), MAX_DATASET_DEPTH)
        if work is LIGHT and _short_run(self._consumers.flows(node)):
            return  # an in-memory array converted per item, for a few epochs: seconds, not a starved run
        if work is LIGHT and self._consumers.use(node) == self._consumers.EVALUATE:
            if _short_run(self._consumers.flows(node), LIGHT_EVALUATION_EPOCHS):
                return  # a test split converted per item, evaluated each epoch: about a minute per run
        if work is False:
            return  # indexing what is already in memory: worker processes and pinning add nothing
        module = node.root()
        problems = _problems(settings)
        if work is None:
            # Per-item work that cannot be seen (a dataset of another package, a factory's result):
            # no claim that the GPU waits on loading; pinning is still judged on the copies.
            problems = [p for p in problems if "num_workers" not in p]
        if not problems:
            return
        if not device.uses_cuda(module):
            return
        if not training_step.file_trains(module) and self._consumers.use(node) != self._consumers.TRAIN:
            return  # no step, optimizer or trainer in the file, and no training loop reached from the loader
        if _batches_already_on_device(settings):
            return
        if _trains_on_host(self._consumers.flows(node)):
            return  # every loop training from it moves its batches to the CPU: no GPU waits on it
        pin_only = not any("num_workers" in p for p in problems)
        if pin_only and not _copies_non_blocking(self._consumers.flows(node)):
            return  # pinning alone pays only for asynchronous copies: a blocking copy waits anyway
        if _reads_few_batches(self._consumers.flows(node)):
            return  # every loop over it stops after a few batches: a pool would cost more than it saves
        if not self._consumers.feeds_run(node):
            return  # batches reach no training or evaluation of the trained model here
        self.report(node, **_wording(problems, module, self._consumers.flows(node).restarted_in_step))


def _settings(call: nodes.Call) -> Optional[Dict[str, object]]:
    """The arguments this rule reads, by parameter name; ``_OPAQUE`` for a parameter a ``**kwargs``
    (that cannot be read) or ``*args`` may carry; None when the call cannot be read at all."""
    found: Dict[str, object] = {}
    for name, index in POSITIONS.items():
        for i, arg in enumerate(call.args):
            if isinstance(arg, nodes.Starred):
                if i <= index:
                    found[name] = _OPAQUE
                break
            if i == index:
                found[name] = arg
    for kw in call.keywords or ():
        if kw.arg is not None:
            if kw.arg in POSITIONS:
                found[kw.arg] = kw.value
            continue
        unpacked = _read_kwargs(kw.value)
        for name in POSITIONS:
            if unpacked is None:
                found.setdefault(name, _OPAQUE)
            elif name in unpacked:
                found.setdefault(name, unpacked[name])
    return found


def _read_kwargs(expr: nodes.NodeNG) -> Optional[Dict[str, nodes.NodeNG]]:
    """Keys of a ``**kwargs`` dict built in the file and never changed after; None when unknown."""
    values: Optional[List[nodes.NodeNG]] = [expr]
    if isinstance(expr, nodes.Name):
        values = dataflow.assigned_values(expr)
        if not values or len(values) != 1 or _dict_mutated(expr):
            return None
    assert values is not None
    built = values[0]
    result: Dict[str, nodes.NodeNG] = {}
    if isinstance(built, nodes.Dict):
        for key, value in built.items:
            if not isinstance(key, nodes.Const) or not isinstance(key.value, str):
                return None  # ``**other`` inside the literal, or computed keys
            result[key.value] = value
        return result
    if isinstance(built, nodes.Call) and isinstance(built.func, nodes.Name):
        if built.args or infer.qname(built.func) != "builtins.dict":
            return None
        for kw in built.keywords or ():
            if kw.arg is None:
                return None
            result[kw.arg] = kw.value
        return result
    return None


def _dict_mutated(name: nodes.Name) -> bool:
    """The dict bound to ``name`` gains or loses keys somewhere in its scope (``kwargs.update(...)``,
    ``kwargs["num_workers"] = 4``, ``kwargs |= cuda_kwargs``)."""
    scope = name.scope()
    for node in scope.nodes_of_class((nodes.Call, nodes.Subscript, nodes.AugAssign)):
        if isinstance(node, nodes.Call):
            func = node.func
            if isinstance(func, nodes.Attribute) and func.attrname in DICT_MUTATORS:
                if isinstance(func.expr, nodes.Name) and func.expr.name == name.name:
                    return True
        elif isinstance(node, nodes.Subscript):
            if isinstance(node.value, nodes.Name) and node.value.name == name.name and node.ctx is not None:
                if node.ctx.name in ("Store", "Del"):
                    return True
        elif isinstance(node.target, nodes.AssignName) and node.target.name == name.name:
            return True
    return False


#: The arguments of the helper calls a dataset was followed through (``train, val = get_data(root,
#: transform=t)`` into ``get_data``'s body): a parameter's binding, what the call passes for it.
Bound = Mapping[nodes.NodeNG, nodes.NodeNG]

_NOTHING_BOUND: Bound = {}


def _per_item_work(dataset: object, depth: int, bound: Bound = _NOTHING_BOUND) -> object:
    """Whether reading one item of ``dataset`` does work that worker processes would take over
    (open or decode a file, run a transform or a tokenizer), read from what the expression is
    bound to: True when that work is seen, ``LIGHT`` for an in-memory array converted per item,
    False when the data is seen to be in memory already (a TensorDataset, a tensor, a list, a
    class whose item only indexes memory), None when the
    item's work cannot be seen (a dataset of another package, a factory's result, a parameter with
    no call site)."""
    if not isinstance(dataset, nodes.NodeNG) or depth <= 0:
        return None
    dataset = _through(dataset, bound)
    if isinstance(dataset, (nodes.List, nodes.Tuple, nodes.ListComp)) or infer.call_name(dataset) == "range":
        return False  # batching indices or literals: DataLoader(range(num_edges), ...)
    if infer.is_instance_of(dataset, IN_MEMORY_DATASETS) or device.is_tensor(dataset):
        return False  # a TensorDataset, or a tensor indexed row by row
    if isinstance(dataset, (nodes.Name, nodes.Attribute)):
        found_values = _dataset_values(dataset, bound)
        if found_values:
            values, inner = found_values
            return _combine([_per_item_work(v, depth - 1, inner) for v in values])
    if isinstance(dataset, nodes.Subscript):
        return _per_item_work(dataset.value, depth - 1, bound)  # ``dataset[train_idx]``: a part of the same data
    if isinstance(dataset, nodes.Call):
        found = _call_work(dataset, depth, bound)
        if found is not None:
            return found
    klass = infer.instance_class(dataset)
    return None if klass is None else _class_work(klass, depth)


def _dataset_values(expr: nodes.NodeNG, bound: Bound) -> Optional[Tuple[List[nodes.NodeNG], Bound]]:
    """What a name or ``self.attr`` holding a dataset is bound to (``infer.bound_values``), the
    dataset ``random_split`` cut it from (``train, val = random_split(ds, ...)``), or the element a
    project helper returns in that position (``train, val = get_data(root, transform=t)`` reads
    ``return train_set, val_set`` with ``get_data``'s parameters bound to the call's arguments)."""
    values = infer.bound_values(expr)
    if values or not isinstance(expr, nodes.Name):
        return (values, bound) if values else None
    unpacked = dataflow.unpacked_from_call(expr)
    if unpacked is not None:
        call, index, count = unpacked
        if infer.callee_qname(call) in SPLITTERS and call.args:
            return [call.args[0]], bound
        returned = _returned_elements(call, index, count)
        if returned:
            func, elements = returned
            return elements, _call_bindings(call, func, bound)
    return None


def _returned_elements(
    call: nodes.Call, index: int, count: int
) -> Optional[Tuple[nodes.FunctionDef, List[nodes.NodeNG]]]:
    """The function of the project ``call`` runs, and the ``index``-th element of every tuple of
    ``count`` elements it returns (None when a return is anything else)."""
    func = infer.function_def(call.func) if isinstance(call.func, (nodes.Name, nodes.Attribute)) else None
    if func is None or _in_torch(func):
        return None
    returned = dataflow.returned_values(func)
    if not returned or not all(isinstance(r, nodes.Tuple) and len(r.elts) == count for r in returned):
        return None
    return func, [r.elts[index] for r in returned]  # type: ignore[attr-defined]


def _call_bindings(call: nodes.Call, func: nodes.FunctionDef, bound: Bound) -> Bound:
    """``bound`` plus ``func``'s parameters bound to what ``call`` passes (or their defaults)."""
    passed = static_values.bind_arguments(call, func, lambda node, env: node, {})
    if passed is None:
        return bound
    parameters = list(func.args.posonlyargs or []) + list(func.args.args or []) + list(func.args.kwonlyargs or [])
    inner = dict(bound)
    for parameter in parameters:
        if parameter.name in passed and isinstance(passed[parameter.name], nodes.NodeNG):
            inner[parameter] = passed[parameter.name]
    return inner


def _through(expr: nodes.NodeNG, bound: Bound) -> nodes.NodeNG:
    """``expr``, or, for a parameter of a helper call the dataset was followed through, what that call
    passes for it (in the caller's scope)."""
    if bound and isinstance(expr, nodes.Name):
        binding = dataflow.single_binding(expr)
        if binding is not None and binding in bound:
            return bound[binding]
    return expr


def _reads_few_batches(uses: "loader_use.Uses") -> bool:
    """Every loop reading the loader iterates it in its header and stops within ``FEW_BATCHES``
    iterations (``loops.iteration_bound``: ``islice(loader, 4)``, a ``break`` once a counter reaches
    a fixed number), and no framework or imported function trains from it."""
    reads = uses.training_loops + uses.other_loops
    if not reads or uses.handed_to_training:
        return False
    headers = {id(loop) for loop in uses.headers}
    return all(id(loop) in headers and loops.iteration_bound(loop, FEW_BATCHES) is not None for loop in reads)


def _combine(found: List[object]) -> object:
    """Work seen on any reaching value counts; in memory only when every value is."""
    if any(f is True for f in found):
        return True
    if any(f is LIGHT for f in found) and all(f is LIGHT or f is False for f in found):
        return LIGHT
    if found and all(f is False for f in found):
        return False
    return None


def _short_run(uses: "loader_use.Uses", epochs: int = SHORT_RUN_EPOCHS) -> bool:
    """Every loop reading the loader runs at most ``epochs`` times: once (no epoch loop), or
    inside ``for epoch in range(N)`` loops whose N is a known small number (``num_epochs = 2``)."""
    reads = list(zip(uses.training_loops, uses.routes)) + list(zip(uses.other_loops, uses.other_routes))
    if not reads:
        return False
    for loop, route in reads:
        if isinstance(loop, nodes.While) or infer.call_name(loop.iter) == "range":
            return False  # batches drawn with next() for a number of steps: the run's length is not in epochs
        for outer in loader_use.epoch_loops(loop, route):
            if loops.iteration_bound(outer, epochs) is not None:
                continue
            by_default = loops.default_range_length(outer)  # ``range(args.epochs)``, --epochs defaulting to 5
            if by_default is None or by_default > epochs:
                return False
    return True


def _call_work(call: nodes.Call, depth: int, bound: Bound = _NOTHING_BOUND) -> object:
    """Per-item work of the dataset a call builds: a torch wrapper of other datasets, a torchvision
    dataset, a class of the project, or an in-file function's returned dataset."""
    callee = infer.callee_qname(call)
    if callee in WRAPPING_DATASETS:
        inner = [a for a in _plain(call.args) if not (isinstance(a, nodes.Const))]
        if callee == "torch.utils.data.ConcatDataset" and len(inner) == 1:
            elements = inner[0].elts if isinstance(inner[0], (nodes.List, nodes.Tuple)) else None
            if elements is not None:
                return _combine([_per_item_work(e, depth - 1, bound) for e in elements])
        return _combine([_per_item_work(a, depth - 1, bound) for a in inner[:1]])
    dotted = infer.dotted_name(call.func) if isinstance(call.func, (nodes.Name, nodes.Attribute)) else None
    if dotted is not None and dotted.startswith(TORCHVISION_DATASETS):
        return _torchvision_work(call, dotted)
    if isinstance(call.func, (nodes.Name, nodes.Attribute)):
        klass = infer.safe_infer(call.func)
        if isinstance(klass, nodes.ClassDef):
            return _class_work(klass, depth, call, bound)
        func = infer.function_def(call.func)
        if func is not None and not _in_torch(func):
            returned = dataflow.returned_values(func)
            if returned:
                return _combine([_per_item_work(r, depth - 1, _call_bindings(call, func, bound)) for r in returned])
    if any(kw.arg in TRANSFORM_KEYWORDS and not infer.is_none(kw.value) for kw in call.keywords or ()):
        return True  # a class that is not read, handed a transform it runs on every item
    return None


def _torchvision_work(call: nodes.Call, dotted: str) -> object:
    """A torchvision dataset reads and decodes files per item (True), except those that hold the whole
    split as an array in memory (MNIST, CIFAR, SVHN): their item is the array converted to an image and
    passed through the transform, ``LIGHT`` work when the transform only converts it to a tensor."""
    if dotted.rsplit(".", 1)[-1] not in TORCHVISION_IN_MEMORY:
        return True
    transform = next((kw.value for kw in call.keywords or () if kw.arg == "transform"), None)
    if transform is None or _converts_only(transform, MAX_DATASET_DEPTH):
        return LIGHT
    return True


def _converts_only(transform: nodes.NodeNG, depth: int, bound: Bound = _NOTHING_BOUND) -> bool:
    """The transform only converts (``ToTensor()``, ``Normalize``, a ``Compose`` of those): no resizing,
    cropping or augmentation per item.  Unknown transforms count as work."""
    if depth <= 0:
        return False
    transform = _through(transform, bound)
    if isinstance(transform, nodes.Const) and transform.value is None:
        return True
    if isinstance(transform, nodes.Name):
        values = dataflow.assigned_values(transform)
        return bool(values) and all(_converts_only(v, depth - 1) for v in values)
    if not isinstance(transform, nodes.Call) or not isinstance(transform.func, (nodes.Name, nodes.Attribute)):
        return False
    klass = infer.safe_infer(transform.func)
    if isinstance(klass, nodes.ClassDef) and not _in_torch(klass) and not klass.root().name.startswith("torchvision"):
        call_method = klass.locals.get("__call__")  # a transform class of the project
        return bool(call_method) and isinstance(call_method[0], nodes.FunctionDef) and _cheap(call_method[0], depth - 1)
    dotted = infer.dotted_name(transform.func) or ""
    if not dotted.startswith("torchvision.transforms"):
        return False
    name = dotted.rsplit(".", 1)[-1]
    if name == "Compose":
        steps = transform.args[0] if transform.args else None
        if isinstance(steps, nodes.Name):
            values = dataflow.assigned_values(steps)
            steps = values[0] if values and len(values) == 1 else None
        if not isinstance(steps, (nodes.List, nodes.Tuple)):
            return False
        return all(_converts_only(step, depth - 1) for step in steps.elts)
    return name in CONVERSION_TRANSFORMS


def _class_work(
    klass: nodes.ClassDef, depth: int, built: Optional[nodes.Call] = None, bound: Bound = _NOTHING_BOUND
) -> Optional[bool]:
    """Per-item work of a dataset class of the project (this file or a module it imports), read
    from its ``__getitem__`` (or ``__iter__``): True when it makes a call beyond ``CHEAP_ITEM_CALLS``,
    methods of builtin values and helpers of the project that are themselves cheap; False when it
    only indexes what ``__init__`` loaded; None for a class of another package or without one.
    ``built``, the call that builds the dataset, tells what a transform it was handed does."""
    if _in_torch(klass):
        return None
    if infer.class_is_subclass_of(klass, IN_MEMORY_DATASETS):
        return False
    for name in ("__getitem__", "__iter__"):
        try:
            methods = klass.getattr(name)
        except (AstroidError, RecursionError):
            continue
        method = methods[0] if methods else None
        if isinstance(method, nodes.FunctionDef):
            if _in_torch(method):
                return None  # inherited from a torch base: the subclass's item is not shown
            return not _cheap(method, depth, built, bound)
    return None


def _cheap(
    func: nodes.FunctionDef, depth: int, built: Optional[nodes.Call] = None, bound: Bound = _NOTHING_BOUND
) -> bool:
    """Every call ``func`` makes only builds values from memory (see ``_class_work``); ``built`` is the
    call that built the dataset whose method ``func`` is: a transform it was handed
    (``self.transform(x)``) that only converts counts as cheap."""
    for call in func.nodes_of_class(nodes.Call):
        if infer.call_name(call) in CHEAP_ITEM_CALLS:
            continue
        handed = _handed_transform(call, built)
        if handed is not None and _converts_only(handed, depth - 1, bound):
            continue
        if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
            return False
        if _builtin_call(call.func):
            continue  # a method of a list, dict or str, or of random
        if infer.method_name(call) in dataflow.ENTRY_METHODS and not call.args and not call.keywords:
            continue  # the entries of a mapping in memory (``self.encodings.items()``, tokenized up front)
        helper = infer.function_def(call.func)
        if helper is not None and helper is not func and not _in_torch(helper) and depth > 1:
            if _cheap(helper, depth - 1):
                continue
        return False
    return True


def _handed_transform(call: nodes.Call, built: Optional[nodes.Call]) -> Optional[nodes.NodeNG]:
    """What the dataset's constructor call ``built`` passed for the ``self.<attr>`` that ``call``
    invokes: the argument (or default) of the ``__init__`` parameter stored there (``self.transform =
    transform``, ``dataflow.assigned_values``), or of the parameter of that name that ``__init__`` hands
    on to a base class that stores it (torchvision's ``transform``); for a class that is not read, the
    keyword of that name."""
    if built is None or not (isinstance(call.func, nodes.Attribute) and dataflow.is_self_attr(call.func)):
        return None
    attr = call.func.attrname
    klass = infer.safe_infer(built.func)
    init = klass.locals.get("__init__") if isinstance(klass, nodes.ClassDef) else None
    if not init or not isinstance(init[0], nodes.FunctionDef):
        return infer.argument(built, attr) if attr in TRANSFORM_KEYWORDS else None
    passed = _call_bindings(built, init[0], _NOTHING_BOUND)
    stored = dataflow.assigned_values(call.func)
    if stored:
        value = stored[0] if len(stored) == 1 else None
        handed = _through(value, passed) if isinstance(value, nodes.Name) else None
        return handed if handed is not value else None
    parameter = next((a for a in init[0].args.args or [] if a.name == attr), None)
    return passed.get(parameter) if parameter is not None else None


def _builtin_call(func: nodes.NodeNG) -> bool:
    """``func`` is a function or method of ``CHEAP_MODULES``: resolved by inference, through the
    imports (``random.randint``), or by the value its receiver is bound to (``self.rng.randint``
    with ``self.rng = random.Random(seed)``, ``self.items.append`` with ``self.items = []``)."""
    value = infer.safe_infer(func)
    qname = getattr(value, "qname", None)
    owner = str(qname()) if callable(qname) else (infer.dotted_name(func) or "")
    if owner.split(".")[0] in CHEAP_MODULES:
        return True
    if not isinstance(func, nodes.Attribute):
        return False
    receivers = dataflow.assigned_values(func.expr) or []
    return bool(receivers) and all(_builtin_value(v) for v in receivers)


def _builtin_value(value: nodes.NodeNG) -> bool:
    if isinstance(value, (nodes.List, nodes.Dict, nodes.Tuple, nodes.Set, nodes.Const, nodes.ListComp, nodes.DictComp)):
        return True
    if isinstance(value, nodes.Call) and isinstance(value.func, (nodes.Name, nodes.Attribute)):
        return (infer.dotted_name(value.func) or "").split(".")[0] in CHEAP_MODULES
    return False


def _in_torch(node: nodes.NodeNG) -> bool:
    return str(node.root().name).split(".")[0] == "torch"


def _copies_non_blocking(uses: "loader_use.Uses") -> bool:
    """A loop that iterates the loader (``uses``) copies with ``non_blocking=True``
    (``x.to(device, non_blocking=True)``, ``x.cuda(non_blocking=True)``): the copies that unpinned
    host memory turns synchronous, in a loop that trains or runs every epoch.  A non_blocking copy
    elsewhere in the file (a one-time caching pass over the same loader, another loader, a model
    move) says nothing about the run's steady state."""
    repeated = [loop for loop, route in zip(uses.other_loops, uses.other_routes) if loader_use.epoch_loops(loop, route)]
    for loop in uses.training_loops + repeated:  # not a one-time pass (caching latents before training)
        for call in loops.calls_in(loop.body):
            for keyword in call.keywords or ():
                if keyword.arg == "non_blocking" and isinstance(keyword.value, nodes.Const) and keyword.value.value:
                    return True
    return False


def _wording(problems: List[str], module: nodes.Module, restarted: bool = False) -> Dict[str, str]:
    """The message's fields for ``problems``.  Worker processes need the ``__main__`` guard where
    the start method is spawn (Windows, macOS), so the fix says so when the file has none; a loader
    whose iterator the step loop makes again needs them to persist (``restarted``)."""
    workers = any("num_workers" in p for p in problems)
    pinned = any("pin_memory" in p for p in problems)
    fix = []
    if workers:
        guarded = any(entrypoint.is_main_guard(statement) for statement in module.body)
        fix.append("num_workers=4" + ("" if guarded else " (+ __main__ guard)"))
    if pinned:
        fix.append("pin_memory=True")
    cost = "GPU waits on loading" if workers else "copies cannot overlap compute"
    plain = {"problems": ", ".join(problems), "cost": cost, "fix": ", ".join(fix)}
    if not (workers and restarted):
        return plain
    # the first wording that fits: the workers must persist, or each new pass starts them again
    persistent = fix[:1] + ["persistent_workers=True"] + fix[1:]
    for cost, kept in (("GPU waits on loading", persistent), ("GPU waits", persistent), ("GPU waits", persistent[:2])):
        fields = dict(plain, cost=cost, fix=", ".join(kept))
        if len(fit_message(StarvedDataLoader.message, fields)) <= MAX_MESSAGE:
            return fields
    return plain


def _problems(settings: Dict[str, object]) -> List[str]:
    problems: List[str] = []
    workers = settings.get("num_workers")
    if workers is None:
        problems.append("num_workers=0")
    elif isinstance(workers, nodes.NodeNG) and _constant(workers) == 0:
        problems.append("num_workers=0")
    pin = settings.get("pin_memory")
    if pin is None:
        problems.append("no pin_memory")
    elif isinstance(pin, nodes.NodeNG) and _constant(pin) is False:
        problems.append("pin_memory=False")
    return problems


def _constant(expr: nodes.NodeNG) -> object:
    """The int/bool constant ``expr`` always holds (a literal, a name every reaching assignment or
    in-file call site binds to the same literal), or ``_OPAQUE``."""
    values: Optional[List[nodes.NodeNG]] = [expr]
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = infer.bound_values(expr)
    if not values or not all(isinstance(v, nodes.Const) and isinstance(v.value, (bool, int)) for v in values):
        return _OPAQUE
    distinct = {(type(v.value), v.value) for v in values}
    return values[0].value if len(distinct) == 1 else _OPAQUE


def _batches_already_on_device(settings: Dict[str, object]) -> bool:
    """The data reaches the loader on the GPU (pin_memory would raise), or its collate_fn moves it there."""
    dataset = settings.get("dataset")
    if dataset is _OPAQUE:
        return True
    if isinstance(dataset, nodes.NodeNG) and _dataset_on_device(dataset, device.MAX_DEPTH):
        return True
    collate = settings.get("collate_fn")
    if collate is _OPAQUE:
        return True
    return isinstance(collate, nodes.NodeNG) and _function_moves_to_device(collate)


def _dataset_on_device(expr: nodes.NodeNG, depth: int) -> bool:
    if depth <= 0:
        return False
    if device.is_device_value(expr):
        return True
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = infer.bound_values(expr) or []
        if any(_dataset_on_device(v, depth - 1) for v in values):
            return True
    if isinstance(expr, nodes.Call):
        if infer.callee_qname(expr) in WRAPPING_DATASETS:
            return any(_dataset_on_device(a, depth - 1) for a in _plain(expr.args))
        if isinstance(expr.func, (nodes.Name, nodes.Attribute)):
            klass = infer.safe_infer(expr.func)
            if isinstance(klass, nodes.ClassDef) and (
                klass.root() is expr.root() or loops.imported_from_project(expr.func)
            ):  # a dataset class of the file or of a project module (``from urbansounddataset import ...``)
                return infer.class_is_subclass_of(klass, DATASET_BASES) and _moves_to_device(klass)
    klass = infer.instance_class(expr)
    if klass is not None and klass.root() is expr.root():
        return infer.class_is_subclass_of(klass, DATASET_BASES) and _moves_to_device(klass)
    return False


def _trains_on_host(uses: "loader_use.Uses") -> bool:
    """The loader trains, and every loop training from it moves its batches only to the host: each has a
    ``.to()`` of its own whose target is the CPU (``image_data.to(device)`` in ``train(..., device='cpu')``,
    read through the call sites) and none to an accelerator or an unknown device."""
    if not uses.training_loops:
        return False
    for loop in uses.training_loops:
        targets = [device.transfer_target(call) for call in loop.nodes_of_class(nodes.Call)
                   if infer.method_name(call) in ("to", "cuda")]
        if not targets or any(target != "host" for target in targets):
            return False
    return True


def _plain(args: List[nodes.NodeNG]) -> List[nodes.NodeNG]:
    return [a for a in args if not isinstance(a, nodes.Starred)]


def _function_moves_to_device(expr: nodes.NodeNG) -> bool:
    if isinstance(expr, nodes.Lambda):
        return _moves_to_device(expr)
    if isinstance(expr, nodes.Name):
        values = dataflow.assigned_values(expr)
        if values and len(values) == 1 and isinstance(values[0], nodes.Call):
            expr = values[0]
    if isinstance(expr, nodes.Call) and infer.call_name(expr) == "partial" and expr.args:
        # partial(collate, device=device): the collate function is handed the device it moves batches to
        if any(k.arg == "device" for k in expr.keywords or ()):
            return True
        return _function_moves_to_device(expr.args[0])
    func = infer.function_def(expr)
    return func is not None and func.root() is expr.root() and _moves_to_device(func)


def _moves_to_device(scope: nodes.NodeNG) -> bool:
    """Some ``.cuda()`` / ``.to(<device>)`` call in ``scope`` sends data to an accelerator."""
    for call in scope.nodes_of_class(nodes.Call):
        if infer.method_name(call) in ("to", "cuda") and device.transfer_target(call) in ("accelerator", "device"):
            return True
    return False
