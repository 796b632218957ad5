"""flake8 options of the plugin, registered once and parsed into ``settings.SETTINGS``."""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from typing import Any, FrozenSet, Iterable, Optional

from .settings import CODES, SETTINGS

TARGET_GPU = "--tp-target-gpu"
GPU_MEMORY = "--tp-gpu-memory"
SERVER = "--tp-server"


def add_options(option_manager: Any) -> None:
    """Register the plugin's options, once per option manager."""
    parser = getattr(option_manager, "parser", None)
    existing = {getattr(o, "long_option_name", None) for o in getattr(option_manager, "options", ())}
    if TARGET_GPU in existing or (parser is not None and TARGET_GPU in getattr(parser, "_option_string_actions", {})):
        return
    option_manager.add_option(
        TARGET_GPU,
        default=None,
        parse_from_config=True,
        metavar="NAME",
        help="GPU or cloud instance the training run must fit (a100-80gb, t4, 8xh100-80gb, p4d.24xlarge); "
        "turns on TPV001. List names with: python -m flake8_torch_preflight gpus",
    )
    option_manager.add_option(
        GPU_MEMORY,
        default=None,
        parse_from_config=True,
        metavar="SIZE",
        help="Explicit per-GPU capacity for unlisted hardware, e.g. 48GiB (turns on TPV001).",
    )
    option_manager.add_option(
        SERVER,
        default=False,
        action="store_true",
        parse_from_config=True,
        help="For editors: when flake8 checks a single file, have a background process that keeps the "
        "analysis warm read it (started on first use, gone after 15 idle minutes; POSIX only).",
    )


def parse_options(options: argparse.Namespace) -> None:
    """Store the options; a bad GPU name or size is one line on stderr and exit status 2."""
    target = _clean(getattr(options, "tp_target_gpu", None))
    memory = _clean(getattr(options, "tp_gpu_memory", None))
    try:
        from .estimator import catalogue

        if memory is not None:
            catalogue.parse_size(memory)
        if target is not None:
            catalogue.find_gpu(target)
    except ValueError as exc:  # catalogue.CatalogueError is a ValueError
        flag = GPU_MEMORY if memory is not None and "size" in str(exc).lower() else TARGET_GPU
        text = str(exc).replace("--gpu-memory", GPU_MEMORY)
        sys.stderr.write("flake8: {}: {}\n".format(flag, text))
        raise SystemExit(2) from None
    SETTINGS.target_gpu = target
    SETTINGS.gpu_memory = memory
    SETTINGS.selected = _selected_codes(options)
    SETTINGS.server = bool(getattr(options, "tp_server", False)) and _one_file(getattr(options, "filenames", None))
    if target is None and memory is None and _asked_for_tpv(options, SETTINGS.selected):
        _hint_target()


#: Printed once per flake8 run when TPV001 is asked for by name but has no GPU to check against.
NO_TARGET_HINT = (
    "flake8-torch-preflight: TPV001 is selected but has no target GPU, so it reports nothing; set one with "
    "--tp-target-gpu NAME (or --tp-gpu-memory SIZE), or tp-target-gpu = NAME in the [flake8] section of "
    "setup.cfg, tox.ini or .flake8 (names: python -m flake8_torch_preflight gpus)"
)


def _asked_for_tpv(options: argparse.Namespace, selected: Optional[FrozenSet[str]]) -> bool:
    """Whether ``--select`` / ``--extend-select`` (command line or configuration) names TPV001 or
    a prefix of it at least as specific as ``TPV``, and TPV001 is not then ignored. A broad
    ``--select TP`` (every code) or flake8's defaults do not count: the hint is for someone who
    asked for the projection."""
    if selected is not None and "TPV001" not in selected:
        return False
    for name in ("select", "extend_select"):
        for code in getattr(options, name, None) or ():
            text = str(code).strip().upper()
            if text.startswith("TPV") and "TPV001".startswith(text):
                return True
    return False


def _hint_target() -> None:
    """One line on stderr, once per run: flake8 calls ``parse_options`` once in the main process
    (and again in each worker only where workers are spawned, not forked: those stay quiet)."""
    if multiprocessing.parent_process() is not None:
        return
    sys.stderr.write(NO_TARGET_HINT + "\n")


def _one_file(filenames: Any) -> bool:
    """Whether flake8 checks exactly one file (or stdin, ``-``): an editor's save."""
    names = list(filenames or ())
    return len(names) == 1 and (names[0] == "-" or os.path.isfile(names[0]))


def _clean(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _selected_codes(options: argparse.Namespace) -> Optional[FrozenSet[str]]:
    """Codes flake8 will report, so unselected rules skip their work (None = unknown, run all)."""
    try:
        from flake8.style_guide import Decision, DecisionEngine

        engine = DecisionEngine(options)
        return frozenset(code for code in CODES if engine.decision_for(code) is Decision.Selected)
    except Exception:  # flake8 internals moved: do the work for every code
        return None


def codes(rules: Iterable[Any]) -> FrozenSet[str]:
    return frozenset(r.code for r in rules)
