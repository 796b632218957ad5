"""Same input, same findings: a file's findings depend only on that file and the project modules it
reads, never on the files analysed before it in the process, their order or the hash seed (issue 18).

Reduced from a scan of ten training repositories: litgpt's ``tests/test_lora.py`` assigns
``torch.nn.Linear = MyLinear``; astroid recorded that assignment in the shared ``torch.nn`` stub,
and every later file of the process lost the TP009 finding of its ``nn.Linear(...)`` (its first
draw moved to a ``DataLoader(shuffle=True)`` line, or vanished).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from astroid import nodes

from flake8_torch_preflight import engine
from flake8_torch_preflight.analysis.setup import brain, build
from flake8_torch_preflight.analysis.semantic import infer

from harness import ALL_CODES, FIXTURES, ROOT, headers, run_plugin

#: A checked file that assigns into torch in every way astroid records: a stub module's name, a
#: stub class's attribute, an attribute of a tensor and of a layer (instance attributes of stub
#: classes), a standard-library module's name.
ASSIGNS_INTO_TORCH = """\
import collections
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


class MyLinear(nn.Module):
    pass


torch.nn.Linear = MyLinear
nn.CrossEntropyLoss = object
nn.Module.register_buffer = print
F.softmax = None
torch.utils.data.DataLoader = list
torch.manual_seed = print
torch.Tensor.backward = len
t = torch.randn(3)
t.requires_grad = False
layer = nn.Conv2d(1, 2, 3)
layer.weight = None
collections.OrderedDict = dict
DataLoader.shuffle = True
"""


def _files() -> List[Tuple[Path, str]]:
    paths = sorted(p for p in FIXTURES.rglob("*.py") if p.name != "__init__.py")
    paths += sorted((ROOT / "examples").glob("*.py"))
    return [(p, p.read_text(encoding="utf-8")) for p in paths]


def _analyse(files: List[Tuple[Path, str]]) -> Dict[str, List[Tuple[int, int, str]]]:
    """Every code's findings (with each file's ``# OPTIONS:``, so that TPV001 runs) per file."""
    found = {}
    for path, source in files:
        _, options = headers(source)
        found[str(path)] = run_plugin(path, source, ALL_CODES, options)
    return found


def test_findings_do_not_depend_on_the_files_before(tmp_path: Path) -> None:
    crafted = tmp_path / "assigns_into_torch.py"
    crafted.write_text(ASSIGNS_INTO_TORCH)
    files = _files()
    assert len(files) > 60
    first = _analyse(files + [(crafted, ASSIGNS_INTO_TORCH)])
    second = _analyse([(crafted, ASSIGNS_INTO_TORCH)] + list(reversed(files)))
    assert first == second
    assert sum(len(v) for v in first.values()) > 100  # the fixtures do report: this compares findings


def test_an_assignment_into_torch_is_undone_when_its_file_ends() -> None:
    """The stubs (and ``collections``) read the same after a file that assigns into them."""
    engine.analyse_file("warm.py", ["import torch\nx = torch.nn.Linear(2, 2)\nx.sum().backward()\n"], build.Settings())
    nn_stub = brain.stub_module("torch.nn")
    tensor = brain.stub_module("torch").locals["Tensor"][0]
    conv = nn_stub.locals["Conv2d"][0]
    before = (
        {k: list(v) for k, v in nn_stub.locals.items()},
        {k: list(v) for k, v in tensor.instance_attrs.items()},
        {k: list(v) for k, v in conv.instance_attrs.items()},
    )
    engine.analyse_file("assigns.py", ASSIGNS_INTO_TORCH.splitlines(keepends=True), build.Settings())
    after = (
        {k: list(v) for k, v in nn_stub.locals.items()},
        {k: list(v) for k, v in tensor.instance_attrs.items()},
        {k: list(v) for k, v in conv.instance_attrs.items()},
    )
    assert after == before
    assert [type(n).__name__ for n in nn_stub.locals["Linear"]] == ["ClassDef"]


