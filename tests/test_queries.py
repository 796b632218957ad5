"""The questions each answered once in the analysis.  Semantic: a call's argument by name or
position (``infer.argument``), the enclosing function (``loops.enclosing_function``), the file's
function names (``loops.defined_function_names``), iteration wrappers, constants.  Torch: the kind
of a callee, the optimizer a step updates, what a backward differentiates, and the accumulation
that TP004 and the estimator's reader both ask for."""
from __future__ import annotations

from typing import List, Optional

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.training import accumulation, gradients, models
from flake8_torch_preflight.analysis.semantic import infer, loops, static_values
from flake8_torch_preflight.analysis.setup.build import build_module


def _module(source: str) -> nodes.Module:
    return build_module(source, "/tmp/tp_queries_case.py")


def _call(source: str) -> nodes.Call:
    return list(_module(source).nodes_of_class(nodes.Call))[-1]


@pytest.mark.parametrize(
    "source, keyword, index, expected",
    [
        ("f(1, 2, b=3)", "b", 1, "3"),  # the keyword wins
        ("f(1, 2)", "b", 1, "2"),  # else the position
        ("f(1, 2)", "b", None, None),  # a keyword-only lookup never reads a position
        ("f(1, 2)", "c", 2, None),  # not passed
        ("f(*xs, 2)", "b", 1, None),  # hidden by *args at or before it
        ("f(1, *xs)", "a", 0, "1"),  # *args after it hides nothing
        ("f(1, **kw)", "b", None, None),
    ],
)
def test_argument_by_keyword_or_position(source: str, keyword: str, index: Optional[int],
                                         expected: Optional[str]) -> None:
    found = infer.argument(_call(source), keyword, index)
    assert (found.as_string() if found is not None else None) == expected


def test_enclosing_function_looks_through_comprehensions() -> None:
    module = _module("def outer(xs):\n    return [g(x) for x in xs]\nh()\nlam = lambda: k()\n")
    calls = {c.func.as_string(): c for c in module.nodes_of_class(nodes.Call)}
    func = loops.enclosing_function(calls["g"])
    assert func is not None and func.name == "outer"
    assert loops.enclosing_function(calls["h"]) is None  # module level
    assert loops.enclosing_function(calls["k"]) is None  # a lambda


def test_defined_function_names_are_every_def_of_the_file() -> None:
    module = _module("def a():\n    def b():\n        pass\nclass C:\n    def m(self):\n        pass\n")
    assert loops.defined_function_names(module) == {"a", "b", "m"}


# -- the torch layer's queries ---------------------------------------------------------------------

_TRAINING = """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
ACCUM = 4
"""


def _named_calls(module: nodes.Module) -> dict:
    return {c.func.as_string(): c for c in module.nodes_of_class(nodes.Call)}


def test_kind_reads_the_binding_not_the_name() -> None:
    module = _module(_TRAINING + "criterion = model\nmodel(x)\nloss_fn(y, t)\ncriterion(x)\n")
    calls = _named_calls(module)
    assert models.kind(calls["model"].func) == models.MODEL
    assert models.kind(calls["loss_fn"].func) == models.LOSS
    assert models.kind(calls["criterion"].func) == models.MODEL  # named like a loss, bound to the model


def test_stepped_optimizer_is_the_optimizer_not_a_scheduler() -> None:
    module = _module(_TRAINING + "sched = torch.optim.lr_scheduler.StepLR(optimizer, 1)\n"
                                 "optimizer.step()\nsched.step()\n")
    steps = [c for c in module.nodes_of_class(nodes.Call) if c.func.as_string().endswith(".step")]
    assert [gradients.stepped_optimizer(c) is not None for c in steps] == [True, False]


def test_backward_receiver_through_frameworks() -> None:
    module = _module("loss.backward()\nfabric.backward(loss)\naccelerator.backward(loss * 2)\n")
    received = [gradients.backward_receiver(c).as_string() for c in module.nodes_of_class(nodes.Call)]
    assert received == ["loss", "loss", "loss * 2"]


def test_unwrap_iteration_takes_off_every_wrapper() -> None:
    call = _call("enumerate(tqdm(islice(loader, 10)))")
    assert loops.unwrap_iteration(call).as_string() == "loader"


