"""The analysis server behind ``--tp-server``: same findings as in-process, used only for one file,
never trusted in a folder others can open, and gone when idle."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, List

import pytest

from flake8_torch_preflight import engine, server
from flake8_torch_preflight.options import _one_file
from flake8_torch_preflight.settings import Settings

from harness import ROOT

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX") or os.name != "posix", reason="POSIX sockets only")

BAD = ROOT / "examples" / "bad_train.py"


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private runtime folder for sockets (short: a socket's path is limited to about 100
    bytes); every server started in it is stopped afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="tp-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    for lock in folder.rglob("*.sock.lock"):
        server.stop(str(lock)[: -len(".lock")])
    shutil.rmtree(folder, ignore_errors=True)


def _wait_for(condition, seconds: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _start_server(path: str, idle: float = 60.0) -> "subprocess.Popen[bytes]":
    proc = subprocess.Popen([sys.executable, "-m", "flake8_torch_preflight.server", path, str(idle)])
    assert _wait_for(lambda: os.path.exists(path)), "the server did not bind its socket"
    return proc


def _flake8(*args: str, env_folder: Path) -> List[str]:
    env = dict(os.environ, XDG_RUNTIME_DIR=str(env_folder))
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args], cwd=str(ROOT), env=env,
        capture_output=True, text=True, timeout=120,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout.splitlines()


def test_server_answers_what_the_engine_answers(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = server.socket_path()
    assert path is not None and path.startswith(str(runtime))
    proc = _start_server(path)
    monkeypatch.chdir(ROOT)
    lines = BAD.read_text().splitlines(keepends=True)
    settings = Settings(target_gpu="t4", selected=None)
    answered = server.ask("examples/bad_train.py", lines, settings)
    assert answered is not None
    assert answered == engine.analyse_file("examples/bad_train.py", lines, settings)
    assert sorted(answered) == ["TP{:03d}".format(i) for i in range(1, 14)] + ["TPV001"]
    only = server.ask("examples/bad_train.py", lines, Settings(selected=frozenset({"TP006"})))
    assert only is not None and list(only) == ["TP006"]
    assert server.stop(path)
    assert proc.wait(timeout=30) == 0
    assert not os.path.exists(path)
    assert not server.stop(path + ".none")


def test_flake8_with_the_option_prints_the_same_findings(runtime: Path) -> None:
    args = ("--select", "TP", "--tp-target-gpu", "t4", "examples/bad_train.py")
    plain = _flake8(*args, env_folder=runtime)
    assert len(plain) == 14
    first = _flake8("--tp-server", *args, env_folder=runtime)  # no server yet: analysed in-process, one started
    assert first == plain
    sockets = lambda: [p for p in runtime.rglob("*.sock")]  # noqa: E731
    assert _wait_for(lambda: len(sockets()) == 1)
    assert _flake8("--tp-server", *args, env_folder=runtime) == plain  # answered by the server
    stdin = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--tp-server", "--select", "TP", "--tp-target-gpu", "t4",
         "--stdin-display-name", "examples/bad_train.py", "-"],
        cwd=str(ROOT), env=dict(os.environ, XDG_RUNTIME_DIR=str(runtime)), input=BAD.read_text(),
        capture_output=True, text=True, timeout=120,
    )
    assert stdin.stdout.splitlines() == plain


def test_several_files_never_start_a_server(runtime: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("import torch\n")
    out = _flake8("--tp-server", "--select", "TP", str(BAD), str(other), env_folder=runtime)
    assert len(out) == 13  # TPV001 needs a target GPU
    assert list(runtime.iterdir()) == []
    assert _one_file([str(BAD)]) and _one_file(["-"])
    assert not _one_file([str(BAD), str(other)]) and not _one_file([str(tmp_path)]) and not _one_file([])


def test_a_folder_others_can_open_is_never_used(runtime: Path) -> None:
    path = server.socket_path()
    assert path is not None
    os.chmod(os.path.dirname(path), 0o755)
    assert server.socket_path() is None
    assert server.ask("x.py", ["import torch\n"], Settings()) is None
    assert list(Path(path).parent.iterdir()) == []  # and no server was started there


def test_a_socket_path_too_long_for_the_system_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    folder = tmp_path / ("x" * 120)
    folder.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    assert server.socket_path() is None


def test_a_stale_socket_file_falls_back_and_is_replaced(runtime: Path) -> None:
    path = server.socket_path()
    assert path is not None
    Path(path).write_text("not a socket")
    assert server.ask("x.py", ["import torch\n"], Settings()) is None  # the caller analyses in-process
    assert _wait_for(lambda: Path(path).is_socket())  # the server started for the next request replaced it


def test_one_server_per_socket_and_it_leaves_when_idle(runtime: Path) -> None:
    path = server.socket_path()
    assert path is not None
    proc = _start_server(path, idle=1.0)
    second = subprocess.run([sys.executable, "-m", "flake8_torch_preflight.server", path, "1"], timeout=60)
    assert second.returncode == 0  # the lock is held: it left at once
    assert proc.wait(timeout=60) == 0
    assert not os.path.exists(path)


def test_an_edited_plugin_gets_another_socket(runtime: Path) -> None:
    server.installation_key.cache_clear()
    before = server.socket_path()
    version = server.__version__
    server.__version__ = "0.0.0-other"
    server.installation_key.cache_clear()
    try:
        assert server.socket_path() != before
    finally:
        server.__version__ = version
        server.installation_key.cache_clear()
    assert server.socket_path() == before
