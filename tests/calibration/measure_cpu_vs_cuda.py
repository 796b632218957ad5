"""Show where a CPU measurement would differ from what CUDA keeps, per saved-tensor dtype.

Regenerates ``cpu_vs_cuda.json``. Usage: ``python tests/calibration/measure_cpu_vs_cuda.py``.

The same one-layer models (GPT-2 with dropout 0.1, Llama with SwiGLU and grouped-query attention)
and the same batch are measured four ways: FakeTensorMode on ``cpu`` (fp32; CPU autocast bf16,
the only CPU autocast dtype with its own op lists) and on ``cuda:0`` (fp32; CUDA autocast fp16),
eager and sdpa attention. The per-layer bytes (2 layers minus 1) are broken down by dtype, which
makes the three CPU/CUDA differences of issue 7 visible:

* dropout: CPU keeps the scaled noise tensor in the activation dtype (``at::_dropout_impl``), CUDA
  the fused kernel's bool mask (``native_dropout``), 1 byte per element instead of 4 (or 2);
* autocast: CUDA fp16 runs softmax/log_softmax/layer_norm/pow in fp32; CPU bf16 autocast has other
  lists (layer_norm, softmax run in bf16 ...), so a CPU-autocast figure is not the CUDA figure;
* sdpa: CPU picks its own flash kernel for fp32; CUDA picks flash (fp16, no mask) or
  memory-efficient (fp32, no GQA) or math (fp32 with GQA, which keeps s^2 scores).
"""
from __future__ import annotations

import sys
from typing import Any

import torch
import transformers as tf

import _harness as H


def _gpt2(L: int, impl: str) -> torch.nn.Module:
    return tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=256, n_inner=1024, n_head=4, n_layer=L, vocab_size=1024,
                                            attn_implementation=impl))


def _llama_gqa(L: int, impl: str) -> torch.nn.Module:
    return tf.LlamaForCausalLM(tf.LlamaConfig(hidden_size=256, intermediate_size=768, num_attention_heads=4,
                                              num_key_value_heads=2, num_hidden_layers=L, vocab_size=1024,
                                              attn_implementation=impl))


MODELS = {"gpt2 (h=256, f=1024, a=4, dropout 0.1)": _gpt2,
          "llama-gqa (h=256, f=768, a=4, kv_heads=2)": _llama_gqa}
MODES = {
    "cpu fp32": ("cpu", None),
    "cpu autocast bf16": ("cpu", torch.bfloat16),
    "cuda fp32": ("cuda", None),
    "cuda autocast fp16": ("cuda", torch.float16),
}
B, S = 4, 128


def _forward(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    return model(**inputs).loss


def per_layer(build: Any, impl: str, device: str, amp: torch.dtype | None) -> dict[str, Any]:
    caps = []
    for L in (1, 2):
        H.SDPA_CHOICES.clear()
        with H.fake_mode(device), H.patched_sdpa():
            model = build(L, impl)
            ids = torch.randint(3, 1024, (B, S))
            caps.append(H.measure(model, {"input_ids": ids, "labels": ids}, _forward, amp, device))
    d1, d2 = caps[0].by_dtype(), caps[1].by_dtype()
    by_dtype = {k: d2.get(k, 0) - d1.get(k, 0) for k in sorted(set(d1) | set(d2))}
    total = caps[1].summary()["activation_bytes"] - caps[0].summary()["activation_bytes"]
    return {"per_layer_bytes": total, "per_layer_by_dtype": {k: v for k, v in by_dtype.items() if v},
            "sdpa_backend": sorted(set(H.SDPA_CHOICES)) or None}


def main(argv: list[str]) -> None:
    out: dict[str, Any] = {}
    for name, build in MODELS.items():
        for impl in ("eager", "sdpa"):
            for mode, (device, amp) in MODES.items():
                r = per_layer(build, impl, device, amp)
                out.setdefault(name, {}).setdefault(impl, {})[mode] = r
                print(f"{name} {impl:5s} {mode:18s} {r['per_layer_bytes']:>10,} {r['per_layer_by_dtype']} "
                      f"{r['sdpa_backend']}", flush=True)
    payload = {
        "version": 1,
        "kind": "cpu-vs-cuda",
        "note": (
            f"MEASURED {H.today()} with torch {H.versions()['torch']}, transformers "
            f"{H.versions().get('transformers')}, by tests/calibration/measure_cpu_vs_cuda.py: per-layer "
            f"saved-tensor bytes (2 layers minus 1) at batch {B}, sequence {S}, by dtype, under "
            "FakeTensorMode on cpu and on cuda:0 (CPU-only build; CUDA paths as in _harness.py). "
            "Documents why the calibration uses the CUDA paths: a CPU figure overstates dropout "
            "masks and follows CPU autocast's op lists. No GPU was used."
        ),
        "tolerance": {"bytes_rel": 0.0, "why": "exact; descriptive fixture (not pinned to a constant)"},
        "batch_size": B,
        "seq_len": S,
        "models": out,
    }
    H.write_fixture("cpu_vs_cuda", payload)
    print("wrote cpu_vs_cuda.json")


if __name__ == "__main__":
    main(sys.argv[1:])
