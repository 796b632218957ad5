"""Real-GPU check of the estimator, for a session that is lent a GPU.

Not run by the test suite.  On a machine with CUDA, torch and transformers, from the repo root::

    python tests/calibration/measure_gpu.py --out "$OUT/gpu_measurements.json"

For each point of ``POINTS`` (a catalogue model built from its catalogue shape, no download; a
batch; a sequence length or image size; a precision; an optimizer; eager or SDPA attention;
gradient checkpointing; training or inference) it runs ``STEPS`` real steps on the GPU and
records, beside the estimator's projection of the same run:

* per phase of the first step, ``torch.cuda.memory_allocated()``: after the model is on the GPU
  (weights), after the forward and loss (what the forward keeps), after backward (gradients),
  after ``optimizer.step()`` (optimizer state) and after ``zero_grad(set_to_none=True)``;
* over the steady-state steps (2..STEPS), ``max_memory_allocated()`` and the forward's kept bytes;
* over the whole run, ``max_memory_reserved()`` (what the caching allocator took from the driver)
  and the CUDA context (``mem_get_info``: total - free - reserved).

``measured_peak_bytes`` = max reserved + context: what ``nvidia-smi`` would show for the process at
its peak, and what decides an out-of-memory error.  Each point is written to the output as soon as
it is measured, so a run cut short still returns what it measured; a point that fails records why.

``--annotate FILE`` recomputes the ``estimate`` of every row of an existing measurements file with
the current cost model (no torch, no GPU), so the comparison follows the cost model.

``--dry-run`` runs the same code on the CPU with tiny sizes (no memory figures) to check it works.
"""
from __future__ import annotations

import argparse
import gc
import json
import pathlib
import sys
import time
import traceback
from typing import Any, Dict, List, Optional

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

