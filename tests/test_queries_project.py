"""``analysis.semantic.project``: the project around the checked file, read as text (never imported),
and TP002's use of it: an evaluation function whose callers live in other modules."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest
from astroid import nodes

from flake8_torch_preflight import engine
from flake8_torch_preflight.analysis.semantic import project
from flake8_torch_preflight.analysis.setup import brain, build
from flake8_torch_preflight.analysis.setup.build import build_module
from flake8_torch_preflight.analysis.training import evaluation

VALIDATION = textwrap.dedent(
    """\
    import torch


    def validate(model, loader, device):
        model.eval()
        total = 0.0
        for x, y in loader:
            total += torch.nn.functional.l1_loss(model(x.to(device)), y.to(device)).item()
        return total
    """
)

TRAINER = textwrap.dedent(
    """\
    import torch


    class BaseTrainer(object):
        def __init__(self, model, optimizer):
            self.model, self.optimizer = model, optimizer

        def run_epoch(self, phase, loader):
            if phase == "train":
                self.model.train()
            else:
                self.model.eval()
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(self.model(x.cuda()), y.cuda())
                if phase == "train":
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()

        def val(self, loader):
            return self.run_epoch("val", loader)

        def train(self, loader):
            return self.run_epoch("train", loader)
    """
)


#: A README naming an accelerator: the project may run on a GPU (``device.cpu_project``).
GPU_README = "Trains on a GPU.\n"


def _project(tmp_path: Path, files: Dict[str, str], marker: str = "requirements.txt") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / marker).mkdir() if marker == ".git" else (tmp_path / marker).write_text("")  # an application
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _function(path: Path, name: str) -> nodes.FunctionDef:
    module = build_module(path.read_text(), str(path))
    return next(f for f in module.nodes_of_class(nodes.FunctionDef) if f.name == name)


def _tp002(path: Path) -> List[int]:
    source = path.read_text()
    found = engine.analyse_file(str(path), source.splitlines(keepends=True), build.Settings(), ast.parse(source))
    return [finding.line for finding in found.get("TP002", [])]


CALL_UNDER_NO_GRAD = (
    "import torch\nfrom .validation import validate\n\n\ndef fit(model, loader, device):\n"
    "    with torch.no_grad():\n        validate(model, loader, device)\n"
)
CALL_WITH_GRAD = (
    "from utils import validation\n\n\ndef fit(model, loader, device):\n"
    "    validation.validate(model, loader, device)\n"
)
CALL_IN_DECORATED = (
    "import torch\nfrom utils.validation import validate as check\n\n\n@torch.inference_mode()\n"
    "def fit(model, loader, device):\n    check(model, loader, device)\n"
)


def test_calls_of_a_function_in_other_modules(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "utils/validation.py": VALIDATION, "utils/train.py": CALL_UNDER_NO_GRAD, "run.py": CALL_WITH_GRAD,
        "other.py": CALL_IN_DECORATED, "unrelated.py": "def validate():\n    pass\n\nvalidate()\n",
    })
    calls = project.external_calls(_function(root / "utils/validation.py", "validate"))
    assert calls is not None
    found = sorted((Path(c.path).name, c.line, c.grad_off) for c in calls)
    assert found == [("other.py", 7, True), ("run.py", 5, False), ("train.py", 7, True)]


def test_calls_of_a_method_and_of_nothing(tmp_path: Path) -> None:
    root = _project(tmp_path, {"trainer.py": TRAINER, "main.py": "def main(t, loader):\n    t.train(loader)\n"})
    assert project.external_calls(_function(root / "trainer.py", "val")) == []
    assert [c.line for c in project.external_calls(_function(root / "trainer.py", "train")) or []] == [2]


def test_calls_of_a_method_leave_another_class_calling_its_own(tmp_path: Path) -> None:
    """``self.train(x)`` in a class that defines ``train`` is that class's call; in one that does not
    (an inherited method, a mixin), it may be ``Trainer.train``'s."""
    root = _project(tmp_path, {
        "trainer.py": TRAINER,
        "seq2seq.py": "class Seq:\n    def train(self, x):\n        pass\n\n    def fit(self, x):\n        self.train(x)\n",
        "mixin.py": "class Fit:\n    def fit(self, x):\n        self.train(x)\n",
    })
    calls = project.external_calls(_function(root / "trainer.py", "train")) or []
    assert [(Path(c.path).name, c.line) for c in calls] == [("mixin.py", 3)]


def test_calls_of_a_function_follow_the_import_to_its_file(tmp_path: Path) -> None:
    """``from trainer import iteration`` in ``main.py`` loads the ``trainer.py`` beside it: a debugging copy
    in ``check_cuda/`` with the same name is not called; an import no folder holds may reach either."""
    trainer = "def iteration(model, loader):\n    return [model(x) for x in loader]\n"
    root = _project(tmp_path, {
        "trainer.py": trainer, "check_cuda/trainer.py": trainer,
        "main.py": "from trainer import iteration\n\niteration(None, [])\n",
        "tools/run.py": "import sys\nsys.path.insert(0, 'lib')\nfrom helpers.trainer import iteration\n\niteration(None, [])\n",
    })
    copy = project.external_calls(_function(root / "check_cuda" / "trainer.py", "iteration")) or []
    real = project.external_calls(_function(root / "trainer.py", "iteration")) or []
    assert sorted(Path(c.path).name for c in real) == ["main.py", "run.py"]
    assert [Path(c.path).name for c in copy] == ["run.py"]


def test_a_file_not_on_disk_has_no_project(tmp_path: Path) -> None:
    module = build_module(VALIDATION, str(tmp_path / "missing.py"))
    func = next(f for f in module.nodes_of_class(nodes.FunctionDef) if f.name == "validate")
    assert project.external_calls(func) is None


