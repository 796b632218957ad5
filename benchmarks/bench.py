"""Time ``flake8 --select TP`` against plain flake8 over folders of Python files.

Usage::

    python benchmarks/bench.py PATH [PATH ...] [--jobs N] [--repeat N] [--runs plain,tp,both] [--per-file]

For each PATH it runs, as separate processes:

* ``plain``: ``flake8 --select E,F,W,C90`` (flake8's default checks; flake8 still imports and runs
  the plugin, which sees no TP code selected, returns at once and never imports astroid, so this
  is what flake8 costs without the plugin),
* ``tp``: ``flake8 --select TP`` (flake8 still tokenizes and runs its own checks, then drops them),
* ``both``: ``flake8 --select E,F,W,C90,TP`` (what a user adding the plugin to a lint run pays),

each ``--repeat`` times after a warm-up run (the fastest run is shown, with bytecode caching on,
see ``_env``), and prints wall seconds, files per second, the peak RSS of that flake8 process
(its ``--jobs`` workers included) and the ratio of ``both`` to ``plain``.  ``--per-file`` also
analyses each file in-process and prints the slowest files (the target is under 2 s each).
Figures go in issue notes and the README; nothing here is a test.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
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


def _env() -> dict:
    """The environment of the timed runs: bytecode caching on, as on a user's machine (pip writes
    ``.pyc`` files at install; a ``PYTHONDONTWRITEBYTECODE=1`` sandbox would otherwise recompile
    the plugin and astroid from source in every process and charge that to the plugin)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_flake8(path: Path, select: str, jobs: str) -> Tuple[float, int, int, int]:
    """(wall seconds, peak RSS KiB of this run, exit status, findings) for one flake8 process."""
    cmd = [sys.executable, "-m", "flake8", "--isolated", "--select", select, "--jobs", jobs, "--exit-zero", str(path)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=_env())
        _, status, usage = os.wait4(proc.pid, 0)  # this run's own peak (and its --jobs workers')
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        findings = len(out.read().splitlines())
        text = err.read()
    if b"Traceback" in text:
        sys.stderr.write(text.decode(errors="replace")[-2000:])
    return wall, int(usage.ru_maxrss), proc.returncode, findings


def best_of(path: Path, select: str, jobs: str, repeat: int) -> Tuple[float, int, int, int]:
    """The fastest of ``repeat`` runs (the least disturbed by other load), after one warm-up run
    on an empty file that writes the bytecode caches."""
    with tempfile.TemporaryDirectory() as folder:
        empty = Path(folder) / "warm.py"
        empty.write_text("import torch\n")
        run_flake8(empty, select, "1")
    runs = [run_flake8(path, select, jobs) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def per_file(path: Path, top: int = 5) -> List[Tuple[float, str]]:
    from flake8_torch_preflight import engine
    from flake8_torch_preflight.analysis.setup import build

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
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest is shown (default 3)")
    parser.add_argument("--runs", default="plain,tp,both", help="which of plain,tp,both to time (default all three)")
    args = parser.parse_args(argv)
    print("{:<40} {:>6} {:>8} {:<6} {:>8} {:>9} {:>9} {:>8}".format(
        "path", "files", "lines", "run", "seconds", "files/s", "peakMiB", "findings"))
    totals: dict = {}
    for path in args.paths:
        files, lines = count_files(path)
        walls = {}
        for name, select in [(n, SELECTS[n]) for n in args.runs.split(",")]:
            wall, rss, _, findings = best_of(path, select, args.jobs, args.repeat)
            walls[name] = wall
            totals[name] = totals.get(name, 0.0) + wall
            print("{:<40} {:>6} {:>8} {:<6} {:>8.2f} {:>9.1f} {:>9.0f} {:>8}".format(
                str(path)[-40:], files, lines, name, wall, files / wall if wall else 0.0, rss / 1024, findings))
        if "plain" in walls:
            print("{:<40} ratio to plain: {}".format("", "  ".join(
                "{} {:.2f}".format(n, w / walls["plain"]) for n, w in walls.items() if n != "plain")))
        if args.per_file:
            for seconds, name in per_file(path):
                print("    slowest: {:6.3f} s  {}".format(seconds, name))
    if len(args.paths) > 1:
        print("{:<40} {}".format("total seconds", "  ".join("{} {:.2f}".format(n, w) for n, w in totals.items())))
        if "plain" in totals:
            print("{:<40} ratio to plain: {}".format("total", "  ".join(
                "{} {:.2f}".format(n, w / totals["plain"]) for n, w in totals.items() if n != "plain")))
    print("python {}  jobs={}  cpus={}  best of {}".format(
        sys.version.split()[0], args.jobs, os.cpu_count(), args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
