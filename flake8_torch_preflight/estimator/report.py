"""Presenting an estimate: the text report, the JSON object of the contract, and one line for TPV001.

Bytes stay ``int`` everywhere in JSON; GiB appear only in text (two decimals in the report,
one in the one-line summary). Unknown terms are ``null`` in JSON and ``unknown`` in text;
uncertain terms (memory that measured runs held and no documented mechanism prices, outside the
point) are ``uncertain_terms`` in JSON (``bytes`` null, ``interval`` [low, high], ``note``) and
an ``uncertain`` line in text, and widen the interval's high end; a
saving that is only a lower bound (a partly known run) is ``saves_at_least: true`` in JSON and
``≥`` in text. What a SCRIPT left unread (field -> the expression that held it) is ``unread`` in
JSON and, in text, the model line (``model: not read: ...``) and one ``not read:`` line per other
field, each naming the option that supplies it.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from .costmodel import TERM_LABELS, TERMS, UNCERTAIN_LABELS, ZERO, Estimate
from .run import COMMAND_LINE, DEFAULT, RunSpec
from .solver import Combination, Saving, Solution, fits_up_to, steps_text

GIB = 1024**3

#: Width of the longest bar in the text report, in characters.
BAR_WIDTH = 32

_VERDICT_TEXT = {
    "fits": "fits (the whole interval)",
    "fits-point": "fits the point estimate, not the whole interval",
    "does-not-fit": "does NOT fit",
    "unknown": "cannot tell",
    "no-gpu": "no GPU given",
}


#: The option that supplies an unread field, where it is not ``--`` and the field's name.
_UNREAD_OPTIONS = {
    "model": "--model NAME or --params N",
    "grad_accum_steps": "--grad-accum",
    "lora_rank": "--lora RANK",
}


def gib(value: int, digits: int = 2) -> str:
    return f"{value / GIB:.{digits}f}"


def unread_option(name: str) -> str:
    """The command-line option that gives an unread field: ``--batch-size``, ``--grad-accum``."""
    return _UNREAD_OPTIONS.get(name, "--" + name.replace("_", "-"))


# ========================================================================================= JSON


def _combination_json(combination: Optional[Combination]) -> Optional[Dict[str, Any]]:
    if combination is None:
        return None
    low, high = combination.after.interval_bytes
    return {
        "changes": [{"change": c.label, "saves_bytes": saved, "saves_at_least": combination.partial}
                    for c, saved in combination.steps],
        "peak_after_bytes": combination.after.peak_bytes,
        "peak_after_is_lower_bound": combination.after.peak_is_lower_bound,
        "interval_after_bytes": [low, high],
        "fits": combination.after.fits,
        "fits_interval": combination.after.fits_interval,
        "partial": combination.partial,
    }


def model_name(estimate: Estimate) -> Optional[str]:
    """The catalogue key, else the label of a hand-written model, else ``None``."""
    return estimate.run.display_name


def model_source(estimate: Estimate) -> Optional[str]:
    """Where the parameter count comes from: ``catalogue``, ``command line``, the script line
    that read it, or for a hand-written module ``counted from train.py:24`` (where its class is
    defined, ``sources["model_label"]``, else where it is built)."""
    run = estimate.run
    if run.params is not None:
        origin = run.sources.get("params")
        if run.model is None and origin not in (None, COMMAND_LINE):
            return f"counted from {run.sources.get('model_label') or origin}"  # a hand-written module
        return origin or "given"
    if run.model is not None:
        return run.model.origin
    return None


def _saving_json(saving: Saving) -> Dict[str, Any]:
    return {
        "change": saving.change,
        "saves_bytes": saving.saves_bytes,
        "peak_after_bytes": saving.peak_after_bytes,
        "fits": saving.fits,
        "disruption": saving.candidate.disruption,
        "saves_at_least": saving.partial,
        "peak_after_is_lower_bound": saving.peak_after_is_lower_bound,
    }


def to_json(estimate: Estimate, solution: Solution, unread: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """The contract object (INTERFACE.md), plus extra keys; bytes are ints, unknowns null.
    ``unread``: what a SCRIPT left unread (field -> what held it), ``{}`` when nothing was."""
    run = estimate.run
    model = run.model
    low, high = estimate.interval_bytes
    gpu = estimate.gpu
    return {
        "model": {
            "name": model_name(estimate),
            "params": estimate.params,
            "source": model_source(estimate),
            "kind": None if model is None else model.kind,
            "reference": None if model is None else model.source,
            "trainable_params": estimate.trainable_params,
        },
        "config": {
            "batch_size": run.batch_size,
            "seq_len": run.seq_len,
            "image_size": run.image_size,
            "precision": run.precision,
            "optimizer": run.optimizer,
            "checkpointing": run.checkpointing,
            "flash": run.flash,
            "sources": dict(run.sources),
            "inference": run.inference,
            "generation": run.generation,
            "max_new_tokens": run.max_new_tokens,
            "grad_accum_steps": run.grad_accum_steps,
            "world_size": run.world_size,
            "sharding": run.sharding,
            "offload_optimizer": run.offload_optimizer,
            "fused_optimizer": run.fused_optimizer,
            "lora": run.lora,
            "lora_rank": run.lora_rank if run.lora else None,
            "lora_dtype": run.lora_dtype if run.lora else None,
            "lora_dropout": run.lora_dropout if run.lora else None,
            "lm_head": run.lm_head,
            "eval_loss": run.eval_loss,
            "task": run.task,
            "quantization": run.quantization,
            "lora_targets": list(run.lora_targets) if run.lora and run.lora_targets is not None else None,
        },
        "breakdown": estimate.breakdown,
        "breakdown_interval": {name: [estimate.terms[name].low, estimate.terms[name].high] for name in TERMS},
        "breakdown_notes": {name: estimate.terms[name].note for name in TERMS if estimate.terms[name].note},
        "activation_terms": dict(estimate.activation_parts),
        "peak_bytes": estimate.peak_bytes,
        "peak_is_lower_bound": estimate.peak_is_lower_bound,
        "unknown_terms": estimate.unknown_terms,
        "uncertain_terms": {name: {"bytes": term.bytes, "interval": [term.low, term.high], "note": term.note}
                            for name, term in estimate.uncertain.items()},
        "interval_bytes": [low, high],
        "interval_unbounded": high is None,
        "gpu": None if gpu is None else {
            "key": gpu.key,
            "usable_bytes": gpu.usable_bytes,
            "name": gpu.name,
            "count": gpu.count,
            "memory_bytes": gpu.memory_bytes,
            "context_bytes": gpu.context_bytes,
            "bf16": gpu.bf16,
        },
        "fits": estimate.fits,
        "fits_up_to": fits_up_to(estimate),
        "fits_interval": estimate.fits_interval,
        "verdict": estimate.verdict,
        "savings": [_saving_json(s) for s in solution.savings],
        "solution": {
            "status": solution.status,
            "message": solution.message,
            "smallest": _combination_json(solution.combination),
            "whole_interval": _combination_json(solution.interval_combination),
            "may_fit": _combination_json(solution.may_fit),
            "lowest": _combination_json(solution.lowest),
        },
        "notes": list(estimate.notes),
        "unread": dict(unread or {}),
    }


# ========================================================================================= text

def _unknown_text(estimate: Estimate) -> str:
    return ", ".join(TERM_LABELS[name] for name in estimate.unknown_terms)


def _run_line(estimate: Estimate) -> str:
    run = estimate.run
    parts: List[str] = []
    parts.append("generation" if run.generation else ("inference" if run.inference else "training"))
    parts.append(f"batch {run.batch_size if run.batch_size is not None else '?'}")
    model = run.model
    image_model = model is not None and model.kind in ("cnn", "vision-transformer")
    if not image_model and (model is not None or run.seq_len is not None):
        parts.append(f"seq {run.seq_len if run.seq_len is not None else '?'}")
    if run.image_size is not None or image_model:
        image = f"image {run.image_size if run.image_size is not None else '?'}"
        if run.image_size_defaulted:
            image += " (native default)"
        parts.append(image)
    if run.generation:
        parts.append(f"+{run.max_new_tokens if run.max_new_tokens is not None else '?'} new tokens")
    if run.task is not None:
        parts.append(f"task {run.task}")
    parts.append(run.precision + _assumed(run, "precision"))
    if run.quantization != "none":
        parts.append(f"{run.quantization} base weights")
    if run.training:
        parts.append(run.optimizer + _assumed(run, "optimizer") + (" (offloaded)" if run.offload_optimizer else ""))
    if model is not None and model.kind != "cnn":
        parts.append("flash attention" if run.flash else "eager attention")
    elif run.flash:
        parts.append("flash attention")
    if run.fused_optimizer and run.training:
        parts.append("fused step")
    if run.checkpointing and run.training:
        parts.append("checkpointing")
    if run.grad_accum_steps > 1:
        parts.append(f"{run.grad_accum_steps}x accumulation")
    if run.world_size > 1 or "world_size" in run.sources:
        parts.append(f"{run.sharding} x{run.world_size}")
    elif run.sharding != "none":
        parts.append(run.sharding)
    if run.lora:
        targets = "" if run.lora_targets is None else f" on {', '.join(run.lora_targets)}"
        dtype = ", adapters in the model's dtype" if run.lora_dtype == "model" else ""
        dropout = f", dropout {run.lora_dropout:g}" if run.lora_dropout > 0 else ""
        parts.append(f"LoRA rank {run.lora_rank}{targets}{dtype}{dropout}")
    return "run: " + ", ".join(parts)


def _assumed(run: RunSpec, name: str) -> str:
    """`` (assumed)`` for a field nobody gave (its source is ``default``), else nothing."""
    return " (assumed)" if run.sources.get(name) == DEFAULT else ""


def _model_line(estimate: Estimate, unread: Mapping[str, str]) -> str:
    model = estimate.run.model
    name = model_name(estimate)
    if estimate.params is None:  # no parameter count: say what held it and how to give one
        if "model" in unread:
            head = f"not read: {unread['model']}"
        elif name is not None:
            head = f"{name}, parameter count not known"
        else:
            head = "not given"
        return f"model: {head} (give {unread_option('model')})"
    kind = f" ({model.kind})" if model is not None else ""
    line = f"model: {name or 'a model outside the catalogue'}{kind}, {estimate.params:,} parameters " \
           f"({model_source(estimate)})"
    run = estimate.run
    if (run.lora or run.trainable_params is not None) and run.training and estimate.trainable_params is not None:
        line += f", {estimate.trainable_params:,} trainable"
    return line


def _bytes_text(value: int, at_least: bool = False) -> str:
    return f"{'≥ ' if at_least else ''}{gib(value)} GiB"


def _saving_cells(saving: Saving) -> Tuple[str, str, str]:
    if saving.saves_bytes is None or (saving.partial and saving.saves_bytes == 0):
        saved = "unknown"
    else:
        saved = _bytes_text(saving.saves_bytes, saving.partial)
    after = _bytes_text(saving.peak_after_bytes, saving.peak_after_is_lower_bound)
    verdict = {
        "fits": "fits",
        "fits-point": "fits the point only",
        "does-not-fit": "does not fit",
        "unknown": "may fit",
        "no-gpu": "",
    }[saving.after.verdict]
    return saved, after, verdict


def _savings_lines(solution: Solution) -> List[str]:
    rows = [(s.change,) + _saving_cells(s) for s in solution.savings]
    widths = [max(len(row[i]) for row in rows + [("change", "saves", "peak after", "")]) for i in range(3)]
    lines = ["each change alone (fits first, then least disruptive, then most saved):",
             f"  {'change':<{widths[0]}}  {'saves':>{widths[1]}}     {'peak after':>{widths[2]}}"]
    for change, saved, after, verdict in rows:
        lines.append(f"  {change:<{widths[0]}}  {saved:>{widths[1]}}  -> {after:>{widths[2]}}  {verdict}".rstrip())
    return lines


def _fits_up_to_text(estimate: Estimate) -> str:
    """``micro-batch 37 (at seq 128), seq 2,048 (at micro-batch 4)``, or "" when nothing is known."""
    reach = fits_up_to(estimate)
    run = estimate.run
    size = f"seq {run.seq_len:,}" if run.seq_len else (f"{run.image_size} px" if run.image_size else "")
    parts = []
    if reach["batch_size"] is not None:
        parts.append(f"micro-batch {reach['batch_size']:,}" + (f" (at {size})" if size else ""))
    if reach["seq_len"] is not None:
        parts.append(f"seq {reach['seq_len']:,} (at micro-batch {run.batch_size})")
    return ", ".join(parts)


def _unread_lines(estimate: Estimate, unread: Mapping[str, str]) -> List[str]:
    """``not read: batch size: ... (give --batch-size)`` for each unread field the model line
    does not already name."""
    shown_in_model_line = estimate.params is None
    return [f"not read: {name.replace('_', ' ')}: {what} (give {unread_option(name)})"
            for name, what in unread.items() if not (name == "model" and shown_in_model_line)]


def render_text(estimate: Estimate, solution: Solution, unread: Optional[Mapping[str, str]] = None) -> str:
    """The report a person reads: what was read (and what was not), terms with bars, peak and
    interval, verdict, savings. ``unread``: what a SCRIPT left unread (field -> what held it)."""
    unread = unread or {}
    gpu = estimate.gpu
    where = ""
    if gpu is not None:
        where = f"usable on {gpu.key}" + (f" (each of {gpu.count})" if gpu.count > 1 else "")
    width = max([16, len(where)] + [len(UNCERTAIN_LABELS[name]) for name in estimate.uncertain]) + 1
    lines = [_model_line(estimate, unread), _run_line(estimate)] + _unread_lines(estimate, unread) + [""]
    known = [t.bytes for t in estimate.terms.values() if t.bytes is not None]
    largest = max(known) if known else 0
    idle: List[str] = []
    for name in TERMS:
        term = estimate.terms[name]
        label = f"  {TERM_LABELS[name]:<{width}}"
        if term.bytes is None:
            lines.append(f"{label}{'unknown':>10}      ({term.note})")
            continue
        if term == ZERO:
            idle.append(TERM_LABELS[name])
            continue
        if term.bytes == 0:
            note = f"  ({term.note})" if term.note else ""
            lines.append(f"{label}{gib(0):>10} GiB{note}")
            continue
        cells = max(1, round(BAR_WIDTH * term.bytes / largest)) if largest else 0
        lines.append(f"{label}{gib(term.bytes):>10} GiB  {'█' * cells}")
    if idle:
        lines.append(f"  {'not in this run':<{width}}{gib(0):>10} GiB  {', '.join(idle)}")
    for name, term in estimate.uncertain.items():
        high = "unbounded" if term.high is None else f"{gib(term.high)} GiB"
        lines.append(f"  {UNCERTAIN_LABELS[name]:<{width}}{'uncertain':>10}      "
                     f"0 – {high} in the high end only ({term.note})")
    lines.append("  " + "-" * (width + 16 + BAR_WIDTH))
    low, high = estimate.interval_bytes
    high_text = f"{gib(high)} GiB" if high is not None else "unbounded"
    peak = ("≥ " if estimate.peak_is_lower_bound else "") + gib(estimate.peak_bytes)
    lines.append(f"  {'projected peak':<{width}}{peak:>10} GiB  interval {gib(low)} – {high_text}")
    if estimate.peak_is_lower_bound:
        lines.append(f"  {'':<{width}}unknown: {_unknown_text(estimate)} (counted at their lower bounds)")
    verdict = _VERDICT_TEXT[estimate.verdict]
    if gpu is not None:
        usable = gpu.usable_bytes
        if estimate.verdict == "does-not-fit":
            over = "at least " if estimate.peak_is_lower_bound else ""
            verdict += f": {over}{gib(estimate.peak_bytes - usable)} GiB over"
        elif estimate.verdict == "fits" and high is not None:
            verdict += f", {gib(usable - high)} GiB to spare at the high end"
        elif estimate.verdict == "fits-point" and high is not None:
            verdict += f" (high end {gib(high - usable)} GiB over)"
        elif estimate.verdict == "fits-point":
            verdict += " (the high end is unbounded)"
        elif estimate.verdict == "unknown":
            verdict += f" ({_unknown_text(estimate)} unknown)"
        lines.append(f"  {where:<{width}}{gib(usable):>10} GiB  {verdict}")
        reach = _fits_up_to_text(estimate)
        if reach:
            lines.append(f"  {'fits up to':<{width}}{reach}")
    else:
        lines.append(f"  {verdict} (--gpu NAME or --gpu-memory SIZE checks the fit)")
    if solution.savings:
        lines.append("")
        lines.extend(_savings_lines(solution))
    if solution.status in ("solved", "nothing-fits", "unknown"):
        lines.append("")
        lines.extend(_solution_lines(solution))
    if estimate.notes:
        lines.append("")
        lines.extend(f"note: {note}" for note in estimate.notes)
    return "\n".join(lines) + "\n"


def _steps_lines(combination: Combination) -> List[str]:
    labels = [candidate.label for candidate, _ in combination.steps]
    width = max(len(label) for label in labels)
    saved = [("unknown" if value is None else _bytes_text(value, combination.partial))
             for _, value in combination.steps]
    column = max(len(text) for text in saved)
    return [f"  {label:<{width}}  saves {text:>{column}}" for label, text in zip(labels, saved)]


def _after_line(combination: Combination, usable: Optional[int]) -> str:
    after = combination.after
    low, high = after.interval_bytes
    high_text = f"{gib(high)} GiB" if high is not None else "unbounded"
    line = f"  -> {_bytes_text(after.peak_bytes, after.peak_is_lower_bound)} (interval {gib(low)} – {high_text})"
    if usable is not None:
        line += f", {gib(usable)} GiB usable"
    return line


def _solution_lines(solution: Solution) -> List[str]:
    gpu = solution.before.gpu
    usable = gpu.usable_bytes if gpu is not None else None
    combination = solution.combination
    if solution.status == "solved" and combination is not None:
        scope = "the whole interval" if combination.fits_interval else "the point estimate only"
        lines = [f"smallest change that fits ({scope}):"] + _steps_lines(combination)
        lines.append(_after_line(combination, usable))
        robust = solution.interval_combination
        if not combination.fits_interval:
            if robust is not None:
                lines.append("to fit the whole interval:")
                lines.extend(_steps_lines(robust))
                lines.append(_after_line(robust, usable))
            else:
                lines.append("no combination fits the whole interval")
        return lines
    unknown = _unknown_text(solution.before)
    if solution.status == "unknown" and solution.may_fit is not None:
        lines = [f"cannot tell what fits ({unknown} unknown);", "the smallest change that may fit:"]
        lines.extend(_steps_lines(solution.may_fit))
        lines.append(_after_line(solution.may_fit, usable))
        return lines
    if solution.status == "nothing-fits":
        head = solution.message.split(":", 1)[0]
        lowest = solution.lowest
        if lowest is None:
            return [f"{head}: no change lowers the peak; {solution.advice}"]
        after = lowest.after
        over = gib(after.peak_bytes - usable) if usable is not None else "?"
        at_least = "at least " if after.peak_is_lower_bound else ""
        lines = [f"{head}. The changes that lower the peak most leave it {at_least}{over} GiB over:"]
        lines.extend(_steps_lines(lowest))
        lines.append(_after_line(lowest, usable))
        lines.append(solution.advice[:1].upper() + solution.advice[1:] + ".")
        return lines
    if solution.status == "unknown" and usable is not None:
        before = solution.before
        return [f"cannot tell whether it fits: the known terms need at least {gib(before.peak_bytes)} GiB, "
                f"under the {gib(usable)} GiB usable; {unknown} (unknown) decide"]
    return [solution.message]


def one_line(estimate: Estimate, solution: Optional[Solution] = None) -> str:
    """One line for TPV001: peak, interval, target and what makes it fit.

    ``projected peak 21.3 GiB (18.0–26.1) > t4 usable 14.6 GiB; fits with: gradient
    checkpointing (-6.2 GiB), 8-bit AdamW (-1.1 GiB)``
    """
    low, high = estimate.interval_bytes
    if estimate.peak_is_lower_bound:
        unknown = ", ".join(estimate.unknown_terms)  # the keys, as TPV001's own text names them
        text = f"projected peak at least {gib(estimate.peak_bytes, 1)} GiB ({unknown} unknown)"
    else:
        high_text = gib(high, 1) if high is not None else "?"
        text = f"projected peak {gib(estimate.peak_bytes, 1)} GiB ({gib(low, 1)}–{high_text})"
    gpu = estimate.gpu
    if gpu is None:
        return text
    relation = ">" if estimate.fits is False else "<="
    if estimate.fits is None:
        relation = "vs"
    text += f" {relation} {gpu.key} usable {gib(gpu.usable_bytes, 1)} GiB"
    if solution is None or solution.status in ("fits", "no-gpu"):
        if estimate.verdict == "fits-point":
            text += " (not the whole interval)"
        return text
    combination = solution.combination
    if combination is None:
        return f"{text}; {solution.message}"
    scope = "" if combination.fits_interval else " (point estimate only)"
    return f"{text}; fits{scope} with: {steps_text(combination, 1)}"
