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
