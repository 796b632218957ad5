"""A small seeded fuzz of the command line, in the regular run (a second or two).

Random combinations of options and values (huge numbers, negatives, junk, unicode, empty strings,
files that are not scripts, and flake8 configuration values) go through ``main`` in-process.
Whatever comes in: the exit status is 0, 1 or 2, no exception escapes, a refusal (2) is one line
on stderr, and with ``--format json`` a verdict (0 or 1) is one JSON object on stdout.
"""
from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import List

import pytest

from flake8_torch_preflight.estimator import cli

SEED = 20240611
ROUNDS = 300

#: Values a run can have, and values it cannot (huge, negative, not numbers, unicode, empty).
GOOD_NUMBERS = ["1", "4", "16", "128", "512", " 8 ", "1_000", "1000000", "١٢"]
BAD_NUMBERS = ["0", "-1", "-0", "1e3", "1e400", "9" * 60, "1" + "0" * 300, "10**60", "nan", "sNaN", "inf", "0x10",
               "1e-9", "0.5", "1000001", "10000001", "1001t", "１２"]
GOOD_COUNTS = ["124439808", "7b", "1.3B", "350M", "7e9", "1000000000000000"]
JUNK = ["", " ", "\n", "\x00", "é", "💥", "--", "-", "a" * 5000, "gpt2\nevil", "'; rm -rf /", "%s%n", "../../etc",
        "null", "None", "true"]
MODELS = ["gpt2", "llama-2-7b", "vit-b-16", "resnet50", "t5-base", "bert-base-uncased", "meta-llama/Llama-2-7b-hf",
          "timm/resnet50.a1_in1k"]
BAD_MODELS = ["gpt3", "x" * 300, "llama-2-7b" * 30]
GPUS = ["t4", "a100-80gb", "8xh100-sxm", "p4d.24xlarge", "2xp4d.24xlarge", "rtx4090", "h200", "mi300x",
        "ml.p4d.24xlarge", "Standard_ND96asr_v4", "1000000xt4"]
BAD_GPUS = ["0xt4", "1000001xt4", "9" * 30 + "xt4", "t5", "h100" * 100]
SIZES = ["48GiB", "80GB", "8 GiB", "1024TiB", "0.001KB", "48 gib"]
BAD_SIZES = ["0GiB", "-1GiB", "1e3GiB", "9" * 60 + "GiB", "1025TiB", "48", "GiB", "1PiB"]
OPTIONS = {  # option: (values a run can have, values it cannot)
    "--model": (MODELS, BAD_MODELS), "--params": (GOOD_COUNTS, BAD_NUMBERS), "--gpu": (GPUS, BAD_GPUS),
    "--gpu-memory": (SIZES, BAD_SIZES), "--batch-size": (GOOD_NUMBERS, BAD_NUMBERS),
    "--seq-len": (GOOD_NUMBERS + ["10000000"], BAD_NUMBERS), "--image-size": (GOOD_NUMBERS[:-2], BAD_NUMBERS),
    "--max-new-tokens": (GOOD_NUMBERS, BAD_NUMBERS), "--grad-accum": (GOOD_NUMBERS, BAD_NUMBERS),
    "--world-size": (GOOD_NUMBERS, BAD_NUMBERS), "--lora": (GOOD_NUMBERS[:-2], BAD_NUMBERS),
    "--precision": (["fp32", "amp", "fp16", "bf16"], ["fp8"]),
    "--optimizer": (["sgd", "adamw", "adamw-8bit", "lion", "adagrad"], ["nadam"]),
    "--sharding": (["none", "ddp", "fsdp", "zero-1", "zero-2", "zero-3"], ["zero-4"]),
    "--task": (["causal-lm", "masked-lm", "seq-cls", "token-cls", "seq2seq", "image-cls", "backbone"], ["lm"]),
    "--quantization": (["none", "int8", "nf4", "fp4"], ["int4"]),
    "--lora-targets": (["q_proj,v_proj", "c_attn", "all-linear", "query,value,dense", "wo"],
                       ["attn", ",", "q_proj,,x"]),
    "--trainable-params": (GOOD_COUNTS[:4], BAD_NUMBERS),
    "--model-config": (["config.json", "missing.json"], ["."]),
}
FLAGS = ["--checkpointing", "--no-checkpointing", "--flash", "--inference", "--generate", "--offload-optimizer",
         "--fused-optimizer", "--lora", "--version", "--bogus", "-h"]
