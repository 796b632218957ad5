"""TPV001 beyond the fixture markers: what its message says, and when it must stay silent.

The fixtures (tests/fixtures/rules/tpv001*.py) pin which lines report; these tests read the
message text (peak, interval, target, usable capacity, the solver's changes with their GiB)
and the lightest-value policy for fields the reader could not resolve.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest
from harness import run_plugin

from flake8_torch_preflight.analysis.setup.build import build_module
from flake8_torch_preflight.estimator import catalogue, extract
from flake8_torch_preflight.rules._base import MAX_MESSAGE
from flake8_torch_preflight.rules.tpv001_projected_oom import (
    ProjectedOom,
    estimator_command,
    fix_texts,
    lightest_runs,
    message_fields,
)

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


def test_message_names_the_bug_the_cost_and_the_fix(tmp_path: Path) -> None:
    (message,) = findings(tmp_path, GPT2_MEDIUM, ["--tp-target-gpu", "t4"])
    code, text = message.split(" ", 1)
    assert code == "TPV001" and len(text) <= MAX_MESSAGE, text
    assert re.match(r"^projected OOM on t4: (gpt2-medium )?needs >=\d+\.\d GiB, 14\.6 GiB usable; ", text), text
    fix = text.split("; ", 1)[1]
    assert re.search(r"\(-\d+\.\d GiB\)", fix), fix  # a change with the GiB it saves
    assert "\n" not in text and text.isascii()


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


# ------------------------------------------------------------- the command it suggests


def _flake8(args: List[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=str(cwd), env=env, input=stdin,
                          capture_output=True, text=True, timeout=300)


def _run_as_printed(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command exactly as the message prints it, the way a shell would split it."""
    argv = shlex.split(command)
    assert argv[0] == "tp-estimate"
    script = Path(sys.executable).parent / "tp-estimate"
    if not script.exists():  # not installed beside this interpreter: the same entry point by hand
        argv[:1] = [sys.executable, "-c", "from flake8_torch_preflight.estimator.cli import estimate_main as m; "
                                          "raise SystemExit(m())"]
    else:
        argv[0] = str(script)
    return subprocess.run(argv, cwd=str(cwd), capture_output=True, text=True, timeout=300)


def test_the_suggested_command_runs_as_printed_with_a_gpu_memory(tmp_path: Path) -> None:
    """--tp-gpu-memory 8GiB once suggested `--gpu custom-8gib`, which the estimator refused (2)."""
    (tmp_path / "train.py").write_text(textwrap.dedent(GPT2_MEDIUM))
    done = _flake8(["--select", "TPV001", "--tp-gpu-memory", "8GiB", "train.py"], tmp_path)
    (line,) = done.stdout.splitlines()
    assert line.startswith("train.py:6:9: TPV001 projected OOM on 8GiB GPU: "), line
    assert "custom-" not in line
    (command,) = re.findall(r"`([^`]+)`", line)
    assert command == "tp-estimate train.py --gpu-memory 8GiB"
    run = _run_as_printed(command, tmp_path)
    assert run.returncode == 1, run.stderr  # does not fit: the command ran, it was not refused (2)
    assert run.stderr == "" and "does NOT fit" in run.stdout


def test_the_suggested_command_runs_as_printed_with_a_gpu_name(tmp_path: Path) -> None:
    source = (Path(__file__).parent / "fixtures" / "rules" / "tpv001_aliases.py").read_text(encoding="utf-8")
    (tmp_path / "al.py").write_text(source)
    done = _flake8(["--select", "TPV001", "--tp-target-gpu", "tesla-t4", "al.py"], tmp_path)
    (line,) = done.stdout.splitlines()
    (command,) = re.findall(r"`([^`]+)`", line)
    assert command == "tp-estimate al.py --gpu t4"  # the catalogue key, whatever alias was configured
    assert _run_as_printed(command, tmp_path).returncode == 1


def test_a_file_name_the_shell_would_split_is_quoted(tmp_path: Path) -> None:
    source = (Path(__file__).parent / "fixtures" / "rules" / "tpv001_aliases.py").read_text(encoding="utf-8")
    (tmp_path / "my train.py").write_text(source)
    command = estimator_command(str(tmp_path / "my train.py"), "2xt4", None)
    assert command == "tp-estimate {} --gpu 2xt4".format(shlex.quote(str(tmp_path / "my train.py")))
    assert "'" in command
    assert _run_as_printed(command, tmp_path).returncode == 1  # 1.6B parameters with Adam: over two T4s too


