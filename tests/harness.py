"""Run the plugin in-process on a fixture and compare with its expectation markers.

Marker grammar (see README "Writing fixtures"):

* a trailing comment segment that is exactly a code marks a finding on that line:
  ``losses.append(loss)  # graph stays alive  # TP001``; ``# TP003:8`` also pins the
  0-based column; ``# TP001  # TP010`` is two findings;
* ``# SELECT: TP003,TP009`` in the first lines widens the enabled codes (the file-name
  prefix ``tp003`` enables TP003 alone);
* ``# OPTIONS: --tp-target-gpu=t4`` passes options through flake8's real option parser.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Set, Tuple

from flake8.options.parse_args import parse_args

from flake8_torch_preflight import engine
from flake8_torch_preflight.analysis.setup import build
from flake8_torch_preflight.plugin import ENTRY_CLASSES

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "rules"
ALL_CODES = tuple(cls.code for cls in ENTRY_CLASSES)
_MARKER = re.compile(r"^(TPV?\d{3})(?::(\d+))?$")
_HEADER = re.compile(r"^#\s*(SELECT|OPTIONS):\s*(.*)$")

Expected = Tuple[int, str, Optional[int]]


def read_markers(source: str) -> List[Expected]:
    found: List[Expected] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        for segment in tok.string.split("#")[1:]:
            match = _MARKER.match(segment.strip())
            if match:
                col = int(match.group(2)) if match.group(2) else None
                found.append((tok.start[0], match.group(1), col))
    return sorted(found, key=lambda e: (e[0], e[1], e[2] or 0))


def headers(source: str) -> Tuple[Set[str], List[str]]:
    select: Set[str] = set()
    options: List[str] = []
    for line in source.splitlines()[:10]:
        match = _HEADER.match(line.strip())
        if not match:
            continue
        if match.group(1) == "SELECT":
            select.update(code.strip() for code in match.group(2).split(",") if code.strip())
        else:
            options.extend(match.group(2).split())
    return select, options


def codes_for(path: Path, source: str) -> Set[str]:
    select, _ = headers(source)
    prefix = path.stem.split("_")[0].upper()
    if prefix in ALL_CODES:
        select.add(prefix)
    return select


def run_plugin(
    path: Path, source: str, codes: Iterable[str], options: Sequence[str] = ()
) -> List[Tuple[int, int, str]]:
    """(line, col, message) of every finding of ``codes``, as flake8 would yield them."""
    codes = sorted(codes)
    saved = build.Settings(**vars(build.SETTINGS))
    try:
        parse_args(["--select", ",".join(codes), *options, str(path)])
        lines = source.splitlines(keepends=True)
        tree = ast.parse(source)
        engine._last = None
        results = []
        for cls in ENTRY_CLASSES:
            if cls.code not in codes:
                continue
            for line, col, message, _ in cls(tree, str(path), lines).run():
                results.append((line, col, message))
        return sorted(results)
    finally:
        build.SETTINGS.__dict__.update(vars(saved))
        engine._last = None


def compare(
    path: Path,
    source: Optional[str] = None,
    codes: Optional[Iterable[str]] = None,
    extra_options: Sequence[str] = (),
) -> Tuple[List, List, str]:
    """(expected, actual, table) for a fixture; the table explains a mismatch."""
    source = source if source is not None else path.read_text(encoding="utf-8")
    enabled = set(codes) if codes is not None else codes_for(path, source)
    _, options = headers(source)
    options = [*options, *extra_options]
    expected = [e for e in read_markers(source) if e[1] in enabled]
    results = run_plugin(path, source, enabled, options)
    actual: List[Expected] = []
    for line, col, message in results:
        code = message.split(" ", 1)[0]
        actual.append((line, code, col))
    # Compare columns only where a marker pins them.
    pinned = {(line, code) for line, code, col in expected if col is not None}
    actual_cmp = sorted((line, code, col if (line, code) in pinned else None) for line, code, col in actual)
    expected_cmp = sorted(expected, key=lambda e: (e[0], e[1], e[2] or 0))
    actual_cmp = sorted(actual_cmp, key=lambda e: (e[0], e[1], e[2] or 0))
    return expected_cmp, actual_cmp, _table(path, source, expected_cmp, actual_cmp, results)


def _table(path: Path, source: str, expected: List, actual: List, results: List) -> str:
    lines = source.splitlines()
    rows = ["{}: expected vs actual".format(path.name), "line  code    expected  actual  source"]
    keys = sorted(set((e[0], e[1]) for e in expected) | set((a[0], a[1]) for a in actual))
    for line, code in keys:
        exp = sum(1 for e in expected if (e[0], e[1]) == (line, code))
        act = sum(1 for a in actual if (a[0], a[1]) == (line, code))
        mark = "" if exp == act else "  <--"
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        rows.append("{:<5} {:<7} {:<9} {:<7} {}{}".format(line, code, exp, act, text[:70], mark))
    rows.append("messages:")
    rows.extend("  {}:{}: {}".format(line, col, msg) for line, col, msg in results)
    return "\n".join(rows)
