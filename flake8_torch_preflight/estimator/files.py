"""Reading the files the estimator is given (a script, a recipe, a model config) safely.

``read_bytes(path)`` refuses what is not a regular file (checked with ``os.stat`` before opening:
opening a FIFO blocks until a writer comes, a device may never end) and files over
``MAX_FILE_BYTES``, and never reads more than that. Refusals are ``RunSpecError`` (one line);
``OSError`` when the file cannot be opened. ``read_json`` (``parse_json`` for text in hand) is
the one JSON reader of the estimator: a model's config.json, a DeepSpeed config, a JSON recipe.
"""
from __future__ import annotations

import json
import os
import stat
from typing import Any, Type

from .run import RunSpecError

#: The largest file the estimator reads. Training scripts are tens of kilobytes; building the
#: astroid tree costs a couple of hundred times a file's size in memory (a 20 MB file took 4.7 GB).
MAX_FILE_BYTES = 1024 * 1024
MAX_FILE_TEXT = "1 MiB"


def check_file(mode: int, size: int, what: str = "script") -> None:
    """``RunSpecError`` for a folder, a FIFO, a device, a socket, or a file over the bound."""
    if stat.S_ISDIR(mode):
        raise RunSpecError(f"is a directory, not a {what}")
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a file")
        raise RunSpecError(f"is not a regular file ({kind}); give a {what} file")
    if size > MAX_FILE_BYTES:
        raise RunSpecError(f"is {size:,} bytes, over the {MAX_FILE_TEXT} a {what} may have")


def read_bytes(path: str, what: str = "script") -> bytes:
    """At most ``MAX_FILE_BYTES`` of a regular file (see the module docstring)."""
    info = os.stat(path)
    check_file(info.st_mode, info.st_size, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as handle:
        opened = os.fstat(handle.fileno())  # the file opened is the one that was checked
        check_file(opened.st_mode, opened.st_size, what)
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew, or its size was not known (/proc)
        raise RunSpecError(f"is over the {MAX_FILE_TEXT} a {what} may have")
    return data


def read_text(path: str, what: str) -> str:
    """A data file (JSON, YAML) as text: UTF-8, a BOM allowed, newlines normalised."""
    data = read_bytes(path, what)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise RunSpecError(f"cannot decode as UTF-8: {' '.join(str(err).split())}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_json(text: str, error: Type[RunSpecError] = RunSpecError) -> Any:
    """JSON text parsed; ``error`` (one line, with the line of the fault) when it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"not valid JSON: {err.msg} (line {err.lineno})") from None
    except (ValueError, RecursionError) as err:  # an integer too long to convert, nesting too deep
        raise error(f"not valid JSON: {type(err).__name__}") from None


def read_json(path: str, what: str) -> Any:
    """A JSON data file (``read_text``), parsed (``parse_json``)."""
    return parse_json(read_text(path, what))
