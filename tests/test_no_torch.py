"""The plugin never imports torch and never reads an installed torch.

A decoy ``torch`` package that raises on import is put first on ``sys.path``;
an audit hook records every file opened under it.  Findings must be identical
with and without the decoy, nothing may be opened under it, and ``torch`` must
never reach ``sys.modules``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import FIXTURES, ROOT

RUNNER = r"""
import json, sys
decoy = sys.argv[1]
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith(decoy):
        opened.append(args[0])
sys.addaudithook(hook)
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch import blocked by test_no_torch")
        return None
sys.meta_path.insert(0, Block())
if decoy != "-":
    sys.path.insert(0, decoy)
from flake8.main import cli
try:
    cli.main(["--select", "TP", "--jobs", "1", "--output-file", sys.argv[3], sys.argv[2], sys.argv[4]])
except SystemExit:
    pass
with open(sys.argv[3]) as fh:
    findings = sorted(fh.read().splitlines())
print(json.dumps({"findings": findings, "opened": opened,
                  "torch_imported": any(m == "torch" or m.startswith("torch.") for m in sys.modules)}))
"""


UNSTUBBED = ROOT / "tests" / "fixtures" / "no_torch" / "unstubbed_imports.py"


def _run(decoy: str, output: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, decoy, str(FIXTURES), str(output), str(UNSTUBBED)],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def _decoy(tmp_path: Path) -> Path:
    pkg = tmp_path / "site-packages" / "torch"
    (pkg / "nn").mkdir(parents=True)
    bomb = "raise RuntimeError('the decoy torch was imported')\nclass CrossEntropyLoss: pass\n"
    (pkg / "__init__.py").write_text(bomb)
    (pkg / "nn" / "__init__.py").write_text(bomb)
    (pkg / "nn" / "functional.py").write_text(bomb + "def softmax(x): return x\n")
    (pkg / "backends").mkdir()
    (pkg / "backends" / "__init__.py").write_text(bomb)
    return pkg.parent


def test_findings_identical_with_a_decoy_torch_and_nothing_read(tmp_path: Path) -> None:
    plain = _run("-", tmp_path / "plain.txt")
    decoyed = _run(str(_decoy(tmp_path)), tmp_path / "decoyed.txt")
    assert plain["findings"], "the fixtures should produce findings"
    assert decoyed["findings"] == plain["findings"]
    assert decoyed["opened"] == []
    assert not plain["torch_imported"] and not decoyed["torch_imported"]


def test_inferred_torch_names_come_from_the_stubs() -> None:
    from astroid import extract_node

    from flake8_torch_preflight.analysis.setup import brain
    from flake8_torch_preflight.analysis.semantic import infer

    brain.install()
    node = extract_node("import torch.nn as tnn\ntnn.CrossEntropyLoss #@")
    value = infer.safe_infer(node)
    assert value is not None
    assert value.root().file.startswith(brain.stub_root_path())
