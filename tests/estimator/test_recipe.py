"""Training recipes as SCRIPT (INTERFACE.md): LLaMA-Factory, torchtune, axolotl and TRL /
TrainingArguments fields read from YAML or JSON, each value with the line of its key; a recipe is
data (nothing in it runs); YAML needs the ``recipes`` extra and says so in one line."""
from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from flake8_torch_preflight.estimator import cli, recipe
from flake8_torch_preflight.estimator.catalogue import find_model, layer_params

RECIPES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "estimator" / "recipes"
#: YAML recipes need PyYAML, the optional extra ``recipes``; JSON ones nothing.
needs_yaml = pytest.mark.skipif(importlib.util.find_spec("yaml") is None,
                                reason="PyYAML (pip install flake8-torch-preflight[recipes]) is not installed")
FIELDS = ("batch_size", "seq_len", "precision", "optimizer", "checkpointing", "flash", "lora", "lora_rank",
          "lora_targets", "quantization", "sharding", "offload_optimizer", "grad_accum_steps", "fused_optimizer")


def run_cli(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    status = cli.main(["estimate"] + argv)
    out, err = capsys.readouterr()
    return status, out, err


def run_json(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Dict[str, Any]:
    status, out, err = run_cli(argv + ["--format", "json"], capsys)
    assert status in (0, 1) and err == "", err
    data: Dict[str, Any] = json.loads(out)
    return data


def config_of(data: Dict[str, Any]) -> Dict[str, Any]:
    return {name: data["config"][name] for name in FIELDS}


def refused(argv: List[str], capsys: pytest.CaptureFixture[str]) -> str:
    status, out, err = run_cli(argv, capsys)
    assert (status, out) == (2, "") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


# ================================================================================ frameworks

@needs_yaml
def test_llama_factory_qlora(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(RECIPES / "llamafactory_qlora_sft.yaml")
    data = run_json([path, "--gpu", "rtx-4090"], capsys)
    assert data["model"]["name"] == "llama-2-7b"
    assert config_of(data) == {
        "batch_size": 2, "seq_len": 1024, "precision": "bf16", "optimizer": "adamw-8bit", "checkpointing": True,
        "flash": False, "lora": True, "lora_rank": 16, "lora_targets": ["q_proj", "v_proj"], "quantization": "nf4",
        "sharding": "none", "offload_optimizer": False, "grad_accum_steps": 8, "fused_optimizer": False}
    name = "llamafactory_qlora_sft.yaml"
    assert data["config"]["sources"] == {
        "model": f"{name}:2", "quantization": f"{name}:3", "lora": f"{name}:8", "lora_rank": f"{name}:9",
        "lora_targets": f"{name}:10", "seq_len": f"{name}:15", "batch_size": f"{name}:18",
        "grad_accum_steps": f"{name}:19", "precision": f"{name}:22", "optimizer": f"{name}:23",
        "checkpointing": f"{name} (LLaMA-Factory enables gradient checkpointing by default)"}
    assert data["model"]["trainable_params"] == 32 * 16 * 2 * (4096 + 4096)
    flags = run_json(["--model", "llama-2-7b", "--quantization", "nf4", "--lora", "16", "--lora-targets",
                      "q_proj,v_proj", "--batch-size", "2", "--seq-len", "1024", "--precision", "bf16",
                      "--optimizer", "adamw-8bit", "--grad-accum", "8", "--checkpointing", "--gpu", "rtx-4090"],
                     capsys)
    assert data["breakdown"] == flags["breakdown"]  # the recipe is the same run as the flags


@needs_yaml
def test_llama_factory_full_fine_tune_with_a_deepspeed_file(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json([str(RECIPES / "llamafactory_full.yaml")], capsys)
    assert data["model"]["name"] == "qwen2.5-1.5b"
    config = config_of(data)
    # a full fine-tune with bf16: true is autocast over fp32 weights (LLaMA-Factory upcasts what trains)
    assert (config["precision"], config["lora"], config["sharding"], config["offload_optimizer"]) == (
        "amp", False, "zero-3", True)
    assert data["config"]["sources"]["sharding"] == "llamafactory_full.yaml:9"
    assert data["config"]["sources"]["optimizer"] == "default"
    _, text, _ = run_cli([str(RECIPES / "llamafactory_full.yaml")], capsys)
    assert "amp, adamw (assumed)" in text.splitlines()[1]


@needs_yaml
def test_torchtune_qlora_builder(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json([str(RECIPES / "torchtune_qlora_llama2_7b.yaml")], capsys)
    assert data["model"]["name"] == "llama-2-7b"
    assert config_of(data) == {
        "batch_size": 2, "seq_len": 2048, "precision": "bf16", "optimizer": "adamw", "checkpointing": True,
        "flash": False, "lora": True, "lora_rank": 8, "quantization": "nf4", "sharding": "none",
        "lora_targets": ["q_proj", "v_proj", "output_proj", "w1", "w2", "w3"], "offload_optimizer": False,
        "grad_accum_steps": 16, "fused_optimizer": True}
    sources = data["config"]["sources"]
    name = "torchtune_qlora_llama2_7b.yaml"
    assert (sources["model"], sources["quantization"], sources["lora_rank"], sources["seq_len"]) == (
        f"{name}:5", f"{name}:5", f"{name}:9", f"{name}:15")
    assert data["model"]["trainable_params"] == 32 * 8 * (3 * (4096 + 4096) + 3 * (4096 + 11008))


@needs_yaml
def test_axolotl_lora_on_8bit_weights(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json([str(RECIPES / "axolotl_lora_mistral.yml")], capsys)
    assert data["model"]["name"] == "mistral-7b"
    assert config_of(data) == {
        "batch_size": 2, "seq_len": 4096, "precision": "bf16", "optimizer": "adamw-8bit", "checkpointing": True,
        "flash": True, "lora": True, "lora_rank": 32, "lora_targets": None, "quantization": "int8",
        "sharding": "none", "offload_optimizer": False, "grad_accum_steps": 4, "fused_optimizer": False}
    assert data["config"]["sources"]["quantization"] == "axolotl_lora_mistral.yml:3"
    assert data["config"]["sources"]["precision"] == "axolotl_lora_mistral.yml:23"


def test_trl_json_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json([str(RECIPES / "trl_sft.json")], capsys)
    assert data["model"]["name"] == "qwen2-0.5b"
    assert config_of(data) == {
        "batch_size": 8, "seq_len": 1024, "precision": "amp", "optimizer": "adamw", "checkpointing": False,
        "flash": False, "lora": True, "lora_rank": 32, "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
        "quantization": "none", "sharding": "none", "offload_optimizer": False, "grad_accum_steps": 2,
        "fused_optimizer": True}
    assert data["config"]["sources"] == {
        "model": "trl_sft.json:2", "batch_size": "trl_sft.json:4", "grad_accum_steps": "trl_sft.json:5",
        "seq_len": "trl_sft.json:6", "precision": "trl_sft.json:8", "checkpointing": "trl_sft.json:9",
        "optimizer": "trl_sft.json:10", "fused_optimizer": "trl_sft.json:10", "lora": "trl_sft.json:11",
        "lora_rank": "trl_sft.json:12", "lora_targets": "trl_sft.json:13"}


@needs_yaml
def test_the_command_line_overrides_the_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json([str(RECIPES / "llamafactory_qlora_sft.yaml"), "--batch-size", "1", "--quantization", "none"],
                    capsys)
    assert data["config"]["batch_size"] == 1 and data["config"]["sources"]["batch_size"] == "command line"
    assert data["config"]["quantization"] == "none"


@needs_yaml
def test_llama_factory_freeze_trains_the_last_layers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "freeze.yaml"
    path.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\nfinetuning_type: freeze\n"
                    "freeze_trainable_layers: 4\ncutoff_len: 512\nper_device_train_batch_size: 1\nbf16: true\n")
    data = run_json([str(path)], capsys)
    per_layer = layer_params(find_model("llama-2-7b"))
    assert per_layer == 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert data["model"]["trainable_params"] == 4 * per_layer
    assert data["config"]["sources"]["trainable_params"] == "freeze.yaml:4"
    assert data["config"]["precision"] == "bf16" and data["config"]["lora"] is False
    assert data["breakdown"]["gradients"] == 4 * per_layer * 2


@needs_yaml
def test_a_local_model_folder_is_read_as_its_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "my-model"
    folder.mkdir()
    config = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "estimator" / "configs" / "gpt2.json"
    (folder / "config.json").write_text(config.read_text())
    path = tmp_path / "recipe.yaml"
    path.write_text("model_name_or_path: ./my-model\nper_device_train_batch_size: 2\ncutoff_len: 64\n"
                    "finetuning_type: full\n")
    data = run_json([str(path)], capsys)
    assert data["model"]["params"] == 124_439_808
    assert data["model"]["source"] == f"config {folder / 'config.json'}"


# ================================================================================ bad input

def test_yaml_without_pyyaml_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml raises ImportError
    line = refused([str(RECIPES / "axolotl_lora_mistral.yml")], capsys)
    assert line == "estimate: reading a YAML recipe needs PyYAML: pip install flake8-torch-preflight[recipes]\n"
    data = run_json([str(RECIPES / "trl_sft.json")], capsys)  # JSON needs nothing
    assert data["model"]["name"] == "qwen2-0.5b"


@needs_yaml
@pytest.mark.parametrize("text, message", [
    ("model_name_or_path: gpt2\nper_device_train_batch_size: abc\n",
     "per_device_train_batch_size must be a positive integer up to 1,000,000, got 'abc' (line 2)"),
    ("model_name_or_path: gpt2\ncutoff_len: 0\n", "cutoff_len must be a positive integer up to 10,000,000, got 0 "
                                                  "(line 2)"),
    ("model_name_or_path: gpt2\nfoo: [1, 2\n", "not valid YAML: expected ',' or ']', but got '<stream end>' "
                                               "(line 3)"),
    ("- just\n- a list\n", "not a training recipe (a mapping of fields)"),
    ("model_name_or_path: llama-2-7b\nstage: sft\nlora_target: q_proj,attn\n",
     "unknown LoRA target 'attn'; known: q_proj, "),
    ("model_name_or_path: gpt2\noptim: adamw_magic\n", "optim must be one of transformers' optimizers (adamw_hf, "),
    ("model_name_or_path: gpt2\ngradient_checkpointing: maybe\n",
     "gradient_checkpointing must be true or false, got 'maybe' (line 2)"),
    ("model_name_or_path: gpt2\nquantization_bit: 3\n", "quantization_bit must be 4 or 8, got 3 (line 2)"),
])
def test_bad_recipes_are_one_line(text: str, message: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    line = refused([str(path), "--gpu", "t4"], capsys)
    assert line.startswith(f"estimate: {path}: {message}"), line


def test_a_json_recipe_error_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "args.json"
    path.write_text('{\n  "model_name_or_path": "gpt2",\n  "per_device_train_batch_size": -4\n}\n')
    assert refused([str(path)], capsys) == (
        f"estimate: {path}: per_device_train_batch_size must be a positive integer up to 1,000,000, got -4 "
        "(line 3)\n")
    path.write_text('{"model_name_or_path": "gpt2",,}')
    assert refused([str(path)], capsys) == (
        f"estimate: {path}: not valid JSON: Expecting property name enclosed in double quotes (line 1)\n")


def test_a_model_config_given_as_script_points_to_model_config(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "estimator" / "configs" / "gpt2.json"
    assert refused([str(path)], capsys) == (
        f"estimate: {path}: is a model's config.json, not a training recipe: give it as --model-config FILE\n")


@needs_yaml
def test_a_recipe_is_data_nothing_in_it_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "evil.yaml"
    path.write_text(f"model_name_or_path: !!python/object/apply:os.system ['touch {marker}']\n"
                    "per_device_train_batch_size: 2\n")
    data = run_json([str(path)], capsys)
    assert data["model"]["name"] is None and data["unread"] == {
        "model": "no model named in the recipe (model_name_or_path, base_model, model_name, model_id, model.path)"}
    assert data["config"]["batch_size"] == 2 and not marker.exists()
    data = run_json([str(path), "--model", "gpt2", "--seq-len", "8"], capsys)
    assert data["config"]["batch_size"] == 2 and not marker.exists()


@needs_yaml
def test_aliases_are_walked_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for index in range(1, 12):  # 9**12 strings if expanded
        lines.append(f"{chr(97 + index)}: &{chr(97 + index)} " + "[" + ", ".join([f"*{chr(96 + index)}"] * 9) + "]")
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\nmodel_name_or_path: gpt2\nper_device_train_batch_size: 4\n"
                                       "max_seq_length: 64\n")
    start = time.process_time()
    data = run_json([str(path)], capsys)
    assert time.process_time() - start < 5
    assert data["config"]["sources"]["batch_size"] == "laughs.yaml:14"


def test_json_key_lines_follow_nesting() -> None:
    text = ('{\n "a": 1,\n "deepspeed": {\n  "zero_optimization": {"stage": 2},\n  "a": "x\\"y"\n },\n'
            ' "b": [\n {"c": 1}]\n}')
    lines = recipe._json_key_lines(text)
    assert lines[("a",)] == 2 and lines[("deepspeed",)] == 3 and lines[("deepspeed", "zero_optimization")] == 4
    assert lines[("deepspeed", "zero_optimization", "stage")] == 4 and lines[("deepspeed", "a")] == 5
    assert lines[("b",)] == 7 and ("b", "c") not in lines


# ================================================================================ lora_dropout

#: One recipe per style with its LoRA dropout, and the line its key is on.
DROPOUT_RECIPES = {
    "llama-factory": ("lf.yaml", "model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\nfinetuning_type: lora\n"
                      "lora_rank: 8\nlora_dropout: 0.1\nlora_target: q_proj,v_proj\ncutoff_len: 512\n", 0.1, 5),
    "axolotl": ("ax.yml", "base_model: mistralai/Mistral-7B-v0.1\nadapter: lora\nlora_r: 16\nlora_dropout: 0.05\n"
                "lora_target_modules:\n  - q_proj\n  - v_proj\nsequence_len: 512\nmicro_batch_size: 1\n", 0.05, 4),
    "torchtune": ("tt.yaml", "model:\n  _component_: torchtune.models.llama2.lora_llama2_7b\n"
                  "  lora_attn_modules: ['q_proj', 'v_proj']\n  lora_rank: 8\n  lora_dropout: 0.0\n"
                  "batch_size: 2\n", 0.0, 5),
    "litgpt": ("lit.yaml", "checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf\nlora_r: 8\nlora_dropout: 0.05\n"
               "lora_query: true\nlora_key: false\nlora_value: true\nlora_projection: false\nlora_mlp: false\n"
               "lora_head: false\n", 0.05, 3),
}


@needs_yaml
@pytest.mark.parametrize("style", sorted(DROPOUT_RECIPES))
def test_lora_dropout_is_read_in_every_recipe_style(style: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    name, text, dropout, line = DROPOUT_RECIPES[style]
    path = tmp_path / name
    path.write_text(text)
    config = run_json([str(path)], capsys)["config"]
    assert (config["lora"], config["lora_dropout"]) == (True, dropout)
    assert config["sources"]["lora_dropout"] == f"{name}:{line}"


def test_lora_dropout_in_a_trl_argument_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"model_name_or_path": "Qwen/Qwen2-0.5B", "use_peft": True, "lora_r": 16,
                                "lora_dropout": 0.05, "per_device_train_batch_size": 4}, indent=1))
    config = run_json([str(path)], capsys)["config"]
    assert (config["lora_rank"], config["lora_dropout"]) == (16, 0.05)


@needs_yaml
def test_lora_dropout_without_lora_is_not_read_and_a_wrong_one_is_refused(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    full = tmp_path / "full.yaml"
    full.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\nfinetuning_type: full\n"
                    "lora_dropout: 0.1\n")
    config = run_json([str(full)], capsys)["config"]
    assert config["lora"] is False and config["lora_dropout"] is None and "lora_dropout" not in config["sources"]
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nfinetuning_type: lora\nlora_dropout: 1.5\n")
    assert refused([str(wrong)], capsys) == (
        f"estimate: {wrong}: lora_dropout must be a probability at least 0 and below 1, got 1.5 (line 3)\n")


#: litgpt's LoRA switches in the order of ``LITGPT_LORA_FLAGS``.
LITGPT_SWITCHES = ("query", "key", "value", "projection", "mlp", "head")


@needs_yaml
@pytest.mark.parametrize("on, targets", [
    (("query", "key", "value", "projection", "mlp", "head"), ["all-linear", "lm_head"]),
    (("query", "key", "value", "projection", "mlp"), None),
    (("query", "value", "head"), ["q_proj", "v_proj", "lm_head"]),
    (("query", "value"), ["q_proj", "v_proj"]),
])
def test_litgpt_switches_give_the_targets(on: Tuple[str, ...], targets: Any, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf", "lora_r: 8"]
    lines += [f"lora_{name}: {'true' if name in on else 'false'}" for name in LITGPT_SWITCHES]
    path = tmp_path / "lit.yaml"
    path.write_text("\n".join(lines) + "\n")
    config = run_json([str(path)], capsys)["config"]
    assert config["lora_targets"] == targets
    assert config["sources"]["lora_targets"] == "lit.yaml:8"


@needs_yaml
def test_litgpt_mlp_without_every_attention_switch_is_not_priced_as_all_linear(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf", "lora_r: 8"]
    lines += [f"lora_{name}: {'true' if name in ('query', 'mlp') else 'false'}" for name in LITGPT_SWITCHES]
    path = tmp_path / "lit.yaml"
    path.write_text("\n".join(lines) + "\n")
    config = run_json([str(path)], capsys)["config"]
    assert "lora_targets" not in config["sources"]


@needs_yaml
def test_all_linear_with_the_head_keeps_the_head(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lf.yaml"
    path.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nfinetuning_type: lora\nlora_target: all,lm_head\n")
    assert run_json([str(path)], capsys)["config"]["lora_targets"] == ["all-linear", "lm_head"]
    path.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nfinetuning_type: lora\nlora_target: all\n")
    assert run_json([str(path)], capsys)["config"]["lora_targets"] is None
