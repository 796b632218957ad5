"""Score the plugin on real bugs that public repositories fixed.

Usage::

    python benchmarks/real_bugs/run.py [FOLDER] [--index INDEX] [--jobs N] [--budget SECONDS] [--gpu GPU]

FOLDER (default ``/tmp/real_bugs``) holds ``<id>/before.py`` and ``<id>/after.py`` for the rows of
``index.csv``: the file at the fixing commit's parent and at the fixing commit
(``fetch_files.py`` writes them from local git repositories; this script downloads nothing).
Each file is linted with ``python -m flake8 --isolated --select <code> --tp-target-gpu <gpu>``,
only for the row's own code, and the script prints per code:

* bugs: rows of that code; rows whose files are absent are counted as *missing*, not as failures;
* caught: before.py has a finding of the code at the defect (see *matching*);
* quiet after fix: after.py has no finding of the code at the same spot, the indexed line carried
  over to after.py through a line diff (difflib) of the two files (a missed bug is trivially quiet,
  so caught-and-quiet counts the rows that were caught before the fix and are quiet after it).

Matching.  A finding matches when its line is within ``--window`` (default 3) lines of the
indexed line.  TP005 and TP009 are whole-run findings: TP009 is reported once per random
generator at the run's first unseeded draw, and TP005 at the loader although the missing
``set_epoch`` belongs in the epoch loop, so for these two codes a finding anywhere in the file
matches (and after.py is quiet only with no finding of the code at all).  TP012 stays local: its
finding sits on the ``DataLoader(...)`` call, which is the indexed line.

The index's line is the defect as the fix shows it: the statement that feeds the loss (TP006,
TP007), the backward of the unscaled or unzeroed gradients (TP003, TP004), the retaining statement
(TP001), the evaluation forward (TP002), the call that leaves the model in eval mode (TP008), the
sync or transfer in the loop (TP010, TP011), the loader call (TP012), the clipping call (TP013),
and for TP005/TP009 the loop or seeding site the fix touched.

Exit status 0 whatever the score (this is a measurement, not a test); 2 when no row has files.
"""
from __future__ import annotations

import argparse
import csv
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
CODES = ["TP{:03d}".format(n) for n in range(1, 14)]
WHOLE_FILE = frozenset({"TP005", "TP009"})
NOTE_PREFIX = "flake8-torch-preflight:"
FINDING = re.compile(r"^(?P<line>\d+):(?P<col>\d+):(?P<code>TP\d{3}) (?P<message>.*)$")

#: flake8's command line with the plugin's per-file time budget replaced (``--budget``), as in
#: benchmarks/scan.py: a loaded machine must not skip a slow file in one run and not the next.
_BUDGET_BOOTSTRAP = (
    "import sys; from flake8_torch_preflight import engine; engine.BUDGET_SECONDS = float(sys.argv.pop(1)); "
    "from flake8.main.cli import main; sys.argv[0] = 'flake8'; raise SystemExit(main())"
)


class Row(NamedTuple):
    id: str
    repository: str
    fix_commit: str
    path: str
    line: int
    code: str
    description: str


class Lint(NamedTuple):
    lines: List[int]
    notes: List[str]


class Result(NamedTuple):
    row: Row
    missing: bool
    caught: bool = False
    quiet_after: bool = False
    before_lines: Tuple[int, ...] = ()
    after_lines: Tuple[int, ...] = ()
    after_line: int = 0
    notes: Tuple[str, ...] = ()


def read_index(path: Path) -> List[Row]:
    with path.open(newline="") as handle:
        return [
            Row(r["id"], r["repository"], r["fix_commit"], r["path"], int(r["line"]), r["code"], r["description"])
            for r in csv.DictReader(handle)
        ]


def lint(path: Path, code: str, gpu: str, budget: Optional[float], name: str = "") -> Lint:
    """Lines of the findings of ``code`` in ``path`` and the plugin's notes on stderr.

    The file is linted as a copy under its repository's file name (``name``), alone in a folder that
    is its own project (a ``requirements.txt`` marks the root): before.py and after.py of one row, and
    the other rows' files, are no modules of one project for the analysis that reads a project."""
    with tempfile.TemporaryDirectory(prefix="tp_real_bug_") as folder:
        (Path(folder) / "requirements.txt").write_text("")
        copy = Path(folder) / (name or path.name)
        shutil.copyfile(path, copy)
        return _lint(copy, code, gpu, budget)


def _lint(path: Path, code: str, gpu: str, budget: Optional[float]) -> Lint:
    args = [
        "--isolated",
        "--select",
        code,
        "--tp-target-gpu",
        gpu,
        "--exit-zero",
        "--format",
        "%(row)d:%(col)d:%(code)s %(text)s",
        str(path),
    ]
    if budget is None:
        cmd = [sys.executable, "-m", "flake8"] + args
    else:
        cmd = [sys.executable, "-c", _BUDGET_BOOTSTRAP, str(budget)] + args
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    lines = []
    for text in proc.stdout.decode("utf-8", "replace").splitlines():
        match = FINDING.match(text)
        if match is not None and match["code"] == code:
            lines.append(int(match["line"]))
    errors = proc.stderr.decode("utf-8", "replace").splitlines()
    notes = [text for text in errors if text.startswith(NOTE_PREFIX)]
    if proc.returncode != 0 or any("Traceback" in text for text in errors):
        notes.append("flake8 exited {}: {}".format(proc.returncode, " | ".join(errors[-6:])))
    return Lint(sorted(lines), notes)


