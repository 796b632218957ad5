"""TPV001 projected-oom: the run read out of the file will not fit the target GPU, even at the low end.

With ``--tp-target-gpu`` (or ``--tp-gpu-memory``) set, the rule reads the run the file
describes (``estimator.extract``, on the plugin's own astroid tree), prices it with the cost
model and reports at the line that builds the model when the *low* end of the interval is
above the target's usable memory, with the solver's cheapest way to fit.

Doubt means silence. The low end already counts unknown terms at their lower bounds (an
unknown activation term adds nothing to it). Fields whose evidence the reader could not
resolve are replaced by their lightest value before the verdict (``LIGHTEST``): an unknown
optimizer is priced as plain SGD (no state), unknown precision as the cheapest of the four,
unknown checkpointing / flash attention / fused step as on, a sequence length read as a
maximum (truncation) or an image size not read for an image model as unknown (no
activations). When something cannot be bounded from below at all (sharding over an unknown
number of GPUs, quantized or offloaded weights, a model of unknown size, one of several
models a flag chooses between) the rule says nothing; nor when the file never puts the run
on a GPU (no ``.cuda()``, ``.to(device)``, DDP, Trainer, accelerate or DeepSpeed: a plain
script runs on the CPU) or puts the model on the CPU explicitly.
"""
from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from astroid import nodes

from ..estimator.run import PRECISIONS, RunSpec, RunSpecError
from ._base import MAX_MESSAGE, Rule, register

if TYPE_CHECKING:
    from ..estimator import extract, solver
    from ..estimator.catalogue import GpuTarget

#: Value each unresolved field takes for the verdict: the one that needs the least memory.
LIGHTEST: Dict[str, object] = {
    "optimizer": "sgd",
    "fused_optimizer": True,
    "checkpointing": True,
    "flash": True,
}

#: Unresolved fields that make any lower bound impossible: the rule stays silent.
UNBOUNDED = frozenset({"model", "sharding", "weights_layout"})

#: Sharding modes that divide memory by the number of GPUs.
DIVIDING = frozenset({"fsdp", "zero-1", "zero-2", "zero-3"})

#: Changes named in the message when the solver cannot decide (the largest savings first).
MAX_SAVINGS_SHOWN = 3


