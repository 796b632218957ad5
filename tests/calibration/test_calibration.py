"""Calibration pins: the cost model against what ``tests/calibration/*.json`` measured.

Runs in the default test run without torch: it reads the JSON fixtures and imports the cost
model and the catalogue, nothing else. The fixtures are regenerated with torch by the
``measure_*.py`` scripts beside this file (``tox -e calibrate``); see README.md.

Three kinds of test:

* fixture discipline: every fixture has ``version``, a ``note`` saying how and with which
  versions it was measured, a ``tolerance``, and the script that regenerates it; every fit in
  it is exact (zero residual, spare degrees of freedom) and agrees with the full-depth models;
* parameter counts: torch's count of each catalogue entry equals the catalogue and
  ``count_params``, or the difference is the documented one;
* the cost model against the measurements: per-layer bytes per token, per-layer bytes per
  token per key (eager scores), logits bytes per position, CNN elements per sample, and the
  whole activation term at every measured point of the real models.

Where the cost model currently disagrees with a measurement, the case is listed in
``KNOWN_DISAGREEMENTS`` with the measured and modelled figures and is an ``xfail(strict=True)``:
the suite stays green, the disagreement stays visible, and once the constants are changed to
the measured values the case passes, the strict xfail fails, and the entry must be deleted.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from flake8_torch_preflight.estimator import catalogue, costmodel
from flake8_torch_preflight.estimator.run import RunSpec

HERE = Path(__file__).resolve().parent


def _load(name: str) -> Dict[str, Any]:
    return json.loads((HERE / name).read_text())


FIXTURES = sorted(p.name for p in HERE.glob("*.json"))
ACTIVATION_FIXTURES = sorted(n for n in FIXTURES if n.startswith("activations_") and n != "activations_cnn.json")

#: fixture name -> the script that regenerates it
SCRIPTS = {
    "activations_cnn.json": "measure_cnn.py",
    "params.json": "measure_params.py",
    "cpu_vs_cuda.json": "measure_cpu_vs_cuda.py",
    "breakdown.json": "measure_breakdown.py",
    "gpu_h200.json": "measure_gpu.py",
}

#: activation fixture family -> catalogue key of its real configuration
CATALOGUE_KEYS = {
    "gpt2": "gpt2",
    "opt": "opt-125m",
    "llama": "llama-2-7b",
    "llama-gqa": "llama-3-8b",
    "qwen2": "qwen2-0.5b",
    "bert": "bert-base-uncased",
    "roberta": "roberta-base",
    "distilbert": "distilbert-base-uncased",
    "t5": "t5-small",
    "vit": "vit-b-16",
}

#: how the measurement's labels map onto the cost model's RunSpec
PRECISION = {"fp32": "fp32", "amp": "amp", "bf16": "bf16"}
FLASH = {"eager": False, "sdpa": True}
#: the cost model prices encoders without an LM head, so they are compared with the
#: sequence-classification measurement
HEAD_FOR_KIND = {"decoder": "lm", "encoder": "cls", "encdec": "enc", "vision": "cls"}

#: ViT sequence length -> image size (patch 16, one class token)
VIT_IMAGE = {65: 128, 145: 192, 197: 224, 257: 256, 577: 384}

# ------------------------------------------------------------------------------------------------
# cases where the cost model and the measurement disagree today (strict xfail; see module doc)
#: case id -> why the case cannot pass, with the measured and modelled figures. Printed (figures
#: only) by ``python tests/calibration/test_calibration.py``; README.md explains each group.
#: (2026-12-01, costmodel.py as calibrated: 8 cases, in each the cost model matches the measurement;
#: 2026-11-30: the T5 loss-cast double count fixed in measure_activations.py; H200 cases added.)
KNOWN_DISAGREEMENTS: Dict[str, str] = {
    'point/t5/sdpa/amp/b16/s512/7':
        'priced as the math kernel the H200 run showed (the fused figure is the low end, inside the interval); '
        'cost model 9,681,469,440 vs measured 5,560,664,356 (1.741x)',
    'point/t5/sdpa/amp/b8/s128/6':
        'priced as the math kernel the H200 run showed (the fused figure is the low end, inside the interval); '
        'cost model 813,821,952 vs measured 691,314,980 (1.177x)',
    'point/t5/sdpa/bf16/b16/s512/11':
        'priced as the math kernel the H200 run showed (the fused figure is the low end, inside the interval); '
        'cost model 7,127,138,304 vs measured 4,214,292,770 (1.691x)',
    'point/t5/sdpa/bf16/b8/s128/10':
        'priced as the math kernel the H200 run showed (the fused figure is the low end, inside the interval); '
        'cost model 607,776,768 vs measured 523,018,530 (1.162x)',
    'point/t5/sdpa/fp32/b16/s512/9':
        'priced as the math kernel the H200 run showed (the fused figure is the low end, inside the interval); '
        'cost model 12,273,549,312 vs measured 6,999,310,628 (1.754x)',
    'point/t5/sdpa/fp32/b8/s128/8':
        'priced as the math kernel the H200 run showed (the fused figure is the low end, inside the interval); '
        'cost model 1,024,585,728 vs measured 867,737,892 (1.181x)',
    'fused/llama-gqa/sdpa/fp32/lm':
        'fp32 + GQA runs the math kernel (no flash in fp32, no GQA in mem-efficient): s^2 scores kept; '
        'measured 128, cost model 128 B/token/key',
    'fused/qwen2/sdpa/fp32/lm':
        'fp32 + GQA runs the math kernel (no flash in fp32, no GQA in mem-efficient): s^2 scores kept; '
        'measured 56, cost model 56 B/token/key',
    'fused/t5/sdpa/amp/dec':
        "priced as SDPA's math kernel (the H200 run: T5 under SDPA keeps eager-level bytes); "
        "the fake-tensor harness chose a fused kernel keeping only the s^2 bias: "
        "measured 17.000, cost model 112.000 bytes/token/key/layer",
    'fused/t5/sdpa/amp/enc':
        "priced as SDPA's math kernel (the H200 run: T5 under SDPA keeps eager-level bytes); "
        "the fake-tensor harness chose a fused kernel keeping only the s^2 bias: "
        "measured 16.000, cost model 56.000 bytes/token/key/layer",
    'fused/t5/sdpa/bf16/dec':
        "priced as SDPA's math kernel (the H200 run: T5 under SDPA keeps eager-level bytes); "
        "the fake-tensor harness chose a fused kernel keeping only the s^2 bias: "
        "measured 17.000, cost model 80.000 bytes/token/key/layer",
    'fused/t5/sdpa/bf16/enc':
        "priced as SDPA's math kernel (the H200 run: T5 under SDPA keeps eager-level bytes); "
        "the fake-tensor harness chose a fused kernel keeping only the s^2 bias: "
        "measured 16.000, cost model 40.000 bytes/token/key/layer",
    'fused/t5/sdpa/fp32/dec':
        "priced as SDPA's math kernel (the H200 run: T5 under SDPA keeps eager-level bytes); "
        "the fake-tensor harness chose a fused kernel keeping only the s^2 bias: "
        "measured 33.000, cost model 144.000 bytes/token/key/layer",
    'fused/t5/sdpa/fp32/enc':
        "priced as SDPA's math kernel (the H200 run: T5 under SDPA keeps eager-level bytes); "
        "the fake-tensor harness chose a fused kernel keeping only the s^2 bias: "
        "measured 32.000, cost model 72.000 bytes/token/key/layer",
    'gpu-phase/gpu_h200/flan-t5-base/b8/s512/bf16/sdpa/adamw':
        'zero_grad(set_to_none=True) freed 80 MiB more than the 222.9M bf16 gradients, which are exactly '
        '445.8 MB (summed p.grad on the H200): allocator block slack, larger than the tolerance here',
    'gpu-point/gpu_h200/deberta-v3-base/b16/s512/amp/eager/adamw':
        "DeBERTa's disentangled attention (content-to-position and position-to-content scores, s^2 per "
        'head) is not modelled: the forward keeps 9.93 GiB, 6.92 priced; 0.847x, inside the interval',
    'gpu-point/gpu_h200/vgg16/b64/s224/amp/-/adamw':
        'allocator, not tensors: max_memory_reserved is 41 % over the allocated peak (6.87 vs 4.88 GiB; '
        'the allocated level is 0.996x); 0.809x, inside the interval',
    'gpu-point/gpu_h200/distilbert-base-uncased/b32/s512/amp/sdpa/adamw/mlm':
        'allocator, not tensors: max_memory_reserved is 28 % over the allocated peak (the cost model prices '
        '10 %); the allocated peak is 0.906x; the whole peak 0.795x (inside the interval)',
    'gpu-point/gpu_h200/llama-3.2-1b/b2/s1024/fp32/sdpa/adamw':
        'over by 19 % (inside the interval): activations are 1.08x the forward kept bytes, and the fp32 AdamW '
        "step's foreach temporary (one exp_avg_sq copy, 4.6 GiB) did not all show in the measured peak",
    'gpu-point/gpu_h200/qwen2-0.5b/b16/s512/bf16/sdpa/adamw/generate512':
        "allocator, not tensors: generation's growing KV cache (torch.cat per token) left max_memory_reserved "
        '87 % over the allocated peak (2.49 vs 1.33 GiB; GPT-2 generating: 11 %), the cost model prices 10 %; '
        'inside the interval; 0.719x',
}


def _xfail_known(case_id: str) -> Any:
    if case_id in KNOWN_DISAGREEMENTS:
        return pytest.param(case_id, id=case_id,
                            marks=pytest.mark.xfail(strict=True, reason=KNOWN_DISAGREEMENTS[case_id]))
    return pytest.param(case_id, id=case_id)


# ------------------------------------------------------------------------------------------------
# fixture discipline


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_has_note_tolerance_and_script(name: str) -> None:
    data = _load(name)
    assert data.get("version") == 1
    note = data.get("note", "")
    assert "MEASURED" in note and "torch 2." in note, f"{name}: note must say MEASURED, how, and torch version"
    assert isinstance(data.get("tolerance"), dict) and data["tolerance"], f"{name}: no tolerance"
    script = SCRIPTS.get(name, "measure_activations.py")
    assert (HERE / script).is_file(), f"{name}: regenerating script {script} missing"
    assert script in note, f"{name}: note must name {script}"


def test_no_test_module_imports_torch() -> None:
    """Scripts that import torch are measure_*.py; nothing collected by pytest may import it."""
    for path in HERE.glob("*.py"):
        if path.name.startswith("measure_") or path.name == "_harness.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: List[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for n in names:
                assert n.split(".")[0] not in ("torch", "transformers", "_harness"), f"{path.name} imports {n}"


@pytest.mark.parametrize("name", ACTIVATION_FIXTURES)
def test_activation_fits_are_exact(name: str) -> None:
    data = _load(name)
    for key, res in data["results"].items():
        for part in ("per_layer", "non_layer"):
            fit = res[part]
            assert fit["max_abs_residual_bytes"] == 0, f"{name} {key} {part}: unexplained bytes"
            assert fit["degrees_of_freedom"] >= 1, f"{name} {key} {part}: fit not over-determined"
        assert res["depth_linear"], f"{name} {key}: layer 3 kept a different amount than layer 2"
    for v in data["real_validation"]:
        rel = data["tolerance"]["bytes_rel"]
        assert abs(v["fitted_bytes"] - v["measured_activation_bytes"]) <= rel * v["measured_activation_bytes"], v


# ------------------------------------------------------------------------------------------------
# parameter counts

PARAMS = _load("params.json")


@pytest.mark.parametrize("key", sorted(PARAMS["models"]))
def test_parameter_count(key: str) -> None:
    row = PARAMS["models"][key]
    spec = catalogue.find_model(key)
    assert row["catalogue_params"] == spec.params, f"{key}: catalogue changed since measured; re-run measure_params.py"
    torch_params = row.get("torch_params")
    if torch_params is None:
        pytest.skip(f"{key}: not built with torch ({row.get('why')})")
    documented = PARAMS["documented_differences"].get(key)
    counted = catalogue.count_params(spec)
    if documented is None:
        assert spec.params == torch_params, f"{key}: catalogue {spec.params:,} vs torch {torch_params:,}"
        if counted is not None:
            assert counted == torch_params, f"{key}: count_params {counted:,} vs torch {torch_params:,}"
    else:
        assert spec.params - torch_params == -row["torch_minus_catalogue"] != 0, documented
        if counted is not None:
            assert counted - torch_params == -row["torch_minus_count_params"], documented


def test_every_buildable_catalogue_entry_was_counted() -> None:
    measured = set(PARAMS["models"])
    missing = [m.key for m in catalogue.list_models() if m.key not in measured]
    assert not missing, f"re-run measure_params.py; not counted: {missing}"


# ------------------------------------------------------------------------------------------------
# the cost model against the measurements


def _family(name: str) -> Dict[str, Any]:
    return _load(f"activations_{name}.json")


def _kind(data: Dict[str, Any]) -> str:
    family = data["family"]
    if family == "t5":
        return "encdec"
    if family == "vit":
        return "vision"
    return "encoder" if family in ("bert", "roberta", "distilbert") else "decoder"


def _real_widths(data: Dict[str, Any]) -> Dict[str, int]:
    r = data["real_config"]
    kv_heads = r.get("kv_heads", r["a"])
    return {"h": r["h"], "f": r["f"], "a": r["a"], "kv": kv_heads * (r["h"] // r["a"]), "V": r["V"]}


def _measured(fit: Dict[str, Any], b: int, s: int, w: Dict[str, int]) -> float:
    hd = w["h"] // w["a"]
    mono = {"bsh": b * s * w["h"], "bsf": b * s * w["f"], "bskv": b * s * w["kv"], "bs": b * s,
            "bsa": b * s * w["a"], "bssa": b * s * s * w["a"], "bss": b * s * s, "ss": s * s, "s": s,
            "b": b, "1": 1, "bsV": b * s * w["V"], "bh": b * w["h"], "bshd": b * s * hd, "shd": s * hd,
            "balse": b * w["a"] * (-(-s // 32) * 32 - s), "ssa": s * s * w["a"]}
    return float(sum(float(c) * mono[m] for m, c in fit["coefficients"].items()))


def _run(spec: catalogue.ModelSpec, precision: str, flash: bool, b: int, s: int, vision: bool) -> RunSpec:
    if vision:
        return RunSpec(model=spec, batch_size=b, image_size=VIT_IMAGE[s], precision=precision, flash=flash)
    return RunSpec(model=spec, batch_size=b, seq_len=s, precision=precision, flash=flash)


def _model_acts(spec: catalogue.ModelSpec, precision: str, flash: bool, b: int, s: int, vision: bool,
                **shape: Any) -> Tuple[int, int, float]:
    if shape:
        spec = dataclasses.replace(spec, shape={**spec.shape, **shape})
    result = costmodel.estimate(_run(spec, precision, flash, b, s, vision))
    term, logits = result.terms["activations"], result.terms["logits"]  # measured: all the forward saved
    assert term.bytes is not None and logits.bytes is not None, term.note
    high = math.inf if term.high is None or logits.high is None else term.high + logits.high
    return term.bytes + logits.bytes, term.low + logits.low, high


def _layer_key(data: Dict[str, Any], head: str) -> str:
    if data["family"] == "t5":
        return "encoder_layers" if head == "enc" else "decoder_layers"
    return "layers"


def _layer_cases() -> Iterator[str]:
    for name in ACTIVATION_FIXTURES:
        data = _load(name)
        heads = ("enc", "dec") if data["family"] == "t5" else (HEAD_FOR_KIND[_kind(data)],)
        for key in data["results"]:
            impl, prec, head = key.split("/")
            if head in heads:
                yield f"{data['family']}/{impl}/{prec}/{head}"


def _per_layer(case: str) -> Tuple[Dict[str, float], Dict[str, float]]:
    """(measured, modelled) per-layer bytes per token and per token per key, real widths."""
    family, impl, prec, head = case.split("/")
    data = _family(family)
    w = _real_widths(data)
    fit = data["results"][f"{impl}/{prec}/{head}"]["per_layer"]
    vision = data["family"] == "vit"
    s1, s2 = (197, 577) if vision else (512, 1024)
    spec = catalogue.find_model(CATALOGUE_KEYS[family])
    layer_key = _layer_key(data, head)
    model, measured = [], []
    for s in (s1, s2):
        one = _model_acts(spec, PRECISION[prec], FLASH[impl], 1, s, vision, **{layer_key: 1})[0]
        two = _model_acts(spec, PRECISION[prec], FLASH[impl], 1, s, vision, **{layer_key: 2})[0]
        model.append(two - one)
        # the per-layer constant (RNG seed/offset, bytes) and the memory-efficient kernel's
        # logsumexp padding to 32 rows are left out: neither is a per-token cost
        coeffs = {k: v for k, v in fit["coefficients"].items() if k not in ("1", "balse")}
        measured.append(_measured({"coefficients": coeffs}, 1, s, w))

    def split(pl: List[float]) -> Dict[str, float]:
        quad = (pl[1] / s2 - pl[0] / s1) / (s2 - s1)
        return {"per_token": pl[0] / s1 - quad * s1, "per_token_per_key": quad}

    return split(measured), split(model)


LAYER_CASES = list(_layer_cases())


@pytest.mark.parametrize("case", [_xfail_known(f"layer/{c}") for c in LAYER_CASES])
def test_per_layer_bytes_per_token(case: str) -> None:
    """Per-layer linear term: ATTENTION_SAVED_ELEMENTS, MLP_*, NORM_*, ACTIVATION_BYTES."""
    measured, model = _per_layer(case.split("/", 1)[1])
    family = case.split("/")[1]
    rel = _family(family)["tolerance"]["model_vs_measured_rel"]
    m, c = measured["per_token"], model["per_token"]
    assert abs(c - m) <= rel * m, f"per-layer bytes/token: measured {m:,.1f}, cost model {c:,.1f} ({c / m:.3f}x)"


@pytest.mark.parametrize("case", [_xfail_known(f"scores/{c}") for c in LAYER_CASES if "/eager/" in c])
def test_per_layer_score_bytes(case: str) -> None:
    """Eager attention's s^2 term: ATTENTION_SCORE_ELEMENTS priced by ACTIVATION_BYTES, MASK_BYTES."""
    measured, model = _per_layer(case.split("/", 1)[1])
    family = case.split("/")[1]
    rel = _family(family)["tolerance"]["model_vs_measured_rel"]
    m, c = measured["per_token_per_key"], model["per_token_per_key"]
    assert abs(c - m) <= rel * m + 1e-9, f"bytes/token/key/layer: measured {m:.3f}, cost model {c:.3f}"


