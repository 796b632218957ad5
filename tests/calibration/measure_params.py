"""Count parameters with torch for every catalogue entry that can be built from a config.

Regenerates ``params.json``. Usage: ``python tests/calibration/measure_params.py``.

Each catalogue entry (``flake8_torch_preflight/estimator/data/models.json``) is rebuilt here from
its ``shape`` as the transformers config class of its architecture (no download: the widths come
from the catalogue, the architecture switches that the shape does not carry, such as Falcon's
multi-query parallel block or DeBERTa's relative attention, are written below per family) and
instantiated under ``FakeTensorMode`` so that 70B/405B models cost nothing. torchvision CNNs come
from ``measure_cnn.py``'s re-statement. For each the fixture records the model class counted,
``torch_params`` (``sum(p.numel() for p in model.parameters())``, tied weights once, as
``Module.parameters()`` deduplicates them), the catalogue's published ``params`` and
``count_params(spec)``, and their differences. An entry that cannot be built says why.
"""
from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any, Callable

import torch
import transformers as tf

import _harness as H
import measure_cnn

ROOT = H.HERE.parent.parent
sys.path.insert(0, str(ROOT))
from flake8_torch_preflight.estimator import catalogue  # noqa: E402  (the package, no torch)


def _common(sh: dict[str, Any]) -> dict[str, Any]:
    return {"hidden_size": sh["hidden"], "intermediate_size": sh["ffn"], "num_hidden_layers": sh["layers"],
            "num_attention_heads": sh["heads"], "vocab_size": sh["vocab"],
            "tie_word_embeddings": bool(sh["tied_embeddings"])}


def _kv(sh: dict[str, Any]) -> dict[str, Any]:
    out = {"num_key_value_heads": sh["kv_heads"] or sh["heads"]}
    if sh.get("head_dim"):
        out["head_dim"] = sh["head_dim"]
    return out


def _gpt2(sh: dict[str, Any]) -> Any:
    return tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=sh["hidden"], n_inner=sh["ffn"], n_layer=sh["layers"],
                                            n_head=sh["heads"], vocab_size=sh["vocab"],
                                            n_positions=sh["max_positions"]))


def _causal(cfg_cls: Any, model_cls: Any, **extra: Any) -> Callable[[dict[str, Any]], Any]:
    def build(sh: dict[str, Any]) -> Any:
        kw = {**_common(sh), **_kv(sh), "max_position_embeddings": sh["max_positions"], **extra}
        return model_cls(cfg_cls(**kw))
    return build


def _mixtral(sh: dict[str, Any]) -> Any:
    kw = {**_common(sh), **_kv(sh), "num_local_experts": sh["experts"],
          "num_experts_per_tok": sh["experts_per_token"]}
    return tf.MixtralForCausalLM(tf.MixtralConfig(**kw))


def _qwen3_moe(sh: dict[str, Any]) -> Any:
    kw = {**_common(sh), **_kv(sh), "moe_intermediate_size": sh["ffn"], "num_experts": sh["experts"],
          "num_experts_per_tok": sh["experts_per_token"], "decoder_sparse_step": 1, "mlp_only_layers": []}
    return tf.Qwen3MoeForCausalLM(tf.Qwen3MoeConfig(**kw))


def _gemma3_mm(sh: dict[str, Any]) -> Any:
    v = sh["vision"]
    text = {**_common(sh), **_kv(sh)}
    vision = {"hidden_size": v["hidden"], "intermediate_size": v["ffn"], "num_hidden_layers": v["layers"],
              "num_attention_heads": v["heads"], "image_size": v["image_size"], "patch_size": v["patch_size"],
              "num_channels": v["channels"], "vision_use_head": False}
    cfg = tf.Gemma3Config(text_config=text, vision_config=vision)
    return tf.Gemma3ForConditionalGeneration(cfg)


def _phi2(sh: dict[str, Any]) -> Any:
    kw = {**_common(sh), "max_position_embeddings": sh["max_positions"], "partial_rotary_factor": 0.4}
    return tf.PhiForCausalLM(tf.PhiConfig(**kw))


def _opt(sh: dict[str, Any]) -> Any:
    return tf.OPTForCausalLM(tf.OPTConfig(
        hidden_size=sh["hidden"], ffn_dim=sh["ffn"], num_hidden_layers=sh["layers"],
        num_attention_heads=sh["heads"], vocab_size=sh["vocab"], max_position_embeddings=sh["max_positions"],
        word_embed_proj_dim=sh.get("embedding_dim") or sh["hidden"],
        do_layer_norm_before=sh.get("final_norm", True)))


