"""The real ``flake8`` command line: entry points load, noqa, --jobs, options, bad option values."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from harness import ROOT

SOFTMAX_SRC = """\
import torch
import torch.nn.functional as F

crit = torch.nn.CrossEntropyLoss()
logits = torch.randn(4, 3)
y = torch.randint(0, 3, (4,))
a = crit(F.softmax(logits, 1), y)
b = crit(F.softmax(logits, 1), y)  # noqa: TP006
c = crit(F.softmax(logits, 1), y)  # noqa: E501
"""


def flake8(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args], cwd=str(cwd), capture_output=True, text=True, timeout=120
    )


def codes_and_lines(stdout: str) -> List[str]:
    found = []
    for line in stdout.splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4:
            found.append("{}:{}".format(parts[1], parts[3].split()[0]))
    return sorted(found)


def test_version_lists_the_plugin() -> None:
    result = flake8("--version")
    assert "flake8-torch-preflight" in result.stdout


def test_noqa_silences_only_its_code(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text(SOFTMAX_SRC)
    result = flake8("--select", "TP", str(script))
    assert codes_and_lines(result.stdout) == ["7:TP006", "9:TP006"]
    assert result.returncode == 1
    disabled = flake8("--select", "TP", "--disable-noqa", str(script))
    assert codes_and_lines(disabled.stdout) == ["7:TP006", "8:TP006", "9:TP006"]


def test_column_is_one_based_in_output(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text(SOFTMAX_SRC)
    first = flake8("--select", "TP006", str(script)).stdout.splitlines()[0]
    assert first.startswith("{}:7:5: TP006 ".format(script))


def test_select_other_codes_skips_plugin_output(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text(SOFTMAX_SRC)
    assert flake8("--select", "E9,F63", str(script)).stdout == ""


#: Runs flake8's command line in-process, then prints which heavy modules were imported.
_IMPORTS_AFTER_RUN = (
    "import sys; from flake8.main.cli import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "print(sorted(m for m in ('astroid', 'flake8_torch_preflight.engine') if m in sys.modules))"
)


def test_without_a_tp_code_selected_astroid_is_never_imported(tmp_path: Path) -> None:
    """flake8 imports and runs every installed plugin; with no TP code selected the plugin must
    cost nothing (plain flake8 stays as fast as without it)."""
    script = tmp_path / "t.py"
    script.write_text(SOFTMAX_SRC)
    plain = subprocess.run([sys.executable, "-c", _IMPORTS_AFTER_RUN, "--select", "E,F,W,C90", str(script)],
                           capture_output=True, text=True, timeout=120)
    assert plain.stdout.splitlines()[-1] == "[]"
    selected = subprocess.run([sys.executable, "-c", _IMPORTS_AFTER_RUN, "--select", "TP006", str(script)],
                              capture_output=True, text=True, timeout=120)
    assert "TP006" in selected.stdout
    assert selected.stdout.splitlines()[-1] == "['astroid', 'flake8_torch_preflight.engine']"


def test_jobs_two_matches_jobs_one() -> None:
    folder = ROOT / "tests" / "fixtures" / "rules"
    one = flake8("--select", "TP", "--jobs", "1", str(folder))
    two = flake8("--select", "TP", "--jobs", "2", str(folder))
    assert one.stdout, one.stderr
    assert sorted(one.stdout.splitlines()) == sorted(two.stdout.splitlines())
    assert "Traceback" not in one.stderr + two.stderr


def test_options_register_once_and_read_from_config(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[flake8]\ntp-target-gpu = a100-80gb\n")
    script = tmp_path / "t.py"
    script.write_text("x = 1\n")
    result = flake8("--select", "TP", "t.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--tp-target-gpu", "a100-90gb"], "--tp-target-gpu"),
        (["--tp-gpu-memory", "lots"], "--tp-gpu-memory"),
    ],
)
def test_bad_option_is_one_line_error(tmp_path: Path, args: List[str], fragment: str) -> None:
    script = tmp_path / "t.py"
    script.write_text("x = 1\n")
    result = flake8("--select", "TP", *args, str(script))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flake8: " + fragment), result.stderr


def test_syntax_error_file_is_e999_and_plugin_stays_alive(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\ndef f(:\n")
    good = tmp_path / "good.py"
    good.write_text(SOFTMAX_SRC)
    result = flake8("--select", "TP,E999", str(tmp_path))
    assert "E999" in result.stdout
    assert "TP006" in result.stdout
    assert "Traceback" not in result.stderr


def test_odd_files_in_one_run(tmp_path: Path) -> None:
    """Non-UTF-8 with a coding cookie, a BOM, an empty __init__.py, a stub file, torch under another
    name: one run, no traceback, findings only where they belong."""
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\nprint(torch.randn(2), name)\n"
    )
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + SOFTMAX_SRC.encode())
    (tmp_path / "types.pyi").write_text("import torch\ndef f(x: torch.Tensor) -> torch.Tensor: ...\n")
    (tmp_path / "renamed.py").write_text(
        "import torch as np\nimport torch.nn.functional as F\n"
        "loss = np.nn.CrossEntropyLoss()(F.softmax(np.randn(2, 3), 1), np.tensor([0, 1]))\n"
    )
    result = flake8("--select", "TP", "--filename", "*.py,*.pyi", str(tmp_path))
    assert "Traceback" not in result.stderr and "flake8-torch-preflight:" not in result.stderr, result.stderr
    found = sorted(
        (Path(line.split(":")[0]).name, line.split(": ")[1].split()[0]) for line in result.stdout.splitlines()
    )
    assert found == [("bom.py", "TP006"), ("bom.py", "TP006"), ("renamed.py", "TP006")]


def test_option_given_twice_uses_the_last(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text("x = 1\n")
    result = flake8("--select", "TP", "--tp-target-gpu", "a100-90gb", "--tp-target-gpu", "t4", str(script))
    assert result.returncode == 0 and result.stderr == ""
