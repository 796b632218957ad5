"""The command line (INTERFACE.md): ``estimate``, ``gpus``, ``models`` and ``explain``.

``python -m flake8_torch_preflight estimate [SCRIPT] [overrides] [--format {text,json}]``;
the command name may be left out (``python -m flake8_torch_preflight --model gpt2 ...``), and
``tp-estimate`` is the ``estimate`` command alone. Run bare, ``python -m flake8_torch_preflight``
lists the commands. Exit status: 0 fits or no GPU given (or the fit cannot be told), 1 projected
not to fit, 2 bad input. Every bad input, and any failure, is one line on stderr starting with
the command's name (``estimate: ``), never a traceback.

Without ``--gpu`` or ``--gpu-memory`` the target comes from ``tp-target-gpu`` /
``tp-gpu-memory`` in the ``[flake8]`` section of the configuration file flake8 itself would read
(``setup.cfg``, ``tox.ini`` or ``.flake8``, found from the current directory upward), so the
estimator and TPV001 check against the same GPU.
"""
from __future__ import annotations

import argparse
import configparser
import importlib
import json
import os
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import IO, Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple

from .. import __version__, options
from .catalogue import (
    CatalogueError,
    GpuTarget,
    find_gpu,
    find_model,
    gpu_from_memory,
    model_from_config,
    list_gpus,
    list_instances,
    list_models,
)
from .costmodel import estimate, lora_params
from .report import gib, render_text, to_json
from .files import read_json
from .run import (
    COMMAND_LINE,
    DEFAULT,
    DEFAULT_LORA_RANK,
    IMAGE_KINDS,
    LIMITS,
    LORA_DTYPES,
    OPTIMIZERS,
    PRECISIONS,
    QUANTIZATIONS,
    SHARDINGS,
    TASK_KINDS,
    TASKS,
    VOCABULARY_TASKS,
    RunSpec,
    RunSpecError,
    limit_words,
    lora_dropout_error,
    parse_lora_targets,
    shown_value,
    task_of_class,
    within_limits,
)
from .solver import solve

PROG = "python -m flake8_torch_preflight"
ESTIMATE_PROG = "tp-estimate"

#: The commands and their one-line descriptions (the bare command prints them).
COMMANDS: Tuple[Tuple[str, str], ...] = (
    ("estimate", "project a training run's peak GPU memory, from a script or flags (also: tp-estimate)"),
    ("gpus", "list the known GPUs and cloud instances"),
    ("models", "list the model catalogue"),
    ("explain", "print a code's full explanation: explain TP001"),
)
_COMMAND_NAMES = tuple(name for name, _ in COMMANDS)
_COUNT_SUFFIXES = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}

#: The flake8 options (``[flake8]`` keys, flake8 also accepts underscores) that name the target.
TARGET_OPTION = options.TARGET_GPU.lstrip("-")
MEMORY_OPTION = options.GPU_MEMORY.lstrip("-")

#: The files flake8 looks for in each directory, in its order.
FLAKE8_CONFIG_FILES = ("setup.cfg", "tox.ini", ".flake8")

_EXTRACT = "flake8_torch_preflight.estimator.extract"
_RECIPE = "flake8_torch_preflight.estimator.recipe"

#: SCRIPT suffixes read as a training recipe (``estimator.recipe``) rather than Python.
RECIPE_SUFFIXES = (".yaml", ".yml", ".json")


