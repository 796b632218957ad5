"""The solver: which candidates apply, how the savings list is ranked, and the smallest fix."""
from __future__ import annotations

from itertools import combinations
from typing import Any, Dict, List

import pytest

from flake8_torch_preflight.estimator.catalogue import GpuTarget, ModelSpec
from flake8_torch_preflight.estimator.costmodel import estimate
from flake8_torch_preflight.estimator.run import RunSpec
from flake8_torch_preflight.estimator.solver import (
    DISRUPTION_RANKS,
    candidates,
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
    run = RunSpec(params=7_000_000_000, batch_size=4, seq_len=2048, precision="bf16")
    solution = solve(estimate(run, gpu(80)))
    assert solution.status == "unknown"
    assert "activations" in solution.message
    savings = {s.change: s for s in solution.savings}
    # the same terms unknown before and after: the saving is the known part's difference
    assert savings["optimizer offload to CPU"].saves_bytes is None  # the unknown step term becomes 0
    # halving the micro-batch changes only the unknown activations: it saves 0 known bytes,
    # so the list leaves it out (the search still tries it)
    assert "micro-batch 4 -> 2 with 2x gradient accumulation" not in savings
    assert any(c.group == "micro-batch" for c in candidates(run, gpu(80)))
    # 8-bit AdamW turns the unknown optimizer_step into a known 0: not comparable, so unknown
    assert savings["8-bit AdamW"].saves_bytes is None
