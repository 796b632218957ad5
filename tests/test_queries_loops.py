"""``analysis.semantic.loops.iteration_bound``: how many items a ``for`` loop takes from its iterable
at most, when that is a small number fixed in the source.  Each case is a small file whose last
loop is asked about (with a limit of 16).  Also ``loops.run_before``: what runs on every path to a node
before it."""
from __future__ import annotations

import textwrap
from typing import Optional

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.semantic import loops
from flake8_torch_preflight.analysis.setup.build import build_module

LIMIT = 16


def _bound(source: str) -> Optional[int]:
    module = build_module(textwrap.dedent(source), "/tmp/tp_queries_loops_case.py")
    loop = list(module.nodes_of_class((nodes.For, nodes.While)))[-1]
    return loops.iteration_bound(loop, LIMIT)


BOUNDED = [
    # a counter incremented before the test, against a parameter's default
    ("def show(data, num_examples=2):\n"
     "    count = 0\n"
     "    with open('f') as f:\n"
     "        for x in data:\n"
     "            count += 1\n"
     "            print(x)\n"
     "            if count == num_examples:\n"
     "                break\n"
     "show([1, 2, 3])\n", 2),
    # a counter incremented after the test: the break comes one item later
    ("count = 0\nfor x in data:\n    if count >= 2:\n        break\n    count += 1\n", 3),
    # the enumerate index, with and without a start, against an in-file call site's constant
    ("def show(data, k):\n    for i, x in enumerate(data):\n        if i + 1 == k:\n            break\n"
     "show(d, 4)\n", 4),
    ("for i, x in enumerate(data, 1):\n    if i >= 5:\n        break\n", 5),
    ("for i, x in enumerate(data):\n    if i > 5:\n        break\n", 7),
    # call sites passing different constants: the larger one bounds
    ("def show(data, k):\n    for i, x in enumerate(data):\n        if i >= k:\n            break\n"
     "show(d, 2)\nshow(d, 6)\n", 7),
    # a module-level constant and arithmetic on literals
    ("SHOWN = 2 * 3\nfor i, x in enumerate(data):\n    if i == SHOWN:\n        break\n", 7),
    # one known test of an ``or`` decides
    ("for i, x in enumerate(data):\n    if i == 3 or x is None:\n        break\n", 4),
    # the header: islice, zip with a range, through wrappers and a name bound once
    ("import itertools\nfor x in itertools.islice(data, 4):\n    pass\n", 4),
    ("from itertools import islice\nfor i, x in enumerate(islice(data, 1, 5)):\n    pass\n", 5),
    ("it = iter(islice(data, 3))\nfor x in it:\n    pass\n", 3),
    ("for _, x in zip(range(3), data):\n    pass\n", 3),
    ("for x, _ in zip(data, range(3)):\n    pass\n", 4),
    ("from itertools import islice\nfor x in islice(data, 100):\n    if x:\n        pass\n", None),
    # the header: a range with fixed bounds, a literal collection, through wrappers or a name
    ("STAGES = 6\nfor j in range(STAGES):\n    pass\n", 6),
    ("EPOCHS = 8\nfor epoch in range(1, EPOCHS + 1):\n    pass\n", 8),  # arithmetic on a fixed name
    ("EPOCHS = 8\nfor epoch in range(EPOCHS * 3):\n    pass\n", None),  # 24: above the limit
    ("for i, j in enumerate(range(2, 5)):\n    pass\n", 3),
    ("for mask in [a, b, c]:\n    pass\n", 3),
    ("terms = {'mse': a, 'kl': b}\nfor k, v in terms.items():\n    pass\n", 2),
    ("for k in {'mse': a, 'kl': b}:\n    pass\n", 2),
    ("for x in list(range(4)):\n    pass\n", 4),
]

UNBOUNDED = [
    "for x in data:\n    pass\n",
    "for i in range(len(data)):\n    pass\n",
    "for x in [*data, 1]:\n    pass\n",
    "for j in range(100):\n    pass\n",
    "while True:\n    break\n",
    # a bound read from the command line, a configuration, an attribute or a call
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--n', type=int, default=2)\n"
    "args = p.parse_args()\nfor i, x in enumerate(data):\n    if i >= args.n:\n        break\n",
    "cfg = {'n': 2}\nn = cfg['n']\nfor i, x in enumerate(data):\n    if i >= n:\n        break\n",
    "for i, x in enumerate(data):\n    if i >= len(data) // 2:\n        break\n",
    # a parameter with no call site in sight, or one call site out of reach
    "def show(data, k):\n    for i, x in enumerate(data):\n        if i >= k:\n            break\n",
    "def show(data, k):\n    for i, x in enumerate(data):\n        if i >= k:\n            break\n"
    "show(d, 2)\nshow(d, args.k)\n",
    # a large bound
    "for i, x in enumerate(data):\n    if i >= 10000:\n        break\n",
    "import itertools\nfor x in itertools.islice(data, 10000):\n    pass\n",
    # a test that may be skipped: under a condition, after a continue
    "for i, x in enumerate(data):\n    if x:\n        if i >= 2:\n            break\n",
    "for i, x in enumerate(data):\n    if x:\n        continue\n    if i >= 2:\n        break\n",
    # an ``and`` with an unknown side, a counter grown conditionally or reset in the loop
    "for i, x in enumerate(data):\n    if i >= 2 and x:\n        break\n",
    "count = 0\nfor x in data:\n    if x:\n        count += 1\n    if count == 2:\n        break\n",
    "count = 0\nfor x in data:\n    count += 1\n    if x:\n        count = 0\n    if count == 2:\n        break\n",
    # a counter started outside an enclosing loop: == may be passed by the next run
    "count = 0\nfor epoch in range(3):\n    for x in data:\n        count += 1\n        if count == 2:\n"
    "            break\n",
    # list() reads everything before islice takes from it
    "import itertools\nfor x in itertools.islice(list(data), 4):\n    pass\n",
    # a zip without a range
    "for x, y in zip(data, other):\n    pass\n",
]