def test_tp002_reads_the_callers_in_other_modules(tmp_path: Path) -> None:
    root = _project(tmp_path, {"utils/validation.py": VALIDATION, "utils/train.py": CALL_UNDER_NO_GRAD})
    assert _tp002(root / "utils/validation.py") == []  # every caller turns autograd off
    (root / "run.py").write_text(CALL_WITH_GRAD)
    project.forget()  # a new run reads the tree afresh
    assert _tp002(root / "utils/validation.py") == [8]  # one caller does not


BUILDS_TRAINER = "from trainer import BaseTrainer\n\n\ndef main(model, optimizer, loader):\n" \
    "    t = BaseTrainer(model, optimizer)\n    t.train(loader)\n"


def test_tp002_leaves_an_evaluation_nobody_runs(tmp_path: Path) -> None:
    root = _project(tmp_path, {"trainer.py": TRAINER, "main.py": BUILDS_TRAINER})
    assert _tp002(root / "trainer.py") == []  # val() is called nowhere in the project
    (root / "main.py").write_text(BUILDS_TRAINER + "    t.val(loader)\n")
    project.forget()
    assert _tp002(root / "trainer.py") == [14]


def test_tp002_reports_an_uncalled_method_of_a_package(tmp_path: Path) -> None:
    """An installable package's classes are an API: code outside the project may call val()."""
    root = _project(tmp_path, {"trainer.py": TRAINER, "main.py": "def main(t, loader):\n    t.train(loader)\n"},
                    marker="pyproject.toml")
    assert project.packaged(str(root / "trainer.py"))
    assert _tp002(root / "trainer.py") == [14]


OPTIONS = textwrap.dedent(
    """\
    import random

    import numpy as np
    import torch


    class Options:
        def __init__(self, seeded=True):
            self.lr = 0.1
            if seeded:
                self._set_seed()

        def _set_seed(self, seed=0):
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
    """
)

TRAIN = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import DataLoader

    from options import Options

    opt = Options()
    model = torch.nn.Linear(4, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=opt.lr)
    for x, y in DataLoader(torch.load("data.pt"), batch_size=8, shuffle=True):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()
        optimizer.step()
    torch.save(model.state_dict(), "model.pt")
    """
)


def _codes(path: Path, code: str) -> List[int]:
    source = path.read_text()
    found = engine.analyse_file(str(path), source.splitlines(keepends=True), build.Settings(), ast.parse(source))
    return [finding.line for finding in found.get(code, [])]


def test_tp009_reads_a_seed_set_by_a_project_class_constructor(tmp_path: Path) -> None:
    """An options class of another module whose constructor seeds through a method of its own."""
    root = _project(tmp_path, {"options.py": OPTIONS, "train.py": TRAIN})
    assert _codes(root / "train.py", "TP009") == []
    unseeded = OPTIONS.replace("            self._set_seed()\n", "            pass\n")
    assert unseeded != OPTIONS
    (root / "options.py").write_text(unseeded)
    project.forget()
    assert _codes(root / "train.py", "TP009") != []


UNSEEDED_RUN = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import DataLoader
    {imports}

    model = torch.nn.Linear(4, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in DataLoader(torch.load("train.pt"), batch_size=8, shuffle=True):
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """
)

MODELING = "import torch\n\n\nclass Head(torch.nn.Module):\n    pass\n\n\nSIZES = (1, 2)\n"


def _missing(path: Path) -> "str | None":
    return project.missing_import(build_module(path.read_text(), str(path)))


def test_missing_import_of_a_name_the_project_module_lacks(tmp_path: Path) -> None:
    """A stale script importing what its package no longer defines (``src`` layout, from a scripts folder)."""
    root = _project(tmp_path, {
        "src/lib/__init__.py": "", "src/lib/modeling.py": MODELING,
        "scripts/run.py": "from lib.modeling import Head, Wrapper\n",
        "scripts/ok.py": "from lib.modeling import Head, SIZES\nfrom lib import modeling\n",
    }, marker="setup.py")
    assert _missing(root / "scripts" / "run.py") == "from lib.modeling import Wrapper"
    assert _missing(root / "scripts" / "ok.py") is None


def test_missing_import_is_not_judged_where_it_cannot_be(tmp_path: Path) -> None:
    """Installed and standard-library modules, an import under ``try``, a module binding names dynamically
    (a star import), a namespace folder, a script's own folder shadowing the root's module, no root marker."""
    root = _project(tmp_path, {
        "lib/__init__.py": "", "lib/modeling.py": MODELING, "lib/dynamic.py": "from os.path import *\n",
        "tools/utils.py": "def helper():\n    pass\n", "utils/__init__.py": "",
        "data/readme.txt": "",
        "run.py": (
            "from collections import OrderedDict\nfrom numpy import zeros\n"
            "try:\n    from lib.modeling import Missing\nexcept ImportError:\n    Missing = None\n"
            "from lib.dynamic import join\nfrom data.loaders import load\n"
        ),
        "tools/run.py": "from utils import helper\n",
    })
    assert _missing(root / "run.py") is None
    assert _missing(root / "tools" / "run.py") is None  # the script's folder comes first on sys.path
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "lib.py").write_text("X = 1\n")
    (loose / "run.py").write_text("from lib import Y\n")
    assert project.marked_root(str(loose / "run.py")) == str(tmp_path)  # the marker above still counts
    assert _missing(loose / "run.py") == "from lib import Y"


