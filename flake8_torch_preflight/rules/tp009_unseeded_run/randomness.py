"""Random-number generators a call draws from or seeds: torch, NumPy's global generator, ``random``.

``effect(call)`` says what one call does to a run's random state (used by
TP009):

* ``DRAW`` from a generator: torch's default one (``torch.randn``, in-place
  ``Tensor.normal_``, random ``nn.init`` functions, ``random_split``, random
  samplers, ``DataLoader(shuffle=True)``, building a layer whose weights
  are randomly initialised, and building a class of another readable module
  of the project whose ``__init__`` draws; not when it is built on the meta device or under
  ``init_module(empty_init=True)``, ``device.built_empty``, nor when the module is only bound
  to a name whose every use reads its ``parameters()`` (``parameters_only``); building a model of
  a class that is not read through, whose ``parameters()`` an optimizer is built over and into which
  nothing loads weights (``_fresh_model``: it trains from a random initialisation); building a random
  torchvision transform, which draws each time it is applied), NumPy's global one (``np.random.*``), the
  ``random`` module's, or a separate generator built without a seed
  (``np.random.default_rng()``, ``random.Random()``).  A draw given
  ``generator=`` uses its own generator and is not counted, nor is one whose
  value only picks a port or names an address, a path or a run (``names_only``);
* ``SEED`` of some generators: ``torch.manual_seed``, ``np.random.seed``,
  ``random.seed`` with a seed argument, a function of another readable module
  that calls them, and, for code that is never read, the name-based fallback below;
* ``RESEED``: the same seeders with no seed (``random.seed()``, ``seed(None)``,
  ``torch.seed()``: from the OS) or a seed from the clock or the OS's entropy
  (``CLOCK_SOURCES``: ``int(time.time() * 1000) + idx``, followed through the
  names it reads): a generator deliberately left to differ on every launch;
* ``INTENT``: ``torch.cuda.manual_seed*``, which seeds only the CUDA
  generators (not the CPU one that initialises weights).

NumPy and third-party names are resolved through the file's imports only
(``infer.dotted_name``), never read.  Name-based fallback (documented because
it trusts names): a library or unreadable function whose name contains
``seed`` (``seed_everything``, ``transformers.set_seed``,
``accelerate.utils.set_seed``, ``utils.init_seeds``, a method such as Fabric's
``fabric.seed_everything`` on a receiver inference cannot follow, except the
``seed``/``manual_seed`` of one generator object) or that is handed a seed
(``seed=...``, ``setup(args.seed)``), and building a Hugging Face / TRL
``Trainer`` (it seeds in its constructor), are taken to seed every generator,
so that doubt means silence.  Functions of the checked file return None here:
the caller expands them and classifies their own calls.

``data_path(calls)`` lists what a run's data path draws and seeds: code that
runs when the data is read rather than where the run calls it.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, Iterator, List, NamedTuple, Optional, Sequence, Set

from astroid import nodes
from astroid.exceptions import AstroidError

from ...analysis.setup import brain
from ...analysis.semantic import dataflow, infer, loops, memo
from ...analysis.training import device, entrypoint, frameworks, gradients, models
from ...analysis.training.torch_names import MODEL_WRAPPERS, MODULE_BASES, OPTIMIZER_BASES

#: The process-wide generators a seed can reach.
TORCH, NUMPY, RANDOM = "torch", "numpy", "random"
#: Separate generators built without a seed: no global seed reaches them.
NUMPY_RNG, RANDOM_INSTANCE = "numpy-rng", "random-instance"
ALL_GENERATORS = frozenset({TORCH, NUMPY, RANDOM})

#: torch functions that draw from the default generator.
TORCH_RANDOM_FUNCTIONS = frozenset(
    {
        "torch.rand",
        "torch.randn",
        "torch.randint",
        "torch.randperm",
        "torch.rand_like",
        "torch.randn_like",
        "torch.randint_like",
        "torch.normal",
        "torch.bernoulli",
        "torch.multinomial",
        "torch.utils.data.random_split",
        "torch.nn.init.normal_",
        "torch.nn.init.uniform_",
        "torch.nn.init.xavier_uniform_",
        "torch.nn.init.xavier_normal_",
        "torch.nn.init.kaiming_uniform_",
        "torch.nn.init.kaiming_normal_",
        "torch.nn.init.trunc_normal_",
        "torch.nn.init.orthogonal_",
    }
)

#: In-place Tensor methods that fill a tensor with random numbers.
TORCH_RANDOM_METHODS = frozenset(
    {
        "torch.Tensor.uniform_",
        "torch.Tensor.normal_",
        "torch.Tensor.random_",
        "torch.Tensor.bernoulli_",
        "torch.Tensor.exponential_",
        "torch.Tensor.geometric_",
        "torch.Tensor.cauchy_",
        "torch.Tensor.log_normal_",
    }
)

#: Samplers that draw an order from torch's generator when iterated.
TORCH_RANDOM_SAMPLERS = frozenset(
    {
        "torch.utils.data.RandomSampler",
        "torch.utils.data.SubsetRandomSampler",
        "torch.utils.data.WeightedRandomSampler",
    }
)

#: Layers whose constructor initialises weights from torch's generator.
RANDOM_INIT_LAYERS = frozenset(
    {
        "torch.nn.Linear",
        "torch.nn.Bilinear",
        "torch.nn.Conv1d",
        "torch.nn.Conv2d",
        "torch.nn.Conv3d",
        "torch.nn.ConvTranspose1d",
        "torch.nn.ConvTranspose2d",
        "torch.nn.ConvTranspose3d",
        "torch.nn.Embedding",
        "torch.nn.EmbeddingBag",
        "torch.nn.RNN",
        "torch.nn.LSTM",
        "torch.nn.GRU",
        "torch.nn.MultiheadAttention",
        "torch.nn.TransformerEncoderLayer",
        "torch.nn.TransformerDecoderLayer",
        "torch.nn.Transformer",
    }
)

#: Classes above: a call of one of their instances draws nothing (``layer(x)`` is not ``nn.Linear(...)``).
TORCH_CLASSES = RANDOM_INIT_LAYERS | TORCH_RANDOM_SAMPLERS | frozenset({"torch.utils.data.DataLoader"})

#: Seeders of torch's default (CPU and CUDA) generators.
#: (``torch.random`` is where torch defines them; ``torch.manual_seed`` re-exports it.)
TORCH_SEEDERS = frozenset({"torch.manual_seed", "torch.random.manual_seed"})

#: Seed only the CUDA generators: intent, not a seed of the generator that initialises weights.
TORCH_CUDA_SEEDERS = frozenset({"torch.cuda.manual_seed", "torch.cuda.manual_seed_all"})

#: NumPy's global generator: draws (resolved through the imports, never read) and its seeder.
NUMPY_DRAWS = frozenset(
    "numpy.random." + name
    for name in (
        "rand randn randint random random_sample ranf sample choice shuffle permutation normal uniform "
        "standard_normal binomial poisson beta gamma exponential multinomial multivariate_normal dirichlet "
        "lognormal laplace logistic geometric bytes"
    ).split()
)
NUMPY_SEEDERS = frozenset({"numpy.random.seed"})
#: Constructors of independent NumPy generators: unseeded without a seed argument.
NUMPY_GENERATORS = frozenset({"numpy.random.default_rng", "numpy.random.RandomState"})

#: The ``random`` module's shared generator: draws and seeder.
RANDOM_DRAWS = frozenset(
    "random." + name
    for name in (
        "random randint randrange choice choices shuffle sample uniform gauss normalvariate betavariate "
        "expovariate triangular getrandbits lognormvariate vonmisesvariate paretovariate weibullvariate "
        "gammavariate"
    ).split()
)
RANDOM_SEEDERS = frozenset({"random.seed"})
RANDOM_GENERATORS = frozenset({"random.Random"})

#: torchvision transforms that draw from torch's generator each time they are applied (augmentation);
#: with ``Random*`` classes, matched under ``torchvision.transforms.`` (``v2`` included) through the imports.
TORCHVISION_TRANSFORMS = "torchvision.transforms."
TORCHVISION_RANDOM_TRANSFORMS = frozenset(
    "ColorJitter AutoAugment RandAugment TrivialAugmentWide AugMix GaussianBlur ElasticTransform MixUp CutMix "
    "ScaleJitter GaussianNoise".split()
)

#: Words of a target or keyword name where a drawn number picks a free TCP port, not a training value.
PORT_WORDS = frozenset({"port"})
#: Words of a target or keyword name where text built from a draw names something: an address, a
#: file or folder, a run (``args.dist_url = f"tcp://localhost:{random.randrange(49152, 65535)}"``).
NAME_WORDS = frozenset(
    "port url uri addr address host hostname path dir directory folder file filename fname name tmp temp tmpdir "
    "tempdir id tag suffix prefix".split()
)
#: Whole names with the same meaning whose words are too common alone.
NAME_TARGETS = frozenset({"init_method"})
#: Calls that make a path out of their arguments.
PATH_CALLS = frozenset({"os.path.join", "os.makedirs", "os.mkdir", "pathlib.Path", "pathlib.PurePath"})
#: Builtins that turn a number into text (``int`` keeps a number).
TEXT_BUILTINS = frozenset({"str", "repr", "hex", "oct", "format"})

#: Modules whose functions are classified above (a ``seed`` in their names is not a helper).
_CLASSIFIED_ROOTS = frozenset({"torch", "numpy", "random"})

#: Kinds of effect.
SEED, INTENT, DRAW, RESEED = "seed", "intent", "draw", "reseed"

#: Where a seed that differs on every launch comes from: the clock and the OS's entropy.
CLOCK_SOURCES = entrypoint.CLOCKS | frozenset(
    {
        "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
        "os.urandom", "os.getrandom", "uuid.uuid4", "secrets.randbits", "secrets.randbelow", "secrets.token_bytes",
        "secrets.token_hex",
    }
)
#: Seeders that reseed torch's generator from the OS without being given a seed.
TORCH_RESEEDERS = frozenset({"torch.seed", "torch.random.seed"})


#: How many levels of the project's own functions a call is read through for seeds and draws
#: (``Exp(args)`` -> ``ExpAE.__init__`` -> ``super().__init__`` -> ``self._build_model()`` -> ``AE.__init__``,
#: whose layers draw); a project's call graph may be recursive across modules, and this bound ends the reading.
PROJECT_DEPTH = 4


class Effect(NamedTuple):
    """What a call does to the run's random state."""

    kind: str  # SEED, INTENT (a CUDA-only seed), DRAW, or RESEED (from the clock or the OS: deliberately unseeded)
    generators: FrozenSet[str]
    label: str = ""
    weights: bool = False  # a draw that initialises a module's weights
    #: A seed the run places with a seeding call of its own (``torch.manual_seed``, ``set_seed``, a project
    #: helper that calls one), not one made by building a trainer or by a function only handed a seed.
    placed: bool = True
    #: A draw made inside another module of the project, labelled by the call of the checked file that
    #: runs it (``Solver(cfg)``): reported there only when the run has no draw of its own in the file.
    through: bool = False
    #: A draw made when the object is iterated, not where it is built (``DataLoader(shuffle=True)`` draws its
    #: order at each ``iter()``): after a model built on the next line, so a weight init comes first.
    iterated: bool = False
    #: Of a seed made inside another module of the project: the label of a weight initialisation that the
    #: same call draws before it (a project class whose constructor builds its model, then seeds).
    early: str = ""