#: One point per dict.  ``attn`` is transformers' ``attn_implementation`` ("sdpa" is its default;
#: the estimator's ``--flash``), ``precision`` the estimator's: amp = fp32 weights under fp16
#: autocast with a GradScaler, bf16 = the model cast to bf16 with no autocast, fp32 = neither.
POINTS: List[Dict[str, Any]] = [
    # GPT-2 small: every switch once against one base point
    {"model": "gpt2", "batch": 8, "size": 512, "precision": "amp", "attn": "sdpa"},
    {"model": "gpt2", "batch": 16, "size": 1024, "precision": "amp", "attn": "sdpa"},
    {"model": "gpt2", "batch": 8, "size": 512, "precision": "amp", "attn": "eager"},
    {"model": "gpt2", "batch": 8, "size": 512, "precision": "fp32", "attn": "sdpa"},
    {"model": "gpt2", "batch": 16, "size": 1024, "precision": "bf16", "attn": "sdpa"},
    {"model": "gpt2", "batch": 16, "size": 1024, "precision": "amp", "attn": "sdpa", "checkpointing": True},
    {"model": "gpt2", "batch": 32, "size": 1024, "precision": "amp", "attn": "sdpa", "inference": True},
    {"model": "gpt2", "batch": 8, "size": 512, "precision": "amp", "attn": "sdpa", "optimizer": "sgd-momentum"},
    {"model": "gpt2", "batch": 32, "size": 1024, "precision": "amp", "attn": "sdpa", "inference": True,
     "labels": False},
    # encoders with an MLM head (*ForMaskedLM) and with a classification head
    {"model": "bert-base-uncased", "batch": 32, "size": 512, "precision": "amp", "attn": "sdpa", "head": "mlm"},
    {"model": "bert-base-uncased", "batch": 16, "size": 256, "precision": "amp", "attn": "eager", "head": "mlm"},
    {"model": "bert-base-uncased", "batch": 32, "size": 512, "precision": "amp", "attn": "sdpa", "head": "cls"},
    {"model": "bert-base-uncased", "batch": 32, "size": 512, "precision": "fp32", "attn": "sdpa", "head": "cls"},
    {"model": "distilbert-base-uncased", "batch": 32, "size": 512, "precision": "amp", "attn": "sdpa",
     "head": "mlm"},
    {"model": "distilbert-base-uncased", "batch": 32, "size": 512, "precision": "amp", "attn": "sdpa",
     "head": "cls"},
    # decoders with rotary attention, RMSNorm, SwiGLU, large vocabularies
    {"model": "opt-125m", "batch": 8, "size": 1024, "precision": "amp", "attn": "sdpa"},
    {"model": "qwen2-0.5b", "batch": 8, "size": 1024, "precision": "bf16", "attn": "sdpa"},
    {"model": "qwen2-0.5b", "batch": 4, "size": 1024, "precision": "amp", "attn": "sdpa"},
    {"model": "tinyllama-1.1b", "batch": 4, "size": 2048, "precision": "bf16", "attn": "sdpa"},
    {"model": "llama-3.2-1b", "batch": 4, "size": 2048, "precision": "amp", "attn": "sdpa"},
    {"model": "llama-3.2-1b", "batch": 4, "size": 2048, "precision": "bf16", "attn": "sdpa", "checkpointing": True},
    {"model": "llama-3.2-1b", "batch": 2, "size": 1024, "precision": "fp32", "attn": "sdpa"},  # GQA: math kernel
    # generation with a KV cache, LoRA adapters (peft), DDP's gradient buckets, gradient accumulation
    {"model": "gpt2", "batch": 16, "size": 512, "precision": "amp", "attn": "sdpa", "generate": 256},
    {"model": "qwen2-0.5b", "batch": 16, "size": 512, "precision": "bf16", "attn": "sdpa", "generate": 512},
    {"model": "qwen2-0.5b", "batch": 8, "size": 1024, "precision": "bf16", "attn": "sdpa", "lora": 8},
    {"model": "llama-3.2-1b", "batch": 4, "size": 2048, "precision": "amp", "attn": "sdpa", "lora": 16},
    {"model": "gpt2", "batch": 8, "size": 512, "precision": "amp", "attn": "sdpa", "grad_accum": 4},
    {"model": "gpt2", "batch": 8, "size": 512, "precision": "amp", "attn": "sdpa", "ddp": True},  # NCCL: last
    # vision
    {"model": "vit-b-16", "batch": 64, "size": 224, "precision": "amp", "attn": "sdpa"},
    {"model": "resnet50", "batch": 64, "size": 224, "precision": "amp"},
    {"model": "resnet50", "batch": 128, "size": 224, "precision": "amp"},
    {"model": "resnet50", "batch": 64, "size": 224, "precision": "fp32", "optimizer": "sgd-momentum"},
]
#: Families the fake-tensor calibration did not measure (``--families``): whole-peak checks only.
FAMILY_POINTS: List[Dict[str, Any]] = [
    {"model": "smollm-135m", "batch": 8, "size": 2048, "precision": "amp", "attn": "sdpa"},
    {"model": "qwen3-0.6b", "batch": 8, "size": 1024, "precision": "bf16", "attn": "sdpa"},
    {"model": "gemma-3-270m", "batch": 8, "size": 1024, "precision": "amp", "attn": "sdpa"},
    {"model": "gemma-2-2b", "batch": 4, "size": 1024, "precision": "bf16", "attn": "eager"},  # softcap: no sdpa
    {"model": "phi-3-mini", "batch": 2, "size": 1024, "precision": "bf16", "attn": "sdpa"},
    {"model": "pythia-410m", "batch": 8, "size": 1024, "precision": "amp", "attn": "sdpa"},
    {"model": "mistral-7b", "batch": 1, "size": 2048, "precision": "bf16", "attn": "sdpa"},
    {"model": "falcon-7b", "batch": 1, "size": 1024, "precision": "bf16", "attn": "sdpa"},
    {"model": "roberta-base", "batch": 32, "size": 512, "precision": "amp", "attn": "sdpa"},
    {"model": "deberta-v3-base", "batch": 16, "size": 512, "precision": "amp", "attn": "eager"},
    {"model": "bart-base", "batch": 16, "size": 512, "precision": "amp", "attn": "sdpa"},
    {"model": "t5-small", "batch": 16, "size": 512, "precision": "amp", "attn": "sdpa"},
    {"model": "flan-t5-base", "batch": 8, "size": 512, "precision": "bf16", "attn": "sdpa"},
    {"model": "vit-l-16", "batch": 32, "size": 224, "precision": "amp", "attn": "sdpa"},
    {"model": "vgg16", "batch": 64, "size": 224, "precision": "amp"},
    {"model": "resnet152", "batch": 64, "size": 224, "precision": "amp"},
]
STEPS = 5  # steady state: AdamW's state exists from step 1; the reserved peak settles by step 3
VISION = ("resnet", "vit", "vgg")