def test_missing_import_of_a_module_of_another_folder(tmp_path: Path) -> None:
    """A script copied from a sibling folder still imports that folder's module: no base of the script
    holds it, so it stops with an ImportError; not when the project puts folders on the import path or
    is an installable package."""
    files = {
        "pmf/ml_data.py": "def movie_lens():\n    pass\n", "pmf/train.py": "import ml_data\n",
        "bpr/train.py": "import torch\nimport ml_data\n", "bpr/other.py": "from ml_data import movie_lens\n",
        "bpr/plain.py": "import numpy\nfrom json import loads\n",
        "style/__init__.py": "", "style/utils.py": "X = 1\n", "style/run.py": "import utils\n",
        "pmf/utils.py": "X = 2\n",
    }
    root = _project(tmp_path / "a", files)
    assert _missing(root / "bpr" / "train.py") == "import ml_data"
    assert _missing(root / "bpr" / "other.py") == "from ml_data import movie_lens"
    assert _missing(root / "pmf" / "train.py") is None
    assert _missing(root / "bpr" / "plain.py") is None  # a module the project does not hold: installed
    assert _missing(root / "style" / "run.py") is None  # beside the script, in a package folder: found when it runs
    shell = _project(tmp_path / "b", dict(files, **{"run.sh": "PYTHONPATH=pmf python bpr/train.py\n"}))
    assert _missing(shell / "bpr" / "train.py") is None
    installed = _project(tmp_path / "c", files, marker="setup.py")
    assert _missing(installed / "bpr" / "train.py") is None


def test_missing_relative_import_in_a_copied_folder(tmp_path: Path) -> None:
    """A relative import of a module its folder lacks (a pipeline copied into a folder without the
    ``model.py`` it imports) fails whatever is installed; one its folder holds does not."""
    root = _project(tmp_path, {
        "unets/script/pipeline.py": "from .model import UNet\n",
        "pools/script/pipeline.py": "from .model import Pool\nfrom .layers import Dense\n",
        "pools/script/model.py": "class Pool:\n    pass\n", "pools/script/layers/__init__.py": "Dense = 1\n",
    })
    assert _missing(root / "unets" / "script" / "pipeline.py") == "from .model import UNet"
    assert _missing(root / "pools" / "script" / "pipeline.py") is None


def test_tp012_leaves_a_top_level_loader_nothing_reads(tmp_path: Path) -> None:
    """A module-level loader that no statement reads and no other file names is dead; once another
    module names it (it may import it), it is judged as before."""
    script = textwrap.dedent("""\
        import torch
        from torch.utils.data import DataLoader
        from torchvision.datasets import ImageFolder
        from torchvision import transforms

        train_loader = DataLoader(ImageFolder("train", transforms.ToTensor()), batch_size=8, shuffle=True)
        val_loader = DataLoader(ImageFolder("val", transforms.ToTensor()), batch_size=8)
        model = torch.nn.Conv2d(3, 2, 3).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for epoch in range(10):
            for images, labels in train_loader:
                optimizer.zero_grad()
                model(images.cuda()).mean().backward()
                optimizer.step()
        """)
    root = _project(tmp_path / "a", {"train.py": script, "other.py": "x = 1\n"})
    assert _codes(root / "train.py", "TP012") == [6]
    named = _project(tmp_path / "b", {"train.py": script, "evaluate.py": "from train import val_loader\n"})
    assert _codes(named / "train.py", "TP012") == [6, 7]


def test_missing_submodule_of_a_project_package(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "models/__init__.py": "from .head import Head\n", "models/head.py": MODELING,
        "train.py": "import models.psp_net\n", "eval.py": "from models import head, Head, psp_net\n",
    })
    assert _missing(root / "train.py") == "import models.psp_net"
    assert _missing(root / "eval.py") == "from models import psp_net"


def test_no_finding_in_a_file_that_cannot_import_or_a_scratch_folder(tmp_path: Path) -> None:
    """The shipped-code policy for every code: the same unseeded run is reported where it can run, and
    not in a copy under the project's ``tmp/`` or ``bak/`` folder or in a script whose project import fails."""
    root = _project(tmp_path, {
        "lib/__init__.py": "", "lib/modeling.py": MODELING,
        "train.py": UNSEEDED_RUN.format(imports="from lib.modeling import Head"),
        "stale.py": UNSEEDED_RUN.format(imports="from lib.modeling import Wrapper"),
        "tmp/train.py": UNSEEDED_RUN.format(imports=""),
        "pong/bak/train.py": UNSEEDED_RUN.format(imports=""),
    })
    assert _codes(root / "train.py", "TP009") == [5]
    assert _codes(root / "stale.py", "TP009") == []
    assert _codes(root / "tmp" / "train.py", "TP009") == []
    assert _codes(root / "pong" / "bak" / "train.py", "TP009") == []  # a backup copy of a run


AGENT = (
    "import torch\nimport torch.nn as nn\n\n\nclass Agent:\n    def __init__(self):\n"
    "        self.actor = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))\n"
    "        self.optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)\n\n"
    "    def evaluate(self, s):\n        s = torch.as_tensor(s, dtype=torch.float)\n"
    "        return self.actor(s).detach().numpy().argmax()\n\n"
    "    def update(self, states, advantages):\n        loss = -(self.actor(states) * advantages).mean()\n"
    "        self.optimizer.zero_grad()\n        loss.backward()\n        self.optimizer.step()\n"
)
ROLLOUT = (
    "from agent import Agent\n\n\ndef evaluate_policy(env, agent):\n    s, done = env.reset(), False\n"
    "    while not done:\n        a = agent.evaluate(s)\n        s, r, done, _ = env.step(a)\n"
)
BATCHES = "def score(agent, loader):\n    for batch in loader:\n        agent.evaluate(batch)\n"


def test_calls_in_a_simulator_loop_of_another_module(tmp_path: Path) -> None:
    root = _project(tmp_path, {"agent.py": AGENT, "main.py": ROLLOUT, "README.md": GPU_README})
    calls = project.external_calls(_function(root / "agent.py", "evaluate"))
    assert calls is not None and [(c.line, evaluation.rollout_call(c)) for c in calls] == [(7, True)]
    assert _tp002(root / "agent.py") == []  # one observation per env.step: a tiny graph, freed at each step
    (root / "score.py").write_text(BATCHES)  # a loop over batches calls it too: an evaluation with autograd on
    project.forget()
    assert _tp002(root / "agent.py") == [12]


