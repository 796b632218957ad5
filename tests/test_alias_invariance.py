"""Metamorphic test: renaming the torch import aliases in a fixture changes no finding.

``import torch`` becomes ``import torch as tch_alias`` and ``import torch.nn as nn`` becomes
``import torch.nn as nn_alias`` (every use renamed with it).  The findings — lines and codes —
must be identical, because rules resolve bindings rather than names.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import FIXTURES, codes_for, headers, run_plugin

RENAMES = (
    (re.compile(r"^import torch$", re.M), "import torch as tch_alias", re.compile(r"(?<![\w.])torch\."), "tch_alias."),
    (
        re.compile(r"^import torch\.nn as nn$", re.M),
        "import torch.nn as nn_alias",
        re.compile(r"(?<![\w.])nn\."),
        "nn_alias.",
    ),
)


def rename(source: str) -> str:
    for import_re, new_import, use_re, new_use in RENAMES:
        if not import_re.search(source):
            continue
        out = []
        for line in source.splitlines(keepends=True):
            if line.lstrip().startswith(("import ", "from ")):
                out.append(import_re.sub(new_import, line))
                continue
            code, sep, comment = line.partition("#")
            out.append(use_re.sub(new_use, code) + sep + comment)
        source = "".join(out)
    return source


CASES = sorted(
    p for p in FIXTURES.glob("*.py") if rename(p.read_text(encoding="utf-8")) != p.read_text(encoding="utf-8")
)


def test_rename_changes_something() -> None:
    assert len(CASES) > 20


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_findings_do_not_depend_on_alias_names(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    codes = codes_for(path, source)
    _, options = headers(source)
    before = [(line, msg.split(" ", 1)[0]) for line, _, msg in run_plugin(path, source, codes, options)]
    after = [(line, msg.split(" ", 1)[0]) for line, _, msg in run_plugin(path, rename(source), codes, options)]
    assert after == before