@pytest.mark.parametrize("case", [_xfail_known(f"fused/{c}") for c in LAYER_CASES if "/sdpa/" in c])
def test_fused_attention_keeps_no_score_matrix(case: str) -> None:
    """With a fused kernel neither side may have an s^2 term (flash/mem-efficient keep none)."""
    measured, model = _per_layer(case.split("/", 1)[1])
    assert abs(measured["per_token_per_key"]) < 1e-6 and abs(model["per_token_per_key"]) < 1e-6, (
        f"measured {measured['per_token_per_key']:.3f}, cost model {model['per_token_per_key']:.3f} "
        "bytes/token/key/layer")


def _logit_cases() -> Iterator[str]:
    for name in ACTIVATION_FIXTURES:
        data = _load(name)
        if _kind(data) == "decoder":
            for key in data["results"]:
                impl, prec, _ = key.split("/")
                if impl == "sdpa":
                    yield f"{data['family']}/{prec}"


@pytest.mark.parametrize("case", [_xfail_known(f"logits/{c}") for c in _logit_cases()])
def test_logits_bytes_per_position(case: str) -> None:
    """LOGITS_COPIES: the loss keeps log_softmax (fp32) and, until it returns, the head output and
    its fp32 upcast; measured as saved bytes plus the loss-time transient, per vocab entry."""
    _, family, prec = case.split("/")
    data = _family(family)
    b, s = 2, 512
    v = [r for r in data["real_validation"] if r["precision"] == prec and r["impl"] == "sdpa" and r["b"] == b
         and r["s"] == s]
    assert v, "no measured point at b=2, s=512"
    vocab = data["real_config"]["V"]
    saved = float(data["results"][f"sdpa/{prec}/lm"]["non_layer"]["coefficients"].get("bsV", 0))
    measured = saved + v[0]["loss_transient_bytes"] / (b * s * vocab)
    spec = catalogue.find_model(CATALOGUE_KEYS[family])
    small = _model_acts(spec, PRECISION[prec], True, b, s, False, vocab=1000)[0]
    large = _model_acts(spec, PRECISION[prec], True, b, s, False, vocab=2000)[0]
    model = (large - small) / (1000 * b * s)
    assert abs(model - measured) <= 1e-6, f"bytes per logit: measured {measured:.3f}, cost model {model:.3f}"