def _seed(*generators: str) -> Effect:
    return Effect(SEED, frozenset(generators))


def _handed_seed() -> Effect:
    """A seed of every generator made on the run's behalf: a trainer that seeds when built, a function
    handed a seed (``load_data(seed=1)``), which may seed only its own data."""
    return Effect(SEED, ALL_GENERATORS, placed=False)


def _draw(generator: str, label: str) -> Effect:
    return Effect(DRAW, frozenset({generator}), label)


def effect(call: nodes.Call, depth: int = PROJECT_DEPTH) -> Optional[Effect]:
    """What ``call`` does to the random state, or None (nothing, or a function of the checked file).

    ``depth`` bounds how many levels of the project's functions are read through (``_project_effect``).
    """
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return None
    dotted = infer.dotted_name(call.func) or _through_star_import(call.func)
    if dotted is None and isinstance(call.func, nodes.Attribute) and _plain_method_call(call):
        return None
    # A name imported from a module astroid never reads (numpy, random, os) infers to nothing.
    qname = None if dotted is not None and brain.never_read(dotted) else infer.callee_qname(call)
    name = qname if qname is not None and qname.startswith("torch.") else dotted
    if name is None:
        return _unresolved(call) if qname is None else _local(call, qname, depth)
    label = _label(call)
    if name in TORCH_SEEDERS or name in NUMPY_SEEDERS or name in RANDOM_SEEDERS or name in TORCH_RESEEDERS:
        generator = NUMPY if name in NUMPY_SEEDERS else RANDOM if name in RANDOM_SEEDERS else TORCH
        if not _has_seed_argument(call) or name in TORCH_RESEEDERS or _clock_seed(call):
            return Effect(RESEED, frozenset({generator}), label)  # a bare seed() reseeds from the OS
        return _seed(generator)
    if name in TORCH_CUDA_SEEDERS:
        return Effect(INTENT, frozenset())
    if _passes_generator(call):
        return None  # its own generator
    if name in TORCH_RANDOM_FUNCTIONS or name in TORCH_RANDOM_METHODS:
        return None if names_only(call) else _draw(TORCH, label)
    if name in TORCH_CLASSES and not isinstance(infer.safe_infer(call.func), nodes.ClassDef):
        return None  # calling an instance (``layer(x)``), not building one
    if name in TORCH_RANDOM_SAMPLERS:
        return _draw(TORCH, label)
    if name in RANDOM_INIT_LAYERS:
        if device.built_empty(call):
            return None  # on the meta device / empty_init: the weights are never initialised
        if parameters_only(call):
            return None  # a placeholder that only lends its parameters to an optimizer
        return Effect(DRAW, frozenset({TORCH}), "{} (weight init)".format(label), True)
    if name == "torch.utils.data.DataLoader" and _keyword_is_true(call, "shuffle"):
        return Effect(DRAW, frozenset({TORCH}), "{}(shuffle=True)".format(call.func.as_string()), iterated=True)
    if name == "torch.utils.data.DataLoader":
        return _sampler_draws(call, depth)
    if name in NUMPY_DRAWS:
        return None if names_only(call) else _draw(NUMPY, label)
    if name in RANDOM_DRAWS:
        return None if names_only(call) else _draw(RANDOM, label)
    if name in NUMPY_GENERATORS or name in RANDOM_GENERATORS:
        if _has_seed_argument(call) or _seeded_later(call):
            return None
        return _draw(NUMPY_RNG if name in NUMPY_GENERATORS else RANDOM_INSTANCE, label)
    if _random_transform(name):
        return _draw(TORCH, "{}(...)".format(name.rsplit(".", 1)[-1]))  # the class names the augmentation
    return _third_party(call, name, depth)


