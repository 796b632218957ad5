"""Run the plugin over folders of real training code and count its findings.

Usage::

    python benchmarks/scan.py FOLDER [FOLDER ...] [--out FILE] [--jobs N] [--slow SECONDS]

For each FOLDER (a checkout of a public training repository) it runs
``python -m flake8 --isolated --select TP --jobs N`` and prints one table row
per repository: the ``.py`` files in it, the findings per code, the total, and
the internal notes the plugin wrote on stderr (lines starting
``flake8-torch-preflight:``: a rule that raised, a file over its time budget).
``--out FILE`` saves every raw finding (``repo<TAB>path:line:col: CODE message``)
so that each one can be read and judged (the ledger is ``scan_ledger.md``).
``--slow S`` also analyses every file in-process and lists those taking more
than S seconds.  The plugin abandons a file after a per-file time budget
(``engine.py``), so on a loaded machine a slow file may be skipped in
one run and not in another; ``--budget 120`` replaces that budget for the scan
so that its counts depend on the code only.  Nothing here is a test; the figures go in the README and notes.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

NOTE_PREFIX = "flake8-torch-preflight:"
FINDING = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>TPV?\d+) (?P<message>.*)$")


def python_files(folder: Path) -> List[Path]:
    return sorted(p for p in folder.rglob("*.py") if p.is_file())


#: Runs flake8's command line with the plugin's per-file time budget replaced (``--budget``).
_BUDGET_BOOTSTRAP = (
    "import sys; from flake8_torch_preflight import engine; engine.BUDGET_SECONDS = float(sys.argv.pop(1)); "
    "from flake8.main.cli import main; sys.argv[0] = 'flake8'; raise SystemExit(main())"
)


def scan(
    folder: Path, jobs: str, budget: Optional[float] = None
) -> Tuple[List[Tuple[str, int, int, str, str]], List[str], float]:
    """(findings as (relative path, line, col, code, message), stderr notes, seconds)."""
    args = ["--isolated", "--select", "TP", "--jobs", jobs, "--exit-zero", "."]
    if budget is None:
        cmd = [sys.executable, "-m", "flake8"] + args
    else:
        cmd = [sys.executable, "-c", _BUDGET_BOOTSTRAP, str(budget)] + args
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=str(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    findings = []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        match = FINDING.match(line)
        if match is None:
            continue
        path = match["path"][2:] if match["path"].startswith("./") else match["path"]
        findings.append((path, int(match["line"]), int(match["col"]), match["code"], match["message"]))
    errors = proc.stderr.decode("utf-8", "replace").splitlines()
    notes = [line for line in errors if line.startswith(NOTE_PREFIX)]
    other = [line for line in errors if not line.startswith(NOTE_PREFIX)]
    if proc.returncode != 0 or any("Traceback" in line for line in other):
        start = next((i for i, line in enumerate(other) if "Traceback" in line), max(len(other) - 3, 0))
        notes.append("flake8 exited {}: {}".format(proc.returncode, " | ".join(other[start:start + 12])))
    return sorted(findings), notes, seconds


def slow_files(folder: Path, threshold: float, budget: Optional[float] = None) -> List[Tuple[float, str]]:
    """Files whose in-process analysis (every rule, no GPU target) takes more than ``threshold`` s.

    Run as ``python -m flake8`` runs from the folder: the folder is the working directory and the
    first entry of ``sys.path``, so the project's own packages resolve (and are read) as they do
    there.  Files are analysed in order in one process (astroid's module cache emptied first), so a
    module of the project is read by the first file that needs it."""
    from astroid.manager import AstroidManager

    from flake8_torch_preflight import engine
    from flake8_torch_preflight.analysis.setup import brain, build

    AstroidManager().clear_cache()  # modules read for another folder (a "utils" of another project)
    brain.install()
    slow = []
    previous_cwd = os.getcwd()
    previous_budget = engine.BUDGET_SECONDS
    sys.path.insert(0, str(folder))
    os.chdir(str(folder))
    try:
        if budget is not None:
            engine.BUDGET_SECONDS = budget
        for path in python_files(folder):
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
            except OSError:
                continue
            start = time.perf_counter()
            engine.analyse_file(str(path.relative_to(folder)), lines, build.Settings())
            elapsed = time.perf_counter() - start
            if elapsed > threshold:
                slow.append((elapsed, str(path.relative_to(folder))))
    finally:
        os.chdir(previous_cwd)
        sys.path.remove(str(folder))
        engine.BUDGET_SECONDS = previous_budget
    return sorted(slow, reverse=True)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="write every raw finding to this file")
    parser.add_argument("--jobs", default="2", help="flake8 --jobs value (default 2)")
    parser.add_argument("--slow", type=float, default=None, help="list files whose analysis takes longer (s)")
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="per-file time budget in seconds instead of the plugin's own (a large value makes the counts "
        "independent of machine load; the default is what users get)",
    )
    args = parser.parse_args(argv)

    per_repo: Dict[str, Counter] = {}
    files: Dict[str, int] = {}
    all_notes: List[str] = []
    raw: List[str] = []
    slow: List[str] = []
    for folder in args.folders:
        repo = folder.resolve().name
        found, notes, seconds = scan(folder, args.jobs, args.budget)
        files[repo] = len(python_files(folder))
        per_repo[repo] = Counter(code for _, _, _, code, _ in found)
        all_notes.extend("{}: {}".format(repo, n) for n in notes)
        raw.extend("{}\t{}:{}:{}: {} {}".format(repo, p, ln, col, code, msg) for p, ln, col, code, msg in found)
        sys.stderr.write("scanned {} ({} files, {:.1f} s)\n".format(repo, files[repo], seconds))
        if args.slow is not None:
            found_slow = slow_files(folder.resolve(), args.slow, args.budget)
            slow.extend("{}: {:.2f} s {}".format(repo, s, name) for s, name in found_slow)

    codes = sorted({c for counts in per_repo.values() for c in counts})
    header = ["repository", "files"] + codes + ["total"]
    rows = []
    for repo in per_repo:
        counts = per_repo[repo]
        rows.append([repo, str(files[repo])] + [str(counts.get(c, 0)) for c in codes] + [str(sum(counts.values()))])
    totals = Counter()
    for counts in per_repo.values():
        totals.update(counts)
    total_row = [str(totals.get(c, 0)) for c in codes] + [str(sum(totals.values()))]
    rows.append(["total", str(sum(files.values()))] + total_row)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    print("internal notes: {}".format(len(all_notes)))
    for note in all_notes:
        print("  " + note)
    if args.slow is not None:
        print("files over {} s: {}".format(args.slow, len(slow)))
        for line in slow:
            print("  " + line)
    if args.out is not None:
        args.out.write_text("".join(line + "\n" for line in raw), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