def _pythia(sh: dict[str, Any]) -> Any:
    return tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(
        **_common(sh), max_position_embeddings=sh["max_positions"], rotary_pct=0.25))


def _falcon(sh: dict[str, Any]) -> Any:
    return tf.FalconForCausalLM(tf.FalconConfig(
        hidden_size=sh["hidden"], num_hidden_layers=sh["layers"], num_attention_heads=sh["heads"],
        vocab_size=sh["vocab"], multi_query=sh["kv_heads"] == 1, parallel_attn=True, bias=False,
        new_decoder_architecture=False, ffn_hidden_size=sh["ffn"]))


def _bloom(sh: dict[str, Any]) -> Any:
    return tf.BloomForCausalLM(tf.BloomConfig(
        hidden_size=sh["hidden"], n_layer=sh["layers"], n_head=sh["heads"], vocab_size=sh["vocab"],
        tie_word_embeddings=bool(sh["tied_embeddings"])))


def _bert(sh: dict[str, Any]) -> Any:
    return tf.BertModel(tf.BertConfig(**_common(sh), max_position_embeddings=sh["max_positions"],
                                      type_vocab_size=sh.get("type_vocab", 2)),
                        add_pooling_layer=bool(sh.get("pooler", True)))


def _roberta(sh: dict[str, Any]) -> Any:
    return tf.RobertaModel(tf.RobertaConfig(
        **_common(sh), max_position_embeddings=sh["max_positions"] + sh.get("position_offset", 0),
        type_vocab_size=sh.get("type_vocab", 1), pad_token_id=1),
        add_pooling_layer=bool(sh.get("pooler", True)))


def _distilbert(sh: dict[str, Any]) -> Any:
    return tf.DistilBertModel(tf.DistilBertConfig(
        dim=sh["hidden"], hidden_dim=sh["ffn"], n_layers=sh["layers"], n_heads=sh["heads"],
        vocab_size=sh["vocab"], max_position_embeddings=sh["max_positions"]))


def _electra(sh: dict[str, Any]) -> Any:
    return tf.ElectraModel(tf.ElectraConfig(
        **_common(sh), embedding_size=sh["hidden"], max_position_embeddings=sh["max_positions"],
        type_vocab_size=sh.get("type_vocab", 2)))


def _deberta(sh: dict[str, Any]) -> Any:
    return tf.DebertaV2Model(tf.DebertaV2Config(
        **_common(sh), max_position_embeddings=sh["max_positions"], type_vocab_size=0,
        relative_attention=True, position_buckets=sh["relative_buckets"], pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm", share_att_key=True, max_relative_positions=-1,
        position_biased_input=False))


def _t5(sh: dict[str, Any]) -> Any:
    return tf.T5ForConditionalGeneration(tf.T5Config(
        d_model=sh["hidden"], d_ff=sh["ffn"], d_kv=sh["head_dim"] or sh["hidden"] // sh["heads"],
        num_heads=sh["heads"], num_layers=sh["encoder_layers"], num_decoder_layers=sh["decoder_layers"],
        vocab_size=sh["vocab"], relative_attention_num_buckets=sh.get("relative_buckets", 32),
        feed_forward_proj="gated-gelu" if sh["ffn_kind"] == "geglu" else "relu",
        tie_word_embeddings=bool(sh["tied_embeddings"])))


def _bart(sh: dict[str, Any]) -> Any:
    return tf.BartForConditionalGeneration(tf.BartConfig(
        d_model=sh["hidden"], encoder_ffn_dim=sh["ffn"], decoder_ffn_dim=sh["ffn"],
        encoder_layers=sh["encoder_layers"], decoder_layers=sh["decoder_layers"],
        encoder_attention_heads=sh["heads"], decoder_attention_heads=sh["heads"],
        vocab_size=sh["vocab"], max_position_embeddings=sh["max_positions"]))


def _whisper(sh: dict[str, Any]) -> Any:
    return tf.WhisperForConditionalGeneration(tf.WhisperConfig(
        d_model=sh["hidden"], encoder_ffn_dim=sh["ffn"], decoder_ffn_dim=sh["ffn"],
        encoder_layers=sh["encoder_layers"], decoder_layers=sh["decoder_layers"],
        encoder_attention_heads=sh["heads"], decoder_attention_heads=sh["heads"],
        vocab_size=sh["vocab"], num_mel_bins=sh["mel_bins"], max_target_positions=sh["max_positions"],
        max_source_positions=sh["encoder_max_positions"]))


