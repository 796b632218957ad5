"""The run reader: each field, each source form it is read from, and the line it records.

A trailing ``# <- field`` comment in a test source marks the line ``sources[field]`` must name.
Snippets are written for these tests; shapes follow common scripts (Hugging Face
``run_clm.py``-style argument parsing, torchvision's ImageNet reference script, DeepSpeed
configs), never copied from them.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Dict

import pytest

from flake8_torch_preflight.analysis.setup.build import build_module
from flake8_torch_preflight.estimator import extract
from flake8_torch_preflight.estimator.catalogue import find_model
from flake8_torch_preflight.estimator.costmodel import estimate
from flake8_torch_preflight.estimator.run import RunSpec, RunSpecError


def read(source: str, tmp_path: Path, name: str = "train.py", files: Dict[str, str] = None) -> extract.RunReading:
    for other, text in (files or {}).items():
        (tmp_path / other).write_text(textwrap.dedent(text), encoding="utf-8")
    path = tmp_path / name
    text = textwrap.dedent(source)
    path.write_text(text, encoding="utf-8")
    return extract.read_module(build_module(text, str(path)), str(path))


def line(source: str, field: str, name: str = "train.py") -> str:
    """``train.py:N`` for the line of ``source`` marked ``# <- field``."""
    for number, text in enumerate(textwrap.dedent(source).splitlines(), start=1):
        if text.rstrip().endswith("# <- " + field):
            return "{}:{}".format(name, number)
    raise AssertionError("no marker for " + field)


TRAIN_LOOP = """
for batch in loader:
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


# ===================================================================================== model


def test_from_pretrained_auto_class(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")  # <- model
    """
    reading = read(source, tmp_path)
    assert reading.run.model is not None and reading.run.model.key == "gpt2"
    assert reading.run.sources["model"] == line(source, "model")
    assert reading.model_node is not None and reading.model_node.lineno == 3


def test_from_pretrained_model_class_through_a_constant_and_fstring(tmp_path: Path) -> None:
    source = """
        import transformers
        SIZE = "7b"
        NAME = f"meta-llama/Llama-2-{SIZE}-hf"
        model = transformers.LlamaForCausalLM.from_pretrained(NAME)  # <- model
    """
    reading = read(source, tmp_path)
    assert reading.run.model.key == "llama-2-7b"
    assert reading.run.sources["model"] == line(source, "model")


def test_model_name_from_an_argparse_default(tmp_path: Path) -> None:
    source = """
        import argparse
        from transformers import AutoModelForSequenceClassification
        parser = argparse.ArgumentParser()
        parser.add_argument("--model-name", default="bert-base-uncased")
        args = parser.parse_args()
        model = AutoModelForSequenceClassification.from_pretrained(args.model_name)  # <- model
    """
    assert read(source, tmp_path).run.model.key == "bert-base-uncased"


def test_tokenizers_and_configs_are_not_models(tmp_path: Path) -> None:
    source = """
        from transformers import AutoTokenizer, AutoConfig
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        config = AutoConfig.from_pretrained("gpt2")
    """
    reading = read(source, tmp_path)
    assert reading.model_node is None and reading.run.model is None
    assert "model" in reading.unknown


def test_pipeline_generates(tmp_path: Path) -> None:
    source = """
        from transformers import pipeline
        generator = pipeline("text-generation", model="gpt2")  # <- generation
        print(generator(["hello"], batch_size=4))  # <- batch_size
    """
    reading = read(source, tmp_path)
    assert reading.run.model.key == "gpt2"
    assert reading.run.generation is True
    assert reading.run.sources["generation"] == line(source, "generation")
    assert reading.run.batch_size == 4


def test_torchvision_builder_and_num_classes(tmp_path: Path) -> None:
    source = """
        import torch
        from torchvision import models
        model = models.resnet50(num_classes=10)  # <- model
    """
    reading = read(source, tmp_path)
    assert reading.run.model.key == "resnet50"
    # fc: 2048 * 10 + 10 instead of 2048 * 1000 + 1000
    assert reading.run.total_params == 25_557_032 - (2048 * 1000 + 1000) + (2048 * 10 + 10)
    assert reading.run.sources["params"] == line(source, "model")


def test_torchvision_get_model(tmp_path: Path) -> None:
    source = """
        import torchvision
        model = torchvision.models.get_model("resnet18", weights=None)
    """
    assert read(source, tmp_path).run.model.key == "resnet18"


