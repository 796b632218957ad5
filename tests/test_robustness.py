"""Failures stay inside one file and are visible; cheap gate; the astroid cache does not grow."""
from __future__ import annotations

import ast
import gc
import weakref
from pathlib import Path

import pytest
from astroid import nodes
from astroid.manager import AstroidManager

from flake8_torch_preflight import engine
from flake8_torch_preflight.analysis.setup import brain, build
from flake8_torch_preflight.analysis.semantic import infer, memo
from flake8_torch_preflight.settings import Settings
from flake8_torch_preflight.rules import REGISTRY

SOFTMAX = (
    "import torch\nimport torch.nn.functional as F\n"
    "loss = torch.nn.CrossEntropyLoss()(F.softmax(torch.randn(2, 3), 1), torch.tensor([0, 1]))\n"
)


def _lines(source: str) -> list:
    return source.splitlines(keepends=True)


def test_a_crashing_rule_is_reported_and_the_others_still_run(monkeypatch, capsys) -> None:
    rule = REGISTRY["TP003"]

    def boom(self, node):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(rule, "visit_for", boom, raising=False)
    source = SOFTMAX + "for i in range(3):\n    loss.backward()\n"
    result = engine.analyse_file("crash.py", _lines(source), build.Settings())
    assert [f[0] for f in result["TP006"]] == [3]
    assert "TP003" not in result
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["flake8-torch-preflight: TP003 on crash.py failed: RuntimeError: simulated bug; please report it"]


def test_a_file_over_budget_is_skipped_with_a_note(monkeypatch, capsys) -> None:
    monkeypatch.setattr(engine, "BUDGET_SECONDS", 0.05)
    chain = "\n".join("def f{}(x):\n    return f{}(x)\n".format(i, i - 1) for i in range(1, 1500))
    source = "import torch\ndef f0(x):\n    return torch.softmax(x, 1)\n" + chain + "\n"
    source += "loss = torch.nn.CrossEntropyLoss()(f1499(torch.randn(2, 3)), 0)\n" * 50
    result = engine.analyse_file("slow.py", _lines(source), build.Settings())
    assert result == {}
    assert "took longer than" in capsys.readouterr().err


def test_the_work_budget_is_a_count_the_same_in_every_run(monkeypatch, capsys) -> None:
    """Past ``work.MAX_INFERENCES`` a file is skipped with its note whatever the machine's load."""
    from flake8_torch_preflight.analysis.semantic import work

    source = "import torch\nx = torch.randn(2, 3)\n" + "x = torch.softmax(x, 1)\n" * 40
    source += "loss = torch.nn.CrossEntropyLoss()(x, 0)\n"
    assert "TP006" in engine.analyse_file("small.py", _lines(source), build.Settings())
    used = work.used()
    assert used > 10
    monkeypatch.setattr(work, "MAX_INFERENCES", used - 1)
    for _ in range(2):
        assert engine.analyse_file("small.py", _lines(source), build.Settings()) == {}
        err = capsys.readouterr().err
        assert "needed more than {:,} inferences and was skipped".format(used - 1) in err
    monkeypatch.setattr(work, "MAX_INFERENCES", used)
    assert "TP006" in engine.analyse_file("small.py", _lines(source), build.Settings())


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ndef f(:\n",  # syntax error: flake8 reports E999
        "import torch\nx = " + "+".join(["'a'"] * 3000) + "\n",  # overflows astroid's rebuilder
        "",
        "\ufeffimport torch\n",
        "import torch\nif x:\n"
        + "".join("    " * i + "for a{} in b:\n".format(i) for i in range(1, 60))
        + "    " * 60
        + "pass\n",
    ],
    ids=["syntax-error", "long-expression", "empty", "bom", "deep-nesting"],
)
def test_odd_files_never_raise(source: str, capsys) -> None:
    engine.analyse_file("odd.py", _lines(source), build.Settings())
    assert "Traceback" not in capsys.readouterr().err


