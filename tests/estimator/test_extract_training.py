"""Training or inference: the reader asks the rules' answers (``training_step.is_step_call`` for a
backward or an optimizer step, ``loader_use.runs_trainer`` for a framework trainer's fit/train),
never its own look.  Snippets written for these tests."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flake8_torch_preflight.analysis.setup.build import build_module
from flake8_torch_preflight.estimator import extract


def _run(source: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "train.py"
    text = textwrap.dedent(source)
    path.write_text(text, encoding="utf-8")
    return extract.read_module(build_module(text, str(path)), str(path)).run


MODEL = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(2, 4)
"""


@pytest.mark.parametrize("body", [
    "model(x).sum().backward()\nopt.step()\n",  # a tensor's backward
    "torch.autograd.backward(model(x).sum())\n",  # autograd's function
    "scaler = torch.cuda.amp.GradScaler()\nscaler.scale(model(x).sum()).backward()\nscaler.step(opt)\n",
    # an accelerate backward
    "from accelerate import Accelerator\naccelerator = Accelerator()\naccelerator.backward(model(x).sum())\n",
    # a closure optimizer: the step is the evidence here
    "def closure():\n    return model(x).sum()\nopt.step(closure)\n",
])
def test_a_step_means_training(tmp_path: Path, body: str) -> None:
    assert _run(MODEL + body, tmp_path).training


@pytest.mark.parametrize("source", [
    # Lightning's trainer fits the module it is handed
    "import lightning as L\nimport torch\nmodel = torch.nn.Linear(4, 4)\ntrainer = L.Trainer(max_epochs=1)\n"
    "trainer.fit(model)\n",
    # a Hugging Face trainer written in place
    "from transformers import AutoModelForCausalLM, Trainer\n"
    "model = AutoModelForCausalLM.from_pretrained('gpt2')\nTrainer(model=model).train()\n",
])
def test_a_framework_fit_means_training(tmp_path: Path, source: str) -> None:
    assert _run(source, tmp_path).training


@pytest.mark.parametrize("body", [
    # model.train() on a module only switches its mode
    "model.train()\nwith torch.no_grad():\n    model(x)\n",
    # a step on something that is not an optimizer (a scheduler-like object of the file)
    "class Counter:\n    def step(self):\n        pass\nCounter().step()\nwith torch.no_grad():\n    model(x)\n",
    # fit on an object no framework trainer built (a scikit-style estimator)
    "from sklearn.linear_model import LinearRegression\nLinearRegression().fit(x, x)\n",
])
def test_no_step_and_no_framework_fit_means_inference(tmp_path: Path, body: str) -> None:
    run = _run(MODEL + body, tmp_path)
    assert run.inference is True and not run.training
