"""What would make the run fit: candidate changes as data, each priced, then the smallest set.

A ``Candidate`` is a label, a pure ``RunSpec -> RunSpec`` function, a disruption rank (how
much it changes the training code or its behaviour; lower is easier) and an exclusive group
(two micro-batch sizes or two sharding modes never combine). ``solve(estimate)`` prices each
candidate alone (``savings``, ranked by fits, then disruption, then bytes saved; those that
save nothing alone are left out of the list but still tried in combinations), then looks
for the combination with the fewest changes that fits the point estimate, preferring one that
fits the whole interval, then the least total disruption, then the lowest peak; when that
combination fits only the point, it also names the smallest that fits the whole interval.

Partly known runs
-----------------
When a term cannot be estimated (a hand-written model has no activation figure) the estimate's
peak is a lower bound, and so is what a change saves: ``known_saving`` counts the terms it
can price exactly (8-bit AdamW's optimizer state, bf16's weights and gradients) and takes the
unknown ones as saving at least nothing, which holds because every candidate lowers or keeps
each term it leaves unknown (ASSUMED from the candidates: none adds activations, KV cache or
optimizer temporaries). Such a ``Saving`` has ``partial`` set; a change whose known saving is
0 is still listed when it lowers a term that is unknown (a smaller micro-batch lowers the
activations by an amount nobody can state). A change ``fits`` ``False`` when its lower bound
already exceeds the GPU, ``None`` otherwise; a run whose lower bound is over the GPU gets
``may_fit``, the smallest combination whose lower bound is under it, or, when even the lower
bound after every applicable change is over, ``nothing-fits`` with ``lowest``: the fewest
changes that bring the lower bound lowest, each with what it saves.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from .costmodel import (
    ALLOCATED_TERMS,
    FRAGMENTATION_HIGH_FRACTION,
    OPTIMIZER_STEP_TEMPORARY_COPIES,
    TERM_LABELS,
    TERMS,
    Estimate,
    estimate,
    lora_casts_inputs,
)
from .run import LIMITS

if TYPE_CHECKING:
    from .catalogue import GpuTarget
    from .run import RunSpec

#: ASSUMED disruption ranks (1 = a flag, 5 = a different training method): flash/SDPA and the
#: fused optimizer step are drop-in kernels; a smaller micro-batch and checkpointing cost
#: speed, not results; 8-bit AdamW and bf16 weights change numerics slightly; sharding needs
#: a multi-GPU launcher; offload moves the optimizer to the host (slow steps); 4-bit base weights
#: (QLoRA) change the frozen weights' numerics and add bitsandbytes; LoRA changes what is trained.
DISRUPTION_RANKS: Dict[str, int] = {
    "attention": 1,
    "fused-step": 1,
    "micro-batch": 2,
    "checkpointing": 2,
    "optimizer": 3,
    "precision": 3,
    "sharding": 4,
    "offload": 4,
    "quantization": 4,
    "lora": 5,
}

#: The breakdown terms each group of changes can lower (never raise, when they are unknown).
#: A change whose known saving is 0 is listed only when it lowers a term that is unknown.
LOWERS: Dict[str, Tuple[str, ...]] = {
    "attention": ("activations",),
    "fused-step": ("optimizer_step",),
    "micro-batch": ("activations", "logits", "kv_cache"),
    "checkpointing": ("activations",),
    "optimizer": ("optimizer_state", "optimizer_step"),
    "precision": ("weights", "gradients", "optimizer_state", "autocast_cache", "activations", "logits",
                  "kv_cache", "optimizer_step"),
    "sharding": ("weights", "gradients", "optimizer_state", "master_weights", "optimizer_step"),
    "offload": ("optimizer_state", "master_weights", "optimizer_step"),
    "lora": ("gradients", "optimizer_state", "master_weights", "optimizer_step"),
    "quantization": ("weights", "autocast_cache"),
}

#: ASSUMED: LoRA is offered for fine-tunes of at least this many parameters ("large").
LORA_SUGGEST_MIN_PARAMS_COUNT = 1_000_000_000

_TRANSFORMER_KINDS = ("decoder", "encoder", "encoder-decoder", "vision-transformer")

#: Optimizers whose default (foreach) step allocates state-sized temporaries.
STEP_TEMPORARY_OPTIMIZERS = tuple(name for name, copies in OPTIMIZER_STEP_TEMPORARY_COPIES.items() if copies)
#: PUBLISHED torch.optim docs: the optimizers with a ``fused`` argument (Adam, AdamW, Adagrad, SGD);
#: the others (RMSprop, Adadelta) avoid the foreach temporaries with ``foreach=False``.
FUSED_STEP_OPTIMIZERS = ("adam", "adamw", "adagrad")


@dataclass(frozen=True)
class Candidate:
    """One change: ``apply`` returns the changed run; one per ``group`` in a combination."""

    label: str
    apply: Callable[[RunSpec], RunSpec]
    disruption: int
    group: str

    @property
    def lowers(self) -> Tuple[str, ...]:
        return LOWERS.get(self.group, ())


@dataclass(frozen=True)
class Saving:
    """A candidate priced alone against the original run.

    ``saves_bytes`` is exact, or with ``partial`` a lower bound (unknown terms may save more);
    ``None`` only when the change leaves unbounded a term the run had known.
    """

    candidate: Candidate
    after: Estimate
    saves_bytes: Optional[int]
    partial: bool = False

    @property
    def change(self) -> str:
        return self.candidate.label

    @property
    def peak_after_bytes(self) -> int:
        """The peak after the change; a lower bound when ``peak_after_is_lower_bound``."""
        return self.after.peak_bytes

    @property
    def peak_after_is_lower_bound(self) -> bool:
        return self.after.peak_is_lower_bound

    @property
    def fits(self) -> Optional[bool]:
        """True/False against the GPU; None when unknown terms decide (or no GPU)."""
        return self.after.fits


@dataclass(frozen=True)
class Combination:
    """Candidates applied in order, with each step's marginal saving (lower bounds when
    ``partial``)."""

    steps: Tuple[Tuple[Candidate, Optional[int]], ...]
    after: Estimate
    partial: bool = False

    @property
    def labels(self) -> List[str]:
        return [candidate.label for candidate, _ in self.steps]

    @property
    def fits_interval(self) -> bool:
        return bool(self.after.fits_interval)


@dataclass(frozen=True)
class Solution:
    """The solver's answer for one estimate.

    ``status``: ``fits`` (nothing to change), ``solved`` (``combination`` fits the point,
    and ``combination.fits_interval`` says whether the whole interval too), ``nothing-fits``
    (``lowest``: the fewest changes that bring the peak, or its lower bound, lowest; ``None``
    when no change lowers it; ``advice``: what else to do), ``unknown`` (unknown terms decide;
    ``may_fit``, when the run's lower bound is over the GPU, is the smallest change that brings
    it under), ``no-gpu``.
    ``message`` says it in words, GiB with one decimal.
    """

    before: Estimate
    savings: Tuple[Saving, ...]
    status: str
    message: str
    combination: Optional[Combination] = None
    interval_combination: Optional[Combination] = None
    may_fit: Optional[Combination] = None
    lowest: Optional[Combination] = None
    advice: str = ""


# ================================================================================ fits up to


def _largest_fitting(price: Callable[[int], Estimate], start: int, limit: int) -> Optional[int]:
    """The largest n in [1, limit] whose point peak fits (the peak grows with n); 0 when even 1
    does not; None when a term the verdict needs is unknown.  ``start`` is the run's own n."""
    start = min(start, limit)

    def fits(n: int) -> Optional[bool]:
        return price(n).fits

    here = fits(start)
    if here is None:
        return None
    if here:
        low, high = start, start * 2
        while high <= limit:
            answer = fits(high)
            if answer is None:
                return None
            if not answer:
                break
            low, high = high, high * 2
        else:
            if fits(limit):
                return limit
            high = limit
    else:
        low, high = 0, start
    while high - low > 1:  # fits(low) (or low == 0), not fits(high)
        middle = (low + high) // 2
        answer = fits(middle)
        if answer is None:
            return None
        low, high = (middle, high) if answer else (low, middle)
    return low


