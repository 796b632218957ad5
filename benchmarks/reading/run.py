"""Score the estimator's reader on the reading benchmark.

Usage::

    python benchmarks/reading/fetch_files.py            # writes /tmp/reading/<owner>+<name>/...
    python benchmarks/reading/run.py [/tmp/reading] [--gpu a100-80gb] [--verbose] [--only ID ...]

For every row of ``index.csv`` it runs ``python -m flake8_torch_preflight estimate PATH --gpu GPU
--format json`` inside the repository's folder (no other override), compares each field it read
with the one the index expects, and prints per script the fields read right, wrong and missing,
and whether the run came out bounded or the report names what it could not read; then the totals.
It prints; it asserts nothing. See README.md for what the columns mean and how a field is judged.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent

#: The judged fields, in the order they are printed.
FIELDS = ("model", "params", "batch_size", "seq_len", "image_size", "precision", "optimizer", "lora_rank",
          "lora_targets", "quantization", "trainable", "checkpointing", "sharding", "world_size",
          "grad_accum_steps")

#: Relative tolerance on a parameter count (a hand-counted model against the reader's count).
PARAMS_TOLERANCE = 0.10

RIGHT, WRONG, MISSING = "right", "wrong", "missing"


def run_estimator(folder: Path, path: str, gpu: str, timeout: float) -> Tuple[Optional[Dict[str, Any]], str]:
    """The estimator's JSON for one file, or None and what it printed instead."""
    command = [sys.executable, "-m", "flake8_torch_preflight", "estimate", path, "--gpu", gpu, "--format", "json"]
    env = dict(os.environ, PYTHONPATH=str(HERE.parent.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run(command, cwd=str(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, check=False, env=env, universal_newlines=True)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    try:
        return json.loads(proc.stdout), proc.stderr.strip()
    except ValueError:
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        return None, lines[-1] if lines else f"exit status {proc.returncode}"


def _unknown(report: Dict[str, Any], name: str) -> bool:
    """Whether the report says it could not read ``name`` (a null, a named unknown, an assumed default)."""
    unread = report.get("unread") or {}
    if name in unread:
        return True
    source = (report.get("config") or {}).get("sources", {}).get(name)
    return isinstance(source, str) and source.startswith("default")


def read_values(report: Dict[str, Any]) -> Dict[str, Any]:
    """The judged fields as the report gives them (None: not known)."""
    config = report.get("config") or {}
    model = report.get("model") or {}
    trainable = model.get("trainable_params")
    params = model.get("params")
    lora = bool(config.get("lora"))
    targets = config.get("lora_targets")
    return {
        "model": model.get("name"),
        "params": params,
        "batch_size": config.get("batch_size"),
        "seq_len": config.get("seq_len"),
        "image_size": config.get("image_size"),
        "precision": config.get("precision"),
        "optimizer": config.get("optimizer"),
        "lora_rank": config.get("lora_rank") if lora else "none",
        "lora_targets": ("all" if targets is None else ",".join(sorted(targets))) if lora else "none",
        "quantization": config.get("quantization"),
        "trainable": None if params is None else ("all" if trainable is None or trainable >= params else "some"),
        "checkpointing": config.get("checkpointing"),
        "sharding": config.get("sharding"),
        "world_size": config.get("world_size"),
        "grad_accum_steps": config.get("grad_accum_steps"),
    }


def _same(name: str, expected: str, got: Any) -> bool:
    alternatives = [part.strip() for part in expected.split("|")]
    if name == "params":
        if not isinstance(got, int):
            return False
        return any(abs(got - float(alt)) <= PARAMS_TOLERANCE * float(alt) for alt in alternatives)
    if isinstance(got, bool):
        got_text = "true" if got else "false"
    else:
        got_text = "" if got is None else str(got)
    if name == "lora_targets":
        normal = [",".join(sorted(alt.split(","))) for alt in alternatives]
        return got_text in normal
    return got_text.lower() in [alt.lower() for alt in alternatives]


def judge(row: Dict[str, str], report: Optional[Dict[str, Any]]) -> Dict[str, str]:
    """RIGHT / WRONG / MISSING for every field the row expects.

    A field expected ``?`` (the file does not say) is right when the report says it does not know
    it and wrong when it gives a value as read; a field with an expected value is right when the
    value matches, missing when the report says it does not know it, wrong otherwise."""
    verdicts: Dict[str, str] = {}
    values = read_values(report) if report is not None else {}
    for name in FIELDS:
        expected = (row.get(name) or "").strip()
        if not expected:
            continue
        if report is None:
            verdicts[name] = MISSING
            continue
        got = values.get(name)
        unknown = got is None or _unknown(report, name)
        if name == "params" and report.get("model", {}).get("name") is None and got is None:
            unknown = True
        open_ended = "?" in [part.strip() for part in expected.split("|")]
        if expected == "?":
            verdicts[name] = RIGHT if unknown else WRONG
        elif open_ended and unknown:
            verdicts[name] = RIGHT
        elif _same(name, "|".join(p for p in expected.split("|") if p.strip() != "?"), got):
            verdicts[name] = RIGHT
        elif unknown:
            verdicts[name] = MISSING
        else:
            verdicts[name] = WRONG
    return verdicts


def outcome(report: Optional[Dict[str, Any]]) -> str:
    """``bounded``: a peak and an interval with both ends; ``named``: the report names what it
    could not read; ``neither``."""
    if report is None:
        return "neither"
    low, high = (report.get("interval_bytes") or [None, None])[:2]
    if report.get("peak_bytes") is not None and low is not None and high is not None:
        return "bounded"
    if report.get("unread"):
        return "named"
    notes = report.get("breakdown_notes") or {}
    unknown = report.get("unknown_terms") or []
    if unknown and all(notes.get(term) for term in unknown):
        return "named"  # every unknown term of the report says why (no model shape, ...)
    return "neither"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path("/tmp/reading"),
                        help="the folder fetch_files.py wrote (<owner>+<name>/<path>)")
    parser.add_argument("--index", type=Path, default=HERE / "index.csv")
    parser.add_argument("--gpu", default="a100-80gb", help="the one override given: the target GPU")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--verbose", action="store_true", help="print every field: expected, read, verdict")
    parser.add_argument("--only", nargs="*", default=None, help="row ids to run")
    args = parser.parse_args(argv)
    with args.index.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if not args.only or row["id"] in args.only]
    totals = {RIGHT: 0, WRONG: 0, MISSING: 0}
    read_right = 0
    neither: List[str] = []
    outcomes = {"bounded": 0, "named": 0, "neither": 0}
    for row in rows:
        folder = args.root / row["repository"].replace("/", "+")
        if not (folder / row["path"]).is_file():
            print(f"{row['id']:24} file missing: run fetch_files.py")
            neither.append(row["id"])
            outcomes["neither"] += 1
            continue
        report, said = run_estimator(folder, row["path"], args.gpu, args.timeout)
        verdicts = judge(row, report)
        counts = {kind: sum(1 for v in verdicts.values() if v == kind) for kind in totals}
        for kind in totals:
            totals[kind] += counts[kind]
        shape = outcome(report)
        outcomes[shape] += 1
        if shape == "neither":
            neither.append(row["id"])
        ok = counts[WRONG] == 0 and report is not None
        read_right += ok
        wrong = [name for name, v in verdicts.items() if v == WRONG]
        missing = [name for name, v in verdicts.items() if v == MISSING]
        print(f"{row['id']:24} right {counts[RIGHT]:2}  wrong {counts[WRONG]:2}  missing {counts[MISSING]:2}  "
              f"{shape:8} {'read right' if ok else 'READ WRONG'}"
              + (f"  wrong: {','.join(wrong)}" if wrong else "")
              + (f"  missing: {','.join(missing)}" if missing else "")
              + ("" if report is not None else f"  ({said})"))
        if args.verbose:
            values = read_values(report) if report is not None else {}
            for name, verdict in verdicts.items():
                print(f"    {name:17} expected {row[name]!s:28} read {values.get(name)!s:28} {verdict}")
            for name, what in ((report or {}).get("unread") or {}).items():
                print(f"    unread {name}: {what}")
    fields = sum(totals.values())
    print()
    print(f"scripts: {len(rows)}")
    print(f"fields judged: {fields}: right {totals[RIGHT]}, wrong {totals[WRONG]}, missing {totals[MISSING]}")
    print(f"read right (no field silently wrong): {read_right}/{len(rows)} "
          f"({100.0 * read_right / max(1, len(rows)):.0f}%)")
    print(f"bounded projection: {outcomes['bounded']}, unknown named: {outcomes['named']}, "
          f"neither: {outcomes['neither']}" + (f" ({', '.join(neither)})" if neither else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
