"""The run descriptions of INTERFACE.md: --task, --quantization, --lora-targets, --trainable-params,
--model-config, and the report's assumed defaults. Bytes are checked against their definitions
(QLoRA's 4.127 bits per weight, LoRA's r·(d_in + d_out) per adapted layer) where they can be."""
from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from flake8_torch_preflight.estimator import cli
from flake8_torch_preflight.estimator import costmodel as cm
from flake8_torch_preflight.estimator.catalogue import CatalogueError, find_model, model_from_config
from flake8_torch_preflight.estimator.costmodel import block_linears, estimate, lora_params
from flake8_torch_preflight.estimator.run import (
    LORA_TARGET_NAMES,
    TASK_KINDS,
    TASKS,
    RunSpec,
    RunSpecError,
    parse_lora_targets,
    task_of_class,
)
from flake8_torch_preflight.estimator.solver import candidates, solve

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "fixtures" / "estimator" / "configs"
LLAMA = find_model("llama-2-7b")
#: Llama-2-7B's block linears: 32 x (4 x 4096² + 3 x 4096 x 11008), and its 4096 x 11008 MLP matrix.
LLAMA_LINEAR_WEIGHTS = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
LLAMA_LARGEST_LINEAR = 4096 * 11008
LLAMA_ALL_LINEAR_R16 = 32 * 16 * (4 * (4096 + 4096) + 3 * (4096 + 11008))
QLORA_RUN = ["--model", "llama-2-7b", "--lora", "--quantization", "nf4", "--batch-size", "1", "--seq-len", "512",
             "--precision", "bf16", "--optimizer", "adamw-8bit", "--gpu", "rtx-4090"]


