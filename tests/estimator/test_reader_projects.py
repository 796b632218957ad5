"""The reader follows a run into what the project and its command line fix: a model picked from a
namespace or a table by a default, a function's defaults filled by a CLI, a configurator that
overrides globals only from the command line, Lightning strategies bound in branches, litgpt
recipes, and a project's own argument file. Reduced fixtures written for these tests."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Dict

import pytest

from flake8_torch_preflight.estimator import cli, extract

HAS_YAML = True
try:
    import yaml  # noqa: F401
except ImportError:  # pragma: no cover - the recipes extra
    HAS_YAML = False


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def estimate(path: str, capsys: pytest.CaptureFixture[str]) -> Dict[str, Any]:
    status = cli.main(["estimate", path, "--gpu", "a100-80gb", "--format", "json"])
    captured = capsys.readouterr()
    assert status in (0, 1) and captured.err == "", captured.err
    data: Dict[str, Any] = json.loads(captured.out)
    return data


def test_a_torchvision_model_picked_by_an_argparse_default(tmp_path: Path) -> None:
    path = write(tmp_path, "main.py", """\
        import argparse
        import torch
        import torchvision.models as models
        parser = argparse.ArgumentParser()
        parser.add_argument("--arch", default="resnet18")
        args = parser.parse_args()
        model = models.__dict__[args.arch]().cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loader = torch.utils.data.DataLoader(range(10), batch_size=32)
        for x in loader:
            model(x).sum().backward()
            optimizer.step()
        """)
    reading = extract.read_reading(path)
    assert reading.run.model is not None and reading.run.model.key == "resnet18"
    assert reading.run.sources["model"] == "main.py:7"


def test_a_project_factory_picked_from_a_table(tmp_path: Path) -> None:
    write(tmp_path, "models.py", """\
        import torch.nn as nn
        def small(classes=10):
            return nn.Linear(16, classes)
        def large(classes=10):
            return nn.Linear(64, classes)
        MODELS = {"small": small, "large": large}
        """)
    path = write(tmp_path, "train.py", """\
        import argparse
        import torch
        from models import MODELS
        parser = argparse.ArgumentParser()
        parser.add_argument("--model", default="large")
        args = parser.parse_args()
        model = MODELS[args.model](classes=3)
        optimizer = torch.optim.Adam(model.parameters())
        for step in range(10):
            model(torch.randn(4, 64)).sum().backward()
            optimizer.step()
        """)
    assert extract.read_reading(path).run.params == 64 * 3 + 3


def test_a_cli_setup_function_fabric_fsdp_and_no_backward_sync(tmp_path: Path) -> None:
    path = write(tmp_path, "pretrain.py", """\
        import lightning as L
        import torch
        from lightning.fabric.strategies import FSDPStrategy, XLAStrategy
        global_batch_size = 256
        micro_batch_size = 4
        devices_default = 4
        gradient_accumulation_steps = global_batch_size // devices_default // micro_batch_size

        def setup(devices: int = 4, tpu: bool = False, precision: str = "bf16-mixed") -> None:
            if devices > 1:
                if tpu:
                    devices = "auto"
                    strategy = XLAStrategy()
                else:
                    strategy = FSDPStrategy(activation_checkpointing_policy=None, cpu_offload=False)
            else:
                strategy = "auto"
            fabric = L.Fabric(devices=devices, strategy=strategy, precision=precision)
            main(fabric)

        def main(fabric):
            model = torch.nn.Linear(8, 8)
            optimizer = torch.optim.AdamW(model.parameters())
            model, optimizer = fabric.setup(model, optimizer)
            for it in range(100):
                is_accumulating = (it + 1) % gradient_accumulation_steps != 0
                with fabric.no_backward_sync(model, enabled=is_accumulating):
                    fabric.backward(model(torch.randn(micro_batch_size, 8)).sum())
                if not is_accumulating:
                    optimizer.step()
                    optimizer.zero_grad()

        if __name__ == "__main__":
            from jsonargparse import CLI
            CLI(setup)
        """)
    run = extract.read_reading(path).run
    assert (run.sharding, run.world_size, run.grad_accum_steps, run.precision) == ("fsdp", 4, 16, "amp")
    assert run.sources["world_size"] == "pretrain.py:9"
    assert run.sources["precision"] == "pretrain.py:18"


def test_a_function_called_in_the_file_keeps_its_call_sites(tmp_path: Path) -> None:
    path = write(tmp_path, "run.py", """\
        import lightning as L
        def setup(devices: int = 4) -> None:
            fabric = L.Fabric(devices=devices, strategy="ddp")
        setup(devices=2)
        """)
    assert extract.read_reading(path).run.world_size == 2


def test_a_command_line_configurator_keeps_the_globals_as_defaults(tmp_path: Path) -> None:
    write(tmp_path, "configurator.py", """\
        import sys
        for arg in sys.argv[1:]:
            key, val = arg.split("=")
            globals()[key[2:]] = val
        """)
    path = write(tmp_path, "train.py", """\
        import torch
        block_size = 256
        exec(open("configurator.py").read())
        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.AdamW(model.parameters())
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        """)
    run = extract.read_reading(path).run
    assert run.seq_len == 256 and run.sources["seq_len"] == "train.py:2"


def test_an_exec_of_another_file_still_hides_the_globals(tmp_path: Path) -> None:
    write(tmp_path, "settings.py", "block_size = 64\n")
    path = write(tmp_path, "train.py", """\
        import torch
        block_size = 256
        exec(open("settings.py").read())
        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.AdamW(model.parameters())
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        """)
    run = extract.read_reading(path).run
    assert run.seq_len is None or "seq_len" not in run.sources


def test_freezing_is_named_as_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "train.py", """\
        import torch
        import torchvision
        model = torchvision.models.resnet18().cuda()
        for p in model.parameters():
            p.requires_grad = False
        optimizer = torch.optim.Adam(model.fc.parameters())
        loader = torch.utils.data.DataLoader(range(8), batch_size=8)
        for x in loader:
            model(x).sum().backward()
            optimizer.step()
        """)
    reading = extract.read_reading(path)
    assert reading.unread["trainable"] == (
        "p.requires_grad = False freezes parameters (how many not counted) at train.py:5")


def test_an_accelerator_without_a_plugin_names_its_sharding(tmp_path: Path) -> None:
    path = write(tmp_path, "train.py", """\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="bf16")
        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.AdamW(model.parameters())
        model, optimizer = accelerator.prepare(model, optimizer)
        accelerator.backward(model(torch.randn(2, 4)).sum())
        optimizer.step()
        """)
    assert extract.read_reading(path).unread["sharding"] == (
        "Accelerator(mixed_precision='bf16') leaves sharding to `accelerate launch` and its config at train.py:3")


@pytest.mark.skipif(not HAS_YAML, reason="needs PyYAML (the recipes extra)")
def test_a_litgpt_recipe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "qlora.yaml", """\
        checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf
        precision: bf16-true
        quantize: bnb.nf4-dq
        devices: 2
        num_nodes: 1
        lora_r: 16
        lora_query: true
        lora_key: false
        lora_value: true
        lora_projection: false
        lora_mlp: false
        lora_head: false
        train:
          global_batch_size: 32
          micro_batch_size: 4
          max_seq_length: 512
        """)
    data = estimate(path, capsys)
    config = data["config"]
    assert data["model"]["name"] == "llama-2-7b"
    assert (config["precision"], config["quantization"], config["lora_rank"]) == ("bf16", "nf4", 16)
    assert config["lora_targets"] == ["q_proj", "v_proj"]
    assert (config["batch_size"], config["seq_len"], config["grad_accum_steps"], config["world_size"]) == (4, 512, 4, 2)
    assert config["sources"]["quantization"] == "qlora.yaml:3"


@pytest.mark.skipif(not HAS_YAML, reason="needs PyYAML (the recipes extra)")
def test_a_litgpt_recipe_on_every_device_names_its_accumulation(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "full.yaml", """\
        checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf
        devices: auto
        train:
          global_batch_size: 32
          micro_batch_size: 4
        """)
    data = estimate(path, capsys)
    assert "grad_accum_steps" in data["unread"]


def test_a_projects_own_argument_file_names_quantization_and_dtype(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "args.json", """\
        {
          "output_dir": "out",
          "model_name_or_path": "meta-llama/Llama-2-7b-hf",
          "per_device_train_batch_size": 1,
          "lora_rank": 64,
          "fp16": true
        }
        """)
    data = estimate(path, capsys)
    assert data["unread"]["quantization"] == ("the project's own arguments (lora_rank at args.json:5) load the model; "
                                              "its quantization is not stated")
    assert data["config"]["sources"].get("precision") != "args.json:6"