def test_inside_the_file_its_own_assignments_count() -> None:
    """While the file that rebinds ``nn.Linear`` is analysed, astroid sees both values (doubt:
    no TP009 at that call); the next file sees the stub alone."""
    source = (
        "import torch\nimport torch.nn as nn\n"
        "class MyLinear(nn.Module):\n    pass\n"
        "nn.Linear = MyLinear\n"
        "model = nn.Linear(2, 2)\n"
        "model(torch.load('x.pt')).sum().backward()\n"  # data read: a run, not a made-up demo
        "torch.save(model.state_dict(), 'm.pt')\n"
    )
    assert "TP009" not in {c for c, f in engine.analyse_file("a.py", source.splitlines(True), build.Settings()).items()
                           if f}
    clean = source.replace("nn.Linear = MyLinear\n", "pass\n")
    result = engine.analyse_file("b.py", clean.splitlines(True), build.Settings())
    assert [f[0] for f in result["TP009"]] == [6]


_SUBPROCESS = """\
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from test_determinism import _analyse, _files
found = _analyse(_files()[::{step}])
print(json.dumps(found, sort_keys=True))
"""


def _start(seed: str, step: int) -> "subprocess.Popen[str]":
    code = _SUBPROCESS.format(tests=str(ROOT / "tests"), step=step)
    env = {"PYTHONHASHSEED": seed, "PATH": "", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _result(process: "subprocess.Popen[str]") -> Dict[str, List]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_findings_do_not_depend_on_the_hash_seed() -> None:
    """Two processes, two hash seeds (set and dict iteration orders differ), files in opposite orders."""
    first, second = _start("0", 1), _start("1", -1)
    found = _result(first)
    assert found == _result(second)
    assert sum(len(v) for v in found.values()) > 100


def test_a_project_module_is_read_from_the_checked_files_own_tree(tmp_path: Path) -> None:
    """``models.py`` of ``run/`` and of ``run/sub/`` are different modules: the one read for a file of
    ``run/sub`` must not be served to a file of ``run`` (it lies below ``run``, too)."""
    top, sub = tmp_path / "run", tmp_path / "run" / "sub"
    sub.mkdir(parents=True)
    (top / "models.py").write_text("import torch\ndef make():\n    return torch.nn.Linear(2, 2)\n")
    (sub / "models.py").write_text("import torch\ndef make():\n    return torch.nn.Conv2d(2, 2, 1)\n")
    source = "from models import make\nlayer = make()\n"

    def made(folder: Path) -> object:
        brain.install()
        brain.begin_file(str(folder / "train.py"))
        try:
            module = build.build_module(source, str(folder / "train.py"))
            call = module.body[1].value
            assert isinstance(call, nodes.Call)
            return infer.qname(call)
        finally:
            engine._forget_file()

    assert made(sub) == "torch.nn.Conv2d"
    assert made(top) == "torch.nn.Linear"
    assert made(sub) == "torch.nn.Conv2d"


_ONE_FILE = """\
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from harness import run_plugin
path = Path({path!r})
print(json.dumps(run_plugin(path, path.read_text(encoding="utf-8"), ["TP009"])))
"""


def test_a_call_drawing_from_two_generators_names_them_in_one_order() -> None:
    """A project helper drawing from ``random`` and torch in one call: the message names torch first under
    every hash seed (the generators of one call are a set; hash seeds 0 and 2 ordered it differently)."""
    path = FIXTURES / "tp009_project_two_generators.py"
    code = _ONE_FILE.format(tests=str(ROOT / "tests"), path=str(path))
    runs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={"PYTHONHASHSEED": seed, "PATH": "", "PYTHONDONTWRITEBYTECODE": "1"})
        for seed in ("0", "2", "5")
    ]
    found = [_result(run) for run in runs]
    assert found[0] == found[1] == found[2]
    assert [message for _, _, message in found[0]] == [
        message for _, _, message in found[0] if "uses the torch RNG, never seeded (nor random)" in message
    ] != []