@register
class ProjectedOom(Rule):
    code, slug = "TPV001", "projected-oom"
    message = "projected OOM on {gpu}: {cost}; {fix}"
    rationale = (
        "With the target GPU declared once in the flake8 configuration (tp-target-gpu = a100-80gb, or "
        "tp-gpu-memory = 48GiB for unlisted hardware), the rule reads the training run out of the file "
        "without running it: the model (a from_pretrained name, a torchvision or timm model, or an "
        "nn.Module of the file whose parameters it counts), batch size, sequence length or image size, "
        "precision, optimizer, checkpointing, attention kernel and sharding, through constants, argparse "
        "defaults and config dicts. It prices the peak memory per GPU with the estimator's cost model and "
        "reports at the line that builds the model when even the low end of the interval exceeds the "
        "GPU's usable memory: the run would stop with CUDA out of memory. The message gives that low end, "
        "the usable memory, and the fix: the smallest set of changes that fits with the GiB each saves, "
        "else the change that saves most, else the estimator command (tp-estimate FILE --gpu NAME) that "
        "shows the whole breakdown, every saving and what it read from the file."
    )
    leaves_alone = (
        "It stays silent without a target (tp-target-gpu or tp-gpu-memory); when the file never puts the "
        "run on a GPU (no .cuda(), .to(device), DDP, Trainer, accelerate or DeepSpeed: a plain script runs "
        "on the CPU) or moves the model to the CPU; when the model cannot be identified or counted, or a "
        "flag chooses between several models and one of them is of unknown size; when the weights are "
        "quantized or offloaded, or the sharding mode cannot be read, or the run is sharded over a number "
        "of GPUs the file does not give and the target is a single GPU; and when a value read from the "
        "file is outside what the estimator accepts.\n\n"
        "Doubt means silence. A field the reader cannot resolve is taken at its lightest: an unknown "
        "optimizer as plain SGD (no state), an unknown precision as the cheapest of fp32, amp, fp16 and "
        "bf16, unknown checkpointing, flash attention and fused optimizer step as on, an unknown batch "
        "size, a sequence length read only as a maximum (truncation) or an image model's unread image "
        "size as unknown (no activations counted). A run is reported only when even that lightest "
        "reading's low end is over the usable memory, so a run whose point estimate or high end is over "
        "but whose low end fits is left alone: tp-estimate FILE --gpu NAME shows it."
    )
    configure = (
        "Set the target once in the [flake8] section of setup.cfg, tox.ini or .flake8: "
        "tp-target-gpu = a100-80gb (a GPU, <N>x<GPU> such as 8xh100-80gb, or a cloud instance such as "
        "p4d.24xlarge; python -m flake8_torch_preflight gpus lists them), or tp-gpu-memory = 48GiB for "
        "unlisted hardware (it wins when both are set); or per run with --tp-target-gpu NAME or "
        "--tp-gpu-memory SIZE. tp-estimate reads the same [flake8] settings when it is given no --gpu, "
        "so the estimator and the rule check against the same GPU."
    )
    example_bad = """
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """
    example_good = """
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained("gpt2").to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """

    def leave_module(self, node: nodes.Module) -> None:
        settings = self.ctx.settings
        if not settings.target_gpu and not settings.gpu_memory:
            return  # no target: nothing to check against
        # Imported here: a run without a target GPU never loads the reader, cost model or catalogue.
        from ..estimator import costmodel, extract, report, solver
        from ..estimator.catalogue import find_gpu, gpu_from_memory

        gpu = gpu_from_memory(settings.gpu_memory) if settings.gpu_memory else find_gpu(str(settings.target_gpu))
        reading = extract.read_module(node, self.ctx.filename)
        if reading.model_node is None or reading.run.total_params is None or reading.unknown & UNBOUNDED:
            return
        if not reading.on_gpu:
            return  # the file never puts the run on a GPU (or puts the model on the CPU)
        runs = lightest_runs(reading, gpu)
        if not runs:
            return
        try:
            for run in runs:
                run.check()
        except RunSpecError:
            return  # a value no run can have (or past the estimator's ranges): nothing to price
        estimates = [costmodel.estimate(run, gpu) for run in runs]
        best = min(estimates, key=lambda e: e.interval_bytes[0])
        low = best.interval_bytes[0]
        if low <= gpu.usable_bytes:
            return
        need, usable = report.gib(low, 1), report.gib(gpu.usable_bytes, 1)
        cost = "needs >={} GiB, {} GiB usable".format(need, usable)
        fields = message_fields(
            gpu=_gpu_text(gpu.key, settings.gpu_memory),
            costs=[_model_text(reading) + " " + cost, cost, "needs >={} GiB, has {}".format(need, usable)],
            fixes=fix_texts(solver.solve(best), estimator_command(self.ctx.filename, gpu.key, settings.gpu_memory)),
        )
        self.report(reading.model_node, **fields)


def lightest_runs(reading: extract.RunReading, gpu: "GpuTarget") -> List[RunSpec]:
    """The run as read, with every unresolved field at its lightest value; one run per
    precision when the precision is unresolved. Empty when no lower bound exists."""
    run = reading.run
    changes: Dict[str, object] = {}
    for name, value in LIGHTEST.items():
        if name in reading.unknown:
            changes[name] = value
    if "trainable" in reading.unknown and run.training:
        changes["inference"] = True  # frozen parameters: at least the forward pass
    if "lora_rank" in reading.unknown and run.lora:
        changes["lora_rank"] = 1
    if "seq_len" in reading.unknown or "seq_len" in reading.upper_bounds:
        changes["seq_len"] = None
    if "batch_size" in reading.unknown:
        changes["batch_size"] = None
    model = run.model
    image_model = model is not None and model.kind in ("cnn", "vision-transformer")
    if image_model and run.image_size is None:
        changes["batch_size"] = None  # the cost model would assume the native size
    if run.sharding in DIVIDING and "world_size" in reading.unknown:
        if gpu.count <= 1:
            return []  # sharded over an unknown number of GPUs
        changes["world_size"] = gpu.count
    base = run.replace(**changes) if changes else run
    if "precision" in reading.unknown:
        return [base.replace(precision=p) for p in PRECISIONS]
    return [base]


