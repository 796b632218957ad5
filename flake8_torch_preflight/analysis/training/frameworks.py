"""What the training frameworks' calls mean, as data: one table that the analysis reads.

A framework object is recognised by the constructor that built it, resolved through the file's
imports (``L.Fabric(...)`` -> ``lightning.Fabric``; the frameworks are never read or imported),
following the receiver's binding: ``fabric = L.Fabric(...); fabric.backward(loss)``.  Where the
binding cannot be followed (an object handed in as a parameter), the receiver's name decides
(``RECEIVER_NAMES``), the documented fallback.

Each method entry says what the call does for the run:

* ``backward``: it runs the backward pass on its first argument;
* ``divides_accumulation``: it divides the loss by the configured accumulation steps itself
  (Accelerate's ``Accelerator.backward`` and DeepSpeed's engine do; Lightning Fabric's does not,
  its documentation has the user divide);
* ``scales_precision``: it applies fp16 loss scaling itself (no ``GradScaler`` needed);
* ``places``: it moves the modules/tensors it is given to the device;
* ``reshards_loaders``: the loaders it returns get a ``DistributedSampler`` per rank;
* ``seeds``: it seeds every generator (torch, NumPy, ``random``);
* ``builds_on_device``: used as a ``with`` block, the modules and tensors built inside it are
  created on the framework's device (Fabric's ``init_module`` / ``init_tensor``);
* ``skips_init``: used as a ``with`` block, the modules built inside it are never initialised
  (their weights stay on the meta device until loaded: Accelerate's ``init_empty_weights``);
* ``skips_init_keyword``: the same, only when this keyword argument is ``True``
  (``fabric.init_module(empty_init=True)``).

A ``...Trainer`` class of a package in ``TRAINER_PACKAGES`` (or a class of the file derived from
one) means what that entry says when it is built: Hugging Face's and TRL's trainers seed every
generator in their constructor.
"""
from __future__ import annotations

import re
from typing import Dict, NamedTuple, Optional, Tuple

from astroid import nodes

from ..semantic import dataflow, infer


class Meaning(NamedTuple):
    backward: bool = False
    divides_accumulation: bool = False
    scales_precision: bool = False
    places: bool = False
    reshards_loaders: bool = False
    seeds: bool = False
    builds_on_device: bool = False
    skips_init: bool = False
    skips_init_keyword: str = ""


#: Constructors (as resolved through the imports) and the framework their object belongs to.
CONSTRUCTORS: Dict[str, str] = {
    "accelerate.Accelerator": "accelerate",
    "accelerate.accelerator.Accelerator": "accelerate",
    "lightning.Fabric": "fabric",
    "lightning.fabric.Fabric": "fabric",
    "lightning_fabric.Fabric": "fabric",
    "lightning.fabric.fabric.Fabric": "fabric",
    "deepspeed.initialize": "deepspeed",
}

#: (framework, method) -> what the call means.
METHODS: Dict[Tuple[str, str], Meaning] = {
    ("accelerate", "backward"): Meaning(backward=True, divides_accumulation=True, scales_precision=True),
    ("accelerate", "prepare"): Meaning(places=True, reshards_loaders=True),
    ("fabric", "backward"): Meaning(backward=True, scales_precision=True),
    ("fabric", "setup"): Meaning(places=True),
    ("fabric", "setup_module"): Meaning(places=True),
    ("fabric", "setup_dataloaders"): Meaning(places=True, reshards_loaders=True),
    ("fabric", "to_device"): Meaning(places=True),
    ("fabric", "seed_everything"): Meaning(seeds=True),
    ("fabric", "init_module"): Meaning(builds_on_device=True, skips_init_keyword="empty_init"),
    ("fabric", "init_tensor"): Meaning(builds_on_device=True),
    ("deepspeed", "backward"): Meaning(backward=True, divides_accumulation=True, scales_precision=True),
}

