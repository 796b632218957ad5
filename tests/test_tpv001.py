"""TPV001 beyond the fixture markers: what its message says, and when it must stay silent.

The fixtures (tests/fixtures/rules/tpv001*.py) pin which lines report; these tests read the
message text (peak, interval, target, usable capacity, the solver's changes with their GiB)
and the lightest-value policy for fields the reader could not resolve.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import List

from harness import run_plugin

from flake8_torch_preflight.analysis.build import build_module
from flake8_torch_preflight.estimator import catalogue, extract
from flake8_torch_preflight.rules.tpv001_projected_oom import lightest_runs

GPT2_MEDIUM = """
    import torch
    from torch.utils.data import DataLoader
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained("gpt2-medium", torch_dtype=torch.float32,
                                            attn_implementation="eager")
    model.cuda()
    loader = DataLoader(ds, batch_size=16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    block_size = 1024
    for batch in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
"""


def findings(tmp_path: Path, source: str, options: List[str]) -> List[str]:
    path = tmp_path / "train.py"
    text = textwrap.dedent(source)
    return [message for _, _, message in run_plugin(path, text, ["TPV001"], options)]


def test_message_names_peak_interval_target_and_the_fix(tmp_path: Path) -> None:
    (message,) = findings(tmp_path, GPT2_MEDIUM, ["--tp-target-gpu", "t4"])
    assert message.startswith("TPV001 gpt2-medium is projected to need more memory than t4 has")
    assert "CUDA out of memory" in message
    assert re.search(r"projected peak \d+\.\d GiB \(\d+\.\d–\d+\.\d\) > t4 usable 14\.6 GiB", message), message
    fix = message.split(" Fix: ", 1)[1]
    assert re.search(r"\(-\d+\.\d GiB\)", fix), fix


def test_reported_at_the_line_that_builds_the_model(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    results = run_plugin(path, textwrap.dedent(GPT2_MEDIUM), ["TPV001"], ["--tp-target-gpu", "t4"])
    assert [(line, col) for line, col, _ in results] == [(6, 8)]


def test_larger_gpu_and_instances_are_silent(tmp_path: Path) -> None:
    # eager attention at 16 x 1024 keeps about 82 GiB of activations (tests/calibration measures
    # GPT-2's per-layer bytes), so an 80 GB part is not larger; a 141 GB one is
    assert findings(tmp_path, GPT2_MEDIUM, ["--tp-target-gpu", "h200"]) == []
    assert findings(tmp_path, GPT2_MEDIUM, ["--tp-gpu-memory", "141GiB"]) == []


def test_silent_without_a_target(tmp_path: Path) -> None:
    assert findings(tmp_path, GPT2_MEDIUM, []) == []


def test_silent_when_the_model_is_not_identified(tmp_path: Path) -> None:
    source = GPT2_MEDIUM.replace('"gpt2-medium"', "pick_model()")
    assert findings(tmp_path, source, ["--tp-target-gpu", "t4"]) == []


def test_silent_when_the_activations_decide_and_are_unknown(tmp_path: Path) -> None:
    # gpt2-medium's weights, gradients and AdamW state (~5.3 GiB) fit; the batch is unknown,
    # so the activations that would overflow cannot be shown to.
    source = GPT2_MEDIUM.replace("batch_size=16", "batch_size=args.batch_size")
    assert findings(tmp_path, source, ["--tp-target-gpu", "t4"]) == []


def test_sharding_over_an_instance_uses_its_gpu_count(tmp_path: Path) -> None:
    source = """
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from transformers import AutoModelForCausalLM
        model = FSDP(AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf", torch_dtype=torch.bfloat16))
        optimizer = torch.optim.AdamW(model.parameters())
        for batch in loader:
            model(**batch).loss.backward()
            optimizer.step()
    """
    assert findings(tmp_path, source, ["--tp-target-gpu", "t4"]) == []  # how many T4s: unknown
    (message,) = findings(tmp_path, source, ["--tp-target-gpu", "2xt4"])  # 70B over two T4s
    assert "2xt4" in message


def _reading(tmp_path: Path, source: str) -> extract.RunReading:
    path = tmp_path / "train.py"
    text = textwrap.dedent(source)
    return extract.read_module(build_module(text, str(path)), str(path))


def test_unresolved_fields_take_their_lightest_values(tmp_path: Path) -> None:
    source = """
        import torch
        from transformers import AutoModelForCausalLM
        from my_lib import make_optimizer
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        optimizer = make_optimizer(model)
        for batch in loader:
            model(**batch).loss.backward()
    """
    reading = _reading(tmp_path, source)
    assert {"precision", "optimizer", "flash"} <= reading.unknown
    runs = lightest_runs(reading, catalogue.find_gpu("t4"))
    assert sorted(r.precision for r in runs) == ["amp", "bf16", "fp16", "fp32"]
    assert all(r.optimizer == "sgd" and r.flash for r in runs)


def test_sequence_length_read_as_a_maximum_is_not_used(tmp_path: Path) -> None:
    source = """
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float32)
        batch = tokenizer(texts, max_length=1024, truncation=True)
    """
    reading = _reading(tmp_path, source)
    assert reading.run.seq_len == 1024 and "seq_len" in reading.upper_bounds
    (run,) = lightest_runs(reading, catalogue.find_gpu("t4"))
    assert run.seq_len is None


def test_image_model_without_an_image_size_has_no_activation_floor(tmp_path: Path) -> None:
    source = """
        import torch, torchvision
        model = torchvision.models.vit_b_16()
        loader = torch.utils.data.DataLoader(ds, batch_size=512)
    """
    reading = _reading(tmp_path, source)
    (run,) = lightest_runs(reading, catalogue.find_gpu("t4"))
    assert run.batch_size is None  # the cost model would otherwise assume the native 224 px
