"""Attribute one layer's saved bytes to its submodules and dtypes, for the real model widths.

Regenerates ``breakdown.json``. Usage: ``python tests/calibration/measure_breakdown.py [family ...]``.

For each family of ``measure_activations.py`` the real configuration's widths are built with two
layers; every saved storage of the second layer (``layers.1`` / ``h.1`` / ``layer.1`` ...) is
attributed to the innermost module whose forward was running when autograd first saved it
(global forward hooks), and grouped by (submodule path inside the layer, dtype). At batch 2 and
three sequence lengths each group is solved exactly as ``b*(per_token*s + per_token_per_key*s^2) +
constant``, so ``per_token`` is bytes per token and ``per_token_per_key`` bytes per token per key
(eager attention scores). This is the map from measurement to the cost model's per-element
constants (which tensor class, which width); see README.md.
"""
from __future__ import annotations

import re
import sys
from fractions import Fraction
from typing import Any

import _harness as H
import measure_activations as M

SEQS = (256, 512, 1024)
VISION_SEQS = (145, 197, 257)
ENCODER_SEQS = (128, 256, 512)  # BERT-style encoders have 512 positions
B = 2
_LAYER = re.compile(r"(^|\.)(layers|layer|h)\.1(\.|$)")
_T5_BLOCK = re.compile(r"(^|\.)block\.1(\.|$)")  # T5: block.N.layer.K, K = sublayer


def _groups(fam: M.Family, impl: str, prec: str, head: str, s: int) -> dict[str, int]:
    real = dict(fam.real)
    real.setdefault("kv_heads", real["a"])
    real.setdefault("kv", real["kv_heads"] * (real["h"] // real["a"]))
    spec = M.PRECISIONS[prec]
    import torch

    if fam.kind == "vision":
        real["image"] = M.IMAGE_FOR_SEQ[s]
    with H.fake_mode("cuda"), H.patched_sdpa():
        prev = torch.get_default_dtype()
        torch.set_default_dtype(spec["cast"] or torch.float32)
        try:
            model = fam.build(real, 2, impl, head)
        finally:
            torch.set_default_dtype(prev)
        inputs = M._inputs(fam, real, B, s, head)
        if spec["cast"] is not None and "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(spec["cast"])
        cap = H.measure(model, inputs, M._forward, spec["amp"], "cuda")
    out: dict[str, int] = {}
    for r in cap.rows.values():
        if r["category"] != "activation":
            continue
        m = (_T5_BLOCK if fam.kind == "encdec" else _LAYER).search(r["module"])
        if not m:
            continue
        suffix = r["module"][m.end():] or "(layer)"
        stack = ""
        if fam.kind == "encdec":
            stack = "decoder." if "decoder" in r["module"][: m.start() + 1] else "encoder."
        key = f"{stack}{suffix}|{r['dtype']}"
        out[key] = out.get(key, 0) + r["bytes"]
    return out


def _solve(ys: list[int], seqs: tuple[int, ...]) -> dict[str, Any]:
    # y = B*x1*s + B*x2*s^2 + x3, three equations, exact (Cramer's rule over fractions)
    rows = [[Fraction(B * s), Fraction(B * s * s), Fraction(1)] for s in seqs]

    def det(m: list[list[Fraction]]) -> Fraction:
        return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
                - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
                + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))

    d = det(rows)
    sol = []
    for i in range(3):
        mi = [row[:] for row in rows]
        for r, y in zip(mi, ys):
            r[i] = Fraction(y)
        sol.append(det(mi) / d)
    return {"per_token": M._num(sol[0]), "per_token_per_key": M._num(sol[1]), "constant": M._num(sol[2])}


def main(argv: list[str]) -> None:
    H.install_fake_cuda()
    names = argv or [n for n in M.FAMILIES]
    path = H.HERE / "breakdown.json"
    import json

    old = json.loads(path.read_text())["families"] if path.exists() and argv else {}
    fams: dict[str, Any] = dict(old)
    for name in names:
        fam = M.FAMILIES[name]
        seqs = VISION_SEQS if fam.kind == "vision" else ENCODER_SEQS if fam.kind == "encoder" else SEQS
        heads = ("full",) if fam.kind == "encdec" else fam.heads[:1]
        res: dict[str, Any] = {}
        for impl in fam.impls:
            for prec in M.PRECISIONS:
                for head in heads:
                    per_s = [_groups(fam, impl, prec, head, s) for s in seqs]
                    keys = sorted(set().union(*per_s))
                    table = {k: _solve([g.get(k, 0) for g in per_s], seqs) for k in keys}
                    total = _solve([sum(g.values()) for g in per_s], seqs)
                    res[f"{impl}/{prec}"] = {"layer_total": total, "by_module_dtype": table}
                    print(f"{name} {impl}/{prec}: {total}", flush=True)
        fams[name] = {"real_config": fam.real, "results": res}
    payload = {
        "version": 1,
        "kind": "activation-breakdown",
        "note": (
            f"MEASURED {H.today()} with torch {H.versions()['torch']}, transformers "
            f"{H.versions().get('transformers')}, by tests/calibration/measure_breakdown.py: the second "
            f"layer's saved storages of the real widths (2 layers built), batch {B}, attributed to the "
            "innermost running module and dtype, solved exactly per group as b*(per_token*s + "
            "per_token_per_key*s^2) + constant over three sequence lengths. Same CUDA-on-fake-tensor "
            "method as activations_*.json. No GPU was used."
        ),
        "tolerance": {"bytes_rel": 0.0, "why": "exact; descriptive (explains the fitted coefficients)"},
        "families": fams,
    }
    H.write_fixture("breakdown", payload)
    print("wrote breakdown.json")


if __name__ == "__main__":
    main(sys.argv[1:])
