"""The run's questions in ``analysis.training.entrypoint`` and the fresh-model draw in
``rules.tp009_unseeded_run.randomness``:
does the run update parameters (one optimizer-step answer, ``gradients.stepped_optimizer``), does a
call read data (by library, class or where its value goes, not by its name), is a function a
benchmark on made-up tensors, and does building a model nothing reads draw its initialisation."""
from __future__ import annotations

from typing import List

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.training import entrypoint
from flake8_torch_preflight.rules.tp009_unseeded_run import randomness
from flake8_torch_preflight.analysis.setup.build import build_module


def _module(source: str) -> nodes.Module:
    return build_module(source, "/tmp/tp_queries_entry_case.py")


def _run(source: str) -> List[nodes.Call]:
    return entrypoint.run_calls(_module(source))


def _function(module: nodes.Module, name: str) -> nodes.FunctionDef:
    return next(f for f in module.nodes_of_class(nodes.FunctionDef) if f.name == name)


def _named(module: nodes.Module, text: str) -> nodes.Call:
    return next(c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == text)


# -- updates_parameters: the optimizer step is stepped_optimizer's answer -------------------------------

_PRELUDE = "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"


@pytest.mark.parametrize(
    "source, expected",
    [
        (_PRELUDE + "model(x).sum().backward()\nopt.step()\n", True),
        (_PRELUDE + "scaler = torch.cuda.amp.GradScaler()\nscaler.step(opt)\n", True),
        # a scheduler's step and a helper called *_step update no parameter; building an optimizer is not stepping it
        (_PRELUDE + "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\nsched.step()\n", False),
        ("import torch\ndef attack_step(d):\n    return d + d.grad.sign()\nattack_step(torch.ones(2))\n", False),
        (_PRELUDE, False),
        ("import deepspeed\nengine, _, _, _ = deepspeed.initialize(model=m)\nengine.step()\n", True),
        ("import torch_xla.core.xla_model as xm\nxm.optimizer_step(opt)\n", True),
        ("import torch.distributed.autograd as dist_autograd\ndist_autograd.backward(cid, [loss])\n", True),
        ("import lightning as L\nL.Trainer().fit(m)\n", True),  # a framework's fit, from frameworks.FIT_METHODS
        ("import torch\nw = torch.ones(2, requires_grad=True)\ndef f():\n    w.data -= 0.1 * w.grad\nf()\n", True),
    ],
)
def test_updates_parameters_asks_the_optimizer_step(source: str, expected: bool) -> None:
    assert entrypoint.updates_parameters(_run(source)) is expected


# -- reads_data: the binding, not the name ------------------------------------------------------------


def test_reads_data_by_where_the_value_goes() -> None:
    module = _module(
        "import torch\nfrom pipeline import stream, get_data_words\n"
        "model = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in stream('train'):\n    model(x).sum().backward()\n    opt.step()\n"
        "info = get_data_words()\n"
        "for _ in range(3):\n    model(torch.ones(2)).sum().backward()\n"
    )
    assert entrypoint.reads_data(_named(module, "stream"))  # a training loop iterates it, whatever its name
    assert not entrypoint.reads_data(_named(module, "get_data_words"))  # its name says data; nothing iterates it
    assert not entrypoint.reads_data(_named(module, "range"))  # a count is not data


def test_reads_data_by_library_and_class() -> None:
    module = _module(
        "import numpy as np\nimport torch\nfrom torch.utils.data import Dataset\n"
        "class Pairs(Dataset):\n    pass\n"
        "a = np.load('x.npy')\nb = open('y.txt')\nc = Pairs()\nd = torch.ones(3)\n"
    )
    assert entrypoint.reads_data(_named(module, "np.load"))
    assert entrypoint.reads_data(_named(module, "open"))
    assert entrypoint.reads_data(_named(module, "Pairs"))
    assert not entrypoint.reads_data(_named(module, "torch.ones"))


# -- made_up_benchmark: one answer for TP003 and TP009 ------------------------------------------------

