"""Real-GPU check of the estimator (issue 7's last step), for a session that is lent a GPU.

Not run by the test suite.  On a machine with CUDA, torch and transformers, from the repo root::

    python tests/calibration/measure_gpu.py --out "$OUT/gpu_measurements.json"

For GPT-2, BERT-base, DistilBERT (built from config objects, no download) and ResNet-50 (the
harness's torchvision-faithful ResNet), at two batch/sequence points each, it trains a few
steady-state steps with fp16 autocast, a GradScaler and AdamW, then records
``torch.cuda.max_memory_reserved()`` and ``max_memory_allocated()``, the CUDA context
(``mem_get_info`` total - free - reserved), and beside each the estimator's projection for the
same run (``python -m flake8_torch_preflight estimate ... --format json``).  The output JSON is
meant to be committed as ``tests/calibration/gpu_<gpu name>.json`` with the GPU name and torch
version, and its figures put into README.rst's "How accurate is it?" table.

``--dry-run`` runs the same code on the CPU with tiny sizes (no memory figures) to check it works.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

#: (catalogue model, batch, seq_len or image size) points, two per model.
POINTS: List[Tuple[str, int, int]] = [
    ("gpt2", 8, 512), ("gpt2", 16, 1024),
    ("bert-base-uncased", 16, 256), ("bert-base-uncased", 32, 512),
    ("distilbert-base-uncased", 16, 256), ("distilbert-base-uncased", 32, 512),
    ("resnet50", 32, 224), ("resnet50", 64, 224),
]
STEPS = 6  # steady state: AdamW's state exists from step 1; peaks settle after 2-3 steps


def build(name: str, tiny: bool) -> Tuple[torch.nn.Module, Callable[[int, int, str], Dict[str, torch.Tensor]]]:
    if name == "resnet50":
        from measure_cnn import MODELS  # the harness's ResNet, module for module as torchvision's

        model = MODELS["resnet50"]()

        def images(batch: int, size: int, device: str) -> Dict[str, torch.Tensor]:
            return {"x": torch.randn(batch, 3, size, size, device=device),
                    "y": torch.randint(0, 1000, (batch,), device=device)}

        return model, images
    import transformers as T

    if name == "gpt2":
        config = T.GPT2Config(n_layer=2 if tiny else 12)
        model = T.GPT2LMHeadModel(config)
    elif name == "bert-base-uncased":
        config = T.BertConfig(num_hidden_layers=2 if tiny else 12)
        model = T.BertForMaskedLM(config)
    else:
        config = T.DistilBertConfig(n_layers=2 if tiny else 6)
        model = T.DistilBertForMaskedLM(config)

    def tokens(batch: int, seq: int, device: str) -> Dict[str, torch.Tensor]:
        ids = torch.randint(0, config.vocab_size, (batch, seq), device=device)
        return {"input_ids": ids, "labels": ids.clone()}

    return model, tokens


def train(name: str, batch: int, size: int, device: str, tiny: bool) -> Dict[str, Any]:
    model, make_inputs = build(name, tiny)
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device, enabled=device == "cuda")
    criterion = torch.nn.CrossEntropyLoss()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(STEPS):
        inputs = make_inputs(batch, size, device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=device == "cuda"):
            if name == "resnet50":
                loss = criterion(model(inputs["x"]), inputs["y"])
            else:
                loss = model(**inputs).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    row: Dict[str, Any] = {"model": name, "batch_size": batch, "size": size, "steps": STEPS,
                           "seconds": round(time.perf_counter() - start, 2)}
    if device == "cuda":
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        reserved = torch.cuda.memory_reserved()
        row.update(max_memory_reserved_bytes=torch.cuda.max_memory_reserved(),
                   max_memory_allocated_bytes=torch.cuda.max_memory_allocated(),
                   cuda_context_bytes=total - free - reserved, total_bytes=total)
        row["measured_peak_bytes"] = row["max_memory_reserved_bytes"] + row["cuda_context_bytes"]
    del model, optimizer
    return row


def projection(name: str, batch: int, size: int) -> Dict[str, Any]:
    flag = "--image-size" if name == "resnet50" else "--seq-len"
    cmd = [sys.executable, "-m", "flake8_torch_preflight", "estimate", "--model", name, "--batch-size", str(batch),
           flag, str(size), "--precision", "amp", "--optimizer", "adamw", "--format", "json"]
    out = subprocess.run(cmd, cwd=str(ROOT), capture_output=True, text=True)
    if out.returncode not in (0, 1):
        return {"error": out.stderr.strip()}
    data = json.loads(out.stdout)
    return {"peak_bytes": data["peak_bytes"], "interval_bytes": data["interval_bytes"], "breakdown": data["breakdown"]}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(HERE / "gpu_measurements.json"))
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny models, no memory figures")
    args = parser.parse_args(argv)
    device = "cpu" if args.dry_run else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("measure_gpu: no CUDA device (use --dry-run to check the script on the CPU)", file=sys.stderr)
        return 2
    rows = []
    for name, batch, size in POINTS:
        if args.dry_run:
            batch, size = 2, (32 if name == "resnet50" else 16)
        row = train(name, batch, size, device, args.dry_run)
        row["estimate"] = projection(name, batch, size)
        if "measured_peak_bytes" in row and "peak_bytes" in row["estimate"]:
            row["estimate_over_measured"] = round(row["estimate"]["peak_bytes"] / row["measured_peak_bytes"], 3)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "estimate"}), flush=True)
    payload = {
        "note": "Steady-state fp16-autocast AdamW training steps on a real GPU, measured by "
                "tests/calibration/measure_gpu.py; estimate beside each point.",
        "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu (dry run)",
        "torch": torch.__version__, "tolerance": 0.25, "rows": rows,
    }
    pathlib.Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