#: Last names of everything classified above: a method call named otherwise cannot be a draw or a seed
#: of torch, NumPy or ``random`` (an alias such as ``F = torch.nn.init; F.normal_`` keeps its name).
_CLASSIFIED_LAST_NAMES = frozenset(
    name.rsplit(".", 1)[-1]
    for group in (
        TORCH_RANDOM_FUNCTIONS, TORCH_RANDOM_METHODS, TORCH_CLASSES, TORCH_SEEDERS, TORCH_CUDA_SEEDERS,
        NUMPY_DRAWS, NUMPY_SEEDERS, NUMPY_GENERATORS, RANDOM_DRAWS, RANDOM_SEEDERS, RANDOM_GENERATORS,
    )
    for name in group
)

_PROJECT_IMPORTS: "Dict[nodes.Module, bool]" = memo.per_file()


#: Module names that code binds to the random libraries by convention (``import numpy as np``).
_CONVENTIONAL_MODULES = {"torch": "torch", "np": "numpy", "numpy": "numpy", "random": "random"}


def _through_star_import(func: nodes.NodeNG) -> Optional[str]:
    """``np.random.seed`` where the file binds ``np`` only through ``from utils import *`` (of a module
    the analysis cannot read, or of one that imports NumPy, which is never read): the conventional
    module's dotted name, else None."""
    attributes: List[str] = []
    base = func
    while isinstance(base, nodes.Attribute):
        attributes.insert(0, base.attrname)
        base = base.expr
    if not attributes or not isinstance(base, nodes.Name):
        return None
    module = _CONVENTIONAL_MODULES.get(base.name)
    if module is None:
        return None
    try:
        _, bindings = base.lookup(base.name)
    except (AstroidError, RecursionError):
        return None
    if any(not infer.star_import(binding) for binding in bindings):
        return None  # bound in the file: inference and the imports decide
    root = func.root()
    if not any(infer.star_import(statement) for statement in root.body):
        return None
    return ".".join([module] + attributes)


def _plain_method_call(call: nodes.Call) -> bool:
    """``x.meth(...)`` on a value of the file (not an import chain) that cannot matter, decided
    without inference: ``meth`` is none of the classified names, nothing in the call mentions a
    seed, and the file imports no module of its own project (whose classes' methods are read for
    seeds); methods of the file's own classes are expanded where the run calls them."""
    method = str(call.func.attrname)  # type: ignore[union-attr]
    if method in _CLASSIFIED_LAST_NAMES or "seed" in method.lower():
        return False
    for value in list(call.args) + [kw.value for kw in call.keywords or ()]:
        name = dataflow.terminal_name(value.value if isinstance(value, nodes.Starred) else value)
        if name is not None and "seed" in name.lower():
            return False
    if any("seed" in (kw.arg or "").lower() for kw in call.keywords or ()):
        return False
    return not _imports_project_modules(call.root())