def _point_cases() -> Iterator[str]:
    for name in ACTIVATION_FIXTURES:
        data = _load(name)
        head = HEAD_FOR_KIND[_kind(data)]
        for i, v in enumerate(data["real_validation"]):
            if v["head"] in (head, "enc") or data["family"] == "t5":
                yield f"{data['family']}/{v['impl']}/{v['precision']}/b{v['b']}/s{v['s']}/{i}"


@pytest.mark.parametrize("case", [_xfail_known(f"point/{c}") for c in _point_cases()])
def test_activation_term_at_measured_points(case: str) -> None:
    """The whole activation term of the real model (all layers, embeddings, head, loss) against the
    measured saved bytes plus the loss-time logits transient: the point within the fixture's
    model_vs_measured_rel, and the measurement inside the cost model's [low, high] interval."""
    family, *_, index = case.split("/")[1:]
    data = _family(family)
    v = data["real_validation"][int(index)]
    measured = v["measured_activation_bytes"] + v.get("loss_transient_bytes", 0)
    spec = catalogue.find_model(CATALOGUE_KEYS[family])
    point, low, high = _model_acts(spec, PRECISION[v["precision"]], FLASH[v["impl"]], v["b"], v["s"],
                                   family == "vit")
    rel = data["tolerance"]["model_vs_measured_rel"]
    assert low <= measured <= high, f"measured {measured:,} outside the cost model's [{low:,}, {high:,}]"
    assert abs(point - measured) <= rel * measured, (
        f"cost model {point:,} vs measured {measured:,} ({point / measured:.3f}x)")