def _vit(sh: dict[str, Any]) -> Any:
    return tf.ViTForImageClassification(tf.ViTConfig(
        hidden_size=sh["hidden"], intermediate_size=sh["ffn"], num_hidden_layers=sh["layers"],
        num_attention_heads=sh["heads"], image_size=sh["image_size"], patch_size=sh["patch_size"],
        num_labels=sh["num_classes"]))


def _clip(sh: dict[str, Any]) -> Any:
    t = sh["text"]
    text = {"hidden_size": t["hidden"], "intermediate_size": t["ffn"], "num_hidden_layers": t["layers"],
            "num_attention_heads": t["heads"], "vocab_size": t["vocab"],
            "max_position_embeddings": t["max_positions"]}
    vision = {"hidden_size": sh["hidden"], "intermediate_size": sh["ffn"], "num_hidden_layers": sh["layers"],
              "num_attention_heads": sh["heads"], "image_size": sh["image_size"],
              "patch_size": sh["patch_size"]}
    return tf.CLIPModel(tf.CLIPConfig(text_config=text, vision_config=vision,
                                      projection_dim=sh["projection_dim"]))


def _convnext(sh: dict[str, Any]) -> Any:
    return tf.ConvNextForImageClassification(tf.ConvNextConfig(
        depths=list(sh["depths"]), hidden_sizes=list(sh["widths"]), num_labels=sh["num_classes"]))


def _swin(sh: dict[str, Any]) -> Any:
    return tf.SwinForImageClassification(tf.SwinConfig(
        image_size=224, patch_size=4, embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24],
        window_size=7, num_labels=sh["num_classes"]))


#: (key prefix, builder, model class counted, note)
BUILDERS: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("gpt2", _gpt2, "GPT2LMHeadModel"),
    ("llama", _causal(tf.LlamaConfig, tf.LlamaForCausalLM), "LlamaForCausalLM"),
    ("tinyllama", _causal(tf.LlamaConfig, tf.LlamaForCausalLM), "LlamaForCausalLM"),
    ("smollm", _causal(tf.LlamaConfig, tf.LlamaForCausalLM), "LlamaForCausalLM"),
    ("mistral", _causal(tf.MistralConfig, tf.MistralForCausalLM), "MistralForCausalLM"),
    ("phi-3", _causal(tf.Phi3Config, tf.Phi3ForCausalLM), "Phi3ForCausalLM"),
    ("mixtral", _mixtral, "MixtralForCausalLM"),
    ("qwen2", _causal(tf.Qwen2Config, tf.Qwen2ForCausalLM), "Qwen2ForCausalLM"),
    ("qwen1.5", _causal(tf.Qwen2Config, tf.Qwen2ForCausalLM), "Qwen2ForCausalLM"),
    ("qwen3-30b-a3b", _qwen3_moe, "Qwen3MoeForCausalLM"),
    ("qwen3", _causal(tf.Qwen3Config, tf.Qwen3ForCausalLM), "Qwen3ForCausalLM"),
    ("gemma-2-", _causal(tf.Gemma2Config, tf.Gemma2ForCausalLM), "Gemma2ForCausalLM"),
    ("gemma-3-4b", _gemma3_mm, "Gemma3ForConditionalGeneration"),
    ("gemma-3", _causal(tf.Gemma3TextConfig, tf.Gemma3ForCausalLM), "Gemma3ForCausalLM"),
    ("gemma", _causal(tf.GemmaConfig, tf.GemmaForCausalLM), "GemmaForCausalLM"),
    ("phi-2", _phi2, "PhiForCausalLM"),
    ("opt", _opt, "OPTForCausalLM"),
    ("pythia", _pythia, "GPTNeoXForCausalLM"),
    ("falcon", _falcon, "FalconForCausalLM"),
    ("bloom", _bloom, "BloomForCausalLM"),
    ("bert", _bert, "BertModel"),
    ("roberta", _roberta, "RobertaModel"),
    ("distilbert", _distilbert, "DistilBertModel"),
    ("electra", _electra, "ElectraModel"),
    ("deberta", _deberta, "DebertaV2Model"),
    ("t5", _t5, "T5ForConditionalGeneration"),
    ("flan-t5", _t5, "T5ForConditionalGeneration"),
    ("bart", _bart, "BartForConditionalGeneration"),
    ("whisper", _whisper, "WhisperForConditionalGeneration"),
    ("clip", _clip, "CLIPModel"),
    ("vit", _vit, "ViTForImageClassification"),
    ("convnext", _convnext, "ConvNextForImageClassification (transformers)"),
    ("swin", _swin, "SwinForImageClassification (transformers)"),
]