def _imports_project_modules(module: nodes.Module) -> bool:
    """The file imports a module astroid may read (a relative import, a sibling, a package of the
    project): its classes' methods may seed."""
    found = _PROJECT_IMPORTS.get(module)
    if found is None:
        found = False
        for node in module.nodes_of_class((nodes.Import, nodes.ImportFrom)):
            if isinstance(node, nodes.ImportFrom):
                names = [node.modname] if not node.level else [""]
            else:
                names = [name for name, _ in node.names]
            if any(not name or brain.project_module(name) for name in names):
                found = True
                break
        _PROJECT_IMPORTS[module] = found
    return found


#: Methods that reseed one generator object (``random.Random``, ``np.random.RandomState``,
#: ``torch.Generator``), not the run: left out of the name-based fallback on unresolved receivers.
INSTANCE_SEED_METHODS = frozenset({"seed", "manual_seed"})


def _unresolved(call: nodes.Call) -> Optional[Effect]:
    """Neither inferred nor imported: ``m.weight.data.normal_(0, 0.02)`` on a weight inference cannot follow."""
    method = infer.method_name(call)
    if method is not None and "torch.Tensor." + method in TORCH_RANDOM_METHODS and not _passes_generator(call):
        return _draw(TORCH, _label(call))  # only tensors have these in-place random fills
    meaning = frameworks.method_meaning(call)
    if meaning is not None and meaning.seeds:
        return _seed(*ALL_GENERATORS)  # fabric.seed_everything(s), from the framework table
    if method is not None and method not in INSTANCE_SEED_METHODS and "seed" in method.lower():
        return _seed(*ALL_GENERATORS)  # a seeding method of an object nothing resolves: the fallback by name
    return None


def _local(call: nodes.Call, qname: str, depth: int) -> Optional[Effect]:
    """A function or class of the file (expanded by the run), or of a readable module."""
    klass = entrypoint.constructed_local_class(call)
    if klass is not None:
        if any(_is_seeding_trainer(infer.dotted_name(base)) for base in klass.bases):
            return _handed_seed()
        return None
    if qname.startswith(str(call.root().name) + "."):
        return None  # a helper of the file: its own calls are classified where they run
    if qname.split(".")[0].lstrip("_") in _CLASSIFIED_ROOTS | {"builtins"}:
        return None  # ``rng.seed(5)`` on a random.Random: that instance only (see _seeded_later)
    return _project_call(call, qname.rsplit(".", 1)[-1], depth)


def import_seeds(module: nodes.Module) -> FrozenSet[str]:
    """The generators seeded by the top-level code of the project modules ``module`` imports at its own
    top level: importing a module runs it (``from vae import VAE`` runs ``vae.py``'s
    ``torch.manual_seed(42)``), before the importing file's own code, in every process that imports it.
    Only a module's top-level statements count: not its functions, classes or ``__main__`` block."""
    cached = _IMPORT_SEEDS.get(module)
    if cached is not None:
        return cached
    seeded: Set[str] = set()
    _IMPORT_SEEDS[module] = frozenset()  # a module importing itself back reads as seeding nothing
    for statement in module.body:
        if not isinstance(statement, (nodes.Import, nodes.ImportFrom)):
            continue
        names = [None] if isinstance(statement, nodes.ImportFrom) else [name for name, _ in statement.names]
        for name in names:
            try:
                imported = statement.do_import_module(name) if name else statement.do_import_module()
            except (AstroidError, RecursionError, ImportError):
                continue
            if imported is module or not brain.project_module(str(imported.name)):
                continue
            for top in imported.body:
                if isinstance(top, _NOT_RUN_ON_IMPORT) or entrypoint.is_main_guard(top):
                    continue
                for call in top.nodes_of_class(nodes.Call, skip_klass=_NOT_RUN_ON_IMPORT):
                    found = effect(call, 0)
                    if found is None:
                        seeded |= _own_function_seeds(call, imported)
                    elif found.kind == SEED:
                        seeded |= found.generators
    _IMPORT_SEEDS[module] = frozenset(seeded)
    return _IMPORT_SEEDS[module]


def _own_function_seeds(call: nodes.Call, module: nodes.Module) -> FrozenSet[str]:
    """The generators seeded by a function of ``module`` that its own top level calls
    (``_activate_random_seed()`` at the foot of ``utils.py``), the project functions it calls expanded."""
    func = infer.function_def(call.func) if isinstance(call.func, (nodes.Name, nodes.Attribute)) else None
    if func is None or func.root() is not module:
        return frozenset()
    return frozenset(
        generator for found in _function_effects(func, PROJECT_DEPTH - 1, {id(func)}) if found.kind == SEED
        for generator in found.generators
    )


_NOT_RUN_ON_IMPORT = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)
_IMPORT_SEEDS: "Dict[nodes.Module, FrozenSet[str]]" = memo.per_file()


def _random_transform(name: str) -> bool:
    """A torchvision transform that draws each time it is applied (``RandomResizedCrop``, ``ColorJitter``)."""
    if not name.startswith(TORCHVISION_TRANSFORMS):
        return False
    last = name.rsplit(".", 1)[-1]
    return last.startswith("Random") or last in TORCHVISION_RANDOM_TRANSFORMS


def names_only(draw: nodes.Call) -> bool:
    """The drawn value only names something: a port (``port = random.randint(20000, 30000)``), or
    text that becomes an address, a path or a run name (``f"tcp://localhost:{random.randrange(...)}"``,
    ``run_name = f"run_{random.randint(0, 999)}"``); followed through one plain local name.  Not a
    training draw."""
    return _feeds_names(draw, False, 1)