def fits_up_to(before: Estimate) -> Dict[str, Optional[int]]:
    """INTERFACE.md ``fits_up_to``: the largest micro-batch (at the run's sequence length / image
    size) and the longest sequence (at the run's micro-batch) whose projected peak fits the GPU, up
    to the model's ``max_positions`` where the catalogue has it, and never past ``run.LIMITS`` (a
    value the command line would refuse).  ``None`` without a GPU, for a value the run does not
    have, or when a term is unknown; 0 when not even 1 fits."""
    run = before.run
    found: Dict[str, Optional[int]] = {"batch_size": None, "seq_len": None}
    if before.gpu is None or before.fits is None:
        return found
    if run.batch_size:
        found["batch_size"] = _largest_fitting(
            lambda n: estimate(run.replace(batch_size=n), before.gpu), run.batch_size, LIMITS["batch_size"][1])
    if run.seq_len and run.batch_size:
        shape = run.model.shape if run.model is not None else {}
        longest = shape.get("max_positions") if isinstance(shape.get("max_positions"), int) else None
        limit = min(longest or LIMITS["seq_len"][1], LIMITS["seq_len"][1])
        found["seq_len"] = _largest_fitting(lambda n: estimate(run.replace(seq_len=n), before.gpu), run.seq_len,
                                            limit)
    return found


