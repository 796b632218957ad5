"""A helper read with its caller's values (TP002's shared passes, TP008's mode helpers): the frame's
bindings are ``static_values.evaluate``'s environment (``modes.FrameValues``), the one constant
evaluator; ``modes.by_frame`` keeps only what those bindings decide."""
from __future__ import annotations

from typing import Dict, List

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.training import models, modes
from flake8_torch_preflight.analysis.semantic import static_values
from flake8_torch_preflight.analysis.setup.build import build_module


def _module(source: str) -> nodes.Module:
    return build_module(source, "/tmp/tp_queries_modes_case.py")


def _functions(module: nodes.Module) -> Dict[str, nodes.FunctionDef]:
    return {f.name: f for f in module.nodes_of_class(nodes.FunctionDef)}


def _site(module: nodes.Module, callee: str, line: int) -> nodes.Call:
    return next(c for c in module.nodes_of_class(nodes.Call)
                if isinstance(c.func, nodes.Name) and c.func.name == callee and c.lineno == line)


def _reached(module: nodes.Module, helper: str, line: int) -> List[str]:
    """Texts of the calls ``helper`` runs when called at ``line``."""
    func = _functions(module)[helper]
    return [c.func.as_string() for c, _ in modes.calls_when_called(func, _site(module, helper, line))]


def test_truth_is_decided_by_one_known_operand() -> None:
    module = _module("def f(a):\n    return (a and False, a or True, not (a and 0), a and True, 1 and 2)\n")
    tests = next(module.nodes_of_class(nodes.Tuple)).elts
    assert [static_values.truth(t) for t in tests] == [False, True, True, None, True]


def test_live_value_leaves_aside_branches_a_known_test_rules_out() -> None:
    # ``tpu and x`` is false whatever ``x`` is: the branch's assignment never runs
    module = _module("tpu = False\ndevices = 8\nif tpu and flag():\n    devices = 'auto'\nuse(devices)\n")
    use = next(c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == "use")
    live = static_values.live_value(use.args[0])
    assert live is not None and live.as_string() == "8"
    # a test that cannot be decided leaves both bindings
    module = _module("devices = 8\nif flag():\n    devices = 'auto'\nuse(devices)\n")
    use = next(c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == "use")
    assert static_values.live_value(use.args[0]) is None


def test_frame_values_evaluate_the_callers_argument_in_the_callers_frame() -> None:
    source = (
        "def inner(flag):\n"
        "    return flag\n"
        "def outer(mode):\n"
        "    inner(mode == 'eval')\n"
        "outer('eval')\n"
        "outer(phase)\n"
    )
    module = _module(source)
    funcs = _functions(module)
    site = next(c for c in funcs["outer"].nodes_of_class(nodes.Call))
    flag = next(funcs["inner"].nodes_of_class(nodes.Return)).value
    for outer_line, expected in ((5, True), (6, None)):
        outer_frame = modes.bind(funcs["outer"], _site(module, "outer", outer_line), modes.ROOT)
        frame = modes.bind(funcs["inner"], site, outer_frame)
        found = static_values.evaluate(flag, modes.FrameValues(frame))
        assert (found.value if found is not None else None) == expected
    assert "flag" in modes.FrameValues(frame) and len(modes.FrameValues(frame)) == 1


_PASS = """\
DEBUG = False


def run(model, loader, mode="train", scale=1):
    is_train = mode == "train"
    for x in loader:
        out = model(x)
        if is_train and scale > 0:
            out.backward()
        if DEBUG:
            show(out)
        if not is_train or check(out):
            report(out)
        else:
            skip(out)


run(net, val, mode="eval")
run(net, train)
run(net, val, mode=args_mode)
"""


def test_if_tests_are_decided_by_the_bound_values_only() -> None:
    module = _module(_PASS)
    # a local derived from a bound parameter decides; ``DEBUG`` is not the caller's to decide
    assert _reached(module, "run", 18) == ["model", "show", "check", "report"]
    # the default ``mode="train"``: the backward runs, ``not is_train or check(out)`` is left open
    assert _reached(module, "run", 19) == ["model", "out.backward", "show", "check", "report", "skip"]
    # an argument with no known value decides nothing
    assert _reached(module, "run", 20) == ["model", "out.backward", "show", "check", "report", "skip"]


