"""The semantic questions each answered once in the analysis: a call's argument by name or
position (``infer.argument``), the enclosing function (``loops.enclosing_function``) and the
file's function names (``loops.defined_function_names``)."""
from __future__ import annotations

from typing import Optional

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis import infer, loops
from flake8_torch_preflight.analysis.build import build_module


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