class _Exit(Exception):
    def __init__(self, status: int, message: Optional[str] = None) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so every error is one line and status 2."""

    def error(self, message: str) -> NoReturn:
        raise _Exit(2, message)

    def exit(self, status: int = 0, message: Optional[str] = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


# ------------------------------------------------------------------------------ numbers


def _bounded(name: str) -> Callable[[str], int]:
    """The argparse type of an integer option whose range is ``run.LIMITS[name]``."""

    def parse(text: str) -> int:
        raw = text.strip()
        try:
            value: Optional[int] = int(raw, 10) if len(raw) <= 100 else None
        except ValueError:
            value = None
        if value is None or not within_limits(name, value):
            raise argparse.ArgumentTypeError(f"must be {limit_words(name)}, got {shown_value(text)}")
        return value

    parse.__name__ = name  # argparse names the type in some messages
    return parse


def _count(text: str) -> int:
    """A parameter count: ``124439808``, ``7b``, ``1.3B``, ``350M``, ``7e9``."""
    high = LIMITS["params"][1]
    raw = text.strip().lower().replace("_", "").replace(",", "")
    scale = 1
    if raw and raw[-1] in _COUNT_SUFFIXES:
        raw, scale = raw[:-1], _COUNT_SUFFIXES[raw[-1]]
    value = 0
    try:
        number = Decimal(raw) if 0 < len(raw) <= 100 else Decimal(0)
        if number.is_finite() and number <= Decimal(high) / scale:
            value = int(number * scale)
    except ArithmeticError:  # decimal.InvalidOperation and the like: not a number
        value = 0
    if not 1 <= value <= high:
        raise argparse.ArgumentTypeError(f"must be a parameter count from 1 to {high:,} such as 124439808 or 7b, "
                                         f"got {shown_value(text)}")
    return value


@dataclass(frozen=True)
class _Targets:
    """``--lora-targets``: the names, or ``None`` for every linear layer (``all-linear``)."""

    names: Optional[Tuple[str, ...]]


def _lora_dropout(text: str) -> float:
    """``--lora-dropout P``: a probability at least 0 and below 1."""
    raw = text.strip()
    try:
        value = float(raw) if len(raw) <= 100 else -1.0
    except ValueError:
        value = -1.0
    error = lora_dropout_error(value if value == value else -1.0)  # NaN is no probability
    if error is not None:
        raise argparse.ArgumentTypeError(f"must be a probability at least 0 and below 1, got {shown_value(text)}")
    return value


def _lora_targets(text: str) -> _Targets:
    try:
        return _Targets(parse_lora_targets(text))
    except RunSpecError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


# ------------------------------------------------------------------------------ parsers


def _add_estimate_arguments(est: argparse.ArgumentParser) -> None:
    est.add_argument("--version", action="version", version=f"flake8-torch-preflight {__version__}")
    est.add_argument("script", nargs="?", metavar="SCRIPT", help="training script to read the run from")
    est.add_argument("--model", metavar="NAME",
                     help="catalogue name or Hugging Face id (gpt2, meta-llama/Llama-2-7b-hf)")
    est.add_argument("--params", type=_count, metavar="N", help="parameter count, for models outside the catalogue")
    est.add_argument("--gpu", metavar="NAME",
                     help="GPU or cloud instance (t4, a100-80gb, 8xh100-80gb, p4d.24xlarge); without it and "
                          "--gpu-memory, tp-target-gpu / tp-gpu-memory of the flake8 configuration")
    est.add_argument("--gpu-memory", metavar="SIZE", help="explicit capacity for unlisted hardware, e.g. 48GiB")
    est.add_argument("--batch-size", type=_bounded("batch_size"), metavar="N", help="micro-batch size per device")
    est.add_argument("--seq-len", type=_bounded("seq_len"), metavar="N",
                     help="sequence length (prompt length when generating)")
    est.add_argument("--image-size", type=_bounded("image_size"), metavar="N",
                     help="image side in pixels (image models)")
    est.add_argument("--precision", choices=PRECISIONS,
                     help="amp = autocast with fp32 weights; fp16/bf16 = half weights")
    est.add_argument("--optimizer", choices=OPTIMIZERS)
    est.add_argument("--checkpointing", action=argparse.BooleanOptionalAction, default=None,
                     help="gradient (activation) checkpointing")
    est.add_argument("--flash", action=argparse.BooleanOptionalAction, default=None,
                     help="fused flash/SDPA attention")
    est.add_argument("--inference", action=argparse.BooleanOptionalAction, default=None,
                     help="forward passes under no_grad only")
    est.add_argument("--generate", dest="generation", action=argparse.BooleanOptionalAction, default=None,
                     help="autoregressive generation with a KV cache")
    est.add_argument("--max-new-tokens", type=_bounded("max_new_tokens"), metavar="N",
                     help="tokens generated per sequence")
    est.add_argument("--grad-accum", dest="grad_accum_steps", type=_bounded("grad_accum_steps"), metavar="N",
                     help="gradient accumulation steps")
    est.add_argument("--world-size", type=_bounded("world_size"), metavar="N",
                     help="number of data-parallel processes")
    est.add_argument("--sharding", choices=SHARDINGS)
    est.add_argument("--offload-optimizer", action=argparse.BooleanOptionalAction, default=None,
                     help="optimizer state (and master weights) in host memory")
    est.add_argument("--fused-optimizer", action=argparse.BooleanOptionalAction, default=None,
                     help="single-kernel optimizer step (fused=True), no foreach temporaries")
    est.add_argument("--lora", type=_bounded("lora_rank"), nargs="?", const=DEFAULT_LORA_RANK, metavar="RANK",
                     help=f"LoRA adapters on every linear layer (rank {DEFAULT_LORA_RANK} when not given)")
    est.add_argument("--lora-targets", type=_lora_targets, metavar="NAMES",
                     help="comma-separated module names the LoRA adapters wrap (q_proj,v_proj); default every "
                          "linear layer; implies --lora")
    est.add_argument("--lora-dtype", choices=LORA_DTYPES,
                     help="the LoRA adapters' dtype: fp32 (PEFT's default: fp32 adapters and fp32 casts of "
                          "their inputs) or model (the base weights' dtype, no casts: litgpt, PEFT with "
                          "autocast_adapter_dtype=False)")
    est.add_argument("--lora-dropout", type=_lora_dropout, metavar="P",
                     help="dropout probability on the LoRA adapters' input (PEFT's LoraConfig.lora_dropout, "
                          "default 0.0; litgpt's lora_dropout): above 0 each adapted layer keeps the dropout's "
                          "output and mask")
    est.add_argument("--task", choices=TASKS,
                     help="the head the model carries: an LM head (causal-lm, seq2seq), an encoder's masked-LM "
                          "head (masked-lm), a classifier (seq-cls, token-cls, image-cls) or none (backbone)")
    est.add_argument("--quantization", choices=QUANTIZATIONS,
                     help="frozen base weights stored quantized: bitsandbytes int8 (LLM.int8()) or 4-bit "
                          "nf4/fp4 (QLoRA); train LoRA adapters or --trainable-params on top")
    est.add_argument("--trainable-params", type=_count, metavar="N",
                     help="only N parameters train (adapters, prefix tuning, a frozen backbone): gradients "
                          "and optimizer state for N only")
    est.add_argument("--model-config", metavar="FILE",
                     help="a Hugging Face config.json for a model outside the catalogue")
    est.add_argument("--format", choices=("text", "json"), default="text")


_ESTIMATE_DESCRIPTION = "Project the peak GPU memory of a run, per device."


def _build_parser() -> _Parser:
    parser = _Parser(prog=PROG, description="flake8-torch-preflight's command line: the VRAM estimator, "
                                            "its catalogues, and the long form of each code.")
    parser.add_argument("--version", action="version", version=f"flake8-torch-preflight {__version__}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    helps = dict(COMMANDS)
    est = commands.add_parser("estimate", help=helps["estimate"], description=_ESTIMATE_DESCRIPTION)
    _add_estimate_arguments(est)
    for name in ("gpus", "models"):
        listing = commands.add_parser(name, help=helps[name], description=helps[name])
        listing.add_argument("--format", choices=("text", "json"), default="text")
    explain = commands.add_parser("explain", help=helps["explain"],
                                  description="Print a code's full explanation: what it catches, why it costs, "
                                              "a bad and a good example, what it leaves alone, how to silence it.")
    explain.add_argument("code", metavar="CODE", help="a code such as TP001 or TPV001")
    return parser


def _build_estimate_parser() -> _Parser:
    """``tp-estimate``: the ``estimate`` command under its own name."""
    parser = _Parser(prog=ESTIMATE_PROG, description=_ESTIMATE_DESCRIPTION)
    _add_estimate_arguments(parser)
    parser.set_defaults(command="estimate")
    return parser


def overview() -> str:
    """What the bare command prints: the commands, one line each."""
    width = max(len(name) for name in _COMMAND_NAMES)
    lines = [f"usage: {PROG} COMMAND [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS]
    lines += ["", f"{PROG} COMMAND --help shows a command's options; --version prints the version."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ helpers


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


def _fail(message: str) -> NoReturn:
    raise _Exit(2, message)


def _write(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        plain = text.replace("█", "#").replace("–", "-").replace("≥ ", ">= ")
        stream.write(plain.encode(encoding, "replace").decode(encoding))


# ------------------------------------------------------------------------------ the script


def _read_script(path: str) -> Tuple[RunSpec, Dict[str, str]]:
    """The run SCRIPT describes (a training recipe for a ``.yaml``/``.yml``/``.json`` file), read
    under the linter's per-file CPU budget, and what it could not read (field -> what held it)."""
    recipe = path.lower().endswith(RECIPE_SUFFIXES)
    reader = importlib.import_module(_RECIPE if recipe else _EXTRACT)
    from ..analysis.semantic.walker import BudgetExceeded
    from ..engine import FileBudget

    budget = FileBudget()

    def too_slow() -> str:
        return (f"{path}: reading the run {budget.exceeded()} (the linter's per-file budget) "
                "and was stopped; give the run as flags instead")

    try:
        with budget:
            reading = reader.read_reading(path)
    except BudgetExceeded:
        _fail(too_slow())
    except (CatalogueError, RunSpecError) as err:
        if getattr(err, "whole_line", False):  # says all there is to say, not about this file
            _fail(str(err))
        _fail(f"{path}: {err}")
    except OSError as err:
        _fail(f"cannot read {path}: {err.strerror or err}")
    except Exception as err:  # the script reader must never print a traceback
        if budget.past_deadline():  # the budget's signal arrived inside C code
            _fail(too_slow())
        _fail(f"cannot read {path}: {type(err).__name__}: {err}")
    if isinstance(reading, tuple):  # the recipe reader: (run, unread)
        run, unread = reading
    else:
        run, unread = getattr(reading, "run", reading), dict(getattr(reading, "unread", {}))
    if not isinstance(run, RunSpec):
        _fail(f"cannot read {path}: the reader returned {type(run).__name__}, not a RunSpec")
    return run, dict(unread)