# ================================================================================ candidates


def _device_count(run: RunSpec, gpu: Optional[GpuTarget]) -> int:
    return max(gpu.count if gpu is not None else 1, run.world_size)


def micro_batch_levels(batch: int) -> List[int]:
    """Micro-batch sizes that keep the effective batch exact: halvings, then 1."""
    levels: List[int] = []
    size = batch
    while size % 2 == 0 and size > 1:
        size //= 2
        levels.append(size)
    if batch > 1 and 1 not in levels:
        levels.append(1)
    return levels


def candidates(run: RunSpec, gpu: Optional[GpuTarget]) -> List[Candidate]:
    """Every change that applies to ``run`` (all micro-batch levels included)."""
    found: List[Candidate] = []
    kind = run.model.kind if run.model is not None else None
    transformer = kind in _TRANSFORMER_KINDS

    def add(label: str, group: str, apply: Callable[[RunSpec], RunSpec]) -> None:
        found.append(Candidate(label, apply, DISRUPTION_RANKS[group], group))

    if transformer and not run.flash:
        add("flash/SDPA attention", "attention", lambda r: r.replace(flash=True))
    if run.training and transformer and not run.checkpointing:
        add("gradient checkpointing", "checkpointing", lambda r: r.replace(checkpointing=True))
    stepped = run.optimizer in STEP_TEMPORARY_OPTIMIZERS
    if run.training and stepped and not run.fused_optimizer and not run.offload_optimizer:
        label = ("fused optimizer step (fused=True)" if run.optimizer in FUSED_STEP_OPTIMIZERS
                 else "per-tensor optimizer step (foreach=False)")
        add(label, "fused-step", lambda r: r.replace(fused_optimizer=True))
    if run.training and run.optimizer in ("adam", "adamw") and not run.offload_optimizer:
        add("8-bit AdamW", "optimizer", lambda r: r.replace(optimizer="adamw-8bit"))
    if run.precision in ("fp32", "amp") and (gpu is None or gpu.bf16):
        add("bf16 weights", "precision", lambda r: r.replace(precision="bf16"))
    if run.batch_size is not None:
        batch = run.batch_size
        for size in micro_batch_levels(batch):
            factor = batch // size
            if run.training:
                label = f"micro-batch {batch} -> {size} with {factor}x gradient accumulation"
            else:
                label = f"batch {batch} -> {size} ({factor} passes)"
            add(label, "micro-batch", _micro_batch(size, factor))
    devices = _device_count(run, gpu)
    if run.training and devices > 1:
        if run.sharding not in ("zero-2", "zero-3", "fsdp") or run.world_size != devices:
            add(f"ZeRO-2 over {devices} GPUs", "sharding", lambda r: r.replace(sharding="zero-2", world_size=devices))
        if run.sharding not in ("zero-3", "fsdp") or run.world_size != devices:
            add(f"FSDP full sharding over {devices} GPUs", "sharding",
                lambda r: r.replace(sharding="fsdp", world_size=devices))
    if run.training and run.optimizer != "sgd" and not run.offload_optimizer:
        add("optimizer offload to CPU", "offload", lambda r: r.replace(offload_optimizer=True))
    params = run.total_params
    adapters = run.lora or run.trainable_params is not None
    if (run.training and transformer and not adapters and params is not None
            and params >= LORA_SUGGEST_MIN_PARAMS_COUNT):
        add(f"LoRA (rank {run.lora_rank}) instead of full fine-tuning", "lora", lambda r: r.replace(lora=True))
    if run.training and transformer and adapters and run.quantization == "none":
        # only where the base is already frozen: never a suggestion to quantize a full fine-tune
        add("4-bit base weights (QLoRA)", "quantization", lambda r: r.replace(quantization="nf4"))
    return found