def test_absolute_import_from_the_root_of_a_nested_package(tmp_path: Path) -> None:
    """``from pkg.fid.inception import Net`` in ``pkg/fid/score.py`` (a module of the file's own folder
    named by its full path), even with a ``requirements.txt`` of its own in that folder: resolved from
    the repository's root, the outer marked folder."""
    from flake8_torch_preflight.analysis.setup import brain

    root = _project(tmp_path, {
        "pkg/__init__.py": "", "pkg/fid/__init__.py": "", "pkg/fid/requirements.txt": "scipy\n",
        "pkg/fid/inception.py": "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    pass\n",
        "pkg/fid/score.py": "from pkg.fid.inception import Net\n\nmodel = Net()\n",
    }, marker=".git")
    assert project.marked_roots(str(root / "pkg/fid")) == (str(root / "pkg/fid"), str(root))
    path = root / "pkg/fid/score.py"
    brain.begin_file(str(path))
    try:
        module = build_module(path.read_text(), str(path))
        call = next(module.nodes_of_class(nodes.Call))
        assert [getattr(v, "name", None) for v in call.func.inferred()] == ["Net"]
    finally:
        brain.end_file()


SAMPLING = (
    "import torch\n\n\ndef forward(model, x):\n    model.eval()\n    logits = model(x)\n"
    "    return logits.softmax(-1)\n\n\ndef get_logp(model, x):\n    return forward(model, x).log()\n\n\n"
    "def sample(model, x):\n    return torch.multinomial(forward(model, x), 1)\n\n\n"
    "@torch.no_grad()\ndef sample_n(model, x, n):\n    return [sample(model, x) for _ in range(n)]\n"
)
SEARCH = (
    "import torch\nfrom sampling import get_logp, sample_n\n\n\n@torch.no_grad()\n"
    "def beam_search(model, x):\n    return get_logp(model, x), sample_n(model, x, 4)\n"
)
SCORE = (
    "from sampling import get_logp\n\n\ndef score(model, loader):\n    return [get_logp(model, x) for x in loader]\n"
)


def test_every_path_to_a_helper_has_autograd_off(tmp_path: Path) -> None:
    """``forward()`` is called by ``sample()``, which only a ``no_grad`` function of the file calls, and by
    ``get_logp()``, which only another module's ``no_grad`` search calls: silent.  A third module that
    calls ``get_logp()`` with autograd on makes the forward an evaluation with autograd on."""
    root = _project(tmp_path, {"sampling.py": SAMPLING, "search.py": SEARCH, "README.md": GPU_README})
    assert _tp002(root / "sampling.py") == []
    (root / "score.py").write_text(SCORE)
    project.forget()
    assert _tp002(root / "sampling.py") == [6]


NAMESPACE_MODEL = (
    "import torch.nn as nn\n\n\nclass Translator(nn.Module):\n    def __init__(self, vocab, dim):\n"
    "        super().__init__()\n        self.embed = Embedding(vocab, dim)\n"
    "        self.out = Projection(dim, vocab)\n\n"
    "    def forward(self, x):\n        return self.out(self.embed(x))\n\n\n"
    "class Embedding(nn.Module):\n    def __init__(self, vocab, dim):\n        super().__init__()\n"
    "        self.table = nn.Embedding(vocab, dim)\n\n    def forward(self, x):\n        return self.table(x)\n\n\n"
    "class Projection(nn.Module):\n    def __init__(self, dim, vocab):\n        super().__init__()\n"
    "        self.linear = nn.Linear(dim, vocab)\n\n    def forward(self, x):\n        return self.linear(x)\n"
)
WARMUP_OPTIMIZER = (
    "class WarmupOptimizer:\n    def __init__(self, optimizer, warmup):\n        self.optimizer = optimizer\n"
    "        self.warmup = warmup\n        self.steps = 0\n\n    def step(self):\n        self.steps += 1\n"
    "        for group in self.optimizer.param_groups:\n            group['lr'] = min(1.0, self.steps / self.warmup)\n"
    "        self.optimizer.step()\n\n    def zero_grad(self):\n        self.optimizer.zero_grad()\n"
)
NAMESPACE_TRAIN = textwrap.dedent(
    """\
    import torch
    from torch.optim import Adam

    from models.definitions.translator import Translator
    from utils.optimizers import WarmupOptimizer


    def train(batches, device):
        model = Translator(1000, 64).to(device)
        optimizer = WarmupOptimizer(Adam(model.parameters(), betas=(0.9, 0.98)), 4000)
        for epoch in range(20):
            for x, y in batches:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
                loss.backward()
                optimizer.step()
        torch.save(model.state_dict(), "translator.pt")


    if __name__ == "__main__":
        train(torch.load("batches.pt"), torch.device("cuda"))
    """
)


def test_tp009_reads_a_model_of_a_namespace_package_stepped_through_a_wrapper(tmp_path: Path) -> None:
    """The model class lives in ``models/definitions/`` with no ``__init__.py`` (a PEP 420 namespace
    package), is built and moved in one expression (``Translator(...).to(device)``) and trained through a
    warm-up wrapper whose ``step()`` steps the Adam it holds: an unseeded run whose weights are drawn
    (reported on the construction).  A folder of configs with no ``.py`` file is no package of the project."""
    root = _project(tmp_path, {
        "models/definitions/translator.py": NAMESPACE_MODEL,
        "utils/optimizers.py": WARMUP_OPTIMIZER,
        "train.py": NAMESPACE_TRAIN,
        "configs/base.yaml": "lr: 1.0\n",
    })
    assert _codes(root / "train.py", "TP009") == [9]
    seeded = NAMESPACE_TRAIN.replace("    model = Translator(", "    torch.manual_seed(0)\n    model = Translator(")
    (root / "train.py").write_text(seeded)
    assert _codes(root / "train.py", "TP009") == []
    brain.begin_file(str(root / "train.py"))
    assert brain.project_module("models") and not brain.project_module("configs")


