"""The estimator's command line: exit codes, one-line errors, the JSON contract, a golden run."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from flake8_torch_preflight.estimator import cli, extract
from flake8_torch_preflight.estimator.catalogue import find_gpu, find_model
from flake8_torch_preflight.estimator.costmodel import TERMS, estimate
from flake8_torch_preflight.estimator.report import one_line
from flake8_torch_preflight.estimator.run import RunSpec
from flake8_torch_preflight.estimator.solver import solve

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "estimator" / "gpt2_t4_amp_adamw.json"
GPT2_T4 = ["estimate", "--model", "gpt2", "--batch-size", "4", "--seq-len", "128", "--precision", "amp",
           "--optimizer", "adamw", "--gpu", "t4"]
LLAMA_A100 = ["estimate", "--model", "llama-2-7b", "--batch-size", "4", "--seq-len", "2048", "--precision", "amp",
              "--gpu", "a100-80gb"]

#: The contract's keys (INTERFACE.md); more may be added, none renamed.
CONTRACT: Dict[str, Any] = {
    "model": {"name", "params", "source"},
    "config": {"batch_size", "seq_len", "image_size", "precision", "optimizer", "checkpointing", "flash", "sources"},
    "breakdown": {"weights", "gradients", "optimizer_state", "autocast_cache", "activations", "kv_cache",
                  "cuda_context", "fragmentation"},
    "peak_bytes": None,
    "interval_bytes": None,
    "gpu": {"key", "usable_bytes"},
    "fits": None,
    "savings": {"change", "saves_bytes", "peak_after_bytes", "fits"},
}


def run_cli(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def run_json(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, Dict[str, Any]]:
    status, out, err = run_cli(argv + ["--format", "json"], capsys)
    assert err == ""
    return status, json.loads(out)


# ----------------------------------------------------------------------------- exit codes

def test_exit_0_when_it_fits(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(GPT2_T4, capsys)
    assert status == 0 and err == ""
    assert "projected peak" in out and "usable on t4" in out and "fits" in out


def test_exit_1_when_projected_not_to_fit(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(LLAMA_A100, capsys)
    assert status == 1
    assert "does NOT fit" in out
    assert "smallest change that fits" in out


def test_exit_0_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(LLAMA_A100[:-2], capsys)
    assert status == 0 and "no GPU given" in out


def test_command_name_may_be_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(GPT2_T4[1:], capsys)[0] == 0
    assert cli.estimate_main(GPT2_T4[1:]) == 0
    capsys.readouterr()


BAD_INPUT = [
    (["estimate", "--model", "gpt3"],
     "estimate: unknown model 'gpt3'; close matches: gpt2. Give --params N or a known name"),
    (["estimate", "--model", "gpt2", "--gpu", "t5"], "estimate: unknown GPU or instance 't5'"),
    (["estimate", "--model", "gpt2", "--gpu-memory", "48"], "estimate: invalid size '48'"),
    (["estimate", "--model", "gpt2", "--batch-size", "0"],
     "estimate: argument --batch-size: must be a positive integer up to 1,000,000, got '0'"),
    (["estimate", "--model", "gpt2", "--batch-size", "-3"],
     "estimate: argument --batch-size: must be a positive integer up to 1,000,000, got '-3'"),
    (["estimate", "--model", "gpt2", "--seq-len", "abc"],
     "estimate: argument --seq-len: must be a positive integer up to 10,000,000, got 'abc'"),
    (["estimate", "--batch-size", "4"],
     "estimate: no model: give --model NAME (a catalogue name or Hugging Face id) or --params N"),
    (["estimate", "--params", "seven"],
     "estimate: argument --params: must be a parameter count from 1 to 1,000,000,000,000,000 such as 124439808 or 7b, "
     "got 'seven'"),
    (["estimate", "--model", "gpt2", "--precision", "fp8"], "estimate: argument --precision: invalid choice: 'fp8'"),
    (["estimate", "--model", "gpt2", "--bogus"], "estimate: unrecognized arguments: --bogus"),
    (["estimate", "--model", "gpt2", "--gpu", "t4", "--gpu-memory", "16GiB"],
     "estimate: give --gpu or --gpu-memory, not both"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUT, ids=[" ".join(a[1:]) for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(argv: List[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(argv, capsys)
    assert status == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(message), err
    assert "Traceback" not in err


def test_script_values_with_command_line_overrides(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def read_run(path: str) -> RunSpec:
        assert path == "train.py"
        return RunSpec(model=find_model("gpt2"), batch_size=32, seq_len=512, precision="amp",
                       sources={"model": "train.py:3", "batch_size": "train.py:12", "seq_len": "train.py:13",
                                "precision": "train.py:20"})

    monkeypatch.setattr(extract, "read_reading", read_run)
    status, data = run_json(["estimate", "train.py", "--batch-size", "4"], capsys)
    assert status == 0
    config = data["config"]
    assert (config["batch_size"], config["seq_len"], config["precision"]) == (4, 512, "amp")
    assert config["sources"]["batch_size"] == "command line"
    assert config["sources"]["seq_len"] == "train.py:13"
    assert config["sources"]["optimizer"] == "default"


def test_script_reader_errors_are_one_line(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    def read_run(path: str) -> RunSpec:
        raise OSError(2, "No such file or directory")

    monkeypatch.setattr(extract, "read_reading", read_run)
    status, _, err = run_cli(["estimate", "missing.py"], capsys)
    assert (status, err) == (2, "estimate: cannot read missing.py: No such file or directory\n")

    def broken(path: str) -> RunSpec:
        raise KeyError("a bug in the reader")

    monkeypatch.setattr(extract, "read_reading", broken)
    status, out, err = run_cli(["estimate", "train.py", "--format", "json"], capsys)
    assert (status, out, err) == (2, "", "estimate: cannot read train.py: KeyError: 'a bug in the reader'\n")


# ---------------------------------------------------------------------------------- JSON

def check_contract(data: Dict[str, Any]) -> None:
    for key, inner in CONTRACT.items():
        assert key in data, key
        if isinstance(inner, set) and data[key] is not None:
            members = data[key][0] if key == "savings" and data[key] else data[key]
            if key == "savings" and not data[key]:
                continue
            assert inner <= set(members), (key, inner - set(members))
    assert type(data["peak_bytes"]) is int
    assert all(v is None or type(v) is int for v in data["breakdown"].values())
    low, high = data["interval_bytes"]
    assert type(low) is int and (high is None or type(high) is int)
    if data["gpu"] is not None:
        assert type(data["gpu"]["usable_bytes"]) is int
    assert data["fits"] in (True, False, None)
    for saving in data["savings"]:
        assert saving["saves_bytes"] is None or type(saving["saves_bytes"]) is int
        assert type(saving["peak_after_bytes"]) is int


def test_json_has_the_contract_keys_and_int_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    status, data = run_json(GPT2_T4, capsys)
    assert status == 0
    check_contract(data)
    assert data["model"] == {**data["model"], "name": "gpt2", "params": 124439808, "source": "catalogue"}
    assert data["gpu"]["key"] == "t4"
    assert data["fits"] is True
    assert data["breakdown"]["kv_cache"] == 0  # does not apply: 0, not null
    assert data["peak_bytes"] == sum(data["breakdown"][name] for name in TERMS)


def test_unknown_terms_are_null_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, data = run_json(["estimate", "--params", "7b", "--batch-size", "4", "--seq-len", "2048",
                             "--gpu", "a100-80gb"], capsys)
    check_contract(data)
    assert data["model"]["name"] is None and data["model"]["params"] == 7_000_000_000
    assert data["model"]["source"] == "command line"
    assert data["breakdown"]["activations"] is None
    assert data["interval_bytes"][1] is None and data["interval_unbounded"] is True
    assert "activations" in data["unknown_terms"] and data["peak_is_lower_bound"] is True
    assert status == 1 and data["fits"] is False  # 7B in fp32 with AdamW: the known part alone is over


def test_no_gpu_is_null(capsys: pytest.CaptureFixture[str]) -> None:
    status, data = run_json(GPT2_T4[:-2], capsys)
    check_contract(data)
    assert status == 0 and data["gpu"] is None and data["fits"] is None


def test_golden_json_for_gpt2_on_t4(capsys: pytest.CaptureFixture[str]) -> None:
    """The whole object for one run. After a deliberate change, regenerate with
    ``python -m flake8_torch_preflight estimate --model gpt2 --batch-size 4 --seq-len 128
    --precision amp --optimizer adamw --gpu t4 --format json > tests/fixtures/estimator/gpt2_t4_amp_adamw.json``.
    """
    _, data = run_json(GPT2_T4, capsys)
    assert data == json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_llama_savings_and_solution_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, data = run_json(LLAMA_A100, capsys)
    assert status == 1 and data["fits"] is False
    check_contract(data)
    changes = [s["change"] for s in data["savings"]]
    assert "gradient checkpointing" in changes and "8-bit AdamW" in changes
    smallest = data["solution"]["smallest"]
    assert data["solution"]["status"] == "solved" and smallest["fits"] is True
    assert smallest["peak_after_bytes"] <= data["gpu"]["usable_bytes"]


# ------------------------------------------------------------------ partly known runs

CLASSIFIER = 1_205_026_826  # examples/bad_train.py's hand-written Classifier
HAND_WRITTEN = ["estimate", "--params", str(CLASSIFIER), "--batch-size", "64", "--precision", "amp",
                "--optimizer", "adamw", "--gpu", "t4"]
ADAMW_8BIT_SAVES = 2 * CLASSIFIER * 4 - -(-2 * CLASSIFIER * (1 + 4 / 256) // 1)


def test_partly_known_savings_are_lower_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    status, data = run_json(HAND_WRITTEN, capsys)
    check_contract(data)
    assert status == 1 and data["fits"] is False and data["breakdown"]["activations"] is None
    savings = {s["change"]: s for s in data["savings"]}
    adamw8 = savings["8-bit AdamW"]
    assert adamw8["saves_bytes"] == ADAMW_8BIT_SAVES and adamw8["saves_at_least"] is True
    assert adamw8["peak_after_is_lower_bound"] is True and adamw8["fits"] is None  # its low end is under the T4
    solution = data["solution"]
    assert solution["status"] == "unknown" and solution["smallest"] is None
    assert [c["change"] for c in solution["may_fit"]["changes"]] == ["8-bit AdamW"]
    assert solution["message"].startswith("may fit with 8-bit AdamW (-6.7 GiB)")
    _, text, _ = run_cli(HAND_WRITTEN, capsys)
    assert re.search(r"^  8-bit AdamW +≥ 6\.70 GiB  -> ≥ \d+\.\d\d GiB  may fit$", text, re.M), text
    assert "the smallest change that may fit:" in text


def test_nothing_on_one_device_fits_names_the_closest_changes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = HAND_WRITTEN + ["--sharding", "ddp"]  # a second copy of the gradients: nothing fits a T4
    status, data = run_json(argv, capsys)
    assert status == 1
    solution = data["solution"]
    assert solution["status"] == "nothing-fits"
    assert solution["message"].startswith("nothing on one device fits: even with optimizer offload to CPU (-9.0 GiB)")
    lowest = solution["lowest"]
    assert lowest["partial"] is True and lowest["peak_after_bytes"] > data["gpu"]["usable_bytes"]
    _, text, _ = run_cli(argv, capsys)
    assert "nothing on one device fits. The changes that lower the peak most leave it at least" in text
    assert re.search(r"^  optimizer offload to CPU  saves ≥ 8\.98 GiB$", text, re.M), text


def _fake_script(monkeypatch: pytest.MonkeyPatch, run: RunSpec) -> None:
    monkeypatch.setattr(extract, "read_reading", lambda path: run)


def test_a_hand_written_model_is_named_by_its_label(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run = RunSpec(params=CLASSIFIER, model_label="Classifier", batch_size=64, precision="amp",
                  sources={"params": "train.py:112", "model_label": "train.py:23", "batch_size": "train.py:97"})
    _fake_script(monkeypatch, run)
    _, data = run_json(["estimate", "train.py", "--gpu", "t4"], capsys)
    assert (data["model"]["name"], data["model"]["source"]) == ("Classifier", "counted from train.py:23")
    _, text, _ = run_cli(["estimate", "train.py", "--gpu", "t4"], capsys)
    assert text.startswith("model: Classifier, 1,205,026,826 parameters (counted from train.py:23)\n")
    # without a label: still counted from the script, and not called "unknown"
    _fake_script(monkeypatch, run.replace(model_label=None, sources={"params": "train.py:112"}))
    _, data = run_json(["estimate", "train.py"], capsys)
    assert (data["model"]["name"], data["model"]["source"]) == (None, "counted from train.py:112")
    _, text, _ = run_cli(["estimate", "train.py"], capsys)
    assert text.startswith("model: a model outside the catalogue, 1,205,026,826 parameters (counted from train.py:112)")
    # a count given on the command line is the command line's
    _fake_script(monkeypatch, run)
    _, data = run_json(["estimate", "train.py", "--params", "1b"], capsys)
    assert (data["model"]["name"], data["model"]["source"]) == ("Classifier", "command line")


def test_a_catalogue_model_on_the_command_line_replaces_the_scripts_count(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run = RunSpec(params=CLASSIFIER, model_label="Classifier", batch_size=4, seq_len=128,
                  sources={"params": "train.py:112", "model_label": "train.py:23"})
    _fake_script(monkeypatch, run)
    _, data = run_json(["estimate", "train.py", "--model", "gpt2"], capsys)
    assert data["model"] == {**data["model"], "name": "gpt2", "params": 124439808, "source": "catalogue"}
    assert "params" not in data["config"]["sources"] and "model_label" not in data["config"]["sources"]


def test_the_native_image_size_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--model", "vit-b-16", "--batch-size", "8", "--gpu", "t4"]
    _, data = run_json(argv, capsys)
    assert data["config"]["image_size"] == 224
    assert data["config"]["sources"]["image_size"] == "default (native 224)"
    assert any("native 224" in note for note in data["notes"])
    _, text, _ = run_cli(argv, capsys)
    assert "image 224 (native default)" in text.splitlines()[1]
    assert "note: image size not given: priced at vit-b-16's native 224 px" in text
    _, data = run_json(argv + ["--image-size", "384"], capsys)
    assert data["config"]["sources"]["image_size"] == "command line" and data["notes"] == []


def test_bad_train_example_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    """The example script's hand-written model: what the estimator reads and says."""
    argv = ["estimate", str(ROOT / "examples" / "bad_train.py"), "--gpu", "t4"]
    status, data = run_json(argv, capsys)
    assert status == 1 and data["model"]["params"] == CLASSIFIER
    assert data["model"]["name"] in (None, "Classifier")
    assert data["model"]["source"].startswith("counted from bad_train.py:")
    savings = {s["change"]: s for s in data["savings"]}
    assert savings["8-bit AdamW"]["saves_bytes"] == ADAMW_8BIT_SAVES and savings["8-bit AdamW"]["saves_at_least"]
    assert data["solution"]["status"] == "nothing-fits"
    assert re.search(r"\(-\d+\.\d GiB\)", data["solution"]["message"])