def _micro_batch(size: int, factor: int) -> Callable[[RunSpec], RunSpec]:
    def apply(run: RunSpec) -> RunSpec:
        return run.replace(batch_size=size, grad_accum_steps=run.grad_accum_steps * factor)

    return apply


# ==================================================================================== solving


def known_saving(before: Estimate, after: Estimate) -> Tuple[Optional[int], bool]:
    """What going from ``before`` to ``after`` saves: ``(bytes, partial)``.

    With every term known in both, the exact difference of the peaks (``partial`` False).
    Otherwise a lower bound (``partial`` True), term by term: known in both, the difference;
    unknown before and known after, at least ``max(0, before.low - after)``; unknown in both,
    at least 0 (the candidates lower or keep what they leave unknown; the one that raises it,
    LoRA on 16-bit weights with its fp32 input casts, has no bound: ``(None, True)``), except fragmentation,
    a fraction of the allocated total, which may grow by ``FRAGMENTATION_HIGH_FRACTION`` of a
    known growth of that total (its fall with a known fall is not counted: the saving stays
    the saving on the known terms); known before and unknown after, ``before - after.high``,
    and ``(None, True)`` when that term is unbounded after.
    """
    if not before.unknown_terms and not after.unknown_terms:
        return before.peak_bytes - after.peak_bytes, False
    total = 0
    allocated = 0
    fragmentation_unknown = False
    for name in TERMS:
        was, now = before.terms[name], after.terms[name]
        if was.bytes is not None and now.bytes is not None:
            saved = was.bytes - now.bytes
        elif now.bytes is not None:
            saved = max(0, was.low - now.bytes)
        elif was.bytes is not None:
            if now.high is None:
                return None, True
            saved = was.bytes - now.high
        else:
            if name == "activations" and lora_casts_inputs(after.run) and not lora_casts_inputs(before.run):
                return None, True  # LoRA on 16-bit weights adds activations by an unknown amount
            saved = 0
            fragmentation_unknown = fragmentation_unknown or name == "fragmentation"
        total += saved
        if name in ALLOCATED_TERMS:
            allocated += saved
    if fragmentation_unknown and allocated < 0:  # a fraction of the allocated total: it may grow with it
        total += int(math.floor(FRAGMENTATION_HIGH_FRACTION * allocated))
    return total, True