_OVERRIDES = (
    "batch_size",
    "seq_len",
    "image_size",
    "precision",
    "optimizer",
    "checkpointing",
    "flash",
    "inference",
    "generation",
    "max_new_tokens",
    "grad_accum_steps",
    "world_size",
    "sharding",
    "offload_optimizer",
    "fused_optimizer",
)


def build_run(args: argparse.Namespace) -> RunSpec:
    """The run from SCRIPT (if any) with the command line's overrides applied on top."""
    return read_and_override(args)[0]


def read_and_override(args: argparse.Namespace) -> Tuple[RunSpec, Dict[str, str]]:
    """The run from SCRIPT (if any) with the command line's overrides applied on top, and what
    SCRIPT left unread that no override gave (field -> what held it)."""
    if args.model is not None and args.model_config is not None:
        _fail("give --model or --model-config, not both")
    run, unread = _read_script(args.script) if args.script else (RunSpec(), {})
    changes: Dict[str, Any] = {}
    model = None
    config: Any = None
    if args.model is not None:
        model = find_model(args.model)
    elif args.model_config is not None:
        model, config = _model_config(args.model_config)
    if model is not None:
        changes["model"] = model
        if args.params is None and (run.params is not None or run.model_label is not None):
            # the script's parameter count and label belong to the model it built, not this one
            dropped = {k: v for k, v in run.sources.items() if k not in ("params", "model_label")}
            run = run.replace(params=None, model_label=None, sources=dropped)
        if run.task is not None and model.kind not in TASK_KINDS[run.task]:
            # the script's head belongs to its model: this one gets its own (or --task)
            dropped = {k: v for k, v in run.sources.items() if k not in ("task", "lm_head")}
            run = run.replace(task=None, lm_head=None, sources=dropped)
    if args.params is not None:
        changes["params"] = args.params
    for name in _OVERRIDES:
        value = getattr(args, name)
        if value is not None:
            changes[name] = value
    if args.lora is not None:
        changes["lora"], changes["lora_rank"] = True, args.lora
    if args.lora_targets is not None:
        changes["lora_targets"] = args.lora_targets.names
        if args.lora is None and not run.lora:
            changes["lora"], changes["lora_rank"] = True, DEFAULT_LORA_RANK
    if args.lora_dtype is not None:
        changes["lora_dtype"] = args.lora_dtype
    if args.lora_dropout is not None:
        changes["lora_dropout"] = args.lora_dropout
    if args.task is not None:
        changes["task"], changes["lm_head"] = args.task, args.task in VOCABULARY_TASKS
    if args.quantization is not None:
        changes["quantization"] = args.quantization
    if args.trainable_params is not None:
        changes["trainable_params"] = args.trainable_params
    if args.max_new_tokens is not None and args.generation is None:
        changes["generation"] = True  # a number of new tokens means generating
    if changes:
        run = run.replace(source=COMMAND_LINE, **changes)
    if config is not None and args.task is None:
        run = _config_task(run, config, args.model_config)
    sources = dict(run.sources)
    for name in ("precision", "optimizer"):
        sources.setdefault(name, DEFAULT)
    given = set(changes) | ({"model"} if run.model is not None or run.params is not None else set())
    unread = {name: what for name, what in unread.items() if name not in given and name not in sources}
    run = run.replace(sources=sources).with_native_image_size()
    if args.script:
        for name in _missing_sizes(run):
            unread.setdefault(name, f"not stated in {os.path.basename(args.script)}")
    return run, unread


