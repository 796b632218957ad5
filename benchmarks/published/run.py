"""Compare the estimator with published GPU memory figures (``figures.csv``).

Runs each row's ``tp-estimate`` command in-process with ``--format json`` and compares the
published figure with the term of the estimate that measures the same thing
(README.md, "What each kind of figure is compared with"):

* ``allocated`` (``torch.cuda.max_memory_allocated``): the allocated terms, i.e. the peak less
  the CUDA context and fragmentation (point, and the interval's ends less those terms' ends);
* ``reserved+context`` and ``nvidia-smi``: the whole projected peak and interval;
* ``model-states`` (an author's arithmetic): weights, gradients, optimizer state and master weights.

Prints one line per row (figure, point, interval, inside?, error of the point) and the totals:
the fraction of figures inside the interval and the median absolute error of the point. It
prints; it asserts nothing (it is a benchmark, not a test).

    python benchmarks/published/run.py [--csv PATH] [--only ID,ID]
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import shlex
import statistics
import sys
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from flake8_torch_preflight.estimator import cli  # noqa: E402

GIB = 1024**3
UNITS = {"B": 1, "MiB": 1024**2, "GiB": GIB, "MB": 10**6, "GB": 10**9}
#: the terms outside the caching allocator's allocated bytes
NOT_ALLOCATED = ("cuda_context", "fragmentation")
#: what a ``model-states`` figure (an author's arithmetic, as in the ZeRO paper) counts
MODEL_STATES = ("weights", "gradients", "optimizer_state", "master_weights")
KINDS = ("allocated", "reserved+context", "nvidia-smi", "model-states")


def run_command(command: str) -> Tuple[int, Optional[Dict[str, Any]], str]:
    """The exit status, the JSON report (None on bad input) and stderr of one command."""
    argv = shlex.split(command)
    if argv and argv[0] == "tp-estimate":
        argv = argv[1:]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.estimate_main(argv + ["--format", "json"])
    text = out.getvalue()
    return status, (json.loads(text) if text.strip() else None), err.getvalue().strip()


def compared(report: Dict[str, Any], measures: str) -> Tuple[float, float, Optional[float]]:
    """(point, low, high) bytes of the estimate that the figure ``measures``."""
    if measures == "model-states":
        terms = [report["breakdown_interval"][name] for name in MODEL_STATES]
        return (float(sum(report["breakdown"][name] or 0 for name in MODEL_STATES)),
                float(sum(low for low, _ in terms)),
                None if any(high is None for _, high in terms) else float(sum(high for _, high in terms)))
    point = float(report["peak_bytes"])
    low, high = report["interval_bytes"]
    if measures == "allocated":
        for name in NOT_ALLOCATED:
            term_low, term_high = report["breakdown_interval"][name]
            point -= report["breakdown"][name] or 0
            low -= term_low
            high = None if high is None or term_high is None else high - term_high
    return point, float(low), None if high is None else float(high)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", default=os.path.join(HERE, "figures.csv"))
    parser.add_argument("--only", default="", help="comma-separated row ids")
    args = parser.parse_args(argv)
    only = {part for part in args.only.split(",") if part}
    with open(args.csv, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if not only or row["id"] in only]

    header = f"{'row':7} {'measures':17} {'figure':>9} {'point':>9}  {'interval (GiB)':17} {'in':3} {'error':>7}"
    print(header)
    print("-" * len(header))
    errors: List[float] = []
    inside = 0
    failed: List[str] = []
    for row in rows:
        figure = float(row["figure"]) * UNITS[row["unit"]] / GIB
        # a printed figure stands for its rounding range (31.4 GB: 31.35 to 31.45 GB)
        digits = row["figure"].partition(".")[2]
        rounding = 0.5 * 10.0 ** -len(digits) * UNITS[row["unit"]] / GIB if digits else 0.0
        measures = row["measures"]
        if measures not in KINDS:
            failed.append(f"{row['id']}: unknown kind {measures!r}")
            continue
        status, report, err = run_command(row["command"])
        if report is None:
            failed.append(f"{row['id']}: exit {status}: {err}")
            continue
        point, low, high = (None if v is None else v / GIB for v in compared(report, measures))
        hit = low <= figure + rounding and (high is None or figure - rounding <= high)
        inside += hit
        error = (point - figure) / figure
        errors.append(abs(error))
        shown_high = "inf" if high is None else f"{high:.2f}"
        print(f"{row['id']:7} {measures:17} {figure:9.2f} {point:9.2f}  {low:6.2f} - {shown_high:>7}  "
              f"{'yes' if hit else 'NO':3} {error:+7.1%}")
    print("-" * len(header))
    total = len(errors)
    if total:
        print(f"inside the interval: {inside}/{total} ({inside / total:.0%}); "
              f"median absolute error of the point: {statistics.median(errors):.1%}; "
              f"mean: {statistics.mean(errors):.1%}")
    for line in failed:
        print(f"not compared: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