def _point_key(p: Dict[str, Any]) -> str:
    parts = [p["model"], f"b{p['batch']}", f"s{p['size']}", p["precision"], p.get("attn", "-"),
             p.get("optimizer", "adamw")]
    if p.get("head"):
        parts.append(p["head"])
    for flag in ("generate", "lora", "grad_accum"):
        if p.get(flag):
            parts.append(f"{flag}{p[flag]}")
    if p.get("ddp"):
        parts.append("ddp")
    if p.get("checkpointing"):
        parts.append("ckpt")
    if p.get("inference"):
        parts.append("inference" if p.get("labels", True) else "inference-nolabels")
    return "/".join(parts)


# -- the estimator side (no torch) ---------------------------------------------------------------

def projection(p: Dict[str, Any], gpu: Optional[str]) -> Dict[str, Any]:
    """The estimator's projection of point ``p`` on ``gpu``, through its command line (in-process).
    The command line cannot say which head an encoder has: for an MLM head the point prices a
    classification head and the interval's high end the MLM head (test_calibration.py prices
    the head the run had)."""
    import contextlib
    import io

    from flake8_torch_preflight.estimator import cli

    argv = ["--model", p["model"], "--batch-size", str(p["batch"]),
            "--image-size" if p["model"].startswith(VISION) else "--seq-len",
            str(p["size"]), "--precision", p["precision"], "--optimizer", p.get("optimizer", "adamw"),
            "--format", "json"]
    if p.get("attn") == "sdpa":
        argv.append("--flash")
    if p.get("checkpointing"):
        argv.append("--checkpointing")
    if p.get("inference"):
        argv.append("--inference")
    if p.get("generate"):
        argv += ["--generate", "--max-new-tokens", str(p["generate"])]
    if p.get("lora"):
        argv += ["--lora", str(p["lora"])]
    if p.get("ddp"):
        argv += ["--world-size", "1", "--sharding", "ddp"]
    if p.get("grad_accum"):
        argv += ["--grad-accum", str(p["grad_accum"])]
    if gpu:
        argv += ["--gpu", gpu]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(["estimate", *argv])
        except SystemExit as exc:  # argparse
            status = exc.code
    if status not in (0, 1):
        return {"error": err.getvalue().strip(), "argv": argv}
    data = json.loads(out.getvalue())
    return {"argv": argv, "peak_bytes": data["peak_bytes"], "interval_bytes": data["interval_bytes"],
            "breakdown": data["breakdown"]}


def compare(row: Dict[str, Any]) -> None:
    est = row.get("estimate", {})
    if "measured_peak_bytes" in row and "peak_bytes" in est:
        row["estimate_over_measured"] = round(est["peak_bytes"] / row["measured_peak_bytes"], 3)
        low, high = est["interval_bytes"]
        row["measured_in_interval"] = low <= row["measured_peak_bytes"] <= high


def annotate(path: pathlib.Path) -> int:
    payload = json.loads(path.read_text())
    gpu = payload["environment"].get("gpu")
    for row in payload["rows"]:
        row["estimate"] = projection(row["point"], gpu)
        compare(row)
    path.write_text(json.dumps(payload, indent=1) + "\n")
    for row in payload["rows"]:
        print(f"{row['key']:55s} {row.get('estimate_over_measured')!s:>6} {row.get('measured_in_interval')}")
    return 0


# -- the GPU side --------------------------------------------------------------------------------