def test_int_value_follows_constants_and_refuses_bools() -> None:
    module = _module("N = 2 * 4\nFLAG = True\nuse(N, FLAG)\n")
    n, flag = _call_args(module)
    found = static_values.int_value(n)
    assert found is not None and found.value == 8
    assert static_values.int_value(flag) is None


def test_a_subscript_past_the_known_value_is_unknown() -> None:
    """``cfg[-1]`` of an empty list the run fills later, ``sizes[5]`` of three: unknown, never an error."""
    module = _module("cfg = []\nsizes = [1, 2, 3]\nuse(cfg[-1], sizes[5], sizes[-1])\n")
    empty, past, last = _call_args(module)
    assert static_values.evaluate(empty) is None
    assert static_values.evaluate(past) is None
    found = static_values.int_value(last)
    assert found is not None and found.value == 3


def _call_args(module: nodes.Module) -> list:
    return list(list(module.nodes_of_class(nodes.Call))[-1].args)


@pytest.mark.parametrize(
    "loop, expected",
    [
        # a gated step: N is the gate's divisor
        ("for i, (x, y) in enumerate(batches):\n"
         "    loss_fn(model(x), y).backward()\n"
         "    if (i + 1) % ACCUM == 0:\n"
         "        optimizer.step()\n"
         "        optimizer.zero_grad()\n", ("ACCUM", False)),
        # an inner micro-batch loop whose step follows it
        ("for x, y in batches:\n"
         "    for cx, cy in zip(x.chunk(4), y.chunk(4)):\n"
         "        loss_fn(model(cx), cy).backward()\n"
         "    optimizer.step()\n"
         "    optimizer.zero_grad()\n", ("4", False)),
        # gradients divided in place before the step: still accumulation, marked rescaled
        ("for i, (x, y) in enumerate(batches):\n"
         "    loss_fn(model(x), y).backward()\n"
         "    if (i + 1) % ACCUM == 0:\n"
         "        for p in model.parameters():\n"
         "            p.grad /= ACCUM\n"
         "        optimizer.step()\n"
         "        optimizer.zero_grad()\n", ("ACCUM", True)),
        # zeroed every iteration: no accumulation
        ("for i, (x, y) in enumerate(batches):\n"
         "    optimizer.zero_grad()\n"
         "    loss_fn(model(x), y).backward()\n"
         "    optimizer.step()\n", None),
    ],
    ids=["gated", "micro-batch", "rescaled", "none"],
)
def test_one_accumulation_answer_for_the_rule_and_the_reader(loop: str, expected: Optional[tuple]) -> None:
    module = _module(_TRAINING + loop)
    found = list(accumulation.accumulations(module))
    if expected is None:
        assert found == []
    else:
        assert [(f.text, f.rescaled) for f in found][:1] == [expected]
        assert found[0].divisor is not None and found[0].steps


# -- what a name may hold: infer.bound_values --------------------------------------------------------

def _bound(source: str, marker: str = "probe") -> Optional[list]:
    """``infer.bound_values`` of the argument of the call ``probe(x)`` in ``source``, as text."""
    module = _module(source)
    call = next(c for c in module.nodes_of_class(nodes.Call) if infer.call_name(c) == marker)
    found = infer.bound_values(call.args[0])
    return None if found is None else [v.as_string() for v in found]


