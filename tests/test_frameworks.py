"""The framework table (``analysis/training/frameworks.py``): every entry, read from code as users write it."""
from __future__ import annotations

from typing import Optional

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.training import device, frameworks
from flake8_torch_preflight.analysis.setup.build import build_module

#: How each framework's object is built in user code (the receiver is always named ``obj``).
BUILDERS = {
    "accelerate": "from accelerate import Accelerator\nobj = Accelerator(gradient_accumulation_steps=4)\n",
    "fabric": "import lightning as L\nobj = L.Fabric(accelerator='cuda', precision='bf16-mixed')\n",
    "deepspeed": "import deepspeed\nobj, optimizer, _, _ = deepspeed.initialize(model=model, config='ds.json')\n",
}


def _last_call(source: str) -> nodes.Call:
    module = build_module(source, "/tmp/tp_frameworks_case.py")
    return list(module.nodes_of_class(nodes.Call))[-1]


@pytest.mark.parametrize("framework, method", sorted(frameworks.METHODS), ids=lambda v: str(v))
def test_every_method_entry_is_read_from_its_constructor(framework: str, method: str) -> None:
    call = _last_call(BUILDERS[framework] + "obj.{}(x)\n".format(method))
    assert frameworks.method_meaning(call) == frameworks.METHODS[(framework, method)]


@pytest.mark.parametrize("dotted", sorted(frameworks.FUNCTIONS))
def test_every_function_entry_is_read_through_the_imports(dotted: str) -> None:
    module, name = dotted.rsplit(".", 1)
    call = _last_call("import {} as fw\nfw.{}(42)\n".format(module, name))
    assert frameworks.function_meaning(call) == frameworks.FUNCTIONS[dotted]
    call = _last_call("from {} import {}\n{}(42)\n".format(module, name, name))
    assert frameworks.function_meaning(call) == frameworks.FUNCTIONS[dotted]


def test_fabric_backward_does_not_divide_for_accumulation_but_accelerate_does() -> None:
    fabric = frameworks.method_meaning(_last_call(BUILDERS["fabric"] + "obj.backward(loss)\n"))
    accelerate = frameworks.method_meaning(_last_call(BUILDERS["accelerate"] + "obj.backward(loss)\n"))
    assert fabric is not None and fabric.backward and not fabric.divides_accumulation and fabric.scales_precision
    assert accelerate is not None and accelerate.backward and accelerate.divides_accumulation


def test_receiver_followed_through_self_and_rebinding() -> None:
    source = (
        "import lightning as L\n"
        "class Runner:\n"
        "    def __init__(self):\n"
        "        self.fabric = L.Fabric()\n"
        "    def step(self, loss):\n"
        "        f = self.fabric\n"
        "        f.backward(loss)\n"
    )
    meaning: Optional[frameworks.Meaning] = frameworks.method_meaning(_last_call(source))
    assert meaning == frameworks.METHODS[("fabric", "backward")]


def test_an_unfollowable_receiver_is_named_and_anything_else_is_none() -> None:
    by_name = _last_call("def train(accelerator, loss):\n    accelerator.backward(loss)\n")
    assert frameworks.method_meaning(by_name) == frameworks.METHODS[("accelerate", "backward")]
    tensor = _last_call("import torch\nloss = torch.ones(1)\nloss.backward()\n")
    assert frameworks.method_meaning(tensor) is None
    other = _last_call("class Engine2:\n    pass\nobj = Engine2()\nobj.backward(x)\n")
    assert frameworks.method_meaning(other) is None  # built by a constructor of no framework
    assert frameworks.function_meaning(_last_call("import random\nrandom.seed(1)\n")) is None


def _built_call(source: str) -> nodes.Call:
    """The call ``Net(...)`` in ``source``: what a ``with`` block around it builds."""
    module = build_module(source, "/tmp/tp_frameworks_case.py")
    return next(c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == "nn.Linear")


_FABRIC = "import lightning as L\nimport torch.nn as nn\nfabric = L.Fabric(accelerator='cuda')\n"


@pytest.mark.parametrize(
    "context, on_device, empty",
    [
        ("fabric.init_module(empty_init=True)", "device", True),
        ("fabric.init_module(empty_init=False)", "device", False),
        ("fabric.init_module()", "device", False),
        ("fabric.init_tensor()", "device", False),
    ],
)
def test_fabric_contexts_build_on_its_device_and_empty_init_skips_initialisation(
    context: str, on_device: str, empty: bool
) -> None:
    call = _built_call(_FABRIC + "with {}:\n    layer = nn.Linear(4, 4)\n".format(context))
    assert device.context_device(call) == on_device
    assert device.built_empty(call) is empty


def test_the_fabric_context_entries_say_what_the_reader_needs() -> None:
    assert frameworks.METHODS[("fabric", "init_module")] == frameworks.Meaning(
        builds_on_device=True, skips_init_keyword="empty_init"
    )
    assert frameworks.METHODS[("fabric", "init_tensor")] == frameworks.Meaning(builds_on_device=True)


