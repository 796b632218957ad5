"""The solver: which candidates apply, how the savings list is ranked, and the smallest fix."""
from __future__ import annotations

import math
import re
from itertools import combinations
from typing import Any, Dict, List

import pytest

from flake8_torch_preflight.estimator import costmodel as cm
from flake8_torch_preflight.estimator.catalogue import GpuTarget, ModelSpec
from flake8_torch_preflight.estimator.costmodel import estimate, lora_casts_inputs
from flake8_torch_preflight.estimator.run import LIMITS, RunSpec
from flake8_torch_preflight.estimator.solver import (
    DISRUPTION_RANKS,
    candidates,
    fits_up_to,
    known_saving,
    micro_batch_levels,
    rank_key,
    solve,
)

GIB = 1024**3


def llama(params: int = 6_738_415_616, **changes: Any) -> ModelSpec:
    """Llama-2-7B's shape (RMSNorm, SwiGLU, RoPE, no dropout, untied head)."""
    shape: Dict[str, Any] = {
        "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": None, "head_dim": None, "ffn": 11008,
        "ffn_kind": "swiglu", "vocab": 32000, "max_positions": 4096, "position": "rope",
        "tied_embeddings": False, "dropout": False, "norm": "rmsnorm", "bias": False,
        "experts": None, "experts_per_token": None, "encoder_layers": None, "decoder_layers": None,
        "image_size": None, "patch_size": None, "channels": None, "num_classes": None,
    }
    shape.update(changes)
    return ModelSpec(key="llama-like", kind="decoder", params=params, source="test", shape=shape, aliases=())


def gpu(usable_gib: float, count: int = 1, bf16: bool = True) -> GpuTarget:
    usable = int(usable_gib * GIB)
    return GpuTarget(key=f"{count}x-test", name="Test GPU", count=count, memory_bytes=usable, usable_bytes=usable,
                     context_bytes=400 * 1024**2, bf16=bf16, source="test")


def labels(run: RunSpec, target: GpuTarget) -> List[str]:
    return [c.label for c in candidates(run, target)]


def test_micro_batch_levels_keep_the_effective_batch_exact() -> None:
    assert micro_batch_levels(8) == [4, 2, 1]
    assert micro_batch_levels(12) == [6, 3, 1]
    assert micro_batch_levels(3) == [1]
    assert micro_batch_levels(1) == []


def test_candidates_apply_only_where_they_make_sense() -> None:
    run = RunSpec(model=llama(), batch_size=4, seq_len=2048, precision="amp", optimizer="adamw")
    one = labels(run, gpu(80))
    assert "flash/SDPA attention" in one and "gradient checkpointing" in one and "8-bit AdamW" in one
    assert "bf16 weights" in one and "optimizer offload to CPU" in one
    assert any(label.startswith("LoRA") for label in one)
    assert not any("over" in label for label in one)  # one GPU: no sharding
    eight = labels(run, gpu(80, count=8))
    assert "ZeRO-2 over 8 GPUs" in eight and "FSDP full sharding over 8 GPUs" in eight
    done = labels(run.replace(flash=True, checkpointing=True, precision="bf16"), gpu(80))
    assert not {"flash/SDPA attention", "gradient checkpointing", "bf16 weights"} & set(done)
    assert "bf16 weights" not in labels(run, gpu(80, bf16=False))  # a T4 or V100 has no bf16
    small = RunSpec(model=llama(params=124_000_000), batch_size=4, seq_len=128)
    assert not any(label.startswith("LoRA") for label in labels(small, gpu(16)))  # not a large fine-tune
    inference = labels(run.replace(inference=True), gpu(80))
    assert "gradient checkpointing" not in inference and "8-bit AdamW" not in inference
    assert "batch 4 -> 2 (2 passes)" in inference


def test_halving_the_micro_batch_doubles_accumulation() -> None:
    run = RunSpec(model=llama(), batch_size=8, seq_len=512, grad_accum_steps=2)
    found = {c.label: c for c in candidates(run, gpu(80))}
    halved = found["micro-batch 8 -> 4 with 2x gradient accumulation"].apply(run)
    assert (halved.batch_size, halved.grad_accum_steps) == (4, 4)
    smallest = found["micro-batch 8 -> 1 with 8x gradient accumulation"].apply(run)
    assert (smallest.batch_size, smallest.grad_accum_steps) == (1, 16)


