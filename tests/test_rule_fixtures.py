"""Every fixture under tests/fixtures/rules: findings must equal its markers exactly."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness import FIXTURES, compare

FIXTURE_FILES = sorted(FIXTURES.glob("*.py"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_fixture(path: Path) -> None:
    expected, actual, table = compare(path)
    assert actual == expected, table


def test_tp012_asks_a_restarted_loader_for_persistent_workers() -> None:
    from harness import run_plugin

    path = FIXTURES / "tp012_restarted.py"
    source = path.read_text()
    restarted = run_plugin(path, source, ["TP012"])
    assert [(line, "persistent_workers=True" in message) for line, _, message in restarted] == [(25, True)]
    once = source.replace("            batches = iter(loader)\n            x = next(batches)\n", "            break\n")
    assert [("persistent_workers" in message) for _, _, message in run_plugin(path, once, ["TP012"])] == [False]