def _gib(value: int) -> str:
    return f"{value / 1024**3:.1f} GiB"


def _listed(saving: Saving, unknown: Sequence[str]) -> bool:
    """A change is listed when it saves something, or lowers a term nobody can price."""
    if saving.saves_bytes != 0:
        return True
    return saving.partial and any(term in unknown for term in saving.candidate.lowers)


def _fits_rank(fits: Optional[bool]) -> int:
    return 0 if fits else (1 if fits is None else 2)


def rank_key(saving: Saving) -> Tuple[int, int, int, str]:
    """Fits first (yes, unknown, no), then lower disruption, then more bytes saved."""
    saves = saving.saves_bytes if saving.saves_bytes is not None else -(2**62)
    return (_fits_rank(saving.fits), saving.candidate.disruption, -saves, saving.candidate.label)


def _apply(run: RunSpec, chosen: Sequence[Candidate]) -> RunSpec:
    for candidate in chosen:
        run = candidate.apply(run)
    return run


def _steps(before: Estimate, chosen: Sequence[Candidate]) -> Combination:
    """The combination's steps, largest marginal saving first (the savings sum to the total)."""
    remaining = list(chosen)
    run, current = before.run, before
    steps: List[Tuple[Candidate, Optional[int]]] = []
    partial = False
    while remaining:
        tried = [(candidate, estimate(candidate.apply(run), before.gpu)) for candidate in remaining]
        candidate, after = min(tried, key=lambda pair: (pair[1].peak_bytes, pair[0].disruption))
        saved, lower_bound = known_saving(current, after)
        steps.append((candidate, saved))
        partial = partial or lower_bound
        remaining.remove(candidate)
        run, current = candidate.apply(run), after
    return Combination(tuple(steps), current, partial)


def steps_text(combination: Combination, digits: int = 1) -> str:
    """``8-bit AdamW (-6.7 GiB), optimizer offload to CPU (-2.3 GiB)``."""
    parts = []
    for candidate, saved in combination.steps:
        parts.append(candidate.label + (f" (-{saved / 1024**3:.{digits}f} GiB)" if saved is not None else ""))
    return ", ".join(parts)


def _combinations(pool: Sequence[Candidate]) -> List[Tuple[Candidate, ...]]:
    groups: Dict[str, List[Candidate]] = {}
    for candidate in pool:
        groups.setdefault(candidate.group, []).append(candidate)
    options = [[None] + members for members in groups.values()]  # type: List[List[Optional[Candidate]]]
    combos: List[Tuple[Candidate, ...]] = []
    for pick in itertools.product(*options):
        chosen = tuple(sorted((c for c in pick if c is not None), key=lambda c: (c.disruption, c.group)))
        if chosen:
            combos.append(chosen)
    combos.sort(key=lambda combo: (len(combo), sum(c.disruption for c in combo)))
    return combos


def _best(found: List[Tuple[Tuple[Candidate, ...], Estimate]]) -> Optional[Tuple[Candidate, ...]]:
    if not found:
        return None
    combo, _ = min(
        found,
        key=lambda item: (len(item[0]), not item[1].fits_interval, sum(c.disruption for c in item[0]),
                          item[1].peak_bytes),
    )
    return combo