@pytest.mark.parametrize("memory, gpu, expected", [
    (None, "t4", "tp-estimate {} --gpu t4"),
    (None, "p4d.24xlarge", "tp-estimate {} --gpu p4d.24xlarge"),
    ("8GiB", "custom-8gib", "tp-estimate {} --gpu-memory 8GiB"),
    (" 48 GiB ", "custom-48gib", "tp-estimate {} --gpu-memory 48GiB"),
])
def test_estimator_command_for_a_file(tmp_path: Path, memory: str, gpu: str, expected: str) -> None:
    script = tmp_path / "train.py"
    script.write_text("x = 1\n")
    assert estimator_command(str(script), gpu, memory) == expected.format(script)


def test_no_command_for_stdin_a_notebook_or_a_missing_file(tmp_path: Path) -> None:
    notebook = tmp_path / "train.ipynb"
    notebook.write_text("{}")
    assert estimator_command(str(notebook), "t4", None) is None
    assert estimator_command("stdin", "t4", None) is None
    assert estimator_command("-", "t4", None) is None
    assert estimator_command(str(tmp_path / "gone.py"), "t4", None) is None
    texts = fix_texts(_solution_without_changes(), None)
    assert texts and not any("tp-estimate" in text for text in texts)


def _solution_without_changes():  # type: ignore[no-untyped-def]
    from flake8_torch_preflight.estimator import costmodel, solver

    run = extract.RunSpec(params=10**9, batch_size=None)
    return solver.solve(costmodel.estimate(run, catalogue.gpu_from_memory("1GiB")))


def test_flake8_on_stdin_does_not_suggest_running_the_estimator_on_it(tmp_path: Path) -> None:
    (tmp_path / "stdin").write_text(textwrap.dedent(GPT2_MEDIUM))  # even when a file of that name exists
    done = _flake8(["--select", "TPV001", "--tp-gpu-memory", "8GiB", "-"], tmp_path, textwrap.dedent(GPT2_MEDIUM))
    (line,) = done.stdout.splitlines()
    assert line.startswith("stdin:6:9: TPV001 projected OOM on 8GiB GPU: ") and "tp-estimate" not in line, line


def test_a_notebook_file_gets_no_command(tmp_path: Path) -> None:
    path = tmp_path / "train.ipynb"
    path.write_text(textwrap.dedent(GPT2_MEDIUM))
    (message,) = [m for _, _, m in run_plugin(path, textwrap.dedent(GPT2_MEDIUM), ["TPV001"],
                                              ["--tp-gpu-memory", "8GiB"])]
    assert message.startswith("TPV001 projected OOM on 8GiB GPU: ") and "tp-estimate" not in message


def test_every_catalogue_target_key_is_accepted_back_by_the_estimator() -> None:
    targets = catalogue.list_gpus() + [target for _, target, _ in catalogue.list_instances()]
    assert len(targets) > 100
    for target in targets:
        assert catalogue.find_gpu(target.key).key == target.key, target.key


@pytest.mark.parametrize("gpu, costs, fixes", [
    ("t4", ["a-very-long-hand-written-model-name-" * 3 + " needs >=1.0 GiB, 0.5 GiB usable",
            "needs >=1.0 GiB, 0.5 GiB usable"], ["x" * 200, "use a larger GPU"]),
    ("Standard_ND96amsr_A100_v4" * 8, ["needs >=1.0 GiB, has 0.5"], ["y" * 300, "use a larger GPU"]),
])
def test_the_message_never_exceeds_120_characters(gpu: str, costs: List[str], fixes: List[str]) -> None:
    fields: Dict[str, str] = message_fields(gpu, costs, fixes)
    text = ProjectedOom.message.format(**fields)
    assert len(text) <= MAX_MESSAGE, text
    assert fields["fix"] == "use a larger GPU"


def test_the_most_complete_fix_that_fits_is_chosen() -> None:
    fields = message_fields("t4", ["gpt2 needs >=20.0 GiB, 14.6 GiB usable", "needs >=20.0 GiB, 14.6 GiB usable"],
                            ["fix: a (-1.0 GiB), b (-2.0 GiB) (`tp-estimate t.py --gpu t4`)", "fix: a"])
    assert fields == {"gpu": "t4", "cost": "needs >=20.0 GiB, 14.6 GiB usable",  # 125 characters with the model
                      "fix": "fix: a (-1.0 GiB), b (-2.0 GiB) (`tp-estimate t.py --gpu t4`)"}
    fields = message_fields("t4", ["gpt2 needs >=20.0 GiB, 14.6 GiB usable", "needs >=20.0 GiB, 14.6 GiB usable"],
                            ["fix: a (-1.0 GiB), b (-2.0 GiB) (`tp-estimate --gpu t4`)", "fix: a"])
    assert fields["cost"] == "gpt2 needs >=20.0 GiB, 14.6 GiB usable"  # 120: the model is named
    long_fix = "fix: " + "z" * 60
    fields = message_fields("t4", ["gpt2 needs >=20.0 GiB, 14.6 GiB usable", "needs >=20.0 GiB, has 14.6"],
                            [long_fix, "fix: a"])
    assert fields["fix"] == long_fix and fields["cost"] == "needs >=20.0 GiB, has 14.6"  # the fix before the name