@pytest.mark.parametrize("source, expected", BOUNDED)
def test_a_loop_that_stops_after_a_few_items(source: str, expected: Optional[int]) -> None:
    assert _bound(source) == expected


@pytest.mark.parametrize("source", UNBOUNDED)
def test_a_loop_with_no_small_fixed_bound(source: str) -> None:
    assert _bound(source) is None


RUN_BEFORE_CASE = """\
def step(batch, flag):
    a = prepare(batch)
    if check(a):
        b = first(a)
    else:
        b = second(a)
    for x in batch:
        c = inner(x)
        try:
            d = risky(c)
        except ValueError:
            d = fallback(c)
        except KeyError:
            d = target(c)
    return d
"""


def _run_before(within_iteration: bool) -> "list[str]":
    module = build_module(RUN_BEFORE_CASE, "/tmp/tp_queries_run_before.py")
    target = next(c for c in module.nodes_of_class(nodes.Call) if c.as_string() == "target(c)")
    return [n.as_string().splitlines()[0] for n in loops.run_before(target, within_iteration)]


def test_run_before_within_the_function():
    """Nearest first: the loop body ahead of the try, then the function's statements ahead of the loop.
    The try body may have raised anywhere and the earlier handler is an alternative: neither precedes a
    handler on every path."""
    assert _run_before(False) == ["c = inner(x)", "if check(a):", "a = prepare(batch)"]


def test_run_before_within_one_iteration():
    """Stops at the innermost loop: what ran earlier in the same iteration."""
    assert _run_before(True) == ["c = inner(x)"]


DEFAULT_RUNS = [
    # the command line's default, with and without a start
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=5)\n"
     "args = p.parse_args()\nfor epoch in range(args.epochs):\n    pass\n", 5),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=5)\n"
     "args = p.parse_args()\nfor epoch in range(1, args.epochs + 1):\n    pass\n", 5),
    # a literal is its own default
    ("for epoch in range(3):\n    pass\n", 3),
    # no default to read, and no range
    ("import sys\nfor epoch in range(int(sys.argv[1])):\n    pass\n", None),
    ("for x in loader:\n    pass\n", None),
]


@pytest.mark.parametrize("source, expected", DEFAULT_RUNS)
def test_default_range_length(source: str, expected: Optional[int]) -> None:
    """``loops.default_range_length``: the count of a ``range`` header in the run a script makes by
    default (what TP012 calls a short run); ``iteration_bound`` refuses a command-line value."""
    module = build_module(textwrap.dedent(source), "/tmp/tp_queries_loops_case.py")
    loop = list(module.nodes_of_class(nodes.For))[-1]
    assert loops.default_range_length(loop) == expected
    if "args" in source:
        assert loops.iteration_bound(loop, LIMIT) is None


REJECTED = textwrap.dedent("""\
    import torch
    from dataclasses import dataclass


    class Faces(torch.utils.data.Dataset):
        def __init__(self, root, transform=None):
            self.root = root


    class Aged(Faces):
        pass


    class Loose:
        def __init__(self, root, **options):
            self.root = root


    @dataclass
    class Settings:
        root: str = "."


    def load(path, *, scale=1.0):
        return path


    def anything(*args):
        return args


    options = {"transform": None}
    Faces("faces", transforms=None)
    Aged("faces", None, True)
    load("a", "b")
    load("a", scaling=2)
    Faces("faces", transform=None)
    Aged(root="faces")
    Loose("faces", transforms=None)
    Settings(rooot=".")
    anything(1, 2, 3)
    load("a", scale=2.0)
    Faces("faces", **options)
    torch.nn.Linear(2, 3, bias=False, device="cpu")
""")


def test_rejected_argument_names_what_the_callee_does_not_take() -> None:
    """A keyword or a positional argument that a project function or class (by the ``__init__`` it runs,
    inherited from a project base) does not take; nothing for ``**kwargs``, ``*args``, a decorated class,
    an unpacked call or a torch class."""
    module = build_module(REJECTED, "/tmp/tp_queries_loops_rejected.py")
    calls = [s.value for s in module.body if isinstance(s, nodes.Expr) and isinstance(s.value, nodes.Call)]
    assert [loops.rejected_argument(call) for call in calls] == [
        "transforms", "positional", "positional", "scaling", None, None, None, None, None, None, None, None,
    ]