def test_gate_skips_files_that_cannot_involve_torch(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(engine, "_analyse", lambda *a, **k: calls.append(a[0]) or {})
    engine.analyse_file("plain.py", _lines("import os\nprint(os.getcwd())\n"), build.Settings())
    engine.analyse_file("turtle_like.py", _lines("def back(t):\n    t.backward(10)\n"), build.Settings())
    helper = "def step(loss, opt):\n    loss.backward()\n    opt.step()\n"
    engine.analyse_file("helper.py", _lines(helper), build.Settings())
    engine.analyse_file("half.py", _lines("def check(model):\n    model.eval()\n"), build.Settings())
    trainer = ("def validate(model, batches):\n    model.eval()\n    out = [model(b) for b in batches]\n"
               "    model.train()\n")
    engine.analyse_file("trainer.py", _lines(trainer), build.Settings())
    paddle = ("import paddle\n\n\ndef step(loss, opt):  # as torch's, https://pytorch.org/docs\n"
              "    opt.clear_grad()\n    loss.backward()\n    opt.step()\n")
    engine.analyse_file("paddle_port.py", _lines(paddle), build.Settings())
    both = "import paddle\nimport torch\n\n\ndef step(loss, opt):\n    loss.backward()\n    opt.step()\n"
    engine.analyse_file("converter.py", _lines(both), build.Settings())
    # No torch import, but it receives tensors and steps an optimizer, or switches a model it receives
    # to eval and back: analysed.  A ``.backward(`` alone (turtle.py moves a pen backward), or an
    # ``.eval()`` alone, is not enough; a file of another framework that never names torch is skipped.
    assert calls == ["helper.py", "trainer.py", "converter.py"]


def test_helper_module_without_torch_import_is_still_checked() -> None:
    source = (
        "def train(model, optimizer, loader):\n"
        "    for x in loader:\n"
        "        model(x).backward()\n"
        "        optimizer.step()\n"
    )
    result = engine.analyse_file("helper.py", _lines(source), build.Settings())
    assert [f[0] for f in result["TP003"]] == [3]


def test_astroid_cache_does_not_grow_per_file() -> None:
    manager = AstroidManager()
    engine.analyse_file("warm.py", _lines(SOFTMAX), build.Settings())
    before = len(manager.astroid_cache)
    for i in range(40):
        engine.analyse_file("f{}.py".format(i), _lines(SOFTMAX + "y{} = 1\n".format(i)), build.Settings())
    assert len(manager.astroid_cache) == before


#: A training file that fills the analysis memos (calls by name, a step loop) and has astroid's
#: getattr transform make the ``torch.cuda`` stub's parent one of its calls.
REMEMBERED = (
    "import torch\n"
    "backend = getattr(torch, 'cuda', torch.cuda)\n"
    "def step(model, opt, x):\n"
    "    loss = model(x).sum()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    opt.zero_grad()\n"
    "    return loss\n"
    "def train(model, opt, loader):\n"
    "    losses = []\n"
    "    for x in loader:\n"
    "        losses.append(step(model, opt, x).item())\n"
    "    backend.synchronize()\n"
    "    return losses\n"
)


def test_no_checked_module_outlives_its_file(monkeypatch) -> None:
    """Memos holding a module's own calls kept every checked module alive (a WeakKeyDictionary
    whose value reaches its key through ``parent``), and so did the stub that astroid's getattr
    transform parented to a call of the file: memory grew with every file."""
    built = []
    original = engine.build_module

    def build_and_watch(*args, **kwargs):
        module = original(*args, **kwargs)
        built.append(weakref.ref(module))
        return module

    monkeypatch.setattr(engine, "build_module", build_and_watch)
    for i in range(12):
        engine.analyse_file("train{}.py".format(i), _lines(REMEMBERED), build.Settings())
    gc.collect()
    assert len(built) == 12
    assert sum(ref() is not None for ref in built) <= 2  # astroid's object models keep the last one seen
    assert all(not table for table in memo._TABLES)
    cuda = brain.stub_module("torch.cuda")
    assert cuda is not None and cuda.parent is None and cuda.root() is cuda


REFUSED_STDLIB = SOFTMAX + (
    "import argparse\nimport typing\nfrom collections import namedtuple\nfrom typing import NamedTuple\n"
    "Saved = namedtuple('Saved', ['log_prob', 'value'])\n"
    "class Point(NamedTuple):\n    x: int\n"
    "class Point3(Point):\n    pass\n"  # astroid's enum check infers Point's bases while building
    "args = argparse.ArgumentParser().parse_args()\n"
    "p = Point(args.x)\nq = Saved(p.x, typing.cast(int, args.y))\n"
    "out = torch.nn.CrossEntropyLoss()(F.softmax(torch.randn(2, 3), 1), torch.tensor([q.value, p.x]))\n"
)


def test_refused_stdlib_modules_are_unknown_not_errors(capsys) -> None:
    """typing and argparse are not read (brain.STDLIB_READ): their values are unknown, astroid's
    namedtuple/NamedTuple inference on them does not surface as an internal error, and rules
    that need nothing from them still report."""
    result = engine.analyse_file("stdlib.py", _lines(REFUSED_STDLIB), build.Settings())
    assert [f[0] for f in result["TP006"]] == [3, 16]
    assert capsys.readouterr().err == ""
    cache = AstroidManager().astroid_cache
    assert "argparse" not in cache and "typing" not in cache


def test_collector_thresholds_are_restored_after_each_file(capsys) -> None:
    import gc

    before = gc.get_threshold()
    engine.analyse_file("softmax.py", _lines(SOFTMAX), build.Settings())
    engine.analyse_file("odd.py", _lines("import torch\ndef f(:\n"), build.Settings())
    assert gc.get_threshold() == before


def test_stubs_are_built_on_first_use() -> None:
    """A process builds only the torch stubs that inference reaches (start-up time)."""
    import ast
    import subprocess
    import sys

    code = (
        "from flake8_torch_preflight import engine\n"
        "from flake8_torch_preflight.analysis.setup import brain, build\n"
        "src = {!r}\n"
        "engine.analyse_file('s.py', src.splitlines(True), build.Settings())\n"
        "print(sorted(brain._STUBS))\n"
    ).format(SOFTMAX)
    built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    names = ast.literal_eval(built.stdout.strip().splitlines()[-1])
    assert "torch" in names and "torch.nn.functional" in names
    assert "torch.distributed.fsdp" not in names and "torch.optim.lr_scheduler" not in names


def test_a_module_read_for_one_folder_is_not_served_to_another(tmp_path) -> None:
    """Findings must not depend on which files flake8 checked before: a project module read for a
    file in one folder stays out of reach of a file in another folder that cannot import it (it
    would otherwise come back from astroid's cache; seen on timm's tests run from outside the repo)."""
    import pytest as _pytest
    from astroid.exceptions import AstroidImportError

    from flake8_torch_preflight.analysis.setup import brain

    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    (first / "tp_only_here.py").write_text("import torch\nclass Net(torch.nn.Module):\n    pass\n")
    brain.install()
    brain.begin_file(str(first / "a.py"))
    assert AstroidManager().ast_from_module_name("tp_only_here").name == "tp_only_here"  # a sibling: read
    brain.begin_file(str(second / "b.py"))
    with _pytest.raises(AstroidImportError):
        AstroidManager().ast_from_module_name("tp_only_here")


def test_relative_names_under_builtins_are_guarded_like_the_module_they_name() -> None:
    """astroid asks for ``builtins.io`` when it infers ``open()``; that is the ``io`` module, which
    is not read (0.09 s per process when it was)."""
    import pytest as _pytest
    from astroid.exceptions import AstroidImportError

    from flake8_torch_preflight.analysis.setup import brain

    brain.install()
    with _pytest.raises(AstroidImportError):
        AstroidManager().ast_from_module_name("builtins.io")
    assert AstroidManager().ast_from_module_name("builtins").name == "builtins"


def test_the_astroid_build_reuses_flake8s_tree_and_only_for_that_file(tmp_path: Path) -> None:
    """build_module(tree=...) rebuilds from flake8's ast instead of parsing again: the same module
    as from the source; astroid's parse function is restored at once, so a sibling module read
    while the checked file is analysed is parsed from its own source."""
    from astroid import builder as astroid_builder

    (tmp_path / "helpers.py").write_text("import torch\ndef make():\n    return torch.nn.Linear(2, 2)\n")
    source = "import torch\nfrom helpers import make\nmodel = make()\nout = model(torch.randn(1, 2))\n"
    path = str(tmp_path / "train.py")
    original = astroid_builder._parse_string
    brain.begin_file(path)  # as the engine does: sibling modules of this file may be read
    from_tree = build.build_module(source, path, ast.parse(source))
    assert astroid_builder._parse_string is original
    assert from_tree.as_string() == build.build_module(source, path).as_string()
    made = from_tree.body[2].value
    assert isinstance(made, nodes.Call)
    assert infer.qname(made) == "torch.nn.Linear"  # helpers.py parsed from its own text


def test_the_reused_tree_is_handed_out_once() -> None:
    """Inside the build, only astroid's first parse (the checked file's) gets flake8's tree; a
    module parsed later in the same build (read by a transform's inference) gets its own."""
    from astroid import builder as astroid_builder

    tree = ast.parse("checked = 1\n")
    with build._parsed_as(tree):
        first = astroid_builder._parse_string("other = 2\n")
        second = astroid_builder._parse_string("other = 2\n")
    first_node = first[0] if isinstance(first, tuple) else first
    second_node = second[0] if isinstance(second, tuple) else second
    assert first_node is tree
    assert isinstance(second_node, ast.Module) and second_node.body[0].targets[0].id == "other"


def test_a_rule_gate_never_passes_on_a_comment_alone() -> None:
    """The cheap text gates are matched on code: a finding never depends on what a comment says."""
    settings = Settings(selected=frozenset({"TP012"}))
    loader = "from torch.utils.data import DataLoader\nloader = DataLoader(data)\n"
    assert [r.code for r in engine._gated_rules(loader + "# trained on cuda\n", settings)] == []
    assert [r.code for r in engine._gated_rules(loader + "device = 'cuda'  # a GPU\n", settings)] == ["TP012"]
    # a string, not a comment
    assert [r.code for r in engine._gated_rules(loader + "s = '# cuda'\n", settings)] == ["TP012"]