def test_savings_are_ranked_by_fits_then_disruption_then_bytes() -> None:
    run = RunSpec(model=llama(), batch_size=4, seq_len=2048, precision="amp", optimizer="adamw")
    solution = solve(estimate(run, gpu(200)))
    ranked = list(solution.savings)
    assert ranked == sorted(ranked, key=rank_key)
    fits = [s.fits for s in ranked]
    assert fits == sorted(fits, key=lambda f: 0 if f else (1 if f is None else 2))
    assert True in fits and False in fits  # the case exercises both groups
    for first, second in zip(ranked, ranked[1:]):
        if first.fits == second.fits and first.candidate.disruption == second.candidate.disruption:
            assert (first.saves_bytes or 0) >= (second.saves_bytes or 0)
    before = solution.before.peak_bytes
    for saving in ranked:
        assert saving.saves_bytes == before - saving.peak_after_bytes
        assert saving.candidate.disruption == DISRUPTION_RANKS[saving.candidate.group]


def test_the_solution_is_the_smallest_combination_that_fits() -> None:
    run = RunSpec(model=llama(), batch_size=4, seq_len=2048, precision="amp", optimizer="adamw")
    target = gpu(80)
    solution = solve(estimate(run, target))
    assert solution.status == "solved"
    combination = solution.combination
    assert combination is not None and combination.after.fits
    size = len(combination.steps)
    # no smaller set of candidates (one per group) fits
    pool = candidates(run, target)
    for n in range(1, size):
        for combo in combinations(pool, n):
            if len({c.group for c in combo}) < n:
                continue
            changed = run
            for candidate in combo:
                changed = candidate.apply(changed)
            assert not estimate(changed, target).fits, [c.label for c in combo]
    # the steps' marginal savings add up to the whole saving
    total = sum(saved for _, saved in combination.steps if saved is not None)
    assert total == solution.before.peak_bytes - combination.after.peak_bytes
    assert solution.message.startswith("fits the whole interval" if combination.fits_interval else "fits the point")


def test_point_only_fit_also_names_a_whole_interval_fit_when_there_is_one() -> None:
    run = RunSpec(model=llama(), batch_size=8, seq_len=1024, precision="amp", optimizer="adamw")
    for usable in range(60, 200, 4):
        solution = solve(estimate(run, gpu(usable)))
        combination = solution.combination
        if combination is not None and not combination.fits_interval:
            robust = solution.interval_combination
            assert robust is not None and robust.after.fits_interval
            assert len(robust.steps) >= len(combination.steps)
            return
    pytest.fail("no capacity in the sweep gave a point-only fit")


def test_nothing_fits_is_said_plainly() -> None:
    run = RunSpec(model=llama(params=400_000_000_000), batch_size=1, seq_len=512, precision="bf16")
    solution = solve(estimate(run, gpu(16)))
    assert solution.status == "nothing-fits"
    assert solution.combination is None
    assert solution.message.startswith("nothing on one device fits")
    sharded = solve(estimate(run, gpu(16, count=8)))
    assert sharded.message.startswith("nothing fits, even sharded over 8 devices")


def test_already_fitting_and_no_gpu() -> None:
    run = RunSpec(model=llama(params=124_000_000, layers=2), batch_size=1, seq_len=128)
    assert solve(estimate(run, gpu(80))).status == "fits"
    no_gpu = solve(estimate(run))
    assert no_gpu.status == "no-gpu" and all(s.fits is None for s in no_gpu.savings)


def test_unknown_activations_leave_the_fit_unknown() -> None:
    p = 7_000_000_000
    run = RunSpec(params=p, batch_size=4, seq_len=2048, precision="bf16")
    solution = solve(estimate(run, gpu(80)))
    assert solution.status == "unknown" and solution.may_fit is None
    assert solution.message.startswith("cannot tell: the known terms need at least")
    assert "activations" in solution.message
    savings = {s.change: s for s in solution.savings}
    # the known part of a saving is a lower bound of it, and exact where it is definitional:
    # 8-bit AdamW replaces two bf16 states by two uint8 states with a fp32 absmax per 256
    adamw8 = savings["8-bit AdamW"]
    assert adamw8.partial and adamw8.saves_bytes == 2 * p * 2 - math.ceil(2 * p * (1 + 4 / 256))
    offload = savings["optimizer offload to CPU"]
    assert offload.partial and offload.saves_bytes == 2 * p * 2  # the states leave the device
    # halving the micro-batch lowers only the unknown activations: listed, saving at least 0
    halved = savings["micro-batch 4 -> 2 with 2x gradient accumulation"]
    assert halved.partial and halved.saves_bytes == 0 and halved.fits is None
    # LoRA is not offered without a transformer shape, and no saving is a guessed None
    assert all(s.saves_bytes is not None and s.partial for s in solution.savings)


def test_bf16_weights_save_the_definitional_terms_exactly_on_a_partly_known_run() -> None:
    p = 1_000_000_000
    run = RunSpec(params=p, batch_size=8, seq_len=512, precision="amp", optimizer="adamw")
    before = estimate(run, gpu(80))
    (bf16,) = [s for s in solve(before).savings if s.change == "bf16 weights"]
    # weights 4 -> 2, gradients 4 -> 2, two AdamW states 4 -> 2 bytes a parameter, and the
    # autocast cache (every parameter's 16-bit copy, no shape to exclude any) goes
    assert bf16.partial and bf16.saves_bytes == 2 * p + 2 * p + 4 * p + before.terms["autocast_cache"].bytes