#: Functions (resolved through the imports) and what a call of them means.
FUNCTIONS: Dict[str, Meaning] = {
    "lightning.seed_everything": Meaning(seeds=True),
    "lightning.pytorch.seed_everything": Meaning(seeds=True),
    "pytorch_lightning.seed_everything": Meaning(seeds=True),
    "lightning.fabric.seed_everything": Meaning(seeds=True),
    "lightning_fabric.seed_everything": Meaning(seeds=True),
    "transformers.set_seed": Meaning(seeds=True),
    "transformers.trainer_utils.set_seed": Meaning(seeds=True),
    "accelerate.utils.set_seed": Meaning(seeds=True),
    # LightningCLI adds a --seed_everything option and seeds before it builds the model (its default
    # seed_everything_default=True seeds with a seed it logs)
    "lightning.pytorch.cli.LightningCLI": Meaning(seeds=True),
    "pytorch_lightning.cli.LightningCLI": Meaning(seeds=True),
    "pytorch_lightning.utilities.cli.LightningCLI": Meaning(seeds=True),
    "accelerate.data_loader.prepare_data_loader": Meaning(reshards_loaders=True),
    "accelerate.init_empty_weights": Meaning(skips_init=True),
    "accelerate.big_modeling.init_empty_weights": Meaning(skips_init=True),
}

#: Packages (the first component of a dotted name resolved through the imports) whose
#: ``...Trainer`` classes mean this when built: ``transformers.Trainer``, ``trl.SFTTrainer``.
TRAINER_PACKAGES: Dict[str, Meaning] = {
    "transformers": Meaning(seeds=True),
    "trl": Meaning(seeds=True),
}

#: ``LightningModule`` as user code imports it: a model class whose training loop the trainer runs.
LIGHTNING_MODULES = frozenset(
    {"lightning.LightningModule", "lightning.pytorch.LightningModule", "pytorch_lightning.LightningModule",
     "lightning.pytorch.core.LightningModule", "pytorch_lightning.core.LightningModule"}
)

#: Methods of a framework trainer that train the model and loaders they are handed
#: (Lightning's ``trainer.fit(model, dl)``): a call of one shows a script trains.
FIT_METHODS = frozenset({"fit"})

#: Libraries whose estimators' ``fit`` trains no torch model (scikit-learn's ``LogisticRegression``,
#: XGBoost, LightGBM, Keras): a script whose only fit is one of theirs trains nothing these rules judge.
NON_TORCH_FITTERS = frozenset({
    "sklearn", "xgboost", "lightgbm", "catboost", "statsmodels", "keras", "tensorflow", "tf_keras", "prophet",
    "umap", "hdbscan", "gensim",
})


def fits_torch(call: nodes.Call) -> bool:
    """``receiver.fit(...)`` may train a torch model: its receiver is not bound to an estimator of a
    library whose ``fit`` trains something else (``NON_TORCH_FITTERS``)."""
    if not isinstance(call.func, nodes.Attribute):
        return True
    built = _constructed_by(call.func.expr, MAX_HOPS)
    return built is None or built.split(".")[0] not in NON_TORCH_FITTERS


#: Fallback when the receiver's binding cannot be followed: its last name says the framework.
RECEIVER_NAMES: Tuple[Tuple["re.Pattern[str]", str], ...] = (
    (re.compile(r"accelerat", re.IGNORECASE), "accelerate"),
    (re.compile(r"fabric", re.IGNORECASE), "fabric"),
    (re.compile(r"^(model_)?engine$|deepspeed", re.IGNORECASE), "deepspeed"),
)

#: How many rebindings are followed from a receiver to its constructor.
MAX_HOPS = 3


