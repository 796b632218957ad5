"""Re-measure every calibration fixture (``tox -e calibrate``); needs torch 2.13 and transformers.

Usage: ``python tests/calibration/measure_all.py [activations cnn params cpu_vs_cuda breakdown]``
(no argument: all of them, in this order; about 15 minutes on 2 CPU cores, no GPU needed).
Each step is its own ``measure_*.py`` script, run in a fresh interpreter; the first one that
fails stops the run with its exit status.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = ("activations", "cnn", "params", "cpu_vs_cuda", "breakdown")


def main(argv: list[str]) -> int:
    steps = argv or list(STEPS)
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        print(f"unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}", file=sys.stderr)
        return 2
    for step in steps:
        t0 = time.time()
        print(f"== measure_{step}.py", flush=True)
        rc = subprocess.call([sys.executable, str(HERE / f"measure_{step}.py")], cwd=str(HERE))
        print(f"== measure_{step}.py exit {rc} after {time.time() - t0:.0f}s", flush=True)
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
