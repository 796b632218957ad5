"""Time the plugin on a training loop whose loss is rebound many times (``loss = loss + term``).

Usage::

    python benchmarks/rebinding_chain.py [--sizes 300,1200,3000] [--budget SECONDS]

For each size N it generates a training script whose loop body holds N statements
``loss = loss + term`` between the forward pass and ``loss.backward()``, then keeps the loss in a
list (``history.append(loss)``: TP001, which the analysis finds only by following the whole chain
of rebindings back to the model's output), analyses it in-process with
every rule selected (``engine.analyse_file``, the plugin's per-file CPU budget replaced by
``--budget`` so that the real cost shows) and prints the CPU seconds and the findings (with
``--memory``, also the peak memory Python allocates while analysing, from a second, untimed run
under ``tracemalloc``).  The cost should grow linearly with N: the plugin's default budget
(``engine.BUDGET_SECONDS``) is a safety net, not a regular outcome.
Figures go in issue notes; nothing here is a test.
"""
from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flake8_torch_preflight import engine  # noqa: E402
from flake8_torch_preflight.analysis.setup import build  # noqa: E402

HEAD = """import torch
import torch.nn as nn

model = nn.Linear(16, 4)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(0)
history = []
for step in range(100):
    x = torch.randn(8, 16)
    y = torch.randint(0, 4, (8,))
    optimizer.zero_grad()
    out = model(x)
    loss = criterion(out, y)
    term = out.pow(2).mean()
"""

TAIL = """    loss.backward()
    optimizer.step()
    history.append(loss)
"""


def chain_source(size: int) -> str:
    """A training script with ``size`` rebindings of ``loss`` in its loop body."""
    body = "".join("    loss = loss + term * {}\n".format(i % 7 + 1) for i in range(size))
    return HEAD + body + TAIL


def measure(size: int, memory: bool) -> None:
    lines = chain_source(size).splitlines(keepends=True)
    name = "rebinding_chain_{}.py".format(size)
    start = time.process_time()
    findings = engine.analyse_file(name, lines, build.Settings())
    seconds = time.process_time() - start
    peak = ""
    if memory:  # a second run under tracemalloc (which slows Python down, so it is not timed)
        tracemalloc.start()
        engine.analyse_file(name, lines, build.Settings())
        peak = "  {:>7.1f} MiB peak".format(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
    codes = sorted("{}:{}".format(code, line) for code, found in findings.items() for line, _, _ in found)
    print("{:>6} statements  {:>7.2f} s CPU{}  findings: {}".format(size, seconds, peak, ", ".join(codes) or "none"))


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="300,1200,3000", help="comma-separated chain lengths")
    parser.add_argument("--budget", type=float, default=600.0, help="per-file CPU budget for the runs (s)")
    parser.add_argument("--memory", action="store_true", help="also report the peak memory allocated (tracemalloc)")
    args = parser.parse_args(argv)
    engine.BUDGET_SECONDS = args.budget
    measure(10, False)  # warm-up: builds the stubs and astroid's builtins once
    for size in (int(s) for s in args.sizes.split(",")):
        measure(size, args.memory)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