def framework_of(expr: nodes.NodeNG) -> Optional[str]:
    """The framework whose object ``expr`` is (``"accelerate"``, ``"fabric"``, ``"deepspeed"``),
    from the constructor its binding reaches, else from its name; None when neither says."""
    built = _constructed_by(expr, MAX_HOPS)
    if built is not None:
        return CONSTRUCTORS.get(built)
    name = dataflow.terminal_name(expr)
    if name is None:
        return None
    for pattern, framework in RECEIVER_NAMES:
        if pattern.search(name):
            return framework
    return None


def method_meaning(call: nodes.Call) -> Optional[Meaning]:
    """What ``receiver.method(...)`` means when the receiver is a framework object."""
    if not isinstance(call.func, nodes.Attribute):
        return None
    method = str(call.func.attrname)
    if not any(method == m for _, m in METHODS):
        return None  # cheap: no framework has a method of that name
    framework = framework_of(call.func.expr)
    return METHODS.get((framework, method)) if framework is not None else None


def function_meaning(call: nodes.Call) -> Optional[Meaning]:
    """What a call of a framework function (``L.seed_everything(42)``) means."""
    dotted = infer.dotted_name(call.func)
    return FUNCTIONS.get(dotted) if dotted is not None else None


def call_meaning(call: nodes.Call) -> Optional[Meaning]:
    """What a call of a framework method or function means, or None."""
    return method_meaning(call) or function_meaning(call)


def trainer_meaning(dotted: Optional[str]) -> Optional[Meaning]:
    """What building the class ``dotted`` (resolved through the imports) means when it is a
    framework's ``...Trainer`` (``TRAINER_PACKAGES``), else None."""
    if dotted is None or not dotted.endswith("Trainer"):
        return None
    return TRAINER_PACKAGES.get(dotted.split(".")[0])


def _constructed_by(expr: nodes.NodeNG, hops: int) -> Optional[str]:
    """The dotted name of the constructor call ``expr`` is bound to (``lightning.Fabric``), or None.
    ``engine, optimizer, _, _ = deepspeed.initialize(...)`` binds ``engine`` to that call too."""
    built = _constructor(expr, hops)
    return infer.dotted_name(built.func) if built is not None else None


def _constructor(expr: nodes.NodeNG, hops: int) -> Optional[nodes.Call]:
    """The constructor call ``expr`` is bound to (``_constructed_by``), or None."""
    if hops <= 0:
        return None
    if isinstance(expr, nodes.Call):
        return expr
    if isinstance(expr, nodes.Name):
        binding = dataflow.single_binding(expr)
        if binding is not None and isinstance(binding.parent, nodes.Tuple):
            assign = binding.parent.parent
            if isinstance(assign, nodes.Assign) and isinstance(assign.value, nodes.Call):
                return assign.value
    values = dataflow.assigned_values(expr) if isinstance(expr, (nodes.Name, nodes.Attribute)) else None
    if not values or len(values) != 1:
        return None
    return _constructor(values[0], hops - 1)


#: Keywords of a trainer's constructor that make its ``fit`` a smoke test of the code, not a training run:
#: Lightning's ``fast_dev_run`` runs one batch (or the number given) of training, validation and testing
#: "to find any bugs", with checkpointing, logging and the epoch loop turned off (``lightning.pytorch.Trainer``
#: documentation, "fast_dev_run").
SMOKE_TEST_KEYWORDS = frozenset({"fast_dev_run"})


def smoke_test_fit(call: nodes.Call) -> bool:
    """``trainer.fit(...)`` on a trainer built with a ``SMOKE_TEST_KEYWORDS`` keyword set to True or a
    positive number written in the call (``Trainer(fast_dev_run=True)``)."""
    if not isinstance(call.func, nodes.Attribute) or call.func.attrname not in FIT_METHODS:
        return False
    built = _constructor(call.func.expr, MAX_HOPS)
    if built is None:
        return False
    for keyword in built.keywords or ():
        if keyword.arg in SMOKE_TEST_KEYWORDS and isinstance(keyword.value, nodes.Const):
            value = keyword.value.value
            return value is True or (type(value) is int and value > 0)
    return False