def solve(before: Estimate) -> Solution:
    """Price every candidate for ``before.run`` on ``before.gpu`` and find the smallest fix."""
    run, gpu = before.run, before.gpu
    pool = candidates(run, gpu)
    # the savings list shows the first micro-batch level only; the search uses them all
    shown: List[Candidate] = []
    for candidate in pool:
        if candidate.group == "micro-batch" and any(c.group == "micro-batch" for c in shown):
            continue
        shown.append(candidate)
    savings = []
    unknown = before.unknown_terms
    for candidate in shown:
        after = estimate(candidate.apply(run), gpu)
        saving = Saving(candidate, after, *known_saving(before, after))
        if _listed(saving, unknown):  # a change that saves nothing alone is only tried in combinations
            savings.append(saving)
    ranked = tuple(sorted(savings, key=rank_key))
    if gpu is None:
        return Solution(before, ranked, "no-gpu", "no GPU given")
    if before.fits:
        return Solution(before, ranked, "fits", f"fits on {gpu.key} as it is")
    point: List[Tuple[Tuple[Candidate, ...], Estimate]] = []
    interval: List[Tuple[Tuple[Candidate, ...], Estimate]] = []
    maybe: List[Tuple[Tuple[Candidate, ...], Estimate]] = []
    lowest: Optional[Tuple[Tuple[Candidate, ...], Estimate]] = None
    smallest_point: Optional[int] = None
    smallest_interval: Optional[int] = None
    for combo in _combinations(pool):
        if smallest_interval is not None and len(combo) > smallest_interval:
            break  # combinations come smallest first; the interval fit is no larger than this
        after = estimate(_apply(run, combo), gpu)
        if lowest is None or after.peak_bytes < lowest[1].peak_bytes:
            lowest = (combo, after)  # fewest changes, then least disruption, reaching the lowest peak
        if after.fits is None:
            maybe.append((combo, after))
        if not after.fits:
            continue
        if smallest_point is None:
            smallest_point = len(combo)
        if len(combo) == smallest_point:
            point.append((combo, after))
        if after.fits_interval:
            smallest_interval = len(combo) if smallest_interval is None else smallest_interval
            interval.append((combo, after))
    chosen = _best(point)
    if chosen is not None:
        combination = _steps(before, chosen)
        if combination.fits_interval:
            return Solution(before, ranked, "solved",
                            "fits the whole interval with: " + ", ".join(combination.labels), combination, combination)
        robust_combo = _best(interval)
        robust = None if robust_combo is None else _steps(before, robust_combo)
        message = "fits the point estimate (not the whole interval) with: " + ", ".join(combination.labels)
        return Solution(before, ranked, "solved", message, combination, robust)
    usable = _gib(gpu.usable_bytes)
    unknown_text = ", ".join(TERM_LABELS[name] for name in unknown)
    if before.fits is None:  # the lower bound is under the GPU: the unknown terms decide
        message = (f"cannot tell: the known terms need at least {_gib(before.peak_bytes)}, under the {usable}"
                   f" usable on {gpu.key}; it depends on {unknown_text} (unknown)")
        return Solution(before, ranked, "unknown", message)
    may_combo = _best(maybe)
    if may_combo is not None:
        may_fit = _steps(before, may_combo)
        message = (f"may fit with {steps_text(may_fit)}: the peak drops to at least {_gib(may_fit.after.peak_bytes)},"
                   f" under the {usable} usable on {gpu.key}; whether it fits depends on {unknown_text} (unknown)")
        return Solution(before, ranked, "unknown", message, may_fit=may_fit)
    lowest_combination = None
    if lowest is not None and lowest[1].peak_bytes < before.peak_bytes:
        lowest_combination = _steps(before, lowest[0])
    after = lowest_combination.after if lowest_combination is not None else before
    at_least = "at least " if after.peak_is_lower_bound else ""
    peak = f"{at_least}{_gib(after.peak_bytes)}, over the {usable} usable on {gpu.key}"
    devices = _device_count(run, gpu)
    if devices > 1:
        head, advice = f"nothing fits, even sharded over {devices} devices", "more or larger GPUs are needed"
    else:
        head, advice = "nothing on one device fits", "shard over more GPUs or use a larger GPU"
    if lowest_combination is None:
        message = f"{head}: the peak is {peak}, and no change lowers it; {advice}"
    else:
        message = f"{head}: even with {steps_text(lowest_combination)} the peak is {peak}; {advice}"
    return Solution(before, ranked, "nothing-fits", message, lowest=lowest_combination, advice=advice)