# ------------------------------------------------------------------------------------------------
# constants pinned one by one

CNN = _load("activations_cnn.json")


def test_mask_bytes_is_the_measured_cuda_dropout_mask() -> None:
    """MASK_BYTES: CUDA's fused dropout keeps a bool mask (the CPU path would keep a float tensor)."""
    cuda = _load("cpu_vs_cuda.json")["models"]
    gpt2 = next(v for k, v in cuda.items() if k.startswith("gpt2"))
    assert "bool" in gpt2["eager"]["cuda fp32"]["per_layer_by_dtype"]
    assert "bool" not in gpt2["eager"]["cpu fp32"]["per_layer_by_dtype"]
    assert costmodel.MASK_BYTES == 1


def test_fused_logsumexp_is_fp32_per_head() -> None:
    """ATTENTION_SAVED_ELEMENTS['fused_logsumexp_fp32_per_head']: the measured 'bsa' coefficient
    of every fused (sdpa) fit is 4 bytes per head per token per attention block, in every
    precision (a T5 decoder layer has two blocks, self- and cross-attention)."""
    for name in ACTIVATION_FIXTURES:
        for key, res in _load(name)["results"].items():
            coeffs = res["per_layer"]["coefficients"]
            blocks = 2 if name == "activations_t5.json" and key.endswith("/dec") else 1
            if key.startswith("sdpa/") and "bssa" not in coeffs:
                assert coeffs.get("bsa") == 4 * blocks, (name, key)
    modelled = costmodel.ATTENTION_SAVED_ELEMENTS["fused_logsumexp_fp32_per_head"] * costmodel.FP32_BYTES
    assert modelled == 4