def test_explain_says_what_it_leaves_alone_and_how_to_configure() -> None:
    from flake8_torch_preflight.explain import render

    text = render("TPV001")
    left_alone = text.split("Deliberately left alone:\n", 1)[1].split("Silence or configure:\n", 1)[0]
    for phrase in ("without a target", "never puts the run on a GPU", "cannot be identified", "quantized",
                   "taken at its lightest", "low end fits"):
        assert phrase in " ".join(left_alone.split()), phrase
    configure = " ".join(text.split("Silence or configure:\n", 1)[1].split())
    for phrase in ("--tp-target-gpu NAME", "--tp-gpu-memory SIZE", "tp-target-gpu = a100-80gb",
                   "tp-gpu-memory = 48GiB", "[flake8] section of setup.cfg, tox.ini or .flake8"):
        assert phrase in configure, phrase


def test_a_value_out_of_range_in_the_file_is_silent_not_a_crash(tmp_path: Path, capsys) -> None:
    source = GPT2_MEDIUM.replace("batch_size=16", "batch_size=10**7")
    assert findings(tmp_path, source, ["--tp-target-gpu", "t4"]) == []
    assert capsys.readouterr().err == ""  # no "TPV001 failed" note from the engine


# ------------------------------------------------------------ no target: say how to set one

HINT = ("flake8-torch-preflight: TPV001 is selected but has no target GPU, so it reports nothing; set one with "
        "--tp-target-gpu NAME (or --tp-gpu-memory SIZE), or tp-target-gpu = NAME in the [flake8] section of "
        "setup.cfg, tox.ini or .flake8 (names: python -m flake8_torch_preflight gpus)\n")


@pytest.fixture()
def two_files(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("import torch\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    return tmp_path


@pytest.mark.parametrize("args, hinted", [
    (["--select", "TPV001"], True),
    (["--select", "TPV"], True),
    (["--select", "E,TPV001"], True),
    (["--select", "E", "--extend-select", "TPV"], True),
    (["--select", "TPV001", "--jobs", "2"], True),
    (["--select", "TP"], False),  # every code, not the projection by name
    (["--select", "TPV001", "--tp-target-gpu", "h200"], False),
    (["--select", "TPV001", "--tp-gpu-memory", "200GiB"], False),
    (["--select", "TPV001", "--extend-ignore", "TPV001"], False),
    (["--select", "E"], False),
])
def test_selecting_tpv001_without_a_target_says_how_once(two_files: Path, args: List[str], hinted: bool) -> None:
    done = _flake8([*args, "a.py", "b.py"], two_files)
    assert done.stderr == (HINT if hinted else "")
    assert "TPV001" not in done.stdout


def test_the_hint_leaves_the_exit_status_alone(two_files: Path) -> None:
    quiet = _flake8(["--select", "TPV001", "b.py"], two_files)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", HINT)
    (two_files / "c.py").write_text("import os\n")
    found = _flake8(["--select", "TPV001,F401", "c.py"], two_files)
    assert (found.returncode, found.stderr) == (1, HINT) and "F401" in found.stdout


def test_the_hint_reads_the_selection_from_the_config_file(two_files: Path) -> None:
    config = two_files / "setup.cfg"
    config.write_text("[flake8]\nselect = TPV001\n")
    done = subprocess.run([sys.executable, "-m", "flake8", "b.py"], cwd=str(two_files), capture_output=True,
                          text=True, timeout=300)
    assert (done.returncode, done.stderr) == (0, HINT)
    config.write_text("[flake8]\nselect = TPV001\ntp-target-gpu = t4\n")
    done = subprocess.run([sys.executable, "-m", "flake8", "b.py"], cwd=str(two_files), capture_output=True,
                          text=True, timeout=300)
    assert (done.returncode, done.stderr) == (0, "")


def test_the_hint_is_printed_once_when_workers_are_spawned(two_files: Path) -> None:
    """Spawned workers parse the options again (forked ones do not): they stay quiet."""
    program = ("import multiprocessing, sys; multiprocessing.set_start_method('spawn'); "
               "from flake8.main.cli import main; sys.exit(main())")
    done = subprocess.run([sys.executable, "-c", program, "--isolated", "--select", "TPV001", "--jobs", "2",
                           "a.py", "b.py"], cwd=str(two_files), capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (0, HINT)