def _builder(key: str) -> tuple[Callable[[dict[str, Any]], Any], str] | None:
    if key in measure_cnn.MODELS:
        return (lambda sh, k=key: measure_cnn.MODELS[k]()), "torchvision re-statement (measure_cnn.py)"
    for prefix, build, cls in BUILDERS:
        if key.startswith(prefix):
            return build, cls
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, dict) or hasattr(value, "items"):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _count(build: Callable[[dict[str, Any]], Any], shape: dict[str, Any]) -> int:
    """Build under FakeTensorMode; where an initialiser needs real values (``.item()`` in
    truncated-normal inits), on the meta device instead. Both allocate nothing."""
    try:
        with H.fake_mode("cpu"):
            return sum(p.numel() for p in build(shape).parameters())
    except Exception as exc:
        if "DataDependent" not in type(exc).__name__:
            raise
    with torch.device("meta"):
        return sum(p.numel() for p in build(shape).parameters())


#: every entry whose torch count differs from the catalogue or count_params, and why
DOCUMENTED_DIFFERENCES: dict[str, str] = {
    "flan-t5-base": (
        "transformers 5 always ties T5's lm_head to the shared embedding (configuration_t5.py: "
        "'we tie weights always and force it to be True'; tie_word_embeddings=False only turns off "
        "decoder-output scaling), so T5ForConditionalGeneration built with it has vocab*hidden = "
        "24,674,304 fewer parameters than the flan-t5 checkpoint, which stores a separate lm_head; "
        "the catalogue counts the checkpoint (untied), which transformers 4.x loads as such"),
    "flan-t5-large": (
        "as flan-t5-base: transformers 5 ties T5's lm_head; the checkpoint's separate lm_head is "
        "vocab*hidden = 32128*1024 = 32,899,072 parameters"),
}


def main(argv: list[str]) -> None:
    H.install_fake_cuda()
    rows: dict[str, Any] = {}
    for spec in catalogue.list_models():
        if argv and spec.key not in argv:
            continue
        t0 = time.time()
        entry: dict[str, Any] = {"kind": spec.kind, "catalogue_params": spec.params,
                                 "count_params": catalogue.count_params(spec)}
        found = _builder(spec.key)
        if found is None:
            entry.update(torch_params=None, why="no builder: architecture not in transformers or "
                         "torchvision not importable beside the CPU torch build")
        else:
            build, cls = found
            entry["model_class"] = cls
            try:
                entry["torch_params"] = _count(build, _plain(spec.shape))
            except Exception as exc:  # the failure is the finding; keep going
                entry.update(torch_params=None,
                             why=f"build failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                traceback.print_exc(limit=1)
        tp = entry.get("torch_params")
        if tp is not None:
            entry["torch_minus_catalogue"] = tp - spec.params
            cp = entry["count_params"]
            entry["torch_minus_count_params"] = None if cp is None else tp - cp
        rows[spec.key] = entry
        print(f"{spec.key:24s} torch={tp!s:>14} catalogue={spec.params:>14} count={entry['count_params']!s:>14} "
              f"{entry.get('why', '')} ({time.time() - t0:.1f}s)", flush=True)
    path = H.HERE / "params.json"
    old = json.loads(path.read_text()) if path.exists() and argv else {"models": {}}
    models = {**old.get("models", {}), **rows}
    payload = {
        "version": 1,
        "kind": "parameter-counts",
        "note": (
            f"MEASURED {H.today()} with torch {H.versions()['torch']}, transformers "
            f"{H.versions().get('transformers')}, by tests/calibration/measure_params.py: each catalogue "
            "entry rebuilt from its shape as the transformers config/model class named in model_class "
            "(torchvision CNNs from measure_cnn.py's re-statement) under FakeTensorMode, and counted with "
            "sum(p.numel() for p in model.parameters()) (tied weights once). The widths come from the "
            "catalogue, so this checks count_params and the published params against the real module "
            "structure, not the widths against the hub configs (no download). documented_differences "
            "lists every entry whose counts differ, with the reason."
        ),
        "tolerance": {"params_abs": 0,
                      "why": "parameter counts are exact; a difference must be listed in documented_differences"},
        "documented_differences": DOCUMENTED_DIFFERENCES,
        "models": dict(sorted(models.items())),
    }
    H.write_fixture("params", payload)
    print("wrote params.json")


if __name__ == "__main__":
    main(sys.argv[1:])
