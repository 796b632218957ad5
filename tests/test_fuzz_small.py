"""A small seeded fuzz in the regular run (a few seconds): generated training programs go through
every checker (all 14 entry classes, TPV001 with a target GPU); no exception escapes, no internal
note is written, and the findings are the same when the programs are analysed in the opposite
order (issue 18).  The large, grammar-wide fuzz stays opt-in (``tests/test_fuzz.py``).

The generator composes fragments of training code (models, loaders, loops, optimizers, losses,
seeds, no_grad, helpers, classes) with the shapes that broke the linter before: long chains of
rebindings, ``if``/``elif`` ladders, deep expressions and attribute chains, assignments into torch.
"""
from __future__ import annotations

import ast
import random
from pathlib import Path
from typing import Callable, List, Tuple

import pytest

from harness import ALL_CODES, run_plugin

SEED = 18
PROGRAMS = 14

HEADER = [
    "import random",
    "import numpy as np",
    "import torch",
    "import torch.nn as nn",
    "import torch.nn.functional as F",
    "from torch.utils.data import DataLoader, TensorDataset, RandomSampler",
]

Emit = Callable[[random.Random, int], List[str]]


def _simple(rng: random.Random) -> str:
    return rng.choice([
        "model = nn.Linear(8, 4)",
        "model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))",
        "model = Net()",
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)",
        "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)",
        "criterion = nn.CrossEntropyLoss()",
        "criterion = nn.BCEWithLogitsLoss()",
        "loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,))), shuffle=True)",
        "loader = DataLoader(data, sampler=RandomSampler(data), num_workers=0)",
        "torch.manual_seed(0)",
        "np.random.seed(0)",
        "random.seed(0)",
        "x = torch.randn(8, 8)",
        "y = torch.randint(0, 4, (8,))",
        "out = model(x)",
        "loss = criterion(out, y)",
        "loss = criterion(F.softmax(out, dim=1), y)",
        "loss = F.binary_cross_entropy(torch.sigmoid(out), y.float())",
        "loss = loss / 4",
        "loss.backward()",
        "opt.step()",
        "opt.zero_grad()",
        "losses.append(loss)",
        "losses.append(loss.item())",
        "total += loss",
        "total = total + loss.detach()",
        "model.eval()",
        "model.train()",
        "x = x.cuda()",
        "model.to('cuda')",
        "value = loss.item()",
        "history[step] = out",
        "noise = np.random.normal(size=(8, 8))",
        "pick = random.choice([1, 2, 3])",
        "scaler = torch.cuda.amp.GradScaler()",
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        "nn.Linear = Net",
        "torch.Tensor.item = len",
        "x.requires_grad = True",
        "model.fc = nn.Linear(4, 4)",
        "del x",
        "(a, *rest) = [1, 2, 3]",
        "f = lambda t: t * 2",
        "vals = [v * 2 for v in range(4) if v]",
        "counts = {k: v for k, v in zip('ab', (1, 2))}",
        "msg = f'{step:>4} {loss!r}'",
        "if (n := len(losses)) > 2: pass",
        "assert loss is not None",
        "global_total = sum(losses)",
        "obj.attr.chain.value = 3",
        "w = torch.randn(2, 2, requires_grad=True)",
        "z = w" + ".t()" * 30,
        "s = " + " + ".join(["x"] * 220),
        "a = b" + ".c" * 260,
    ])


def _block(rng: random.Random, depth: int) -> List[str]:
    lines: List[str] = []
    for _ in range(rng.randint(1, 5)):
        roll = rng.random()
        if depth < 4 and roll < 0.35:
            header, inner = _compound(rng, depth)
            lines.append(header)
            lines.extend("    " + line for line in inner)
        elif roll < 0.4:
            name = rng.choice(["loss", "x", "total"])
            lines.extend("{0} = {0} + {1}".format(name, rng.choice(["x.mean()", "1", "loss"]))
                         for _ in range(rng.choice([3, 20, 60])))
        elif roll < 0.45:
            rungs = rng.choice([3, 12, 40])
            for i in range(rungs):
                lines.append("{}if step == {}:".format("el" if i else "", i))
                lines.append("    loss = loss + {}".format(i))
        else:
            lines.append(_simple(rng))
    return lines


def _compound(rng: random.Random, depth: int) -> Tuple[str, List[str]]:
    kind = rng.choice(["for", "for", "while", "if", "with", "try", "def", "class"])
    body = _block(rng, depth + 1)
    if kind == "for":
        return rng.choice(["for step, (x, y) in enumerate(loader):", "for epoch in range(3):", "for x in data:"]), body
    if kind == "while":
        return "while step < 10:", body + ["step += 1"]
    if kind == "if":
        return rng.choice(["if step % 4 == 0:", "if __name__ == '__main__':", "if args.cuda:"]), body
    if kind == "with":
        return rng.choice(["with torch.no_grad():", "with torch.autocast('cuda'):", "with open('f') as fh:"]), body
    if kind == "try":
        return "try:", body + ["pass"] + ["except Exception as err:"] + ["    raise"]  # dedented below
    if kind == "def":
        return "def {}(model, loader, opt):".format(rng.choice(["train", "evaluate", "step"])), body + ["return loss"]
    return "class Net(nn.Module):", [
        "def __init__(self):",
        "    super().__init__()",
        "    self.fc = nn.Linear(8, 4)",
        "def forward(self, x):",
        "    return self.fc(x)",
    ]


