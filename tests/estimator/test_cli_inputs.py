"""The estimator refuses what it cannot price, in one line and exit status 2, and never hangs.

Numbers outside ``run.LIMITS`` (and sizes over 1 PiB, device counts over a million) once
overflowed a float or a Decimal deep in the cost model (a traceback, status 1, no JSON); files that
are not regular files (a FIFO blocks on open, a device never ends), files over the size bound and
files whose reading runs past the linter's per-file CPU budget once hung or exhausted memory.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from flake8_torch_preflight import engine
from flake8_torch_preflight.estimator import cli, files
from flake8_torch_preflight.estimator.run import LIMITS, RunSpec, RunSpecError

ROOT = Path(__file__).resolve().parents[2]
HUGE = "1" + "0" * 60
NINES = "9" * 60
SCRIPT = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
loader = DataLoader(ds, batch_size={batch})
optimizer = torch.optim.AdamW(model.parameters())
for batch in loader:
    model(**batch).loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def run_cli(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def one_line_exit_2(argv: List[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a refused input prints; nothing on stdout, in text or JSON."""
    for extra in ([], ["--format", "json"]):
        status, out, err = run_cli(argv + extra, capsys)
        assert (status, out) == (2, ""), (argv, out, err)
        assert err.endswith("\n") and err.count("\n") == 1, err
        assert "Traceback" not in err
    return err


NUMBERS = [
    (["--model", "gpt2", "--world-size", HUGE],
     "estimate: argument --world-size: must be a positive integer up to 1,000,000, got "
     "'100000000000000000000000000000000000...\n"),
    (["--model", "gpt2", "--lora", HUGE],
     "estimate: argument --lora: must be a positive integer up to 100,000, got "
     "'100000000000000000000000000000000000...\n"),
    (["--model", "gpt2", "--batch-size", "1" + "0" * 300],
     "estimate: argument --batch-size: must be a positive integer up to 1,000,000, got "
     "'100000000000000000000000000000000000...\n"),
    (["--model", "gpt2", "--batch-size", "1000001"],
     "estimate: argument --batch-size: must be a positive integer up to 1,000,000, got '1000001'\n"),
    (["--model", "gpt2", "--seq-len", "10000001"],
     "estimate: argument --seq-len: must be a positive integer up to 10,000,000, got '10000001'\n"),
    (["--model", "vit-b-16", "--image-size", "100001"],
     "estimate: argument --image-size: must be a positive integer up to 100,000, got '100001'\n"),
    (["--model", "gpt2", "--max-new-tokens", "1e9"],
     "estimate: argument --max-new-tokens: must be a positive integer up to 10,000,000, got '1e9'\n"),
    (["--model", "gpt2", "--grad-accum", "-1"],
     "estimate: argument --grad-accum: must be a positive integer up to 1,000,000, got '-1'\n"),
    (["--model", "gpt2", "--batch-size", ""],
     "estimate: argument --batch-size: must be a positive integer up to 1,000,000, got ''\n"),
    (["--params", "1e400"],
     "estimate: argument --params: must be a parameter count from 1 to 1,000,000,000,000,000 such as 124439808 or "
     "7b, got '1e400'\n"),
    (["--params", NINES],
     "estimate: argument --params: must be a parameter count from 1 to 1,000,000,000,000,000 such as 124439808 or "
     "7b, got '999999999999999999999999999999999999...\n"),
    (["--params", "1e999999999"],
     "estimate: argument --params: must be a parameter count from 1 to 1,000,000,000,000,000 such as 124439808 or "
     "7b, got '1e999999999'\n"),
    (["--params", "sNaN"],
     "estimate: argument --params: must be a parameter count from 1 to 1,000,000,000,000,000 such as 124439808 or "
     "7b, got 'sNaN'\n"),
    (["--params", "inf"],
     "estimate: argument --params: must be a parameter count from 1 to 1,000,000,000,000,000 such as 124439808 or "
     "7b, got 'inf'\n"),
    (["--params", "0.4"],
     "estimate: argument --params: must be a parameter count from 1 to 1,000,000,000,000,000 such as 124439808 or "
     "7b, got '0.4'\n"),
    (["--params", "1001t"],
     "estimate: argument --params: must be a parameter count from 1 to 1,000,000,000,000,000 such as 124439808 or "
     "7b, got '1001t'\n"),
    (["--model", "gpt2", "--gpu-memory", NINES + "GiB"],
     "estimate: invalid size '999999999999999999999999999999999999...: it must be at most 1 PiB (1024 TiB)\n"),
    (["--model", "gpt2", "--gpu-memory", "1025TiB"],
     "estimate: invalid size '1025TiB': it must be at most 1 PiB (1024 TiB)\n"),
    (["--model", "gpt2", "--gpu", NINES + "xt4"],
     f"estimate: invalid device count in '{NINES}xt4': it must be at least 1 and at most 1,000,000 devices in all\n"),
    (["--model", "gpt2", "--gpu", "1000001xt4"],
     "estimate: invalid device count in '1000001xt4': it must be at least 1 and at most 1,000,000 devices in all\n"),
    (["--model", "gpt2", "--gpu", "200000xp4d.24xlarge"],  # 1.6 million A100s
     "estimate: invalid device count in '200000xp4d.24xlarge': it must be at least 1 and at most 1,000,000 devices "
     "in all\n"),
    (["--model", "x" * 100_000],
     "estimate: unknown model 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'; no close matches. Give "
     "--params N or a known name (python -m flake8_torch_preflight models)\n"),
]