def _feeds_names(node: nodes.NodeNG, text: bool, depth: int) -> bool:
    """``node``'s value (text once ``text``) ends in a port, an address, a path or a name."""
    while True:
        parent = node.parent
        if isinstance(parent, nodes.FormattedValue) and isinstance(parent.parent, nodes.JoinedStr):
            node, text = parent.parent, True
            if _names_a_place(node):
                return True
        elif isinstance(parent, nodes.BinOp):
            other = parent.right if parent.left is node else parent.left
            if (parent.op == "%" and parent.right is node) or (parent.op == "+" and _is_text(other)):
                text = True  # "port_%d" % x, "run_" + str(x)
            node = parent
        elif isinstance(parent, nodes.Call) and node in parent.args:
            name = infer.call_name(parent)
            if isinstance(parent.func, nodes.Name) and name in TEXT_BUILTINS | {"int"}:
                text = text or name != "int"
            elif isinstance(parent.func, nodes.Attribute) and name in ("format", "join") and _is_text(parent.func.expr):
                text = True  # "run_{}".format(x), "".join(random.choices(string.ascii_lowercase, k=8))
            elif infer.dotted_name(parent.func) in PATH_CALLS:
                return True
            else:
                return False
            node = parent
        elif isinstance(parent, nodes.Keyword):
            return _names_words(parent.arg, text)
        elif isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is node:
            targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
            if all(_names_words(_target_name(target), text) for target in targets):
                return True
            if depth <= 0 or len(targets) != 1 or not isinstance(targets[0], nodes.AssignName):
                return False
            uses = _uses(targets[0])
            return bool(uses) and all(_feeds_names(use, text, depth - 1) for use in uses)
        else:
            return False


def _names_words(name: Optional[str], text: bool) -> bool:
    if not name:
        return False
    if name in NAME_TARGETS:
        return True
    return bool(_name_words(name) & (NAME_WORDS if text else PORT_WORDS))


def _name_words(name: str) -> Set[str]:
    """Lower-case words of a snake_case or CamelCase name (``MASTER_PORT``, ``dist_url``)."""
    return {word.lower() for word in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)}


def _target_name(target: nodes.NodeNG) -> Optional[str]:
    """The name an assignment stores into: ``port``, ``args.dist_url``, ``os.environ["MASTER_PORT"]``."""
    if isinstance(target, nodes.AssignName):
        return str(target.name)
    if isinstance(target, nodes.AssignAttr):
        return str(target.attrname)
    if isinstance(target, nodes.Subscript) and isinstance(target.slice, nodes.Const):
        return target.slice.value if isinstance(target.slice.value, str) else None
    return None


def _is_text(node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.JoinedStr) or (isinstance(node, nodes.Const) and isinstance(node.value, str))


def _names_a_place(text: nodes.JoinedStr) -> bool:
    """An f-string that reads as an address or a path: ``tcp://...``, ``localhost:...``, ``/tmp/...``."""
    parts = [part.value for part in text.values if isinstance(part, nodes.Const) and isinstance(part.value, str)]
    if any("://" in part or "localhost" in part for part in parts):
        return True
    first = text.values[0] if text.values else None
    return isinstance(first, nodes.Const) and str(first.value).startswith(("/", "./", "~/"))


def _uses(binding: nodes.AssignName) -> List[nodes.Name]:
    """The reads of ``binding`` (``dataflow.name_uses``) when it is the only assignment each of them
    sees; empty when some read may see another."""
    uses = dataflow.name_uses(binding)
    if any(dataflow.sole_binding(use) is not binding for use in uses):
        return []
    return uses


def _sampler_draws(loader: nodes.Call, depth: int) -> Optional[Effect]:
    """A ``DataLoader`` whose ``sampler=`` / ``batch_sampler=`` is an instance of a class of the file
    whose ``__iter__`` draws from torch (``torch.randperm`` per epoch): iterating the loader draws."""
    for keyword in loader.keywords or ():
        if keyword.arg not in ("sampler", "batch_sampler"):
            continue
        klass = infer.instance_class(keyword.value)
        if klass is None or klass.root() is not loader.root():
            continue
        method = klass.locals.get("__iter__")
        if not method or not isinstance(method[0], nodes.FunctionDef):
            continue
        for inner in infer.iter_calls(method[0]):
            found = effect(inner, depth - 1)
            if found is not None and found.kind == DRAW and TORCH in found.generators:
                label = "{}.__iter__ (a DataLoader sampler)".format(klass.name)
                return Effect(DRAW, frozenset({TORCH}), label, iterated=True)
    return None


def _third_party(call: nodes.Call, dotted: str, depth: int) -> Optional[Effect]:
    """A name resolved through the imports: a project module (read for its seeds) or a library (not read)."""
    if dotted.split(".")[0] in _CLASSIFIED_ROOTS:
        return None
    meaning = frameworks.function_meaning(call)
    if _is_seeding_trainer(dotted):
        return _handed_seed()  # transformers.Trainer seeds when built
    if meaning is not None and meaning.seeds:
        return _seed(*ALL_GENERATORS)  # L.seed_everything, transformers.set_seed: the framework table
    return _project_call(call, dotted.rsplit(".", 1)[-1], depth)


def _project_effect(call: nodes.Call, depth: int) -> Optional[Effect]:
    """What calling a function, a method or a class of another readable module of the project does to
    the random state: the body it runs (the function, the method of an instance of a project class, or
    the class's ``__init__``) and the project functions and methods that body calls (``depth`` levels)
    are read.  A seed or reseed on the way is the call's (``utils.setup(cfg)``; ``OptInit()`` whose
    ``__init__`` runs ``self._set_seed()``); otherwise the global generators it draws from are the call's
    draw, labelled by the call (``Translator(...)`` whose layers initialise their weights; ``Solver(cfg)``
    whose ``__init__`` builds the model through a method of its own; ``solver.train()`` shuffling its
    loader); a class's constructor counts torch's draws only.  A thin entry script whose every draw is in
    the project's other modules has its draw at that call."""
    if depth <= 0:
        return None
    func, klass = loops.project_callee(call)
    if func is None or str(func.root().name).split(".")[0] in _CLASSIFIED_ROOTS:
        return None
    seeded: Set[str] = set()
    placed = False
    generators: Set[str] = set()
    first = ""
    early = ""  # a weight initialisation drawn before any seed on the way
    initialises = False  # some draw initialises a module's weights (``self.model = AE(n)`` on the way)
    # A constructor counts torch's draws (weights, a dataset filled with torch.rand); what a helper object
    # draws from ``random`` or NumPy when built is often a name (a checkpoint's random suffix), not training.
    counted = frozenset({TORCH}) if klass is not None else ALL_GENERATORS
    runner = klass or (infer.instance_class(call.func.expr) if isinstance(call.func, nodes.Attribute) else None)
    for found in _function_effects(func, depth - 1, {id(func)}, runner):
        if found.kind == RESEED:
            return Effect(RESEED, found.generators, _label(call))
        if found.kind == SEED:
            seeded |= found.generators
            placed = placed or found.placed
        elif found.kind == DRAW and found.generators & counted:
            generators |= found.generators & counted
            first = first or found.label
            initialises = initialises or found.weights
            if found.weights and TORCH in found.generators and not seeded and not early:
                early = "{} (its {})".format(_label(call), found.label.split("(")[0] + "(...)")
    inert = device.built_empty(call) or parameters_only(call)  # meta device / empty_init, or never applied
    if seeded:
        return Effect(SEED, frozenset(seeded), placed=placed, early="" if inert else early)
    if not generators or inert:
        return None
    if klass is not None and infer.class_is_subclass_of(klass, MODULE_BASES):
        return Effect(DRAW, frozenset(generators), "{} (weight init)".format(_label(call)), True, through=True)
    label = "{} (its {})".format(_label(call), first.split("(")[0] + "(...)")
    return Effect(DRAW, frozenset(generators), label, initialises, through=True)


