"""The estimator's command line: exit codes, one-line errors, the JSON contract, a golden run."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from flake8_torch_preflight.estimator import cli
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
     "estimate: argument --batch-size: must be a positive integer, got '0'"),
    (["estimate", "--model", "gpt2", "--batch-size", "-3"],
     "estimate: argument --batch-size: must be a positive integer, got '-3'"),
    (["estimate", "--model", "gpt2", "--seq-len", "abc"],
     "estimate: argument --seq-len: must be a positive integer, got 'abc'"),
    (["estimate", "--batch-size", "4"],
     "estimate: no model: give --model NAME (a catalogue name or Hugging Face id) or --params N"),
    (["estimate", "--params", "seven"],
     "estimate: argument --params: must be a positive parameter count such as 124439808 or 7b, got 'seven'"),
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


def test_script_needs_the_extract_module(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "flake8_torch_preflight.estimator.extract", None)  # import fails
    status, _, err = run_cli(["estimate", "train.py", "--model", "gpt2"], capsys)
    assert status == 2
    assert err == "estimate: reading a script needs flake8_torch_preflight.estimator.extract\n"


def test_script_values_with_command_line_overrides(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    fake = types.ModuleType("flake8_torch_preflight.estimator.extract")

    def read_run(path: str) -> RunSpec:
        assert path == "train.py"
        return RunSpec(model=find_model("gpt2"), batch_size=32, seq_len=512, precision="amp",
                       sources={"model": "train.py:3", "batch_size": "train.py:12", "seq_len": "train.py:13",
                                "precision": "train.py:20"})

    fake.read_run = read_run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flake8_torch_preflight.estimator.extract", fake)
    status, data = run_json(["estimate", "train.py", "--batch-size", "4"], capsys)
    assert status == 0
    config = data["config"]
    assert (config["batch_size"], config["seq_len"], config["precision"]) == (4, 512, "amp")
    assert config["sources"]["batch_size"] == "command line"
    assert config["sources"]["seq_len"] == "train.py:13"
    assert config["sources"]["optimizer"] == "default"


def test_script_reader_errors_are_one_line(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    fake = types.ModuleType("flake8_torch_preflight.estimator.extract")

    def read_run(path: str) -> RunSpec:
        raise OSError(2, "No such file or directory")

    fake.read_run = read_run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flake8_torch_preflight.estimator.extract", fake)
    status, _, err = run_cli(["estimate", "missing.py"], capsys)
    assert (status, err) == (2, "estimate: cannot read missing.py: No such file or directory\n")


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


# ------------------------------------------------------------------------ other commands

def test_gpus_lists_gpus_and_instances(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(["gpus"], capsys)
    assert status == 0 and "a100-80gb" in out and "p4d.24xlarge" in out
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
