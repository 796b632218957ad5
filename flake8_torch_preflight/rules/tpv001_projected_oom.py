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

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from astroid import nodes

from ..estimator.run import PRECISIONS, RunSpec
from ._base import Rule, register

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
    message = (
        "{model} is projected to need more memory than {gpu} has even at the low end of the estimate, "
        "so the run stops with CUDA out of memory: {summary}. {fix}"
    )
    rationale = (
        "With the target GPU declared once in the flake8 configuration (tp-target-gpu = a100-80gb, or "
        "tp-gpu-memory = 48GiB for unlisted hardware), the rule reads the training run out of the file "
        "without running it: the model (a from_pretrained name, a torchvision or timm model, or an "
        "nn.Module of the file whose parameters it counts), batch size, sequence length or image size, "
        "precision, optimizer, checkpointing, attention kernel and sharding, through constants, argparse "
        "defaults and config dicts. It prices the peak memory per GPU with the estimator's cost model and "
        "reports at the line that builds the model when even the low end of the interval exceeds the "
        "GPU's usable memory, naming the changes that make it fit and the GiB each saves. It says nothing "
        "when the model cannot be identified or a value the verdict depends on cannot be read "
        "(python -m flake8_torch_preflight estimate FILE --gpu NAME shows what it read)."
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
        estimates = [costmodel.estimate(run, gpu) for run in runs]
        best = min(estimates, key=lambda e: e.interval_bytes[0])
        if best.interval_bytes[0] <= gpu.usable_bytes:
            return
        solution = solver.solve(best)
        self.report(
            reading.model_node,
            model=_model_text(reading),
            gpu=gpu.key,
            summary=report.one_line(best) + _assumed(reading, best.run),
            fix=_fix_text(solution, "tp-estimate {} --gpu {}".format(self.ctx.filename, gpu.key)),
        )


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
    return "{} ({:.2f}B parameters)".format(reading.model_name or "the model", (params or 0) / 1e9)


def _assumed(reading: extract.RunReading, run: RunSpec) -> str:
    """Say which unresolved fields were taken at their lightest value."""
    parts: List[str] = []
    if "precision" in reading.unknown:
        parts.append("precision " + run.precision)
    training = run.training
    labels = {"optimizer": "optimizer sgd", "fused_optimizer": "fused optimizer step",
              "checkpointing": "gradient checkpointing", "flash": "flash attention"}
    for name, label in labels.items():
        if name in reading.unknown and (training or name == "flash"):
            parts.append(label)
    if not parts:
        return ""
    return " (not read from the file, so taken at the lightest: {})".format(", ".join(parts))


def _fix_text(solution: solver.Solution, command: str) -> str:
    combination = solution.combination
    if solution.status == "solved" and combination is not None:
        steps = ", ".join(_change(c.label, saved) for c, saved in combination.steps)
        scope = "" if combination.fits_interval else " (the point estimate; not the whole interval)"
        return "Fix: it fits with {}{}.".format(steps, scope)
    if solution.status == "nothing-fits":
        return "Fix: {}.".format(solution.message)
    if solution.status == "unknown" and solution.may_fit is not None:
        steps = ", ".join(_change(c.label, saved) for c, saved in solution.may_fit.steps)
        return "Fix: it may fit with {} (`{}` shows the breakdown).".format(steps, command)
    savings = _known_savings(solution)
    if savings:
        unknown = ", ".join(solution.before.unknown_terms)
        return "Fix: start with {}; with {} unknown no change can be shown to fit (`{}` shows the breakdown).".format(
            " or ".join(_change(label, saved) for label, saved in savings), unknown, command)
    return "Fix: use a larger GPU, shard over more GPUs, or a smaller model or batch."


def _known_savings(solution: solver.Solution) -> List[Tuple[str, Optional[int]]]:
    """Changes that lower the known part of the peak, largest first."""
    found = [(s.change, s.saves_bytes) for s in solution.savings if s.saves_bytes is not None and s.saves_bytes > 0]
    found.sort(key=lambda item: -item[1])
    return [(label, saved) for label, saved in found[:MAX_SAVINGS_SHOWN]]


def _change(label: str, saved: Optional[int]) -> str:
    from ..estimator import report

    return label + (" (-{} GiB)".format(report.gib(saved, 1)) if saved is not None else "")
