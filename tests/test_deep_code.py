"""Bad input never costs findings silently: deep or huge code is cut down (``analysis.semantic.depth``,
``analysis.semantic.lookups``, the project-module size bound) so that the file's other findings survive,
and an analysis that still gives up says so in one line (issue 18)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from astroid import nodes

from flake8_torch_preflight import engine
from flake8_torch_preflight.analysis.setup import brain, build
from flake8_torch_preflight.analysis.semantic import depth, infer, lookups
from flake8_torch_preflight.analysis.training import provenance

#: A training script with one TP001, one TP006 and one TP009 finding.
SCRIPT = (
    "import torch\n"
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "model = nn.Linear(4, 4)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "losses = []\n"
    "for step in range(100000):\n"
    "    x = torch.randn(2, 4)\n"
    "    opt.zero_grad()\n"
    "    loss = nn.CrossEntropyLoss()(F.softmax(model(x), 1), 0)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    losses.append(loss)\n"
)
EXPECTED = [("TP001", 13), ("TP006", 10), ("TP009", 4)]


def _findings(source: str, filename: str = "deep.py") -> List[Tuple[str, int]]:
    result = engine.analyse_file(filename, source.splitlines(keepends=True), build.Settings(), ast.parse(source))
    return sorted((code, line) for code, found in result.items() for line, _, _ in found)


DEEP = {
    "attribute-chain-330": "y = x" + ".a" * 330 + "\n",
    "attribute-chain-in-loop": "for s in range(2):\n    y = loss" + ".a" * 330 + "\n",
    "plus-500": "z = " + " + ".join(["1"] * 500) + "\n",
    "string-plus-600": "z = " + "+".join(["'a'"] * 600) + "\n",
    "tensor-plus-500": "for s in range(2):\n    z = " + " + ".join(["loss"] * 500) + "\n",
    "subscript-500": "w = losses" + "[0]" * 500 + "\n",
    "method-chain-400": "w = loss" + ".mean()" * 400 + "\n",
    "elif-300": "".join("{}if step == {}:\n    lr = {}\n".format("el" if i else "", i, i) for i in range(300)),
    "calls-190": "w = " + "abs(" * 190 + "1" + ")" * 190 + "\n",
}


@pytest.mark.parametrize("extra", list(DEEP.values()), ids=list(DEEP))
def test_deep_code_costs_no_finding(extra: str, capsys: pytest.CaptureFixture) -> None:
    """Each of these made astroid (or the analysis) overflow the recursion limit: the file lost
    TP001 (attribute chains) or every finding (long sums, elif ladders), with no note."""
    assert _findings(SCRIPT + extra) == EXPECTED
    assert capsys.readouterr().err == ""


def test_flake8s_tree_is_left_as_it_was() -> None:
    source = SCRIPT + DEEP["plus-500"] + DEEP["elif-300"]
    tree = ast.parse(source)
    before = len(list(ast.walk(tree)))
    assert depth.too_deep(tree)
    module = build.build_module(source, "deep.py", tree)
    assert len(list(ast.walk(tree))) == before
    assert isinstance(tree.body[-1], ast.If) and len(tree.body) == 9  # the ladder is still one statement
    assert len(module.body) == 308  # read as 300 separate ifs
    summed = module.body[7].value
    names = [n.name for n in summed.nodes_of_class(nodes.Name)]
    assert depth.PRUNED_NAME in names


def test_ordinary_code_is_built_from_flake8s_tree_unchanged() -> None:
    source = Path(provenance.runner.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert not depth.too_deep(tree)
    copy = depth.bounded(tree)
    assert ast.dump(copy, include_attributes=True) == ast.dump(tree, include_attributes=True)


def test_a_deep_sibling_module_warns_nobody(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """astroid builds a sibling module itself (no pruning); its transforms overflow on deep calls
    and warn, several lines each.  None of it reaches the terminal; the script keeps its findings."""
    (tmp_path / "helpers.py").write_text("def f(x=None):\n    return x\nw = " + "f(" * 195 + ")" * 195 + "\n")
    script = tmp_path / "train.py"
    source = "from helpers import f\n" + SCRIPT
    assert _findings(source, str(script)) == [(code, line + 1) for code, line in EXPECTED]
    assert capsys.readouterr().err == ""


def test_a_project_module_over_the_size_bound_is_not_read(tmp_path: Path, monkeypatch) -> None:
    """A 1.8 MB sibling made its importer lose every finding (the time went into building it)."""
    monkeypatch.setattr(brain, "MAX_PROJECT_MODULE_BYTES", 4096)
    body = "import torch\ndef make():\n    return torch.nn.Linear(2, 2)\n"
    (tmp_path / "small.py").write_text(body)
    padding = "".join("def h{0}(x):\n    return x + {0}\n".format(i) for i in range(300))
    (tmp_path / "large.py").write_text(body + padding)
    source = "from small import make as a\nfrom large import make as b\nA = a()\nB = b()\n"
    brain.install()
    brain.begin_file(str(tmp_path / "train.py"))
    try:
        module = build.build_module(source, str(tmp_path / "train.py"))
        assert infer.qname(module.body[2].value) == "torch.nn.Linear"
        assert infer.qname(module.body[3].value) is None
    finally:
        engine._forget_file()
    script = "from large import make\n" + SCRIPT
    assert _findings(script, str(tmp_path / "train.py")) == [(code, line + 1) for code, line in EXPECTED]


def test_a_build_that_overflows_is_noted(monkeypatch, capsys: pytest.CaptureFixture) -> None:
    def overflow(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(engine, "build_module", overflow)
    assert _findings(SCRIPT, "over.py") == []
    assert capsys.readouterr().err.splitlines() == [
        "flake8-torch-preflight: analysis on over.py nests too deep for astroid to build it and was skipped; "
        "please report it"
    ]


def test_provenance_that_gives_up_says_so(monkeypatch, capsys: pytest.CaptureFixture) -> None:
    """TP001 needs the whole-file provenance; when it gives up, TP001 is silent and a note says why
    (it used to be silent only).  The other rules still report."""
    monkeypatch.setattr(provenance.runner, "MAX_STEPS", 5)
    assert _findings(SCRIPT, "big.py") == [("TP006", 10), ("TP009", 4)]
    assert capsys.readouterr().err.splitlines() == [
        "flake8-torch-preflight: autograd provenance (TP001, TP002) on big.py needed more than 5 statement runs "
        "and was given up; please report it"
    ]


def _chain(size: int) -> str:
    return SCRIPT + "".join("    loss = loss + x.mean() * {}\n".format(i % 5) for i in range(size))


def _ladder(size: int) -> str:
    return SCRIPT + "".join("    if step == {}:\n        loss = loss + 1\n".format(i) for i in range(size))


def _nested(size: int) -> str:
    return "def f(a, b):\n" + "".join(
        "    if a > {0}:\n        b = b + {0}\n    else:\n        b = b * 2\n    a = a + b\n".format(i)
        for i in range(size)) + "    return a + b\n"


FIXTURES = sorted(Path(__file__).parent.joinpath("fixtures", "rules").glob("*.py"))


@pytest.mark.parametrize(
    "source",
    [_chain(200), _ladder(40), _nested(60), SCRIPT] + [p.read_text(encoding="utf-8") for p in FIXTURES],
    ids=lambda s: "{} lines".format(s.count("\n")),
)
def test_bounded_lookup_answers_as_astroid(source: str) -> None:
    """Wherever astroid's own filter leaves at most MAX_CANDIDATES bindings, the bounded filter
    gives the same bindings, in the same order, for every name of the file."""
    lookups.install()
    brain.install()
    module = build.build_module(source, "same.py")
    compared = 0
    try:
        for name in module.nodes_of_class(nodes.Name):
            scope = name.scope()
            stmts = scope.locals.get(name.name)
            if not stmts:
                continue
            assert lookups._ORIGINAL is not None
            expected = lookups._ORIGINAL(name, stmts, scope, 0)
            if len(expected) > lookups.MAX_CANDIDATES:
                continue
            assert lookups._bounded_filter_stmts(name, stmts, scope, 0) == expected, name.as_string()
            compared += 1
    finally:
        engine._forget_file()
    assert compared > 0


def test_a_long_chain_of_rebindings_is_followed_to_its_end() -> None:
    """``loss = loss + term`` 3,000 times: TP001 still finds the kept loss at the end (astroid's
    lookups no longer cost the square of the chain; see benchmarks/rebinding_chain.py)."""
    source = _chain(3000) + "    losses.append(loss)\n"
    assert _findings(source) == sorted(EXPECTED + [("TP001", 3014)])


def test_chained_assignments_keep_small_dependency_records() -> None:
    """``v{i} = v{i-1} * 2``: each value records only the bindings its expression reads (the
    transitive closure is computed when asked), so memory grows with the file, not its square."""
    body = "".join("    v{} = v{} * 2\n".format(i, i - 1) for i in range(1, 400))
    source = SCRIPT + "    v0 = loss\n" + body + "    losses.append(v399)\n"
    module = build.build_module(source, "chain.py")
    ctx = build.FileContext(module, "chain.py", source.splitlines(True), build.Settings())
    try:
        p = provenance.of(ctx)
        sizes: Dict[int, int] = {}
        for assign in ctx.module.nodes_of_class(nodes.Assign):
            value = p.value(assign.value)
            if value is not None:
                sizes[assign.lineno] = len(value.deps)
        assert max(sizes.values()) <= 3
        last = ctx.module.body[-1].body[-1].value.args[0]
        assert p.carries_graph(last)
        first_def = p.def_of(ctx.module.body[-1].body[7].targets[0])
        assert first_def is not None and p.depends_on(p.value(last), frozenset({id(first_def)}))
    finally:
        engine._forget_file()


def test_a_binding_in_a_branch_is_judged_once_per_file(monkeypatch) -> None:
    """Names in branch tests lead to other names' bindings and their branches: each binding's "is its
    branch ruled out" is worked out once per file, not once per path that reaches it (a training
    script's counters and flags read that way took the analysis past its budget)."""
    from flake8_torch_preflight.analysis.semantic import static_values

    lines = ["import torch", "flag = len([]) > 0"]
    for i in range(1, 6):
        lines += ["if flag or level{} > 0:".format(i - 1) if i > 1 else "if flag:",
                  "    level{} = 1".format(i), "else:", "    level{} = 0".format(i)]
        lines += ["if level{} > 0:".format(i), "    level{} = 2".format(i)]
    lines += ["if level5 > 1:", "    print(level5)"]
    module = build.build_module("\n".join(lines) + "\n", "chained.py")
    seen: List[int] = []
    original = static_values._not_taken
    monkeypatch.setattr(static_values, "_not_taken", lambda b, d: seen.append(id(b)) or original(b, d))
    static_values.truth(module.body[-1].test)
    assert seen and len(seen) == len(set(seen))
