"""The description of one run that the VRAM estimator prices.

A ``RunSpec`` is plain data: what model, what batch, what precision and optimizer, how it is
distributed. ``estimator.extract.read_run`` fills one from a training script, the command line
overrides fields on top of it, and ``estimator.costmodel.estimate`` turns it into bytes.
``sources`` records where each field came from (``"train.py:12"``, ``"command line"``,
``"default"``, ``"default (native 224)"``), so a report can say why it assumed what it assumed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

if TYPE_CHECKING:
    from .catalogue import ModelSpec

#: The precisions of the contract. ``amp`` = autocast with fp32 weights; ``fp16``/``bf16`` =
#: the weights themselves cast to half.
PRECISIONS: Tuple[str, ...] = ("fp32", "amp", "fp16", "bf16")

#: The optimizers of the contract.
OPTIMIZERS: Tuple[str, ...] = (
    "sgd",
    "sgd-momentum",
    "adam",
    "adamw",
    "adamw-8bit",
    "adafactor",
    "lion",
    "rmsprop",
    "adagrad",
)

#: The sharding modes of the contract. ``ddp`` replicates; ``zero-1`` shards optimizer state,
#: ``zero-2`` also gradients, ``zero-3`` and ``fsdp`` (full sharding) also the weights.
SHARDINGS: Tuple[str, ...] = ("none", "ddp", "fsdp", "zero-1", "zero-2", "zero-3")

#: Rank used when LoRA is switched on without a rank.
DEFAULT_LORA_RANK = 16

#: Value recorded in ``sources`` for a field given on the command line.
COMMAND_LINE = "command line"

#: Value recorded in ``sources`` for a field nobody gave.
DEFAULT = "default"

#: Value recorded in ``sources["image_size"]`` when an image model is priced at the catalogue's
#: native resolution because no image size was given.
NATIVE_IMAGE_SOURCE = "default (native {})"

#: Model kinds that take an image size.
IMAGE_KINDS: Tuple[str, ...] = ("cnn", "vision-transformer")

#: The inclusive range of each numeric field: wide enough for any run a GPU cluster can hold
#: (two orders of magnitude past the largest published ones), narrow enough that every byte count
#: the cost model derives stays far inside a float (a value of 10**300 overflowed it) and every
#: loop over a value's halvings stays short. The command line and ``check`` both refuse a value
#: outside its range, naming the range.
LIMITS: Dict[str, Tuple[int, int]] = {
    "params": (1, 10**15),
    "batch_size": (1, 10**6),
    "seq_len": (1, 10**7),
    "image_size": (1, 10**5),
    "max_new_tokens": (1, 10**7),
    "grad_accum_steps": (1, 10**6),
    "world_size": (1, 10**6),
    "lora_rank": (1, 10**5),
}

#: Digits beyond which a value is described by its length rather than printed.
_SHOWN_DIGITS = 24


def shown_value(value: Any) -> str:
    """A value for a one-line message: huge integers by their length, long text cut short."""
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value))) if abs(value) < 10**4000 else None
        if digits is None or digits > _SHOWN_DIGITS:
            return f"{'-' if value < 0 else ''}a number of {digits or 'over 4000'} digits"
        return f"{value:,}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class RunSpecError(ValueError):
    """A run description that cannot be priced; the message is one line."""


@dataclass
class RunSpec:
    """What one training (or inference) run puts on each device.

    ``fused_optimizer`` means a single-kernel step (``fused=True``, or ``foreach=False``),
    without the state-sized temporaries of the default foreach step.
    ``params`` overrides the model's parameter count (and stands in for it when ``model`` is
    ``None``, for models outside the catalogue). ``model_label`` names such a model for the
    report (the class of a hand-written ``nn.Module``: ``"Classifier"``); its source, when
    recorded as ``sources["model_label"]``, is where it is defined. ``None`` in a size field
    means "not known"; the cost model then reports the terms that depend on it as unknown
    rather than guessing.
    """

    model: Optional[ModelSpec] = None
    params: Optional[int] = None
    model_label: Optional[str] = None
    batch_size: Optional[int] = None
    seq_len: Optional[int] = None
    image_size: Optional[int] = None
    precision: str = "fp32"
    optimizer: str = "adamw"
    checkpointing: bool = False
    flash: bool = False
    inference: bool = False
    generation: bool = False
    max_new_tokens: Optional[int] = None
    grad_accum_steps: int = 1
    world_size: int = 1
    sharding: str = "none"
    offload_optimizer: bool = False
    fused_optimizer: bool = False
    lora: bool = False
    lora_rank: int = DEFAULT_LORA_RANK
    #: an encoder's vocabulary (masked-LM) head: ``True`` (``*ForMaskedLM``), ``False`` (a base
    #: model or a task head), ``None`` when not known (the command line)
    lm_head: Optional[bool] = None
    #: a run without backward that computes a loss (an evaluation with labels): ``True`` when the
    #: reader found one (its copies of the logits are in the point), ``None`` when not known (they
    #: widen the high end only)
    eval_loss: Optional[bool] = None
    sources: Dict[str, str] = field(default_factory=dict)

    def replace(self, source: Optional[str] = None, **changes: Any) -> RunSpec:
        """A copy with ``changes`` applied; with ``source``, each changed field is recorded."""
        sources = dict(changes.pop("sources", self.sources))
        if source is not None:
            for name in changes:
                sources[name] = source
        return dataclasses.replace(self, sources=sources, **changes)

    @property
    def model_name(self) -> Optional[str]:
        return None if self.model is None else self.model.key

    @property
    def display_name(self) -> Optional[str]:
        """The catalogue key, else the label of a model outside the catalogue, else ``None``."""
        return self.model.key if self.model is not None else self.model_label

    @property
    def native_image_size(self) -> Optional[int]:
        """The catalogue's image size for an image model (``None`` for other kinds)."""
        model = self.model
        if model is None or model.kind not in IMAGE_KINDS:
            return None
        native = model.shape.get("image_size")
        if isinstance(native, bool) or not isinstance(native, int) or native <= 0:
            return None
        return native

    @property
    def image_size_defaulted(self) -> bool:
        """True when the image size is the model's native one because none was given."""
        native = self.native_image_size
        return native is not None and self.sources.get("image_size") == NATIVE_IMAGE_SOURCE.format(native)

    def with_native_image_size(self) -> RunSpec:
        """An image model without an image size gets its native one, recorded in ``sources``
        as ``"default (native 224)"`` so that the default is never silent; others unchanged."""
        native = self.native_image_size
        if self.image_size is not None or native is None:
            return self
        return self.replace(source=NATIVE_IMAGE_SOURCE.format(native), image_size=native)

    @property
    def total_params(self) -> Optional[int]:
        """The parameter count the estimate uses: the override, else the model's."""
        if self.params is not None:
            return self.params
        if self.model is not None:
            return self.model.params
        return None

    @property
    def training(self) -> bool:
        return not (self.inference or self.generation)

    def check(self) -> None:
        """Raise ``RunSpecError`` (one line) for values no run can have, or outside ``LIMITS``;
        the message names the range and, for a value read from a script, where it was read."""
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if value is None and name not in ("grad_accum_steps", "world_size", "lora_rank"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                where = self.sources.get(name)
                origin = f" ({where})" if where not in (None, COMMAND_LINE, DEFAULT) else ""
                raise RunSpecError(f"{name.replace('_', '-')} must be a positive integer up to {high:,}, "
                                   f"got {shown_value(value)}{origin}")
        if self.precision not in PRECISIONS:
            raise RunSpecError(f"precision must be one of {', '.join(PRECISIONS)}, got {shown_value(self.precision)}")
        if self.optimizer not in OPTIMIZERS:
            raise RunSpecError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {shown_value(self.optimizer)}")
        if self.sharding not in SHARDINGS:
            raise RunSpecError(f"sharding must be one of {', '.join(SHARDINGS)}, got {shown_value(self.sharding)}")
