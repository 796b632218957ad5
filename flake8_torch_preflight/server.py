"""An optional analysis server for editors: ``--tp-server`` (``tp-server = true`` in the config).

An editor runs flake8 on one file at every save, in a new process each time, so that process
pays once more for importing astroid, building its ``builtins`` module and the torch stubs
before it reads the file.  With ``--tp-server`` and exactly one file (or ``-``, stdin) to check,
the plugin instead sends the file to a background process of the same installation that has
all of that built already, and reports what it answers.  When there is no such process yet, the
plugin starts one (detached, for the next save) and analyses this file itself; the server exits
after ``IDLE_SECONDS`` without a request.  Runs over several files (CI, pre-commit) never use
it: they pay the start-up once and analyse in parallel with ``--jobs``.

The answer is the in-process one: the server runs ``engine.analyse_file`` with the client's
settings, in the client's working directory, and returns its findings and its notes (what the
engine writes to stderr), which the client prints.  Each file is analysed afresh (``engine``
forgets a file's modules and caches when it ends), so a server's answer does not depend on the
files it analysed before.  Any failure (no server, a busy or stale one, a socket folder that is
not the user's own) falls back to analysing in-process, silently.

The socket lives in a folder only the user can open (``$XDG_RUNTIME_DIR`` or the temporary
folder), named after this installation (version, interpreter, the package's files and their
modification times), so an upgraded or edited plugin never talks to an older server.  POSIX
only: where ``AF_UNIX`` or ``fcntl`` is missing, the option does nothing.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import __version__
from .settings import Settings

#: Seconds a server waits for the next request before it exits.
IDLE_SECONDS = 900.0

#: Seconds the client waits to connect; a server that does not accept by then is busy or gone.
CONNECT_TIMEOUT = 0.5

#: Seconds the client waits for an answer once connected: above the engine's CPU-time limit
#: for one file (``engine.BUDGET_SECONDS``), with room for a request queued behind another.
ANSWER_TIMEOUT = 60.0

Findings = Dict[str, List[Tuple[int, int, str]]]


def ask(filename: str, lines: Sequence[str], settings: Settings) -> Optional[Findings]:
    """The server's findings for one file (its notes written to stderr), or None when no server
    answered; then a server is started for the next request where none is running."""
    path = socket_path()
    if path is None:
        return None
    request = {
        "cwd": os.getcwd(),
        "filename": filename,
        "lines": list(lines),
        "settings": {
            "target_gpu": settings.target_gpu,
            "gpu_memory": settings.gpu_memory,
            "selected": sorted(settings.selected) if settings.selected is not None else None,
        },
    }
    try:
        answer = _exchange(path, request)
    except (OSError, ValueError):
        _start(path)
        return None
    if not isinstance(answer, dict) or answer.get("version") != __version__:
        return None
    sys.stderr.write(answer.get("stderr", ""))
    return {code: [(int(a), int(b), str(c)) for a, b, c in found] for code, found in answer["findings"].items()}


def _exchange(path: str, request: Dict[str, Any]) -> Any:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(CONNECT_TIMEOUT)
        conn.connect(path)
        conn.settimeout(ANSWER_TIMEOUT)
        conn.sendall(json.dumps(request).encode("utf-8"))
        conn.shutdown(socket.SHUT_WR)
        return json.loads(_read_all(conn).decode("utf-8"))


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def socket_path() -> Optional[str]:
    """Where this installation's server listens; None where servers are not possible or the
    folder is not the user's own."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return None
    try:
        import fcntl  # noqa: F401  (the server's lock; POSIX only)
    except ImportError:
        return None
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = os.path.join(base, "flake8-torch-preflight-{}".format(os.getuid()))
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
    except OSError:
        return None
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # someone else's folder, or one others can enter: never trust its socket
    path = os.path.join(folder, "{}.sock".format(installation_key()))
    return path if len(os.fsencode(path)) < MAX_SOCKET_PATH else None


#: Bytes a socket's path may hold (``sun_path`` is 108 bytes on Linux, 104 on macOS and BSD).
MAX_SOCKET_PATH = 104


@functools.lru_cache(maxsize=None)
def installation_key() -> str:
    """A name for this installation: the plugin's version, the interpreter, and the size and
    modification time of each file of the package (an edited or upgraded plugin gets a new
    server).  Read once per process."""
    digest = hashlib.sha1(repr((__version__, sys.executable, sys.version)).encode("utf-8"))
    root = os.path.dirname(os.path.abspath(__file__))
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".pyi", ".json")):
                info = os.stat(os.path.join(folder, name))
                digest.update("{}:{}:{}".format(os.path.relpath(os.path.join(folder, name), root), info.st_size,
                                                info.st_mtime_ns).encode("utf-8"))
    return digest.hexdigest()[:16]


def _start(path: str) -> None:
    """Start a detached server for ``path``; it exits at once when another one already holds it."""
    try:
        subprocess.Popen(
            [sys.executable, "-m", "flake8_torch_preflight.server", path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=True, start_new_session=True, cwd=os.path.dirname(path),
        )
    except OSError:
        pass


def stop(path: str) -> bool:
    """Stop the server that holds ``path`` (its process id is in the lock beside the socket);
    whether there was one."""
    try:
        with open(path + ".lock") as lock:
            pid = int(lock.read().strip() or 0)
        if pid:
            os.kill(pid, signal.SIGTERM)
            return True
    except (OSError, ValueError):
        pass
    return False


def serve(path: str, idle: float = IDLE_SECONDS) -> int:
    """Answer requests on ``path`` until ``idle`` seconds pass without one.  Only one server holds
    a path (a lock beside the socket); a second one exits at once with status 0."""
    import fcntl

    lock = open(path + ".lock", "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return 0
    lock.truncate(0)
    lock.write(str(os.getpid()))  # which process holds the socket, for whoever needs to stop it
    lock.flush()
    signal.signal(signal.SIGTERM, _leave)  # ``stop``: remove the socket on the way out
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a socket left by a server that died; the lock says none is running
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(16)  # a request that comes while the server warms up waits for it
        from . import engine

        engine.warm_up()
        listener.settimeout(idle)
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                return 0
            with conn:
                conn.settimeout(ANSWER_TIMEOUT)
                with contextlib.suppress(OSError, ValueError):
                    conn.sendall(json.dumps(answer(json.loads(_read_all(conn).decode("utf-8")))).encode("utf-8"))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        listener.close()
        lock.close()


def _leave(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def answer(request: Dict[str, Any]) -> Dict[str, Any]:
    """The engine's findings for one request, with what it wrote to stderr."""
    from . import engine

    given = request["settings"]
    settings = Settings(
        target_gpu=given["target_gpu"],
        gpu_memory=given["gpu_memory"],
        selected=frozenset(given["selected"]) if given["selected"] is not None else None,
    )
    notes = io.StringIO()
    here = os.getcwd()
    try:
        os.chdir(request["cwd"])  # the file and its sibling modules are found as the client finds them
        with contextlib.redirect_stderr(notes):
            engine.forget_project()  # the tree may have changed since the last request
            found = engine.analyse_file(request["filename"], request["lines"], settings)
    finally:
        os.chdir(here)
    return {"version": __version__, "findings": found, "stderr": notes.getvalue()}


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else IDLE_SECONDS))