@pytest.mark.parametrize(
    "source, expected",
    [
        # every assignment that may reach the name
        ("x = 1\nif c:\n    x = 2\nprobe(x)\n", ["1", "2"]),
        # a loop target or an unpacking holds nothing read here
        ("for x in xs:\n    probe(x)\n", None),
        ("a, b = 1, 'cpu'\nprobe(b)\n", None),
        ("a, b = f()\nprobe(b)\n", None),
        # self.attr: its assignments in the class's methods
        ("class T:\n    def __init__(self):\n        self.n = 4\n    def run(self):\n        probe(self.n)\n", ["4"]),
        # a parameter: what every call site passes, by position or by keyword
        ("def f(a, b):\n    probe(b)\nf(1, 2)\nf(3, b=4)\nf(b=5, a=6)\n", ["2", "4", "5"]),
        # a call site that passes nothing gives the default
        ("def f(a, b=7):\n    probe(b)\nf(1)\nf(1, 8)\n", ["7", "8"]),
        ("def f(a, *, b=7):\n    probe(b)\nf(1)\nf(1, b=9)\n", ["7", "9"]),
        # a method: self is not passed by the call site; through the class it is
        ("class T:\n    def m(self, k):\n        probe(k)\n    def run(self):\n        self.m(3)\n"
         "        T.m(self, 5)\n", ["3", "5"]),
        # __init__: the constructions of the class are its call sites
        ("class T:\n    def __init__(self, k):\n        probe(k)\nT(1)\nT(k=2)\n", ["1", "2"]),
        ("class T:\n    def __init__(self, k):\n        probe(k)\nclass U(T):\n    pass\n"
         "def f(t: T):\n    return isinstance(t, T)\nT(1)\nU(3)\n", ["1", "3"]),  # a subclass that inherits it
    ],
)
def test_bound_values_reads_assignments_then_call_sites(source: str, expected: Optional[list]) -> None:
    assert _bound(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "def f(a, b):\n    probe(b)\n",  # never called in the file
        "def f(a, b):\n    probe(b)\nf(1, 2)\nf(*xs)\n",  # *args at or before its position
        "def f(a, b):\n    probe(b)\nf(1, 2)\nf(1, **kw)\n",  # **kwargs without its keyword
        "def f(a, b):\n    probe(b)\nf(1, 2)\nf(1)\n",  # a call site that passes nothing, no default
        "def f(a, b, /):\n    probe(b)\nf(1, b=2)\n",  # a positional-only parameter is not a keyword
        "def f(a, b):\n    probe(b)\nf(1, 2)\ng = map(f, xs)\n",  # handed on: calls out of sight
        "class T:\n    def m(self, k):\n        probe(k)\n    def run(self):\n        self.m(3)\n"
        "        hook(self.m)\n",  # a method handed on as a callback
        # a subclass's opaque construction
        "class T:\n    def __init__(self, k):\n        probe(k)\nclass U(T):\n    pass\nT(1)\nU(*xs)\n",
        "class T:\n    def __init__(self, k):\n        probe(k)\n    @classmethod\n    def make(cls):\n"
        "        return cls(2)\nT(1)\n",  # built by ``cls(...)``
        "class T:\n    def __init__(self, k):\n        probe(k)\nT(1)\nREGISTRY = {'t': T}\n",  # the class handed on
    ],
)
def test_bound_values_unknown_when_a_call_site_is_not_visible(source: str) -> None:
    assert _bound(source) is None


def test_bound_values_keyword_beats_position_and_kwargs_order() -> None:
    assert _bound("def f(a, b):\n    probe(b)\nf(1, **kw, b=3)\n") == ["3"]
    assert _bound("def f(a, b):\n    probe(b)\nf(1, 2, **kw)\n") == ["2"]  # given by position: not in **kw


@pytest.mark.parametrize(
    "source, expected",
    [
        # torch.multiprocessing.spawn calls fn(rank, *args): the rank is the launcher's own value
        ("import torch.multiprocessing as mp\ndef w(rank, n, cfg):\n    probe(cfg)\n"
         "mp.spawn(w, nprocs=2, args=(2, 'a'))\nw(0, 1, 'b')\n", ["'b'", "'a'"]),  # calls, then launches
        ("import torch.multiprocessing as mp\ndef w(rank, n, cfg):\n    probe(rank)\n"
         "mp.spawn(w, args=(2, 'a'))\n", None),
        # Process(target=f, args=..., kwargs=...) calls f(*args, **kwargs)
        ("import multiprocessing\ndef w(n, cfg=None):\n    probe(cfg)\n"
         "multiprocessing.Process(target=w, args=(1,), kwargs={'cfg': 3}).start()\n", ["3"]),
        # arguments not written out: not in sight
        ("import torch.multiprocessing as mp\ndef w(rank, n, cfg):\n    probe(cfg)\n"
         "mp.spawn(w, args=extra)\n", None),
        # a launcher this analysis does not know hands it on out of sight
        ("def w(rank, n, cfg):\n    probe(cfg)\nw(0, 1, 'b')\nlaunch(w, args=(2, 'a'))\n", None),
    ],
)
def test_bound_values_through_a_process_launch(source: str, expected: Optional[list]) -> None:
    assert _bound(source) == expected


