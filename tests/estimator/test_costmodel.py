"""The cost model's arithmetic: definitional bytes exactly, activation terms by their formulas,
unknowns as None (never a guessed 0), and the interval's ordering.

Shapes here are small ``ModelSpec`` values built in the test, so the numbers follow from the
formulas alone and not from the catalogue data.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from flake8_torch_preflight.estimator import costmodel as cm
from flake8_torch_preflight.estimator.catalogue import GpuTarget, ModelSpec
from flake8_torch_preflight.estimator.costmodel import TERMS, estimate, kv_cache_bytes, lora_params
from flake8_torch_preflight.estimator.run import OPTIMIZERS, PRECISIONS, RunSpec, RunSpecError, parse_lora_targets

MIB = 1024**2
GIB = 1024**3

#: Divisible by 256 (the 8-bit optimizer's block) and by every world size used here.
P = 1_048_576


def decoder(**changes: Any) -> ModelSpec:
    """A small GPT-2-like decoder: learned positions, LayerNorm, GELU, dropout, tied embeddings."""
    shape: Dict[str, Any] = {
        "layers": 4, "hidden": 256, "heads": 4, "kv_heads": None, "head_dim": None, "ffn": 1024,
        "ffn_kind": "gelu", "vocab": 1000, "max_positions": 512, "position": "learned",
        "tied_embeddings": True, "dropout": True, "norm": "layernorm", "bias": True,
        "experts": None, "experts_per_token": None, "encoder_layers": None, "decoder_layers": None,
        "image_size": None, "patch_size": None, "channels": None, "num_classes": None,
    }
    kind = changes.pop("kind", "decoder")
    params = changes.pop("params", 5_000_000)
    shape.update(changes)
    return ModelSpec(key="tiny", kind=kind, params=params, source="test", shape=shape, aliases=())


def gpu(usable_gib: float = 16.0, count: int = 1, context_mib: int = 400, bf16: bool = True) -> GpuTarget:
    usable = int(usable_gib * GIB)
    return GpuTarget(key="testgpu", name="Test GPU", count=count, memory_bytes=usable, usable_bytes=usable,
                     context_bytes=context_mib * MIB, bf16=bf16, source="test")


def params_only(**changes: Any) -> RunSpec:
    return RunSpec(params=P, batch_size=1, seq_len=8, **changes)


# ------------------------------------------------------------------ definitional bytes

WEIGHT_BYTES = {"fp32": 4, "amp": 4, "fp16": 2, "bf16": 2}
#: bytes of optimizer state per trainable parameter, per precision (torch.optim keeps state in
#: the parameter's dtype; bitsandbytes keeps uint8 plus one fp32 absmax per 256 elements).
STATE_BYTES = {
    "sgd": lambda w: 0,
    "sgd-momentum": lambda w: w,
    "adam": lambda w: 2 * w,
    "adamw": lambda w: 2 * w,
    "adamw-8bit": lambda w: 2 * (1 + 4 / 256),
    "lion": lambda w: w,
    "rmsprop": lambda w: w,
    "adagrad": lambda w: w,
    "adadelta": lambda w: 2 * w,  # square_avg + acc_delta (torch/optim/adadelta.py)
}


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("optimizer", sorted(STATE_BYTES))
def test_bytes_per_parameter(precision: str, optimizer: str) -> None:
    result = estimate(params_only(precision=precision, optimizer=optimizer))
    w = WEIGHT_BYTES[precision]
    assert result.breakdown["weights"] == P * w
    assert result.breakdown["gradients"] == P * w
    assert result.breakdown["optimizer_state"] == int(P * STATE_BYTES[optimizer](w))
    assert result.breakdown["master_weights"] == 0
    assert result.breakdown["autocast_cache"] == (P * 2 if precision == "amp" else 0)


def test_every_contract_optimizer_is_priced() -> None:
    assert set(OPTIMIZERS) == set(cm.OPTIMIZER_STATE_TENSORS_COUNT)
    assert set(OPTIMIZERS) - set(STATE_BYTES) == {"adafactor"}


def test_adafactor_is_factored_by_the_model_width() -> None:
    run = RunSpec(model=decoder(), batch_size=1, seq_len=8, optimizer="adafactor")
    assert estimate(run).breakdown["optimizer_state"] == int(5_000_000 * 2 / 256 * 4)


def test_adafactor_without_a_width_is_unknown_not_zero() -> None:
    result = estimate(params_only(optimizer="adafactor"))
    assert result.breakdown["optimizer_state"] is None
    assert result.terms["optimizer_state"].high == P * 4  # never more than an unfactored state


def test_mixed_precision_zero_keeps_fp32_master_weights_and_states() -> None:
    """ZeRO paper §3.1: 2 + 2 + (4 + 4 + 4) bytes per parameter for mixed-precision Adam."""
    result = estimate(params_only(precision="bf16", optimizer="adamw", sharding="zero-1", world_size=1))
    b = result.breakdown
    assert (b["weights"], b["gradients"], b["master_weights"], b["optimizer_state"]) == (2 * P, 2 * P, 4 * P, 8 * P)


@pytest.mark.parametrize(
    "sharding, weights_div, grads_div, optimizer_div",
    [("none", 1, 1, 1), ("zero-1", 1, 1, 4), ("zero-2", 1, 4, 4), ("zero-3", 4, 4, 4), ("fsdp", 4, 4, 4)],
)
def test_sharding_divides_by_world_size(sharding: str, weights_div: int, grads_div: int, optimizer_div: int) -> None:
    model = decoder(params=P)
    run = RunSpec(model=model, batch_size=1, seq_len=8, precision="amp", optimizer="adamw",
                  sharding=sharding, world_size=4)
    b = estimate(run).breakdown
    gathered = 0 if weights_div == 1 else cm.FSDP_GATHERED_LAYERS_COUNT * 4 * P // 4  # two of four layers
    assert b["weights"] == 4 * P // weights_div + gathered
    assert b["gradients"] == 4 * P // grads_div
    assert b["optimizer_state"] == 8 * P // optimizer_div


def test_full_training_under_fsdp_widens_the_high_end_by_twice_the_sharded_states() -> None:
    """bf16 AdamW over 4 GPUs, 4 layers of P/4: weights 2P/4 + two gathered layers 2 x 2P/4 = 1.5P,
    gradients 2P/4 = 0.5P, AdamW state 2 x 2P/4 = P: 3P of sharded states; the uncertain term is
    0 to 2 x 3P = 6P, outside the point and in the high end (fragmentation's high end included)."""
    run = RunSpec(model=decoder(params=P), batch_size=1, seq_len=8, precision="bf16", optimizer="adamw",
                  sharding="fsdp", world_size=4)
    result = estimate(run)
    b = result.breakdown
    assert (b["weights"], b["gradients"], b["optimizer_state"], b["master_weights"]) == (
        3 * P // 2, P // 2, P, 0)
    term = result.uncertain["fsdp_unexplained"]
    assert (term.bytes, term.low, term.high) == (None, 0, 6 * P)
    assert "2x the sharded model states" in term.note
    assert result.peak_bytes == sum(b.values()) and not result.peak_is_lower_bound  # the point is unchanged
    assert result.unknown_terms == []
    allocated_high = sum(result.terms[name].high for name in cm.ALLOCATED_TERMS)
    frag = result.terms["fragmentation"]
    assert frag.high == math.ceil(cm.FRAGMENTATION_HIGH_FRACTION * (allocated_high + 6 * P))
    low, high = result.interval_bytes
    assert high == sum(t.high for t in result.terms.values()) + 6 * P
    assert low == dataclasses.replace(result, uncertain={}).interval_bytes[0]  # the low end does not move


def test_fsdp_with_a_frozen_base_allows_one_unsharded_copy_of_the_weights() -> None:
    """LoRA (or a frozen backbone) under FSDP: 0 to one copy of all 5,000,000 weights in the compute
    dtype, 2 bytes under bf16, fp16 and amp (autocast computes in 16 bits), 4 under fp32."""
    base = RunSpec(model=decoder(), batch_size=1, seq_len=8, optimizer="adamw", sharding="fsdp", world_size=2)
    for precision, width in (("bf16", 2), ("fp16", 2), ("amp", 2), ("fp32", 4)):
        lora = estimate(base.replace(precision=precision, lora=True, lora_rank=8)).uncertain["fsdp_unexplained"]
        assert (lora.bytes, lora.low, lora.high) == (None, 0, 5_000_000 * width), precision
        frozen = estimate(base.replace(precision=precision, trainable_params=1000)).uncertain["fsdp_unexplained"]
        assert frozen.high == 5_000_000 * width
        assert "one unsharded copy of the weights" in lora.note


@pytest.mark.parametrize("changes", [
    {"sharding": "zero-3"}, {"sharding": "zero-2"}, {"sharding": "ddp"}, {"sharding": "none", "world_size": 1},
    {"inference": True},
])
def test_no_fsdp_training_no_uncertain_term(changes: Dict[str, Any]) -> None:
    run = RunSpec(model=decoder(), batch_size=1, seq_len=8, precision="bf16", optimizer="adamw",
                  sharding="fsdp", world_size=4).replace(**changes)
    result = estimate(run)
    assert result.uncertain == {}
    assert result.interval_bytes[1] == sum(t.high for t in result.terms.values())


def test_the_uncertain_term_decides_the_whole_interval_fit_not_the_point() -> None:
    """A GPU between the point and the widened high end: the point fits, the interval does not."""
    run = RunSpec(model=decoder(params=P), batch_size=1, seq_len=8, precision="bf16", optimizer="adamw",
                  sharding="fsdp", world_size=4)
    result = estimate(run)
    low, high = result.interval_bytes
    usable = (high + high - 6 * P) // 2 / GIB  # above the high end without the term, under it with it
    placed = estimate(run, gpu(usable_gib=usable, context_mib=400))
    assert placed.fits is True and placed.fits_interval is False and placed.verdict == "fits-point"


def test_ddp_replicates_and_keeps_a_bucket_copy_of_gradients() -> None:
    b = estimate(params_only(sharding="ddp", world_size=8)).breakdown
    assert b["weights"] == 4 * P
    assert b["optimizer_state"] == 8 * P
    assert b["gradients"] == 4 * P * (1 + cm.DDP_BUCKET_GRADIENT_COPIES_COUNT)


def test_optimizer_offload_removes_optimizer_state_from_the_device() -> None:
    result = estimate(params_only(precision="bf16", sharding="zero-2", world_size=2, offload_optimizer=True))
    b = result.breakdown
    assert (b["optimizer_state"], b["master_weights"], b["optimizer_step"]) == (0, 0, 0)
    assert b["gradients"] == 2 * P // 2
    assert any("host memory" in note for note in result.notes)


def test_inference_has_no_gradients_or_optimizer_state() -> None:
    run = RunSpec(model=decoder(), batch_size=2, seq_len=16, inference=True)
    b = estimate(run).breakdown
    assert (b["gradients"], b["optimizer_state"], b["master_weights"], b["optimizer_step"]) == (0, 0, 0, 0)
    assert b["kv_cache"] == 0
    assert isinstance(b["activations"], int) and b["activations"] > 0


def test_inference_high_end_includes_an_evaluation_loss() -> None:
    """Labels passed under no_grad make the loss's fp32 copies live (GPU-measured, gpu_h200.json):
    the point prices the head output only, the high end the loss as well."""
    b, s, v = 2, 16, 1000
    run = RunSpec(model=decoder(), batch_size=b, seq_len=s, inference=True, precision="amp")
    acts, logits = estimate(run).terms["activations"], estimate(run).terms["logits"]
    loss = (cm.LOGITS_COPIES["fp32_upcast"] + cm.LOGITS_COPIES["log_softmax_fp32"]) * v * 4 * b * s
    assert abs(logits.high - math.ceil((logits.bytes + loss) * cm.ACTIVATIONS_HIGH_FRACTION)) <= 2  # ceil'd
    assert abs(acts.high - math.ceil(acts.bytes * cm.ACTIVATIONS_HIGH_FRACTION)) <= 2  # the loss widens the logits
    training = estimate(run.replace(inference=False)).terms["activations"]
    assert acts.bytes < training.bytes  # the point: no loss, no saved tensors
    known = estimate(run.replace(eval_loss=True))
    assert known.terms["logits"].bytes == logits.bytes + loss  # read from the script: in the point
    assert known.terms["activations"].bytes == acts.bytes
    assert known.activation_parts["evaluation_loss"] == loss
    assert not any("loss over the logits" in note for note in known.notes)
    assert any("loss over the logits" in note for note in estimate(run).notes)
    assert "loss over the logits" in acts.note


@pytest.mark.parametrize("precision, per_hidden, per_logit", [("fp32", 12, 8), ("amp", 10, 8), ("bf16", 6, 4)])
def test_encoder_masked_lm_head(precision: str, per_hidden: int, per_logit: int) -> None:
    """An encoder's MLM head (measured: activations_bert.json mlm - cls) is priced when the run
    says so, left out for a base/task model, and only widens the high end when unknown."""
    b, s, h, v = 2, 16, 256, 1000
    spec = decoder(kind="encoder", tied_embeddings=True)
    runs = {head: RunSpec(model=spec, batch_size=b, seq_len=s, precision=precision, lm_head=head)
            for head in (True, False, None)}
    acts = {head: estimate(run).terms["activations"] for head, run in runs.items()}
    heads = {head: estimate(run).terms["logits"] for head, run in runs.items()}
    mlm = (per_hidden * h + 8 + per_logit * v) * b * s
    assert heads[True].bytes - heads[False].bytes == mlm and heads[False].bytes == 0
    assert acts[True].bytes == acts[False].bytes == acts[None].bytes  # the head is in the logits term
    assert heads[None].bytes == heads[False].bytes
    assert heads[None].high == math.ceil((heads[None].bytes + mlm) * cm.ACTIVATIONS_HIGH_FRACTION)
    assert heads[False].high == math.ceil(heads[False].bytes * cm.ACTIVATIONS_HIGH_FRACTION)
    assert "masked-LM head" in acts[None].note and "masked-LM head" not in acts[False].note
    assert any("masked-LM head" in note for note in estimate(runs[None]).notes)  # shown to the user
    assert not any("masked-LM head" in note for note in estimate(runs[True]).notes)


def test_optimizer_step_is_the_foreach_temporary_beyond_backwards_peak() -> None:
    result = estimate(RunSpec(model=decoder(), batch_size=1, seq_len=8, precision="fp32", optimizer="adamw"))
    b = result.breakdown
    temporary = 5_000_000 * 4  # one fp32 copy of exp_avg_sq
    assert b["optimizer_step"] == max(0, temporary - b["activations"] - b["logits"] - b["autocast_cache"])
    assert b["optimizer_step"] > 0
    fused = estimate(RunSpec(model=decoder(), batch_size=1, seq_len=8, optimizer="adamw", fused_optimizer=True))
    assert fused.breakdown["optimizer_step"] == 0


def test_adadelta_keeps_two_states_and_two_step_temporaries() -> None:
    """torch.optim.Adadelta: square_avg and acc_delta (2 x 4 B per fp32 parameter); its foreach
    step holds ``std`` and ``deltas``, two state-sized copies, at once."""
    run = RunSpec(model=decoder(), batch_size=1, seq_len=8, precision="fp32", optimizer="adadelta")
    b = estimate(run).breakdown
    assert b["optimizer_state"] == 5_000_000 * 2 * 4
    assert b["optimizer_step"] == max(0, 2 * 5_000_000 * 4 - b["activations"] - b["logits"])
    assert b["optimizer_step"] > 0
    assert estimate(run.replace(fused_optimizer=True)).breakdown["optimizer_step"] == 0


# ------------------------------------------------------------------------ activations

def layer_bytes(run: RunSpec) -> int:
    return estimate(run).activation_parts["layers"]


def test_korthikanti_layer_formula_with_dropout() -> None:
    """arXiv:2205.05198 eq. 1: s·b·h·(34 + 5·a·s/h) bytes per layer with 16-bit activations
    and dropout (plus LayerNorm's fp32 mean and rstd, which the paper leaves out)."""
    s, b, h, a, layers = 128, 2, 256, 4, 4
    run = RunSpec(model=decoder(), batch_size=b, seq_len=s, precision="bf16")
    statistics = 2 * 2 * 4 * s * b  # two LayerNorms, mean + rstd, fp32
    assert layer_bytes(run) == layers * (s * b * h * 34 + 5 * a * s * s * b + statistics)


def test_without_dropout_the_masks_and_dropout_outputs_go() -> None:
    s, b, h, a, layers = 128, 2, 256, 4, 4
    run = RunSpec(model=decoder(dropout=False), batch_size=b, seq_len=s, precision="bf16")
    statistics = 2 * 2 * 4 * s * b
    assert layer_bytes(run) == layers * (s * b * h * 32 + 2 * a * s * s * b + statistics)


def test_fused_attention_has_no_quadratic_term() -> None:
    def both(s: int, flash: bool) -> int:
        return layer_bytes(RunSpec(model=decoder(), batch_size=1, seq_len=s, precision="bf16", flash=flash))

    assert both(256, True) == 2 * both(128, True)
    assert both(256, False) > 2 * both(128, False)
    assert both(512, True) < both(512, False)


def test_gqa_saves_nothing_in_eager_attention_but_shrinks_fused_kv() -> None:
    def layers(kv_heads: Optional[int], flash: bool) -> int:
        model = decoder(kv_heads=kv_heads, dropout=False, norm="rmsnorm", ffn_kind="swiglu")
        return layer_bytes(RunSpec(model=model, batch_size=2, seq_len=64, precision="bf16", flash=flash))

    assert layers(1, flash=False) == layers(4, flash=False)  # repeat_kv expands K and V
    h, kv, tokens = 256, 64, 2 * 64
    assert layers(4, flash=True) - layers(1, flash=True) == 4 * 2 * (h - kv) * 2 * tokens  # L x (K, V) x bf16


def test_swiglu_keeps_four_ffn_wide_tensors_gelu_two() -> None:
    gelu = layer_bytes(RunSpec(model=decoder(), batch_size=1, seq_len=32, precision="bf16"))
    swiglu = layer_bytes(RunSpec(model=decoder(ffn_kind="swiglu"), batch_size=1, seq_len=32, precision="bf16"))
    assert swiglu - gelu == 4 * (4 - 2) * 1024 * 2 * 32  # layers x extra elements x ffn x bytes x tokens


def test_amp_keeps_the_residual_stream_and_softmax_in_fp32() -> None:
    s, b, h, a = 64, 1, 256, 4
    bf16 = layer_bytes(RunSpec(model=decoder(), batch_size=b, seq_len=s, precision="bf16"))
    amp = layer_bytes(RunSpec(model=decoder(), batch_size=b, seq_len=s, precision="amp"))
    # two norm inputs at 4 instead of 2 bytes; softmax output at 4 instead of 2; q, k and v each
    # cast the normed input (one shared 16-bit input in bf16, three casts under amp)
    assert amp - bf16 == 4 * (2 * 2 * h * s * b + 2 * a * s * s * b + 2 * 2 * h * s * b)


# ----------------------------------------------------------- traits measured in tests/calibration
# Each test pins one trait of the Hugging Face implementations by the per-layer bytes it changes
# (tests/calibration/README.md derives the figures; test_calibration.py checks them against the
# fixtures). Layer bytes per token = layer_bytes(b=1, s=1) with eager scores of one key.


def per_token(model: ModelSpec, precision: str, flash: bool = False, s: int = 1) -> float:
    return layer_bytes(RunSpec(model=model, batch_size=1, seq_len=s, precision=precision, flash=flash)) / 4 / s


def test_fused_kernel_output_is_the_output_projection_input() -> None:
    """activations_bert.json: sdpa keeps the same per-token bytes as eager (plus logsumexp)."""
    model = decoder()
    for precision in ("fp32", "amp", "bf16"):
        eager_linear = 2 * per_token(model, precision, s=1) - per_token(model, precision, s=2)  # no s^2 term
        fused = per_token(model, precision, flash=True)
        assert fused - eager_linear == 4 * 4  # heads x fp32 logsumexp


def test_amp_casts_the_input_once_per_projection() -> None:
    h, f = 256, 1024
    separate = per_token(decoder(dropout=False), "amp", flash=True)
    fused = per_token(decoder(dropout=False, qkv_fused=True), "amp", flash=True)
    assert separate - fused == 2 * h * 2  # two more 16-bit copies of the normed input
    gated = decoder(dropout=False, ffn_kind="swiglu", norm="rmsnorm", ffn=f)
    assert per_token(gated, "amp", flash=True) - per_token(gated, "bf16", flash=True) == (
        2 * h * (8 - 6)  # two RMSNorms: 8 B under amp, 6 B in bf16
        + 2 * h * 2  # q, k, v: two more casts
        + h * 2  # gate_proj and up_proj: one more cast
    )


@pytest.mark.parametrize(
    "precision, layernorm, rmsnorm, t5", [("fp32", 4, 8, 8), ("amp", 4, 8, 8), ("bf16", 2, 6, 8), ("fp16", 2, 6, 8)]
)
def test_norm_bytes_per_hidden(precision: str, layernorm: int, rmsnorm: int, t5: int) -> None:
    h = 256
    base = per_token(decoder(dropout=False), precision, flash=True)
    rms = per_token(decoder(dropout=False, norm="rmsnorm"), precision, flash=True)
    variance = per_token(decoder(dropout=False, norm="rmsnorm", rmsnorm_upcast="variance"), precision, flash=True)
    # two norms per layer; LayerNorm keeps mean and rstd (8 B per token), RMSNorm one rsqrt (4 B)
    assert rms - base == 2 * ((rmsnorm - layernorm) * h - 4)
    assert variance - rms == 2 * (t5 - rmsnorm) * h


@pytest.mark.parametrize(
    "precision, with_dropout, without, upcast", [("fp32", 9, 4, 4), ("amp", 7, 6, 6), ("bf16", 5, 2, 6)]
)
def test_score_bytes_per_head_per_key(precision: str, with_dropout: int, without: int, upcast: int) -> None:
    def scores(**shape: Any) -> float:
        model = decoder(**shape)
        return (per_token(model, precision, s=2) - per_token(model, precision, s=1)) / 4  # per key per head

    assert scores() == with_dropout
    assert scores(attention_dropout=False) == without  # OPT: residual dropout, no attention dropout
    assert scores(dropout=False, softmax_fp32=True) == upcast  # softmax(..., dtype=float32).to(dtype)


@pytest.mark.parametrize("precision, gelu_new, relu_dropout", [("fp32", 20, 9), ("amp", 16, 5), ("bf16", 10, 5)])
def test_ffn_kinds_bytes_per_ffn(precision: str, gelu_new: int, relu_dropout: int) -> None:
    f = 1024

    def ffn(**shape: Any) -> float:
        return per_token(decoder(dropout=False, **shape), precision, flash=True)

    gelu = ffn() - ffn(ffn=0)
    assert ffn(ffn_kind="gelu_new") - ffn(ffn_kind="gelu_new", ffn=0) == gelu_new * f
    assert ffn(ffn_kind="relu", ffn_dropout=True) - ffn(ffn_kind="relu", ffn=0) == relu_dropout * f
    assert gelu == 2 * f * (4 if precision == "fp32" else 2)


def test_fp32_grouped_query_attention_falls_back_to_the_math_kernel() -> None:
    gqa = decoder(kv_heads=1, dropout=False, norm="rmsnorm", ffn_kind="swiglu")
    for precision in ("fp32", "bf16"):
        eager = layer_bytes(RunSpec(model=gqa, batch_size=2, seq_len=64, precision=precision))
        sdpa = layer_bytes(RunSpec(model=gqa, batch_size=2, seq_len=64, precision=precision, flash=True))
        assert (sdpa == eager) == (precision == "fp32")


def test_gpt2_sdpa_keeps_kv_copies_beside_the_pinned_qkv_output() -> None:
    h = 256
    fused = decoder(qkv_fused=True)
    pinned = decoder(qkv_fused=True, qkv_views_pinned=True)
    for precision, element in (("fp32", 4), ("amp", 2), ("bf16", 2)):
        assert per_token(pinned, precision, flash=True) - per_token(fused, precision, flash=True) == 2 * h * element
        assert per_token(pinned, precision) == per_token(fused, precision)  # eager is unaffected


def test_t5_position_bias_under_sdpa_is_priced_as_the_math_kernel_and_fused_at_the_low_end() -> None:
    """T5 under SDPA keeps what eager attention keeps (measured on an H200: gpu_h200.json); the low
    end is the fused kernel the fake-tensor harness chose, whose position bias is a
    batch-independent (heads, s, s) term per layer, plus a bool (s, s) mask in the causal decoder."""
    model = decoder(kind="encoder-decoder", layers=None, encoder_layers=2, decoder_layers=2, position="relative",
                    ffn_kind="relu", relative_kind="t5", norm="rmsnorm")
    s, a = 64, 4
    gaps = {}
    for b in (1, 3):
        run = RunSpec(model=model, batch_size=b, seq_len=s, precision="bf16", flash=True)
        sdpa, eager = estimate(run).terms["activations"], estimate(run.replace(flash=False)).terms["activations"]
        assert sdpa.bytes == eager.bytes and sdpa.low < eager.low
        assert "position bias" in sdpa.note and "position bias" not in eager.note
        gaps[b] = (eager.low - sdpa.low) / cm.ACTIVATIONS_LOW_FRACTION  # eager - fused, self-attention
    # eager - fused = b * (scores per sample) - (the fused kernel's bias and mask, no batch dimension)
    bias = (gaps[3] - 3 * gaps[1]) / 2
    expected = 2 * a * s * s * 2 + 2 * (a * s * s * 2 + s * s)  # encoder layers; decoder layers + bool mask
    assert abs(bias - expected) <= 4


def test_encoder_decoder_loss_keeps_log_softmax_in_the_logits_dtype() -> None:
    """T5/BART/Whisper call CrossEntropyLoss on the head output: no logits.float() upcast."""
    model = decoder(kind="encoder-decoder", layers=None, encoder_layers=2, decoder_layers=2, ffn_kind="relu")
    b, s, vocab = 2, 16, 1000
    per = {p: estimate(RunSpec(model=model, batch_size=b, seq_len=s, precision=p)).activation_parts["logits"]
           for p in ("fp32", "amp", "bf16")}
    assert per == {"fp32": b * s * vocab * 8, "amp": b * s * vocab * (2 + 4 + 2), "bf16": b * s * vocab * 4}


def test_vit_classifier_pins_the_normed_output_without_autocast() -> None:
    vit = decoder(kind="vision-transformer", vocab=None, max_positions=None, tied_embeddings=None, dropout=False,
                  image_size=32, patch_size=16, channels=3, num_classes=10)
    b, tokens, h = 2, 5, 256
    for precision, per_token_bytes, per_image in (("fp32", 4 + 4, 0), ("amp", 4, 2), ("bf16", 2 + 2, 0)):
        parts = estimate(RunSpec(model=vit, batch_size=b, precision=precision)).activation_parts
        assert parts["final_norm_and_head_input"] == b * tokens * (per_token_bytes * h + 8) + b * per_image * h
        assert ("patch_input" in parts) == (precision == "amp")  # the 16-bit cast; the batch is the input


def test_lm_head_logits_with_fp32_upcast_for_the_loss() -> None:
    b, s, vocab = 2, 16, 1000
    bf16 = estimate(RunSpec(model=decoder(), batch_size=b, seq_len=s, precision="bf16"))
    assert bf16.activation_parts["logits"] == b * s * vocab * (2 + 4 + 4)
    fp32 = estimate(RunSpec(model=decoder(), batch_size=b, seq_len=s, precision="fp32"))
    assert fp32.activation_parts["logits"] == b * s * vocab * (4 + 4)
    encoder = estimate(RunSpec(model=decoder(kind="encoder"), batch_size=b, seq_len=s))
    assert "logits" not in encoder.activation_parts


def test_checkpointing_keeps_layer_inputs_plus_one_layer() -> None:
    s, b, h = 64, 2, 256
    full = estimate(RunSpec(model=decoder(), batch_size=b, seq_len=s, precision="bf16"))
    ckpt = estimate(RunSpec(model=decoder(), batch_size=b, seq_len=s, precision="bf16", checkpointing=True))
    parts = ckpt.activation_parts
    assert parts["checkpointed_layer_inputs"] == 4 * s * b * h * 2
    assert parts["recomputed_layer"] == full.activation_parts["layers"] // 4
    assert parts["logits"] == full.activation_parts["logits"]
    assert ckpt.breakdown["activations"] < full.breakdown["activations"]


def test_encoder_decoder_has_cross_attention() -> None:
    model = decoder(kind="encoder-decoder", layers=None, encoder_layers=2, decoder_layers=2, position="relative",
                    ffn_kind="relu")
    result = estimate(RunSpec(model=model, batch_size=2, seq_len=32, precision="bf16"))
    parts = result.activation_parts
    assert {"encoder_layers", "decoder_layers", "decoder_cross_attention", "logits"} <= set(parts)
    assert parts["decoder_cross_attention"] > 0


def test_moe_pays_the_expert_mlp_per_routed_expert() -> None:
    dense = layer_bytes(RunSpec(model=decoder(), batch_size=1, seq_len=32, precision="bf16"))
    moe = layer_bytes(RunSpec(model=decoder(experts=8, experts_per_token=2), batch_size=1, seq_len=32,
                              precision="bf16"))
    # the ffn part twice, and the router keeps the input once plus one gathered copy per expert
    assert moe - dense == 4 * 32 * (2 * 1024 * 2 + 2 * 256 * 2)


def test_cnn_activations_scale_with_the_image_area() -> None:
    shape = {"family": "resnet", "image_size": 224, "num_classes": 1000, "activation_elements_per_sample": 10_000}
    model = ModelSpec(key="cnn", kind="cnn", params=P, source="test", shape=shape, aliases=())
    at_224 = estimate(RunSpec(model=model, batch_size=4, precision="fp32")).breakdown["activations"]
    at_448 = estimate(RunSpec(model=model, batch_size=4, image_size=448, precision="fp32")).breakdown["activations"]
    assert at_224 == 4 * 10_000 * 4
    assert at_448 == 4 * at_224


def test_native_image_size_is_recorded_never_silent() -> None:
    shape = {"family": "resnet", "image_size": 224, "num_classes": 1000, "activation_elements_per_sample": 10_000}
    model = ModelSpec(key="cnn", kind="cnn", params=P, source="test", shape=shape, aliases=())
    result = estimate(RunSpec(model=model, batch_size=4, precision="fp32"))
    assert result.run.image_size == 224
    assert result.run.sources["image_size"] == "default (native 224)"
    assert result.run.image_size_defaulted
    assert "image size not given: priced at cnn's native 224 px" in result.notes
    given = estimate(RunSpec(model=model, batch_size=4, image_size=224, precision="fp32",
                             sources={"image_size": "x.py:3"}))
    assert given.run.sources["image_size"] == "x.py:3" and not given.run.image_size_defaulted
    assert not any("image size" in note for note in given.notes)
    assert given.breakdown == result.breakdown
    # a language model has no native image size to fall back on
    assert "image_size" not in estimate(RunSpec(model=decoder(), batch_size=1, seq_len=8)).run.sources


def test_kv_cache_formula_and_gqa() -> None:
    assert kv_cache_bytes(layers=32, batch=8, kv_heads=8, head_dim=128, positions=1536, bytes_per_element=2) == (
        2 * 32 * 8 * 8 * 128 * 1536 * 2
    )

    def cache(kv_heads: Optional[int]) -> Optional[int]:
        run = RunSpec(model=decoder(kv_heads=kv_heads), batch_size=2, seq_len=100, generation=True,
                      max_new_tokens=28, precision="bf16")
        return estimate(run).breakdown["kv_cache"]

    assert cache(None) == 2 * 4 * 2 * 4 * 64 * 128 * 2
    assert cache(1) == cache(None) // 4  # grouped-query attention: a quarter of the heads


def test_kv_cache_unknown_without_max_new_tokens() -> None:
    run = RunSpec(model=decoder(), batch_size=2, seq_len=100, generation=True)
    term = estimate(run).terms["kv_cache"]
    assert term.bytes is None and term.low == 2 * 4 * 2 * 4 * 64 * 100 * 4 and term.high is None


def test_autocast_cache_excludes_embeddings_positions_and_norms() -> None:
    model = decoder()
    result = estimate(RunSpec(model=model, batch_size=1, seq_len=8, precision="amp"))
    positions = 512 * 256
    norms = (4 * 2 + 2) * 256 * 2  # two LayerNorms per layer plus final and spare, weight + bias
    assert result.breakdown["autocast_cache"] == (5_000_000 - positions - norms) * 2  # tied: the head is cast


def test_lora_trains_only_adapters() -> None:
    run = RunSpec(model=decoder(), batch_size=1, seq_len=8, lora=True, lora_rank=8, optimizer="adamw")
    h, f = 256, 1024
    adapters = 4 * 8 * ((h + h) * 4 + 2 * (h + f))
    assert lora_params(run) == adapters
    b = estimate(run).breakdown
    assert b["weights"] == 5_000_000 * 4 + adapters * 4
    assert b["gradients"] == adapters * 4
    assert b["optimizer_state"] == adapters * 8


# ------------------------------------------------------------------- unknowns, interval

def test_unknown_terms_are_none_and_widen_the_interval_without_bound() -> None:
    result = estimate(RunSpec(params=P, batch_size=2, seq_len=16), gpu(16))
    assert result.breakdown["activations"] is None
    assert result.breakdown["fragmentation"] is None
    assert "activations" in result.unknown_terms
    assert result.peak_is_lower_bound
    low, high = result.interval_bytes
    assert high is None and low <= result.peak_bytes
    assert result.fits is None  # not a guess: the known part fits, the rest is unknown
    assert result.verdict == "unknown"


def test_known_part_alone_over_capacity_does_not_fit() -> None:
    result = estimate(RunSpec(params=2_000_000_000, batch_size=2, seq_len=16), gpu(16))
    assert result.breakdown["activations"] is None
    assert result.fits is False


def test_missing_batch_or_cnn_figure_is_unknown_not_zero() -> None:
    assert estimate(RunSpec(model=decoder(), seq_len=16)).breakdown["activations"] is None
    shape = {"family": "resnet", "image_size": 224, "num_classes": 10, "activation_elements_per_sample": None}
    cnn = ModelSpec(key="cnn", kind="cnn", params=P, source="test", shape=shape, aliases=())
    assert estimate(RunSpec(model=cnn, batch_size=8)).breakdown["activations"] is None


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("flash, checkpointing", [(False, False), (True, False), (False, True)])
def test_interval_brackets_the_point(precision: str, flash: bool, checkpointing: bool) -> None:
    run = RunSpec(model=decoder(), batch_size=4, seq_len=64, precision=precision, flash=flash,
                  checkpointing=checkpointing)
    result = estimate(run, gpu(16))
    low, high = result.interval_bytes
    assert high is not None and low <= result.peak_bytes <= high
    assert result.peak_bytes == sum(v for v in result.breakdown.values() if v is not None)
    for term in result.terms.values():
        assert term.bytes is not None and term.high is not None
        assert term.low <= term.bytes <= term.high


def test_context_comes_from_the_gpu_or_a_documented_default() -> None:
    """The GPU's context (or the default), plus cuBLAS's workspaces: two when training (forward
    and autograd's backward thread), one for inference; plus NCCL's buffers when distributed."""
    run = RunSpec(model=decoder(), batch_size=1, seq_len=8)
    two, one = 2 * cm.CUBLAS_WORKSPACE_BYTES, cm.CUBLAS_WORKSPACE_BYTES
    assert estimate(run, gpu(context_mib=600)).breakdown["cuda_context"] == 600 * MIB + two
    assert estimate(run).breakdown["cuda_context"] == cm.DEFAULT_CUDA_CONTEXT_BYTES + two
    assert estimate(run.replace(inference=True)).breakdown["cuda_context"] == cm.DEFAULT_CUDA_CONTEXT_BYTES + one
    ddp = estimate(run.replace(world_size=2, sharding="ddp"), gpu(context_mib=600)).terms["cuda_context"]
    assert ddp.bytes == 600 * MIB + two + cm.NCCL_COMMUNICATOR_BYTES
    assert ddp.high == math.ceil(600 * MIB * cm.CUDA_CONTEXT_HIGH_FRACTION) + two + int(
        cm.NCCL_COMMUNICATOR_BYTES * cm.NCCL_COMMUNICATOR_HIGH_FRACTION)


def test_fragmentation_is_a_fraction_of_the_allocated_total() -> None:
    result = estimate(RunSpec(model=decoder(), batch_size=1, seq_len=8), gpu())
    allocated = sum(result.breakdown[name] or 0 for name in TERMS[:-2])
    assert result.breakdown["fragmentation"] == math.ceil(cm.FRAGMENTATION_FRACTION * allocated)


def test_fits_and_verdict() -> None:
    run = RunSpec(model=decoder(), batch_size=1, seq_len=8)
    assert estimate(run, gpu(16)).verdict == "fits" and estimate(run, gpu(16)).fits is True
    small = estimate(run, gpu(0.01))
    assert small.fits is False and small.verdict == "does-not-fit"
    assert estimate(run).fits is None and estimate(run).verdict == "no-gpu"


def test_every_term_is_an_int_or_none() -> None:
    for run in (RunSpec(model=decoder(), batch_size=3, seq_len=7, precision="amp"), RunSpec(params=12345)):
        for value in estimate(run).breakdown.values():
            assert value is None or type(value) is int


def test_runspec_check_rejects_impossible_values() -> None:
    with pytest.raises(RunSpecError, match="batch-size must be a positive integer"):
        RunSpec(batch_size=0).check()
    with pytest.raises(RunSpecError, match="precision must be one of"):
        RunSpec(precision="fp8").check()


# --------------------------------------------------------------------- calibration block

SOURCE = Path(cm.__file__).read_text(encoding="utf-8")
_TAG = re.compile(r"#: (PUBLISHED|MEASURED|ASSUMED)\b")
_UNIT = re.compile(r"_(BYTES|FRACTION|COUNT|ELEMENTS|COPIES|TOKEN)(_|$)|_PER_")


def _calibration_constants() -> Dict[str, str]:
    """Each module-level constant in the CALIBRATION block with the comment lines above it
    (a constant right under another, without a comment of its own, shares that one's)."""
    lines = SOURCE.splitlines()
    start = next(i for i, line in enumerate(lines) if "CALIBRATION" in line and line.startswith("# ="))
    end = next(i for i, line in enumerate(lines) if "end CALIBRATION" in line)
    found: Dict[str, str] = {}
    comment: List[str] = []
    previous = ""
    for line in lines[start + 1:end]:
        if line.startswith("#"):
            comment.append(line)
            continue
        match = re.match(r"^([A-Z][A-Z0-9_]*)\s*(:|=)", line)
        if match:
            previous = "\n".join(comment) or previous
            found[match.group(1)] = previous
            comment = []
        elif not line.strip():
            previous = ""
    return found


def test_every_calibration_constant_is_tagged_and_named_with_its_unit() -> None:
    constants = _calibration_constants()
    assert len(constants) >= 30
    tree = ast.parse(SOURCE)
    module_constants = {
        target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id.isupper() and not target.id.startswith("_")
    }
    # every upper-case numeric constant of the module lives in the block (the term lists and ZERO
    # are not numbers)
    not_numbers = {"TERMS", "TERM_LABELS", "ALLOCATED_TERMS", "ZERO", "LOGIT_PARTS", "UNCERTAIN_LABELS"}
    assert module_constants - set(constants) == not_numbers
    for name, comment in constants.items():
        assert _TAG.search(comment), f"{name} has no #: PUBLISHED/MEASURED/ASSUMED tag"
        assert _UNIT.search(name), f"{name} does not carry its unit"


def test_lora_in_the_models_dtype_has_no_fp32_adapters_or_input_casts() -> None:
    """``lora_dtype="model"`` (litgpt; PEFT with autocast_adapter_dtype=False): adapters, their
    gradients and AdamW's two states in bf16 (2 B), not fp32 (4 B), and no fp32 input casts: with
    every linear adapted, each adapter reads the input full training saves anyway, so activations
    equal full training's, less the frozen LM head's input (2 x 16 tokens x 256 wide x 2 B)."""
    base = RunSpec(model=decoder(), batch_size=2, seq_len=16, precision="bf16", optimizer="adamw")
    lora = base.replace(lora=True, lora_rank=8)
    adapters = cm.lora_params(lora)
    assert adapters == 147_456
    peft, model = estimate(lora).breakdown, estimate(lora.replace(lora_dtype="model")).breakdown
    assert (model["weights"], model["gradients"], model["optimizer_state"]) == (
        5_000_000 * 2 + adapters * 2, adapters * 2, 2 * adapters * 2)
    assert (peft["weights"], peft["gradients"], peft["optimizer_state"]) == (
        5_000_000 * 2 + adapters * 4, adapters * 4, 2 * adapters * 4)
    head_input = 2 * 16 * 256 * 2
    assert model["activations"] == estimate(base).breakdown["activations"] - head_input < peft["activations"]
    assert not cm.lora_casts_inputs(lora.replace(lora_dtype="model")) and cm.lora_casts_inputs(lora)


# ------------------------------------------------------------------ LoRA dropout and the LM head

#: decoder(): per layer the adapted inputs are q, k, v, o, up (256 wide each) and down (1024).
_ADAPTED_INPUT_WIDTH = 5 * 256 + 1024
#: what full training saves only for those layers' weight gradients: the shared q/k/v input
#: (256), the eager output projection's input (256), the MLP input (256), the GELU output (1024).
_SHARED_INPUT_ELEMENTS = 256 + 256 + 256 + 1024


def _lora_run(**changes: Any) -> RunSpec:
    base = dict(model=decoder(), batch_size=2, seq_len=16, precision="bf16", optimizer="adamw",
                lora=True, lora_rank=8, lora_dtype="model")
    base.update(changes)
    return RunSpec(**base)


def test_lora_dropout_keeps_each_adapters_dropout_output_and_mask() -> None:
    """lora_dropout > 0: each adapted layer keeps its dropout's output (bf16, 2 B) and bool mask
    (1 B) over its input width; the inputs the adapters read as they are (2 B) are no longer
    saved. 2 x 16 tokens x 4 layers: (2304 x 3 - 1792 x 2) x 128 = 425,984 bytes."""
    tokens_layers = 2 * 16 * 4
    plain, dropped = estimate(_lora_run()), estimate(_lora_run(lora_dropout=0.05))
    extra = (_ADAPTED_INPUT_WIDTH * 3 - _SHARED_INPUT_ELEMENTS * 2) * tokens_layers
    assert extra == 425_984
    assert dropped.breakdown["activations"] - plain.breakdown["activations"] == extra
    assert dropped.breakdown["logits"] == plain.breakdown["logits"]
    # the probability does not change the bytes; the default (0.0, PEFT's nn.Identity) keeps none
    assert estimate(_lora_run(lora_dropout=0.5)).breakdown == dropped.breakdown
    assert _lora_run().lora_dropout == 0.0
    # PEFT's fp32 casts are what the dropout reads and returns: only the masks are added
    peft = estimate(_lora_run(lora_dtype="fp32"))
    peft_dropped = estimate(_lora_run(lora_dtype="fp32", lora_dropout=0.1))
    assert peft_dropped.breakdown["activations"] - peft.breakdown["activations"] == _ADAPTED_INPUT_WIDTH * tokens_layers
    # under amp lora_A saves the 16-bit cast of the dropout's output; the per-projection casts
    # full training keeps (q, k, v each, the MLP input, the GELU output) go
    amp, amp_dropped = (estimate(_lora_run(precision="amp", lora_dropout=p)) for p in (0.0, 0.1))
    assert amp_dropped.breakdown["activations"] - amp.breakdown["activations"] == (
        _ADAPTED_INPUT_WIDTH * 3 - (3 * 256 + 256 + 256 + 1024) * 2) * tokens_layers == 294_912
    # only while training, only with LoRA
    assert estimate(_lora_run(lora_dropout=0.1, inference=True)).breakdown == estimate(
        _lora_run(inference=True)).breakdown
    assert estimate(_lora_run(lora=False, lora_dropout=0.1)).breakdown == estimate(_lora_run(lora=False)).breakdown


def test_lora_dropout_on_named_targets_prices_only_those_layers() -> None:
    """q_proj,v_proj with dropout: two 256-wide masks and outputs per layer; q and v read their
    dropouts' outputs and k is frozen, so the shared q/k/v input is no longer saved:
    (2 x 256 x 3 - 256 x 2) x 128 = 131,072 bytes."""
    targets = ("q_proj", "v_proj")
    plain = estimate(_lora_run(lora_targets=targets))
    dropped = estimate(_lora_run(lora_targets=targets, lora_dropout=0.05))
    assert dropped.breakdown["activations"] - plain.breakdown["activations"] == (2 * 256 * 3 - 256 * 2) * 128 == 131_072


def test_lora_dropout_out_of_range_is_refused() -> None:
    for bad in (-0.1, 1.0, 1.5, float("nan"), True, "0.1"):
        with pytest.raises(RunSpecError, match="^lora-dropout must be a probability"):
            _lora_run(lora_dropout=bad).check()
    _lora_run(lora_dropout=0).check()
    _lora_run(lora_dropout=0.999).check()


def test_lora_on_the_lm_head_prices_its_adapter_input_and_vocabulary_transients() -> None:
    """lm_head among the targets: r x (256 + 1000) more adapter parameters; the head's input is
    saved (for lora_A) where a frozen head saves none (32 tokens x 256 x 2 B = 16,384 bytes); the
    head's base output, branch and sum are vocabulary-wide at the head. In bf16 with adapters in
    the model's dtype that is 1000 x (2 + 2 + 2) B per position, under the loss's 1000 x (2 + 4 + 4):
    the logits term keeps the loss's."""
    targets = ("q_proj", "v_proj")
    frozen, head = _lora_run(lora_targets=targets), _lora_run(lora_targets=targets + ("lm_head",))
    assert cm.lora_head_adapted(head) and not cm.lora_head_adapted(frozen)
    assert lora_params(head) - lora_params(frozen) == 8 * (256 + 1000) == 10_048
    a, b = estimate(frozen).breakdown, estimate(head).breakdown
    assert b["activations"] - a["activations"] == 32 * 256 * 2
    assert b["logits"] == a["logits"] == 32 * 1000 * (2 + 4 + 4)
    assert b["gradients"] - a["gradients"] == 10_048 * 2
    # with dropout the head's adapter keeps its own output and mask in place of the input
    c = estimate(_lora_run(lora_targets=targets + ("lm_head",), lora_dropout=0.1)).breakdown
    d = estimate(_lora_run(lora_targets=targets, lora_dropout=0.1)).breakdown
    assert c["activations"] - d["activations"] == 32 * 256 * 3
    # in fp32 the loss keeps 1000 x (4 + 4) B per position, the adapted head 1000 x (4 + 4 + 4)
    fp32 = estimate(_lora_run(precision="fp32", lora_targets=targets + ("lm_head",))).breakdown
    assert fp32["logits"] == 32 * 1000 * 12
    assert estimate(_lora_run(precision="fp32", lora_targets=targets)).breakdown["logits"] == 32 * 1000 * 8
    # PEFT's fp32 adapters in bf16: branch and sum in fp32, 1000 x (2 + 4 + 4): equal to the loss's
    peft = estimate(_lora_run(lora_dtype="fp32", lora_targets=targets + ("lm_head",))).breakdown
    assert peft["logits"] == 32 * 1000 * 10


def test_all_linear_and_the_lm_head() -> None:
    """``all-linear,lm_head``: every block linear (as ``all-linear``) and the head."""
    assert parse_lora_targets("all-linear,lm_head") == ("all-linear", "lm_head")
    assert parse_lora_targets("all,LM_HEAD,lm_head") == ("all-linear", "lm_head")
    assert parse_lora_targets("q_proj,lm_head") == ("q_proj", "lm_head")
    every, with_head = _lora_run(), _lora_run(lora_targets=("all-linear", "lm_head"))
    with_head.check()
    assert lora_params(with_head) - lora_params(every) == 8 * (256 + 1000)
    # a frozen LM head keeps no input under LoRA: full training's activations less 32 x 256 x 2 B
    assert estimate(with_head).breakdown["activations"] - estimate(every).breakdown["activations"] == 32 * 256 * 2
    # a classifier task has no LM head to adapt
    assert lora_params(_lora_run(lora_targets=("lm_head",), task="seq-cls")) == 0