def test_timm_create_model(tmp_path: Path) -> None:
    source = """
        import timm
        model = timm.create_model("vit_base_patch16_224", pretrained=True)
    """
    assert read(source, tmp_path).run.model.key == "vit-b-16"


def test_unknown_catalogue_name_is_noted_not_raised(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModel
        model = AutoModel.from_pretrained("my-org/my-private-model")
    """
    reading = read(source, tmp_path)
    assert reading.run.model is None and reading.run.total_params is None
    assert any("my-org/my-private-model" in note for note in reading.notes)


def test_module_subclass_in_the_file_is_counted(tmp_path: Path) -> None:
    source = """
        import torch.nn as nn
        HIDDEN = 256
        class Net(nn.Module):
            def __init__(self, hidden=HIDDEN):
                super().__init__()
                self.fc1 = nn.Linear(784, hidden)
                self.fc2 = nn.Linear(hidden, 10)
        model = Net()  # <- params
    """
    reading = read(source, tmp_path)
    assert reading.run.params == 784 * 256 + 256 + 256 * 10 + 10
    assert reading.run.sources["params"] == line(source, "params")
    assert reading.model_name == "Net"


def test_module_subclass_from_a_sibling_module(tmp_path: Path) -> None:
    sibling = """
        import torch.nn as nn
        WIDTH = 128
        class Net(nn.Module):
            def __init__(self, width=WIDTH):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 2))
    """
    source = """
        import torch
        from model_defs import Net
        model = Net(width=64)
    """
    reading = read(source, tmp_path, files={"model_defs.py": sibling})
    assert reading.run.params == 32 * 64 + 64 + 64 * 2 + 2


def test_inline_sequential(tmp_path: Path) -> None:
    source = """
        import torch
        from torch import nn
        model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.Flatten(), nn.Linear(16, 10))
    """
    assert read(source, tmp_path).run.params == (16 * 3 * 9 + 16) + 32 + (16 * 10 + 10)


def test_the_model_an_optimizer_trains_wins_over_a_larger_frozen_one(tmp_path: Path) -> None:
    source = """
        import torch
        import torch.nn as nn
        teacher = nn.Sequential(nn.Linear(1000, 1000))
        student = nn.Sequential(nn.Linear(10, 10))  # <- params
        optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    """
    reading = read(source, tmp_path)
    assert reading.run.params == 110
    assert reading.run.sources["params"] == line(source, "params")


def test_catalogue_backbone_inside_a_module_is_counted(tmp_path: Path) -> None:
    source = """
        import torch.nn as nn
        import timm
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.backbone = timm.create_model("resnet50")
                self.head = nn.Linear(2048, 10)
        model = Net()
    """
    reading = read(source, tmp_path)
    assert reading.run.params == 25_557_032 + 2048 * 10 + 10


def test_model_count_unknown_when_a_layer_is_opaque(tmp_path: Path) -> None:
    source = """
        import torch.nn as nn
        from backbones import build_backbone
        class Net(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.backbone = build_backbone(cfg)
                self.head = nn.Linear(2048, 10)
        model = Net(cfg)
    """
    reading = read(source, tmp_path)
    assert reading.model_node is not None and reading.run.total_params is None
    assert "model" in reading.unknown


# ================================================================================ batch size


def test_batch_size_literal(tmp_path: Path) -> None:
    source = """
        from torch.utils.data import DataLoader
        loader = DataLoader(dataset, batch_size=32, shuffle=True)  # <- batch_size
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size == 32
    assert reading.run.sources["batch_size"] == line(source, "batch_size")


def test_batch_size_positional(tmp_path: Path) -> None:
    source = """
        import torch
        loader = torch.utils.data.DataLoader(dataset, 12)
    """
    assert read(source, tmp_path).run.batch_size == 12


def test_batch_size_default_is_one(tmp_path: Path) -> None:
    source = """
        from torch.utils.data import DataLoader
        loader = DataLoader(dataset)  # <- batch_size
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size == 1
    assert reading.run.sources["batch_size"] == line(source, "batch_size")


def test_batch_size_from_argparse_records_the_default_line(tmp_path: Path) -> None:
    source = """
        import argparse
        from torch.utils.data import DataLoader
        def get_args():
            parser = argparse.ArgumentParser()
            parser.add_argument("--batch-size", type=int, default=64)  # <- batch_size
            return parser.parse_args()
        args = get_args()
        loader = DataLoader(dataset, batch_size=args.batch_size)
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size == 64
    assert reading.run.sources["batch_size"] == line(source, "batch_size")


def test_batch_size_argparse_string_default_and_set_defaults(tmp_path: Path) -> None:
    source = """
        import argparse
        from torch.utils.data import DataLoader
        parser = argparse.ArgumentParser()
        parser.add_argument("--bs", dest="bs", type=int, default="16")
        parser.set_defaults(bs=24)
        args = parser.parse_args()
        loader = DataLoader(dataset, batch_size=args.bs)
    """
    assert read(source, tmp_path).run.batch_size == 24


def test_batch_size_argparse_without_default_is_unknown(tmp_path: Path) -> None:
    source = """
        import argparse
        from torch.utils.data import DataLoader
        parser = argparse.ArgumentParser()
        parser.add_argument("--batch-size", type=int, required=True)
        args = parser.parse_args()
        loader = DataLoader(dataset, batch_size=args.batch_size)
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size is None and "batch_size" in reading.unknown


def test_batch_size_from_a_config_dict_and_arithmetic(tmp_path: Path) -> None:
    source = """
        from torch.utils.data import DataLoader
        config = {"batch_size": 16, "lr": 1e-3}  # <- batch_size
        loader = DataLoader(dataset, batch_size=config["batch_size"] * 2)
        other = DataLoader(dataset, batch_size=config.get("batch_size", 8) * 2)
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size == 32


def test_batch_size_from_a_dataclass_default(tmp_path: Path) -> None:
    source = """
        from dataclasses import dataclass
        from torch.utils.data import DataLoader
        @dataclass
        class Config:
            lr: float = 1e-3
            batch_size: int = 48  # <- batch_size
        cfg = Config()
        loader = DataLoader(dataset, batch_size=cfg.batch_size)
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size == 48
    assert reading.run.sources["batch_size"] == line(source, "batch_size")


def test_batch_size_from_a_dataclass_keyword(tmp_path: Path) -> None:
    source = """
        from dataclasses import dataclass
        from torch.utils.data import DataLoader
        @dataclass
        class Config:
            batch_size: int = 48
        cfg = Config(batch_size=96)
        loader = DataLoader(dataset, batch_size=cfg.batch_size)
    """
    assert read(source, tmp_path).run.batch_size == 96


def test_batch_size_of_the_loader_a_backward_loop_iterates(tmp_path: Path) -> None:
    source = """
        import torch
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        train_loader = DataLoader(train_set, batch_size=32)  # <- batch_size
        val_loader = DataLoader(val_set, batch_size=256)

        def train_epoch(loader):
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()

        def evaluate(loader):
            with torch.no_grad():
                for x, y in loader:
                    model(x)

        train_epoch(train_loader)
        evaluate(val_loader)
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size == 32
    assert reading.run.sources["batch_size"] == line(source, "batch_size")


def test_batch_size_ambiguous_loaders_are_unknown(tmp_path: Path) -> None:
    source = """
        from torch.utils.data import DataLoader
        a = DataLoader(train_set, batch_size=32)
        b = DataLoader(val_set, batch_size=64)
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size is None and "batch_size" in reading.unknown


def test_batch_size_from_training_arguments(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype="float32")
        args = TrainingArguments("out", per_device_train_batch_size=4, gradient_accumulation_steps=8,  # <- batch_size
                                 bf16=True, optim="adamw_bnb_8bit", gradient_checkpointing=True)
        trainer = Trainer(model=model, args=args, train_dataset=ds)
        trainer.train()
    """
    reading = read(source, tmp_path)
    run = reading.run
    assert (run.batch_size, run.grad_accum_steps) == (4, 8)
    assert run.sources["batch_size"] == line(source, "batch_size")
    assert run.precision == "amp" and run.optimizer == "adamw-8bit" and run.checkpointing is True
    assert run.training


def test_training_arguments_defaults(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype="float32")
        args = TrainingArguments(output_dir="out")
        Trainer(model=model, args=args).train()
    """
    run = read(source, tmp_path).run
    assert (run.batch_size, run.optimizer, run.precision) == (8, "adamw", "fp32")


def test_hf_argument_parser_leaves_the_trainer_settings_unknown(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
        parser = HfArgumentParser(TrainingArguments)
        (training_args,) = parser.parse_args_into_dataclasses()
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        Trainer(model=model, args=training_args).train()
    """
    reading = read(source, tmp_path)
    assert {"batch_size", "precision", "optimizer", "sharding"} <= reading.unknown


# ============================================================================ sequence, image


def test_tokenizer_max_length_with_max_length_padding_is_exact(tmp_path: Path) -> None:
    source = """
        from transformers import AutoTokenizer
        MAX_LEN = 384
        tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
        batch = tokenizer(texts, max_length=MAX_LEN, padding="max_length", truncation=True)  # <- seq_len
    """
    reading = read(source, tmp_path)
    assert reading.run.seq_len == 384 and "seq_len" not in reading.upper_bounds
    assert reading.run.sources["seq_len"] == "train.py:3"  # the constant's line


def test_tokenizer_max_length_with_truncation_only_is_an_upper_bound(tmp_path: Path) -> None:
    source = """
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
        batch = tokenizer(texts, max_length=256, truncation=True)
    """
    reading = read(source, tmp_path)
    assert reading.run.seq_len == 256 and "seq_len" in reading.upper_bounds


def test_block_size_assignment(tmp_path: Path) -> None:
    source = """
        import torch
        block_size = 1024  # <- seq_len
    """
    reading = read(source, tmp_path)
    assert reading.run.seq_len == 1024
    assert reading.run.sources["seq_len"] == line(source, "seq_len")


def test_max_seq_length_with_packing_is_exact(tmp_path: Path) -> None:
    source = """
        from trl import SFTConfig
        config = SFTConfig(output_dir="out", max_seq_length=2048, packing=True)
    """
    reading = read(source, tmp_path)
    assert reading.run.seq_len == 2048 and "seq_len" not in reading.upper_bounds


def test_image_size_from_crops(tmp_path: Path) -> None:
    source = """
        import torch
        from torchvision import transforms
        train_tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])  # <- image_size
        val_tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)])
    """
    reading = read(source, tmp_path)
    assert reading.run.image_size == 224
    assert reading.run.sources["image_size"] == line(source, "image_size")


def test_image_size_from_a_resize_tuple(tmp_path: Path) -> None:
    source = """
        import torchvision.transforms as T
        tf = T.Resize((320, 240))
    """
    assert read(source, tmp_path).run.image_size == 240


# ================================================================================= precision


@pytest.mark.parametrize(
    "setup, expected",
    [
        ('with torch.autocast("cuda", dtype=torch.bfloat16):  # <- precision\n    pass', "amp"),
        ('with torch.cuda.amp.autocast():  # <- precision\n    pass', "amp"),
        ("scaler = torch.amp.GradScaler()  # <- precision", "amp"),
        ("model.half()  # <- precision", "fp16"),
        ("model = model.to(device, dtype=torch.bfloat16)  # <- precision", "bf16"),
        ("model.to(torch.float16)  # <- precision", "fp16"),
        ("model.bfloat16()  # <- precision", "bf16"),
    ],
)
def test_precision_forms(tmp_path: Path, setup: str, expected: str) -> None:
    source = "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 4))\ndevice = 'cuda'\n" + setup + "\n"
    reading = read(source, tmp_path)
    assert reading.run.precision == expected
    assert reading.run.sources["precision"] == line(source, "precision")


def test_tensor_casts_are_not_model_precision(tmp_path: Path) -> None:
    source = """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
        x = torch.randn(2, 4).half()
        y = x.to(torch.bfloat16)
    """
    reading = read(source, tmp_path)
    assert reading.run.precision == "fp32" and "precision" not in reading.run.sources


def test_autocast_disabled_by_an_argparse_flag(tmp_path: Path) -> None:
    source = """
        import argparse, torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--amp", action="store_true")
        args = parser.parse_args()
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
        with torch.autocast("cuda", enabled=args.amp):
            pass
    """
    assert read(source, tmp_path).run.precision == "fp32"


def test_from_pretrained_dtype(tmp_path: Path) -> None:
    source = """
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)  # <- precision
    """
    reading = read(source, tmp_path)
    assert reading.run.precision == "bf16" and "precision" not in reading.unknown
    assert reading.run.sources["precision"] == line(source, "precision")


def test_from_pretrained_without_dtype_leaves_precision_unknown(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
    """
    assert "precision" in read(source, tmp_path).unknown


def test_accelerator_mixed_precision(tmp_path: Path) -> None:
    source = """
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2)  # <- precision
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    """
    reading = read(source, tmp_path)
    assert reading.run.precision == "amp" and reading.run.grad_accum_steps == 2
    assert reading.run.sources["precision"] == line(source, "precision")


def test_accelerator_without_mixed_precision_is_unknown(tmp_path: Path) -> None:
    source = """
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator()
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    """
    reading = read(source, tmp_path)
    assert {"precision", "sharding"} <= reading.unknown


def test_lightning_trainer_precision_and_strategy(tmp_path: Path) -> None:
    source = """
        import lightning as L
        import torch
        trainer = L.Trainer(precision="bf16-mixed", strategy="deepspeed_stage_2")  # <- precision
    """
    reading = read(source, tmp_path)
    assert reading.run.precision == "amp" and reading.run.sharding == "zero-2"


# ================================================================================= optimizer


@pytest.mark.parametrize(
    "construct, expected",
    [
        ("torch.optim.AdamW(model.parameters(), lr=1e-3)", "adamw"),
        ("torch.optim.Adam(model.parameters())", "adam"),
        ("torch.optim.SGD(model.parameters(), lr=0.1)", "sgd"),
        ("torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)", "sgd-momentum"),
        ("torch.optim.RMSprop(model.parameters())", "rmsprop"),
        ("torch.optim.Adagrad(model.parameters())", "adagrad"),
        ("torch.optim.Adadelta(model.parameters(), lr=1.0)", "adadelta"),
        ("bnb.optim.AdamW8bit(model.parameters())", "adamw-8bit"),
        ("bnb.optim.PagedAdamW8bit(model.parameters())", "adamw-8bit"),
        ("Adafactor(model.parameters())", "adafactor"),
    ],
)
def test_optimizer_forms(tmp_path: Path, construct: str, expected: str) -> None:
    source = (
        "import torch\nimport bitsandbytes as bnb\nfrom transformers import Adafactor\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 4))\n"
        "optimizer = " + construct + "  # <- optimizer\n" + TRAIN_LOOP
    )
    reading = read(source, tmp_path)
    assert reading.run.optimizer == expected and "optimizer" not in reading.unknown
    assert reading.run.sources["optimizer"] == line(source, "optimizer")


def test_fused_step(tmp_path: Path) -> None:
    source = (
        "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 4))\n"
        "optimizer = torch.optim.AdamW(model.parameters(), fused=True)\n" + TRAIN_LOOP
    )
    assert read(source, tmp_path).run.fused_optimizer is True


def test_optimizer_over_part_of_the_model_is_unknown(tmp_path: Path) -> None:
    source = (
        "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))\n"
        "optimizer = torch.optim.AdamW(model[1].parameters())\n" + TRAIN_LOOP
    )
    assert "optimizer" in read(source, tmp_path).unknown


def test_optimizer_through_ddp_wrapper_covers_the_model(tmp_path: Path) -> None:
    source = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4)).cuda())  # <- sharding\n"
        "optimizer = torch.optim.Adam(model.module.parameters())\n" + TRAIN_LOOP
    )
    reading = read(source, tmp_path)
    assert reading.run.optimizer == "adam" and "optimizer" not in reading.unknown
    assert reading.run.sharding == "ddp" and reading.run.sources["sharding"] == line(source, "sharding")


def test_no_optimizer_in_a_training_file_is_unknown(tmp_path: Path) -> None:
    source = "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 4))\noptimizer = make()\n" + TRAIN_LOOP
    assert "optimizer" in read(source, tmp_path).unknown


# ===================================================== checkpointing, attention, accumulation


def test_gradient_checkpointing_and_attention(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2", attn_implementation="flash_attention_2")  # <- flash
        model.gradient_checkpointing_enable()  # <- checkpointing
    """
    reading = read(source, tmp_path)
    assert reading.run.flash is True and reading.run.checkpointing is True
    assert reading.run.sources["flash"] == line(source, "flash")
    assert reading.run.sources["checkpointing"] == line(source, "checkpointing")


def test_eager_attention_and_default_attention(tmp_path: Path) -> None:
    eager = read('from transformers import AutoModel\nm = AutoModel.from_pretrained("gpt2", '
                 'attn_implementation="eager")\n', tmp_path)
    assert eager.run.flash is False and "flash" not in eager.unknown
    default = read('from transformers import AutoModel\nm = AutoModel.from_pretrained("gpt2")\n', tmp_path)
    assert "flash" in default.unknown  # transformers picks SDPA where it can


def test_sdpa_and_checkpoint_in_a_hand_written_model(tmp_path: Path) -> None:
    source = """
        import torch
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint
        def attend(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # <- flash
        def block(x):
            return checkpoint(attend, x, x, x, use_reentrant=False)  # <- checkpointing
    """
    reading = read(source, tmp_path)
    assert reading.run.flash and reading.run.checkpointing
    assert reading.run.sources["flash"] == line(source, "flash")


def test_accumulation_from_a_modulo_step(tmp_path: Path) -> None:
    source = """
        import torch
        ACCUM = 4  # <- grad_accum_steps
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step, (x, y) in enumerate(loader):
            (model(x) - y).pow(2).mean().backward()
            if (step + 1) % ACCUM == 0:
                optimizer.step()
                optimizer.zero_grad()
    """
    reading = read(source, tmp_path)
    assert reading.run.grad_accum_steps == 4
    assert reading.run.sources["grad_accum_steps"] == line(source, "grad_accum_steps")


# ================================================================================== sharding


def test_fsdp_strategies(tmp_path: Path) -> None:
    full = read("import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(torch.nn.Sequential(torch.nn.Linear(4, 4)))\n", tmp_path)
    assert full.run.sharding == "fsdp" and "world_size" in full.unknown
    grad_op = read("import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP, "
                   "ShardingStrategy\nmodel = FSDP(torch.nn.Sequential(torch.nn.Linear(4, 4)), "
                   "sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)\n", tmp_path)
    assert grad_op.run.sharding == "zero-2"
    offload = read("import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP, CPUOffload\n"
                   "model = FSDP(torch.nn.Sequential(torch.nn.Linear(4, 4)), "
                   "cpu_offload=CPUOffload(offload_params=True))\n", tmp_path)
    assert "sharding" in offload.unknown


def test_deepspeed_config_dict(tmp_path: Path) -> None:
    source = """
        import deepspeed
        import torch
        ds_config = {  # <- sharding
            "train_micro_batch_size_per_gpu": 6,
            "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
            "bf16": {"enabled": True},
        }
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config)
    """
    reading = read(source, tmp_path)
    run = reading.run
    assert (run.sharding, run.offload_optimizer, run.batch_size, run.precision) == ("zero-2", True, 6, "bf16")
    assert run.sources["sharding"] == line(source, "sharding")


def test_deepspeed_json_file_named_by_the_script(tmp_path: Path) -> None:
    (tmp_path / "ds_zero3.json").write_text(json.dumps({
        "zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 16,
    }))
    source = """
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype="float32")
        args = TrainingArguments("out", deepspeed="ds_zero3.json")
        Trainer(model=model, args=args).train()
    """
    run = read(source, tmp_path).run
    assert (run.sharding, run.batch_size, run.grad_accum_steps) == ("zero-3", 2, 16)


def test_deepspeed_auto_values_are_unknown(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text(json.dumps({"zero_optimization": {"stage": "auto"}}))
    source = """
        import deepspeed
        engine = deepspeed.initialize(model=model, config="ds.json")
    """
    assert "sharding" in read(source, tmp_path).unknown


# ============================================================== inference, generation, LoRA


def test_generation(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        out = model.generate(input_ids, max_new_tokens=128)  # <- generation
    """
    reading = read(source, tmp_path)
    assert reading.run.generation is True and reading.run.max_new_tokens == 128
    assert reading.run.sources["generation"] == line(source, "generation")
    assert reading.run.sources["max_new_tokens"] == line(source, "generation")


def test_use_cache_without_generate_is_generation(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        out = model(input_ids, use_cache=True)
    """
    assert read(source, tmp_path).run.generation is True


@pytest.mark.parametrize("cls, head", [("BertForMaskedLM", True), ("AutoModelForMaskedLM", True),
                                       ("BertForPreTraining", True), ("AutoModelForSequenceClassification", False),
                                       ("AutoModel", False), ("BertModel", False)])
def test_encoder_head_from_the_model_class(tmp_path: Path, cls: str, head: bool) -> None:
    source = f"""
        import transformers
        model = transformers.{cls}.from_pretrained("bert-base-uncased")  # <- model
    """
    run = read(source, tmp_path).run
    assert run.lm_head is head
    assert run.sources["lm_head"] == line(source, "model")


@pytest.mark.parametrize("cls, task", [("AutoModelForCausalLM", "causal-lm"), ("LlamaForCausalLM", "causal-lm"),
                                       ("AutoModelForSequenceClassification", "seq-cls"),
                                       ("AutoModelForTokenClassification", "token-cls"), ("AutoModel", "backbone"),
                                       ("LlamaModel", "backbone"), ("AutoModelForMaskedLM", None)])
def test_the_model_class_gives_the_task(tmp_path: Path, cls: str, task: str) -> None:
    source = f"""
        import transformers
        model = transformers.{cls}.from_pretrained("meta-llama/Llama-2-7b-hf")  # <- model
    """
    run = read(source, tmp_path).run
    assert run.task == task  # a masked-LM head does not apply to a decoder: not guessed
    if task is not None:
        assert run.sources["task"] == line(source, "model")
        assert run.lm_head is (task == "causal-lm")
    else:
        assert run.lm_head is None
    no_head = task in ("seq-cls", "token-cls", "backbone")
    assert (estimate(run.replace(batch_size=1, seq_len=8)).breakdown["logits"] == 0) is no_head


def test_the_command_line_leaves_the_encoder_head_unknown() -> None:
    assert RunSpec(model=find_model("bert-base-uncased")).vocabulary_head is None


@pytest.mark.parametrize("loss", [
    "loss = torch.nn.functional.cross_entropy(model(x), y)",
    "criterion = torch.nn.CrossEntropyLoss()\n            loss = criterion(model(x), y)",
])
def test_an_evaluation_that_computes_a_loss(tmp_path: Path, loss: str) -> None:
    source = f"""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
        x, y = torch.randn(2, 4), torch.tensor([0, 1])
        with torch.no_grad():
            {loss}
    """
    run = read(source, tmp_path).run
    assert run.inference is True and run.eval_loss is True


def test_a_hugging_face_model_called_with_labels_computes_its_loss(tmp_path: Path) -> None:
    source = """
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        with torch.no_grad():
            out = model(input_ids=ids, labels=ids)  # <- loss
            other = helper(labels=ids)
    """
    run = read(source, tmp_path).run
    assert run.eval_loss is True and run.sources["eval_loss"] == line(source, "loss")


def test_an_evaluation_without_a_loss_leaves_it_unknown(tmp_path: Path) -> None:
    source = """
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        loss = 0  # a name is not a loss
        with torch.no_grad():
            out = model(input_ids=ids)
            other = helper(labels=ids)  # not the model
    """
    assert read(source, tmp_path).run.eval_loss is None


def test_no_backward_means_inference(tmp_path: Path) -> None:
    source = """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
        with torch.no_grad():
            model(torch.randn(2, 4))
    """
    run = read(source, tmp_path).run
    assert run.inference is True and not run.training


def test_backward_means_training(tmp_path: Path) -> None:
    source = "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 4))\noptimizer = torch.optim.SGD(" \
             "model.parameters(), lr=0.1)\n" + TRAIN_LOOP
    assert read(source, tmp_path).run.training


def test_lora(tmp_path: Path) -> None:
    source = """
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        config = LoraConfig(r=32, target_modules="all-linear")  # <- lora
        model = get_peft_model(model, config)
    """
    reading = read(source, tmp_path)
    assert reading.run.lora is True and reading.run.lora_rank == 32 and "lora_rank" not in reading.unknown
    assert reading.run.sources["lora"] == line(source, "lora")


@pytest.mark.parametrize("given, dropout", [("lora_dropout=0.05, ", 0.05), ("lora_dropout=0, ", 0.0), ("", 0.0)])
def test_lora_dropout(tmp_path: Path, given: str, dropout: float) -> None:
    source = """
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        p = 0.05
        config = LoraConfig(r=8, GIVENtarget_modules=["c_attn"])  # <- lora
        model = get_peft_model(model, config)
    """.replace("GIVEN", given)
    reading = read(source, tmp_path)
    assert reading.run.lora_dropout == dropout and "lora_dropout" not in reading.unknown
    if given:
        assert reading.run.sources["lora_dropout"] == line(source, "lora")
    else:
        assert "lora_dropout" not in reading.run.sources  # peft's default, 0.0


def test_lora_dropout_through_a_name_and_one_that_is_not_read(tmp_path: Path) -> None:
    source = """
        from peft import LoraConfig
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        p = 0.1  # <- dropout
        config = LoraConfig(r=8, lora_dropout=p, target_modules=["c_attn"])
    """
    reading = read(source, tmp_path)
    assert reading.run.lora_dropout == 0.1 and reading.run.sources["lora_dropout"] == line(source, "dropout")
    opaque = source.replace("lora_dropout=p", "lora_dropout=args.dropout")
    reading = read(opaque, tmp_path)
    assert reading.run.lora_dropout == 0.0 and "lora_dropout" in reading.unknown
    assert reading.unread["lora_dropout"] == "lora_dropout=args.dropout: not a probability read at train.py:6"
    assert "lora_dropout" in read(source.replace("p = 0.1", "p = 1.0"), tmp_path).unknown


def test_frozen_parameters_are_flagged(tmp_path: Path) -> None:
    source = """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
        for p in model[0].parameters():
            p.requires_grad = False
    """
    assert "trainable" in read(source, tmp_path).unknown


def test_quantized_and_device_map_models_are_not_priced(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", load_in_4bit=True, device_map="auto")
    """
    assert "weights_layout" in read(source, tmp_path).unknown


# ===================================================================================== entry


def test_read_run_returns_a_checked_runspec(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n")
    run = extract.read_run(str(path))
    assert isinstance(run, RunSpec) and run.batch_size == 8 and run.sources["batch_size"] == "train.py:3"
    run.check()


def test_read_run_syntax_error_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n")
    with pytest.raises(RunSpecError) as err:
        extract.read_run(str(path))
    assert "\n" not in str(err.value)


def test_run_from_module_uses_the_given_tree(tmp_path: Path) -> None:
    text = "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=3)\n"
    module = build_module(text, str(tmp_path / "x.py"))
    assert extract.run_from_module(module, str(tmp_path / "x.py")).batch_size == 3


def test_examples_bad_train(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    path = root / "examples" / "bad_train.py"
    run = extract.read_run(str(path))
    assert run.params == 1_205_026_826  # torch's count for Classifier() (tests/test_param_count.py)
    assert (run.batch_size, run.optimizer, run.sharding) == (64, "adamw", "ddp")
    assert run.sources["params"] == "bad_train.py:125"


# ============================================================ run-time overrides, placement


def test_globals_rewritten_by_exec_are_unknown(tmp_path: Path) -> None:
    """nanoGPT-style ``exec(open('configurator.py').read())`` overrides module globals."""
    source = """
        import torch
        from torch.utils.data import DataLoader
        batch_size = 12
        block_size = 1024
        exec(open("configurator.py").read())
        loader = DataLoader(ds, batch_size=batch_size)
    """
    reading = read(source, tmp_path)
    assert reading.run.batch_size is None and reading.run.seq_len is None
    assert {"batch_size", "seq_len"} <= reading.unknown


def test_alternative_models_use_the_smallest(tmp_path: Path) -> None:
    source = """
        import torch
        import torch.nn as nn
        if flag:
            model = nn.Sequential(nn.Linear(10, 10))  # <- params
        else:
            model = nn.Sequential(nn.Linear(1000, 1000))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    """
    reading = read(source, tmp_path)
    assert reading.run.params == 110
    assert reading.run.sources["params"] == line(source, "params")


def test_alternative_model_of_unknown_size_makes_the_model_unknown(tmp_path: Path) -> None:
    source = """
        import torch
        import torch.nn as nn
        if flag:
            model = nn.Sequential(nn.Linear(width, 10))
        else:
            model = nn.Sequential(nn.Linear(1000, 1000))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    """
    assert read(source, tmp_path).run.total_params is None


@pytest.mark.parametrize(
    "placement, expected",
    [
        ("model = model.cuda()", True),
        ('model.to("cuda:0")', True),
        ('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nmodel.to(device)', True),
        ('model.to("cpu")', False),
        ('device = "cpu"\nmodel = model.to(device)', False),
        ("pass", None),
    ],
)
def test_placement(tmp_path: Path, placement: str, expected: object) -> None:
    source = "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 4))\n" + placement + "\n"
    assert read(source, tmp_path).on_gpu is expected


def test_trainers_and_launchers_are_gpu_placement(tmp_path: Path) -> None:
    source = """
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        Trainer(model=model, args=TrainingArguments("out")).train()
    """
    assert read(source, tmp_path).on_gpu is True
    cpu = source.replace('TrainingArguments("out")', 'TrainingArguments("out", use_cpu=True)')
    assert read(cpu, tmp_path).on_gpu is False