_BENCH = """\
import time
import torch


def bench(width):
    layer = torch.nn.Linear(width, width)
    opt = torch.optim.Adam(layer.parameters())
    x = torch.ones(4, width).to("cuda")
    y = torch.zeros(4, width)
    start = time.time()
    for _ in range(100):
        loss = ((layer(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
{tail}
"""


@pytest.mark.parametrize(
    "tail, expected",
    [
        ("    print(time.time() - start)", True),
        ("    print(time.time() - start)\n    return layer", False),  # the trained layer leaves
        ("    print(time.time() - start, loss.item())", False),  # the loss is read
        ("    torch.save(layer.state_dict(), 'l.pt')", False),  # saved
        ("    pass", False),  # nothing is measured (the clock read is taken out below)
    ],
)
def test_made_up_benchmark_measures_and_reads_nothing_trained(tail: str, expected: bool) -> None:
    source = _BENCH.format(tail=tail)
    module = _module(source if "time" in tail else source.replace("start = time.time()", "start = 0"))
    assert entrypoint.made_up_benchmark(_function(module, "bench")) is expected


def test_made_up_benchmark_needs_made_up_inputs_and_a_counting_loop() -> None:
    loader_loop = _BENCH.format(tail="    print(time.time() - start)").replace("range(100)", "batches")
    module = _module(loader_loop.replace("def bench(width):", "def bench(width, batches):"))
    assert not entrypoint.made_up_benchmark(_function(module, "bench"))  # iterates what the caller hands it
    real_input = _BENCH.format(tail="    print(time.time() - start)").replace(
        'x = torch.ones(4, width).to("cuda")', "x = torch.load('x.pt')"
    )
    assert not entrypoint.made_up_benchmark(_function(_module(real_input), "bench"))


def test_benchmark_only_when_every_backward_is_measured() -> None:
    bench = _BENCH.format(tail="    print(time.time() - start)")
    only = _module(bench + "\nif __name__ == '__main__':\n    bench(8)\n")
    assert entrypoint.benchmark_only(entrypoint.run_calls(only))
    trained = bench + (
        "\ndef train(model, opt):\n    for x, y in torch.load('pairs.pt'):\n"
        "        model(x).sum().backward()\n        opt.step()\n"
        "\nif __name__ == '__main__':\n    bench(8)\n    train(torch.nn.Linear(8, 1), None)\n"
    )
    assert not entrypoint.benchmark_only(entrypoint.run_calls(_module(trained)))


# -- the initialisation of a model nothing reads --------------------------------------------------------

_FRESH = """\
import torch
from unreadable_models import Net
model = Net({arguments})
{between}
optimizer = torch.optim.SGD({parameters}, lr=0.1)
"""


@pytest.mark.parametrize(
    "arguments, between, parameters, expected",
    [
        ("width=8", "", "model.parameters()", True),
        ("width=8", "model = torch.nn.DataParallel(model).cuda()", "model.parameters()", True),
        ("width=8", "params = filter(lambda p: p.requires_grad, model.parameters())", "params", True),
        ("width=8", "model.load_state_dict(torch.load('m.pt'))", "model.parameters()", False),
        ("pretrained=True", "", "model.parameters()", False),
        ("checkpoint_path='m.pt'", "", "model.parameters()", False),
        ("width=8", "", "[torch.zeros(2, requires_grad=True)]", False),  # not its parameters: not trained here
    ],
)
def test_fresh_model_draws_its_initialisation(arguments: str, between: str, parameters: str, expected: bool) -> None:
    module = _module(_FRESH.format(arguments=arguments, between=between, parameters=parameters))
    found = randomness.effect(_named(module, "Net"))
    drawn = found is not None and found.kind == randomness.DRAW and found.weights
    assert drawn is expected


# -- made_up_demo: training on made-up data only (TP009's demo) -------------------------------------------

_DEMO = """\
import torch
x = torch.randn(64, 100)
y = torch.randn(64, 10)
model = torch.nn.Sequential(torch.nn.Linear(100, 20), torch.nn.ReLU(), torch.nn.Linear(20, 10))
loss_fn = torch.nn.MSELoss(reduction="sum")
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
for t in range(500):
    loss = loss_fn(model(x), y)
    print(t, loss.item())
    opt.zero_grad()
    loss.backward()
    opt.step()
{tail}
"""