def build(p: Dict[str, Any], tiny: bool) -> Any:
    """(model, make_inputs, forward) for point ``p``."""
    import torch

    name = p["model"]
    if name.startswith(("resnet", "vgg")):
        import measure_cnn  # the harness's ResNet, module for module as torchvision's

        model = measure_cnn.MODELS[name]()

        def images(batch: int, size: int, device: str) -> Dict[str, Any]:
            return {"x": torch.randn(batch, 3, size, size, device=device),
                    "y": torch.randint(0, 1000, (batch,), device=device)}

        def cnn_forward(m: Any, inputs: Dict[str, Any]) -> Any:
            return torch.nn.functional.cross_entropy(m(inputs["x"]), inputs["y"])

        return model, images, cnn_forward

    import transformers as tf

    from flake8_torch_preflight.estimator import catalogue

    shape = dict(catalogue.find_model(name).shape)
    if tiny:
        shape.update(layers=1)
        if (shape.get("vocab") or 0) > 50_000:
            shape.update(vocab=1000)
    attn = p.get("attn", "sdpa")
    if name == "gpt2":
        cfg = tf.GPT2Config(n_layer=shape["layers"], vocab_size=shape["vocab"])
        model = tf.GPT2LMHeadModel._from_config(cfg, attn_implementation=attn)
    elif name == "bert-base-uncased":
        cfg = tf.BertConfig(num_hidden_layers=shape["layers"], vocab_size=shape["vocab"])
        cls = tf.BertForMaskedLM if p.get("head") == "mlm" else tf.BertForSequenceClassification
        model = cls._from_config(cfg, attn_implementation=attn)
    elif name == "distilbert-base-uncased":
        cfg = tf.DistilBertConfig(n_layers=shape["layers"], vocab_size=shape["vocab"])
        cls = tf.DistilBertForMaskedLM if p.get("head") == "mlm" else tf.DistilBertForSequenceClassification
        model = cls._from_config(cfg, attn_implementation=attn)
    elif name.startswith("vit"):
        cfg = tf.ViTConfig(hidden_size=shape["hidden"], intermediate_size=shape["ffn"],
                           num_hidden_layers=shape["layers"], num_attention_heads=shape["heads"],
                           image_size=shape["image_size"], patch_size=shape["patch_size"],
                           num_labels=shape["num_classes"])
        model = tf.ViTForImageClassification._from_config(cfg, attn_implementation=attn)
    else:
        import measure_params

        maker = measure_params._builder(name)
        if maker is None:
            raise ValueError(f"no builder for {name}")
        model = maker[0](shape)
        model.config._attn_implementation = attn  # set before any forward: every layer reads it
        if getattr(model.config, "is_encoder_decoder", False):
            for key in ("decoder_start_token_id", "pad_token_id"):
                if getattr(model.config, key, None) is None:
                    setattr(model.config, key, 0)  # labels are shifted right from token 0
    vocab = shape.get("vocab") or 0

    if name.startswith("vit"):
        def vit_inputs(batch: int, size: int, device: str) -> Dict[str, Any]:
            return {"pixel_values": torch.randn(batch, 3, size, size, device=device),
                    "labels": torch.randint(0, shape["num_classes"], (batch,), device=device)}
        return model, vit_inputs, lambda m, inputs: m(**inputs).loss

    def tokens(batch: int, seq: int, device: str) -> Dict[str, Any]:
        ids = torch.randint(0, vocab, (batch, seq), device=device)
        if not p.get("labels", True):
            return {"input_ids": ids}
        if p.get("head") == "cls":
            return {"input_ids": ids, "labels": torch.randint(0, 2, (batch,), device=device)}
        return {"input_ids": ids, "labels": ids.clone()}

    def lm_forward(m: Any, inputs: Dict[str, Any]) -> Any:
        if not hasattr(m, "get_output_embeddings") or m.get_output_embeddings() is None:
            # a base encoder (RobertaModel, DebertaV2Model): no head, a loss on its output
            hidden = m(input_ids=inputs["input_ids"]).last_hidden_state
            return hidden.float().pow(2).mean()
        out = m(**inputs)
        return out.loss if "labels" in inputs else out.logits  # no labels: the caller keeps the logits

    return model, tokens, lm_forward


