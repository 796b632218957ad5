"""The examples: bad_train.py reports exactly its markers with every code on; good_train.py nothing."""
from __future__ import annotations

from harness import ALL_CODES, ROOT, compare, run_plugin

EXAMPLES = ROOT / "examples"
OPTIONS = ["--tp-target-gpu", "t4"]


def test_bad_train_reports_each_marked_line() -> None:
    path = EXAMPLES / "bad_train.py"
    expected, actual, table = compare(path, codes=ALL_CODES, extra_options=OPTIONS)
    assert actual == expected, table


def test_bad_train_marks_every_code() -> None:
    source = (EXAMPLES / "bad_train.py").read_text(encoding="utf-8")
    assert {code for code in ALL_CODES if "# " + code in source} == set(ALL_CODES)


def test_good_train_is_silent() -> None:
    path = EXAMPLES / "good_train.py"
    assert run_plugin(path, path.read_text(encoding="utf-8"), ALL_CODES, OPTIONS) == []