@pytest.mark.parametrize(
    "tail, expected",
    [
        ("", True),  # the loss printed per step is still a demo
        ("print(model[0].weight)", True),  # looking at the model trained on made-up data: the demo's result
        ("torch.save(model.state_dict(), 'm.pt')", True),
        ("evaluate = loss_fn(model(torch.randn(8, 100)), torch.randn(8, 10))", True),
    ],
)
def test_made_up_demo_whatever_it_keeps(tail: str, expected: bool) -> None:
    assert entrypoint.made_up_demo(_run(_DEMO.format(tail=tail))) is expected


@pytest.mark.parametrize(
    "replace, by",
    [
        ("for t in range(500):", "for t in [x] * 5:"),  # a loop over a list of made-up tensors
        ("for t in range(500):", "for t, (x, y) in enumerate(zip(x, y)):"),  # over their rows
        ("for t in range(500):", "for t in np.linspace(0, 1, 5):"),  # over a grid
        ("for t in range(500):",
         "for x, y in DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True):"),  # batches of them
    ],
)
def test_made_up_demo_through_loops_over_made_up_values(replace: str, by: str) -> None:
    source = "import numpy as np\nfrom torch.utils.data import DataLoader, TensorDataset\n" + _DEMO.format(
        tail="").replace(replace, by)
    assert entrypoint.made_up_demo(_run(source))


@pytest.mark.parametrize(
    "replace, by",
    [
        ("x = torch.randn(64, 100)", "x = torch.load('x.pt')"),  # a file's tensor
        ("for t in range(500):", "for t in open('steps.txt'):"),  # a loop over a file's lines, not a count
        ("loss_fn(model(x), y)", "loss_fn(model(env.step(x)), y)"),  # an environment's observation
    ],
)
def test_made_up_demo_needs_every_input_made_up(replace: str, by: str) -> None:
    source = _DEMO.format(tail="").replace(replace, by)
    if "env." in by:
        source = "class Env:\n    def step(self, a):\n        return a\n\nenv = Env()\n" + source
    assert not entrypoint.made_up_demo(_run(source))


@pytest.mark.parametrize(
    "x, y, expected",
    [
        ("x, y = make_blobs(n_samples=80, centers=2)\nx = torch.FloatTensor(x)", "y = torch.FloatTensor(relabel(y))",
         True),  # sklearn's generator, a function of the file that computes from its argument
        ("x = torch.FloatTensor([[0, 0], [0, 1], [1, 0], [1, 1]])", "y = torch.tensor([0., 1., 1., 0.])", True),
        ("x = torch.LongTensor(list(map(ord, 'hello')))", "y = torch.LongTensor(list(map(ord, 'hola')))", True),
        ("x = torch.tensor(np.random.randn(64, 2))", "y = x.sum(1)", True),
        ("x, y = load_iris(return_X_y=True)\nx = torch.FloatTensor(x)", "y = torch.FloatTensor(y)", False),
        ("x, y = read_pairs('pairs.csv')", "y = torch.FloatTensor(y)", False),  # the helper opens a file
        ("x, y = fizzbuzz(100)\nx = torch.FloatTensor(x)", "y = torch.FloatTensor(y)", True),  # helpers of helpers
        ("x, y = iris_pairs()", "y = y.sum(1)", False),  # returned from a library call nothing resolves
    ],
)
def test_made_up_demo_sources(x: str, y: str, expected: bool) -> None:
    source = (
        "import numpy as np\nimport seaborn as sns\nimport torch\n"
        "from sklearn.datasets import load_iris, make_blobs\n\n\n"
        "def relabel(labels):\n    out = np.copy(labels)\n    out[labels > 1] = 1\n    return out\n\n\n"
        "def read_pairs(path):\n    rows = [line.split(',') for line in open(path)]\n    return rows, rows\n\n\n"
        "def encode(i):\n    return [i % 2, i // 2 % 2]\n\n\n"
        "def fizzbuzz(limit):\n    return [encode(i) for i in range(limit)], [i % 3 for i in range(limit)]\n\n\n"
        "def iris_pairs():\n    table = sns.load_dataset('iris')\n    return torch.tensor(table.values), torch.tensor("
        "table.values)\n\n\n"
        "{x}\n{y}\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for t in range(100):\n    loss = (model(x.float()).squeeze() - y).pow(2).mean()\n    opt.zero_grad()\n"
        "    loss.backward()\n    opt.step()\ntorch.save(model.state_dict(), 'toy.pt')\n"
    ).format(x=x, y=y)
    assert entrypoint.made_up_demo(_run(source)) is expected