def carry_line(before: Sequence[str], after: Sequence[str], line: int) -> int:
    """The after.py line (1-based) that corresponds to ``line`` of before.py.

    Unchanged lines map one to one; a line inside a replaced block maps to the same offset in the
    replacement (clamped to it); a deleted line maps to where the deletion happened."""
    index = line - 1
    matcher = difflib.SequenceMatcher(None, list(before), list(after), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i1 <= index < i2:
            if tag == "equal":
                return j1 + (index - i1) + 1
            if j2 > j1:
                return j1 + min(index - i1, j2 - j1 - 1) + 1
            return j1 + 1
    return max(len(after), 1)


def matches(code: str, found: Sequence[int], line: int, window: int) -> bool:
    if code in WHOLE_FILE:
        return bool(found)
    return any(abs(found_line - line) <= window for found_line in found)


def score(row: Row, folder: Path, gpu: str, budget: Optional[float], window: int) -> Result:
    before_path = folder / row.id / "before.py"
    after_path = folder / row.id / "after.py"
    if not (before_path.is_file() and after_path.is_file()):
        return Result(row, missing=True)
    name = os.path.basename(row.path)
    before = lint(before_path, row.code, gpu, budget, name)
    after = lint(after_path, row.code, gpu, budget, name)
    before_text = before_path.read_text(encoding="utf-8", errors="replace").splitlines()
    after_text = after_path.read_text(encoding="utf-8", errors="replace").splitlines()
    after_line = carry_line(before_text, after_text, row.line)
    return Result(
        row,
        missing=False,
        caught=matches(row.code, before.lines, row.line, window),
        quiet_after=not matches(row.code, after.lines, after_line, window),
        before_lines=tuple(before.lines),
        after_lines=tuple(after.lines),
        after_line=after_line,
        notes=tuple(before.notes + after.notes),
    )


def table(results: List[Result]) -> List[str]:
    per_code: Dict[str, List[int]] = OrderedDict((code, [0, 0, 0, 0, 0]) for code in CODES)
    for result in results:
        counts = per_code.setdefault(result.row.code, [0, 0, 0, 0, 0])
        counts[0] += 1
        if result.missing:
            counts[1] += 1
            continue
        counts[2] += result.caught
        counts[3] += result.quiet_after
        counts[4] += result.caught and result.quiet_after
    row_format = "{:<6} {:>5} {:>8} {:>7} {:>16} {:>17}"
    out = [row_format.format("code", "bugs", "missing", "caught", "quiet-after-fix", "caught-and-quiet")]
    total = [0, 0, 0, 0, 0]
    for code, counts in per_code.items():
        out.append(row_format.format(code, *counts))
        total = [a + b for a, b in zip(total, counts)]
    out.append(row_format.format("total", *total))
    present = total[0] - total[1]
    if present:
        out.append(
            "caught {}/{} ({:.0f}%), quiet after the fix {}/{} ({:.0f}%), repositories {}".format(
                total[2],
                present,
                100.0 * total[2] / present,
                total[3],
                present,
                100.0 * total[3] / present,
                len({r.row.repository for r in results if not r.missing}),
            )
        )
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=Path("/tmp/real_bugs"), help="holds <id>/before.py")
    parser.add_argument("--index", type=Path, default=HERE / "index.csv", help="the benchmark index (index.csv)")
    parser.add_argument("--gpu", default="a100-80gb", help="value of --tp-target-gpu (default a100-80gb)")
    parser.add_argument("--window", type=int, default=3, help="lines either side of the indexed line (default 3)")
    parser.add_argument("--jobs", type=int, default=4, help="files linted at once (default 4)")
    parser.add_argument("--budget", type=float, default=None, help="per-file time budget in seconds for the plugin")
    parser.add_argument("--verbose", action="store_true", help="print every row with its finding lines")
    args = parser.parse_args(argv)

    rows = read_index(args.index)
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        results = list(pool.map(lambda row: score(row, args.folder, args.gpu, args.budget, args.window), rows))

    for text in table(results):
        print(text)
    missing = [r for r in results if r.missing]
    missed = [r for r in results if not r.missing and not r.caught]
    loud = [r for r in results if not r.missing and not r.quiet_after]
    if missing:
        print("\nmissing files ({}): {}".format(len(missing), ", ".join(r.row.id for r in missing)))
    print("\nmissed ({}):".format(len(missed)))
    for r in missed:
        where = "findings of the code at {}".format(list(r.before_lines)) if r.before_lines else "no finding"
        print("  {} {} {}:{}: {} [{}]".format(r.row.code, r.row.id, r.row.path, r.row.line, r.row.description, where))
    print("\nstill reported at the fixed spot after the fix ({}):".format(len(loud)))
    for r in loud:
        print("  {} {} after.py:{} findings at {}".format(r.row.code, r.row.id, r.after_line, list(r.after_lines)))
    notes = [(r.row.id, note) for r in results for note in r.notes]
    if notes:
        print("\nplugin notes ({}):".format(len(notes)))
        for id_, note in notes:
            print("  {}: {}".format(id_, note))
    if args.verbose:
        print("\nrows:")
        for r in results:
            if r.missing:
                print("  {} missing".format(r.row.id))
                continue
            print(
                "  {} {} line {} caught={} before={} after_line={} quiet={} after={}".format(
                    r.row.code,
                    r.row.id,
                    r.row.line,
                    r.caught,
                    list(r.before_lines),
                    r.after_line,
                    r.quiet_after,
                    list(r.after_lines),
                )
            )
    return 0 if len(missing) < len(results) else 2


if __name__ == "__main__":
    sys.exit(main())
