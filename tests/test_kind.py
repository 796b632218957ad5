"""``kinds.kind``: one answer for what a value is, read from its binding, never from its name.

Each case binds a name that suggests another kind (``model`` bound to an optimizer ...) and asks
for the kind of the argument of the last ``probe(...)`` call.  Snippets written for these tests.
"""
from __future__ import annotations

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.training import kinds
from flake8_torch_preflight.analysis.setup.build import build_module

HEADER = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, TensorDataset
"""


def _kind(body: str) -> str:
    module = build_module(HEADER + body, "/tmp/tp_kind_case.py")
    probes = [c for c in module.nodes_of_class(nodes.Call) if getattr(c.func, "name", None) == "probe"]
    return kinds.kind(probes[-1].args[0])


@pytest.mark.parametrize(
    "body, expected",
    [
        # tensor: a factory, arithmetic on one, a model's output
        ("optimizer = torch.randn(4, 8)\nprobe(optimizer)\n", kinds.TENSOR),
        ("model = torch.zeros(3) * 2\nprobe(model)\n", kinds.TENSOR),
        # a parameter is what its call sites pass: parameters of a module iterated in the caller
        (
            "def record(model):\n    probe(model)\n"
            "for p in nn.Linear(8, 2).parameters():\n    record(p)\n",
            kinds.TENSOR,
        ),
        # model: an nn.Module subclass of the file, a torchvision-free Sequential
        (
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.fc = nn.Linear(8, 2)\n"
            "optimizer = Net()\n"
            "probe(optimizer)\n",
            kinds.MODEL,
        ),
        ("loader = nn.Sequential(nn.Linear(8, 8), nn.ReLU())\nprobe(loader)\n", kinds.MODEL),
        # loss and parameter-free layer
        ("model = nn.CrossEntropyLoss()\nprobe(model)\n", kinds.LOSS),
        ("model = nn.ReLU()\nprobe(model)\n", kinds.LAYER),
        # optimizer
        ("model = torch.optim.SGD([torch.zeros(2)], lr=0.1)\nprobe(model)\n", kinds.OPTIMIZER),
        # scaler
        ("optimizer = torch.cuda.amp.GradScaler()\nprobe(optimizer)\n", kinds.SCALER),
        ("model = torch.amp.GradScaler('cuda')\nprobe(model)\n", kinds.SCALER),
        # loader and sampler (a distributed one too)
        (
            "ds = TensorDataset(torch.zeros(4, 2))\nsampler = DataLoader(ds, batch_size=2)\nprobe(sampler)\n",
            kinds.LOADER,
        ),
        (
            "ds = TensorDataset(torch.zeros(4, 2))\nloader = DistributedSampler(ds)\nprobe(loader)\n",
            kinds.SAMPLER,
        ),
        ("ds = TensorDataset(torch.zeros(4, 2))\nloader = RandomSampler(ds)\nprobe(loader)\n", kinds.SAMPLER),
        # unknown: a parameter nothing passes, an opaque import, a plain number, a dataset
        ("def train(optimizer):\n    probe(optimizer)\n", kinds.UNKNOWN),
        ("from somewhere import build\nmodel = build()\nprobe(model)\n", kinds.UNKNOWN),
        ("scaler = 2.0\nprobe(scaler)\n", kinds.UNKNOWN),
        ("loader = TensorDataset(torch.zeros(4, 2))\nprobe(loader)\n", kinds.UNKNOWN),
    ],
)
def test_kind_is_read_from_the_binding(body: str, expected: str) -> None:
    assert _kind(body) == expected


def test_a_parameter_takes_the_kind_its_call_sites_pass() -> None:
    body = (
        "def step(scaler):\n"
        "    probe(scaler)\n"
        "step(torch.optim.Adam([torch.zeros(2)]))\n"
    )
    assert _kind(body) == kinds.OPTIMIZER


def test_kind_names_are_defined_once() -> None:
    """The module kinds are ``models``' own constants, and every answer is listed once."""
    from flake8_torch_preflight.analysis.training import models

    assert (kinds.MODEL, kinds.LOSS, kinds.LAYER) == (models.MODEL, models.LOSS, models.LAYER)
    assert len(set(kinds.KINDS)) == len(kinds.KINDS) == 9
