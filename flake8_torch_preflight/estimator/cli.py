"""The estimator's command line (INTERFACE.md): ``estimate``, ``gpus`` and ``models``.

``python -m flake8_torch_preflight estimate [SCRIPT] [overrides] [--format {text,json}]``;
the command name may be left out (``tp-estimate --model gpt2 ...``). Exit status: 0 fits or no
GPU given (or the fit cannot be told), 1 projected not to fit, 2 bad input. Every bad input is
one line on stderr starting with ``estimate: ``, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from decimal import Decimal, InvalidOperation
from typing import IO, Any, Dict, List, NoReturn, Optional, Sequence

from .. import __version__
from .catalogue import (
    CatalogueError,
    GpuTarget,
    find_gpu,
    find_model,
    gpu_from_memory,
    list_gpus,
    list_instances,
    list_models,
)
from .costmodel import estimate
from .report import gib, render_text, to_json
from .run import COMMAND_LINE, DEFAULT, DEFAULT_LORA_RANK, OPTIMIZERS, PRECISIONS, SHARDINGS, RunSpec, RunSpecError
from .solver import solve

PROG = "estimate"
EXTRACT_MISSING = "reading a script needs flake8_torch_preflight.estimator.extract"
_EXTRACT_MODULE = "flake8_torch_preflight.estimator.extract"
_COMMANDS = ("estimate", "gpus", "models")
_COUNT_SUFFIXES = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


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


def _positive(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _count(text: str) -> int:
    """A parameter count: ``124439808``, ``7b``, ``1.3B``, ``350M``, ``7e9``."""
    raw = text.strip().lower().replace("_", "").replace(",", "")
    scale = 1
    if raw and raw[-1] in _COUNT_SUFFIXES:
        raw, scale = raw[:-1], _COUNT_SUFFIXES[raw[-1]]
    try:
        number = Decimal(raw)
    except InvalidOperation:
        number = Decimal(0)
    value = int(number * scale) if number.is_finite() else 0
    if value <= 0 or not raw:
        raise argparse.ArgumentTypeError(f"must be a positive parameter count such as 124439808 or 7b, got {text!r}")
    return value


def _build_parser() -> _Parser:
    parser = _Parser(prog="python -m flake8_torch_preflight", description="Static VRAM estimate for a PyTorch run.")
    parser.add_argument("--version", action="version", version=f"flake8-torch-preflight {__version__}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    est = commands.add_parser("estimate", help="project the peak GPU memory of a run",
                              description="Project the peak GPU memory of a run, per device.")
    est.add_argument("script", nargs="?", metavar="SCRIPT", help="training script to read the run from")
    est.add_argument("--model", metavar="NAME",
                     help="catalogue name or Hugging Face id (gpt2, meta-llama/Llama-2-7b-hf)")
    est.add_argument("--params", type=_count, metavar="N", help="parameter count, for models outside the catalogue")
    est.add_argument("--gpu", metavar="NAME", help="GPU or cloud instance (t4, a100-80gb, 8xh100-80gb, p4d.24xlarge)")
    est.add_argument("--gpu-memory", metavar="SIZE", help="explicit capacity for unlisted hardware, e.g. 48GiB")
    est.add_argument("--batch-size", type=_positive, metavar="N", help="micro-batch size per device")
    est.add_argument("--seq-len", type=_positive, metavar="N", help="sequence length (prompt length when generating)")
    est.add_argument("--image-size", type=_positive, metavar="N", help="image side in pixels (image models)")
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
    est.add_argument("--max-new-tokens", type=_positive, metavar="N", help="tokens generated per sequence")
    est.add_argument("--grad-accum", dest="grad_accum_steps", type=_positive, metavar="N",
                     help="gradient accumulation steps")
    est.add_argument("--world-size", type=_positive, metavar="N", help="number of data-parallel processes")
    est.add_argument("--sharding", choices=SHARDINGS)
    est.add_argument("--offload-optimizer", action=argparse.BooleanOptionalAction, default=None,
                     help="optimizer state (and master weights) in host memory")
    est.add_argument("--fused-optimizer", action=argparse.BooleanOptionalAction, default=None,
                     help="single-kernel optimizer step (fused=True), no foreach temporaries")
    est.add_argument("--lora", type=_positive, nargs="?", const=DEFAULT_LORA_RANK, metavar="RANK",
                     help=f"LoRA adapters on every linear layer (rank {DEFAULT_LORA_RANK} when not given)")
    est.add_argument("--format", choices=("text", "json"), default="text")
    for name, helptext in (("gpus", "list known GPUs and cloud instances"), ("models", "list known models")):
        listing = commands.add_parser(name, help=helptext, description=helptext)
        listing.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


def _fail(message: str) -> NoReturn:
    raise _Exit(2, message)


def _read_script(path: str) -> RunSpec:
    try:
        extract = importlib.import_module(_EXTRACT_MODULE)  # filled in by a later issue
    except ModuleNotFoundError as err:
        if err.name in (_EXTRACT_MODULE, None):
            _fail(EXTRACT_MISSING)
        raise
    read_run = getattr(extract, "read_run", None)
    if read_run is None:
        _fail(EXTRACT_MISSING)
    try:
        run = read_run(path)
    except (CatalogueError, RunSpecError) as err:
        _fail(f"{path}: {err}")
    except OSError as err:
        _fail(f"cannot read {path}: {err.strerror or err}")
    except Exception as err:  # the script reader must never print a traceback
        _fail(f"cannot read {path}: {type(err).__name__}: {err}")
    if not isinstance(run, RunSpec):
        _fail(f"cannot read {path}: the reader returned {type(run).__name__}, not a RunSpec")
    return run


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
    run = _read_script(args.script) if args.script else RunSpec()
    changes: Dict[str, Any] = {}
    if args.model is not None:
        changes["model"] = find_model(args.model)
        if args.params is None and (run.params is not None or run.model_label is not None):
            # the script's parameter count and label belong to the model it built, not this one
            dropped = {k: v for k, v in run.sources.items() if k not in ("params", "model_label")}
            run = run.replace(params=None, model_label=None, sources=dropped)
    if args.params is not None:
        changes["params"] = args.params
    for name in _OVERRIDES:
        value = getattr(args, name)
        if value is not None:
            changes[name] = value
    if args.lora is not None:
        changes["lora"], changes["lora_rank"] = True, args.lora
    if args.max_new_tokens is not None and args.generation is None:
        changes["generation"] = True  # a number of new tokens means generating
    if changes:
        run = run.replace(source=COMMAND_LINE, **changes)
    sources = dict(run.sources)
    for name in ("precision", "optimizer"):
        sources.setdefault(name, DEFAULT)
    return run.replace(sources=sources).with_native_image_size()


def _target(args: argparse.Namespace) -> Optional[GpuTarget]:
    if args.gpu is not None and args.gpu_memory is not None:
        _fail("give --gpu or --gpu-memory, not both")
    if args.gpu is not None:
        return find_gpu(args.gpu)
    if args.gpu_memory is not None:
        return gpu_from_memory(args.gpu_memory)
    return None


def _write(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        plain = text.replace("█", "#").replace("–", "-").replace("≥ ", ">= ")
        stream.write(plain.encode(encoding, "replace").decode(encoding))


def _estimate(args: argparse.Namespace) -> int:
    run = build_run(args)
    gpu = _target(args)
    if run.model is None and run.params is None:
        _fail("no model: give --model NAME (a catalogue name or Hugging Face id) or --params N")
    if run.sharding != "none" and "world_size" not in run.sources and gpu is not None and gpu.count > 1:
        run = run.replace(source=f"{gpu.key} GPU count", world_size=gpu.count)
    run.check()
    result = estimate(run, gpu)
    solution = solve(result)
    if args.format == "json":
        _write(sys.stdout, json.dumps(to_json(result, solution), indent=2) + "\n")
    else:
        _write(sys.stdout, render_text(result, solution))
    return 1 if result.fits is False else 0


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


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status (0 fits, 1 does not fit, 2 bad input)."""
    arguments: List[str] = list(sys.argv[1:] if argv is None else argv)
    if not arguments or (arguments[0] not in _COMMANDS and arguments[0] not in ("-h", "--help", "--version")):
        arguments.insert(0, "estimate")
    try:
        args = _build_parser().parse_args(arguments)
        if args.command == "gpus":
            return _gpus(args)
        if args.command == "models":
            return _models(args)
        return _estimate(args)
    except _Exit as done:
        if done.message:
            sys.stderr.write(f"{PROG}: {_one_line(done.message)}\n")
        return done.status
    except (CatalogueError, RunSpecError) as err:
        sys.stderr.write(f"{PROG}: {_one_line(str(err))}\n")
        return 2


def estimate_main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``tp-estimate`` console script: the ``estimate`` command alone."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["estimate"]:
        arguments = arguments[1:]
    return main(["estimate"] + arguments)