def _partly_known(run: RunSpec) -> RunSpec:
    return run.replace(seq_len=None)  # a catalogue shape without a sequence length: no activations


@pytest.mark.parametrize("count", [1, 8])
@pytest.mark.parametrize("precision, optimizer", [("amp", "adamw"), ("bf16", "adam"), ("fp32", "sgd-momentum")])
def test_a_partly_known_saving_is_a_lower_bound_of_the_full_one(count: int, precision: str, optimizer: str) -> None:
    target = gpu(40, count=count)
    full_run = RunSpec(model=llama(), batch_size=4, seq_len=1024, precision=precision, optimizer=optimizer)
    full, partial = estimate(full_run, target), estimate(_partly_known(full_run), target)
    assert partial.unknown_terms and not full.unknown_terms
    pool = candidates(full_run, target)
    assert {c.label for c in pool} == {c.label for c in candidates(_partly_known(full_run), target)}
    for candidate in pool:
        exact, was_partial = known_saving(full, estimate(candidate.apply(full_run), target))
        bound, is_partial = known_saving(partial, estimate(_partly_known(candidate.apply(full_run)), target))
        assert not was_partial and is_partial, candidate.label
        if lora_casts_inputs(candidate.apply(full_run)):
            # LoRA on 16-bit weights adds fp32 input casts to the activations it cannot price: no bound
            assert bound is None, candidate.label
            continue
        assert exact is not None and bound is not None and bound <= exact, candidate.label


def _hand_written(params: int, **changes: Any) -> RunSpec:
    fields: Dict[str, Any] = dict(params=params, model_label="Classifier", batch_size=64, precision="amp",
                                  optimizer="adamw")
    fields.update(changes)
    return RunSpec(**fields)


def test_a_change_whose_lower_bound_fits_may_fit() -> None:
    # weights, gradients (fp32), AdamW state and the autocast cache of 1.2B parameters: ~20.6 GiB
    # known, over a 14.5 GiB GPU; 8-bit AdamW takes 6.7 GiB off the known part, which may fit
    p = 1_205_026_826
    before = estimate(_hand_written(p), gpu(14.5, bf16=False))
    assert before.fits is False and before.peak_is_lower_bound
    solution = solve(before)
    assert solution.status == "unknown" and solution.combination is None
    may_fit = solution.may_fit
    assert may_fit is not None and may_fit.labels == ["8-bit AdamW"] and may_fit.partial
    assert may_fit.after.fits is None and may_fit.after.peak_bytes <= gpu(14.5).usable_bytes
    assert solution.message.startswith("may fit with 8-bit AdamW (-6.7 GiB): the peak drops to at least")
    ranked = [s.change for s in solution.savings]
    assert ranked.index("8-bit AdamW") < ranked.index("fused optimizer step (fused=True)")  # may fit first


def test_nothing_fits_when_even_the_lower_bound_after_every_change_is_over() -> None:
    p = 1_205_026_826
    target = gpu(14.5, bf16=False)
    run = _hand_written(p, sharding="ddp")  # DDP keeps a second copy of the gradients
    before = estimate(run, target)
    solution = solve(before)
    assert solution.status == "nothing-fits"
    assert solution.message.startswith("nothing on one device fits: even with optimizer offload to CPU (-9.0 GiB)")
    assert "the peak is at least" in solution.message and solution.advice
    lowest = solution.lowest
    assert lowest is not None and lowest.partial and lowest.after.fits is False
    # it is the lowest any combination reaches, and every one of them is over at its low end
    pool = candidates(run, target)
    for n in range(1, len(pool) + 1):
        for combo in combinations(pool, n):
            if len({c.group for c in combo}) < n:
                continue
            changed = run
            for candidate in combo:
                changed = candidate.apply(changed)
            after = estimate(changed, target)
            assert after.fits is False and after.peak_bytes >= lowest.after.peak_bytes
    # a run the known part alone fits is not "nothing fits"
    assert solve(estimate(run, gpu(40, bf16=False))).status == "unknown"


def test_nothing_fits_on_a_fully_known_run_names_the_changes_that_get_closest() -> None:
    run = RunSpec(model=llama(params=400_000_000_000), batch_size=1, seq_len=512, precision="bf16")
    solution = solve(estimate(run, gpu(16)))
    assert solution.lowest is not None and not solution.lowest.partial
    assert re.search(r"even with .+ \(-\d+\.\d GiB\).* the peak is \d+\.\d GiB, over the 16\.0 GiB", solution.message)