# ------------------------------------------------------------------------------ the text


@pytest.mark.parametrize("argv", [GPT2_T4, LLAMA_A100, HAND_WRITTEN], ids=["gpt2", "llama", "hand-written"])
def test_the_text_report_reads_at_a_glance(argv: List[str], capsys: pytest.CaptureFixture[str]) -> None:
    _, text, _ = run_cli(argv, capsys)
    lines = text.splitlines()
    assert lines[0].startswith("model: ") and lines[1].startswith("run: ") and lines[2] == ""
    assert all(len(line) <= 110 for line in lines), max(lines, key=len)
    assert "unknown model" not in text
    terms = lines[3:next(i for i, line in enumerate(lines) if line.startswith("  ---"))]
    assert not any("_" in line.split("GiB")[0] for line in terms), terms  # "optimizer state", not optimizer_state
    # each term once, by its name in words; terms that do not apply share one line
    for label in ("weights", "gradients", "optimizer state", "CUDA context"):
        assert sum(1 for line in lines if line.startswith(f"  {label} ")) == 1, label
    assert any(line.startswith("  not in this run ") and "KV cache" in line for line in lines)
    assert sum(1 for line in lines if line.startswith("  projected peak ")) == 1
    assert "each change alone" in text


def test_tp_estimate_takes_the_estimate_commands_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (GPT2_T4, LLAMA_A100 + ["--format", "json"], ["estimate", "--model", "gpt2"]):
        status = cli.main(argv)
        expected = capsys.readouterr()
        assert cli.estimate_main(argv[1:]) == status
        assert capsys.readouterr() == expected
        assert cli.estimate_main(argv) == status  # a leading "estimate" is accepted too
        assert capsys.readouterr() == expected


