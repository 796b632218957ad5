"""The estimator's model and GPU catalogues: schema, parameter counts, lookups, sizes."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from flake8_torch_preflight.estimator import catalogue
from flake8_torch_preflight.estimator.catalogue import (
    CatalogueError,
    GpuTarget,
    ModelSpec,
    count_params,
    find_gpu,
    find_model,
    gpu_from_memory,
    list_gpus,
    list_instances,
    list_models,
    parse_size,
)

MIB = 1024**2
GIB = 1024**3

KINDS = {"decoder", "encoder", "encoder-decoder", "vision-transformer", "cnn"}
TRANSFORMER_KINDS = KINDS - {"cnn"}

#: Fields every transformer shape carries (null where they do not apply).
TRANSFORMER_FIELDS = {
    "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "ffn_kind", "vocab", "max_positions",
    "position", "tied_embeddings", "dropout", "norm", "bias", "experts", "experts_per_token",
    "encoder_layers", "decoder_layers", "image_size", "patch_size", "channels", "num_classes",
}
#: Optional transformer fields documented in catalogue.py's docstring.
TRANSFORMER_OPTIONAL = {
    "qkv_bias", "key_bias", "mlp_bias", "qk_norm", "norms_per_layer", "final_norm", "embedding_norm",
    "embedding_dim", "position_offset", "type_vocab", "pooler", "lm_head_bias", "relative_buckets",
    "relative_kind", "relative_norm", "encoder_input", "mel_bins", "encoder_position",
    "encoder_max_positions", "cls_token", "patch_bias", "text", "projection_dim", "vision", "projector_norm",
    "attention_dropout", "attention_output_dropout", "softmax_fp32", "qkv_fused", "qkv_views_pinned",
    "ffn_dropout", "rmsnorm_upcast",
}
#: Optional transformer fields that are booleans when present.
TRANSFORMER_FLAGS = ("attention_dropout", "attention_output_dropout", "softmax_fp32", "qkv_fused",
                     "qkv_views_pinned", "ffn_dropout")
CNN_FIELDS = {"family", "image_size", "num_classes", "activation_elements_per_sample"}
CNN_OPTIONAL = {
    "block", "depths", "widths", "groups", "width_per_group", "stem_width", "stem_type", "deep_stem_width", "config",
    "batch_norm",
    "classifier", "growth_rate", "block_config", "init_features", "bn_size", "activation_bytes_per_element",
}
ENUMS = {
    "ffn_kind": {"gelu", "gelu_new", "relu", "swiglu", "geglu"},
    "position": {"learned", "rope", "relative", "alibi", "sinusoidal"},
    "norm": {"layernorm", "rmsnorm"},
}
GPU_FIELDS = {"name", "memory_mib", "usable_mib", "context_mib", "bf16", "aliases", "source",
              "usable_basis", "usable_source", "context_source"}
INSTANCE_FIELDS = {"gpu", "count", "provider", "source"}
URL = re.compile(r"^https://[^\s]+$")


def _json(name: str) -> Dict[str, Any]:
    text = (resources.files("flake8_torch_preflight.estimator") / "data" / name).read_text(encoding="utf-8")
    data: Dict[str, Any] = json.loads(text)
    return data


MODELS = _json("models.json")
GPUS = _json("gpus.json")


def _normal(name: str) -> str:
    return re.sub(r"-{2,}", "-", re.sub(r"[\s_]+", "-", name.strip().lower())).strip("-")


def _compact(name: str) -> str:
    return _normal(name).replace("-", "")


def _with_shape(spec: ModelSpec, **changes: Any) -> ModelSpec:
    shape = dict(spec.shape)
    shape.update(changes)
    return dataclasses.replace(spec, shape=shape)


# ------------------------------------------------------------------------- schema


def test_tables_are_versioned_and_explained() -> None:
    for table in (MODELS, GPUS):
        assert table["version"] == 1
        assert isinstance(table["note"], str) and len(table["note"]) > 100


def test_model_count_and_entry_schema() -> None:
    models = MODELS["models"]
    assert len(models) >= 60
    for key, entry in models.items():
        assert set(entry) <= {"aliases", "kind", "params", "source", "shape", "params_source", "params_note"}, key
        assert entry["kind"] in KINDS, key
        assert isinstance(entry["params"], int) and not isinstance(entry["params"], bool) and entry["params"] > 0, key
        assert URL.match(entry["source"]), key
        assert URL.match(entry["params_source"]), key
        assert isinstance(entry["aliases"], list) and all(isinstance(a, str) and a for a in entry["aliases"]), key


@pytest.mark.parametrize("key", sorted(MODELS["models"]))
def test_shape_fields_are_the_documented_ones(key: str) -> None:
    entry = MODELS["models"][key]
    shape = entry["shape"]
    if entry["kind"] == "cnn":
        assert CNN_FIELDS <= set(shape) <= CNN_FIELDS | CNN_OPTIONAL, set(shape) ^ CNN_FIELDS
        assert shape["activation_elements_per_sample"] is None or shape["activation_elements_per_sample"] > 0
        per_element = shape.get("activation_bytes_per_element")
        if per_element is not None:  # measured bytes per fp32/4 element: at least 2, below 4
            assert shape["activation_elements_per_sample"] is not None
            assert set(per_element) == {"amp", "bf16"}, per_element
            assert all(2.0 <= value < 4.0 for value in per_element.values()), per_element
        return
    assert TRANSFORMER_FIELDS <= set(shape), TRANSFORMER_FIELDS - set(shape)
    assert set(shape) <= TRANSFORMER_FIELDS | TRANSFORMER_OPTIONAL, set(shape) - TRANSFORMER_FIELDS
    for field, allowed in ENUMS.items():
        assert shape[field] in allowed, (field, shape[field])
    for field in ("tied_embeddings", "dropout", "bias"):
        assert shape[field] is None or isinstance(shape[field], bool), field
    towers = [shape] + [shape[t] for t in ("text",) if isinstance(shape.get(t), dict)]
    for tower in towers:
        for field in TRANSFORMER_FLAGS:
            assert isinstance(tower.get(field, False), bool), field
        assert tower.get("rmsnorm_upcast", "input") in {"input", "variance"}
        assert tower.get("rmsnorm_upcast") is None or tower["norm"] == "rmsnorm"
    if shape.get("qkv_views_pinned"):
        assert shape.get("qkv_fused"), "the pinned q, k, v views come from one fused projection"
    if entry["kind"] == "encoder-decoder":
        assert shape["layers"] is None and shape["encoder_layers"] > 0 and shape["decoder_layers"] > 0
    else:
        assert shape["layers"] > 0 and shape["encoder_layers"] is None and shape["decoder_layers"] is None
    if entry["kind"] == "vision-transformer":
        assert shape["image_size"] % shape["patch_size"] == 0
    else:
        assert shape["vocab"] > 0 and shape["max_positions"] > 0
    assert shape["hidden"] % shape["heads"] == 0 or shape["head_dim"] is not None
    kv_heads = shape["kv_heads"] if shape["kv_heads"] is not None else shape["heads"]
    assert shape["heads"] % kv_heads == 0, "query heads must split evenly over key/value heads"
    assert (shape["experts"] == 0) == (shape["experts_per_token"] == 0)
    assert shape["experts_per_token"] <= shape["experts"]


def test_gpu_and_instance_schema() -> None:
    gpus, instances = GPUS["gpus"], GPUS["instances"]
    assert len(gpus) >= 30 and len(instances) >= 40
    for key, entry in gpus.items():
        assert set(entry) == GPU_FIELDS, key
        for field in ("memory_mib", "usable_mib", "context_mib"):
            assert isinstance(entry[field], int) and not isinstance(entry[field], bool), (key, field)
        assert 0 < entry["usable_mib"] <= entry["memory_mib"], key
        assert 100 <= entry["context_mib"] <= 1024, key
        assert isinstance(entry["bf16"], bool), key
        assert URL.match(entry["source"]), key
        assert entry["usable_basis"] in {"measured", "measured-here", "device-query", "nvidia-smi", "spec"}, key
        if entry["usable_basis"] == "spec":
            assert entry["usable_mib"] == entry["memory_mib"] and entry["usable_source"] is None, key
        elif entry["usable_basis"] == "measured-here":  # by this repository's own GPU calibration
            fixture = entry["usable_source"].split()[1].rstrip(":")
            assert (Path(__file__).resolve().parent.parent.parent / fixture).is_file(), key
        else:
            assert URL.match(entry["usable_source"]), key
            # A driver never hands out more than the board has, nor less than 85% of it.
            assert entry["usable_mib"] >= 0.85 * entry["memory_mib"], key
        assert entry["context_source"], key
    for key, entry in instances.items():
        assert set(entry) == INSTANCE_FIELDS, key
        assert entry["gpu"] in gpus, key
        assert isinstance(entry["count"], int) and entry["count"] >= 1, key
        assert entry["provider"] in {"aws", "gcp", "azure"}, key
        assert URL.match(entry["source"]), key


def test_every_numeric_gpu_field_names_its_unit() -> None:
    for entry in GPUS["gpus"].values():
        for field, value in entry.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert field.endswith("_mib"), field
    for entry in GPUS["instances"].values():
        for field, value in entry.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert field == "count", field


def _names(entries: Dict[str, Dict[str, Any]], extra: str = "") -> List[Tuple[str, str]]:
    rows: List[Tuple[str, str]] = []
    for key, entry in entries.items():
        names = [key] + list(entry.get("aliases", ())) + ([entry[extra]] if extra else [])
        rows.extend((name, key) for name in names)
    return rows


@pytest.mark.parametrize("form", [_normal, _compact], ids=["exact", "loose"])
def test_model_names_are_unique_across_entries(form: Any) -> None:
    seen: Dict[str, str] = {}
    for name, key in _names(MODELS["models"]):
        owner = seen.setdefault(form(name), key)
        assert owner == key, f"{name!r} of {key} collides with {owner}"


@pytest.mark.parametrize("form", [_normal, _compact], ids=["exact", "loose"])
def test_gpu_and_instance_names_are_unique_across_entries(form: Any) -> None:
    seen: Dict[str, str] = {}
    rows = _names(GPUS["gpus"], "name") + _names(GPUS["instances"])
    rows += [(key[len("Standard_"):], key) for key in GPUS["instances"] if key.startswith("Standard_")]
    for name, key in rows:
        owner = seen.setdefault(form(name), key)
        assert owner == key, f"{name!r} of {key} collides with {owner}"


def test_data_is_read_as_package_data() -> None:
    source = inspect.getsource(catalogue)
    assert "__file__" not in source
    assert "resources.files" in source


# ---------------------------------------------------------------- coverage


@pytest.mark.parametrize("name", [
    "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
    "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b",
    "mistral-7b", "mixtral-8x7b", "qwen2-0.5b", "qwen2-1.5b", "qwen2-7b", "qwen2.5-0.5b", "qwen2.5-1.5b",
    "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen3-0.6b", "qwen3-8b", "gemma-2b", "gemma-7b", "gemma-2-2b",
    "gemma-2-9b", "gemma-2-27b", "gemma-3-1b", "gemma-3-4b", "phi-2", "phi-3-mini", "opt-125m", "opt-350m",
    "opt-1.3b", "opt-6.7b", "pythia-160m", "falcon-7b", "tinyllama-1.1b", "smollm-135m", "smollm-360m",
    "smollm-1.7b", "bert-base-uncased", "bert-large-uncased", "roberta-base", "roberta-large", "distilbert",
    "deberta-v3-base", "deberta-v3-large", "electra-base", "t5-small", "t5-base", "t5-large", "flan-t5-base",
    "flan-t5-large", "bart-base", "bart-large", "whisper-tiny", "whisper-base", "whisper-small", "vit_b_16",
    "vit_l_16", "clip-vit-b-32", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "convnext_tiny",
    "efficientnet_b0", "mobilenet_v2", "mobilenet_v3_large", "vgg16", "densenet121", "swin_t",
])
def test_required_models_are_listed(name: str) -> None:
    assert find_model(name).key


@pytest.mark.parametrize("name", [
    "v100-16gb", "v100-32gb", "a100-40gb", "a100-80gb", "a10", "a10g", "l4", "l40", "l40s", "t4", "h100-pcie",
    "h100-sxm", "h200", "b200", "gh200", "rtx-a6000", "rtx2080ti", "rtx3090", "rtx4090", "rtx5090", "mi210",
    "mi250x", "mi300x", "mi325x",
])
def test_required_gpus_are_listed(name: str) -> None:
    assert find_gpu(name).count == 1


@pytest.mark.parametrize("prefix", ["p3.", "p4d.", "p4de.", "p5.", "p5e.", "g4dn.", "g5.", "g6.", "g6e.",
                                    "a2-", "a3-", "g2-", "Standard_NC", "Standard_ND"])
def test_instance_families_are_listed(prefix: str) -> None:
    assert any(key.startswith(prefix) for key in GPUS["instances"])


# ------------------------------------------------------------ parameter counts


@pytest.mark.parametrize("spec", list_models(), ids=lambda spec: spec.key)
def test_count_params_matches_published_count(spec: ModelSpec) -> None:
    counted = count_params(spec)
    if spec.kind in TRANSFORMER_KINDS:
        assert counted is not None
    if counted is not None:
        assert abs(counted - spec.params) <= 0.01 * spec.params, (counted, spec.params)


@pytest.mark.parametrize("key, expected", [
    ("gpt2", 124_439_808),  # tied LM head, learned positions, biases, LayerNorm
    ("llama-2-70b", 68_976_648_192),  # GQA: 8 key/value heads of 64
    ("mixtral-8x7b", 46_702_792_704),  # 8 SwiGLU experts + router per layer
    ("qwen2.5-7b", 7_615_616_512),  # bias on q/k/v only
    ("gemma-2-9b", 9_241_705_984),  # head_dim 256 != hidden/heads, four norms per layer
    ("phi-2", 2_779_683_840),  # one shared norm per parallel block, LM-head bias
    ("opt-350m", 331_196_416),  # 512-wide embeddings projected to 1024, no final norm
    ("t5-small", 60_506_624),  # encoder-decoder, cross-attention, relative bias
    ("whisper-tiny", 37_760_640),  # audio convolutions, no k_proj bias
    ("vit-b-16", 86_567_656),  # torchvision's vit_b_16
    ("resnet50", 25_557_032),  # torchvision's resnet50
])
def test_count_params_exact_for_architecture_features(key: str, expected: int) -> None:
    assert count_params(find_model(key)) == expected


def test_count_params_follows_the_shape() -> None:
    gpt2 = find_model("gpt2")
    untied = _with_shape(gpt2, tied_embeddings=False)
    assert count_params(untied) == 124_439_808 + 50257 * 768
    llama = find_model("llama-2-7b")
    gqa = _with_shape(llama, kv_heads=8)
    assert count_params(gqa) == 6_738_415_616 - 32 * 2 * 4096 * (4096 - 8 * 128)
    gelu = _with_shape(llama, ffn_kind="gelu")
    assert count_params(gelu) == 6_738_415_616 - 32 * 4096 * 11008
    moe = _with_shape(llama, experts=4, experts_per_token=1)
    assert count_params(moe) == 6_738_415_616 + 32 * (3 * 3 * 4096 * 11008 + 4 * 4096)


def test_count_params_is_none_where_the_shape_cannot_say() -> None:
    assert count_params(find_model("efficientnet_b0")) is None
    assert count_params(find_model("swin_t")) is None
    broken = _with_shape(find_model("gpt2"), ffn_kind="mystery")
    assert count_params(broken) is None


def test_model_spec_is_frozen_and_shape_read_only() -> None:
    spec = find_model("gpt2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.params = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.shape["layers"] = 1  # type: ignore[index]


# ----------------------------------------------------------------------- lookups


@pytest.mark.parametrize("name, key", [
    ("gpt2", "gpt2"),
    ("GPT2", "gpt2"),
    ("openai-community/gpt2", "gpt2"),
    ("meta-llama/Llama-2-7b-hf", "llama-2-7b"),
    ("META-LLAMA/LLAMA-2-7B-HF", "llama-2-7b"),
    ("llama2-7b", "llama-2-7b"),
    ("Llama 2 7B", "llama-2-7b"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
    ("unsloth/Qwen3-8B", "qwen3-8b"),  # an unknown org in front of a known name
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
    ("google-bert/bert-base-uncased", "bert-base-uncased"),
    ("openai/whisper-small.en", "whisper-small"),
    ("resnet50", "resnet50"),
    ("timm/resnet50", "resnet50"),
    ("timm/resnet50.a1_in1k", "resnet50"),
    ("torchvision.models.resnet50", "resnet50"),
    ("models.resnet18", "resnet18"),
    ("microsoft/resnet-50", "resnet50"),
    ("vit_b_16", "vit-b-16"),
    ("timm/vit_base_patch16_224.augreg2_in21k_ft_in1k", "vit-b-16"),
    ("google/vit-base-patch16-224", "vit-b-16"),
    ("opt-1.3b", "opt-1.3b"),
])
def test_find_model(name: str, key: str) -> None:
    assert find_model(name).key == key


def test_find_model_never_drops_a_dot() -> None:
    with pytest.raises(CatalogueError, match="unknown model 'opt-13b'"):
        find_model("opt-13b")
    assert find_model("qwen2.5-7b").key != find_model("qwen2-7b").key


def test_unknown_model_message_names_close_matches() -> None:
    with pytest.raises(CatalogueError) as info:
        find_model("lama-2-7b")
    assert str(info.value) == (
        "unknown model 'lama-2-7b'; close matches: llama-2-7b, llama-2-70b, llama-3-70b. "
        "Give --params N or a known name (python -m flake8_torch_preflight models)"
    )


def test_unknown_model_without_close_matches() -> None:
    with pytest.raises(CatalogueError) as info:
        find_model("zzzz-qqqq")
    assert str(info.value) == (
        "unknown model 'zzzz-qqqq'; no close matches. "
        "Give --params N or a known name (python -m flake8_torch_preflight models)"
    )


def test_catalogue_error_is_a_one_line_value_error() -> None:
    for call in (lambda: find_model("x\ny"), lambda: find_gpu("nope\n"), lambda: parse_size("12\nGiB!")):
        with pytest.raises(ValueError) as info:
            call()
        assert isinstance(info.value, CatalogueError)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("name, key", [
    ("a100-80gb", "a100-80gb"),
    ("A100 80GB", "a100-80gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
    ("a100", "a100-40gb"),  # bare "a100" is the smaller part, so a fit is never overstated
    ("h100", "h100-sxm"),
    ("H100-80GB", "h100-sxm"),
    ("t4", "t4"),
    ("Tesla T4", "t4"),
    ("rtx4090", "rtx4090"),
    ("RTX 4090", "rtx4090"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ("rtx-a6000", "rtx-a6000"),
    ("A6000", "rtx-a6000"),
    ("mi300x", "mi300x"),
])
def test_find_gpu(name: str, key: str) -> None:
    target = find_gpu(name)
    entry = GPUS["gpus"][key]
    assert (target.key, target.gpu_key, target.count, target.instance) == (key, key, 1, None)
    assert target.memory_bytes == entry["memory_mib"] * MIB
    assert target.usable_bytes == entry["usable_mib"] * MIB
    assert target.context_bytes == entry["context_mib"] * MIB
    assert target.bf16 is entry["bf16"]
    assert target.source == entry["source"]


def test_per_device_figures_for_known_parts() -> None:
    assert find_gpu("t4").usable_bytes == 14909 * MIB  # 14.56 GiB reported by PyTorch
    assert find_gpu("a100-80gb").memory_bytes == 80 * GIB
    assert find_gpu("v100").bf16 is False and find_gpu("a100").bf16 is True
    assert find_gpu("h100").context_bytes > find_gpu("a100").context_bytes


@pytest.mark.parametrize("text, key, count, gpu", [
    ("8xh100-80gb", "8xh100-sxm", 8, "h100-sxm"),
    ("8x h100", "8xh100-sxm", 8, "h100-sxm"),
    ("4 x A100 80GB", "4xa100-80gb", 4, "a100-80gb"),
    ("2xrtx4090", "2xrtx4090", 2, "rtx4090"),
    ("1xt4", "1xt4", 1, "t4"),
])
def test_find_gpu_parses_device_counts(text: str, key: str, count: int, gpu: str) -> None:
    target = find_gpu(text)
    single = find_gpu(gpu)
    assert (target.key, target.count, target.gpu_key) == (key, count, gpu)
    assert target.usable_bytes == single.usable_bytes  # per-device, not summed
    assert target.memory_bytes == single.memory_bytes


@pytest.mark.parametrize("text, gpu, count, provider", [
    ("p4d.24xlarge", "a100-40gb", 8, "aws"),
    ("P4DE.24XLARGE", "a100-80gb", 8, "aws"),
    ("ml.p4d.24xlarge", "a100-40gb", 8, "aws"),  # SageMaker spelling
    ("p5.48xlarge", "h100-sxm", 8, "aws"),
    ("g4dn.xlarge", "t4", 1, "aws"),
    ("g5.48xlarge", "a10g", 8, "aws"),
    ("g6e.12xlarge", "l40s", 4, "aws"),
    ("a2-highgpu-1g", "a100-40gb", 1, "gcp"),
    ("a2-ultragpu-8g", "a100-80gb", 8, "gcp"),
    ("a3-highgpu-8g", "h100-sxm", 8, "gcp"),
    ("g2-standard-24", "l4", 2, "gcp"),
    ("Standard_ND96asr_v4", "a100-40gb", 8, "azure"),
    ("ND96asr_v4", "a100-40gb", 8, "azure"),
    ("Standard_NC24ads_A100_v4", "a100-80gb", 1, "azure"),
    ("Standard_ND96isr_H100_v5", "h100-sxm", 8, "azure"),
])
def test_find_gpu_maps_instances(text: str, gpu: str, count: int, provider: str) -> None:
    target = find_gpu(text)
    assert (target.gpu_key, target.count) == (gpu, count)
    assert target.instance is not None and target.key == target.instance
    assert GPUS["instances"][target.instance]["provider"] == provider
    assert target.usable_bytes == find_gpu(gpu).usable_bytes
    assert target.source == GPUS["instances"][target.instance]["source"]


def test_multiple_instances_multiply_the_device_count() -> None:
    target = find_gpu("2xp4d.24xlarge")
    assert (target.count, target.gpu_key, target.instance) == (16, "a100-40gb", "p4d.24xlarge")


def test_unknown_gpu_message_names_close_matches() -> None:
    with pytest.raises(CatalogueError) as info:
        find_gpu("h10")
    assert str(info.value) == (
        "unknown GPU or instance 'h10'; close matches: h100-sxm, a10. "
        "Give --gpu-memory SIZE or a known name (python -m flake8_torch_preflight gpus)"
    )
    with pytest.raises(CatalogueError, match=r"^unknown GPU or instance 'p4d\.24xl'; close matches: p4d\.24xlarge"):
        find_gpu("p4d.24xl")


def test_zero_devices_is_an_error() -> None:
    with pytest.raises(CatalogueError, match="at least 1"):
        find_gpu("0xh100")


def test_listings() -> None:
    gpus = list_gpus()
    assert [g.key for g in gpus] == list(GPUS["gpus"])
    assert all(isinstance(g, GpuTarget) and g.count == 1 for g in gpus)
    instances = list_instances()
    assert [row[0] for row in instances] == list(GPUS["instances"])
    for key, target, provider in instances:
        entry = GPUS["instances"][key]
        assert (target.gpu_key, target.count, provider) == (entry["gpu"], entry["count"], entry["provider"])
    assert [m.key for m in list_models()] == list(MODELS["models"])


# ------------------------------------------------------------------------ sizes


@pytest.mark.parametrize("text, expected", [
    ("48GiB", 48 * GIB),
    ("48 GiB", 48 * GIB),
    ("48gib", 48 * GIB),
    ("80GB", 80 * 10**9),
    ("500MiB", 500 * MIB),
    ("500MB", 500 * 10**6),
    ("1.5TiB", 3 * 1024**4 // 2),
    ("2TB", 2 * 10**12),
    ("64KiB", 64 * 1024),
    (" 0.5 GiB ", GIB // 2),
])
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", [
    "48", "-1GiB", "0GiB", "0.0MB", "abc", "", "GiB", "48 GiBs", "1e3GB", "48G", "4 8GiB",
])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(CatalogueError) as info:
        parse_size(text)
    message = str(info.value)
    assert "\n" not in message
    assert "KiB, MiB, GiB, TiB" in message and "KB, MB, GB, TB" in message


def test_gpu_from_memory() -> None:
    target = gpu_from_memory("48GiB")
    assert target.key == "custom-48gib"
    assert (target.count, target.memory_bytes, target.usable_bytes) == (1, 48 * GIB, 48 * GIB)
    assert target.context_bytes == catalogue.DEFAULT_CONTEXT_MIB * MIB
    assert gpu_from_memory("80 GB").key == "custom-80gb"
    with pytest.raises(CatalogueError):
        gpu_from_memory("48")


def test_the_t4_context_is_the_one_measured_on_a_t4() -> None:
    """highwaterlabs/torch-preflight measured 141,426,688 bytes on a Tesla T4 (CUDA 12.8) after
    CUDA, cuBLAS and cuDNN initialised: 135 MiB, not the 400 MiB published for other parts."""
    t4 = find_gpu("t4")
    assert t4.context_bytes == 135 * MIB
    assert 141_426_688 // MIB == 134


@pytest.mark.parametrize("name, key, expected", [
    # 49152·2048 tied embedding + 24 x (4·2048² attention + 3·2048·8192 SwiGLU + 2·2048 norms) + 2048
    ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "smollm2-1.7b",
     49152 * 2048 + 24 * (4 * 2048**2 + 3 * 2048 * 8192 + 2 * 2048) + 2048),
    # 2 x 151936·4096 (untied) + 32 x (3·(4096² + 4096) q/k/v with bias + 4096² o + 3·4096·11008 + 2·4096) + 4096
    ("Qwen/Qwen1.5-7B-Chat", "qwen1.5-7b", 2 * 151936 * 4096 + 32 * (3 * (4096**2 + 4096) + 4096**2
                                                                     + 3 * 4096 * 11008 + 2 * 4096) + 4096),
    # 250880·4096 tied + embedding LayerNorm + 30 x (fused qkv, dense, h->4h, 4h->h, all with bias, 2 LayerNorms)
    # + final LayerNorm
    ("bigscience/bloomz-7b1", "bloomz-7b1", 250880 * 4096 + 2 * 4096 + 30 * (
        4096 * 3 * 4096 + 3 * 4096 + 4096**2 + 4096 + 2 * 4096 * 16384 + 16384 + 4096 + 2 * 2 * 4096) + 2 * 4096),
    # ResNet-50 (25,557,032) with the 7x7 stem (3·64·49 + 2·64) replaced by 3-32-32-64 3x3 convs with BN
    ("timm/resnet50d", "resnet50d", 25_557_032 - (3 * 64 * 49 + 2 * 64)
     + (3 * 32 * 9 + 2 * 32) + (32 * 32 * 9 + 2 * 32) + (32 * 64 * 9 + 2 * 64)),
])
def test_added_entries_count_exactly(name: str, key: str, expected: int) -> None:
    """Hand-derived from each config.json (timm's model card for ResNet-50d: 25.6M)."""
    spec = find_model(name)
    assert spec.key == key
    assert count_params(spec) == spec.params == expected
    assert (spec.params, key) in {(1_711_376_384, "smollm2-1.7b"), (7_721_324_544, "qwen1.5-7b"),
                                  (7_069_016_064, "bloomz-7b1"), (25_576_264, "resnet50d")}
