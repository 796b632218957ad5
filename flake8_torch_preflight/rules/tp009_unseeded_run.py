"""TP009 unseeded-run: a training run draws random numbers from a generator it never seeds.

The run is what the file executes: its module-level statements and
``if __name__ == "__main__":`` block, with the file's functions, methods and
class constructors they call expanded (``analysis.entrypoint``).  A file is a
run only when that code reaches a training step (``backward()``, ``fit()``,
``trainer.train()``): modules that only define functions, and inference or
conversion scripts, are silent.

What draws from or seeds which generator (torch, NumPy's global generator,
``random``, and generators built without a seed) is ``analysis.randomness``,
with its data and its documented name-based fallback for seeding helpers that
are never read (``seed_everything``, ``transformers.set_seed``, a call handed
``args.seed``).  A ``set_seed`` of the file counts for exactly the seeders it
calls; ``torch.cuda.manual_seed*`` alone shows intent but leaves the CPU
generator that initialises weights unseeded.

Where it reports: one finding for the global generators (torch, NumPy,
``random``) the run draws from and never seeds, at the first such draw in
execution order, naming the others; and one at the first ``default_rng()`` or
``random.Random()`` built without a seed (each is its own generator).
Whether the seed comes before the draw is not checked.  The message says
whether the run seeds nothing at all or only some generators (the intent is
visible: a stronger signal).
"""
from __future__ import annotations

import re
from typing import Dict, Sequence, Set, Tuple

from astroid import nodes

from ..analysis import entrypoint
from ..analysis.randomness import INTENT, NUMPY, NUMPY_RNG, RANDOM, RANDOM_INSTANCE, SEED, TORCH, effect
from ._base import Rule, register, text_gate

_GENERATOR_NAMES = {
    TORCH: "torch",
    NUMPY: "NumPy",
    RANDOM: "random",
    NUMPY_RNG: "separate NumPy",
    RANDOM_INSTANCE: "separate random.Random",
}
_SEEDERS = {TORCH: "torch.manual_seed(seed)", NUMPY: "np.random.seed(seed)", RANDOM: "random.seed(seed)"}


#: A seeding call commented out: the author chose to leave the run unseeded.
COMMENTED_SEED = re.compile(r"^\s*#.*\b(manual_seed|seed_everything|set_seed|random\.seed)\s*\(")


@register
class UnseededRun(Rule):
    code, slug = "TP009", "unseeded-run"
    requires = text_gate(r"backward|\.fit\(|\.train\(\)")
    message = "{draw} uses the {generator} RNG, {state}: not reproducible; {fix}"
    quoted = ("draw",)
    rationale = (
        "Weight initialisation, shuffling, augmentation and dropout all draw from random generators: torch's, "
        "NumPy's global one and Python's random module each keep their own state, and each starts from a "
        "nondeterministic seed. A training run that never seeds them gives different results on every launch, "
        "so a regression cannot be told from noise; one that seeds only some of them (torch but not "
        "np.random) is the same bug with the intent visible. The rule reads the run the file executes "
        "(module-level code and the __main__ block, through the file's functions and class constructors) and "
        "reports, once per generator, the first draw from a generator that nothing seeds. Seeding helpers "
        "count: seed_everything, transformers.set_seed, accelerate's set_seed, and a set_seed of the file for "
        "the seeders it calls."
    )
    leaves_alone = (
        "Files that only define functions, and runs that never train, are left alone."
        " A file with a seeding call commented out (``# torch.manual_seed(1)``) has chosen to run unseeded."
    )
    example_bad = """
        import numpy as np
        import torch

        if __name__ == "__main__":
            torch.manual_seed(0)
            model = torch.nn.Linear(10, 1)
            noise = np.random.normal(size=(64, 10))
            model(torch.as_tensor(noise, dtype=torch.float32)).sum().backward()
    """
    example_good = """
        import numpy as np
        import torch

        if __name__ == "__main__":
            torch.manual_seed(0)
            np.random.seed(0)
            model = torch.nn.Linear(10, 1)
            noise = np.random.normal(size=(64, 10))
            model(torch.as_tensor(noise, dtype=torch.float32)).sum().backward()
    """

    def visit_module(self, node: nodes.Module) -> None:
        if all(isinstance(s, _DEFINITIONS) for s in node.body):
            return  # only definitions: not a run
        if any(COMMENTED_SEED.match(line) for line in self.ctx.lines):
            return  # ``# torch.manual_seed(1)  # reproducible``: leaving the run unseeded is a stated choice
        calls = entrypoint.run_calls(node)
        if not entrypoint.trains(calls):
            return
        seeded: Set[str] = set()
        intent = False
        draws: Dict[str, Tuple[nodes.Call, str]] = {}
        for call in calls:
            found = effect(call)
            if found is None:
                continue
            if found.kind == SEED:
                seeded |= found.generators
                intent = True
            elif found.kind == INTENT:
                intent = True
            elif call.root() is node:  # a draw inside another module of the project has no line in this file
                for generator in found.generators:
                    draws.setdefault(generator, (call, found.label))
        unseeded = [g for g in draws if g not in seeded]
        shared = [g for g in unseeded if g in _SEEDERS]  # the global generators: one root cause, one finding
        if shared:
            first = min(shared, key=lambda g: calls.index(draws[g][0]))
            call, label = draws[first]
            others = [g for g in shared if g != first]
            self.report(call, draw=label, generator=_GENERATOR_NAMES[first], **_wording(first, seeded, intent, others))
        for generator in unseeded:
            if generator not in _SEEDERS:  # a generator built without a seed: its own cause
                call, label = draws[generator]
                wording = _wording(generator, seeded, intent)
                self.report(call, draw=label, generator=_GENERATOR_NAMES[generator], **wording)


_DEFINITIONS = (nodes.FunctionDef, nodes.ClassDef, nodes.Import, nodes.ImportFrom)


def _wording(generator: str, seeded: Set[str], intent: bool, others: Sequence[str] = ()) -> Dict[str, str]:
    """``others``: further global generators the run draws from and never seeds, named in the same
    finding (their seeders join the fix)."""
    if generator in (NUMPY_RNG, RANDOM_INSTANCE):
        return {"state": "built without a seed", "fix": "pass it a seed"}
    also = " (nor {})".format(", ".join(_GENERATOR_NAMES[g] for g in others)) if others else ""
    fix = "add " + (", ".join(_SEEDERS[g].replace("(seed)", "") for g in (generator, *others)) if others
                    else _SEEDERS[generator])
    if not intent:
        return {"state": "never seeded" + also, "fix": fix}
    done = " and ".join(sorted(_GENERATOR_NAMES[g] for g in seeded)) or "CUDA"
    return {"state": "unseeded unlike {}{}".format(done, also), "fix": fix}
