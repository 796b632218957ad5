"""``analysis.semantic.branches``: an ``if`` on a flag that every assignment of the project leaves off is a
branch no run takes; a flag a run may turn on (the command line, a parameter, a configuration file,
a store of another value anywhere in the project) is not.  Each case is a small project written
to a temporary folder (``setup.py`` marks its top), since the answer reads the project's files."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.semantic import branches
from flake8_torch_preflight.analysis.setup.build import build_module

_AGENT = (
    "class Agent:\n"
    "    def __init__(self, config):\n"
    "        self.dbg_flag = config.dbg_flag\n"
    "    def step(self):\n"
    "        if self.dbg_flag:\n"
    "            self.dump()\n"
    "    def dump(self):\n"
    "        print(1)\n"
)
_CONFIG = "class Config:\n    def __init__(self):\n        self.dbg_flag = False\n"


def _branch(tmp_path: Path, files: Dict[str, str], checked: str = "agent.py") -> nodes.If:
    (tmp_path / "setup.py").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    module = build_module(files[checked], str(tmp_path / checked))
    return next(module.nodes_of_class(nodes.If))


@pytest.mark.parametrize(
    "files, expected",
    [
        # the agent copies the flag from a config whose only store, in another module, is False
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG}, True),
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG, "run.py": "c = Config()\nc.dbg_flag = None\n"}, True),
        # no false literal anywhere: where the value comes from is out of sight
        ({"agent.py": _AGENT}, False),
        # a store of another value, a keyword argument, a parameter, a dataclass field, a string
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG, "run.py": "c = Config()\nc.dbg_flag = True\n"}, False),
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG, "run.py": "c = make(dbg_flag=args.x)\n"}, False),
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG, "run.py": "def make(dbg_flag=False):\n    pass\n"}, False),
        ({"agent.py": _AGENT, "pkg/config.py": "class C:\n    dbg_flag: bool = False\n"}, False),
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG, "cli.py": "p.add_argument('--dbg-flag')\n"}, False),
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG, "cli.py": "setattr(c, 'dbg_flag', v)\n"}, False),
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG, "cli.py": "for c.dbg_flag in (0, 1):\n    pass\n"}, False),
        # a configuration file that names the flag may turn it on
        ({"agent.py": _AGENT, "pkg/config.py": _CONFIG, "conf/run.yaml": "dbg_flag: true\n"}, False),
    ],
)
def test_a_flag_the_project_leaves_off(tmp_path: Path, files: Dict[str, str], expected: bool) -> None:
    assert branches.never_taken(_branch(tmp_path, files)) is expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("DEBUG = False\nif DEBUG:\n    pass\n", True),
        ("DEBUG = 0\ndef f():\n    if DEBUG and g():\n        pass\n", True),
        ("if False:\n    pass\n", True),
        ("DEBUG = False\nif not DEBUG:\n    pass\n", False),
        ("DEBUG = False\nif DEBUG or g():\n    pass\n", False),
        ("DEBUG = False\ndef on():\n    global DEBUG\n    DEBUG = True\nif DEBUG:\n    pass\n", False),
        ("import os\nDEBUG = os.environ.get('X')\nif DEBUG:\n    pass\n", False),
        ("def f(debug=False):\n    if debug:\n        pass\n", False),
        ("def f(args):\n    if args.debug:\n        pass\n", False),
        # nanoGPT's configurator rewrites the globals from the command line
        ("DEBUG = False\nexec(open('configurator.py').read())\nif DEBUG:\n    pass\n", False),
    ],
)
def test_flags_of_one_file(tmp_path: Path, source: str, expected: bool) -> None:
    assert branches.never_taken(_branch(tmp_path, {"agent.py": source})) is expected


def test_a_helper_called_only_under_the_branch(tmp_path: Path) -> None:
    source = (
        "DEBUG = False\n"
        "def dump():\n"
        "    print(1)\n"
        "def step():\n"
        "    if DEBUG:\n"
        "        dump()\n"
        "def other():\n"
        "    print(2)\n"
        "other()\n"
    )
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "agent.py").write_text(source)
    module = build_module(source, str(tmp_path / "agent.py"))
    prints = [c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == "print"]
    assert branches.reached_only_when_off(prints[0]) is True
    assert branches.reached_only_when_off(prints[1]) is False


def test_source_not_on_disk_is_unknown(tmp_path: Path) -> None:
    module = build_module("DEBUG = False\nif DEBUG:\n    pass\n", str(tmp_path / "missing.py"))
    assert branches.never_taken(next(module.nodes_of_class(nodes.If))) is False


# -- which earlier statements already made the host wait (TP011's cost) ---------------------------------


def test_a_copy_after_the_host_waited_is_not_reported() -> None:
    """``tp011_host_waits.py``: the copy after ``torch.unique`` or after boolean-mask indexing adds no
    stall and is left alone; the others are stalls of their own."""
    from harness import FIXTURES, run_plugin

    path = FIXTURES / "tp011_host_waits.py"
    found = {line: message for line, _, message in run_plugin(path, path.read_text(), ["TP011"])}
    assert 21 not in found
    assert 66 not in found  # after indexing by a boolean mask
    assert "a sync per step" in found[30]
    assert "a sync per step" in found[39]
    assert "a sync per step" in found[73]


# -- alternatives: the values a branch may pick -----------------------------------------------------------


@pytest.mark.parametrize(
    "source, expected",
    [
        ("loss = a if flag else b\nloss\n", ["a", "b"]),
        ("def pick(t):\n    if t:\n        return a\n    return b if u else c\nloss = pick(1)\nloss\n",
         ["a", "b", "c"]),
        ("class K:\n    def __init__(self):\n        self.f = self._pick()\n"
         "    def _pick(self):\n        return a if t else b\n    def g(self):\n        self.f\n", ["a", "b"]),
        ("loss = a\nloss\n", ["a"]),
        ("def pick():\n    return\nloss = pick()\nloss\n", None),
    ],
)
def test_alternatives(source: str, expected: object) -> None:
    module = build_module(source, "/tmp/tp_queries_branches_alternatives.py")
    uses = module.nodes_of_class((nodes.Name, nodes.Attribute))
    last = [n for n in uses if n.as_string() in ("loss", "self.f")][-1]
    found = branches.alternatives(last)
    assert (None if found is None else [n.as_string() for n in found]) == expected


def test_a_test_on_local_literals_is_decided_by_its_value(tmp_path: Path) -> None:
    source = (
        "import os\n\n\ndef run():\n    world_size = 1\n    if world_size > 1:\n        print('dist')\n"
        "    n = int(os.environ['N'])\n    if n > 1:\n        print('maybe')\n\n\n"
        "def other(world_size):\n    if world_size > 1:\n        print('caller decides')\n"
    )
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "bench.py").write_text(source)
    module = build_module(source, str(tmp_path / "bench.py"))
    ifs = list(module.nodes_of_class(nodes.If))
    assert [branches.never_taken(branch) for branch in ifs] == [True, False, False]