# ------------------------------------------------------------------------------ fits_up_to

def test_fits_up_to_is_the_largest_batch_and_sequence_whose_point_fits() -> None:
    run = RunSpec(model=llama(), batch_size=2, seq_len=512, precision="bf16", optimizer="adamw-8bit",
                  checkpointing=True, flash=True)
    target = gpu(80)
    reach = fits_up_to(estimate(run, target))
    batch, seq = reach["batch_size"], reach["seq_len"]
    assert batch is not None and batch >= 2 and seq is not None and seq >= 512
    assert estimate(run.replace(batch_size=batch), target).fits is True
    assert estimate(run.replace(batch_size=batch + 1), target).fits is False
    assert estimate(run.replace(seq_len=seq), target).fits is True
    assert seq == 4096 or estimate(run.replace(seq_len=seq + 1), target).fits is False


def test_fits_up_to_stops_at_the_models_positions() -> None:
    run = RunSpec(model=llama(params=100_000_000, layers=2, hidden=256, ffn=512, vocab=1000, max_positions=2048),
                  batch_size=1, seq_len=128, precision="bf16", flash=True)
    assert fits_up_to(estimate(run, gpu(80)))["seq_len"] == 2048


def test_fits_up_to_stops_at_the_largest_value_a_run_may_have() -> None:
    # a tiny model whose activations vanish: the answer is a value the command line accepts
    run = RunSpec(model=llama(params=100_000, layers=1, hidden=8, ffn=16, vocab=10, max_positions=10**9),
                  batch_size=1, seq_len=1, inference=True, flash=True)
    reach = fits_up_to(estimate(run, gpu(10_000)))
    assert reach == {"batch_size": LIMITS["batch_size"][1], "seq_len": LIMITS["seq_len"][1]}


def test_fits_up_to_is_zero_when_not_even_one_fits_and_null_without_an_answer() -> None:
    run = RunSpec(model=llama(), batch_size=4, seq_len=2048, precision="fp32", optimizer="adamw")
    assert fits_up_to(estimate(run, gpu(16))) == {"batch_size": 0, "seq_len": 0}
    assert fits_up_to(estimate(run)) == {"batch_size": None, "seq_len": None}  # no GPU
    unknown = RunSpec(params=1_000_000, batch_size=4, seq_len=128)  # no shape: activations unknown
    assert fits_up_to(estimate(unknown, gpu(80))) == {"batch_size": None, "seq_len": None}


def test_the_step_saving_names_the_switch_each_optimizer_has() -> None:
    """torch.optim: Adam/AdamW/Adagrad take ``fused=True``; Adadelta and RMSprop only ``foreach=False``."""
    labels = {}
    for optimizer in ("adamw", "adadelta", "rmsprop"):
        run = RunSpec(model=llama(), batch_size=1, seq_len=512, precision="bf16", optimizer=optimizer)
        labels[optimizer] = [c.label for c in candidates(run, None) if c.group == "fused-step"]
    assert labels == {"adamw": ["fused optimizer step (fused=True)"],
                      "adadelta": ["per-tensor optimizer step (foreach=False)"],
                      "rmsprop": ["per-tensor optimizer step (foreach=False)"]}


def test_the_fsdp_candidate_fits_the_whole_interval_only_with_its_uncertain_term(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Sharding a DDP run of Llama-2-7B (bf16 AdamW) with FSDP over four 40 GiB GPUs: the priced
    terms fit the whole interval; the uncertain FSDP term (0 to 2x the sharded model states) takes
    the high end over, so the change fits the point only, and the whole-interval fit is another."""
    run = RunSpec(model=llama(), batch_size=1, seq_len=1024, precision="bf16", optimizer="adamw",
                  sharding="ddp", world_size=4)
    target = gpu(40, count=4)
    solution = solve(estimate(run, target))
    fsdp = next(s for s in solution.savings if s.change == "FSDP full sharding over 4 GPUs")
    after = fsdp.after
    states = sum(after.breakdown[name] for name in ("weights", "gradients", "optimizer_state", "master_weights"))
    term = after.uncertain["fsdp_unexplained"]
    assert (term.bytes, term.low, term.high) == (None, 0, math.ceil(2 * states))
    assert after.fits is True and after.verdict == "fits-point"
    combination = solution.combination
    assert solution.status == "solved" and combination is not None and combination.fits_interval
    assert combination.labels != ["FSDP full sharding over 4 GPUs"]
    assert combination.after.interval_bytes[1] <= target.usable_bytes
    monkeypatch.setattr(cm, "FSDP_UNEXPLAINED_STATES_HIGH_FRACTION", 0.0)  # the priced terms alone
    assert estimate(after.run, target).fits_interval is True