def test_amp_softmax_stays_fp32_and_matmul_inputs_are_half() -> None:
    """ACTIVATION_BYTES['amp']: the eager score coefficient of a model with attention dropout is
    softmax (fp32) + mask (bool) + dropout output (16-bit) = 7 bytes per head per key (GPT-2, BERT)."""
    assert _load("activations_gpt2.json")["results"]["eager/amp/lm"]["per_layer"]["coefficients"]["bssa"] == 7
    amp = costmodel.ACTIVATION_BYTES["amp"]
    assert amp["softmax"] + costmodel.MASK_BYTES + amp["matmul"] == 7


@pytest.mark.parametrize("case", [_xfail_known(f"cnn/{n}") for n in sorted(CNN["models"])])
def test_cnn_activation_elements_per_sample(case: str) -> None:
    """The catalogue's activation_elements_per_sample equals the measured fp32 bytes / 4."""
    name = case.split("/", 1)[1]
    measured = CNN["models"][name]["activation_elements_per_sample"]
    listed = catalogue.find_model(name).shape.get("activation_elements_per_sample")
    assert listed is not None, f"{name}: set activation_elements_per_sample to the measured {measured:,}"
    assert abs(listed - measured) <= CNN["tolerance"]["elements_rel"] * measured, (listed, measured)