def _nccl_initialised() -> bool:
    """Whether an earlier point of this process started NCCL (its buffers count as context)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def _optimizer(name: str, params: Any) -> Any:
    import torch

    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-5)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-5, momentum=0.9)
    raise ValueError(name)


def train(p: Dict[str, Any], device: str, tiny: bool) -> Dict[str, Any]:
    import torch

    cuda = device == "cuda"

    def alloc() -> Optional[int]:
        if not cuda:
            return None
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated()

    if cuda:
        gc.collect()
        torch.cuda.empty_cache()
    base = alloc()
    import contextlib

    with torch.device(device) if cuda else contextlib.nullcontext():  # initialise on the GPU: fast
        model, make_inputs, forward = build(p, tiny)
    if p["precision"] in ("bf16", "fp16"):
        model.to(torch.bfloat16 if p["precision"] == "bf16" else torch.float16)
    model.to(device)
    if p.get("checkpointing"):
        model.gradient_checkpointing_enable() if hasattr(model, "gradient_checkpointing_enable") else None
    if p.get("lora"):
        import peft

        # adapters on every linear layer of the blocks, as the estimator prices them (QLoRA §4)
        config = peft.LoraConfig(r=p["lora"], lora_alpha=2 * p["lora"], target_modules="all-linear")
        model = peft.get_peft_model(model, config)
    inference = bool(p.get("inference") or p.get("generate"))
    model.eval() if inference else model.train()
    params = sum(t.numel() for t in model.parameters())
    trainable = sum(t.numel() for t in model.parameters() if t.requires_grad)
    weights = alloc()
    if p.get("ddp"):
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("nccl" if cuda else "gloo", init_method="tcp://127.0.0.1:29511",
                                    rank=0, world_size=1)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0] if cuda else None)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    amp = p["precision"] == "amp"
    optimizer = None if inference else _optimizer(
        p.get("optimizer", "adamw"), [t for t in model.parameters() if t.requires_grad])
    scaler = torch.amp.GradScaler(device, enabled=cuda and amp and not inference)
    if p.get("generate"):
        return _generate(p, model, make_inputs, device, base, weights, params)
    micro = int(p.get("grad_accum") or 1)
    phases: List[Dict[str, Any]] = []
    steady_forward: List[int] = []
    start = time.perf_counter()
    for step in range(STEPS):
        inputs = make_inputs(p["batch"], p["size"], device)
        marks: Dict[str, Any] = {"before_forward": alloc()}
        if step == 1 and cuda:
            torch.cuda.reset_peak_memory_stats()  # steady state: allocated peak over steps 2..STEPS
            marks["before_forward"] = alloc()
        ctx = torch.no_grad() if inference else torch.enable_grad()
        for _ in range(micro - 1):  # gradient accumulation: earlier micro-batches, gradients kept
            with torch.autocast(device_type=device, dtype=torch.float16, enabled=cuda and amp):
                early = forward(model, make_inputs(p["batch"], p["size"], device)) / micro
            scaler.scale(early).backward()
            del early
        with ctx, torch.autocast(device_type=device, dtype=torch.float16, enabled=cuda and amp):
            loss = forward(model, inputs)
        marks["after_forward"] = alloc()
        if not inference:
            scaler.scale(loss / micro).backward()
            marks["after_backward"] = alloc()
            scaler.step(optimizer)
            scaler.update()
            marks["after_step"] = alloc()
            optimizer.zero_grad(set_to_none=True)
            marks["after_zero_grad"] = alloc()
        del loss, inputs
        if step == 0:
            phases.append(marks)
        elif cuda:
            steady_forward.append(marks["after_forward"] - marks["before_forward"])
    row: Dict[str, Any] = {"params": params, "trainable_params": trainable, "steps": STEPS,
                           "seconds": round(time.perf_counter() - start, 2)}
    if cuda:
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        reserved = torch.cuda.memory_reserved()
        stats = torch.cuda.memory_stats()
        row.update(
            baseline_allocated_bytes=base,
            weights_allocated_bytes=weights - base,
            first_step=[{k: (v - base if v is not None else None) for k, v in m.items()} for m in phases],
            steady_forward_kept_bytes=max(steady_forward) if steady_forward else None,
            steady_max_allocated_bytes=torch.cuda.max_memory_allocated() - base,
            max_memory_reserved_bytes=stats.get("reserved_bytes.all.peak", torch.cuda.max_memory_reserved()),
            cuda_context_bytes=total - free - reserved,
            total_bytes=total,
            num_alloc_retries=stats.get("num_alloc_retries"),
            requested_peak_bytes=stats.get("requested_bytes.all.peak"),
            nccl_initialised=bool(p.get("ddp")) or _nccl_initialised(),
        )
        row["measured_peak_bytes"] = row["max_memory_reserved_bytes"] + row["cuda_context_bytes"]
    del model, optimizer, scaler
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return row


def _generate(p: Dict[str, Any], model: Any, make_inputs: Any, device: str, base: Optional[int],
              weights: Optional[int], params: int) -> Dict[str, Any]:
    """Greedy generation of exactly ``p["generate"]`` tokens after a ``p["size"]`` prompt."""
    import torch

    cuda = device == "cuda"
    start = time.perf_counter()
    for _ in range(2):  # the second call is the steady one; the reserved peak covers both
        ids = make_inputs(p["batch"], p["size"], device)["input_ids"]
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        with torch.no_grad(), torch.autocast(device_type=device, dtype=torch.float16,
                                             enabled=cuda and p["precision"] == "amp"):
            out = model.generate(ids, max_new_tokens=p["generate"], min_new_tokens=p["generate"],
                                 do_sample=False, pad_token_id=0)
        del out, ids
    row: Dict[str, Any] = {"params": params, "trainable_params": 0, "steps": 2,
                           "seconds": round(time.perf_counter() - start, 2)}
    if cuda:
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        stats = torch.cuda.memory_stats()
        row.update(baseline_allocated_bytes=base, weights_allocated_bytes=weights - base,
                   steady_max_allocated_bytes=torch.cuda.max_memory_allocated() - base,
                   max_memory_reserved_bytes=stats["reserved_bytes.all.peak"],
                   cuda_context_bytes=total - free - torch.cuda.memory_reserved(), total_bytes=total,
                   requested_peak_bytes=stats.get("requested_bytes.all.peak"))
        row["measured_peak_bytes"] = row["max_memory_reserved_bytes"] + row["cuda_context_bytes"]
    del model
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return row


def environment(device: str) -> Dict[str, Any]:
    import platform

    import torch

    env: Dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version()}
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    if device == "cuda":
        torch.zeros(1, device="cuda")
        free, total = torch.cuda.mem_get_info()
        env.update(gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda,
                   capability=list(torch.cuda.get_device_capability()),
                   context_after_init_bytes=total - free - torch.cuda.memory_reserved(),
                   total_bytes=total)
        a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
        (a @ a).sum().item()
        free, total = torch.cuda.mem_get_info()
        env["context_after_first_matmul_bytes"] = total - free - torch.cuda.memory_reserved()
        del a
    return env


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(HERE / "gpu_measurements.json"))
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny models, no memory figures")
    parser.add_argument("--annotate", metavar="FILE", help="recompute the estimates of a measurements file")
    parser.add_argument("--only", help="comma-separated model names to run")
    parser.add_argument("--extra", action="store_true", help="only the generation/LoRA/DDP/accumulation points")
    parser.add_argument("--families", action="store_true", help="only the FAMILY_POINTS (unmeasured families)")
    args = parser.parse_args(argv)
    if args.annotate:
        return annotate(pathlib.Path(args.annotate))
    import torch

    torch.manual_seed(0)
    device = "cpu" if args.dry_run else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("measure_gpu: no CUDA device (use --dry-run to check the script on the CPU)", file=sys.stderr)
        return 2
    out = pathlib.Path(args.out)
    env = environment(device)
    payload: Dict[str, Any] = {
        "version": 1,
        "note": f"MEASURED on {env.get('gpu', 'cpu (dry run)')} with torch {env['torch']}, transformers "
                f"{env.get('transformers')}, by tests/calibration/measure_gpu.py: real training steps "
                "(fp16 autocast + GradScaler for amp, bf16 weights without autocast for bf16, AdamW "
                "unless named); per-phase memory_allocated, steady max_memory_allocated, "
                "max_memory_reserved and the CUDA context; the estimator's projection beside each point.",
        "tolerance": {"peak_point_ratio": [0.85, 1.15], "phase_ratio": [0.98, 1.02]},
        "environment": env,
        "rows": [],
    }
    only = set(args.only.split(",")) if args.only else None
    for point in (FAMILY_POINTS if args.families else POINTS):
        if only and point["model"] not in only:
            continue
        if args.extra and not any(point.get(k) for k in ("generate", "lora", "ddp", "grad_accum")):
            continue
        p = dict(point)
        if args.dry_run:
            small = 32 if p["model"].startswith(("resnet", "vgg")) else (224 if p["model"].startswith("vit") else 16)
            p.update(batch=2, size=small)
        row: Dict[str, Any] = {"key": _point_key(p), "point": p}
        try:
            row.update(train(p, device, args.dry_run))
        except Exception as exc:  # record and go on: one bad point must not cost the others
            row["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            row["traceback"] = traceback.format_exc()[-3000:]
            if device == "cuda":
                gc.collect()
                torch.cuda.empty_cache()
        try:
            row["estimate"] = projection(p, payload["environment"].get("gpu"))
        except Exception as exc:
            row["estimate"] = {"error": f"{type(exc).__name__}: {exc}"}
        compare(row)
        payload["rows"].append(row)
        out.write_text(json.dumps(payload, indent=1) + "\n")
        fields = ("key", "seconds", "measured_peak_bytes", "estimate_over_measured", "measured_in_interval", "error")
        brief = {k: row.get(k) for k in fields}
        print(json.dumps(brief), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
