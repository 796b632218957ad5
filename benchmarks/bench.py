"""Time ``flake8 --select TP`` against plain flake8 over folders of Python files.

Usage::

    python benchmarks/bench.py PATH [PATH ...] [--jobs N] [--per-file]

For each PATH it runs, as separate processes:

* ``plain``: ``flake8 --select E,F,W,C90`` (flake8's default checks; the plugin sees no TP code
  selected and does no work),
* ``tp``: ``flake8 --select TP`` (only this plugin),
* ``both``: ``flake8 --select E,F,W,C90,TP``,

and prints wall seconds, files per second, peak RSS of the flake8 process tree and the ratio of
``both`` to ``plain``.  ``--per-file`` also analyses each file in-process and prints the slowest
files (the target is under 2 s each).  Figures go in issue notes; nothing here is a test.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

SELECTS = {"plain": "E,F,W,C90", "tp": "TP", "both": "E,F,W,C90,TP"}


def count_files(path: Path) -> Tuple[int, int]:
    files = [path] if path.is_file() else [p for p in path.rglob("*.py") if p.is_file()]
    lines = 0
    for f in files:
        try:
            lines += f.read_bytes().count(b"\n")
        except OSError:
            pass
    return len(files), lines


def run_flake8(path: Path, select: str, jobs: str) -> Tuple[float, int, int, int]:
    """(wall seconds, peak RSS KiB, exit status, findings) for one flake8 process."""
    cmd = [sys.executable, "-m", "flake8", "--isolated", "--select", select, "--jobs", jobs, "--exit-zero", str(path)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    findings = len(out.splitlines())
    if b"Traceback" in err:
        sys.stderr.write(err.decode(errors="replace")[-2000:])
    return wall, int(usage.ru_maxrss), proc.returncode, findings


def per_file(path: Path, top: int = 5) -> List[Tuple[float, str]]:
    from flake8_torch_preflight import engine
    from flake8_torch_preflight.analysis import build

    timings = []
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    for f in files:
        try:
            lines = f.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        except OSError:
            continue
        start = time.perf_counter()
        engine.analyse_file(str(f), lines, build.Settings())
        timings.append((time.perf_counter() - start, str(f)))
    return sorted(timings, reverse=True)[:top]


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--jobs", default="1", help="flake8 --jobs value (default 1; 'auto' for flake8's default)")
    parser.add_argument("--per-file", action="store_true", help="also print the slowest files, analysed in-process")
    args = parser.parse_args(argv)
    print("{:<40} {:>6} {:>8} {:<6} {:>8} {:>9} {:>9} {:>8}".format(
        "path", "files", "lines", "run", "seconds", "files/s", "peakMiB", "findings"))
    for path in args.paths:
        files, lines = count_files(path)
        walls = {}
        for name, select in SELECTS.items():
            wall, rss, _, findings = run_flake8(path, select, args.jobs)
            walls[name] = wall
            print("{:<40} {:>6} {:>8} {:<6} {:>8.2f} {:>9.1f} {:>9.0f} {:>8}".format(
                str(path)[-40:], files, lines, name, wall, files / wall if wall else 0.0, rss / 1024, findings))
        print("{:<40} ratio both/plain = {:.2f}  (tp alone / plain = {:.2f})".format(
            "", walls["both"] / walls["plain"], walls["tp"] / walls["plain"]))
        if args.per_file:
            for seconds, name in per_file(path):
                print("    slowest: {:6.3f} s  {}".format(seconds, name))
    print("python {}  jobs={}  cpus={}".format(sys.version.split()[0], args.jobs, os.cpu_count()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