def _project_call(call: nodes.Call, last: str, depth: int) -> Optional[Effect]:
    """A call of a function or class of another readable module: its seeds, a seed-named helper nothing
    reads (``set_seed(args)``), its draws, or a model of a class the analysis does not read through."""
    found = _project_effect(call, depth)
    if found is not None and found.kind != DRAW:
        return found
    return _seed_named(call, last) or found or _fresh_model(call)


#: Words of a constructor's keyword that may hand it trained weights (``pretrained=True``, ``checkpoint=path``):
#: such a model may start from them, not from a random initialisation.
WEIGHT_SOURCE_WORDS = frozenset({"pretrained", "checkpoint", "ckpt", "weights", "resume", "load", "path", "file"})
#: How many rebindings (``model = model.cuda()``, ``model = DataParallel(model)``) are followed to the
#: model's ``parameters()``.
MODEL_HOPS = 2


def _fresh_model(call: nodes.Call) -> Optional[Effect]:
    """Building a model of a class the analysis does not read through (another module, a library:
    ``DeepSpeech(...)`` from ``model.py``), bound to a name whose ``parameters()`` an optimizer is
    built over, with no weights loaded into it (no ``load*`` method called on it, no keyword that may
    hand it a checkpoint): it trains from a random initialisation, whatever its class body says."""
    name = infer.call_name(call) or ""
    if not name[:1].isupper() or device.built_empty(call):
        return None  # classes are named in CamelCase; ``Model.load(path)`` is not a constructor
    if any(_name_words(kw.arg or "") & WEIGHT_SOURCE_WORDS for kw in call.keywords or ()):
        return None
    target = _rebinding(call) or dataflow.assigned_name(call)  # ``Transformer(...).to(device)``: the model built
    if target is None or not _optimized_fresh(target, MODEL_HOPS):
        return None
    return Effect(DRAW, frozenset({TORCH}), "{} (weight init)".format(_label(call)), True)


def _optimized_fresh(binding: nodes.AssignName, hops: int) -> bool:
    """An optimizer is built over the parameters of the model ``binding`` holds (or of a rebinding
    that wraps it), and nothing loads weights into it."""
    optimized = False
    for use in dataflow.name_uses(binding):
        parent = use.parent
        if isinstance(parent, nodes.Attribute) and parent.attrname.startswith("load"):
            return False  # ``model.load_state_dict(...)``: trained weights replace the initialisation
        if isinstance(parent, nodes.Attribute) and parent.attrname in gradients.PARAMETER_METHODS:
            if isinstance(parent.parent, nodes.Call) and parent.parent.func is parent:
                optimized = optimized or _reaches_optimizer(parent.parent, 1)
            continue
        rebound = _rebinding(use)
        if rebound is not None and hops > 0:
            if _loads_into(rebound, hops - 1):
                return False
            optimized = optimized or _optimized_fresh(rebound, hops - 1)
    return optimized


def weights_replaced(call: nodes.Call) -> bool:
    """The model ``call`` builds has weights loaded into it later (``model.load_state_dict(...)``, on
    the name it is bound to or a rebinding that wraps it): its initialisation is overwritten."""
    target = dataflow.assigned_name(call)
    return target is not None and _loads_into(target, MODEL_HOPS)


def weights_loaded_first(call: nodes.Call) -> bool:
    """The model ``call`` builds (bound to a name, moved on the way: ``build(...).to(device)``) has weights
    loaded into it by the next statements of the same block, before any other use of it than a method
    returning the module itself (``models.SELF_RETURNING_METHODS``: a move, a mode switch, a cast):
    ``model.load_state_dict(checkpoint[...])`` right after the build, so its initialisation never reaches
    anything.  A load under a condition (a resume flag), or after training, is not."""
    target = _rebinding(call) or dataflow.assigned_name(call)
    statement = target.statement() if target is not None else None
    following = loops.later_in_block(statement) if isinstance(statement, nodes.Assign) else None
    for later in following or ():
        for use in (n for n in later.nodes_of_class(nodes.Name) if n.name == target.name):
            method = use.parent.attrname if isinstance(use.parent, nodes.Attribute) else None
            if method is not None and method.startswith("load"):
                return True
            if method not in models.SELF_RETURNING_METHODS:
                return False
    return False


def _loads_into(binding: nodes.AssignName, hops: int) -> bool:
    for use in dataflow.name_uses(binding):
        if isinstance(use.parent, nodes.Attribute) and use.parent.attrname.startswith("load"):
            return True
        rebound = _rebinding(use)
        if rebound is not None and hops > 0 and _loads_into(rebound, hops - 1):
            return True
    return False


