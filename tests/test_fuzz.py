"""Opt-in fuzz test (``tox -e fuzz``): generated programs never make a checker fail.

hypothesmith writes syntactically valid Python; each program is prefixed with torch imports so
that the analysis runs, and no internal-error note may appear on stderr.
"""
from __future__ import annotations

import os

import pytest

if not os.environ.get("TP_FUZZ"):
    pytest.skip("fuzzing is opt-in: TP_FUZZ=1 (tox -e fuzz)", allow_module_level=True)

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from flake8_torch_preflight import engine  # noqa: E402
from flake8_torch_preflight.analysis.setup import build  # noqa: E402

PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


@settings(max_examples=int(os.environ.get("TP_FUZZ_EXAMPLES", "200")), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(source=hypothesmith.from_grammar())
def test_generated_programs_never_fail(source: str, capsys) -> None:
    engine.analyse_file("fuzz.py", (PRELUDE + source).splitlines(keepends=True), build.Settings())
    err = capsys.readouterr().err
    assert "failed:" not in err, err
