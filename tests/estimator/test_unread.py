"""What the reader could not read is named, never a dead end; model names as code writes them."""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from flake8_torch_preflight.estimator import cli, extract
from flake8_torch_preflight.estimator.names import resolve_model

HAS_YAML = True
try:
    import yaml  # noqa: F401
except ImportError:  # pragma: no cover - the recipes extra
    HAS_YAML = False


def run_cli(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    status = cli.main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_json(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Dict[str, Any]:
    status, out, err = run_cli(["estimate"] + argv + ["--format", "json"], capsys)
    assert status in (0, 1) and err == "", err
    data: Dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize("name, key", [
    ("Qwen/Qwen3-4B-Instruct-2507", "qwen3-4b"),
    ("NousResearch/Meta-Llama-3.1-8B", "llama-3.1-8b"),
    ("google/gemma-2-9b-it", "gemma-2-9b"),
    ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
    ("Qwen/Qwen2.5-1.5B-Instruct", "qwen2.5-1.5b"),
    ("gpt2", "gpt2"),
])
def test_fine_tune_names_resolve_to_their_architecture(name: str, key: str) -> None:
    spec = resolve_model(name)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize("name", ["Qwen/Qwen1.5-14B-Chat", "my-org/custom-model", "instruct", ""])
def test_names_outside_the_catalogue_stay_unknown(name: str) -> None:
    assert resolve_model(name) is None


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_a_model_class_that_cannot_be_counted_is_named_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "train.py", """\
        import torch
        from torch.utils.data import DataLoader
        from somewhere import Net, data, size

        model = Net(size).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(data, batch_size=size.batch)
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
        """)
    reading = extract.read_reading(path)
    assert reading.run.model is None and reading.run.params is None
    assert reading.unread["model"] == "Net(size): parameter count not known at train.py:5"
    assert reading.unread["batch_size"] == "the batch size of DataLoader(data, batch_size=size.batch) at train.py:7"


def test_a_script_without_a_model_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, "train.py", "import torch\nx = torch.ones(3)\n")
    reading = extract.read_reading(path)
    assert reading.unread["model"].startswith("no model built in the file")


def test_the_report_shows_what_was_read_and_names_the_model_it_could_not(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "train.py", """\
        import torch
        from torch.utils.data import DataLoader
        from somewhere import Net, data

        model = Net().cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loader = DataLoader(data, batch_size=32)
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
        """)
    data = run_json([path, "--gpu", "t4"], capsys)
    assert data["model"]["name"] is None and data["fits"] is None
    assert data["config"]["batch_size"] == 32 and data["config"]["optimizer"] == "sgd-momentum"
    assert data["unread"] == {"model": "Net(): parameter count not known at train.py:5"}
    status, out, err = run_cli(["estimate", path, "--gpu", "t4"], capsys)
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == ("model: not read: Net(): parameter count not known at train.py:5 "
                                   "(give --model NAME or --params N)")
    data = run_json([path, "--gpu", "t4", "--params", "1000000"], capsys)
    assert data["unread"] == {} and data["model"]["params"] == 1000000


@pytest.mark.skipif(not HAS_YAML, reason="needs PyYAML (the recipes extra)")
def test_a_recipe_names_the_model_it_could_not_find(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "sft.yaml", """\
        model_name_or_path: my-org/custom-model
        per_device_train_batch_size: 2
        cutoff_len: 1024
        """)
    data = run_json([path], capsys)
    assert data["unread"] == {"model": "model_name_or_path 'my-org/custom-model' at sft.yaml:1: not in the "
                                       "catalogue and no config.json in that folder"}
    assert (data["config"]["batch_size"], data["config"]["seq_len"]) == (2, 1024)


@pytest.mark.skipif(not HAS_YAML, reason="needs PyYAML (the recipes extra)")
def test_a_deepspeed_file_named_from_the_project_root_is_found(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "examples" / "deepspeed").mkdir(parents=True)
    (tmp_path / "examples" / "deepspeed" / "z3.json").write_text('{"zero_optimization": {"stage": 3}}')
    (tmp_path / "examples" / "train").mkdir()
    path = write(tmp_path, os.path.join("examples", "train", "full.yaml"), """\
        model_name_or_path: Qwen/Qwen3-4B-Instruct-2507
        finetuning_type: full
        deepspeed: examples/deepspeed/z3.json
        per_device_train_batch_size: 1
        cutoff_len: 2048
        """)
    monkeypatch.chdir(tmp_path / "examples")  # neither the recipe's folder nor the root
    data = run_json([path], capsys)
    assert data["model"]["name"] == "qwen3-4b"
    assert data["config"]["sharding"] == "zero-3"


@pytest.mark.parametrize("config, mode", [
    ('BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")', "nf4"),
    ("BitsAndBytesConfig(load_in_4bit=True)", "fp4"),
    ("BitsAndBytesConfig(load_in_8bit=True)", "int8"),
])
def test_bitsandbytes_config_sets_the_weights_storage(tmp_path: Path, config: str, mode: str) -> None:
    path = write(tmp_path, "train.py", f"""\
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig
        from peft import LoraConfig, get_peft_model

        bnb = {config}
        model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", quantization_config=bnb)
        model = get_peft_model(model, LoraConfig(r=64, target_modules=["q_proj", "v_proj", "fc1"]))
        model.train()
        """)
    run = extract.read_reading(path).run
    assert run.quantization == mode and run.sources["quantization"] == "train.py:5"
    assert (run.lora, run.lora_rank, run.lora_targets) == (True, 64, ("q_proj", "v_proj", "fc1"))
    assert run.sources["lora_targets"] == "train.py:6"


def test_lora_on_module_names_the_cost_model_does_not_know_leaves_the_targets_unread(tmp_path: Path) -> None:
    path = write(tmp_path, "train.py", """\
        from transformers import AutoModelForCausalLM
        from peft import LoraConfig, get_peft_model

        model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m")
        model = get_peft_model(model, LoraConfig(r=4, target_modules=["to_q", "to_k"]))
        """)
    reading = extract.read_reading(path)
    assert reading.run.lora_targets is None and "lora_rank" in reading.unknown


def test_a_micro_batch_loop_is_the_accumulation(tmp_path: Path) -> None:
    path = write(tmp_path, "train.py", """\
        import torch
        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.AdamW(model.parameters())
        for step in range(100):
            for micro_step in range(8):
                model(torch.ones(2, 4)).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        """)
    run = extract.read_reading(path).run
    assert run.grad_accum_steps == 8 and run.sources["grad_accum_steps"] == "train.py:5"


def test_an_accumulation_computed_at_run_time_is_named_not_taken_as_one(tmp_path: Path) -> None:
    path = write(tmp_path, "train.py", """\
        import os
        import torch
        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.AdamW(model.parameters())
        grad_accum_steps = 524288 // (64 * int(os.environ["WORLD_SIZE"]))
        for step in range(100):
            for micro_step in range(grad_accum_steps):
                model(torch.ones(2, 4)).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        """)
    reading = extract.read_reading(path)
    assert "grad_accum_steps" not in reading.run.sources
    assert reading.unread["grad_accum_steps"] == "the accumulation over grad_accum_steps at train.py:7"