def _rebinding(use: nodes.NodeNG) -> Optional[nodes.AssignName]:
    """The name bound to the same model wrapped or moved (``model = nn.DataParallel(model).cuda()``):
    ``use`` reaches the assigned value only through methods that return the module
    (``models.SELF_RETURNING_METHODS``) and parallel wrappers (``MODEL_WRAPPERS``)."""
    node: nodes.NodeNG = use
    while True:
        parent = node.parent
        if isinstance(parent, nodes.Attribute) and parent.attrname in models.SELF_RETURNING_METHODS:
            call = parent.parent
            if not isinstance(call, nodes.Call) or call.func is not parent:
                return None
            node = call
        elif isinstance(parent, nodes.Call) and parent.args and parent.args[0] is node:
            if infer.callee_qname(parent) not in MODEL_WRAPPERS:
                return None
            node = parent
        else:
            return dataflow.assigned_name(node) if node is not use else None


def _reaches_optimizer(parameters: nodes.Call, hops: int) -> bool:
    """``parameters`` (a ``model.parameters()`` call) is handed to an optimizer's constructor, directly,
    inside an expression (``filter(...)``, ``[{"params": ...}]``), or through a name bound to it."""
    node: nodes.NodeNG = parameters
    while node.parent is not None and not node.is_statement:
        node = node.parent
        if isinstance(node, nodes.Call) and _builds_optimizer(node):
            return True
    if isinstance(node, nodes.Assign) and hops > 0:
        target = dataflow.assigned_name(node.value)
        if target is not None:
            return any(_reaches_optimizer(use, hops - 1) for use in dataflow.name_uses(target))
    return False