def _missing_sizes(run: RunSpec) -> List[str]:
    """The size fields the run needs and has no value for: the micro-batch of a training run, the
    sequence length of a text model, the image size of an image model, the world size of a
    sharded run."""
    missing = []
    if run.batch_size is None and run.training:
        missing.append("batch_size")
    kind = run.model.kind if run.model is not None else None
    if kind is not None and kind not in IMAGE_KINDS and run.seq_len is None:
        missing.append("seq_len")
    if kind in IMAGE_KINDS and run.image_size is None:
        missing.append("image_size")
    if run.sharding not in ("none", "ddp") and "world_size" not in run.sources:
        missing.append("world_size")  # the shards' size depends on it
    return missing


def _model_config(path: str) -> Tuple[Any, Any]:
    """The ``ModelSpec`` of a Hugging Face ``config.json`` (``--model-config``) and the parsed
    config: read like SCRIPT (a regular file of at most 1 MiB), parsed as JSON, every failure one
    line."""
    try:
        config = read_json(path, "model config")
    except RunSpecError as err:
        _fail(f"{path}: {err}")
    except OSError as err:
        _fail(f"cannot read {path}: {err.strerror or err}")
    try:
        return model_from_config(config, path), config
    except CatalogueError as err:
        _fail(f"{path}: {err}")