# -- a micro-batch loop bounded by a counter, its step in the caller --------------------------------

_COUNTED = """\
import torch
import torch.nn.functional as F

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def forward_backward(batches, total, micro_bs):
    seen = 0
    while True:
        x, y = next(batches)
        F.cross_entropy(model(x), y).backward()
        seen += {step}
        if seen >= total:
            break


def train_step(batches, total, micro_bs):
    forward_backward(batches, total, micro_bs)
    optimizer.step()
    optimizer.zero_grad()
"""


@pytest.mark.parametrize("step, text", [("1", "total"), ("micro_bs", "total/micro_bs")])
def test_counted_while_loop_is_accumulation_stepped_by_the_caller(step: str, text: str) -> None:
    found = list(accumulation.accumulations(_module(_COUNTED.format(step=step))))
    assert [(f.text, f.divisor.as_string()) for f in found] == [(text, "total")]
    assert found[0].steps and isinstance(found[0].scope, nodes.FunctionDef) and found[0].scope.name == "train_step"


def test_counted_while_loop_without_a_batch_fetch_is_not_accumulation() -> None:
    source = _COUNTED.format(step="1").replace("x, y = next(batches)", "x, y = batches[seen]")
    assert list(accumulation.accumulations(_module(source))) == []


def test_tensor_attribute_reads_the_stub() -> None:
    """Attributes and methods torch's Tensor defines, not those a library sets on a parameter."""
    from flake8_torch_preflight.analysis.training import device

    assert all(device.tensor_attribute(name) for name in ("T", "grad", "data", "shape", "detach", "view"))
    assert not any(device.tensor_attribute(name) for name in ("ds_numel", "ds_shape", "ds_tensor", "logits"))


def _name_use(source: str, name: str) -> nodes.Name:
    return [n for n in _module(source).nodes_of_class(nodes.Name) if n.name == name][-1]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("for out in outputs:\n    out\n", "outputs"),
        ("[out for out in torch.softmax(x, -1)]\n", "torch.softmax(x, -1)"),
        ("for i, out in enumerate(outputs):\n    out\n", None),  # an unpacked target: not the plain element
        ("out = outputs[0]\nout\n", None),
    ],
)
def test_loop_iterable_of_a_plain_loop_target(source: str, expected: Optional[str]) -> None:
    from flake8_torch_preflight.analysis.semantic import dataflow

    found = dataflow.loop_iterable(_name_use(source, "out"))
    assert (found.as_string() if found is not None else None) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("images = zeros(4)\nfor i in range(4):\n    images[i] = draw(i)\nimages\n", ["draw(i)"]),
        ("images = zeros(4, 2)\nimages[0, :] += 1\nimages[1][0] = f()\nimages\n", ["1", "f()"]),
        ("images = zeros(4)\nother = zeros(4)\nother[0] = 1\nimages\n", []),
        ("images = zeros(4)\nimages[0], n = pair\nimages\n", None),  # a store inside an unpacking
    ],
)
def test_item_stores(source: str, expected: Optional[List[str]]) -> None:
    from flake8_torch_preflight.analysis.semantic import dataflow

    found = dataflow.item_stores(_name_use(source, "images"))
    assert (None if found is None else [value.as_string() for value in found]) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f(loss=nn.CrossEntropyLoss()):\n    loss\n", "nn.CrossEntropyLoss()"),
        ("def f(*, loss=None):\n    loss\n", "None"),
        ("def f(loss):\n    loss\n", None),  # no default
        ("loss = 1\nloss\n", None),  # no parameter
    ],
)
def test_parameter_default(source: str, expected: Optional[str]) -> None:
    found = infer.parameter_default(_name_use(source, "loss"))
    assert (found.as_string() if found is not None else None) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("model(torch.LongTensor(tokens)[None])", True),
        ("x = seq.unsqueeze(0).cuda()\nmodel(x)", True),
        ("model(torch.unsqueeze(torch.tensor(obs), 0))", True),
        ("seq = Variable(s).unsqueeze(0)\nmodel(seq[:, 3])", True),  # a column of a batch of one
        ("model(Variable(torch.LongTensor([[SOS]])))", True),
        ("model(x.view(1, -1))", True),
        ("t = x[None] if cuda else x[None].cuda()\nmodel(t)", True),
        ("model(x.view(-1, 784))", False),  # every row of a batch
        ("model(torch.zeros(1, 1, 1))", False),  # a batch built from a shape: not an item
        ("model(x.unsqueeze(1))", False),
        ("model(torch.tensor(batch))", False),
        ("model(seq[0])", False),
        ("model(hidden=x[None])", False),  # no positional input
    ],
)
def test_single_item_input(source: str, expected: bool) -> None:
    from flake8_torch_preflight.analysis.training import evaluation

    module = _module("import torch\nfrom torch.autograd import Variable\n" + source)
    call = [c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == "model"][0]
    assert evaluation.single_item_input(call) is expected


