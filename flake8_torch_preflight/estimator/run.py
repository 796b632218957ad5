"""The description of one run that the VRAM estimator prices.

A ``RunSpec`` is plain data: what model, what batch, what precision and optimizer, how it is
distributed. ``estimator.extract.read_run`` fills one from a training script, the command line
overrides fields on top of it, and ``estimator.costmodel.estimate`` turns it into bytes.
``sources`` records where each field came from (``"train.py:12"``, ``"command line"``,
``"default"``, ``"default (native 224)"``), so a report can say why it assumed what it assumed.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Optional, Tuple

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
    "adadelta",
)

#: The dtype LoRA adapters train in (``--lora-dtype``): ``fp32`` as PEFT keeps them by default
#: (``autocast_adapter_dtype=True``: fp32 adapter weights, and each adapted linear's input cast
#: to fp32 before ``lora_A``), ``model`` as the base weights' dtype with no casts (litgpt's LoRA,
#: whose adapters are created with the model under ``precision="bf16-true"``; PEFT with
#: ``autocast_adapter_dtype=False``).
LORA_DTYPES: Tuple[str, ...] = ("fp32", "model")

#: The sharding modes of the contract. ``ddp`` replicates; ``zero-1`` shards optimizer state,
#: ``zero-2`` also gradients, ``zero-3`` and ``fsdp`` (full sharding) also the weights.
SHARDINGS: Tuple[str, ...] = ("none", "ddp", "fsdp", "zero-1", "zero-2", "zero-3")

#: The tasks of the contract (``--task``): which head the model carries. ``causal-lm`` and
#: ``seq2seq`` an LM head over the vocabulary at every position, ``masked-lm`` an encoder's
#: masked-LM head over the vocabulary, ``seq-cls`` / ``token-cls`` / ``image-cls`` a classifier
#: (a few logits per sequence, token or image), ``backbone`` no head at all.
TASKS: Tuple[str, ...] = ("causal-lm", "masked-lm", "seq-cls", "token-cls", "seq2seq", "image-cls", "backbone")

#: Tasks whose head predicts the vocabulary.
VOCABULARY_TASKS: FrozenSet[str] = frozenset({"causal-lm", "masked-lm", "seq2seq"})

#: The model kinds each task applies to (a task outside them is bad input): an encoder used as a
#: decoder (``BertLMHeadModel``) is a causal LM over the vocabulary, a decoder fine-tuned on
#: prompt/answer pairs is trained as seq2seq by some frameworks; classifiers exist for every text
#: kind (``*ForSequenceClassification`` / ``*ForTokenClassification``).
TASK_KINDS: Dict[str, Tuple[str, ...]] = {
    "causal-lm": ("decoder", "encoder-decoder", "encoder"),
    "masked-lm": ("encoder",),
    "seq-cls": ("decoder", "encoder", "encoder-decoder"),
    "token-cls": ("decoder", "encoder", "encoder-decoder"),
    "seq2seq": ("encoder-decoder", "decoder"),
    "image-cls": ("vision-transformer", "cnn"),
    "backbone": ("decoder", "encoder", "encoder-decoder", "vision-transformer", "cnn"),
}

#: transformers model classes (the last part of the name) and the task of their head.
CLASS_TASKS: Tuple[Tuple[str, str], ...] = (
    (r"(ForMaskedLM|ForPreTraining)$", "masked-lm"),
    (r"(ForCausalLM|LMHeadModel)$", "causal-lm"),
    (r"ForSequenceClassification$", "seq-cls"),
    (r"(ForTokenClassification|ForQuestionAnswering)$", "token-cls"),
    (r"(ForConditionalGeneration|ForSeq2SeqLM|ForSpeechSeq2Seq|ForVision2Seq)$", "seq2seq"),
    (r"ForImageClassification$", "image-cls"),
    (r"^(AutoModel|(?!\w*(LMHead|Heads))\w+Model)$", "backbone"),
)


def task_of_class(name: str, kind: Optional[str]) -> Optional[str]:
    """The task a transformers model class serves (``BertForMaskedLM`` -> ``masked-lm``,
    ``AutoModel`` / ``LlamaModel`` -> ``backbone``), ``None`` when the class does not say or the
    task does not apply to ``kind``."""
    last = str(name).rsplit(".", 1)[-1]
    for pattern, task in CLASS_TASKS:
        if re.search(pattern, last):
            return task if kind is None or kind in TASK_KINDS[task] else None
    return None


#: The weight storage of the contract (``--quantization``): bitsandbytes' LLM.int8() (``int8``)
#: and 4-bit NormalFloat / float (``nf4``, ``fp4``, as QLoRA uses them) for the frozen base.
QUANTIZATIONS: Tuple[str, ...] = ("none", "int8", "nf4", "fp4")

#: Rank used when LoRA is switched on without a rank.
DEFAULT_LORA_RANK = 16

#: The projection kind of the output head (``lm_head``), outside the blocks.
LORA_HEAD_KIND = "head"

#: Every projection kind of a transformer block (what ``all-linear`` names).
LORA_BLOCK_KINDS: FrozenSet[str] = frozenset({"q", "k", "v", "o", "gate", "up", "down"})

#: The projections of a transformer block a LoRA adapter can wrap: ``q``, ``k``, ``v``, ``o``
#: (attention; a fused q/k/v projection counts as one), ``gate``, ``up``, ``down`` (the MLP; a
#: non-gated MLP has ``up`` and ``down``), and outside the blocks ``head``, the output head over
#: the vocabulary (``lm_head``: PEFT's ``target_modules=[..., "lm_head"]``, litgpt's
#: ``lora_head: true``). Module names as the common implementations spell them
#: (PEFT matches a name against the end of each module's path), each with the projections it
#: names. ``dense`` and ``wo`` depend on the family and are resolved by ``lora_target_kinds``.
LORA_TARGET_NAMES: Dict[str, Tuple[str, ...]] = {
    # Llama, Mistral, Qwen, Gemma, Phi-3, OPT, BART, Whisper, CLIP, torchtune
    "q_proj": ("q",), "k_proj": ("k",), "v_proj": ("v",), "o_proj": ("o",), "out_proj": ("o",),
    "output_proj": ("o",), "gate_proj": ("gate",), "up_proj": ("up",), "down_proj": ("down",),
    "qkv_proj": ("q", "k", "v"), "gate_up_proj": ("gate", "up"),
    # Meta's and torchtune's names, Mixtral's experts
    "wq": ("q",), "wk": ("k",), "wv": ("v",), "w1": ("gate",), "w2": ("down",), "w3": ("up",),
    # T5 (q, k, v, o; wi, or wi_0 and wi_1 gated; wo)
    "q": ("q",), "k": ("k",), "v": ("v",), "o": ("o",), "wi": ("up",), "wi_0": ("gate",), "wi_1": ("up",),
    # GPT-2 (c_proj is both the attention output and the MLP's second linear)
    "c_attn": ("q", "k", "v"), "c_proj": ("o", "down"), "c_fc": ("up",),
    # BERT, RoBERTa, ELECTRA, DeBERTa, ViT (attention.output.dense, intermediate.dense, output.dense)
    "query": ("q",), "key": ("k",), "value": ("v",),
    # DistilBERT
    "q_lin": ("q",), "k_lin": ("k",), "v_lin": ("v",), "out_lin": ("o",), "lin1": ("up",), "lin2": ("down",),
    # GPT-NeoX, Falcon, BLOOM; OPT, BART, Phi-2, Whisper, CLIP; GPT-J
    "query_key_value": ("q", "k", "v"), "dense_h_to_4h": ("up",), "dense_4h_to_h": ("down",),
    "fc1": ("up",), "fc2": ("down",), "fc_in": ("up",), "fc_out": ("down",),
    "wqkv": ("q", "k", "v"),
    # resolved by the model's kind: see lora_target_kinds
    "dense": ("o", "up", "down"), "wo": ("o",),
    # the output head (transformers' decoders and encoder-decoders name it lm_head)
    "lm_head": (LORA_HEAD_KIND,),
}

#: Names that mean every linear layer of the blocks (PEFT's ``all-linear``, LLaMA-Factory's
#: ``all``). The output head is not among them (PEFT's ``all-linear`` leaves it out); it is
#: named on its own: ``all-linear,lm_head``.
LORA_ALL_LINEAR: FrozenSet[str] = frozenset({"all-linear", "all_linear", "all"})

#: How a target list that names every block linear and more (``all-linear,lm_head``) records
#: the first part in ``lora_targets``.
ALL_LINEAR_TARGET = "all-linear"


def lora_target_kinds(name: str, kind: Optional[str]) -> FrozenSet[str]:
    """The projections module ``name`` names in a model of ``kind`` (``KeyError`` if unknown).

    ``dense`` is every dense layer of a BERT-style block (attention output, intermediate and
    output: encoders and vision transformers) but only the attention output in GPT-NeoX, Falcon
    and Phi (decoders, whose MLP layers have other names); ``wo`` is T5's MLP output in an
    encoder-decoder and the attention output in Meta's naming otherwise.
    """
    key = name.strip().lower()
    if key in LORA_ALL_LINEAR:
        return LORA_BLOCK_KINDS
    kinds = LORA_TARGET_NAMES[key]
    if key == "dense" and kind not in ("encoder", "vision-transformer"):
        return frozenset({"o"})
    if key == "wo" and kind == "encoder-decoder":
        return frozenset({"down"})
    return frozenset(kinds)


def parse_lora_targets(text: str) -> Optional[Tuple[str, ...]]:
    """``"q_proj,v_proj"`` -> ``("q_proj", "v_proj")``; ``all-linear`` (or ``all``) -> ``None``
    (every linear layer of the blocks); ``all-linear,lm_head`` -> ``("all-linear", "lm_head")``
    (those and the output head). ``RunSpecError`` (one line, naming the known names) for an
    unknown name or an empty list."""
    names = [part.strip() for part in str(text).split(",") if part.strip()]
    if not names:
        raise RunSpecError(f"no LoRA target names in {shown_value(text)}; {_known_targets()}")
    if any(name.lower() in LORA_ALL_LINEAR for name in names):
        heads = [name.lower() for name in names if name.lower() in LORA_TARGET_NAMES
                 and LORA_TARGET_NAMES[name.lower()] == (LORA_HEAD_KIND,)]
        return (ALL_LINEAR_TARGET, *dict.fromkeys(heads)) if heads else None
    unknown = [name for name in names if name.lower() not in LORA_TARGET_NAMES]
    if unknown:
        raise RunSpecError(f"unknown LoRA target {shown_value(unknown[0])}; {_known_targets()}")
    found: Dict[str, None] = {}
    for name in names:
        found.setdefault(name.lower(), None)
    return tuple(found)


def _known_targets() -> str:
    return f"known: {', '.join(LORA_TARGET_NAMES)} (or all-linear)"


def lora_dropout_error(value: Any) -> Optional[str]:
    """Why ``value`` is not a LoRA dropout probability (``None`` when it is one): a number at
    least 0 and below 1 (``nn.Dropout(p=1)`` would zero the adapters' input)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        return f"lora-dropout must be a probability at least 0 and below 1, got {shown_value(value)}"
    return None


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
    "trainable_params": (1, 10**15),
}


