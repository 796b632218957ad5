"""TPV001 on the reading benchmark's Python scripts, against a small and a large GPU.

Usage::

    python benchmarks/reading/tpv001.py [/tmp/reading] [--small t4] [--large h100-80gb] [--only ID ...]

For every Python row of ``index.csv`` it runs ``flake8 --select TPV001 --tp-target-gpu GPU PATH``
in the repository's folder (the plugin reads the file alone, as in an editor) for both GPUs, and
beside it the estimator's verdict on the same file (``estimate PATH --gpu GPU``: exit 0 fits or
cannot tell, 1 projected not to fit; the text report's last line says which). It prints one line
per script and the totals; it asserts nothing. Recipes (YAML, JSON) are not Python: flake8 never
checks them, so they are left out.
"""
from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Tuple

HERE = Path(__file__).resolve().parent


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(HERE.parent.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def flake8(folder: Path, path: str, gpu: str, timeout: float) -> Tuple[List[str], str]:
    """The TPV001 lines flake8 prints for one file, and anything else it said."""
    command = [sys.executable, "-m", "flake8", "--isolated", "--select", "TPV001", "--tp-target-gpu", gpu, path]
    try:
        proc = subprocess.run(command, cwd=str(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, check=False, env=_env(), universal_newlines=True)
    except subprocess.TimeoutExpired:
        return [], "timed out"
    found = [line for line in proc.stdout.splitlines() if " TPV001 " in line]
    return found, proc.stderr.strip()


def verdict(folder: Path, path: str, gpu: str, timeout: float) -> str:
    """``fits``, ``no fit`` or ``cannot tell``: the estimator's verdict on the same file."""
    command = [sys.executable, "-m", "flake8_torch_preflight", "estimate", path, "--gpu", gpu]
    try:
        proc = subprocess.run(command, cwd=str(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, check=False, env=_env(), universal_newlines=True)
    except subprocess.TimeoutExpired:
        return "timed out"
    if proc.returncode == 1:
        return "no fit"
    if proc.returncode != 0:
        return "error"
    last = [line for line in proc.stdout.splitlines() if line.strip()]
    text = last[-1] if last else ""
    if "cannot tell" in text:
        return "cannot tell"
    return "fits"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path("/tmp/reading"))
    parser.add_argument("--index", type=Path, default=HERE / "index.csv")
    parser.add_argument("--small", default="t4")
    parser.add_argument("--large", default="h100-80gb")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--verbose", action="store_true", help="print TPV001's messages")
    args = parser.parse_args(argv)
    with args.index.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle)
                if row["path"].endswith(".py") and (not args.only or row["id"] in args.only)]
    totals = {gpu: {"fires": 0, "no fit": 0, "missed": 0, "false": 0} for gpu in (args.small, args.large)}
    print(f"{'id':24} {args.small + ': TPV001 / estimate':32} {args.large + ': TPV001 / estimate'}")
    for row in rows:
        folder = args.root / row["repository"].replace("/", "+")
        if not (folder / row["path"]).is_file():
            print(f"{row['id']:24} file missing: run fetch_files.py")
            continue
        cells = []
        messages = []
        for gpu in (args.small, args.large):
            found, said = flake8(folder, row["path"], gpu, args.timeout)
            seen = verdict(folder, row["path"], gpu, args.timeout)
            fired = bool(found)
            counts = totals[gpu]
            counts["fires"] += fired
            counts["no fit"] += seen == "no fit"
            counts["missed"] += seen == "no fit" and not fired
            counts["false"] += fired and seen != "no fit"
            cells.append(f"{'fires' if fired else 'silent':7} / {seen:13}")
            messages.extend(found)
            if said and not found:
                messages.append(f"stderr: {said.splitlines()[-1]}")
        print(f"{row['id']:24} {cells[0]:32} {cells[1]}")
        if args.verbose:
            for message in messages:
                print(f"    {message}")
    print()
    for gpu, counts in totals.items():
        print(f"{gpu}: TPV001 fires on {counts['fires']} of {len(rows)} scripts; the estimator projects "
              f"{counts['no fit']} not to fit; fired where the estimate fits or cannot tell: {counts['false']}; "
              f"silent where it does not fit: {counts['missed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
