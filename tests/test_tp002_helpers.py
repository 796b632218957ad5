"""TP002's reading of forwards named like an evaluation that are training forwards."""
from __future__ import annotations

import textwrap

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.setup.build import build_module
from flake8_torch_preflight.analysis.training import evaluation
from flake8_torch_preflight.rules import tp002_missing_no_grad as tp002

SOURCE = textwrap.dedent(
    """
    def train(net, loader, loss_dict, optimizer):
        for batch in loader:
            results = inference(net, batch)
            loss = calc_loss(loss_dict, results)
            loss.backward()
            shown = inference(net, batch)
            print(summarize(shown))
    """
)


def test_a_result_handed_to_the_loss_that_gets_backward() -> None:
    module = build_module(SOURCE, "/tmp/tp_tp002_helpers_case.py")
    sites = [c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == "inference"]
    assert [tp002._makes_loss(site) for site in sites] == [True, False]


@pytest.mark.parametrize(
    "name, expected",
    [("evaluate_actions", False), ("evaluate_action", False), ("evaluate_policy", True), ("validate", True)],
)
def test_evaluate_actions_names_a_training_quantity(name: str, expected: bool) -> None:
    module = build_module("def {}(self, obs):\n    for x in obs:\n        pass\n".format(name), "/tmp/tp_names.py")
    func = next(module.nodes_of_class(nodes.FunctionDef))
    assert evaluation.eval_named(func) is expected