def within_limits(name: str, value: Any) -> bool:
    """Whether ``value`` is an integer (not a bool) inside ``LIMITS[name]``."""
    low, high = LIMITS[name]
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def limit_words(name: str) -> str:
    """What a value of ``name`` must be, for a message: ``a positive integer up to 1,000,000``."""
    return f"a positive integer up to {LIMITS[name][1]:,}"


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
    #: the adapters' dtype (``LORA_DTYPES``): ``fp32`` (PEFT's default) or the model's
    lora_dtype: str = "fp32"
    #: the dropout probability on each adapter's input (PEFT's ``LoraConfig.lora_dropout``,
    #: default 0.0: ``nn.Identity``; litgpt's ``lora_dropout``); above 0 each adapted layer keeps
    #: the dropout's output and its mask
    lora_dropout: float = 0.0
    #: an encoder's vocabulary (masked-LM) head: ``True`` (``*ForMaskedLM``), ``False`` (a base
    #: model or a task head), ``None`` when not known (the command line)
    lm_head: Optional[bool] = None
    #: a run without backward that computes a loss (an evaluation with labels): ``True`` when the
    #: reader found one (its copies of the logits are in the point), ``None`` when not known (they
    #: widen the high end only)
    eval_loss: Optional[bool] = None
    #: the head the model carries (a key of ``TASKS``), ``None`` when not given: an encoder's head
    #: is then ``lm_head``, a decoder's the LM head
    task: Optional[str] = None
    #: how the frozen base weights are stored (``QUANTIZATIONS``); quantized weights do not train
    quantization: str = "none"
    #: the module names LoRA adapters wrap (lower case), ``None`` = every linear layer of the blocks
    lora_targets: Optional[Tuple[str, ...]] = None
    #: the parameters that train, when only some do (adapters, prefix tuning, a frozen backbone):
    #: gradients and optimizer state for these only; with LoRA the adapters' count
    trainable_params: Optional[int] = None
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

    @property
    def vocabulary_head(self) -> Optional[bool]:
        """Whether the model's head predicts the vocabulary: from ``task`` when given, else
        ``lm_head`` (an encoder's masked-LM head; ``None`` = not known)."""
        if self.task is not None:
            return self.task in VOCABULARY_TASKS
        return self.lm_head

    def check(self) -> None:
        """Raise ``RunSpecError`` (one line) for values no run can have, or outside ``LIMITS``;
        the message names the range and, for a value read from a script, where it was read."""
        for name in LIMITS:
            value = getattr(self, name)
            if value is None and name not in ("grad_accum_steps", "world_size", "lora_rank"):
                continue
            if not within_limits(name, value):
                where = self.sources.get(name)
                origin = f" ({where})" if where not in (None, COMMAND_LINE, DEFAULT) else ""
                raise RunSpecError(f"{name.replace('_', '-')} must be {limit_words(name)}, "
                                   f"got {shown_value(value)}{origin}")
        if self.precision not in PRECISIONS:
            raise RunSpecError(f"precision must be one of {', '.join(PRECISIONS)}, got {shown_value(self.precision)}")
        if self.optimizer not in OPTIMIZERS:
            raise RunSpecError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {shown_value(self.optimizer)}")
        if self.sharding not in SHARDINGS:
            raise RunSpecError(f"sharding must be one of {', '.join(SHARDINGS)}, got {shown_value(self.sharding)}")
        if self.lora_dtype not in LORA_DTYPES:
            raise RunSpecError(f"lora-dtype must be one of {', '.join(LORA_DTYPES)}, "
                               f"got {shown_value(self.lora_dtype)}")
        dropout_error = lora_dropout_error(self.lora_dropout)
        if dropout_error is not None:
            raise RunSpecError(dropout_error)
        self._check_head_and_training()

    def _check_head_and_training(self) -> None:
        """The task against the model's kind, what quantized weights allow, what trains."""
        if self.task is not None:
            if self.task not in TASKS:
                raise RunSpecError(f"task must be one of {', '.join(TASKS)}, got {shown_value(self.task)}")
            kinds = TASK_KINDS[self.task]
            if self.model is not None and self.model.kind not in kinds:
                article = "an" if self.model.kind[0] in "aeiou" else "a"
                raise RunSpecError(f"task {self.task} does not apply to {self.model.key}, {article} {self.model.kind} "
                                   f"(it applies to: {', '.join(kinds)})")
            if self.generation and self.task not in VOCABULARY_TASKS:
                raise RunSpecError(f"generating needs a head over the vocabulary; task {self.task} has none")
        if self.quantization not in QUANTIZATIONS:
            raise RunSpecError(f"quantization must be one of {', '.join(QUANTIZATIONS)}, "
                               f"got {shown_value(self.quantization)}")
        if self.quantization != "none" and self.training and not self.lora and self.trainable_params is None:
            raise RunSpecError(f"{self.quantization} weights are frozen: train LoRA adapters (--lora) or give what "
                               "trains (--trainable-params N), or price --inference")
        if self.lora_targets is not None:
            if not isinstance(self.lora_targets, tuple) or not self.lora_targets:
                raise RunSpecError(f"lora-targets must be module names, got {shown_value(self.lora_targets)}")
            for name in self.lora_targets:
                if not isinstance(name, str) or (name.lower() not in LORA_TARGET_NAMES
                                                 and name.lower() not in LORA_ALL_LINEAR):
                    raise RunSpecError(f"unknown LoRA target {shown_value(name)}; {_known_targets()}")
        total = self.total_params
        if self.trainable_params is not None and not self.lora and total is not None and self.trainable_params > total:
            raise RunSpecError(f"trainable-params {self.trainable_params:,} is more than the model's "
                               f"{total:,} parameters")