@pytest.mark.parametrize("dotted", ["accelerate.init_empty_weights", "accelerate.big_modeling.init_empty_weights"])
def test_accelerate_init_empty_weights_skips_initialisation(dotted: str) -> None:
    assert frameworks.FUNCTIONS[dotted] == frameworks.Meaning(skips_init=True)
    module, name = dotted.rsplit(".", 1)
    for imports, spelled in (
        ("from {} import {}\n".format(module, name), name),
        ("import {} as fw\n".format(module), "fw." + name),
    ):
        call = _built_call(imports + "import torch.nn as nn\nwith {}():\n    layer = nn.Linear(4, 4)\n".format(spelled))
        assert device.built_empty(call) is True
        assert device.context_device(call) is None  # it builds on the meta device, not on a GPU


def test_a_context_of_no_framework_means_nothing() -> None:
    source = (
        "import torch.nn as nn\nclass Builder:\n    pass\nobj = Builder()\n"
        "with obj.init_module(empty_init=True):\n    layer = nn.Linear(4, 4)\n"
    )
    call = _built_call(source)
    assert device.built_empty(call) is False and device.context_device(call) is None
    outside = _built_call(_FABRIC + "with fabric.init_module(empty_init=True):\n    pass\nlayer = nn.Linear(4, 4)\n")
    assert device.built_empty(outside) is False and device.context_device(outside) is None


@pytest.mark.parametrize(
    "dotted, seeds",
    [
        ("transformers.Trainer", True),
        ("transformers.trainer.Seq2SeqTrainer", True),
        ("trl.SFTTrainer", True),
        ("transformers.TrainingArguments", False),
        ("lightning.Trainer", False),
        ("mytrainers.Trainer", False),
        (None, False),
    ],
)
def test_trainer_classes_of_the_trainer_packages_seed_when_built(dotted: Optional[str], seeds: bool) -> None:
    meaning = frameworks.trainer_meaning(dotted)
    assert (meaning is not None and meaning.seeds) is seeds


@pytest.mark.parametrize(
    "imports, seeder",
    [
        ("import lightning as L\n", "L.seed_everything(seed)"),
        ("import pytorch_lightning as pl\n", "pl.seed_everything(seed)"),
        ("from transformers import AutoModel\n", "transformers.set_seed(seed)"),
        ("", "torch.manual_seed(seed)"),
    ],
)
def test_the_unseeded_run_fix_names_the_framework_seeder(imports: str, seeder: str) -> None:
    """TP009's fix names the one call of the framework the file uses that seeds torch, NumPy and random."""
    from flake8_torch_preflight import engine
    from flake8_torch_preflight.settings import Settings

    source = imports + (
        "import torch\n"
        "model = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in torch.load('batches.pt'):\n"
        "    model(x).sum().backward()\n"
        "    opt.step()\n"
        "    opt.zero_grad()\n"
    )
    found = engine.analyse_file("run.py", source.splitlines(True), Settings(selected=frozenset({"TP009"})))
    messages = [text for _, _, text in found["TP009"]]
    assert len(messages) == 1 and messages[0].endswith("add " + seeder)


@pytest.mark.parametrize("root", sorted(frameworks.NON_TORCH_FITTERS))
def test_a_fit_of_another_library_trains_no_torch_model(root: str) -> None:
    """``clf.fit(X, y)`` on an estimator of ``NON_TORCH_FITTERS``; a trainer's or an unknown object's fit may."""
    call = _last_call("from {}.models import Estimator\nclf = Estimator(3)\nclf.fit(X, y)\n".format(root))
    assert not frameworks.fits_torch(call)


@pytest.mark.parametrize("source", [
    "import lightning as L\ntrainer = L.Trainer(max_epochs=3)\ntrainer.fit(model, loader)\n",
    "learner.fit(5)\n",
    "from skorch import NeuralNetClassifier\nnet = NeuralNetClassifier(Module)\nnet.fit(X, y)\n",
])
def test_a_fit_that_may_train_a_torch_model(source: str) -> None:
    assert frameworks.fits_torch(_last_call(source))


@pytest.mark.parametrize(
    "construction, expected",
    [
        ("pl.Trainer(fast_dev_run=True)", True),
        ("pl.Trainer(fast_dev_run=5, accelerator='gpu')", True),
        ("pl.Trainer(fast_dev_run=False)", False),
        ("pl.Trainer(fast_dev_run=0)", False),
        ("pl.Trainer(max_epochs=10)", False),
    ],
)
def test_a_fast_dev_run_fit_is_a_smoke_test(construction: str, expected: bool) -> None:
    """Lightning's ``fast_dev_run`` makes ``trainer.fit`` a smoke test of the code, not a training run."""
    source = "import pytorch_lightning as pl\ntrainer = " + construction + "\ntrainer.fit(model, loader)\n"
    module = build_module(source, "/tmp/tp_frameworks_case.py")
    calls = list(module.nodes_of_class(nodes.Call))
    fit = [c for c in calls if isinstance(c.func, nodes.Attribute) and c.func.attrname == "fit"][0]
    assert frameworks.smoke_test_fit(fit) is expected