EVALUATIONS = textwrap.dedent(
    """\
    import torch


    def train(model, loader, optimizer):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


    def evaluate(model, loader):
        from lib.modeling import Head
        model.eval()
        return [model(x).sum().item() for x, _ in loader]


    def evaluate_stale(model, loader):
        from src.models.rotation import Rotation
        model.eval()
        return [model(x).sum().item() for x, _ in loader]


    def main(model, loader, optimizer):
        for epoch in range(10):
            train(model, loader, optimizer)
            evaluate(model, loader)
            evaluate_stale(model, loader)


    if __name__ == "__main__":
        main(*torch.load("run.pt"))
    """
)


def test_no_finding_after_a_function_import_that_fails(tmp_path: Path) -> None:
    """A function whose own import of the project's code fails stops there: what follows it never runs
    (an evaluation copied from another repository, importing its ``src`` package); the same function
    importing a module the project holds is reported."""
    root = _project(tmp_path, {"lib/__init__.py": "", "lib/modeling.py": MODELING, "train.py": EVALUATIONS, "README.md": GPU_README})
    module = build_module(EVALUATIONS, str(root / "train.py"))
    forwards = {
        call.scope().parent.scope().name if isinstance(call.scope(), nodes.ComprehensionScope) else call.scope().name:
        call for call in module.nodes_of_class(nodes.Call) if call.as_string().startswith("model(x)")
    }
    assert project.missing_import_before(forwards["evaluate_stale"]) == "from src.models.rotation import Rotation"
    assert project.missing_import_before(forwards["evaluate"]) is None
    assert _codes(root / "train.py", "TP002") == [15]


RECURRENT = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class {name}(nn.Module):
        def __init__(self, hidden):
            super({name}, self).__init__()
            self.hidden = hidden
            self.rnn = nn.LSTM(300, hidden)

        def forward(self, x):
            gate = torch.ones(x.size(1), 300).cuda()
            bias = torch.zeros(x.size(1), 300).cuda()
            return self.rnn(x * gate + bias)[0]
    """
)
USES_ONE = "from models.lstm import LSTMClassifier\n\nmodel = LSTMClassifier(256).cuda()\n"


def test_no_finding_in_a_class_nothing_in_the_project_uses(tmp_path: Path) -> None:
    """A model file keeping a variant no run builds is not reported; the same class is once a script, a
    configuration or a notebook names it (in any case), or once the project is an installable package
    (its classes are an API); its own ``super(Name, self)`` is no use.  One forward, one finding."""
    root = _project(tmp_path, {
        "models/lstm.py": RECURRENT.format(name="LSTMClassifier"),
        "models/rcnn.py": RECURRENT.format(name="RCNN"),
        "train.py": USES_ONE,
    })
    assert _codes(root / "models" / "lstm.py", "TP011") == [12]
    assert _codes(root / "models" / "rcnn.py", "TP011") == []
    (root / "train.py").write_text(USES_ONE + "# model = RCNN(256)\n")  # a comment is no use
    project.forget()
    assert _codes(root / "models" / "rcnn.py", "TP011") == []
    (root / "config.yaml").write_text("model: rcnn\n")
    project.forget()  # a new run reads the tree afresh
    assert _codes(root / "models" / "rcnn.py", "TP011") == [12]


def test_a_class_of_a_package_or_of_a_file_seen_alone_is_reported(tmp_path: Path) -> None:
    (tmp_path / "package").mkdir()
    (tmp_path / "alone").mkdir()
    package = _project(tmp_path / "package", {
        "models/lstm.py": RECURRENT.format(name="LSTMClassifier"), "models/rcnn.py": RECURRENT.format(name="RCNN"),
    }, marker="pyproject.toml")
    assert _codes(package / "models" / "rcnn.py", "TP011") == [12]
    alone = _project(tmp_path / "alone", {"rcnn.py": RECURRENT.format(name="RCNN")})
    assert _codes(alone / "rcnn.py", "TP011") == [12]  # no other module: whether it is used cannot be told


THIN_MODEL = textwrap.dedent(
    """\
    import torch.nn as nn


    class AE(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.enc, self.dec = nn.Linear(n, 16), nn.Linear(16, n)

        def forward(self, x):
            return self.dec(self.enc(x))
    """
)
THIN_SOLVER = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import DataLoader
    from model import AE


    class Solver:
        def __init__(self, config):
            self.config = config
            self.build_model()

        def build_model(self):
            self.model = AE(self.config["n"]).cuda()
            self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)

        def train(self, steps):
            loader = DataLoader(torch.load(self.config["data"]), batch_size=32, shuffle=True)
            for x in loader:
                loss = ((self.model(x.cuda()) - x.cuda()) ** 2).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
            torch.save(self.model.state_dict(), "ae.pt")
    """
)
THIN_MAIN = textwrap.dedent(
    """\
    import json
    import torch
    import sys
    {imports}
    from solver import Solver

    if __name__ == "__main__":
        config = json.load(open(sys.argv[1]))
        {seed}
        solver = Solver(config)
        solver.train(1000)
    """
)


def test_tp009_a_thin_entry_script_whose_draws_are_in_project_modules(tmp_path: Path) -> None:
    """``Solver(config).train()``: the model is built through a method the constructor calls, in a module
    the script imports, and the loader shuffles in another method.  The finding is at the script's call
    that runs the first draw; a seed set before it, directly or through a project helper, silences it."""
    root = _project(tmp_path, {
        "model.py": THIN_MODEL, "solver.py": THIN_SOLVER,
        "utils.py": "import random\n\nimport numpy as np\nimport torch\n\n\ndef set_seed(s):\n"
                    "    random.seed(s)\n    np.random.seed(s)\n    torch.manual_seed(s)\n",
        "train.py": THIN_MAIN.format(imports="", seed="pass"),
        "seeded.py": THIN_MAIN.format(imports="", seed="torch.manual_seed(0)"),
        "helper.py": THIN_MAIN.format(imports="from utils import set_seed", seed="set_seed(0)"),
    })
    assert _codes(root / "train.py", "TP009") == [10]
    assert _codes(root / "seeded.py", "TP009") == []
    assert _codes(root / "helper.py", "TP009") == []
    assert _codes(root / "solver.py", "TP009") == []  # a module of definitions: not a run