def _config_task(run: RunSpec, config: Any, path: str) -> RunSpec:
    """The task the config's ``architectures`` names (``BertForMaskedLM``: masked-lm), when the
    script or the command line did not give one."""
    if run.task is not None or run.model is None:
        return run
    classes = config.get("architectures") if isinstance(config, dict) else None
    if not isinstance(classes, list) or not classes or not isinstance(classes[0], str):
        return run
    task = task_of_class(classes[0], run.model.kind)
    if task is None:
        return run
    return run.replace(source=f"{os.path.basename(path)} architectures", task=task,
                       lm_head=task in VOCABULARY_TASKS)


# ------------------------------------------------------------------------------ the target


def find_flake8_config(start: str) -> Optional[str]:
    """The configuration file flake8 reads when run in ``start``: from ``start`` upward (stopping
    below the home directory), the first ``setup.cfg``, ``tox.ini`` or ``.flake8`` that has a
    ``[flake8]`` (or ``[flake8:local-plugins]``) section; None when there is none.

    flake8 has no public function for this; its own (``flake8.options.config._find_config_file``,
    flake8 5 to 7) is used when present, else ``_find_config_file`` below, the same rule."""
    finder = None
    try:
        from flake8.options import config as flake8_config

        finder = getattr(flake8_config, "_find_config_file", None)
    except ImportError:  # pragma: no cover - flake8 is a dependency
        finder = None
    if callable(finder):
        try:
            found = finder(start)
        except Exception:  # its signature or behaviour changed: use the same rule here
            found = _find_config_file(start)
        return None if found is None else str(found)
    return _find_config_file(start)


def _find_config_file(path: str) -> Optional[str]:
    """flake8's discovery rule (``flake8.options.config._find_config_file`` of flake8 5 to 7)."""

    def key(folder: str) -> Tuple[int, int]:
        info = os.stat(folder)
        return info.st_ino, info.st_dev

    home = os.path.expanduser("~")
    try:
        home_key: Optional[Tuple[int, int]] = key(home) if home != "~" else None
    except OSError:
        home_key = None
    folder_key = key(path)
    while True:
        for candidate in FLAKE8_CONFIG_FILES:
            parser = configparser.RawConfigParser()
            config_path = os.path.join(path, candidate)
            try:
                parser.read(config_path, encoding="UTF-8")
            except (UnicodeDecodeError, configparser.ParsingError):
                continue  # flake8 ignores an unparseable file (with a warning) and goes on
            if "flake8" in parser or "flake8:local-plugins" in parser:
                return config_path
        parent = os.path.dirname(path)
        parent_key = key(parent)
        if parent_key == folder_key or parent_key == home_key:
            return None
        path, folder_key = parent, parent_key