def _builds_optimizer(call: nodes.Call) -> bool:
    """``call`` builds an optimizer: a torch one (``torch.optim.SGD``), or a class nothing resolves
    whose instance is bound to a name that ``gradients.is_optimizer`` reads as one."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return False
    klass = infer.safe_infer(call.func)
    if isinstance(klass, nodes.ClassDef):
        return infer.class_is_subclass_of(klass, OPTIMIZER_BASES)
    target = dataflow.assigned_name(call)
    return klass is None and target is not None and gradients.OPTIMIZER_NAME.search(target.name) is not None


def _seed_named(call: nodes.Call, last: str) -> Optional[Effect]:
    """Name-based fallback for functions that are not read: one named ``*seed*``, or handed a seed
    (``seed=...``, ``setup(args.seed)``, ``set_randomness(config["seed"])``), is taken to seed every generator."""
    named = "seed" in last.lower()
    if named or any("seed" in (kw.arg or "").lower() for kw in call.keywords or ()):
        if _clock_seed(call):
            return Effect(RESEED, ALL_GENERATORS, _label(call))  # ``seed_everything(int(time.time()))``
        return _seed(*ALL_GENERATORS) if named else _handed_seed()
    values = list(call.args) + [kw.value for kw in call.keywords or ()]
    for value in values:
        if isinstance(value, nodes.Starred):
            value = value.value
        name = dataflow.terminal_name(value)
        if isinstance(value, nodes.Subscript) and isinstance(value.slice, nodes.Const):
            name = str(value.slice.value)  # ``zero.set_randomness(args["seed"])``
        if name is not None and "seed" in name.lower():
            return _handed_seed()
    return None


def seed_choices(calls: Sequence[nodes.Call], effects: Sequence[Optional[Effect]]) -> Set[int]:
    """The draws of ``calls`` that only choose a seed: the value is bound to a name or attribute that a
    seeding call of the run is handed (``if args.seed is None: args.seed = random.randint(1, 10000)``
    then ``np.random.seed(args.seed)``), or to one named a seed (``seed = random.randint(0, 10**6)``
    when ``--seed`` is negative).  Such a draw shows the intent to seed, it does not draw for the
    training; the generators left unseeded are reported at their own draws."""
    handed: Set[str] = set()
    for call, found in zip(calls, effects):
        if found is not None and found.kind == SEED:
            for arg in list(call.args) + [kw.value for kw in call.keywords or ()]:
                handed.update(dataflow.binding_text(n) for n in arg.nodes_of_class((nodes.Name, nodes.Attribute)))
    chosen: Set[int] = set()
    for call, found in zip(calls, effects):
        if found is None or found.kind != DRAW or not isinstance(call.parent, nodes.Assign):
            continue
        targets = call.parent.targets
        if all(isinstance(t, (nodes.AssignName, nodes.AssignAttr))
               and (dataflow.binding_text(t) in handed or "seed" in _name_words(_target_name(t) or ""))
               for t in targets):
            chosen.add(id(call))
    return chosen


def placed_seed(call: nodes.Call, found: Effect) -> bool:
    """``call``, whose effect is ``found``, is a seed the run places once (``torch.manual_seed(0)``,
    ``set_seed(args.seed)``; ``Effect.placed``): not a trainer that seeds when built (``transformers.Trainer``,
    whose documentation says a model built before it keeps its random initialisation), not a function only
    handed a seed (``load_data(seed=1)``), not a reseed inside a loop (``torch.manual_seed(i)`` per step)."""
    return found.kind == SEED and found.placed and not loops.enclosing_loops(call)


def _is_seeding_trainer(dotted: Optional[str]) -> bool:
    """A framework trainer class that seeds every generator when built (the framework table)."""
    meaning = frameworks.trainer_meaning(dotted)
    return meaning is not None and meaning.seeds


def _has_seed_argument(call: nodes.Call) -> bool:
    if call.args:
        value: Optional[nodes.NodeNG] = call.args[0]
    else:
        value = next((k.value for k in call.keywords or () if k.arg in ("seed", "a")), None)
    return value is not None and not (isinstance(value, nodes.Const) and value.value is None)


def _seeded_later(call: nodes.Call) -> bool:
    """``rng = random.Random()`` followed by ``rng.seed(s)`` in the same scope."""
    target = dataflow.assigned_name(call)
    if target is None:
        return False
    for other in call.scope().nodes_of_class(nodes.Call):
        func = other.func
        if isinstance(func, nodes.Attribute) and func.attrname == "seed" and _has_seed_argument(other):
            if isinstance(func.expr, nodes.Name) and func.expr.name == target.name:
                return True
    return False


def _passes_generator(call: nodes.Call) -> bool:
    return any(kw.arg == "generator" for kw in call.keywords or ())


def _keyword_is_true(call: nodes.Call, name: str) -> bool:
    for kw in call.keywords or ():
        if kw.arg == name and isinstance(kw.value, nodes.Const) and kw.value.value is True:
            return True
    return False


def _label(call: nodes.Call) -> str:
    return "{}({})".format(call.func.as_string(), "..." if call.args or call.keywords else "")


def _clock_seed(call: nodes.Call) -> bool:
    """The seed ``call`` is handed comes from the clock or the OS (``int(time.time() * 1000) + idx``,
    ``time.time_ns()``, ``datetime.now()``, ``os.urandom(4)``), written there or bound to a name (or
    ``self`` attribute) it reads; the seed of a run that is meant to differ on every launch."""
    values = list(call.args) + [kw.value for kw in call.keywords or ()]
    return any(_from_clock(value, 2) for value in values)


def _from_clock(node: nodes.NodeNG, depth: int) -> bool:
    for sub in node.nodes_of_class((nodes.Call, nodes.Name, nodes.Attribute)):
        if isinstance(sub, nodes.Call):
            if isinstance(sub.func, (nodes.Name, nodes.Attribute)) and infer.dotted_name(sub.func) in CLOCK_SOURCES:
                return True
            continue
        if depth <= 0 or isinstance(sub.parent, nodes.Attribute):
            continue  # ``time`` of ``time.time``, ``self`` of ``self.seed``: read as a whole
        if isinstance(sub.parent, nodes.Call) and sub.parent.func is sub:
            continue  # the function a call invokes, checked above
        values = dataflow.assigned_values(sub)
        if values and any(_from_clock(value, depth - 1) for value in values):
            return True
    return False


def parameters_only(call: nodes.Call) -> bool:
    """The module ``call`` builds is bound to one name whose every use reads its parameters
    (``dummy = nn.Linear(1, 1)`` only to give an optimizer and an LR scheduler something to step for a
    plot): it is never applied, so its random weights reach nothing."""
    target = dataflow.assigned_name(call)
    if target is None:
        return False
    uses = _uses(target)
    return bool(uses) and all(
        isinstance(use.parent, nodes.Attribute)
        and use.parent.attrname in gradients.PARAMETER_METHODS
        and isinstance(use.parent.parent, nodes.Call)
        and use.parent.parent.func is use.parent
        for use in uses
    )


#: Methods a dataset, sampler or augmentation of the project runs for each item, batch or epoch.
ITEM_METHODS = ("__getitem__", "__iter__", "__next__", "__call__")
#: Keywords of a loader whose function runs in each worker or on each batch.
LOADER_FUNCTIONS = frozenset({"worker_init_fn", "collate_fn"})
#: How deep the project functions and methods a data-path function calls are read.
DATA_PATH_DEPTH = 2


class DataEffect(NamedTuple):
    """An effect of the run's data path, and the run's call that builds its class or hands over its function."""

    anchor: nodes.Call
    effect: Effect


def data_path(calls: Sequence[nodes.Call]) -> List[DataEffect]:
    """What the run's data path draws and seeds: the per-item methods (``ITEM_METHODS``) of the
    project's classes the run builds that are not modules (datasets, samplers, augmentations, of this
    file or another module), and the functions it hands a loader (``LOADER_FUNCTIONS``), with the
    project functions and methods they call (``DATA_PATH_DEPTH``).  They run when the data is read
    (in loader workers, whose ``random`` and NumPy generators torch seeds), not where the run calls them."""
    found: List[DataEffect] = []
    seen: Set[int] = set()
    for call in calls:
        for func in _data_functions(call):
            if id(func) not in seen:
                seen.add(id(func))
                found.extend(DataEffect(call, e) for e in _function_effects(func, DATA_PATH_DEPTH, seen))
    return found


def _data_functions(call: nodes.Call) -> List[nodes.FunctionDef]:
    functions: List[nodes.FunctionDef] = []
    for keyword in call.keywords or ():
        if keyword.arg in LOADER_FUNCTIONS:
            func = infer.function_def(keyword.value)
            if func is not None and loops.of_project(func, call):
                functions.append(func)
    if not (infer.call_name(call) or "")[:1].isupper():
        return functions  # classes are named in CamelCase: the rest is not a class built
    klass = infer.safe_infer(call.func)
    if not isinstance(klass, nodes.ClassDef) or not loops.of_project(klass, call):
        return functions
    if infer.class_is_subclass_of(klass, MODULE_BASES):
        return functions  # a layer: its forward is the model's, not the data's
    for name in ITEM_METHODS:
        try:
            methods = klass.getattr(name)
        except (AstroidError, RecursionError):
            continue
        method = methods[0] if methods else None
        if isinstance(method, nodes.FunctionDef) and loops.of_project(method, call):
            functions.append(method)
    return functions


def _function_effects(
    func: nodes.FunctionDef, depth: int, seen: Set[int], klass: Optional[nodes.ClassDef] = None
) -> Iterator[Effect]:
    """The effects of the calls ``func`` makes, the project's functions it calls expanded (``depth``
    levels); with ``klass``, the class whose instance runs it, ``self.method()`` is that class's method
    (an override of a subclass the run builds: ``Exp_Basic.__init__`` calling ``self._build_model()``)."""
    for inner in infer.iter_calls(func):
        found = effect(inner, depth)
        if found is not None:
            yield found
            continue
        if depth <= 0 or not isinstance(inner.func, (nodes.Name, nodes.Attribute)):
            continue
        callee = None
        if klass is not None and dataflow.is_self_attr(inner.func):
            callee = infer.class_method(klass, inner.func.attrname)  # type: ignore[union-attr]
        callee = callee or infer.super_method(inner) or infer.function_def(inner.func)
        if callee is not None and id(callee) not in seen and loops.of_project(callee, inner):
            seen.add(id(callee))
            yield from _function_effects(callee, depth - 1, seen, klass)