SAMPLER = textwrap.dedent(
    """\
    import random

    import numpy as np


    class Batches:
        def __init__(self, items):
            self.items = items
            self.tag = "".join(random.sample("abcdefgh", 3))  # a name drawn when built

        def sample(self, n):
            return [self.items[i] for i in np.random.randint(0, len(self.items), n)]
    """
)
STAR_SEEDED = textwrap.dedent(
    """\
    import random

    import torch
    from sampler import *
    from helpers import *


    def train(items):
        {seeds}
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        batches = Batches(items)
        for step in range(100):
            loss = model(torch.stack(batches.sample(8))).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    if __name__ == "__main__":
        train(torch.load("items.pt"))
    """
)


def test_tp009_numpy_seeded_through_a_star_import(tmp_path: Path) -> None:
    """``np`` bound only by ``from helpers import *`` of a module importing NumPy: ``np.random.seed`` seeds
    NumPy (a project method's NumPy draws are then seeded); without it the method's draw is reported at
    its call.  A helper object's constructor drawing a name from ``random`` is no training draw."""
    seeds = "random.seed(0)\n    np.random.seed(0)\n    torch.manual_seed(0)"
    root = _project(tmp_path, {
        "sampler.py": SAMPLER, "helpers.py": "import numpy as np\n",
        "seeded.py": STAR_SEEDED.format(seeds=seeds),
        "unseeded.py": STAR_SEEDED.format(seeds="random.seed(0)\n    torch.manual_seed(0)"),
    })
    assert _codes(root / "seeded.py", "TP009") == []
    assert _codes(root / "unseeded.py", "TP009") == [15]