# ------------------------------------------------------------------------ other commands

def test_gpus_lists_gpus_and_instances(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(["gpus"], capsys)
    assert status == 0 and "a100-80gb" in out and "p4d.24xlarge" in out
    gpus, instances, _ = out.split("\n\n")
    for line in gpus.splitlines()[1:]:  # columns never run together, even at 256 GiB
        assert re.match(r"^\S+ +\d+\.\d\d GiB +\d+\.\d\d GiB +\d+ MiB  (yes|no) +\S", line), line
    for line in instances.splitlines()[1:]:
        assert re.match(r"^\S+ +(aws|gcp|azure) +\d+  \S+ +\d+\.\d\d GiB$", line), line
    assert "p4d.24xlarge                 aws          8  a100-40gb" in instances
    status, out, _ = run_cli(["gpus", "--format", "json"], capsys)
    data = json.loads(out)
    assert status == 0 and data["gpus"] and data["instances"]
    assert all(type(g["usable_bytes"]) is int for g in data["gpus"])


def test_models_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(["models"], capsys)
    assert status == 0 and "llama-2-7b" in out


def test_one_line_summary() -> None:
    run = RunSpec(model=find_model("llama-2-7b"), batch_size=4, seq_len=2048, precision="amp")
    result = estimate(run, find_gpu("a100-80gb"))
    line = one_line(result, solve(result))
    assert "\n" not in line
    assert re.match(r"^projected peak \d+\.\d GiB \(\d+\.\d–\d+\.\d\) > a100-80gb usable \d+\.\d GiB; "
                    r"fits( \(point estimate only\))? with: .+ \(-\d+\.\d GiB\)", line), line
    fitting = estimate(RunSpec(model=find_model("gpt2"), batch_size=1, seq_len=64), find_gpu("t4"))
    assert re.match(r"^projected peak \d+\.\d GiB \(\d+\.\d–\d+\.\d\) <= t4 usable", one_line(fitting))


def test_python_dash_m_runs_without_a_traceback() -> None:
    done = subprocess.run([sys.executable, "-m", "flake8_torch_preflight", "estimate", "--model", "nope"],
                          cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("estimate: unknown model 'nope'") and done.stderr.count("\n") == 1


# ----------------------------------------------------------------- the top-level command


def test_bare_command_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli([], capsys)
    assert (status, err) == (0, "")
    assert out == cli.overview()
    lines = out.splitlines()
    assert lines[0] == "usage: python -m flake8_torch_preflight COMMAND [options]"
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    assert listed == ["estimate", "gpus", "models", "explain"]  # one line each
    assert "no model" not in out


def test_bare_command_in_a_real_process() -> None:
    done = subprocess.run([sys.executable, "-m", "flake8_torch_preflight"], cwd=str(ROOT), capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == cli.overview()


def test_explain_prints_the_long_form(capsys: pytest.CaptureFixture[str]) -> None:
    from flake8_torch_preflight.explain import render

    status, out, err = run_cli(["explain", "TP001"], capsys)
    assert (status, err) == (0, "")
    assert out == render("TP001") and out.startswith("TP001 graph-retention\n")
    status, out, err = run_cli(["explain", "tpv001"], capsys)  # any case, as render takes it
    assert (status, err) == (0, "") and out.startswith("TPV001 projected-oom\n")


@pytest.mark.parametrize("argv, message", [
    (["explain", "TP999"], "explain: unknown code 'TP999'; known codes: TP001, TP002,"),
    (["explain", ""], "explain: unknown code ''; known codes: TP001,"),
    (["explain", "TP001" * 20], "explain: unknown code 'TP001TP001TP001TP001TP001TP001TP001T...\n"),
    (["explain"], "explain: the following arguments are required: CODE"),
    (["explain", "TP001", "TP002"], "explain: unrecognized arguments: TP002"),
])
def test_explain_unknown_code_is_one_line_and_exit_2(argv: List[str], message: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(argv, capsys)
    assert (status, out) == (2, "")
    assert err.startswith(message) and err.count("\n") == 1 and err.endswith("\n"), err


def test_version_from_both_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from flake8_torch_preflight import __version__

    expected = f"flake8-torch-preflight {__version__}\n"
    assert run_cli(["--version"], capsys) == (0, expected, "")
    assert cli.estimate_main(["--version"]) == 0
    assert capsys.readouterr() == (expected, "")
    assert cli.estimate_main(["estimate", "--version"]) == 0
    assert capsys.readouterr() == (expected, "")


def _console_script(name: str) -> str:
    found = Path(sys.executable).parent / name
    if not found.exists():
        pytest.skip(f"{name} is not installed beside {sys.executable}")
    return str(found)


def test_tp_estimate_console_script_version_and_help() -> None:
    from flake8_torch_preflight import __version__

    script = _console_script("tp-estimate")
    done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"flake8-torch-preflight {__version__}\n", "")
    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: tp-estimate [-h] [--version]"), done.stdout


def test_help_names_the_command_it_was_run_as(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.estimate_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tp-estimate [-h] [--version]") and "python -m" not in out.split("\n\n")[0]
    assert "--world-size N" in out
    status, out, _ = run_cli(["estimate", "--help"], capsys)
    assert status == 0 and out.startswith("usage: python -m flake8_torch_preflight estimate [-h]")
    status, out, _ = run_cli(["--help"], capsys)
    assert status == 0 and out.startswith("usage: python -m flake8_torch_preflight [-h] [--version] COMMAND")
    assert all(name in out for name in ("estimate", "gpus", "models", "explain"))


# --------------------------------------------------- the target from flake8's configuration

GPT2 = ["estimate", "--model", "gpt2", "--batch-size", "4", "--seq-len", "128"]


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a nested working directory (the config is found upward)."""
    work = tmp_path / "project" / "src"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return tmp_path / "project"


def test_target_gpu_from_setup_cfg(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "setup.cfg").write_text("[metadata]\nname = x\n\n[flake8]\nmax-line-length = 120\ntp-target-gpu = t4\n")
    status, data = run_json(GPT2, capsys)
    assert status == 0 and data["gpu"]["key"] == "t4" and data["fits"] is True
    assert data["config"]["sources"]["gpu"] == os.path.join("..", "setup.cfg") + " [flake8] tp-target-gpu"
    status, out, err = run_cli(GPT2, capsys)
    assert (status, err) == (0, "")
    assert out.endswith("\n\nnote: GPU t4 from " + os.path.join("..", "setup.cfg")
                        + " [flake8] tp-target-gpu (--gpu or --gpu-memory overrides it)\n"), out
    assert "usable on t4" in out


def test_underscore_spelling_and_the_last_one_wins(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "tox.ini").write_text("[flake8]\ntp-target-gpu = a100-80gb\ntp_target_gpu = t4\n")
    _, data = run_json(GPT2, capsys)
    assert data["gpu"]["key"] == "t4"
    assert data["config"]["sources"]["gpu"] == os.path.join("..", "tox.ini") + " [flake8] tp_target_gpu"


def test_gpu_memory_from_the_config_wins_over_the_gpu_name(project: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    (project / ".flake8").write_text("[flake8]\ntp-target-gpu = t4\ntp-gpu-memory = 1GiB\n")
    status, data = run_json(GPT2, capsys)
    assert status == 1 and data["gpu"]["usable_bytes"] == 1024**3 and data["fits"] is False
    assert data["config"]["sources"]["gpu"].endswith(".flake8 [flake8] tp-gpu-memory")


def test_the_command_line_overrides_the_config(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "setup.cfg").write_text("[flake8]\ntp-target-gpu = nonsense\n")
    for flags, key in ((["--gpu", "a10"], "a10"), (["--gpu-memory", "48GiB"], "custom-48gib")):
        status, data = run_json(GPT2 + flags, capsys)
        assert status == 0 and data["gpu"]["key"] == key and "gpu" not in data["config"]["sources"]


def test_the_first_config_file_with_a_flake8_section_is_the_one(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # flake8 reads the nearest file with a [flake8] section only: a target further up is not its setting
    (project / "setup.cfg").write_text("[flake8]\ntp-target-gpu = t4\n")
    (project / "src" / "setup.cfg").write_text("[metadata]\nname = x\n")  # no [flake8]: skipped
    (project / "src" / "tox.ini").write_text("[flake8]\nmax-line-length = 100\n")
    status, data = run_json(GPT2, capsys)
    assert status == 0 and data["gpu"] is None and "gpu" not in data["config"]["sources"]
    (project / "src" / "tox.ini").write_text("[tox]\nenvlist = py\n")
    _, data = run_json(GPT2, capsys)
    assert data["gpu"]["key"] == "t4"


@pytest.mark.parametrize("text, message", [
    ("[flake8]\ntp-target-gpu = t5\n",
     "estimate: {} [flake8] tp-target-gpu: unknown GPU or instance 't5'"),
    ("[flake8]\ntp_gpu_memory = lots\n",
     "estimate: {} [flake8] tp_gpu_memory: invalid size 'lots'; give a positive number with a unit"),
    ("[flake8]\ntp-gpu-memory = 2000TiB\n",
     "estimate: {} [flake8] tp-gpu-memory: invalid size '2000TiB': it must be at most 1 PiB (1024 TiB)\n"),
])
def test_a_malformed_config_value_is_one_line_and_exit_2(project: Path, text: str, message: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (project / "setup.cfg").write_text(text)
    for argv in (GPT2, GPT2 + ["--format", "json"]):
        status, out, err = run_cli(argv, capsys)
        assert (status, out) == (2, "")
        assert err.startswith(message.format(os.path.join("..", "setup.cfg"))) and err.count("\n") == 1, err


def test_an_empty_config_value_is_no_target(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "setup.cfg").write_text("[flake8]\ntp-target-gpu =\n")
    status, data = run_json(GPT2, capsys)
    assert status == 0 and data["gpu"] is None


@pytest.mark.parametrize("layout", [
    {"setup.cfg": "[flake8]\n", "a/b/tox.ini": "[tox]\n"},
    {"setup.cfg": "[flake8]\n", "a/b/.flake8": "[flake8]\n"},
    {"tox.ini": "[flake8]\n", "setup.cfg": "[flake8]\n"},  # setup.cfg first in a folder
    {"a/.flake8": "[flake8:local-plugins]\n", "setup.cfg": "[flake8]\n"},
    {"a/setup.cfg": "[flake8\nbroken", "a/tox.ini": "[flake8]\n"},  # unparseable: skipped
    {"a/b/setup.cfg": "[isort]\n"},
])
def test_discovery_matches_flake8(tmp_path: Path, layout: Dict[str, str]) -> None:
    from flake8.options.config import _find_config_file as flake8_finds

    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    start = tmp_path / "a" / "b"
    start.mkdir(parents=True, exist_ok=True)
    expected = flake8_finds(str(start))
    assert cli.find_flake8_config(str(start)) == expected
    assert cli._find_config_file(str(start)) == expected  # the rule used when flake8's moves
    if expected is not None:
        assert expected.startswith(str(tmp_path))  # found inside the layout, not above it


# ------------------------------------------------------------------ what a SCRIPT left unread

def test_the_report_renders_a_run_without_a_model_and_owns_unread() -> None:
    """No parameter count: the model line says what held it (or that none was given) and the
    option that supplies it, never ``? parameters (None)``; every other unread field is one
    ``not read:`` line after the run line, naming its option; JSON ``unread`` is the same map."""
    from flake8_torch_preflight.estimator.report import render_text, to_json

    run = RunSpec(batch_size=8, optimizer="sgd")
    result = estimate(run, find_gpu("t4"))
    solution = solve(result)
    lines = render_text(result, solution).splitlines()
    assert lines[0] == "model: not given (give --model NAME or --params N)"
    assert to_json(result, solution)["unread"] == {}
    unread = {"model": "Net(): parameter count not known at train.py:5",
              "grad_accum_steps": "the micro-batch loop over range(k) at train.py:9",
              "seq_len": "not stated in train.py"}
    lines = render_text(result, solution, unread).splitlines()
    assert lines[0] == ("model: not read: Net(): parameter count not known at train.py:5 "
                        "(give --model NAME or --params N)")
    assert lines[1].startswith("run: training, batch 8")
    assert lines[2:5] == ["not read: grad accum steps: the micro-batch loop over range(k) at train.py:9 "
                          "(give --grad-accum)",
                          "not read: seq len: not stated in train.py (give --seq-len)",
                          ""]
    assert to_json(result, solution, unread)["unread"] == unread
    labelled = estimate(run.replace(model_label="Net"), None)
    assert render_text(labelled, solve(labelled)).splitlines()[0] == (
        "model: Net, parameter count not known (give --model NAME or --params N)")


def test_json_always_carries_unread(capsys: pytest.CaptureFixture[str]) -> None:
    _, data = run_json(GPT2_T4, capsys)
    assert data["unread"] == {}


def test_lora_dtype_is_an_option_shown_in_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--model", "llama-2-7b", "--batch-size", "1", "--seq-len", "512", "--precision", "bf16",
            "--lora", "8", "--lora-targets", "q_proj,v_proj", "--lora-dtype", "model"]
    _, data = run_json(argv, capsys)
    assert data["config"]["lora_dtype"] == "model" and data["config"]["sources"]["lora_dtype"] == "command line"
    _, out, _ = run_cli(argv, capsys)
    assert "LoRA rank 8 on q_proj, v_proj, adapters in the model's dtype" in out.splitlines()[1]
    _, data = run_json(argv[:-2], capsys)
    assert data["config"]["lora_dtype"] == "fp32"
    status, out, err = run_cli(argv[:-1] + ["bf16"], capsys)
    assert status == 2 and "--lora-dtype" in err and "invalid choice" in err


def test_lora_dropout_is_an_option_shown_in_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--model", "gemma-2b", "--batch-size", "2", "--seq-len", "512", "--precision", "bf16",
            "--lora", "8", "--lora-targets", "all-linear,lm_head", "--lora-dtype", "model", "--lora-dropout", "0.1"]
    _, data = run_json(argv, capsys)
    config = data["config"]
    assert config["lora_dropout"] == 0.1 and config["sources"]["lora_dropout"] == "command line"
    assert config["lora_targets"] == ["all-linear", "lm_head"]
    _, out, _ = run_cli(argv, capsys)
    assert out.splitlines()[1].endswith(
        "LoRA rank 8 on all-linear, lm_head, adapters in the model's dtype, dropout 0.1")
    _, data = run_json(argv[:-2], capsys)
    assert data["config"]["lora_dropout"] == 0.0
    _, data = run_json(["estimate", "--model", "gpt2", "--batch-size", "1", "--seq-len", "8"], capsys)
    assert data["config"]["lora_dropout"] is None  # no LoRA
    for bad in ("1", "-0.1", "nan", "x"):
        status, out, err = run_cli(argv[:-1] + [bad], capsys)
        assert (status, out) == (2, "") and err.count("\n") == 1, err
        assert "argument --lora-dropout: must be a probability at least 0 and below 1" in err