@pytest.mark.parametrize("argv, line", NUMBERS, ids=[" ".join(a)[:40] for a, _ in NUMBERS])
def test_numbers_out_of_range_are_refused(argv: List[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line_exit_2(["estimate"] + argv, capsys) == line


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_the_largest_accepted_values_price_without_overflow(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    flags = {"params": "--params", "batch_size": "--batch-size", "seq_len": "--seq-len", "image_size": "--image-size",
             "max_new_tokens": "--max-new-tokens", "grad_accum_steps": "--grad-accum", "world_size": "--world-size",
             "lora_rank": "--lora", "trainable_params": "--trainable-params"}
    high = str(LIMITS[name][1])
    for model in ("llama-2-7b", "vit-b-16", "resnet50"):
        argv = ["estimate", "--model", model, "--batch-size", "8", "--seq-len", "512", flags[name], high,
                "--sharding", "zero-3", "--gpu", "8xh100-sxm", "--format", "json"]
        if name == "trainable_params":  # more than the model has: only as LoRA's adapter count
            argv.append("--lora")
        status, out, err = run_cli(argv, capsys)
        assert status in (0, 1) and err == "", err
        data = json.loads(out)
        assert type(data["peak_bytes"]) is int and (data["fits"] is False) is (status == 1)


def test_everything_at_its_largest_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--model", "llama-2-70b", "--gpu", "1000000xh100-sxm", "--sharding", "zero-3",
            "--format", "json", "--generate"]
    flags = {"--params": "params", "--batch-size": "batch_size", "--seq-len": "seq_len",
             "--max-new-tokens": "max_new_tokens", "--world-size": "world_size", "--lora": "lora_rank",
             "--trainable-params": "trainable_params"}
    for flag, name in flags.items():
        argv += [flag, str(LIMITS[name][1])]
    status, out, err = run_cli(argv, capsys)
    assert (status, err) == (1, "")
    assert json.loads(out)["peak_bytes"] > 10**21


def test_a_script_value_out_of_range_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(batch="10**7"))
    line = one_line_exit_2(["estimate", str(script), "--gpu", "t4"], capsys)
    assert line == "estimate: batch-size must be a positive integer up to 1,000,000, got 10,000,000 (train.py:6)\n"
    status, out, _ = run_cli(["estimate", str(script), "--gpu", "t4", "--batch-size", "8"], capsys)
    assert status == 0 and "batch 8" in out  # the command line's value replaces the script's


def test_runspec_check_names_the_range() -> None:
    with pytest.raises(RunSpecError, match=r"^params must be a positive integer up to 1,000,000,000,000,000, "
                                           r"got a number of 61 digits$"):
        RunSpec(params=10**60).check()
    with pytest.raises(RunSpecError, match=r"^world-size must be a positive integer up to 1,000,000, got True$"):
        RunSpec(world_size=True).check()


# ------------------------------------------------------------------------------ files


def test_a_fifo_is_refused_without_opening_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "train.py"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes: the test would hang
    line = one_line_exit_2(["estimate", str(fifo), "--model", "gpt2"], capsys)
    assert line == f"estimate: {fifo}: is not a regular file (a FIFO); give a script file\n"


def test_a_device_and_a_directory_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_exit_2(["estimate", str(tmp_path)], capsys)
    assert line == f"estimate: {tmp_path}: is a directory, not a script\n"
    if os.path.exists("/dev/zero"):  # endless: reading it once took gigabytes
        line = one_line_exit_2(["estimate", "/dev/zero"], capsys)
        assert line == "estimate: /dev/zero: is not a regular file (a device); give a script file\n"


def test_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.py"
    line = one_line_exit_2(["estimate", str(missing)], capsys)
    assert line == f"estimate: cannot read {missing}: No such file or directory\n"


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.py"
    with open(big, "wb") as handle:
        handle.truncate(20 * 1024 * 1024)  # 20 MB (sparse): it once took 266 s and 4.7 GB
    line = one_line_exit_2(["estimate", str(big)], capsys)
    assert line == f"estimate: {big}: is 20,971,520 bytes, over the 1 MiB a script may have\n"
    just = tmp_path / "just.py"
    just.write_bytes(b"#" * (files.MAX_FILE_BYTES - 1) + b"\n")
    status, _, err = run_cli(["estimate", str(just), "--model", "gpt2"], capsys)
    assert (status, err) == (0, "")  # exactly at the bound: read


def test_the_reader_stops_at_the_linters_cpu_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A chain of 10,000 subclasses once read for more than 600 s; the same budget as a linted file
    stops it (shortened here so the test stays quick)."""
    monkeypatch.setattr(engine, "BUDGET_SECONDS", 0.5)
    lines = ["import torch", "class C0(torch.nn.Module):", "    pass"]
    lines += [f"class C{i}(C{i - 1}):\n    pass" for i in range(1, 10_000)]
    lines.append("model = C9999().cuda()")
    chain = tmp_path / "chain.py"
    chain.write_text("\n".join(lines) + "\n")
    status, out, err = run_cli(["estimate", str(chain), "--gpu", "t4"], capsys)
    assert (status, out) == (2, "")
    assert err == (f"estimate: {chain}: reading the run took longer than 0.5 s of CPU time (the linter's per-file "
                   "budget) and was stopped; give the run as flags instead\n")


def test_bom_and_coding_line_are_read_like_the_linter_reads_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = SCRIPT.format(batch="16")
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + source.encode("utf-8"))
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + source.encode("latin-1"))
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(source.replace("\n", "\r\n").encode())
    for path, line in ((bom, 6), (latin, 8), (crlf, 6)):
        status, out, err = run_cli(["estimate", str(path), "--gpu", "t4", "--format", "json"], capsys)
        assert (status, err) == (0, ""), err
        data = json.loads(out)
        assert data["model"]["name"] == "gpt2" and data["config"]["batch_size"] == 16
        assert data["config"]["sources"]["batch_size"] == f"{path.name}:{line}"


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe\x00garbage", "cannot decode: invalid or missing encoding declaration\n"),
    (b"x = 1\ny = '\xe9'\n", "cannot decode as utf-8: 'utf-8' codec can't decode byte 0xe9 in position 11"),
    (b"# -*- coding: no-such-codec -*-\nx = 1\n", "cannot decode: unknown encoding: no-such-codec\n"),
    (b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n", "cannot decode: encoding problem"),
    (b"def f(:\n", "not valid Python: invalid syntax (line 1)\n"),
    (b"x = (" * 2000 + b"\n", "not valid Python: "),
])
def test_undecodable_or_invalid_scripts_are_one_line(tmp_path: Path, content: bytes, message: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bad.py"
    script.write_bytes(content)
    line = one_line_exit_2(["estimate", str(script), "--model", "gpt2"], capsys)
    assert line.startswith(f"estimate: {script}: {message}"), line


def test_a_fifo_in_a_real_process_returns_at_once(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "flake8_torch_preflight", "estimate", str(fifo), "--format", "json"],
                          cwd=str(ROOT), capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"estimate: {fifo}: is not a regular file (a FIFO); give a script file\n"


def test_an_unexpected_failure_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(cli, "estimate", broken)
    line = one_line_exit_2(["estimate", "--model", "gpt2"], capsys)
    assert line == ("estimate: internal error, please report it: OverflowError: int too large to convert to "
                    "float\n")