def test_made_up_inputs_follows_tensor_methods_and_collects_names() -> None:
    module = _module(
        "import torch\nx = torch.randn(4, 3)\nw = torch.randn(3, 2, requires_grad=True)\n"
        "loss = (x.mm(w).clamp(min=0) - 1).pow(2).sum()\n"
        "def step(batch):\n    return (batch.mm(w)).sum()\n"
    )
    names: set = set()
    loss = next(n for n in module.nodes_of_class(nodes.AssignName) if n.name == "loss").parent.value
    assert entrypoint.made_up_inputs(loss, names) and {"x", "w"} <= names
    returned = next(module.nodes_of_class(nodes.Return)).value
    assert not entrypoint.made_up_inputs(returned)  # ``batch`` is the caller's: it may be data


def test_reads_trained_counts_reads_after_the_training_loop_only() -> None:
    module = _module(_DEMO.format(tail=""))
    backwards = [c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == "loss.backward"]
    assert not entrypoint.reads_trained(module, {"model", "loss"}, backwards)  # the in-loop print is training
    after = _module(_DEMO.format(tail="print(loss)"))
    backwards = [c for c in after.nodes_of_class(nodes.Call) if c.func.as_string() == "loss.backward"]
    assert entrypoint.reads_trained(after, {"model", "loss"}, backwards)


def test_made_up_inputs_reads_the_receiver_of_a_torch_tensor_method() -> None:
    module = _module(
        "import torch\nimport torch.nn as nn\nnet = nn.Linear(16, 4)\nxs = torch.randn(3, 16)\n"
        "loss = net(xs).sum()\nfrom_file = net(torch.load('x.pt')).mean()\n"
    )
    names: set = set()
    loss = next(n for n in module.nodes_of_class(nodes.AssignName) if n.name == "loss").parent.value
    assert entrypoint.made_up_inputs(loss, names) and {"net", "xs"} <= names  # ``.sum()`` computes from net(xs)
    loaded = next(n for n in module.nodes_of_class(nodes.AssignName) if n.name == "from_file").parent.value
    assert not entrypoint.made_up_inputs(loaded)  # the receiver holds a file's tensor


@pytest.mark.parametrize(
    "header, expected",
    [("for bins in (0, 2, 10):", True), ("for bins in [x, y]:", False), ("for bins in range(3):", True)],
)
def test_a_loop_over_constants_only_counts(header: str, expected: bool) -> None:
    module = _module("x = y = 1\n{}\n    pass\n".format(header))
    loop = next(module.nodes_of_class(nodes.For))
    assert entrypoint.counting_loop(loop) is expected


_SMOKE = (
    "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.proj = nn.Linear(16, 4)\n\n"
    "    def forward(self, x):\n        return self.proj(x)\n\n\n"
    "if __name__ == '__main__':\n    net = Net()\n    net.load_weights()\n"
    "    net(torch.randn(2, 16)).sum().backward()\n"
)


def test_library_module_is_a_package_module_or_imported(tmp_path) -> None:
    script = tmp_path / "check.py"
    script.write_text(_SMOKE)
    assert not entrypoint.library_module(build_module(_SMOKE, str(script)))  # a script beside nothing
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    inside = package / "check.py"
    inside.write_text(_SMOKE)
    assert entrypoint.library_module(build_module(_SMOKE, str(inside)))
    assert not entrypoint.library_module(build_module(_SMOKE.split("if __name__")[0], str(inside)))  # no __main__


