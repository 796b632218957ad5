"""Measure what autograd keeps for backward (activations) per model family, as CUDA would keep it.

Regenerates ``activations_<family>.json``. Usage (torch 2.13 + transformers in a separate venv):

    python tests/calibration/measure_activations.py            # every family
    python tests/calibration/measure_activations.py gpt2 bert  # some families

Method (details in ``_harness.py``): every model is built from a config object (no weights are
downloaded) under ``FakeTensorMode`` on device ``cuda:0``, so nothing is allocated and the CUDA code
paths are taken. For each family, attention implementation (``eager``/``sdpa``) and precision
(``fp32``; ``amp`` = fp32 weights under CUDA fp16 autocast; ``bf16`` = weights cast to bf16, no
autocast) the script runs one training forward with its loss for several small *variants* (hidden
size h, FFN width f, heads a, key/value heads, vocabulary V varied independently), with 1 and 2
layers (3 for a linearity check), over a grid of batch b and sequence s. Per-layer bytes are
M(L=2) - M(L=1); the rest is the non-layer part (embeddings, final norm, head, loss). Both are fitted
by exact least squares on monomials of (b, s, h, f, a, kv, V); coefficients are snapped to simple
fractions and the fit is re-checked in integer arithmetic, so ``max_abs_residual_bytes`` is exact.
Finally the real configuration (e.g. GPT-2 124M, Llama-2-7B) is measured at full depth at two
points and compared with the fitted formula.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import torch
import transformers as tf

import _harness as H

PRECISIONS: dict[str, dict[str, Any]] = {
    "fp32": {"amp": None, "cast": None},
    "amp": {"amp": torch.float16, "cast": None},
    "bf16": {"amp": None, "cast": torch.bfloat16},
}
BATCHES = (2, 4)
SEQS = (64, 128, 256)

#: monomials a per-layer term may contain; "kv" = key/value width (kv_heads * head_dim)
#: ("balse": b*a*(ceil(s/32)*32 - s), the memory-efficient kernel pads its fp32 logsumexp to 32 rows)
LAYER_FEATURES = ("bsh", "bsf", "bskv", "bs", "bsa", "balse", "bssa", "bss", "ssa", "ss", "s", "b", "1")
#: monomials the non-layer part (embeddings, final norm, head, loss) may contain
REST_FEATURES = ("bsh", "bsf", "bskv", "bs", "bsa", "balse", "bsV", "bh", "bshd", "shd", "bss", "bssa", "ssa", "ss",
                 "s", "b", "1")


def monomials(b: int, s: int, v: dict[str, int]) -> dict[str, int]:
    """Feature values at batch b, sequence s (encoder-decoders: decoder length = s) and widths v."""
    h, f, a, kv, voc = v["h"], v["f"], v["a"], v["kv"], v["V"]
    return {"bsh": b * s * h, "bsf": b * s * f, "bskv": b * s * kv, "bs": b * s, "bsa": b * s * a,
            "bssa": b * s * s * a, "bss": b * s * s, "ss": s * s, "s": s, "b": b, "1": 1,
            "bsV": b * s * voc, "bh": b * h, "bshd": b * s * (h // a), "shd": s * (h // a),
            "balse": b * a * (-(-s // 32) * 32 - s), "ssa": s * s * a}


@dataclass
class Family:
    name: str
    kind: str  # "decoder" | "encoder" | "encdec" | "vision"
    build: Callable[[dict[str, int], int, str], torch.nn.Module]
    variants: list[dict[str, int]]
    real: dict[str, Any]
    impls: tuple[str, ...] = ("eager", "sdpa")
    heads: tuple[str, ...] = ("lm",)
    gqa: bool = False
    note: str = ""
    real_points: tuple[tuple[int, int], ...] = ((2, 512), (4, 1024))
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# builders: (variant, layers, attn_impl, head) -> model


def _gpt2(v: dict[str, int], L: int, impl: str, head: str = "lm") -> torch.nn.Module:
    cfg = tf.GPT2Config(n_embd=v["h"], n_inner=v["f"], n_head=v["a"], n_layer=L, vocab_size=v["V"],
                        n_positions=max(1024, v.get("pos", 0)), attn_implementation=impl)
    return tf.GPT2LMHeadModel(cfg)


def _opt(v: dict[str, int], L: int, impl: str, head: str = "lm") -> torch.nn.Module:
    cfg = tf.OPTConfig(hidden_size=v["h"], ffn_dim=v["f"], num_attention_heads=v["a"],
                       num_hidden_layers=L, vocab_size=v["V"], word_embed_proj_dim=v["h"],
                       max_position_embeddings=2048, attn_implementation=impl)
    return tf.OPTForCausalLM(cfg)


def _llama(v: dict[str, int], L: int, impl: str, head: str = "lm") -> torch.nn.Module:
    cfg = tf.LlamaConfig(hidden_size=v["h"], intermediate_size=v["f"], num_attention_heads=v["a"],
                         num_key_value_heads=v["kv_heads"], head_dim=v["h"] // v["a"],
                         num_hidden_layers=L, vocab_size=v["V"], max_position_embeddings=8192,
                         rope_theta=v.get("rope_theta", 10000.0),
                         tie_word_embeddings=bool(v.get("tie", 0)), attn_implementation=impl)
    return tf.LlamaForCausalLM(cfg)


def _qwen2(v: dict[str, int], L: int, impl: str, head: str = "lm") -> torch.nn.Module:
    cfg = tf.Qwen2Config(hidden_size=v["h"], intermediate_size=v["f"], num_attention_heads=v["a"],
                         num_key_value_heads=v["kv_heads"], num_hidden_layers=L, vocab_size=v["V"],
                         max_position_embeddings=32768, tie_word_embeddings=bool(v.get("tie", 0)),
                         use_sliding_window=False, attn_implementation=impl)
    return tf.Qwen2ForCausalLM(cfg)


def _bert_like(cfg_cls: Any, mlm: Any, cls: Any, extra: dict[str, Any]) -> Callable[..., Any]:
    def build(v: dict[str, int], L: int, impl: str, head: str = "mlm") -> torch.nn.Module:
        cfg = cfg_cls(hidden_size=v["h"], intermediate_size=v["f"], num_attention_heads=v["a"],
                      num_hidden_layers=L, vocab_size=v["V"], attn_implementation=impl,
                      num_labels=2, **extra)
        return (mlm if head == "mlm" else cls)(cfg)
    return build


def _distilbert(v: dict[str, int], L: int, impl: str, head: str = "mlm") -> torch.nn.Module:
    cfg = tf.DistilBertConfig(dim=v["h"], hidden_dim=v["f"], n_heads=v["a"], n_layers=L,
                              vocab_size=v["V"], attn_implementation=impl, num_labels=2)
    return (tf.DistilBertForMaskedLM if head == "mlm" else tf.DistilBertForSequenceClassification)(cfg)


def _t5(v: dict[str, int], L: int, impl: str, head: str = "lm") -> torch.nn.Module:
    enc, dec = (L, 1) if head == "enc" else (1, L) if head == "dec" else (L, L)
    cfg = tf.T5Config(d_model=v["h"], d_ff=v["f"], num_heads=v["a"], d_kv=v["kv"] // v["a"],
                      num_layers=enc, num_decoder_layers=dec, vocab_size=v["V"],
                      attn_implementation=impl, decoder_start_token_id=0, pad_token_id=0)
    return tf.T5ForConditionalGeneration(cfg)


def _vit(v: dict[str, int], L: int, impl: str, head: str = "cls") -> torch.nn.Module:
    cfg = tf.ViTConfig(hidden_size=v["h"], intermediate_size=v["f"], num_attention_heads=v["a"],
                       num_hidden_layers=L, image_size=v.get("image", 224), patch_size=16,
                       num_labels=v["V"], attn_implementation=impl)
    # trunc_normal_ reads values (.item()), which fake tensors do not have; the values are irrelevant
    import transformers.initialization as init

    table = init.TORCH_INIT_FUNCTIONS
    saved = table["trunc_normal_"]
    table["trunc_normal_"] = lambda tensor, **kwargs: tensor
    try:
        return tf.ViTForImageClassification(cfg)
    finally:
        table["trunc_normal_"] = saved


# ---------------------------------------------------------------------------------------------
# families; variants vary h, f, a, kv and V independently so each monomial is identifiable

_MHA = [
    {"h": 256, "f": 1024, "a": 4, "V": 1024},
    {"h": 256, "f": 768, "a": 8, "V": 1536},
    {"h": 384, "f": 1024, "a": 4, "V": 2048},
    {"h": 512, "f": 2048, "a": 8, "V": 1280},
    {"h": 320, "f": 640, "a": 10, "V": 1792},
    {"h": 384, "f": 1536, "a": 12, "V": 1024},
]
#: the same widths with grouped-query attention (kv heads below heads, one multi-query)
_GQA = [dict(v, kv_heads=k) for v, k in zip(_MHA, (2, 2, 1, 4, 5, 3))]


def _with_kv(variants: list[dict[str, int]]) -> list[dict[str, int]]:
    out = []
    for v in variants:
        v = dict(v)
        v.setdefault("kv_heads", v["a"])
        v["kv"] = v["kv_heads"] * (v["h"] // v["a"])
        out.append(v)
    return out


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family("gpt2", "decoder", _gpt2, _with_kv(_MHA),
               {"name": "gpt2", "h": 768, "f": 3072, "a": 12, "V": 50257, "L": 12},
               note="GPT2LMHeadModel; dropout 0.1 on embeddings, attention probs and residuals."),
        Family("opt", "decoder", _opt, _with_kv(_MHA),
               {"name": "facebook/opt-125m", "h": 768, "f": 3072, "a": 12, "V": 50272, "L": 12},
               note="OPTForCausalLM; dropout 0.1 on residuals, attention_dropout 0.0, ReLU FFN."),
        Family("llama", "decoder", _llama, _with_kv([dict(v, kv_heads=v["a"]) for v in _MHA]),
               {"name": "meta-llama/Llama-2-7b-hf", "h": 4096, "f": 11008, "a": 32, "kv_heads": 32,
                "V": 32000, "L": 32},
               note="LlamaForCausalLM, multi-head (kv heads = heads); SwiGLU, RMSNorm, RoPE, no dropout.",
               real_points=((2, 512), (2, 2048))),
        Family("llama-gqa", "decoder", _llama, _with_kv(_GQA),
               {"name": "meta-llama/Meta-Llama-3-8B", "h": 4096, "f": 14336, "a": 32, "kv_heads": 8,
                "V": 128256, "L": 32, "rope_theta": 500000.0},
               gqa=True, note="LlamaForCausalLM with grouped-query attention (num_key_value_heads < heads).",
               real_points=((2, 512), (2, 2048))),
        Family("qwen2", "decoder", _qwen2, _with_kv([dict(v, tie=1) for v in _GQA]),
               {"name": "Qwen/Qwen2-0.5B", "h": 896, "f": 4864, "a": 14, "kv_heads": 2, "V": 151936,
                "L": 24, "tie": 1},
               gqa=True, note="Qwen2ForCausalLM; GQA, q/k/v bias, tied embeddings, no dropout."),
        Family("bert", "encoder",
               _bert_like(tf.BertConfig, tf.BertForMaskedLM, tf.BertForSequenceClassification, {}),
               _with_kv(_MHA),
               {"name": "bert-base-uncased", "h": 768, "f": 3072, "a": 12, "V": 30522, "L": 12},
               heads=("mlm", "cls"), real_points=((8, 128), (32, 512)),
               note="BertForMaskedLM (labels at every position) and BertForSequenceClassification; "
                    "dropout 0.1 on embeddings, attention probs and residuals; no attention_mask."),
        Family("roberta", "encoder",
               _bert_like(tf.RobertaConfig, tf.RobertaForMaskedLM, tf.RobertaForSequenceClassification,
                          {"max_position_embeddings": 514, "pad_token_id": 1, "type_vocab_size": 1}),
               _with_kv(_MHA),
               {"name": "roberta-base", "h": 768, "f": 3072, "a": 12, "V": 50265, "L": 12},
               heads=("mlm", "cls"), real_points=((8, 128), (32, 512)),
               note="RobertaForMaskedLM / RobertaForSequenceClassification; as BERT."),
        Family("distilbert", "encoder", _distilbert, _with_kv(_MHA),
               {"name": "distilbert-base-uncased", "h": 768, "f": 3072, "a": 12, "V": 30522, "L": 6},
               heads=("mlm", "cls"), real_points=((8, 128), (32, 512)),
               note="DistilBertForMaskedLM / DistilBertForSequenceClassification; dropout 0.1, "
                    "attention_dropout 0.1."),
        Family("t5", "encdec", _t5,
               [dict(v, kv=v["h"]) for v in _MHA],
               {"name": "t5-small", "h": 512, "f": 2048, "a": 8, "kv": 512, "V": 32128, "L": 6},
               heads=("enc", "dec"), real_points=((8, 128), (16, 512)),
               note="T5ForConditionalGeneration; decoder length = encoder length = s; relative "
                    "position bias; ReLU FFN; dropout 0.1. 'enc' rows vary encoder depth (decoder 1 "
                    "layer), 'dec' rows vary decoder depth (encoder 1 layer)."),
        Family("vit", "vision", _vit,
               _with_kv([dict(v, V=1000) for v in _MHA]),
               {"name": "google/vit-base-patch16-224", "h": 768, "f": 3072, "a": 12, "V": 1000, "L": 12},
               heads=("cls",), real_points=((32, 224), (16, 384)),
               note="ViTForImageClassification, patch 16, 1000 labels, dropout 0.0; s = (image/16)^2 + 1 "
                    "(images 128, 192, 256 give s = 65, 145, 257; 224 gives 197)."),
    ]
}

IMAGE_FOR_SEQ = {65: 128, 145: 192, 257: 256, 197: 224, 577: 384}


# ---------------------------------------------------------------------------------------------


def _inputs(fam: Family, v: dict[str, int], b: int, s: int, head: str) -> dict[str, torch.Tensor]:
    if fam.kind == "vision":
        image = IMAGE_FOR_SEQ[s]
        # The saved-tensor bytes measured here do not depend on the values: no seed is needed.
        return {"pixel_values": torch.randn(b, 3, image, image),  # noqa: TP009
                "labels": torch.randint(0, v["V"], (b,))}
    ids = torch.randint(3, v["V"], (b, s))
    if fam.kind == "encoder" and head == "cls":
        return {"input_ids": ids, "labels": torch.randint(0, 2, (b,))}
    if fam.kind == "encdec":
        return {"input_ids": ids, "labels": torch.randint(3, v["V"], (b, s))}
    return {"input_ids": ids, "labels": ids}


def _forward(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    out = model(**inputs)
    _forward.held = out.logits  # type: ignore[attr-defined]
    return out.loss


def run_point(fam: Family, v: dict[str, int], L: int, b: int, s: int, impl: str, prec: str,
              head: str, device: str = "cuda") -> dict[str, Any]:
    spec = PRECISIONS[prec]
    H.SDPA_CHOICES.clear()
    vv = dict(v)
    if fam.kind == "vision":
        vv["image"] = IMAGE_FOR_SEQ[s]
    with H.fake_mode(device), H.patched_sdpa():
        prev = torch.get_default_dtype()
        # weights in bf16 as from_pretrained(..., dtype=torch.bfloat16) makes them: built under
        # that default dtype (buffers a model computes in fp32 explicitly stay fp32)
        torch.set_default_dtype(spec["cast"] or torch.float32)
        try:
            model = fam.build(vv, L, impl, head)
        finally:
            torch.set_default_dtype(prev)
        inputs = _inputs(fam, v, b, s, head)
        if spec["cast"] is not None and "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(spec["cast"])
        cap = H.measure(model, inputs, _forward, spec["amp"], device)
        held = _forward.held  # type: ignore[attr-defined]
        held_key = H.storage_key(held)
        logits_bytes = 0 if held_key in cap.rows else int(held.untyped_storage().nbytes())
        # the loss's fp32 copy of 16-bit logits lives until the loss returns: a transient, not
        # saved, for decoders (ForCausalLMLoss: logits.float(), consumed by cross_entropy, whose
        # log_softmax saves its own output). Other heads call CrossEntropyLoss on the 16-bit
        # logits; under amp autocast's fp32 cast for it is already among the saved tensors
        # (activations_t5.json amp bsV 6 = log_softmax 2 + the cast 4), so adding it here again
        # counted it twice (the T5 amp points were 0.83-0.90x before this was fixed).
        half = held.dtype in (torch.float16, torch.bfloat16)
        upcast = 4 * held.numel() if half and fam.kind == "decoder" else 0
    row = {"L": L, "b": b, "s": s, **cap.summary(), "held_logits_bytes": logits_bytes,
           "loss_transient_bytes": logits_bytes + upcast}
    row["sdpa_backends"] = sorted(set(H.SDPA_CHOICES))
    row["by_dtype"] = cap.by_dtype()
    return row


def _fit_exact(rows: list[dict[str, Any]], features: tuple[str, ...], target: str) -> dict[str, Any]:
    """Least squares, snapped to fractions, re-checked exactly; unused monomials are dropped."""
    used = [f for f in features if any(r[f] for r in rows)]
    # drop monomials that are collinear with earlier ones (e.g. bskv == bsh without GQA)
    basis: list[str] = []
    for f in used:
        trial = basis + [f]
        a = torch.tensor([[float(r[g]) for g in trial] for r in rows], dtype=torch.float64)
        a = a / a.abs().amax(dim=0).clamp(min=1)
        if int(torch.linalg.matrix_rank(a)) == len(trial):
            basis = trial
    scaled = []
    scale = {f: max(abs(r[f]) for r in rows) or 1 for f in basis}
    for r in rows:
        scaled.append({**{f: r[f] / scale[f] for f in basis}, target: r[target]})
    fit = H.lstsq_fit(scaled, basis, target)
    coeffs = {f: Fraction(fit["coefficients"][f] / scale[f]).limit_denominator(4096) for f in basis}
    worst = max(abs(r[target] - sum(coeffs[f] * r[f] for f in basis)) for r in rows)
    return {
        "coefficients": {f: _num(c) for f, c in coeffs.items() if c != 0},
        "max_abs_residual_bytes": float(worst),
        "points": len(rows),
        "degrees_of_freedom": len({tuple(r[f] for f in basis) for r in rows}) - len(basis),
        "monomials_tried": list(features),
        "collinear_dropped": [f for f in used if f not in basis],
    }


def _num(c: Fraction) -> Any:
    return int(c) if c.denominator == 1 else round(float(c), 9)


def measure_family(fam: Family, log: Callable[[str], None]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for impl in fam.impls:
        for prec in PRECISIONS:
            for head in fam.heads:
                key = f"{impl}/{prec}/{head}"
                t0 = time.time()
                layer_rows, rest_rows, raw = [], [], []
                for vi, v in enumerate(fam.variants):
                    for b in BATCHES:
                        for s in (SEQS if fam.kind != "vision" else (65, 145, 257)):
                            m1 = run_point(fam, v, 1, b, s, impl, prec, head)
                            m2 = run_point(fam, v, 2, b, s, impl, prec, head)
                            feats = monomials(b, s, v)
                            per_layer = m2["activation_bytes"] - m1["activation_bytes"]
                            layer_rows.append({**feats, "y": per_layer})
                            rest_rows.append({**feats, "y": m1["activation_bytes"] - per_layer})
                            raw.append({"variant": vi, "b": b, "s": s,
                                        "L1_bytes": m1["activation_bytes"],
                                        "L2_bytes": m2["activation_bytes"],
                                        "L2_weight_copy_bytes": m2["weight_copy_bytes"],
                                        "input_bytes": m1["input_bytes"],
                                        "held_logits_bytes": m1["held_logits_bytes"],
                                        "sdpa_backends": m2["sdpa_backends"]})
                # linearity in depth: L=3 minus L=2 equals the per-layer term
                v0, b0, s0 = fam.variants[0], BATCHES[-1], (SEQS[1] if fam.kind != "vision" else 145)
                m2 = run_point(fam, v0, 2, b0, s0, impl, prec, head)
                m3 = run_point(fam, v0, 3, b0, s0, impl, prec, head)
                m1 = run_point(fam, v0, 1, b0, s0, impl, prec, head)
                depth_ok = (m3["activation_bytes"] - m2["activation_bytes"]
                            == m2["activation_bytes"] - m1["activation_bytes"])
                layer_fit = _fit_exact(layer_rows, LAYER_FEATURES, "y")
                rest_fit = _fit_exact(rest_rows, REST_FEATURES, "y")
                # batch 1 is fitted apart: strided views let matmul skip copies there (see README)
                batch1 = []
                for s in (SEQS if fam.kind != "vision" else (65, 145, 257)):
                    b1 = [run_point(fam, v0, n, 1, s, impl, prec, head) for n in (1, 2)]
                    feats = monomials(1, s, v0)
                    per_layer = b1[1]["activation_bytes"] - b1[0]["activation_bytes"]
                    rest = b1[0]["activation_bytes"] - per_layer
                    batch1.append({"variant": 0, "s": s,
                                   "per_layer_excess_bytes": per_layer - int(predict(layer_fit, feats)),
                                   "non_layer_excess_bytes": rest - int(predict(rest_fit, feats))})
                results[key] = {
                    "per_layer": layer_fit,
                    "non_layer": rest_fit,
                    "depth_linear": depth_ok,
                    "batch1_excess": batch1,
                    "sdpa_backends": sorted({x for r in raw for x in r["sdpa_backends"]}),
                    "weight_copy_bytes_L2_first_variant": raw[0]["L2_weight_copy_bytes"],
                    "raw": raw,
                }
                log(f"  {fam.name} {key}: layer {layer_fit['coefficients']} "
                    f"resid={layer_fit['max_abs_residual_bytes']:.0f}  rest {rest_fit['coefficients']} "
                    f"resid={rest_fit['max_abs_residual_bytes']:.0f} depth_linear={depth_ok} "
                    f"({time.time() - t0:.1f}s)")
    return results


def predict(fit: dict[str, Any], feats: dict[str, int]) -> float:
    return sum(float(c) * feats[f] for f, c in fit["coefficients"].items())


def validate_real(fam: Family, results: dict[str, Any], log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Full-depth real configuration vs the fitted formula at fam.real_points (every head of an encoder)."""
    real = dict(fam.real)
    real.setdefault("kv_heads", real["a"])
    real.setdefault("kv", real["kv_heads"] * (real["h"] // real["a"]))
    out = []
    heads = fam.heads if fam.kind == "encoder" else fam.heads[:1]
    points = [(i, p, h, b, s) for i in fam.impls for p in ("amp", "fp32", "bf16") for h in heads
              for b, s in fam.real_points]
    for impl, prec, head, b, s in points:
        res = results[f"{impl}/{prec}/{head}"]
        seq = s if fam.kind != "vision" else (s // 16) ** 2 + 1
        L = real["L"]
        feats = monomials(b, seq, real)
        if fam.kind == "encdec":
            # M(E, D) = non_layer(enc rows, which hold one decoder layer) + E*enc + (D-1)*dec
            dec = results[f"{impl}/{prec}/dec"]
            m = run_point(fam, real, L, b, seq, impl, prec, "full")
            pred = (predict(res["non_layer"], feats) + L * predict(res["per_layer"], feats)
                    + (L - 1) * predict(dec["per_layer"], feats))
        else:
            m = run_point(fam, real, L, b, seq, impl, prec, head)
            pred = L * predict(res["per_layer"], feats) + predict(res["non_layer"], feats)
        out.append({"model": real["name"], "impl": impl, "precision": prec, "head": head,
                    "b": b, "s": seq, "layers": L,
                    "measured_activation_bytes": m["activation_bytes"],
                    "fitted_bytes": int(round(pred)),
                    "weight_copy_bytes": m["weight_copy_bytes"],
                    "held_logits_bytes": m["held_logits_bytes"],
                    "loss_transient_bytes": m["loss_transient_bytes"],
                    "sdpa_backends": m["sdpa_backends"]})
        log(f"  real {real['name']} {impl}/{prec}/{head} b={b} s={seq}: measured "
            f"{m['activation_bytes']} fitted {int(round(pred))}")
    return out


def main(argv: list[str]) -> None:
    names = argv or list(FAMILIES)
    H.install_fake_cuda()
    for name in names:
        fam = FAMILIES[name]
        t0 = time.time()
        print(f"{name}:", flush=True)
        results = measure_family(fam, lambda m: print(m, flush=True))
        validation = validate_real(fam, results, lambda m: print(m, flush=True))
        payload = {
            "version": 1,
            "kind": "activations",
            "family": name,
            "note": (
                f"MEASURED {H.today()} with torch {H.versions()['torch']}, transformers "
                f"{H.versions().get('transformers')}, by tests/calibration/measure_activations.py "
                "(method in _harness.py): saved-tensor bytes of one training forward with its loss, "
                "deduplicated by storage, parameters/buffers and tensors computed only from them "
                "(autocast weight copies) excluded, batch tensors excluded. CUDA behaviour obtained "
                "by running FakeTensorMode on device cuda:0 of a CPU-only build (fused dropout with "
                "bool masks, the CUDA autocast op lists through the AutocastCUDA key, SDPA kernel "
                "choice as torch 2.13 sdp_utils.cpp makes it on sm80+). No GPU was used. "
                + fam.note
            ),
            "tolerance": {"bytes_rel": 0.001, "model_vs_measured_rel": 0.05,
                          "why": "bytes_rel: the measured values are exact integers, 0.1% allows float "
                                 "round-off; model_vs_measured_rel: how far the cost model's generic "
                                 "per-element terms may sit from this family's measured bytes"},
            "units": "bytes; monomials of b=batch, s=sequence length, h=hidden, f=FFN width, "
                     "a=attention heads, kv=key/value width (kv_heads*head_dim), V=vocabulary",
            "variants": fam.variants,
            "real_config": fam.real,
            "precisions": {"fp32": "fp32 weights, no autocast",
                           "amp": "fp32 weights, CUDA autocast fp16",
                           "bf16": "weights cast to bf16, no autocast"},
            "results": results,
            "real_validation": validation,
        }
        path = H.write_fixture(f"activations_{name}", payload)
        print(f"  wrote {path.name} ({time.time() - t0:.0f}s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
