"""Presenting an estimate: the text report, the JSON object of the contract, and one line for TPV001.

Bytes stay ``int`` everywhere in JSON; GiB appear only in text (two decimals in the report,
one in the one-line summary). Unknown terms are ``null`` in JSON and ``unknown`` in text.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .costmodel import TERMS, Estimate
from .solver import Combination, Solution

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


def gib(value: int, digits: int = 2) -> str:
    return f"{value / GIB:.{digits}f}"


# ========================================================================================= JSON


def _combination_json(combination: Optional[Combination]) -> Optional[Dict[str, Any]]:
    if combination is None:
        return None
    low, high = combination.after.interval_bytes
    return {
        "changes": [{"change": c.label, "saves_bytes": saved} for c, saved in combination.steps],
        "peak_after_bytes": combination.after.peak_bytes,
        "interval_after_bytes": [low, high],
        "fits": combination.after.fits,
        "fits_interval": combination.after.fits_interval,
    }


def _model_source(estimate: Estimate) -> Optional[str]:
    run = estimate.run
    if run.params is not None:
        return run.sources.get("params", "given")
    if run.model is not None:
        return "catalogue"
    return None


def to_json(estimate: Estimate, solution: Solution) -> Dict[str, Any]:
    """The contract object (INTERFACE.md), plus extra keys; bytes are ints, unknowns null."""
    run = estimate.run
    model = run.model
    low, high = estimate.interval_bytes
    gpu = estimate.gpu
    return {
        "model": {
            "name": None if model is None else model.key,
            "params": estimate.params,
            "source": _model_source(estimate),
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
        },
        "breakdown": estimate.breakdown,
        "breakdown_interval": {name: [estimate.terms[name].low, estimate.terms[name].high] for name in TERMS},
        "breakdown_notes": {name: estimate.terms[name].note for name in TERMS if estimate.terms[name].note},
        "activation_terms": dict(estimate.activation_parts),
        "peak_bytes": estimate.peak_bytes,
        "peak_is_lower_bound": estimate.peak_is_lower_bound,
        "unknown_terms": estimate.unknown_terms,
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
        "fits_interval": estimate.fits_interval,
        "verdict": estimate.verdict,
        "savings": [
            {
                "change": s.change,
                "saves_bytes": s.saves_bytes,
                "peak_after_bytes": s.peak_after_bytes,
                "fits": s.fits,
                "disruption": s.candidate.disruption,
            }
            for s in solution.savings
        ],
        "solution": {
            "status": solution.status,
            "message": solution.message,
            "smallest": _combination_json(solution.combination),
            "whole_interval": _combination_json(solution.interval_combination),
        },
        "notes": list(estimate.notes),
    }


# ========================================================================================= text


def _run_line(estimate: Estimate) -> str:
    run = estimate.run
    parts: List[str] = []
    parts.append("generation" if run.generation else ("inference" if run.inference else "training"))
    parts.append(f"batch {run.batch_size if run.batch_size is not None else '?'}")
    model = run.model
    if model is None or model.kind not in ("cnn", "vision-transformer"):
        parts.append(f"seq {run.seq_len if run.seq_len is not None else '?'}")
    if run.image_size is not None or (model is not None and model.kind in ("cnn", "vision-transformer")):
        image = run.image_size if run.image_size is not None else model.shape.get("image_size") if model else None
        parts.append(f"image {image if image is not None else '?'}")
    if run.generation:
        parts.append(f"+{run.max_new_tokens if run.max_new_tokens is not None else '?'} new tokens")
    parts.append(run.precision)
    if run.training:
        parts.append(run.optimizer + (" (offloaded)" if run.offload_optimizer else ""))
    if model is None or model.kind != "cnn":
        parts.append("flash attention" if run.flash else "eager attention")
    if run.fused_optimizer and run.training:
        parts.append("fused step")
    if run.checkpointing and run.training:
        parts.append("checkpointing")
    if run.grad_accum_steps > 1:
        parts.append(f"{run.grad_accum_steps}x accumulation")
    if run.sharding != "none" or run.world_size > 1:
        parts.append(f"{run.sharding} x{run.world_size}")
    if run.lora:
        parts.append(f"LoRA rank {run.lora_rank}")
    return "run: " + ", ".join(parts)


def _model_line(estimate: Estimate) -> str:
    model = estimate.run.model
    params = f"{estimate.params:,}" if estimate.params is not None else "?"
    name = model.key if model is not None else "unknown model"
    kind = f", {model.kind}" if model is not None else ""
    line = f"model: {name}{kind}, {params} parameters ({_model_source(estimate)})"
    if estimate.run.lora and estimate.trainable_params is not None:
        line += f", {estimate.trainable_params:,} trainable"
    return line


def render_text(estimate: Estimate, solution: Solution) -> str:
    """The report a person reads: terms with bars, peak and interval, verdict, savings."""
    gpu = estimate.gpu
    where = ""
    if gpu is not None:
        where = f"usable on {gpu.key}" + (f" (each of {gpu.count})" if gpu.count > 1 else "")
    width = max(16, len(where)) + 1
    lines = [_model_line(estimate), _run_line(estimate), ""]
    known = [t.bytes for t in estimate.terms.values() if t.bytes is not None]
    largest = max(known) if known else 0
    for name in TERMS:
        term = estimate.terms[name]
        label = f"  {name:<{width}}"
        if term.bytes is None:
            lines.append(f"{label}{'unknown':>10}      ({term.note})")
            continue
        if term.bytes == 0:
            note = f"  ({term.note})" if term.note else ""
            lines.append(f"{label}{gib(0):>10} GiB{note}")
            continue
        cells = max(1, round(BAR_WIDTH * term.bytes / largest)) if largest else 0
        lines.append(f"{label}{gib(term.bytes):>10} GiB  {'█' * cells}")
    lines.append("  " + "-" * (width + 16 + BAR_WIDTH))
    low, high = estimate.interval_bytes
    high_text = f"{gib(high)} GiB" if high is not None else "unbounded"
    peak_label = "projected peak" + (" >=" if estimate.peak_is_lower_bound else "")
    lines.append(f"  {peak_label:<{width}}{gib(estimate.peak_bytes):>10} GiB  interval {gib(low)} – {high_text}")
    if estimate.peak_is_lower_bound:
        lines.append(f"  {'':<{width}}unknown: {', '.join(estimate.unknown_terms)} (counted at their lower bounds)")
    verdict = _VERDICT_TEXT[estimate.verdict]
    if gpu is not None:
        usable = gpu.usable_bytes
        if estimate.verdict == "does-not-fit":
            verdict += f": {gib(estimate.peak_bytes - usable)} GiB over"
        elif estimate.verdict == "fits-point" and high is not None:
            verdict += f" (high end {gib(high - usable)} GiB over)"
        elif estimate.verdict == "fits-point":
            verdict += " (the high end is unbounded)"
        elif estimate.verdict == "unknown":
            verdict += f" ({', '.join(estimate.unknown_terms)} unknown)"
        lines.append(f"  {where:<{width}}{gib(usable):>10} GiB  {verdict}")
    else:
        lines.append(f"  {verdict} (--gpu NAME or --gpu-memory SIZE checks the fit)")
    if solution.savings:
        lines.append("")
        lines.append("savings (ranked: fits, then least disruption, then most saved):")
        change_width = max(len(s.change) for s in solution.savings)
        for s in solution.savings:
            saved = f"-{gib(s.saves_bytes)} GiB" if s.saves_bytes is not None else "unknown"
            fits = {True: "fits", False: "does not fit", None: ""}[s.fits]
            lines.append(
                f"  {s.change:<{change_width}}  {saved:>12}  -> {gib(s.peak_after_bytes):>7} GiB  {fits}".rstrip()
            )
    if solution.status in ("solved", "nothing-fits", "unknown"):
        lines.append("")
        lines.append(_solution_text(solution))
    if estimate.notes:
        lines.append("")
        lines.extend(f"note: {note}" for note in estimate.notes)
    return "\n".join(lines) + "\n"


def _steps_text(combination: Combination, digits: int) -> str:
    parts = []
    for candidate, saved in combination.steps:
        parts.append(candidate.label + (f" (-{gib(saved, digits)} GiB)" if saved is not None else ""))
    return ", ".join(parts)


def _solution_text(solution: Solution) -> str:
    combination = solution.combination
    if combination is None:
        return solution.message
    after = combination.after
    low, high = after.interval_bytes
    high_text = gib(high) if high is not None else "?"
    scope = "the whole interval" if combination.fits_interval else "the point estimate only"
    text = (f"smallest change that fits ({scope}): {_steps_text(combination, 2)}"
            f" -> {gib(after.peak_bytes)} GiB ({gib(low)} – {high_text})")
    robust = solution.interval_combination
    if not combination.fits_interval:
        if robust is not None:
            text += f"\nto fit the whole interval: {_steps_text(robust, 2)} -> {gib(robust.after.peak_bytes)} GiB"
        else:
            text += "\nno combination fits the whole interval"
    return text


def one_line(estimate: Estimate, solution: Optional[Solution] = None) -> str:
    """One line for TPV001: peak, interval, target and what makes it fit.

    ``projected peak 21.3 GiB (18.0–26.1) > t4 usable 14.6 GiB; fits with: gradient
    checkpointing (-6.2 GiB), 8-bit AdamW (-1.1 GiB)``
    """
    low, high = estimate.interval_bytes
    if estimate.peak_is_lower_bound:
        unknown = ", ".join(estimate.unknown_terms)
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
    return f"{text}; fits{scope} with: {_steps_text(combination, 1)}"