CONFIG_VALUES = GPUS + BAD_GPUS + SIZES + BAD_SIZES + JUNK[:6]


def _scripts(folder: Path) -> List[str]:
    script = folder / "train.py"
    script.write_text("import torch\nfrom transformers import AutoModelForCausalLM\n"
                      "model = AutoModelForCausalLM.from_pretrained('gpt2').cuda()\n"
                      "loader = torch.utils.data.DataLoader(ds, batch_size=8)\n")
    broken = folder / "broken.py"
    broken.write_bytes(b"\xff\xfe def (:")
    found = [str(script), str(broken), str(folder), str(folder / "missing.py"), "-", ""]
    if hasattr(os, "mkfifo"):
        os.mkfifo(folder / "fifo")
        found.append(str(folder / "fifo"))
    if os.path.exists("/dev/zero"):
        found.append("/dev/zero")
    return found


def _argv(rng: random.Random, scripts: List[str]) -> List[str]:
    roll = rng.random()
    if roll < 0.04:
        return rng.choice([[], ["gpus"], ["models", "--format", "json"], ["explain", rng.choice(JUNK + ["TP001"])],
                           ["--version"], ["gpus", "--format", rng.choice(JUNK)]])
    argv: List[str] = ["estimate"] if rng.random() < 0.7 else []
    if rng.random() < 0.3:
        argv.append(rng.choice(scripts))
    if rng.random() < 0.6:
        argv += ["--model", rng.choice(MODELS)]
    for _ in range(rng.randint(0, 6)):
        if rng.random() < 0.1:
            argv.append(rng.choice(FLAGS))
            continue
        option = rng.choice(sorted(OPTIONS))
        good, bad = OPTIONS[option]
        pool = good if rng.random() < 0.8 else (bad if rng.random() < 0.7 else JUNK)
        argv += [option, rng.choice(pool)]
    if rng.random() < 0.5:
        argv += ["--format", "json"]
    return argv


def _asks_for_json(argv: List[str]) -> bool:
    if {"-h", "--help", "--version"} & set(argv) or "--format" not in argv:
        return False
    last = len(argv) - 1 - argv[::-1].index("--format")
    return argv[last + 1:last + 2] == ["json"]


def test_random_command_lines_never_escape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(SEED)
    scripts = _scripts(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "config.json").write_text('{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, '
                                      '"num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000}')
    statuses = set()
    parsed = 0
    for round_ in range(ROUNDS):
        config = work / "setup.cfg"
        if rng.random() < 0.15:
            key = rng.choice(["tp-target-gpu", "tp_target_gpu", "tp-gpu-memory", "tp_gpu_memory"])
            config.write_text(f"[flake8]\n{key} = {rng.choice(CONFIG_VALUES).strip() or 't4'}\n", encoding="utf-8")
        elif config.exists():
            config.unlink()
        argv = _argv(rng, scripts)
        entry = cli.estimate_main if rng.random() < 0.2 else cli.main
        status = entry(argv)
        out, err = capsys.readouterr()
        where = f"round {round_}: {entry.__name__}({argv!r:.300})"
        assert status in (0, 1, 2), where
        assert "Traceback" not in out + err, where
        assert "internal error" not in err, f"{where}: {err}"
        if status == 2:
            assert err.count("\n") <= 1 and (not err or err.endswith("\n")), f"{where}: {err!r}"
        elif _asks_for_json(argv):
            data = json.loads(out)  # one object, nothing around it
            assert isinstance(data, (dict, list)), where
            if isinstance(data, dict) and "fits" in data:
                assert (data["fits"] is False) is (status == 1), where
            parsed += 1
        statuses.add(status)
    assert parsed > 20  # the JSON check really ran
    assert statuses == {0, 1, 2}  # the generator really reaches every outcome