def _display_path(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative.split(os.sep)[:3] == [os.pardir] * 3 else relative  # far up: the whole path


def configured_target(start: Optional[str] = None) -> Tuple[Optional[GpuTarget], Optional[str]]:
    """The target ``tp-gpu-memory`` or ``tp-target-gpu`` name in flake8's configuration, and
    where (``setup.cfg [flake8] tp-target-gpu``); ``(None, None)`` when neither is set. Both set:
    ``tp-gpu-memory`` wins, as it does for TPV001. A value that names no GPU, or no size, is bad
    input (exit status 2)."""
    path = find_flake8_config(os.path.abspath(start or os.curdir))
    if path is None:
        return None, None
    shown = _display_path(path)
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="UTF-8")
    except (OSError, UnicodeDecodeError, configparser.Error) as err:
        _fail(f"cannot read {shown}: {err}")
    if not parser.has_section("flake8"):
        return None, None
    values: Dict[str, Tuple[str, str]] = {}
    for key, value in parser.items("flake8"):  # file order; a later spelling wins, as in flake8
        normal = key.replace("_", "-")
        if normal in (TARGET_OPTION, MEMORY_OPTION):
            values[normal] = (key, " ".join(str(value).split()))
    for option, resolve in ((MEMORY_OPTION, gpu_from_memory), (TARGET_OPTION, find_gpu)):
        spelling, text = values.get(option, ("", ""))
        if not text:
            continue  # unset or empty, as flake8's option is then
        where = f"{shown} [flake8] {spelling}"
        try:
            return resolve(text), where
        except CatalogueError as err:
            _fail(f"{where}: {err}")
    return None, None


def _target(args: argparse.Namespace) -> Tuple[Optional[GpuTarget], Optional[str]]:
    """The target GPU and, when it comes from flake8's configuration, where."""
    if args.gpu is not None and args.gpu_memory is not None:
        _fail("give --gpu or --gpu-memory, not both")
    if args.gpu is not None:
        return find_gpu(args.gpu), None
    if args.gpu_memory is not None:
        return gpu_from_memory(args.gpu_memory), None
    return configured_target()


# ------------------------------------------------------------------------------ commands


def _estimate(args: argparse.Namespace) -> int:
    run, unread = read_and_override(args)
    gpu, origin = _target(args)
    if run.model is None and run.params is None and not args.script:
        _fail("no model: give --model NAME (a catalogue name or Hugging Face id) or --params N")
    if run.sharding != "none" and "world_size" not in run.sources and gpu is not None and gpu.count > 1:
        run = run.replace(source=f"{gpu.key} GPU count", world_size=gpu.count)
    run.check()
    if run.lora and run.lora_targets is not None and run.trainable_params is None and lora_params(run) == 0:
        kind = run.model.kind if run.model is not None else "model"
        article = "an" if kind[0] in "aeiou" else "a"
        _fail(f"the LoRA targets {','.join(run.lora_targets)} name no linear layer of {run.display_name} "
              f"({article} {kind}{_mlp_words(run)})")
    result = estimate(run, gpu)
    solution = solve(result)
    if args.format == "json":
        payload = to_json(result, solution, unread)
        if origin is not None:
            payload["config"]["sources"]["gpu"] = origin
        text = json.dumps(payload, indent=2) + "\n"
    else:
        text = render_text(result, solution, unread)
        if origin is not None and gpu is not None:
            body = text.rstrip("\n")
            gap = "\n" if body.rsplit("\n", 1)[-1].startswith("note: ") else "\n\n"
            text = f"{body}{gap}note: GPU {gpu.key} from {origin} (--gpu or --gpu-memory overrides it)\n"
    _write(sys.stdout, text)
    return 1 if result.fits is False else 0


def _mlp_words(run: RunSpec) -> str:
    shape = run.model.shape if run.model is not None else {}
    if run.lora_targets is not None and all(name.lower() == "lm_head" for name in run.lora_targets):
        return ": lm_head is priced on the LM head of a decoder or an encoder-decoder"
    kind = shape.get("ffn_kind")
    return "" if kind in ("swiglu", "geglu") or kind is None else f" whose {kind} MLP has no gate projection"