@pytest.mark.parametrize(
    "callee, expected",
    [
        ("model", True),
        ("self.encoder", True),
        ("netG", True),
        ("self.model_ema", True),
        ("build_model", False),  # a factory of a model
        ("self.l0_module.calculate_model_size", False),  # a property of a model
        ("model_config", False),
        ("tokenizer", False),
    ],
)
def test_model_named_is_a_model_not_its_factory_or_property(callee: str, expected: bool) -> None:
    assert models.model_named(_call(callee + "(x)").func) is expected


@pytest.mark.parametrize(
    "helper, expected",
    [
        ("def to_var(arg):\n    if cuda:\n        return Variable(arg).cuda()\n    return Variable(arg)\n", "noise"),
        ("def to_var(arg):\n    return arg.to('cuda', non_blocking=True)\n", "noise"),
        ("def to_var(arg):\n    return normalise(arg).cuda()\n", None),  # computes from it
        ("def to_var(arg, scale):\n    return arg.cuda()\n", None),  # more than one parameter
    ],
)
def test_moved_argument_through_a_helper(helper: str, expected: Optional[str]) -> None:
    from flake8_torch_preflight.analysis.training import evaluation

    source = "import torch\nfrom torch.autograd import Variable\n\n\n" + helper + "\n\nto_var(noise)\n"
    found = evaluation.moved_argument(_call(source))
    assert (found.as_string() if found is not None else None) == expected


WRAPPED = (
    "import torch\n\n\nclass Warmup:\n    def __init__(self, optimizer):\n        self.optimizer = optimizer\n\n"
    "    def step(self):\n        self.optimizer.step()\n\n\n"
    "class Trainer:\n    def __init__(self, optimizer):\n        self.optimizer = optimizer\n\n"
    "    def step(self, loss):\n        self.optimizer.zero_grad()\n        loss.backward()\n"
    "        self.optimizer.step()\n\n\n"
    "class Schedule:\n    def step(self):\n        self.lr = 0.5\n\n\n"
)


@pytest.mark.parametrize(
    "built, expected",
    [
        ("Warmup(torch.optim.Adam([]))", True),  # steps the optimizer it holds
        ("Trainer(torch.optim.Adam([]))", False),  # a whole update: backward, step and zero_grad
        ("Schedule()", False),  # a step that steps no optimizer
        ("torch.optim.SGD([], lr=0.1)", True),
    ],
)
def test_is_optimizer_reads_a_wrapper_that_steps_the_optimizer_it_holds(built: str, expected: bool) -> None:
    module = _module(WRAPPED + "opt = " + built + "\nopt\n")
    assert gradients.is_optimizer(module.body[-1].value) is expected


def test_dotted_name_through_a_later_star_import() -> None:
    """``from models import *`` after ``from torch.autograd import Variable``: the lookup meets only the
    star import; the explicit import the file wrote is the name's meaning."""
    module = _module("from torch.autograd import Variable\nfrom models import *\nuse(Variable)\n")
    (arg,) = _call_args(module)
    assert infer.dotted_name(arg) == "torch.autograd.Variable"
    alone = _module("from models import *\nuse(Variable)\n")
    (arg,) = _call_args(alone)
    assert infer.dotted_name(arg) is None