def run_cli(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    status = cli.main(["estimate"] + argv)
    out, err = capsys.readouterr()
    return status, out, err


def run_json(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, Dict[str, Any]]:
    status, out, err = run_cli(argv + ["--format", "json"], capsys)
    assert err == "", err
    return status, json.loads(out)


def refused(argv: List[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a refused input prints, the same in text and JSON, nothing on stdout."""
    lines = set()
    for extra in ([], ["--format", "json"]):
        status, out, err = run_cli(argv + extra, capsys)
        assert (status, out) == (2, ""), (argv, out, err)
        assert err.endswith("\n") and err.count("\n") == 1 and "Traceback" not in err, err
        lines.add(err)
    assert len(lines) == 1
    return lines.pop()


# ================================================================================= --task

def test_task_decides_an_encoders_head() -> None:
    bert = find_model("bert-base-uncased")
    base = RunSpec(model=bert, batch_size=8, seq_len=128, precision="amp")
    masked, classifier = estimate(base.replace(task="masked-lm")), estimate(base.replace(task="seq-cls"))
    assert masked.breakdown == estimate(base.replace(lm_head=True)).breakdown
    assert classifier.breakdown == estimate(base.replace(lm_head=False)).breakdown
    assert estimate(base.replace(task="backbone")).breakdown == classifier.breakdown
    assert masked.breakdown["logits"] > 0 and classifier.breakdown["logits"] == 0
    # not given: the classifier is priced and the masked-LM head widens the high end only
    unknown = estimate(base)
    assert unknown.breakdown == classifier.breakdown
    assert unknown.terms["logits"].high == masked.terms["logits"].high


def test_a_decoder_without_an_lm_head_has_no_vocabulary_logits_and_no_head_matrix() -> None:
    base = RunSpec(model=LLAMA, batch_size=1, seq_len=512, precision="bf16")
    lm, cls = estimate(base.replace(task="causal-lm")), estimate(base.replace(task="seq-cls"))
    assert lm.breakdown == estimate(base).breakdown  # causal-lm is the default head of a decoder
    assert lm.breakdown["logits"] == 512 * 32000 * (2 + 4 + 4)  # bf16 output, fp32 upcast, fp32 log-softmax
    assert cls.breakdown["logits"] == 0
    assert cls.params == LLAMA.params - 32000 * 4096  # the untied lm_head is not there
    assert cls.breakdown["weights"] == 2 * (LLAMA.params - 32000 * 4096)
    assert any("131,072,000 parameters fewer than llama-2-7b's" in note for note in cls.notes)
    # a tied head is the embedding: nothing to drop
    qwen = find_model("qwen2-0.5b")
    assert estimate(RunSpec(model=qwen, batch_size=1, seq_len=8, task="seq-cls")).params == qwen.params
    # a backbone has no head input to keep either
    backbone = estimate(base.replace(task="backbone"))
    assert backbone.activation_parts["final_norm_and_head_input"] == (
        cls.activation_parts["final_norm_and_head_input"] - 512 * 4096 * 2)


def test_an_image_backbone_keeps_no_classifier_input() -> None:
    vit = RunSpec(model=find_model("vit-b-16"), batch_size=8, precision="amp")
    assert "final_norm_and_head_input" in estimate(vit.replace(task="image-cls")).activation_parts
    assert "final_norm_and_head_input" not in estimate(vit.replace(task="backbone")).activation_parts


def test_task_on_the_command_line_and_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    _, data = run_json(["--model", "bert-base-uncased", "--batch-size", "8", "--seq-len", "128", "--task",
                        "masked-lm"], capsys)
    assert (data["config"]["task"], data["config"]["lm_head"]) == ("masked-lm", True)
    assert data["config"]["sources"]["task"] == "command line"
    _, text, _ = run_cli(["--model", "bert-base-uncased", "--batch-size", "8", "--seq-len", "128", "--task",
                          "seq-cls"], capsys)
    assert "task seq-cls" in text.splitlines()[1]
    _, data = run_json(["--model", "gpt2", "--batch-size", "4", "--seq-len", "128"], capsys)
    assert data["config"]["task"] is None


@pytest.mark.parametrize("argv, line", [
    (["--model", "llama-2-7b", "--task", "masked-lm"],
     "estimate: task masked-lm does not apply to llama-2-7b, a decoder (it applies to: encoder)\n"),
    (["--model", "resnet50", "--task", "causal-lm"],
     "estimate: task causal-lm does not apply to resnet50, a cnn (it applies to: decoder, encoder-decoder, "
     "encoder)\n"),
    (["--model", "vit-b-16", "--task", "seq2seq"],
     "estimate: task seq2seq does not apply to vit-b-16, a vision-transformer (it applies to: encoder-decoder, "
     "decoder)\n"),
    (["--model", "gpt2", "--task", "seq-cls", "--generate", "--max-new-tokens", "8"],
     "estimate: generating needs a head over the vocabulary; task seq-cls has none\n"),
    (["--model", "gpt2", "--task", "lm"], None),
])
def test_a_task_the_model_cannot_have_is_refused(argv: List[str], line: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    got = refused(argv + ["--batch-size", "1", "--seq-len", "8"], capsys)
    if line is None:
        assert got.startswith("estimate: argument --task: invalid choice: 'lm'")
    else:
        assert got == line


def test_every_task_names_its_kinds_and_classes_map_to_tasks() -> None:
    assert set(TASKS) == set(TASK_KINDS)
    assert task_of_class("BertForMaskedLM", "encoder") == "masked-lm"
    assert task_of_class("LlamaForSequenceClassification", "decoder") == "seq-cls"
    assert task_of_class("transformers.AutoModel", "decoder") == "backbone"
    assert task_of_class("GPT2LMHeadModel", "decoder") == "causal-lm"
    assert task_of_class("T5ForConditionalGeneration", "encoder-decoder") == "seq2seq"
    assert task_of_class("BertForMaskedLM", "decoder") is None  # does not apply: not guessed
    assert task_of_class("GPT2DoubleHeadsModel", "decoder") is None


# ========================================================================= --quantization

def _weights(quantization: str, precision: str = "bf16") -> cm.Term:
    run = RunSpec(model=LLAMA, batch_size=1, seq_len=512, precision=precision, optimizer="adamw-8bit", lora=True,
                  quantization=quantization)
    return estimate(run).terms["weights"]


def test_nf4_weights_are_4127_bits_per_block_weight_with_double_quantization() -> None:
    """QLoRA §3: 4 bits + 8/64 + 32/(64·256) = 4.127 bits per weight; bitsandbytes' default
    without double quantization 4 + 32/64 = 4.5 (the high end)."""
    assert sum(linear.elements for linear in block_linears(LLAMA)) == LLAMA_LINEAR_WEIGHTS
    rest = LLAMA.params - LLAMA_LINEAR_WEIGHTS  # embeddings, LM head, norms: bf16
    adapters = LLAMA_ALL_LINEAR_R16 * 4  # fp32
    transient = LLAMA_LARGEST_LINEAR * 2  # the largest layer dequantized to bf16
    bits = 4 + Fraction(8, 64) + Fraction(32, 64 * 256)
    assert float(bits) == pytest.approx(4.127, abs=5e-4)
    point = LLAMA_LINEAR_WEIGHTS * bits / 8 + rest * 2 + adapters + transient
    assert point.denominator == 1
    for mode in ("nf4", "fp4"):
        weights = _weights(mode)
        assert (weights.bytes, weights.low) == (point, point) == (4_115_677_184, 4_115_677_184)
        assert weights.high == LLAMA_LINEAR_WEIGHTS * Fraction(45, 80) + rest * 2 + adapters + transient
    assert 4_115_677_184 < _weights("none").bytes / 3


def test_int8_weights_are_a_byte_per_weight_and_an_fp32_scale_per_row() -> None:
    rows = 32 * (4 * 4096 + 2 * 11008 + 4096)  # q, k, v, o; gate, up; down
    rest = LLAMA.params - LLAMA_LINEAR_WEIGHTS
    expected = LLAMA_LINEAR_WEIGHTS + 4 * rows + rest * 2 + LLAMA_ALL_LINEAR_R16 * 4 + LLAMA_LARGEST_LINEAR * 2
    assert _weights("int8") == cm.Term(expected, expected, expected, _weights("int8").note)
    assert expected == 7_256_350_720


def test_quantized_weights_train_only_adapters_and_autocast_leaves_them_alone() -> None:
    run = RunSpec(model=LLAMA, batch_size=1, seq_len=512, precision="amp", lora=True, quantization="nf4")
    result = estimate(run)
    assert result.trainable_params == LLAMA_ALL_LINEAR_R16
    assert result.breakdown["gradients"] == LLAMA_ALL_LINEAR_R16 * 4
    # under amp the non-quantized weights stay fp32 and only they are cast
    full = estimate(run.replace(quantization="none"))
    assert full.terms["autocast_cache"].bytes - result.terms["autocast_cache"].bytes == LLAMA_LINEAR_WEIGHTS * 2


def test_quantized_weights_without_a_shape_are_bounded_not_guessed() -> None:
    run = RunSpec(params=7_000_000_000, batch_size=1, seq_len=8, precision="bf16", inference=True,
                  quantization="nf4")
    weights = estimate(run).terms["weights"]
    assert weights.bytes is None
    assert weights.high == 14_000_000_000 and weights.low == int(7_000_000_000 * (0.5 + 1 / 64 + 4 / 16384))


def test_quantization_freezes_the_base(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["--model", "llama-2-7b", "--quantization", "nf4", "--batch-size", "1", "--seq-len", "8"], capsys)
    assert line == ("estimate: nf4 weights are frozen: train LoRA adapters (--lora) or give what trains "
                    "(--trainable-params N), or price --inference\n")
    status, data = run_json(["--model", "llama-2-7b", "--quantization", "int8", "--inference", "--batch-size", "1",
                             "--seq-len", "8"], capsys)
    assert status == 0 and data["config"]["quantization"] == "int8" and data["breakdown"]["gradients"] == 0


def test_the_qlora_run_in_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    status, data = run_json(QLORA_RUN, capsys)
    assert status == 0 and data["fits"] is True
    assert data["config"]["quantization"] == "nf4"
    assert data["model"]["trainable_params"] == LLAMA_ALL_LINEAR_R16
    assert data["breakdown"]["weights"] == 4_115_677_184
    _, text, _ = run_cli(QLORA_RUN, capsys)
    assert text.splitlines()[1] == ("run: training, batch 1, seq 512, bf16, nf4 base weights, adamw-8bit, "
                                    "eager attention, LoRA rank 16")


def test_the_solver_offers_4bit_weights_only_where_the_base_is_frozen() -> None:
    lora = RunSpec(model=LLAMA, batch_size=1, seq_len=512, precision="bf16", optimizer="adamw-8bit", lora=True)
    labels = [c.label for c in candidates(lora, None)]
    assert "4-bit base weights (QLoRA)" in labels
    full = lora.replace(lora=False)
    assert "4-bit base weights (QLoRA)" not in [c.label for c in candidates(full, None)]
    assert "4-bit base weights (QLoRA)" not in [c.label for c in candidates(lora.replace(quantization="nf4"), None)]
    frozen = full.replace(trainable_params=1_000_000)
    assert "4-bit base weights (QLoRA)" in [c.label for c in candidates(frozen, None)]
    assert not any(c.group == "lora" for c in candidates(frozen, None))  # not a full fine-tune
    saving = {s.change: s for s in solve(estimate(lora)).savings}["4-bit base weights (QLoRA)"]
    assert saving.after.breakdown["weights"] == 4_115_677_184
    assert saving.saves_bytes > 9 * 1024**3


# ========================================================================= --lora-targets

def test_lora_targets_price_only_the_named_projections() -> None:
    run = RunSpec(model=LLAMA, lora=True)
    assert lora_params(run) == LLAMA_ALL_LINEAR_R16 == 39_976_960
    assert lora_params(run.replace(lora_targets=("q_proj", "v_proj"))) == 32 * 16 * 2 * (4096 + 4096) == 8_388_608
    assert lora_params(run.replace(lora_targets=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                 "down_proj"))) == LLAMA_ALL_LINEAR_R16
    # torchtune / Meta names
    assert lora_params(run.replace(lora_targets=("wq", "wv", "output_proj", "w1", "w2", "w3"))) == (
        32 * 16 * (3 * (4096 + 4096) + 3 * (4096 + 11008)))


def test_fused_and_family_names() -> None:
    gpt2 = RunSpec(model=find_model("gpt2"), lora=True)
    assert lora_params(gpt2) == 12 * 16 * ((768 + 3 * 768) + (768 + 768) + (768 + 3072) + (3072 + 768))
    assert lora_params(gpt2.replace(lora_targets=("c_attn",))) == 12 * 16 * (768 + 3 * 768) == 589_824
    assert lora_params(gpt2.replace(lora_targets=("c_proj",))) == 12 * 16 * ((768 + 768) + (3072 + 768))
    bert = RunSpec(model=find_model("bert-base-uncased"), lora=True)
    qv = 12 * 16 * 2 * (768 + 768)
    assert lora_params(bert.replace(lora_targets=("query", "value"))) == qv
    # BERT's dense: attention output, intermediate and output
    assert lora_params(bert.replace(lora_targets=("query", "value", "dense"))) == qv + 12 * 16 * (
        (768 + 768) + 2 * (768 + 3072))
    # GPT-NeoX's dense is the attention output only
    pythia = RunSpec(model=find_model("pythia-410m"), lora=True, lora_targets=("dense",))
    assert lora_params(pythia) == 24 * 16 * (1024 + 1024)
    # T5: q, v in self- and cross-attention; wo is the MLP's output
    t5 = RunSpec(model=find_model("t5-small"), lora=True)
    assert lora_params(t5.replace(lora_targets=("q", "v"))) == 16 * 2 * 512 * 2 * (6 + 6 * 2)
    assert lora_params(t5.replace(lora_targets=("wo",))) == 16 * (2048 + 512) * 12


def test_lora_casts_count_only_the_adapted_inputs() -> None:
    """PEFT keeps an fp32 cast of each adapted linear's input (16-bit weights): q and v cast the
    4096-wide normed input each."""
    run = RunSpec(model=LLAMA, batch_size=2, seq_len=256, precision="bf16", lora=True)
    without = estimate(run.replace(lora=False)).activation_parts["layers"]
    qv = estimate(run.replace(lora_targets=("q_proj", "v_proj"))).activation_parts["layers"]
    every = estimate(run).activation_parts["layers"]
    tokens = 2 * 256
    # the 16-bit inputs that only the frozen (or fp32-cast) linears kept are gone: the q/k/v input,
    # the output projection's input (eager attention), the MLP input and the down projection's
    frozen = 2 * (3 * 4096 + 11008)
    assert qv - without == 32 * tokens * (4 * (4096 + 4096) - frozen)
    assert every - without == 32 * tokens * (4 * (3 * 4096 + 4096 + 2 * 4096 + 11008) - frozen)


def test_frozen_linears_save_no_input_under_amp() -> None:
    """Under amp PEFT casts nothing (the input is fp32); the frozen k, o, gate, up and down
    projections no longer keep their 16-bit inputs: k's and gate's and up's autocast casts, the
    eager output projection's input and the 11008-wide SwiGLU product; q and v keep theirs."""
    run = RunSpec(model=LLAMA, batch_size=2, seq_len=256, precision="amp", lora=True,
                  lora_targets=("q_proj", "v_proj"))
    full = estimate(run.replace(lora=False, lora_targets=None)).activation_parts["layers"]
    qv = estimate(run).activation_parts["layers"]
    assert full - qv == 32 * 2 * 256 * 2 * (4096 + 4096 + 2 * 4096 + 11008)


def test_four_bit_lora_high_end_holds_the_inputs_old_bitsandbytes_saved() -> None:
    """bitsandbytes before 0.43.2 saved every 4-bit layer's input, cast to fp32: the high end of
    the activations adds 4 bytes per input element of every block linear (q, k, v, o, gate, up:
    4096 wide; down: 11008), times the activations' high fraction; the point does not move."""
    run = RunSpec(model=LLAMA, batch_size=1, seq_len=512, precision="bf16", flash=True, lora=True,
                  lora_targets=("q_proj", "v_proj"))
    plain, nf4 = estimate(run).terms["activations"], estimate(run.replace(quantization="nf4")).terms["activations"]
    assert nf4.bytes == plain.bytes
    extra = 32 * 512 * 4 * (6 * 4096 + 11008)
    assert nf4.high - plain.high == pytest.approx(cm.ACTIVATIONS_HIGH_FRACTION * extra, abs=2)


def test_lora_under_fsdp_prices_gradients_for_the_flat_parameters() -> None:
    """FSDP's flat parameters mix frozen base weights and adapters: the point is a bf16 gradient
    shard of every parameter, the low end the fp32 adapters' shard alone."""
    run = RunSpec(model=LLAMA, batch_size=1, seq_len=512, precision="bf16", lora=True, lora_rank=8,
                  lora_targets=("q_proj", "v_proj"), sharding="fsdp", world_size=4)
    adapters = 32 * 8 * 2 * (4096 + 4096)
    grads = estimate(run).terms["gradients"]
    assert grads.bytes == grads.high == math.ceil((6_738_415_616 + adapters) * 2 / 4)
    assert grads.low == adapters * 4 // 4
    assert estimate(run.replace(sharding="ddp", world_size=1)).breakdown["gradients"] == adapters * 4 * 2


#: litgpt tutorials/resource-tables.md (benchmarks/published lt-11): Llama 2 13B, LoRA r8 on query and
#: value, FSDP with per-block activation checkpointing, 1304 tokens; 35.57 GB on 4 x A100-40GB, and
#: "the same run on 2 x A100-40GB ran out of memory".
LLAMA13_FSDP_LORA = ["--model", "llama-2-13b", "--batch-size", "1", "--seq-len", "1304", "--precision", "bf16",
                     "--optimizer", "adamw", "--flash", "--lora", "8", "--lora-targets", "q_proj,v_proj",
                     "--checkpointing", "--sharding", "fsdp", "--lora-dtype", "model", "--lora-dropout", "0.05",
                     "--gpu", "a100-40gb"]


def test_the_fsdp_lora_run_that_ran_out_of_memory_no_longer_fits_the_whole_interval(
        capsys: pytest.CaptureFixture[str]) -> None:
    """On two GPUs the priced terms fit; the uncertain FSDP term (one bf16 copy of 13,015,864,320
    weights) widens the high end past the GPU: fits the point only, never "fits (the whole
    interval)". The point and the low end are what the priced terms give, with or without it."""
    status, data = run_json(LLAMA13_FSDP_LORA + ["--world-size", "2"], capsys)
    copy = 13_015_864_320 * 2
    assert data["uncertain_terms"] == {"fsdp_unexplained": {
        "bytes": None, "interval": [0, copy], "note": data["uncertain_terms"]["fsdp_unexplained"]["note"]}}
    assert data["unknown_terms"] == [] and data["peak_is_lower_bound"] is False
    assert data["peak_bytes"] == sum(data["breakdown"].values())
    priced_high = sum(high for _, high in data["breakdown_interval"].values())  # fragmentation's includes it
    assert data["interval_bytes"][1] == priced_high + copy
    # without the term (and fragmentation's share of it) the whole interval fit: 38.38 GiB of 39.50
    assert data["interval_bytes"][1] - copy * (1 + cm.FRAGMENTATION_HIGH_FRACTION) < data["gpu"]["usable_bytes"]
    assert (status, data["fits"], data["fits_interval"], data["verdict"]) == (0, True, False, "fits-point")
    _, text, _ = run_cli(LLAMA13_FSDP_LORA + ["--world-size", "2"], capsys)
    assert "FSDP, unexplained" in text and "uncertain" in text and "0 – 24.24 GiB in the high end only" in text
    assert "fits the point estimate, not the whole interval" in text
    _, zero3 = run_json([{"fsdp": "zero-3"}.get(a, a) for a in LLAMA13_FSDP_LORA] + ["--world-size", "2"], capsys)
    assert zero3["uncertain_terms"] == {}  # measured under FSDP only


@pytest.mark.parametrize("sharding, high", [("zero-3", 15_000_000_000 // 64 + 2 * 10**9), ("fsdp", 15 * 10**9)])
def test_sharded_weights_with_a_parameter_count_only(sharding: str, high: int) -> None:
    """No layer count: the point is the 1/64 shard (the ZeRO paper's 16 bytes / 64 per parameter
    for the model states); the gathered layers widen the high end, up to DeepSpeed's
    stage3_max_live_parameters (10^9 fp16 parameters) under ZeRO-3, the whole model under FSDP."""
    run = RunSpec(params=7_500_000_000, batch_size=1, seq_len=1024, precision="fp16", optimizer="adam",
                  sharding=sharding, world_size=64)
    weights = estimate(run).terms["weights"]
    assert (weights.low, weights.bytes, weights.high) == (234_375_000, 234_375_000, high)


def test_lora_targets_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model", "llama-2-7b", "--batch-size", "1", "--seq-len", "512", "--precision", "bf16"]
    _, targeted = run_json(argv + ["--lora-targets", "q_proj,v_proj"], capsys)  # implies --lora
    assert targeted["config"]["lora"] is True and targeted["config"]["lora_rank"] == 16
    assert targeted["config"]["lora_targets"] == ["q_proj", "v_proj"]
    assert targeted["model"]["trainable_params"] == 8_388_608
    _, every = run_json(argv + ["--lora", "--lora-targets", "all-linear"], capsys)
    assert every["config"]["lora_targets"] is None and every["model"]["trainable_params"] == 39_976_960
    _, ranked = run_json(argv + ["--lora", "8", "--lora-targets", "Q_PROJ, v_proj,q_proj"], capsys)
    assert ranked["config"]["lora_targets"] == ["q_proj", "v_proj"] and ranked["model"]["trainable_params"] == (
        8_388_608 // 2)
    _, text, _ = run_cli(argv + ["--lora-targets", "q_proj,v_proj"], capsys)
    assert text.splitlines()[1].endswith("LoRA rank 16 on q_proj, v_proj")


def test_unknown_lora_targets_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model", "gpt2", "--batch-size", "1", "--seq-len", "8"]
    line = refused(argv + ["--lora-targets", "q_proj,attn"], capsys)
    assert line == (f"estimate: argument --lora-targets: unknown LoRA target 'attn'; known: "
                    f"{', '.join(LORA_TARGET_NAMES)} (or all-linear)\n")
    assert refused(argv + ["--lora-targets", " , "], capsys).startswith(
        "estimate: argument --lora-targets: no LoRA target names in ' , '; known: q_proj, ")
    assert refused(argv + ["--lora-targets", "gate_proj"], capsys) == (
        "estimate: the LoRA targets gate_proj name no linear layer of gpt2 (a decoder whose gelu_new MLP has no "
        "gate projection)\n")
    with pytest.raises(RunSpecError, match="^unknown LoRA target 'x'"):
        parse_lora_targets("x")
    assert parse_lora_targets("all") is None


# ===================================================================== --trainable-params

def test_only_the_trainable_parameters_have_gradients_and_state(capsys: pytest.CaptureFixture[str]) -> None:
    run = RunSpec(model=LLAMA, batch_size=1, seq_len=512, precision="bf16", optimizer="adamw")
    frozen = estimate(run.replace(trainable_params=50_000_000))
    assert frozen.trainable_params == 50_000_000
    assert frozen.breakdown["weights"] == LLAMA.params * 2  # the frozen rest is still there
    assert frozen.breakdown["gradients"] == 50_000_000 * 2
    assert frozen.breakdown["optimizer_state"] == 50_000_000 * 2 * 2
    _, data = run_json(["--model", "llama-2-7b", "--batch-size", "1", "--seq-len", "512", "--precision", "bf16",
                        "--trainable-params", "50M"], capsys)
    assert data["model"]["trainable_params"] == 50_000_000 and data["breakdown"]["gradients"] == 100_000_000
    assert data["config"]["sources"]["trainable_params"] == "command line"
    # with LoRA, N is the adapters' count (fp32 adapters on top of the weights)
    lora = estimate(run.replace(lora=True, trainable_params=1_000_000))
    assert lora.breakdown["weights"] == LLAMA.params * 2 + 4_000_000 and lora.breakdown["gradients"] == 4_000_000


def test_more_trainable_parameters_than_the_model_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["--model", "gpt2", "--trainable-params", "1b", "--batch-size", "1", "--seq-len", "8"], capsys)
    assert line == "estimate: trainable-params 1,000,000,000 is more than the model's 124,439,808 parameters\n"
    assert refused(["--model", "gpt2", "--trainable-params", "0"], capsys).startswith(
        "estimate: argument --trainable-params: must be a parameter count from 1 to ")


# ======================================================================== --model-config

def test_a_config_prices_like_its_catalogue_twin(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CONFIGS / "llama-2-7b.json")
    argv = ["--batch-size", "1", "--seq-len", "512", "--precision", "bf16", "--gpu", "rtx-4090"]
    _, from_config = run_json(["--model-config", path] + argv, capsys)
    _, from_catalogue = run_json(["--model", "llama-2-7b"] + argv, capsys)
    assert from_config["model"] == {**from_config["model"], "name": "meta-llama/Llama-2-7b-hf",
                                    "params": 6_738_415_616, "source": f"config {path}"}
    assert from_config["breakdown"] == from_catalogue["breakdown"]
    assert from_config["config"]["task"] == "causal-lm"
    assert from_config["config"]["sources"]["task"] == "llama-2-7b.json architectures"


@pytest.mark.parametrize("name, twin, task", [("gpt2.json", "gpt2", "causal-lm"),
                                              ("bert-mlm.json", "bert-base-uncased", "masked-lm"),
                                              ("t5-small.json", "t5-small", "seq2seq")])
def test_configs_count_the_published_parameters(name: str, twin: str, task: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    spec = model_from_config(json.loads((CONFIGS / name).read_text()), name)
    assert (spec.params, spec.kind) == (find_model(twin).params, find_model(twin).kind)
    assert spec.origin == f"config {name}"
    argv = ["--batch-size", "2", "--seq-len", "64", "--precision", "amp"]
    _, data = run_json(["--model-config", str(CONFIGS / name)] + argv, capsys)
    _, catalogue = run_json(["--model", twin, "--task", task] + argv, capsys)
    assert data["config"]["task"] == task and data["breakdown"] == catalogue["breakdown"]


def test_a_decoder_outside_the_known_families_is_priced_as_llama_like() -> None:
    spec = model_from_config(json.loads((CONFIGS / "tiny-llama-like.json").read_text()), "tiny-llama-like.json")
    h, f, layers, vocab = 1024, 2816, 8, 32000
    kv = 4 * (1024 // 16)
    assert spec.params == vocab * h + layers * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + h  # tied
    assert "priced as" not in spec.source and "as Llama-like" in spec.source
    assert spec.key == "my_decoder (tiny-llama-like.json)"


@pytest.mark.parametrize("text, message", [
    ('{"model_type": "llama", "hidden_size": 64}',
     "missing num_hidden_layers (a decoder config needs num_hidden_layers, hidden_size, num_attention_heads, "
     "intermediate_size, vocab_size)"),
    ('{"hidden_size": 64}', "missing model_type (the family: llama, gpt2, bert, t5, ...)"),
    ('[1, 2]', "not a Hugging Face model config (a JSON object with model_type, num_hidden_layers, hidden_size, ...)"),
    ('{"model_type": "llama", "num_hidden_layers": "32", "hidden_size": 64}',
     "num_hidden_layers must be a positive integer, got '32'"),
    ('{"model_type": "bloom", "n_layer": 2}', "model_type 'bloom' is not a family the estimator can price"),
])
def test_bad_configs_are_one_line(text: str, message: str) -> None:
    with pytest.raises(CatalogueError) as caught:
        model_from_config(json.loads(text), "config.json")
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_bad_config_files_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--batch-size", "1", "--seq-len", "8"]
    missing = CONFIGS / "missing-layers.json"
    assert refused(["--model-config", str(missing)] + base, capsys) == (
        f"estimate: {missing}: missing num_hidden_layers (a decoder config needs num_hidden_layers, hidden_size, "
        "num_attention_heads, intermediate_size, vocab_size)\n")
    broken = tmp_path / "config.json"
    broken.write_text('{"model_type": "llama",\n "hidden_size": 64\n "x": 1}')
    assert refused(["--model-config", str(broken)] + base, capsys) == (
        f"estimate: {broken}: not valid JSON: Expecting ',' delimiter (line 3)\n")
    assert refused(["--model-config", str(tmp_path)] + base, capsys) == (
        f"estimate: {tmp_path}: is a directory, not a model config\n")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (1024 * 1024 + 1))
    assert refused(["--model-config", str(big)] + base, capsys) == (
        f"estimate: {big}: is 1,048,577 bytes, over the 1 MiB a model config may have\n")
    assert refused(["--model-config", str(tmp_path / "nope.json")] + base, capsys) == (
        f"estimate: cannot read {tmp_path / 'nope.json'}: No such file or directory\n")
    assert refused(["--model", "gpt2", "--model-config", str(missing)] + base, capsys) == (
        "estimate: give --model or --model-config, not both\n")


# ======================================================================== assumed defaults

def test_defaults_nobody_gave_are_marked_assumed(capsys: pytest.CaptureFixture[str]) -> None:
    _, text, _ = run_cli(["--model", "gpt2", "--batch-size", "4", "--seq-len", "128"], capsys)
    assert text.splitlines()[1] == "run: training, batch 4, seq 128, fp32 (assumed), adamw (assumed), eager attention"
    _, text, _ = run_cli(["--model", "gpt2", "--batch-size", "4", "--seq-len", "128", "--precision", "amp"], capsys)
    assert text.splitlines()[1] == "run: training, batch 4, seq 128, amp, adamw (assumed), eager attention"
    _, data = run_json(["--model", "gpt2", "--batch-size", "4", "--seq-len", "128"], capsys)
    assert data["config"]["sources"]["precision"] == data["config"]["sources"]["optimizer"] == "default"