def _model_text(reading: extract.RunReading) -> str:
    run = reading.run
    if run.model is not None:
        return run.model.key
    params = run.total_params
    name = reading.model_name or "the model"
    return "{} ({:.2f}B params)".format(name if len(name) <= 40 else name[:37] + "...", (params or 0) / 1e9)


def _gpu_text(key: str, memory: Optional[str]) -> str:
    return "".join(memory.split()) + " GPU" if memory else key


def estimator_command(filename: str, gpu_key: str, memory: Optional[str]) -> Optional[str]:
    """The estimator command for this file and target, exactly as it runs in a shell; None when
    the file cannot be given to it (flake8 read stdin, or a notebook cell)."""
    name = str(filename)
    if name in ("stdin", "-") or name.lower().endswith(".ipynb") or not os.path.isfile(name):
        return None
    target = "--gpu-memory " + shlex.quote("".join(memory.split())) if memory else "--gpu " + shlex.quote(gpu_key)
    return "tp-estimate {} {}".format(shlex.quote(name), target)


def fix_texts(solution: solver.Solution, command: Optional[str]) -> List[str]:
    """Ways to say the fix, the most complete first; the message takes the first that fits."""
    bases: List[str] = []
    combination = solution.combination
    if solution.status == "solved" and combination is not None:
        lead = "fix: " if combination.fits_interval else "fix (point estimate): "
        bases += _step_texts(lead, [_change(c.label, saved) for c, saved in combination.steps])
    elif solution.status == "unknown" and solution.may_fit is not None:
        bases += _step_texts("try ", [_change(c.label, saved) for c, saved in solution.may_fit.steps])
    elif solution.status == "nothing-fits":
        lowest = solution.lowest
        if lowest is not None and lowest.steps:
            steps = [_change(c.label, saved) for c, saved in lowest.steps]
            bases += ["even {} leaves it over: shard or use a larger GPU".format(", ".join(steps))]
            if len(steps) > 1:
                bases += ["even {} and {} more leave it over: shard or use a larger GPU".format(
                    steps[0], len(steps) - 1)]
        bases += ["no change fits one GPU: shard or use a larger GPU"]
    else:
        savings = _known_savings(solution)
        if savings:
            bases += ["start with " + " or ".join(_change(label, saved) for label, saved in savings[:n])
                      for n in range(len(savings), 0, -1)]
    texts: List[str] = []
    for base in bases:
        if command:
            texts.append("{} (`{}`)".format(base, command))
        texts.append(base)
    if command:
        texts.append("see `{}`".format(command))
    texts += ["use a larger GPU, more GPUs, or a smaller model or batch", "use a larger GPU"]
    return texts


def _step_texts(lead: str, steps: List[str]) -> List[str]:
    texts = [lead + ", ".join(steps), ", ".join(steps)]
    if len(steps) > 1:
        texts.append("{}{} and {} more".format(lead, steps[0], len(steps) - 1))
    return texts


def message_fields(gpu: str, costs: List[str], fixes: List[str]) -> Dict[str, str]:
    """The message's fields within ``MAX_MESSAGE`` characters: the most complete fix that fits,
    with the first of ``costs`` (the one naming the model) that still fits beside it; a long GPU
    name is cut short (ending "...") when even the shortest fix and cost do not fit."""
    def length(fields: Dict[str, str]) -> int:
        return len(ProjectedOom.message.format(**fields))

    for fix in fixes:
        for cost in costs:
            fields = {"gpu": gpu, "cost": cost, "fix": fix}
            if length(fields) <= MAX_MESSAGE:
                return fields
    fields = {"gpu": gpu, "cost": costs[-1], "fix": fixes[-1]}
    over = length(fields) - MAX_MESSAGE
    if over > 0:
        fields["gpu"] = gpu[:max(9, len(gpu) - over - 3)] + "..."
    return fields


def _known_savings(solution: solver.Solution) -> List[Tuple[str, Optional[int]]]:
    """Changes that lower the known part of the peak, largest first."""
    found = [(s.change, s.saves_bytes) for s in solution.savings if s.saves_bytes is not None and s.saves_bytes > 0]
    found.sort(key=lambda item: -item[1])
    return [(label, saved) for label, saved in found[:MAX_SAVINGS_SHOWN]]


def _change(label: str, saved: Optional[int]) -> str:
    from ..estimator import report

    return label + (" (-{} GiB)".format(report.gib(saved, 1)) if saved is not None else "")