def test_tp009_leaves_a_library_modules_main_check_alone(tmp_path) -> None:
    from flake8_torch_preflight import engine
    from flake8_torch_preflight.analysis.setup import build

    # reads its input (not a made-up demo), and its weights stay the drawn ones (no load)
    source = _SMOKE.replace("    net.load_weights()\n", "").replace("torch.randn(2, 16)", "torch.load('x.pt')")
    lines = source.splitlines(True)
    script = tmp_path / "check.py"
    script.write_text(source)
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "check.py").write_text(source)
    # a script whose backward steps nothing still draws its weights unseeded; in a package it is a check
    assert [f.line for f in engine.analyse_file(str(script), lines, build.Settings())["TP009"]] == [8]
    assert engine.analyse_file(str(package / "check.py"), lines, build.Settings())["TP009"] == []


# -- test_suite_module: test code, not a run (the policy every code follows in rules/_base.py) ---------

_LOOP = (
    "import torch\n"
    "model = torch.nn.Linear(4, 2)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for _ in range(10):\n"
    "    model(torch.rand(3, 4)).sum().backward()\n"
    "    opt.step()\n"
)


@pytest.mark.parametrize(
    "path, source, expected",
    [
        ("project/test/test_model.py", _LOOP, True),  # a script named like a test in the test folder
        ("project/tests/unit/test_model.py", _LOOP, True),
        ("project/test_model.py", "import unittest\n" + _LOOP, True),  # imports a test framework
        ("project/conftest.py", _LOOP, True),
        ("project/tools/test_net.py", _LOOP, False),  # an evaluation program named like a test
        ("project/test/train.py", _LOOP, False),  # not named like a test
        ("project/latest_model.py", _LOOP, False),
        ("project/bench.py", "from unittest.mock import patch\n" + _LOOP, False),  # borrows a patcher only
        ("project/test_net.py", "from unittest import mock\n" + _LOOP, False),
        ("project/checks.py", "import unittest\n" + _LOOP + "class ModelTest(unittest.TestCase):\n    pass\n", True),
        ("project/checks.py", "import pytest\n" + _LOOP + "def test_loss():\n    pass\n", True),
        ("project/helpers.py", "import pytest\n" + _LOOP, False),  # a helper importing pytest, no tests
        ("project/tests/testing_common.py", "import pytest\n" + _LOOP, True),  # the suite's shared helpers
    ],
)
def test_test_suite_module(tmp_path, path: str, source: str, expected: bool) -> None:
    from flake8_torch_preflight.analysis.training import evaluation

    module = build_module(source, str(tmp_path / path))
    assert evaluation.test_suite_module(module) is expected


def test_no_code_reports_in_the_test_suite(tmp_path) -> None:
    """The same loop without zero_grad: reported in a training script, silent in tests/."""
    import ast

    from flake8_torch_preflight import engine
    from flake8_torch_preflight.analysis.setup import build

    def codes(path: str) -> List[str]:
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_LOOP)
        found = engine.analyse_file(str(target), _LOOP.splitlines(keepends=True), build.Settings(), ast.parse(_LOOP))
        return sorted(code for code, findings in found.items() if findings)

    assert codes("project/train.py") == ["TP003"]
    assert codes("project/test/test_model.py") == []


@pytest.mark.parametrize(
    "head, tail, expected",
    [
        ("from torch import nn\n", "", True),  # ``torch`` never bound: NameError before the step
        ("import torch\nfrom torch import nn\n", "", False),
        ("from torch import nn\nfrom helpers import *\n", "", False),  # a star import may bind it
        ("from torch import nn\n", "model.eval()\n", True),  # a method named eval is no builtin eval()
        ("import torch\nfrom torch import nn\nsteps = {}\nsteps['a'][0]()\n", "", False),  # a bound dict
        ("import torch\nfrom torch import nn\nhooks['a'][0]()\n", "", True),  # an unbound one, subscripted
        ("from torch import nn\n", "globals()['torch'] = __import__('torch')\n", False),
    ],
)
def test_fails_before_training(head: str, tail: str, expected: bool) -> None:
    source = head + (
        "model = nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in batches:\n    model(x).sum().backward()\n    optimizer.step()\n"
    ) + tail
    assert entrypoint.fails_before_training(_run(source)) is expected
