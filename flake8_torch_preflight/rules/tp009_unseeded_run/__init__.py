"""TP009 unseeded-run: a training run draws random numbers from a generator it never seeds.

The run is what the file executes: its module-level statements and
``if __name__ == "__main__":`` block, with the file's functions, methods and
class constructors they call expanded (``analysis.training.entrypoint``).  A file is a
run only when that code reaches a training step (``backward()``, ``fit()``,
``trainer.train()``): modules that only define functions, inference or
conversion scripts, and a backward that updates nothing (no optimizer, no
``step``, no in-place update from ``.grad``) in a run that builds no module with
random weights, or that runs ``torch.autograd.gradcheck`` and reads no data (an op's self-test on
``torch.randn`` input), are silent; so is a run
whose every backward sits in a benchmark timing steps on made-up tensors (``entrypoint.benchmark_only``),
a demo that trains on data made up in the file only (``entrypoint.made_up_demo``: ``x = torch.randn(N, D_in)``,
``make_blobs(...)``, a literal tensor, also when handed on as arguments, split or batched by a loader over a
``TensorDataset``; whatever it then does with the model),
a run whose only optimizer step runs once, outside any loop (``entrypoint.repeats_training``), a
script that reads a name it never binds before its first step (``entrypoint.fails_before_training``),
and a library module of the project whose ``__main__`` block trains on made-up tensors
(``entrypoint.library_self_test``).

A function started in fresh interpreters (``torch.multiprocessing.spawn``, a
``spawn`` or ``forkserver`` context or start method) is a run of its own: the
parent's seeds do not reach it, only its own and those of module-level code
outside the ``__main__`` block (which each spawned process runs again on
import).  A forked ``Process`` inherits the parent's generators and stays part
of the parent's run.

What draws from or seeds which generator (torch, NumPy's global generator,
``random``, and generators built without a seed) is ``rules.tp009_unseeded_run.randomness``,
with its data and its documented name-based fallback for seeding helpers that
are never read (``seed_everything``, ``transformers.set_seed``, a call handed
``args.seed``).  A ``set_seed`` of the file counts for exactly the seeders it
calls; ``torch.cuda.manual_seed*`` alone shows intent but leaves the CPU
generator that initialises weights unseeded.  The run's data path
(``randomness.data_path``: the per-item methods of the datasets, samplers and
augmentations of the project it builds, the loader's ``worker_init_fn`` and
``collate_fn``) is read too.  A run that reseeds a generator from the clock or
the OS (``random.seed(int(time.time() * 1000) + idx)`` per item, a bare
``np.random.seed()``) is meant to differ on every launch: silent.

Where it reports: one finding for the global generators (torch, NumPy,
``random``) the run draws from and never seeds, at the first such draw in
execution order, naming the others, those drawn where the file has no line
included (project modules the run calls into; its data path, when torch is
unseeded: loader workers seed ``random`` and NumPy from torch); and one at the
first ``default_rng()`` or ``random.Random()`` built without a seed (each is
its own generator).  A run whose only draws have no line in the file is not
reported.  Weights initialised before the run's first seed of their generator
(the model built, then ``torch.manual_seed``) are reported at that construction:
the seed reaches the data, not the initial weights.  The message
says whether the run seeds nothing at all or only some generators (the intent
is visible: a stronger signal).  In a spawned function whose parent seeds the
generator, it says that the seed belongs there.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Sequence, Set, Tuple

from astroid import nodes

from ...analysis.semantic import memo
from ...analysis.training import entrypoint
from .randomness import (
    DRAW, INTENT, NUMPY, NUMPY_RNG, RANDOM, RANDOM_INSTANCE, RESEED, SEED, TORCH, DataEffect, data_path, effect,
    import_seeds,
    placed_seed, seed_choices, weights_loaded_first, weights_replaced,
)
from .._base import MAX_MESSAGE, Rule, fit_message, register, text_gate

_GENERATOR_NAMES = {
    TORCH: "torch",
    NUMPY: "NumPy",
    RANDOM: "random",
    NUMPY_RNG: "separate NumPy",
    RANDOM_INSTANCE: "separate random.Random",
}
_SEEDERS = {TORCH: "torch.manual_seed(seed)", NUMPY: "np.random.seed(seed)", RANDOM: "random.seed(seed)"}


#: A seeding call commented out: the author chose to leave the run unseeded.
COMMENTED_SEED = re.compile(
    r"^\s*#.*\b(manual_seed|seed_everything|set_seed|random\.seed)\s*\("  # a seeding call
    r"|^\s*#\s*[\w.]*seed\w*\s*\("  # a commented-out call of a seeding helper (``# set_random_seed(args)``)
    r"|^\s*#.*add_argument\(\s*[\"']--\w*seed"  # the seed option itself (``# p.add_argument("--seed", ...)``)
)


@register
class UnseededRun(Rule):
    code, slug = "TP009", "unseeded-run"
    requires = text_gate(r"backward|\.fit\(|\btrain\w*\(")  # ``train_model(...)`` of another module too
    message = "{draw} uses the {generator} RNG, {state}: not reproducible; {fix}"
    quoted = ("draw",)
    rationale = (
        "Weight initialisation, shuffling, augmentation and dropout all draw from random generators: torch's, "
        "NumPy's global one and Python's random module each keep their own state, and each starts from a "
        "nondeterministic seed. A training run that never seeds them gives different results on every launch, "
        "so a regression cannot be told from noise; one that seeds only some of them (torch but not "
        "np.random) is the same bug with the intent visible. The rule reads the run the file executes "
        "(module-level code and the __main__ block, through the file's functions and class constructors) and "
        "reports the first draw from a generator that nothing seeds, naming the other unseeded generators the "
        "run draws from (its datasets' per-item augmentation included). A shuffling DataLoader draws its order "
        "when it is iterated, so a model built after it comes first; a draw made inside another module of the "
        "project (a Solver(config) that builds the model, a trainer's train() that shuffles) is reported at the "
        "file's call that runs it when the file draws nothing itself. Seeding helpers "
        "count: seed_everything, transformers.set_seed, accelerate's set_seed, and a set_seed of the file for "
        "the seeders it calls. A function started by torch.multiprocessing.spawn (or a 'spawn' context) runs in a "
        "fresh interpreter that inherits none of the parent's generator state: a seed set in the parent before "
        "the launch does not reach it, so the function must seed itself. A model built before the run's own "
        "seeding call (model = Net(); torch.manual_seed(0)) keeps a random initialisation: the seed fixes the data "
        "order but not the starting weights, so it is reported at the construction."
    )
    leaves_alone = (
        "Files that only define functions, and runs that never train, are left alone."
        " A file with a seeding call, a seeding helper's call or its ``--seed`` option commented out"
        " (``# torch.manual_seed(1)``, ``# p.add_argument(\"--seed\", ...)``) has chosen to run unseeded."
        " A draw that only picks a port or names a path or run (``f\"tcp://localhost:{random.randrange(...)}\"``)"
        " is not a training draw, nor one that only chooses the seed the run then seeds with"
        " (``args.seed = random.randint(1, 10000)`` handed to ``np.random.seed(args.seed)``): the generators"
        " left unseeded are reported at their own first draw. A module of a library (one another module of"
        " the project imports, or one in a package folder) whose ``__main__`` block only trains on made-up"
        " tensors (no dataset, loader, environment or file), or runs a backward that no optimizer step"
        " follows, is a library's smoke test."
        " Processes started with fork (``multiprocessing.Process`` in the default context) inherit the"
        " parent's seed. Weights built before the seed but replaced by ``load_state_dict`` before training, and a"
        " model handed to a trainer that seeds in its constructor (Hugging Face ``Trainer``), are not reported as"
        " drawn before the seed, nor are weights built in one branch of the top-level code when the seed is set"
        " only in the other (``if vanilla: main() else: LightningCLI(Model)``; LightningCLI seeds before it"
        " builds the model). ``torch.manual_seed(seed)`` counts where the file binds ``torch`` (``np``,"
        " ``random``) only through a star import of a module the analysis cannot read. A run that reseeds a"
        " generator from the clock or the OS"
        " (``random.seed(int(time.time() * 1000) + idx)`` in a dataset's ``__getitem__``, a bare ``np.random.seed()``)"
        " is meant to differ on every launch. A backward that nothing steps, in a run that builds no layer or"
        " that runs ``gradcheck`` on no data (an extension's self-test on ``torch.randn``), is not training, nor"
        " a run whose every backward is in a benchmark that times steps on made-up tensors and reads nothing it trains;"
        " a demo whose inputs and targets are all made up in the file (``torch.randn`` tensors, a synthetic"
        " generator such as ``sklearn.datasets.make_blobs``, a literal such as ``torch.tensor([[0, 1], [1, 0]])``)"
        " demonstrates a made-up task, whatever it then does with the model, and so does one that hands such"
        " data on: as arguments of every call of its training function, filled item by item into a"
        " preallocated tensor, split by ``train_test_split`` or batched by a ``DataLoader`` over a ``TensorDataset``;"
        " a ``__main__`` block that only switches a model to training mode and times a forward does not train,"
        " nor a Lightning ``Trainer(fast_dev_run=True)`` fit (one batch of each stage, a smoke test of the code),"
        " nor does one optimizer step outside any loop (a profiler's or ``torch.utils.bottleneck``'s demonstration),"
        " nor a script that stops with a NameError before its first step (``torch.optim.SGD`` where ``torch`` is"
        " never imported) or a TypeError (a project class called with a keyword its ``__init__`` does not take);"
        " a demo whose batches come from a generator or a batch function of the file that makes them up"
        " (``zip(range(1000), batches())`` over uniform random points labelled by their norm) is one too;"
        " a module only built to lend its ``parameters()`` to an optimizer (an LR-schedule plot) draws nothing"
        " that matters."
    )
    example_bad = """
        import numpy as np
        import torch

        if __name__ == "__main__":
            torch.manual_seed(0)
            model = torch.nn.Linear(10, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            features = torch.load("features.pt")
            for epoch in range(10):
                noise = np.random.normal(scale=0.1, size=(64, 10))
                inputs = features + torch.as_tensor(noise, dtype=torch.float32)
                optimizer.zero_grad()
                model(inputs).sum().backward()
                optimizer.step()
    """
    example_good = """
        import numpy as np
        import torch

        if __name__ == "__main__":
            torch.manual_seed(0)
            np.random.seed(0)
            model = torch.nn.Linear(10, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            features = torch.load("features.pt")
            for epoch in range(10):
                noise = np.random.normal(scale=0.1, size=(64, 10))
                inputs = features + torch.as_tensor(noise, dtype=torch.float32)
                optimizer.zero_grad()
                model(inputs).sum().backward()
                optimizer.step()
    """

    def visit_module(self, node: nodes.Module) -> None:
        if all(isinstance(s, _DEFINITIONS) for s in node.body):
            return  # only definitions: not a run
        if any(COMMENTED_SEED.match(line) for line in self.ctx.lines):
            return  # ``# torch.manual_seed(1)  # reproducible``: leaving the run unseeded is a stated choice
        calls = entrypoint.run_calls(node)
        workers = entrypoint.spawned_runs(node, calls)
        everything = calls + [call for worker in workers for call in worker.calls]
        if not entrypoint.trains(everything) or entrypoint.benchmark_only(everything):
            return  # no training step, or only steps timed on made-up tensors
        if entrypoint.fails_before_training(calls):
            return  # a name the file never binds, or a rejected argument, stops the run before it trains
        if entrypoint.updates_parameters(everything) and not entrypoint.repeats_training(everything):
            return  # one optimizer step outside any loop (a profiler's demonstration): nothing trained
        if entrypoint.made_up_demo(everything):
            return  # a demo on made-up data: a seed would only repeat the made-up task's numbers
        parent = _RandomState(node, calls, data_path(calls))
        states = [parent]
        for worker in workers:  # fresh interpreters: their own seeds count, not the parent's
            if entrypoint.trains(worker.calls):
                states.append(_RandomState(node, worker.calls, data_path(worker.calls), worker.function.name,
                                           parent.seeded))
        if any(state.reseeded for state in states):
            return  # ``random.seed(int(time.time() * 1000) + idx)`` per item: every run differs by design
        if not entrypoint.updates_parameters(everything) and (
            not any(state.weights for state in states) or _op_self_test(everything) or entrypoint.library_module(node)
        ):
            return  # a backward that changes nothing: a gradient check, or a library module's __main__ check
        findings = [finding for state in states for finding in state.findings()]
        if findings and entrypoint.library_self_test(node, calls):
            return  # a module the project imports, whose __main__ block trains on made-up tensors
        reported: Set[Tuple[int, str]] = set()
        for call, generator, fields in findings:
            if (id(call), generator) not in reported:  # a function the parent also calls itself
                reported.add((id(call), generator))
                self.report(call, **fields)


#: How many constructors up ``_built_for`` follows a layer (a block built in the model's ``__init__``).
LOADED_NESTING = 2


def _loaded_classes(calls: Sequence[nodes.Call]) -> Dict[int, bool]:
    """For each class of the file the run constructs outside a constructor: whether every such
    construction has its weights loaded afterwards (``net = Net(); net.load_state_dict(...)``:
    ``weights_replaced``). A block built in another class's ``__init__`` goes with that class."""
    found: Dict[int, bool] = {}
    for call in calls:
        klass = entrypoint.constructed_local_class(call)
        if klass is not None and not _in_constructor(call):
            found[id(klass)] = found.get(id(klass), True) and weights_replaced(call)
    return found


def _in_constructor(call: nodes.Call) -> "nodes.ClassDef | None":
    """The class whose ``__init__`` makes ``call``."""
    func = call.scope()
    klass = func.parent if isinstance(func, nodes.FunctionDef) and func.name == "__init__" else None
    return klass if isinstance(klass, nodes.ClassDef) else None


def _built_for(
    call: nodes.Call, calls: Sequence[nodes.Call], loaded: Dict[int, bool], depth: int = LOADED_NESTING
) -> bool:
    """``call`` runs in the ``__init__`` of a class of the file whose every construction in the run
    has its weights loaded, directly or through the ``__init__`` of such a class building it."""
    klass = _in_constructor(call)
    if klass is None:
        return False
    if id(klass) in loaded:
        return loaded[id(klass)]
    if depth <= 0:
        return False
    builders = [c for c in calls if entrypoint.constructed_local_class(c) is klass]
    return bool(builders) and all(_built_for(b, calls, loaded, depth - 1) for b in builders)


def _op_self_test(calls: List[nodes.Call]) -> bool:
    """The run checks an op's gradients numerically (``entrypoint.checks_gradients``) and reads no data."""
    return entrypoint.checks_gradients(calls) and not any(entrypoint.reads_data(call) for call in calls)


class _RandomState:
    """What one process's run draws and seeds: the parent's, or that of a function it spawns
    (``worker`` its name, ``inherited`` the generators the parent seeds, which do not reach it).
    ``data`` is what its data path draws and seeds (``randomness.data_path``)."""

    def __init__(
        self,
        module: nodes.Module,
        calls: Sequence[nodes.Call],
        data: Sequence[DataEffect] = (),
        worker: str = "",
        inherited: FrozenSet[str] = frozenset(),
    ) -> None:
        self.calls = list(calls)
        self.worker, self.inherited = worker, inherited
        self.framework_seeder = _framework_seeder(module)
        seeded: Set[str] = set(import_seeds(module))  # a project module seeding where it is imported
        self.intent = bool(seeded)
        self.reseeded = self.weights = False
        self.draws: Dict[str, Tuple[nodes.Call, str]] = {}
        #: Weights initialised from a global generator before the run first seeds it (the model built,
        #: then ``torch.manual_seed``): the seed reaches the data but not the initial weights.
        self.early: Dict[str, Tuple[nodes.Call, str]] = {}
        #: Generators the run seeds once with a seeding call of its own (``randomness.placed_seed``).
        self.placed: Set[str] = set()
        #: The seeding call that placed each of those seeds first.
        self.placed_by: Dict[str, nodes.Call] = {}
        self.module = module
        #: Global generators drawn where the finding has no line: project modules the run calls into,
        #: and its data path (named in the message, never reported alone).
        self.unseen: Set[str] = set()
        #: The file's calls that run such draws (``randomness.Effect.through``): where a run whose every
        #: draw is in the project's other modules is reported.
        self.through: Dict[str, Tuple[nodes.Call, str]] = {}
        #: Of those, the calls that build a model whose weights another module initialises (``RNN_encoder(...)``
        #: in the file's model class): made where they are called, before a loader built beside them is iterated.
        self.built_through: Dict[str, Tuple[nodes.Call, str]] = {}
        #: The file's draws made when a loader is iterated (``randomness.Effect.iterated``): the finding's place
        #: only for a generator the run draws nowhere else in the file.
        self.iterated: Dict[str, Tuple[nodes.Call, str]] = {}
        effects = [effect(call) for call in self.calls]
        choices = seed_choices(self.calls, effects)
        loaded = _loaded_classes(self.calls)
        for call, found in zip(self.calls, effects):
            if found is None:
                continue
            if found.weights and _built_for(call, self.calls, loaded):
                continue  # a layer of a model whose every construction in the run has its weights loaded
            if found.weights and found.kind == DRAW and weights_loaded_first(call):
                continue  # ``model = build(...).to(device)`` then ``model.load_state_dict(...)``
            if id(call) in choices:
                self.intent = True  # ``args.seed = random.randint(1, 10000)``: picks the seed, draws no training
                continue
            if found.kind == SEED:
                if found.early and TORCH in found.generators and TORCH not in seeded and call.root() is module:
                    self.early.setdefault(TORCH, (call, found.early))  # the project call builds, then seeds
                seeded |= found.generators
                self.intent = True
                if placed_seed(call, found):
                    self.placed |= found.generators
                    for generator in found.generators:
                        self.placed_by.setdefault(generator, call)
            elif found.kind == INTENT:
                self.intent = True
            elif found.kind == RESEED:
                self.reseeded = True
            elif call.root() is module and found.through:
                self.weights = self.weights or found.weights
                self.unseen |= found.generators
                for generator in found.generators:
                    self.through.setdefault(generator, (call, found.label))
                    if found.weights:
                        self.built_through.setdefault(generator, (call, found.label))
                    if found.weights and generator in _SEEDERS and generator not in seeded and \
                            not weights_replaced(call):
                        self.early.setdefault(generator, (call, found.label))
            elif call.root() is module:
                self.weights = self.weights or found.weights
                for generator in found.generators:
                    (self.iterated if found.iterated else self.draws).setdefault(generator, (call, found.label))
                    if found.weights and generator in _SEEDERS and generator not in seeded and \
                            not weights_replaced(call):
                        self.early.setdefault(generator, (call, found.label))
            else:  # a draw inside another module of the project has no line in this file
                self.weights = self.weights or found.weights
                self.unseen |= found.generators
        self.seeded = frozenset(seeded)
        self._read_data_path(data)

    def _read_data_path(self, data: Sequence[DataEffect]) -> None:
        """Loader workers seed ``random`` and NumPy from torch's generator: the data path's draws
        are unseeded when torch is (and the data path does not seed them itself)."""
        drawn: Set[str] = set()
        seeded: Set[str] = set()
        for item in data:
            if item.effect.kind == RESEED:
                self.reseeded = True
            elif item.effect.kind == SEED:
                seeded |= item.effect.generators
            elif item.effect.kind == DRAW:
                drawn |= item.effect.generators
        if TORCH not in self.seeded:
            self.unseen |= drawn - seeded

    def findings(self) -> List[Tuple[nodes.Call, str, Dict[str, str]]]:
        """(draw, generator, message fields) for each finding of the run."""
        found: List[Tuple[nodes.Call, str, Dict[str, str]]] = []
        for generator, draw in self.iterated.items():  # a shuffling loader draws after the weights built beside it
            self.draws.setdefault(generator, self.built_through.get(generator, draw))
        unseeded = [g for g in self.draws if g not in self.seeded]
        if not any(g in _SEEDERS for g in unseeded):
            for generator, draw in self.through.items():  # every draw is in another module: at its call
                if generator not in self.seeded and generator in _SEEDERS:
                    self.draws.setdefault(generator, draw)
                    unseeded.append(generator)
        shared = [g for g in unseeded if g in _SEEDERS]  # the global generators: one root cause, one finding
        if shared:
            order = list(_SEEDERS)  # one call drawing from several generators: torch first, whatever the hash seed
            first = min(shared, key=lambda g: (self.calls.index(self.draws[g][0]), order.index(g)))
            unseen = sorted(g for g in self.unseen & set(_SEEDERS) if g not in self.seeded and g not in shared)
            others = sorted((g for g in shared if g != first), key=order.index) + unseen
            found.append(self._finding(first, self._wording(first, others)))
        for generator in unseeded:
            if generator not in _SEEDERS:  # a generator built without a seed: its own cause
                found.append(self._finding(generator, _wording(generator, self.seeded, self.intent)))
        for generator, (call, label) in self.early.items():
            seeding = self.placed_by.get(generator)
            if seeding is not None and _exclusive(call, seeding, self.module):
                continue  # ``if vanilla: main() else: LightningCLI(...)``: the seed is on another path
            if generator in self.placed and generator not in self.inherited:  # seeded, but after the weights
                wording = {"state": "drawn before its seed", "fix": "seed before building the model"}
                found.append((call, generator, dict(draw=label, generator=_GENERATOR_NAMES[generator], **wording)))
        return found

    def _finding(self, generator: str, wording: Dict[str, str]) -> Tuple[nodes.Call, str, Dict[str, str]]:
        call, label = self.draws[generator]
        return call, generator, dict(draw=label, generator=_GENERATOR_NAMES[generator], **wording)

    def _wording(self, generator: str, others: Sequence[str]) -> Dict[str, str]:
        wording = _wording(generator, self.seeded, self.intent, others)
        if self.framework_seeder and generator in _SEEDERS:
            framework = dict(wording, fix="add " + self.framework_seeder)  # one call seeds all three
            if _fits(framework, generator):
                wording = framework
        if not self.worker:
            return wording
        if generator in self.inherited:  # the parent seeds it, in its own process only
            also = " (nor {})".format(", ".join(_GENERATOR_NAMES[g] for g in others)) if others else ""
            spawned = {"state": "unseeded in spawned {}{}".format(self.worker, also),
                       "fix": "seed there, not in the parent"}
            return spawned if _fits(spawned, generator) else dict(spawned, state="unseeded in a spawned worker" + also)
        placed = dict(wording, fix="{} in {}".format(wording["fix"], self.worker))
        return placed if _fits(placed, generator) else wording


#: The calls each side of a top-level ``if`` runs (``entrypoint.calls_run_by``), read once per file.
_BRANCH_CALLS: "Dict[nodes.If, Tuple[FrozenSet[int], FrozenSet[int]]]" = memo.per_file()


def _exclusive(first: nodes.Call, second: nodes.Call, module: nodes.Module) -> bool:
    """``first`` and ``second`` run on exclusive paths of the module's run: an ``if`` of the top-level
    code (the ``__main__`` block included) runs one only in its body and the other only in its
    ``else``, the file's functions they call expanded."""
    a, b = id(first), id(second)
    for branch in module.nodes_of_class(nodes.If):
        if branch.scope() is not module or not branch.orelse:
            continue
        sides = _BRANCH_CALLS.get(branch)
        if sides is None:
            sides = _BRANCH_CALLS[branch] = (
                frozenset(id(call) for call in entrypoint.calls_run_by(list(branch.body))),
                frozenset(id(call) for call in entrypoint.calls_run_by(list(branch.orelse))),
            )
        body, orelse = sides
        if (a in body and a not in orelse and b in orelse and b not in body) or (
            b in body and b not in orelse and a in orelse and a not in body
        ):
            return True
    return False


#: Framework seeding functions that seed torch, NumPy and ``random`` in one call, by the package a
#: file imports (Lightning's also passes the seed to loader workers), in order of preference.
FRAMEWORK_SEEDERS = (
    ("lightning", "seed_everything"), ("pytorch_lightning", "seed_everything"),
    ("transformers", "set_seed"), ("accelerate", "utils.set_seed"),
)


def _framework_seeder(module: nodes.Module) -> str:
    """How the fix names the seeding function of a framework the file imports (``L.seed_everything(seed)``
    after ``import lightning as L``), or ``""``."""
    imported: Dict[str, str] = {}
    for node in module.nodes_of_class((nodes.Import, nodes.ImportFrom)):
        if isinstance(node, nodes.Import):
            for name, alias in node.names:
                imported.setdefault(name.split(".")[0], alias if alias and "." not in name else name.split(".")[0])
        elif node.modname and not node.level:
            top = node.modname.split(".")[0]
            imported.setdefault(top, top)
    for package, function in FRAMEWORK_SEEDERS:
        if package in imported:
            return "{}.{}(seed)".format(imported[package], function)
    return ""


#: Characters of the quoted draw a message with a worker's name must leave.
_DRAW_ROOM = 16


def _fits(wording: Dict[str, str], generator: str) -> bool:
    """The message fits with ``_DRAW_ROOM`` characters of the draw."""
    fields = dict(wording, draw="x" * _DRAW_ROOM, generator=_GENERATOR_NAMES[generator])
    return len(fit_message(UnseededRun.message, fields)) <= MAX_MESSAGE


_DEFINITIONS = (nodes.FunctionDef, nodes.ClassDef, nodes.Import, nodes.ImportFrom)


def _wording(generator: str, seeded: Set[str], intent: bool, others: Sequence[str] = ()) -> Dict[str, str]:
    """``others``: further global generators the run draws from and never seeds, named in the same
    finding (their seeders join the fix, or the fix says to seed them all when the list would not fit)."""
    if generator in (NUMPY_RNG, RANDOM_INSTANCE):
        return {"state": "built without a seed", "fix": "pass it a seed"}
    also = " (nor {})".format(", ".join(_GENERATOR_NAMES[g] for g in others)) if others else ""
    fix = "add " + (", ".join(_SEEDERS[g].replace("(seed)", "") for g in (generator, *others)) if others
                    else _SEEDERS[generator])
    if not intent:
        wording = {"state": "never seeded" + also, "fix": fix}
    else:
        done = " and ".join(sorted(_GENERATOR_NAMES[g] for g in seeded)) or "CUDA"
        wording = {"state": "unseeded unlike {}{}".format(done, also), "fix": fix}
    if others and not _fits(wording, generator):
        wording["fix"] = "seed {}".format("all three" if len(others) == 2 else "both")
    return wording
