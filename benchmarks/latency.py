"""What an editor pays at every save: one flake8 process on one file.

Usage::

    python benchmarks/latency.py FILE [--repeat N]

Times, as separate processes, ``flake8 --isolated`` on FILE with

* ``plain``: ``--select E,F,W,C90`` (flake8 and its default checks; the plugin returns at once),
* ``tp``: ``--select TP``, the file analysed in the flake8 process (the default),
* ``tp-server``: ``--select TP --tp-server``, answered by the analysis server, which an untimed
  first run starts (it is stopped at the end),

each ``--repeat`` times, and prints the fastest wall time and that run's CPU time of the flake8
process (the server's CPU is not in it), with bytecode caching on as on a user's machine.  The
servers live in a temporary folder of their own.  Nothing here is a test.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

from flake8_torch_preflight import server

RUNS = {
    "plain": ["--select", "E,F,W,C90"],
    "tp": ["--select", "TP"],
    "tp-server": ["--select", "TP", "--tp-server"],
}


def run_once(path: Path, args: List[str], env: Dict[str, str]) -> Tuple[float, float, str]:
    """(wall seconds, CPU seconds of the flake8 process, its output)."""
    cmd = [sys.executable, "-m", "flake8", "--isolated", "--exit-zero", *args, str(path)]
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=str(path.parent))
        _, _, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, out.read().decode(errors="replace")


def _stop_servers(folder: str) -> None:
    for lock in Path(folder).rglob("*.sock.lock"):
        server.stop(str(lock)[: -len(".lock")])


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--repeat", type=int, default=7, help="runs per measurement; the fastest is shown")
    args = parser.parse_args(argv)
    path = args.file.resolve()
    folder = tempfile.mkdtemp(prefix="tp-lat-")
    env = dict(os.environ, XDG_RUNTIME_DIR=folder)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    outputs = {}
    print("{:<10} {:>8} {:>8}".format("run", "wall s", "cpu s"))
    try:
        for name, extra in RUNS.items():
            run_once(path, extra, env)  # bytecode written; for tp-server, the server started
            if name == "tp-server":
                deadline = time.monotonic() + 30
                while not list(Path(folder).rglob("*.sock")) and time.monotonic() < deadline:
                    time.sleep(0.1)
                run_once(path, extra, env)  # the server's first request
            runs = [run_once(path, extra, env) for _ in range(args.repeat)]
            wall, cpu, output = min(runs)
            outputs[name] = output
            print("{:<10} {:>8.3f} {:>8.3f}".format(name, wall, cpu))
    finally:
        _stop_servers(folder)
    same = outputs["tp"] == outputs["tp-server"]
    print("{}: {} findings, the server's {}".format(
        args.file, len(outputs["tp"].splitlines()), "the same" if same else "DIFFERENT"))
    print("python {}  cpus={}  best of {}".format(sys.version.split()[0], os.cpu_count(), args.repeat))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