EXPERIMENT_BASE = textwrap.dedent(
    """\
    import torch


    class ExpBasic(object):
        def __init__(self, args):
            self.args = args
            self.model = self._build_model().cuda()

        def _build_model(self):
            raise NotImplementedError
    """
)
EXPERIMENT = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import DataLoader
    from exp_basic import ExpBasic
    from model import AE


    class ExpAE(ExpBasic):
        def __init__(self, args):
            super(ExpAE, self).__init__(args)

        def _build_model(self):
            return AE(self.args["n"])

        def train(self, setting):
            optimizer = torch.optim.Adam(self.model.parameters())
            for x in DataLoader(torch.load(self.args["data"]), batch_size=32):
                loss = ((self.model(x.cuda()) - x.cuda()) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """
)
EXPERIMENT_MAIN = "import torch\nfrom exp_ae import ExpAE\n\nExp = ExpAE\nexp = Exp({'n': 8, 'data': 'x.pt'})\nexp.train('s')\n"


def test_tp009_a_subclass_overriding_the_builder_its_base_constructor_calls(tmp_path: Path) -> None:
    """``Exp(args)`` where ``ExpAE.__init__`` calls ``super().__init__``, whose ``self._build_model()`` is
    the subclass's override building a model of a third module: the draw is the script's ``Exp(...)``."""
    root = _project(tmp_path, {
        "model.py": THIN_MODEL, "exp_basic.py": EXPERIMENT_BASE, "exp_ae.py": EXPERIMENT, "main.py": EXPERIMENT_MAIN,
    })
    assert _codes(root / "main.py", "TP009") == [5]


def test_a_src_import_is_judged_only_in_a_project_of_several_modules(tmp_path: Path) -> None:
    """``from src.utils import x`` with no ``src`` folder: a checkout lacking it cannot import it; a file
    copied alone out of its project (no other module beside it) is not judged."""
    (tmp_path / "alone").mkdir()
    (tmp_path / "checkout").mkdir()
    alone = _project(tmp_path / "alone", {"finetune.py": "from src.utils import cosine_lr\n"})
    assert _missing(alone / "finetune.py") is None
    checkout = _project(tmp_path / "checkout", {
        "finetune.py": "from src.utils import cosine_lr\n", "eval.py": "import torch\n",
    })
    assert _missing(checkout / "finetune.py") == "from src.utils import cosine_lr"


RECURSIVE_A = (
    "import torch\n\nimport walk_b\n\n\ndef sample(n):\n    if n:\n        return walk_b.step(n - 1)\n"
    "    return torch.randn(3)\n"
)
RECURSIVE_B = "import walk_a\n\n\ndef step(n):\n    return walk_a.sample(n)\n"
RECURSIVE_MAIN = (
    "import torch\n\nimport walk_a\n{imports}\n\ndef main():\n    {seed}\n    weights = torch.zeros(3, requires_grad=True)\n"
    "    optimizer = torch.optim.SGD([weights], lr=0.1)\n    for step in range(100):\n"
    "        loss = (walk_a.sample(3) * weights).sum()\n        optimizer.zero_grad()\n        loss.backward()\n"
    "        optimizer.step()\n    torch.save(weights, 'w.pt')\n\n\nif __name__ == '__main__':\n    main()\n"
)


def test_tp009_project_calls_that_recurse_across_modules(tmp_path: Path) -> None:
    """``walk_a.sample`` calls ``walk_b.step``, which calls ``walk_a.sample`` again: the reading through
    the project's functions is bounded (``PROJECT_DEPTH``), so the draw is found and nothing recurses.
    A seed set two project functions down (``setup`` -> ``seed_all``) is the run's seed."""
    root = _project(tmp_path, {
        "walk_a.py": RECURSIVE_A, "walk_b.py": RECURSIVE_B,
        "setup_run.py": "import seeding\n\n\ndef setup(cfg):\n    seeding.seed_all(cfg)\n",
        "seeding.py": "import torch\n\n\ndef seed_all(s):\n    torch.manual_seed(s)\n",
        "train.py": RECURSIVE_MAIN.format(imports="", seed="pass"),
        "seeded.py": RECURSIVE_MAIN.format(imports="from setup_run import setup\n", seed="setup(0)"),
    })
    assert _codes(root / "train.py", "TP009") == [11]
    assert _codes(root / "seeded.py", "TP009") == []


EVALUATE = (
    "import torch\n\n\ndef evaluate(model, loader):\n    model.eval()\n    total = 0.0\n"
    "    for x, y in loader:\n        total += torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).item()\n"
    "    return total\n"
)


@pytest.mark.parametrize("caller, reported", [
    # a module imports it and calls it: run with autograd on
    ("from tools import evaluate\n\n\ndef fit(m, l):\n    evaluate(m, l)\n", True),
    # a module reads it from its module, or hands it on as a callback
    ("import tools\n\n\ndef fit(m, l):\n    return tools.evaluate\n", True),
    ("from tools import evaluate as ev\n\nHOOKS = [ev]\n", True),
    ("from tools import *\n\nHOOKS = [evaluate]\n", True),
    # its callers import another module's copy of the function, or only name it in a comment
    ("from other_tools import evaluate\n\n\ndef fit(m, l):\n    evaluate(m, l)\n", False),
    ("from tools import evaluate\n\n\ndef fit(m, l):\n    pass  # evaluate(m, l)\n", False),
    # imported and never read, or called from a module Python cannot parse
    ("from tools import evaluate\n\n\ndef fit(m, l):\n    pass\n", False),
    ("from tools import evaluate\n\n\ndef fit(m, l):\n    print 'epoch'\n    evaluate(m, l)\n", False),
])
def test_tp002_an_evaluation_function_nothing_runs(tmp_path: Path, caller: str, reported: bool) -> None:
    """A module-level evaluation function of an application is reported when some module runs it, and
    left alone when nothing does (``project.imported_elsewhere``, ``external_calls``)."""
    root = _project(tmp_path, {
        "tools.py": EVALUATE, "other_tools.py": EVALUATE, "run.py": caller,
    })
    assert _tp002(root / "tools.py") == ([8] if reported else [])


def test_tp002_a_function_named_by_a_notebook_or_a_package_is_run(tmp_path: Path) -> None:
    """A notebook may import and run it; an installable package's functions are an API."""
    root = _project(tmp_path, {"tools.py": EVALUATE, "run.py": "import torch\n"})
    assert _tp002(root / "tools.py") == []
    (root / "demo.ipynb").write_text('{"cells": [{"source": ["from tools import evaluate"]}]}')
    project.forget()
    assert _tp002(root / "tools.py") == [8]
    (root / "demo.ipynb").unlink()
    (root / "setup.py").write_text("")
    project.forget()
    assert _tp002(root / "tools.py") == [8]


FACTORIZATION = (
    "import torch\n\n\nclass Pipeline:\n    def __init__(self, model, loader):\n        self.model, self.loader = model, loader\n\n"
    "    def validation_loss(self):\n        self.model.eval()\n        total = 0.0\n"
    "        for rows, values in self.loader:\n            total += ((self.model(rows) - values) ** 2).mean().item()\n"
    "        return total\n"
)
FACTORIZATION_RUN = (
    "import torch\nfrom pipeline import Pipeline\n\nmodel = torch.nn.Embedding(100, 8)\n"
    "pipeline = Pipeline(model, torch.load('ratings.pt'))\nprint(pipeline.validation_loss())\n"
)


def test_tp002_a_project_that_never_names_an_accelerator(tmp_path: Path) -> None:
    """The model is handed in by another module, but no file of the project names CUDA, a GPU or a
    framework that places the model: a CPU program, left alone.  A README that says GPU changes that."""
    evaluate = (
        "import torch\n\n\ndef evaluate(model, loader):\n    model.eval()\n    total = 0.0\n"
        "    for x, y in loader:\n        total += ((model(x) - y) ** 2).mean().item()\n    return total\n"
    )
    alone = _project(tmp_path / "alone", {"evaluate.py": evaluate})
    assert _tp002(alone / "evaluate.py") == [8]  # a file with no other module beside it: unknown, reported
    root = _project(tmp_path / "project", {"pipeline.py": FACTORIZATION, "run.py": FACTORIZATION_RUN})
    (root / "requirements.txt").write_text("torch==2.6.0\nnvidia-cuda-runtime-cu12==12.6.77\nnvidia-nccl-cu12==2.26.2\n")
    assert _tp002(root / "pipeline.py") == []  # torch's own CUDA wheels pinned by a pip freeze name no accelerator
    (root / "README.md").write_text("Trains in minutes on a GPU.\n")
    project.forget()
    assert _tp002(root / "pipeline.py") == [12]


BACKBONE = (
    "import torch.nn as nn\n\n\nclass Backbone(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
    "        self.conv = nn.Conv2d(3, dim, 3)\n\n    def forward(self, x):\n        return self.conv(x)\n"
)
RUNNER = textwrap.dedent(
    """\
    import random

    import torch
    from torch.utils.data import DataLoader

    from backbone import Backbone


    class Runner:
        def __init__(self, cfg):
            self.cfg = cfg
            self.init_main()

        def init_main(self):
            {first}
            {second}
            self.loader = DataLoader(torch.load(self.cfg["data"]), batch_size=8, shuffle=True)

        def fix_seed(self, s):
            torch.manual_seed(s)
            random.seed(s)

        def train(self):
            optimizer = torch.optim.Adam(self.net.parameters())
            for epoch in range(100):
                for x in self.loader:
                    loss = self.net(x.cuda()).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            torch.save(self.net.state_dict(), "net.pt")
    """
)
RUNNER_MAIN = "import yaml\n\nfrom runner import Runner\n\nif __name__ == '__main__':\n    Runner(yaml.safe_load(open('c.yaml'))).train()\n"


def test_tp009_a_project_class_that_builds_its_model_before_its_seed(tmp_path: Path) -> None:
    """``Runner(cfg).train()`` in an entry script that names no torch: the class, in another module,
    builds its backbone and only then seeds.  Reported at the script's call; seeding first is quiet."""
    build, seed = "self.net = Backbone(8).cuda()", "self.fix_seed(self.cfg['seed'])"
    root = _project(tmp_path, {
        "backbone.py": BACKBONE, "runner.py": RUNNER.format(first=build, second=seed), "main.py": RUNNER_MAIN,
        "seeded/backbone.py": BACKBONE, "seeded/runner.py": RUNNER.format(first=seed, second=build),
        "seeded/main.py": RUNNER_MAIN,
    })
    assert _codes(root / "main.py", "TP009") == [6]
    assert _codes(root / "seeded" / "main.py", "TP009") == []


TRAIN_HELPER = (
    "import torch\n\n\ndef train_model(x, y, model, lr, n_epochs=50):\n"
    "    optimizer = torch.optim.Adam(model.parameters(), lr=lr)\n"
    "    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=10)\n"
    "    for epoch in range(n_epochs):\n        for feat, label in loader:\n"
    "            loss = torch.nn.functional.mse_loss(model(feat), label)\n"
    "            optimizer.zero_grad()\n            loss.backward()\n            optimizer.step()\n"
    "    return model.state_dict()\n"
)
HELPER_MAIN = (
    "import torch\n\nfrom trainer import train_model\n\n\ndef main():\n    {seed}\n"
    "    model = torch.nn.LSTM(8, 16)\n    x, y = torch.load('data.pt')\n"
    "    torch.save(train_model(x, y, model, lr=1e-3), 'best.pt')\n\n\nif __name__ == '__main__':\n    main()\n"
)


def test_tp009_a_script_whose_training_loop_is_an_imported_function(tmp_path: Path) -> None:
    """The file names no backward, fit or train method: its loop is ``train_model`` of another module."""
    root = _project(tmp_path, {
        "trainer.py": TRAIN_HELPER, "main.py": HELPER_MAIN.format(seed="pass"),
        "seeded.py": HELPER_MAIN.format(seed="torch.manual_seed(0)"),
    })
    assert _codes(root / "main.py", "TP009") == [8]
    assert _codes(root / "seeded.py", "TP009") == []


ENCODER = (
    "import torch.nn as nn\n\n\nclass Encoder(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
    "        self.rnn = nn.GRU(dim, dim)\n\n    def forward(self, x):\n        return self.rnn(x)[0]\n"
)
SEQ_MAIN = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader

    from encoder import Encoder

    loader = DataLoader(torch.load("pairs.pt"), batch_size=32, shuffle=True)


    class Model(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.encoder = Encoder(dim)

        def forward(self, x):
            return self.encoder(x)


    model = Model(64).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(20):
        for x in loader:
            loss = model(x.cuda()).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    torch.save(model.state_dict(), "model.pt")
    """
)


def test_tp009_weights_another_module_initialises_come_before_a_shuffling_loader(tmp_path: Path) -> None:
    """The loader is built first but draws when iterated; the model built after it draws its weights in
    ``Encoder``, a class of another module: the finding is at that construction."""
    root = _project(tmp_path, {"encoder.py": ENCODER, "train.py": SEQ_MAIN})
    assert _codes(root / "train.py", "TP009") == [13]


SEEDING_MODULE = (
    "import torch\nimport torch.nn as nn\n\n{seed}\n\n\nclass VAE(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
)
LATENT_MAIN = (
    "import torch\n\nfrom vae import VAE\n\nmodel = torch.nn.Linear(4, 4)\n"
    "optimizer = torch.optim.Adam(model.parameters())\nfor step in range(100):\n"
    "    loss = model(torch.load('z.pt')).pow(2).mean()\n    optimizer.zero_grad()\n    loss.backward()\n"
    "    optimizer.step()\ntorch.save(model.state_dict(), 'latent.pt')\n"
)


def test_tp009_a_project_module_that_seeds_at_its_top_level_seeds_the_importer(tmp_path: Path) -> None:
    """``from vae import VAE`` runs ``vae.py``: its top-level ``torch.manual_seed(42)`` seeds the run before
    the importer's own code.  A seed under the module's ``__main__`` block does not run on import."""
    seeded = _project(tmp_path / "seeded", {
        "vae.py": SEEDING_MODULE.format(seed="torch.manual_seed(42)"), "latent.py": LATENT_MAIN,
    })
    assert _codes(seeded / "latent.py", "TP009") == []
    guarded = _project(tmp_path / "guarded", {
        "vae.py": SEEDING_MODULE.format(seed="if __name__ == '__main__':\n    torch.manual_seed(42)"),
        "latent.py": LATENT_MAIN,
    })
    assert _codes(guarded / "latent.py", "TP009") == [5]


def test_tp009_a_seed_in_a_module_of_the_same_folder_imported_from_the_root(tmp_path: Path) -> None:
    """``from pkg.run.utils import setup`` in ``pkg/run/train.py``: the helper of the file's own folder,
    named from the repository's root, seeds before the model is built (``brain.project_module``)."""
    train = (
        "import torch\n\nfrom pkg.run.utils import setup\n\n\ndef main():\n    {call}\n"
        "    model = torch.nn.Linear(4, 4)\n    optimizer = torch.optim.Adam(model.parameters())\n"
        "    for step in range(100):\n        loss = model(torch.load(open('x.pt', 'rb'))).pow(2).mean()\n"
        "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n"
        "    torch.save(model.state_dict(), 'm.pt')\n\n\nif __name__ == '__main__':\n    main()\n"
    )
    root = _project(tmp_path, {
        "pkg/__init__.py": "", "pkg/run/__init__.py": "",
        "pkg/run/utils.py": "import random\n\nimport torch\n\n\ndef setup(seed=42):\n    random.seed(seed)\n"
                            "    torch.manual_seed(seed)\n    return seed\n",
        "pkg/run/train.py": train.format(call="setup(7)"),
        "pkg/run/unseeded.py": train.format(call="pass"),
    }, marker=".git")
    assert _codes(root / "pkg/run/train.py", "TP009") == []
    assert _codes(root / "pkg/run/unseeded.py", "TP009") == [8]