# ------------------------------------------------------------------------------------------------
# the whole estimate against real training steps on a GPU (measure_gpu.py)

GPU_FIXTURES = sorted(n for n in FIXTURES if n.startswith("gpu_"))
MIB = 1024**2


def _gpu_rows() -> Iterator[str]:
    for name in GPU_FIXTURES:
        for row in _load(name)["rows"]:
            if "error" not in row:
                yield f"{name[:-5]}/{row['key']}"


def _gpu_row(case: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    name, key = case.split("/", 1)
    data = _load(f"{name}.json")
    return data, next(r for r in data["rows"] if r["key"] == key)


def _gpu_estimate(data: Dict[str, Any], row: Dict[str, Any]) -> costmodel.Estimate:
    """The cost model's estimate of the measured run, with what the run had: an encoder's head is
    the class measured, an evaluation passed labels or not (the command line cannot say either;
    the reader reads them from the model class and the calls)."""
    p = row["point"]
    spec = catalogue.find_model(p["model"])
    vision = spec.kind in ("cnn", "vision-transformer")
    run = RunSpec(model=spec, batch_size=p["batch"], seq_len=None if vision else p["size"],
                  image_size=p["size"] if vision else None, precision=p["precision"],
                  optimizer=p.get("optimizer", "adamw"), flash=p.get("attn") == "sdpa",
                  checkpointing=bool(p.get("checkpointing")), inference=bool(p.get("inference")),
                  lm_head=(p.get("head") == "mlm") if spec.kind == "encoder" else None,
                  eval_loss=True if p.get("inference") and p.get("labels", True) else None,
                  generation=bool(p.get("generate")), max_new_tokens=p.get("generate"),
                  lora=bool(p.get("lora")), lora_rank=p.get("lora") or 8,
                  sharding="ddp" if p.get("ddp") else "none", grad_accum_steps=p.get("grad_accum") or 1,
                  # transformers 5 ties Flan-T5's head (params.json documented_differences): the run
                  # had torch's count, not the checkpoint's
                  params=row["params"] if p["model"] in _load("params.json")["documented_differences"] else None)
    return costmodel.estimate(run, catalogue.find_gpu(data["environment"]["gpu"]))


GPU_CASES = list(_gpu_rows())


@pytest.mark.parametrize("case", [_xfail_known(f"gpu-interval/{c}") for c in GPU_CASES])
def test_gpu_peak_inside_the_interval(case: str) -> None:
    """What the process held at its peak (max_memory_reserved + CUDA context) lies inside the
    estimate's [low, high]."""
    data, row = _gpu_row(case.split("/", 1)[1])
    low, high = _gpu_estimate(data, row).interval_bytes
    measured = row["measured_peak_bytes"]
    assert low <= measured <= (high or measured), f"measured {measured:,} outside [{low:,}, {high:,}]"


@pytest.mark.parametrize("case", [_xfail_known(f"gpu-point/{c}") for c in GPU_CASES])
def test_gpu_peak_point(case: str) -> None:
    """The point estimate within the fixture's peak_point_ratio of the measured peak."""
    data, row = _gpu_row(case.split("/", 1)[1])
    point, measured = _gpu_estimate(data, row).peak_bytes, row["measured_peak_bytes"]
    lo, hi = data["tolerance"]["peak_point_ratio"]
    assert lo <= point / measured <= hi, f"estimate {point:,} vs measured {measured:,} ({point / measured:.3f}x)"


@pytest.mark.parametrize("case", [_xfail_known(f"gpu-phase/{c}") for c in GPU_CASES
                                  if "/inference" not in c and "/generate" not in c])
def test_gpu_weights_gradients_and_optimizer_state(case: str) -> None:
    """The definitional terms against the first step's memory_allocated phases: weights after the
    model is on the GPU; gradients = what zero_grad(set_to_none=True) frees after the step (plus,
    under DDP, the gradient buckets allocated when the model is wrapped); optimizer state = what
    stays after it, beyond the weights."""
    data, row = _gpu_row(case.split("/", 1)[1])
    b = _gpu_estimate(data, row).breakdown
    first = row["first_step"][0]
    buckets = first["before_forward"] - row["weights_allocated_bytes"] if row["point"].get("ddp") else 0
    measured = {"weights": row["weights_allocated_bytes"],
                "gradients": first["after_step"] - first["after_zero_grad"] + buckets,
                "optimizer_state": first["after_zero_grad"] - first["before_forward"]}
    if row["baseline_allocated_bytes"] < 2 * costmodel.CUBLAS_WORKSPACE_BYTES:
        # the process's first backward: autograd's thread took its cuBLAS workspace during this step
        measured["optimizer_state"] -= costmodel.CUBLAS_WORKSPACE_BYTES
    if row["point"]["precision"] == "amp" and first["after_step"] == first["after_backward"]:
        # GradScaler's first scale (65536) overflowed the fp16 gradients and skipped the step, so no
        # optimizer state exists yet (ResNet-50 here): nothing to compare it with
        del measured["optimizer_state"]
    lo, hi = data["tolerance"]["phase_ratio"]
    for term, value in measured.items():
        assert lo <= b[term] / value <= hi, f"{term}: cost model {b[term]:,} vs measured {value:,}"


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_gpu_context_and_capacity_are_the_measured_ones(name: str) -> None:
    """The GPU's catalogue entry carries the measured CUDA context (median over the runs) and the
    capacity cudaMemGetInfo reported; every run's context lies inside the context term."""
    data = _load(name)
    gpu = catalogue.find_gpu(data["environment"]["gpu"])
    contexts = sorted(r["cuda_context_bytes"] for r in data["rows"]
                      if "error" not in r and not r.get("nccl_initialised"))
    median = contexts[len(contexts) // 2]
    assert abs(gpu.context_bytes - median) <= MIB, (gpu.context_bytes, median)
    assert gpu.usable_bytes == data["environment"]["total_bytes"] // MIB * MIB
    low = int(gpu.context_bytes * costmodel.CUDA_CONTEXT_LOW_FRACTION)
    high = int(gpu.context_bytes * costmodel.CUDA_CONTEXT_HIGH_FRACTION)
    assert all(low <= c <= high for c in contexts)
    nccl = [r["cuda_context_bytes"] - median for r in data["rows"] if r.get("nccl_initialised")]
    assert all(abs(n - costmodel.NCCL_COMMUNICATOR_BYTES) <= 100 * MIB for n in nccl), nccl
    default_high = costmodel.DEFAULT_CUDA_CONTEXT_BYTES * costmodel.CUDA_CONTEXT_HIGH_FRACTION
    assert contexts[-1] <= default_high, "the default context's high end must cover the measured one"


def test_known_disagreements_name_real_cases() -> None:
    """Every KNOWN_DISAGREEMENTS entry names a case that exists (no stale entries)."""
    cases = {f"layer/{c}" for c in LAYER_CASES} | {f"scores/{c}" for c in LAYER_CASES}
    cases |= {f"fused/{c}" for c in LAYER_CASES} | {f"logits/{c}" for c in _logit_cases()}
    cases |= {f"point/{c}" for c in _point_cases()} | {f"cnn/{n}" for n in CNN["models"]}
    cases |= {f"gpu-interval/{c}" for c in GPU_CASES} | {f"gpu-point/{c}" for c in GPU_CASES}
    cases |= {f"gpu-phase/{c}" for c in GPU_CASES}
    stale = sorted(set(KNOWN_DISAGREEMENTS) - cases)
    assert not stale, stale


def _current_disagreements() -> Dict[str, str]:
    """Run every model-vs-measurement case and collect the failing ones with their messages."""
    checks = [("layer", LAYER_CASES, test_per_layer_bytes_per_token),
              ("scores", [c for c in LAYER_CASES if "/eager/" in c], test_per_layer_score_bytes),
              ("fused", [c for c in LAYER_CASES if "/sdpa/" in c], test_fused_attention_keeps_no_score_matrix),
              ("logits", list(_logit_cases()), test_logits_bytes_per_position),
              ("point", list(_point_cases()), test_activation_term_at_measured_points),
              ("cnn", sorted(CNN["models"]), test_cnn_activation_elements_per_sample),
              ("gpu-interval", GPU_CASES, test_gpu_peak_inside_the_interval),
              ("gpu-point", GPU_CASES, test_gpu_peak_point)]
    found: Dict[str, str] = {}
    for prefix, cases, check in checks:
        for c in cases:
            try:
                check(f"{prefix}/{c}")
            except AssertionError as exc:
                found[f"{prefix}/{c}"] = str(exc).splitlines()[0]
    return found


if __name__ == "__main__":  # python tests/calibration/test_calibration.py: print KNOWN_DISAGREEMENTS
    for key, reason in sorted(_current_disagreements().items()):
        line = f"    {key!r}: {reason!r},"
        print(line if len(line) <= 120 else f"    {key!r}:\n        {reason!r},")