def _gpus(args: argparse.Namespace) -> int:
    gpus = list_gpus()
    instances = list_instances()
    if args.format == "json":
        payload = {
            "gpus": [_gpu_json(g) for g in gpus],
            "instances": [dict(_gpu_json(t), instance=key, provider=provider) for key, t, provider in instances],
        }
        _write(sys.stdout, json.dumps(payload, indent=2) + "\n")
        return 0
    lines = [f"{'GPU':<20} {'memory':>11} {'usable':>11} {'context':>9}  bf16  name"]
    for g in gpus:
        lines.append(f"{g.key:<20} {gib(g.memory_bytes):>7} GiB {gib(g.usable_bytes):>7} GiB "
                     f"{g.context_bytes // 1024**2:>5} MiB  {'yes' if g.bf16 else 'no':<4}  {g.name}")
    lines.append("")
    lines.append(f"{'instance':<28} {'provider':<9} {'GPUs':>4}  {'GPU':<16} {'usable each':>11}")
    for key, target, provider in instances:
        lines.append(f"{key:<28} {provider:<9} {target.count:>4}  {target.gpu_key or target.key:<16} "
                     f"{gib(target.usable_bytes):>7} GiB")
    lines.append("")
    lines.append("also: <N>x<GPU> for N of one GPU (8xh100-80gb); --gpu-memory SIZE for unlisted hardware (48GiB)")
    _write(sys.stdout, "\n".join(lines) + "\n")
    return 0


def _gpu_json(g: GpuTarget) -> Dict[str, Any]:
    return {
        "key": g.key,
        "name": g.name,
        "count": g.count,
        "memory_bytes": g.memory_bytes,
        "usable_bytes": g.usable_bytes,
        "context_bytes": g.context_bytes,
        "bf16": g.bf16,
        "source": g.source,
    }


def _models(args: argparse.Namespace) -> int:
    models = list_models()
    if args.format == "json":
        payload = [{"key": m.key, "kind": m.kind, "params": m.params, "aliases": list(m.aliases), "source": m.source}
                   for m in models]
        _write(sys.stdout, json.dumps(payload, indent=2) + "\n")
        return 0
    lines = [f"{'model':<28} {'kind':<18} {'params':>16}  aliases"]
    for m in models:
        lines.append(f"{m.key:<28} {m.kind:<18} {m.params:>16,}  {', '.join(m.aliases[:3])}")
    _write(sys.stdout, "\n".join(lines) + "\n")
    return 0


def _explain(args: argparse.Namespace) -> int:
    from ..explain import UnknownCode, render

    code = str(args.code)
    if len(code) > 40:
        _fail(f"unknown code {shown_value(code)}")
    try:
        text = render(code)
    except UnknownCode as err:
        _fail(str(err))
    _write(sys.stdout, text)
    return 0


_HANDLERS: Dict[str, Callable[[argparse.Namespace], int]] = {
    "estimate": _estimate,
    "gpus": _gpus,
    "models": _models,
    "explain": _explain,
}


def _run(parser: _Parser, arguments: List[str], prefix: str) -> int:
    """Parse and dispatch; every failure is one line on stderr starting with ``prefix: ``."""
    try:
        args = parser.parse_args(arguments)
        return _HANDLERS[args.command or "estimate"](args)
    except _Exit as done:
        if done.message:
            sys.stderr.write(f"{prefix}: {_one_line(done.message)}\n")
        return done.status
    except (CatalogueError, RunSpecError) as err:
        sys.stderr.write(f"{prefix}: {_one_line(str(err))}\n")
        return 2
    except Exception as err:  # a bug: still one line and status 2, never a traceback
        detail = _one_line(f"{type(err).__name__}: {err}")
        sys.stderr.write(f"{prefix}: internal error, please report it: {detail}"[:500] + "\n")
        return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status (0 fits, 1 does not fit, 2 bad input)."""
    arguments: List[str] = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        _write(sys.stdout, overview())
        return 0
    if arguments[0] not in _COMMAND_NAMES and arguments[0] not in ("-h", "--help", "--version"):
        arguments.insert(0, "estimate")
    prefix = arguments[0] if arguments[0] in _COMMAND_NAMES else "flake8_torch_preflight"
    return _run(_build_parser(), arguments, prefix)


def estimate_main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``tp-estimate`` console script: the ``estimate`` command alone, under its own name."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["estimate"]:
        arguments = arguments[1:]
    return _run(_build_estimate_parser(), arguments, "estimate")