def test_train_flag_bound_to_false_is_an_eval_switch() -> None:
    source = (
        "EVAL = True\n"
        "def set_train(models, flag):\n"
        "    for m in models:\n"
        "        m.train(flag)\n"
        "set_train([g], False)\n"
        "set_train([g], 1)\n"
        "set_train([g], not EVAL)\n"
    )
    module = _module(source)
    func = _functions(module)["set_train"]
    verdicts = []
    for line in (5, 6, 7):
        (switch, frame), = modes.calls_when_called(func, _site(module, "set_train", line))
        verdicts.append(modes.switches_to_eval(switch, frame))
    assert verdicts == [True, False, True]


def test_by_frame_needs_a_binding_that_matters() -> None:
    module = _module("def f(a):\n    if a:\n        pass\n    if b:\n        pass\nb = 1\nf(0)\n")
    func = _functions(module)["f"]
    frame = modes.bind(func, _site(module, "f", 7), modes.ROOT)
    first, second = [s.test for s in func.body]
    assert modes.by_frame(static_values.truth, first, frame) is False
    assert static_values.truth(second) is True  # known without the frame: not the frame's verdict
    assert modes.by_frame(static_values.truth, second, frame) is None
    assert modes.by_frame(static_values.truth, first, modes.ROOT) is None


# ``models.mode_dependent``: does eval() change what the model computes (TP008 is silent on False)?

_MODE_CLASSES = '''
import torch
import torch.nn as nn
import torchvision


class MLP(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 32), nn.ReLU(), nn.Linear(32, d_out))

    def forward(self, x):
        return self.net(x)


class Stacked(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = MLP(4, 4)
        self.norm = nn.InstanceNorm1d(4)

    def forward(self, x):
        return self.norm(self.body(x))


class Tracking(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm1d(4, track_running_stats=True)


class Dropped(MLP):
    def forward(self, x):
        return torch.nn.functional.dropout(self.net(x), 0.5, training=self.training)


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()


class Configured(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.act = getattr(nn, cfg.act)()


class Holder(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4, num_layers=2, dropout=0.1)


m_mlp = MLP(4, 2)
m_stacked = Stacked()
m_tracking = Tracking()
m_dropped = Dropped(4, 2)
m_outer = Outer()
m_configured = Configured(None)
m_holder = Holder(MLP(4, 4))
m_holder_plain = Holder(3)
m_recurrent = Recurrent()
m_resnet = torchvision.models.resnet18()
m_moved = MLP(4, 2).to("cuda")
'''


def _mode_of(name: str) -> object:
    module = _module(_MODE_CLASSES)
    use = next(n for n in module.nodes_of_class(nodes.AssignName) if n.name == name)
    return models.mode_dependent(use.parent.value)


def test_mode_free_models_are_read_through_their_classes() -> None:
    assert _mode_of("m_mlp") is False
    assert _mode_of("m_moved") is False
    assert _mode_of("m_stacked") is False  # a submodule class of the file; InstanceNorm without running stats
    assert _mode_of("m_holder_plain") is False  # a plain constant handed in registers nothing


def test_mode_dependent_layers_and_training_reads() -> None:
    assert _mode_of("m_tracking") is True
    assert _mode_of("m_dropped") is True  # ``training=self.training`` in a subclass's forward
    assert _mode_of("m_outer") is True  # BatchNorm2d (a BatchNorm1d subclass in the stubs) one class down
    assert _mode_of("m_recurrent") is True


def test_what_is_not_read_is_unknown() -> None:
    assert _mode_of("m_configured") is None  # a layer picked from a config
    assert _mode_of("m_holder") is None  # a module handed in through the constructor
    assert _mode_of("m_resnet") is None  # a library model


@pytest.mark.parametrize(
    "built, expected",
    [
        ("nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1)).cuda()", True),
        ("nn.Sequential(nn.Linear(8, 8), nn.ReLU())", False),
        ("nn.ModuleList([nn.Linear(8, 8), nn.BatchNorm1d(8)])", True),
        ("nn.Sequential(*layers)", None),  # modules handed in: unknown
    ],
)
def test_mode_of_a_container_built_in_place_is_what_its_arguments_build(built: str, expected: object) -> None:
    module = _module("import torch.nn as nn\nlayers = make()\nm = " + built + "\n")
    use = next(n for n in module.nodes_of_class(nodes.AssignName) if n.name == "m")
    assert models.mode_dependent(use.parent.value) is expected