def generate(rng: random.Random) -> str:
    """One program that parses: a training script skeleton (model, optimizer, loader, an epoch
    loop over batches, maybe an evaluation loop) whose statements are drawn at random, with random
    blocks from ``_block`` inserted at the top level and in the loops.  A draw that does not parse
    is dropped."""
    while True:
        source = "\n".join(_fixed_try(_skeleton(rng))) + "\n"
        try:
            ast.parse(source)
        except (SyntaxError, RecursionError, MemoryError):
            continue
        return source


def _skeleton(rng: random.Random) -> List[str]:
    lines = list(HEADER) + ["losses = []", "total = 0", "history = {}", "step = 0"]
    if rng.random() < 0.5:
        lines += ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
                  "        self.fc = nn.Linear(8, 4)", "    def forward(self, x):",
                  "        return " + rng.choice(["self.fc(x)", "F.softmax(self.fc(x), dim=1)"])]
    seeds = ["torch.manual_seed(0)", "np.random.seed(0)", "random.seed(0)"]
    lines += rng.sample(seeds, rng.randint(0, 3))
    lines.append(rng.choice(["model = nn.Linear(8, 4)", "model = Net()" if "class Net(nn.Module):" in lines else
                             "model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))"]))
    lines.append(rng.choice(["model = model.cuda()", "device = 'cuda'", "pass"]))
    lines.append(rng.choice(["opt = torch.optim.SGD(model.parameters(), lr=0.1)",
                             "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)"]))
    lines.append(rng.choice(["criterion = nn.CrossEntropyLoss()", "criterion = nn.BCEWithLogitsLoss()",
                             "criterion = nn.BCELoss()"]))
    lines.append(rng.choice([
        "data = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))",
        "data = MyDataset()",
    ]))
    lines.append(rng.choice([
        "loader = DataLoader(data, batch_size=8, shuffle=True)",
        "loader = DataLoader(data, batch_size=8, num_workers=4, pin_memory=True)",
        "loader = DataLoader(data, sampler=RandomSampler(data))",
    ]))
    lines.extend(_block(rng, 2) if rng.random() < 0.3 else [])
    if rng.random() < 0.3:
        lines += ["scaler = torch.cuda.amp.GradScaler()"]
    lines.append("for epoch in range(3):")
    if rng.random() < 0.3:
        lines.append("    model.eval()")
    lines.append("    for step, (x, y) in enumerate(loader):")
    step = [
        rng.choice(["x = x.cuda()", "x = x.to('cuda')", "pass"]),
        rng.choice(["opt.zero_grad()", "pass", "model.zero_grad()"]),
        rng.choice(["out = model(x)", "with torch.autocast('cuda', dtype=torch.float16):\n    out = model(x)"]),
        rng.choice(["loss = criterion(out, y)", "loss = criterion(F.softmax(out, dim=1), y)",
                    "loss = criterion(torch.sigmoid(out), y.float())", "loss = criterion(out, y) / 4"]),
        rng.choice(["loss.backward()", "scaler.scale(loss).backward()"]),
        rng.choice(["opt.step()", "if step % 4 == 0:\n    opt.step()\n    opt.zero_grad()", "scaler.step(opt)"]),
        rng.choice(["losses.append(loss)", "losses.append(loss.item())", "total += loss", "total += loss.item()",
                    "print(loss.item())", "pass"]),
    ]
    if rng.random() < 0.5:
        step.insert(rng.randrange(len(step)), "\n".join(_block(rng, 2)))
    for statement in step:
        lines.extend("        " + line for line in statement.split("\n"))
    if rng.random() < 0.5:
        lines += ["    model.eval()", "    for x, y in loader:", "        out = model(x)",
                  "        correct = (out.argmax(1) == y).sum()"]
        lines.append(rng.choice(["    model.train()", "    pass"]))
    if rng.random() < 0.4:
        lines.extend(_block(rng, 1))
    return lines


def _fixed_try(lines: List[str]) -> List[str]:
    """``try:`` blocks come out with their ``except`` indented as body lines; move each up one level."""
    fixed: List[str] = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith("except Exception as err:") and line.startswith("    "):
            fixed.append(line[4:])
        elif stripped == "raise" and fixed and fixed[-1].lstrip().startswith("except") and line.startswith("    "):
            fixed.append(line[4:])
        else:
            fixed.append(line)
    return fixed


def _analyse(index: int, source: str) -> List[Tuple[int, int, str]]:
    return run_plugin(Path("fuzz_{}.py".format(index)), source, ALL_CODES, ["--tp-target-gpu=t4"])


def test_generated_programs_never_fail_and_give_the_same_findings(capsys: pytest.CaptureFixture) -> None:
    rng = random.Random(SEED)
    programs = [generate(rng) for _ in range(PROGRAMS)]
    first = [_analyse(i, source) for i, source in enumerate(programs)]
    err = capsys.readouterr().err
    assert "flake8-torch-preflight" not in err and "Traceback" not in err, err
    second = [_analyse(i, source) for i, source in reversed(list(enumerate(programs)))][::-1]
    assert first == second
    assert capsys.readouterr().err == ""
    found = {message.split()[0] for result in first for _, _, message in result}
    assert len(found) >= 6, found  # the programs exercise the rules, not only the parser
