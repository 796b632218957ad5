"""Read the training run out of a script with astroid, never executing it.

``read_run(path)`` builds the astroid module of a file the way the flake8 plugin does
(``analysis.setup.build.build_module``) and returns a ``RunSpec``; ``run_from_module(module,
filename)`` does the same on a module already built (TPV001 uses the plugin's tree).
``read_module`` returns the fuller ``RunReading``: the run, the node that builds the model
(TPV001 reports there), the fields whose evidence could not be resolved (``unknown``), the
fields read as a maximum rather than an exact value (``upper_bounds``) and notes.

Each field read records ``sources[field] = "file.py:LINE"``: the line the value was written
at (an ``argparse`` default, a constant, a keyword). Values are resolved through
``analysis.semantic.static_values`` (constants, module names, argparse defaults, config dicts,
dataclass defaults, f-strings, arithmetic). What the reader understands:

* **model**: ``X.from_pretrained("name")`` on a model class (``Auto*Model*``, ``*Model``,
  ``*For*``; tokenizers, configs and processors are not models), ``pipeline(task,
  model=...)``, ``torchvision.models.<name>()`` / ``get_model("name")``,
  ``timm.create_model("name")`` (catalogue names; ``num_classes=`` re-counts image heads),
  an ``nn.Module`` subclass of the file or of a sibling module (parameters counted by
  ``analysis.training.param_count``), an inline ``nn.Sequential``; a model picked by a known key
  (``models.__dict__[args.arch]()``, ``getattr(models, name)()``, ``MODELS[args.model](...)``
  over the project's own modules: ``param_count.named_callee``). With several models, the one an
  optimizer or a Trainer receives wins; among those, the largest.
* **batch size**: ``DataLoader(batch_size=...)`` (the loader a backward loop iterates, through
  helper-function parameters), ``TrainingArguments(per_device_train_batch_size=...)``,
  DeepSpeed ``train_micro_batch_size_per_gpu``;
* **sequence length / image size**: tokenizer ``max_length`` (exact with
  ``padding="max_length"``, otherwise an upper bound), ``block_size``, ``max_seq_length``
  (exact with ``packing=True``); ``Resize``/``RandomResizedCrop``/``CenterCrop``/``RandomCrop``;
* **precision**: ``torch.autocast``/``GradScaler`` (amp), ``.half()``/``.bfloat16()``/
  ``.to(torch.bfloat16)`` on the model and ``from_pretrained(torch_dtype=...)`` (half weights),
  ``TrainingArguments(fp16/bf16)``, ``Accelerator(mixed_precision=...)``, Lightning
  ``Trainer(precision=...)`` and ``Fabric(precision=...)``, DeepSpeed ``fp16``/``bf16``;
* **optimizer**: ``torch.optim.*``, bitsandbytes 8-bit and paged optimizers, Lion,
  transformers' Adafactor, ``TrainingArguments(optim=...)``; ``fused=True``/``foreach=False``;
* **gradient checkpointing** (``gradient_checkpointing_enable()``, the TrainingArguments flag,
  ``torch.utils.checkpoint``), **attention** (``attn_implementation``,
  ``scaled_dot_product_attention``), **accumulation** (TrainingArguments, Accelerator,
  DeepSpeed, ``if (step + 1) % N == 0: optimizer.step()``, also through a flag bound to that
  test: ``if not is_accumulating: optimizer.step()``), **sharding** (DDP, FSDP and its
  ``sharding_strategy``/``fully_shard``, DeepSpeed ZeRO stage and optimizer offload from a
  dict literal or the JSON file the script names,
  Lightning ``Trainer`` / ``Fabric`` strategies by name or object such as ``FSDPStrategy(...)``
  with ``devices`` x ``num_nodes`` as the world size, ``TrainingArguments(fsdp=..., deepspeed=...)``;
  an ``Accelerator()`` without a plugin names its sharding as not read), **LoRA** (peft
  ``LoraConfig(r=...)``),
  **inference / generation** (``.generate(max_new_tokens=...)``, ``use_cache=True``, text
  pipelines, and no ``backward()``/``trainer.train()``/``trainer.fit()`` at all).

``RunReading.on_gpu`` says whether the file puts the run on a GPU at all. With several models
bound to one name (a flag picks one), the smallest is the run's lower bound, and one of
unknown size makes the model unknown.

Third-party names (transformers, accelerate, timm, torchvision, deepspeed, peft, lightning)
are resolved syntactically through the file's imports (``infer.dotted_name``), never read.
Where a name-based fallback is used it says so.
"""
from __future__ import annotations

import io
import json
import os
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

from astroid import nodes
from astroid.exceptions import AstroidSyntaxError

from ..analysis.training import accumulation, frameworks, kinds, loader_use, model_flow, models, param_count
from ..analysis.semantic import dataflow, infer, static_values
from ..analysis.setup.build import build_module
from ..analysis.semantic.static_values import ConfigDict, Resolved
from ..analysis.training.torch_names import AUTOCAST_CONTEXTS, MODEL_WRAPPERS
from .catalogue import ModelSpec, count_params
from .files import read_bytes
from .names import EXTERNAL_OPTIMIZERS, HF_OPTIM, TORCH_OPTIMIZERS, resolve_model
from .recipe import LIGHTNING_PRECISION
from .run import (DEFAULT_LORA_RANK, VOCABULARY_TASKS, RunSpec, RunSpecError, lora_dropout_error, parse_lora_targets,
                  task_of_class)

#: Last part of a class whose ``from_pretrained`` builds a model.
MODEL_CLASS = re.compile(r"^(Auto\w*Model\w*|\w+Model|\w+For[A-Z]\w*|\w+LMHead\w*)$")

#: Model classes whose head predicts the vocabulary at every position of an encoder.
MASKED_LM_CLASS = re.compile(r"(MaskedLM|ForPreTraining)$")

#: Classes with ``from_pretrained`` that are not models (or not a base model).
NOT_MODELS = re.compile(r"(Tokenizer|Config|Processor|FeatureExtractor|ImageProcessor|PeftModel)", re.I)

#: transformers pipeline tasks that generate tokens (a KV cache grows).
GENERATION_TASKS = frozenset({"text-generation", "text2text-generation", "summarization", "translation",
                              "conversational", "image-to-text", "automatic-speech-recognition"})

#: Lightning ``Trainer(strategy=...)``.
LIGHTNING_STRATEGY = {"ddp": "ddp", "ddp_spawn": "ddp", "ddp_find_unused_parameters_true": "ddp", "fsdp": "fsdp",
                      "deepspeed_stage_1": "zero-1", "deepspeed_stage_2": "zero-2",
                      "deepspeed_stage_2_offload": None, "deepspeed_stage_3": "zero-3", "auto": "none",
                      "single_device": "none", "dp": "none"}

#: FSDP ``ShardingStrategy`` members (hybrid strategies shard within a node only: unknown).
FSDP_STRATEGIES = {"FULL_SHARD": "fsdp", "SHARD_GRAD_OP": "zero-2", "NO_SHARD": "ddp"}

#: timm's model factory, as the package and its submodules export it.
TIMM_FACTORIES = frozenset({"timm.create_model", "timm.models.create_model", "timm.models.factory.create_model",
                            "timm.models._factory.create_model"})

#: torchvision transforms that fix the image size, crops first.
CROPS = frozenset({"RandomResizedCrop", "CenterCrop", "RandomCrop"})
RESIZES = frozenset({"Resize"})


#: Tokenizer methods that take ``max_length``.
TOKENIZER_METHODS = frozenset({"encode", "encode_plus", "batch_encode_plus", "__call__", "apply_chat_template"})

#: HF argument classes: TrainingArguments and the trl configs built on it.
HF_ARGUMENTS = re.compile(r"^(transformers|trl)(\.\w+)*\.(\w*TrainingArguments|SFTConfig|DPOConfig|ORPOConfig|"
                          r"KTOConfig|GRPOConfig|RewardConfig|CPOConfig)$")


#: Fields whose absence ``RunReading.unread`` names (the model and the size fields a report
#: prices; precision and optimizer fall back on marked defaults).
UNREAD_FIELDS = ("model", "batch_size", "seq_len", "image_size", "precision", "optimizer", "grad_accum_steps",
                 "sharding", "trainable", "lora_dropout")

#: Fields whose unresolved evidence is recorded in ``RunReading.unknown``.
FIELDS = ("model", "batch_size", "seq_len", "image_size", "precision", "optimizer", "fused_optimizer",
          "checkpointing", "flash", "sharding", "world_size", "lora_rank", "lora_dropout", "trainable",
          "weights_layout")


@dataclass
class RunReading:
    """What the reader found: the run, where the model is built, and what stayed unknown."""

    run: RunSpec
    model_node: Optional[nodes.NodeNG] = None
    model_name: Optional[str] = None
    unknown: FrozenSet[str] = frozenset()
    upper_bounds: FrozenSet[str] = frozenset()
    notes: Tuple[str, ...] = ()
    #: the fields that could not be read, each with what held it (the expression and its line,
    #: or that the file never states it): ``{"model": "LLaMA(config) at train.py:40 (class LLaMA
    #: of model.py: parameters not counted)"}``
    unread: Dict[str, str] = field(default_factory=dict)
    #: True when the file puts the run on a GPU (``.cuda()``, ``.to("cuda")``, DDP, a Trainer,
    #: accelerate, DeepSpeed ...), False when the model is explicitly moved to the CPU, None
    #: when the file does not say (a plain script with no device placement runs on the CPU).
    on_gpu: Optional[bool] = None


def read_source(path: str) -> str:
    """A script's text, decoded the way Python and flake8 decode it (a UTF-8 BOM or a
    ``# -*- coding: ... -*-`` line decides; ``tokenize.detect_encoding``), newlines normalised.

    Refuses with ``RunSpecError`` what is not a regular file and files over ``files.MAX_FILE_BYTES``
    (``files.read_bytes``); at most that many bytes are ever read. ``OSError`` when it cannot be
    opened."""
    data = read_bytes(path)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as err:  # an unknown encoding, or a coding line that contradicts the BOM
        raise RunSpecError(f"cannot decode: {' '.join(str(err).split())}") from None
    try:
        return io.TextIOWrapper(io.BytesIO(data), encoding, line_buffering=True).read()
    except (UnicodeDecodeError, LookupError) as err:
        raise RunSpecError(f"cannot decode as {encoding}: {' '.join(str(err).split())}") from None


def read_run(path: str) -> RunSpec:
    """The run a training script describes (``estimate SCRIPT``); see ``read_source``."""
    return read_reading(path).run


def read_reading(path: str) -> RunReading:
    """Everything the reader finds in the script at ``path`` (``read_module`` of its module)."""
    source = read_source(path)
    try:
        module = build_module(source, path)
    except AstroidSyntaxError as err:
        cause = getattr(err, "error", None)  # the SyntaxError, without astroid's module name
        if isinstance(cause, SyntaxError) and cause.msg:
            text = f"{cause.msg} (line {cause.lineno})" if cause.lineno else str(cause.msg)
        else:
            text = str(err)
        raise RunSpecError(f"not valid Python: {' '.join(text.split())}") from None
    except RecursionError:
        raise RunSpecError("an expression is too deeply nested to read") from None
    return read_module(module, path)


def run_from_module(module: nodes.Module, filename: str) -> RunSpec:
    """The run read from an already-built astroid module (never builds twice)."""
    return read_module(module, filename).run


def read_module(module: nodes.Module, filename: str) -> RunReading:
    """Everything the reader finds in ``module`` (see the module docstring)."""
    return _Reader(module, filename).read()


# ===================================================================================== reader


#: bitsandbytes' config classes (transformers re-exports them).
BNB_CONFIGS = frozenset({"transformers.BitsAndBytesConfig",
                         "transformers.utils.quantization_config.BitsAndBytesConfig"})


def _bnb_mode(arg: nodes.NodeNG) -> Optional[str]:
    """The weights' storage a ``BitsAndBytesConfig(...)`` says (``nf4``, ``fp4``, ``int8``), the
    call written in place or bound to a name once; None when it is not one or not resolved."""
    call = arg
    if isinstance(arg, nodes.Name):
        _, assignments = arg.lookup(arg.name)
        values = [getattr(a.parent, "value", None) for a in assignments if isinstance(a, nodes.AssignName)]
        call = values[0] if len(values) == 1 else None
    if not isinstance(call, nodes.Call) or model_flow.callee_name(call) not in BNB_CONFIGS:
        return None
    flags = {}
    for key in ("load_in_4bit", "load_in_8bit"):
        keyword = infer.argument(call, key)
        value = static_values.evaluate(keyword) if keyword is not None else None
        if keyword is not None and value is None:
            return None
        flags[key] = value is not None and value.value is True
    if flags["load_in_8bit"]:
        return "int8"
    if not flags["load_in_4bit"]:
        return None
    kind = infer.argument(call, "bnb_4bit_quant_type")
    if kind is None:
        return "fp4"  # bitsandbytes' default 4-bit type
    value = static_values.evaluate(kind)
    return value.value if value is not None and value.value in ("nf4", "fp4") else None


def _framework_trainer(dotted: str) -> bool:
    """A Hugging Face / TRL ``...Trainer`` class (the framework table's ``TRAINER_PACKAGES``):
    it trains the model it is given in ``.train()``."""
    return frameworks.trainer_meaning(dotted) is not None


def _shown(node: nodes.NodeNG, limit: int = 60) -> str:
    """An expression for a one-line report, cut at ``limit`` characters."""
    try:
        text = " ".join(node.as_string().split())
    except (AttributeError, RecursionError, TypeError, ValueError):
        text = type(node).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass
class _Candidate:
    node: nodes.Call
    name: str
    spec: Optional[ModelSpec] = None
    params: Optional[int] = None
    names: Set[str] = field(default_factory=set)
    trained: bool = False
    quantized: bool = False
    #: ``from_pretrained``/``pipeline`` keywords, applied only to the chosen model.
    options: Dict[str, nodes.NodeNG] = field(default_factory=dict)
    #: the class ``from_pretrained`` is called on (``BertForMaskedLM``), when it is one
    model_class: Optional[str] = None
    #: bitsandbytes storage of the weights (``nf4``, ``fp4``, ``int8``) and where it is said
    quantization: Optional[Tuple[str, nodes.NodeNG]] = None


@dataclass
class _Found:
    value: Any
    node: nodes.NodeNG


class _Reader:
    def __init__(self, module: nodes.Module, filename: str) -> None:
        self.module = module
        self.filename = filename
        self.calls: List[nodes.Call] = list(module.nodes_of_class(nodes.Call))
        self.fields: Dict[str, Any] = {}
        self.sources: Dict[str, str] = {}
        self.unknown: Set[str] = set()
        self.unread: Dict[str, str] = {}
        self.upper: Set[str] = set()
        self.notes: List[str] = []
        self.model_names: Set[str] = set()
        self.model_node: Optional[nodes.Call] = None
        self.pretrained: Optional[_Candidate] = None
        self._cast_found = False
        self.hf_args: Optional[nodes.Call] = None
        self.hf_args_opaque = False

    # ------------------------------------------------------------------ recording

    def source(self, node: nodes.NodeNG) -> str:
        root = node.root()
        path = getattr(root, "file", None) or self.filename
        return "{}:{}".format(os.path.basename(str(path)), getattr(node, "lineno", None) or 1)

    def set(self, name: str, value: Any, node: nodes.NodeNG) -> None:
        self.fields[name] = value
        self.sources[name] = self.source(node)
        self.unknown.discard(name)

    def cannot_read(self, name: str, what: str, node: Optional[nodes.NodeNG] = None) -> None:
        """``name`` stays unknown; ``what`` (and the line of ``node``) says what held it."""
        self.unknown.add(name)
        shown = what if node is None else f"{what} at {self.source(node)}"
        self.unread.setdefault(name, shown)

    def set_resolved(self, name: str, found: Optional[Resolved]) -> bool:
        if found is None:
            self.unknown.add(name)
            return False
        self.set(name, found.value, found.node)
        return True

    # ---------------------------------------------------------------------- read

    def read(self) -> RunReading:
        self._hf_training_arguments()
        candidate = self._model()
        self._training_mode()
        self._optimizer()
        self._precision()
        self._batch_size()
        self._sequence_and_image()
        self._checkpointing_and_attention()
        self._accumulation()
        self._sharding()
        self._lora()
        self._frozen()
        run = self._run()
        placement = self._placement()
        return RunReading(
            on_gpu=placement,
            run=run,
            model_node=candidate.node if candidate is not None else None,
            model_name=candidate.name if candidate is not None else None,
            unknown=frozenset(self.unknown),
            upper_bounds=frozenset(self.upper),
            notes=tuple(self.notes),
            unread=self._unread(run),
        )

    def _unread(self, run: RunSpec) -> Dict[str, str]:
        """What could not be read, for the fields a report prices (``UNREAD_FIELDS``): the
        expression recorded where the reader gave up, else that the file does not state it."""
        found: Dict[str, str] = {}
        for name in UNREAD_FIELDS:
            if name in self.sources or (name == "model" and (run.model is not None or run.params is not None)):
                continue
            if name in self.unread:
                found[name] = self.unread[name]
            elif name in self.unknown:
                found[name] = "its value in the file could not be resolved"
            elif name == "model" or (name in ("batch_size",) and run.training):
                found[name] = "not stated in the file"
        return found

    def _run(self) -> RunSpec:
        kwargs = {k: v for k, v in self.fields.items() if k in RunSpec.__dataclass_fields__}
        run = RunSpec(sources=dict(self.sources), **kwargs)
        try:
            run.check()
        except RunSpecError as err:  # a value the script could not run with: drop it
            self.notes.append(str(err))
            for name in ("batch_size", "seq_len", "image_size", "max_new_tokens", "grad_accum_steps", "lora_rank"):
                value = getattr(run, name)
                if value is not None and (not isinstance(value, int) or value <= 0):
                    default = RunSpec.__dataclass_fields__[name].default
                    run = run.replace(**{name: default})
                    run.sources.pop(name, None)
                    self.unknown.add(name)
        return run

    # --------------------------------------------------------------------- model

    def _model(self) -> Optional[_Candidate]:
        candidates = [c for c in (self._candidate(call) for call in self.calls) if c is not None]
        if not candidates:
            built = self._optimized_model()
            if built is not None:
                self.cannot_read("model", f"{_shown(built)}: parameter count not known", built)
            else:
                self.cannot_read("model", "no model built in the file (from_pretrained, a torchvision or timm "
                                          "name, an nn.Module class)")
            return None
        for candidate in candidates:
            candidate.names = self._flow_names(candidate.node)
        optimizers = [c for c in self.calls if self._optimizer_kind(c) is not None]
        for candidate in candidates:
            candidate.trained = any(self._tied(opt, candidate) for opt in optimizers) or self._given_to_trainer(
                candidate)
        trained = [c for c in candidates if c.trained] or candidates
        known = [c for c in trained if _size(c) is not None]
        chosen = max(known, key=lambda c: _size(c) or 0) if known else trained[0]
        alternatives = [c for c in trained if c.names & chosen.names]
        if len(alternatives) > 1:
            # the same name bound to several models (branches on a flag): the run uses one
            # of them, so the smallest is the bound, and an unknown one leaves it unknown
            if any(_size(c) is None for c in alternatives):
                chosen = next(c for c in alternatives if _size(c) is None)
                self.notes.append("several models may be bound to {}; one of them is not counted".format(
                    ", ".join(sorted(chosen.names))))
            else:
                chosen = min(alternatives, key=lambda c: _size(c) or 0)
        self.model_names = chosen.names
        self.model_node = chosen.node
        line = chosen.node
        if chosen.spec is not None:
            self.set("model", chosen.spec, line)
            task = task_of_class(chosen.model_class, chosen.spec.kind) if chosen.model_class else None
            if task is not None:
                # the class says which head the model carries: an LM head (*ForCausalLM), an
                # encoder's masked-LM head (BertForMaskedLM), a classifier (*ForSequenceClassification)
                # or none (AutoModel, LlamaModel)
                self.set("task", task, line)
                self.set("lm_head", task in VOCABULARY_TASKS, line)
            elif chosen.spec.kind == "encoder" and chosen.model_class is not None:
                # another task head (BertForMultipleChoice): not one over the vocabulary
                self.set("lm_head", bool(MASKED_LM_CLASS.search(chosen.model_class)), line)
            if chosen.params is not None:
                self.set("params", chosen.params, line)
        elif chosen.params is not None:
            self.set("params", chosen.params, line)
            definition = next((d for d in self.module.body if getattr(d, "name", None) == chosen.name), line)
            self.set("model_label", chosen.name, definition)
        else:
            self.cannot_read("model", f"{_shown(line)}: parameter count not known", line)
            self.notes.append(f"model {chosen.name} at {self.source(line)}: parameter count not known")
        if chosen.quantized:
            self.unknown.add("weights_layout")
        if chosen.quantization is not None:
            self.set("quantization", chosen.quantization[0], chosen.quantization[1])
        if chosen.options.get("pretrained") is not None:
            self._apply_pretrained_options(chosen)
        return chosen

    def _optimized_model(self) -> Optional[nodes.NodeNG]:
        """The expression that builds the model an optimizer trains (``model =
        Net(size).cuda()`` for ``SGD(model.parameters())``), without its device and dtype calls;
        None when no optimizer names one. Only said in the report: nothing is counted from it."""
        for call in self.calls:
            if self._optimizer_kind(call) is None or not call.args:
                continue
            params = call.args[0]
            if not (isinstance(params, nodes.Call) and isinstance(params.func, nodes.Attribute)
                    and params.func.attrname == "parameters" and isinstance(params.func.expr, nodes.Name)):
                continue
            _, assignments = params.func.expr.lookup(params.func.expr.name)
            for target in assignments:
                value = getattr(target.parent, "value", None)
                if isinstance(target, nodes.AssignName) and isinstance(value, nodes.Call):
                    while (isinstance(value, nodes.Call) and isinstance(value.func, nodes.Attribute)
                           and value.func.attrname in ("cuda", "to", "half", "bfloat16", "float", "cpu")
                           and isinstance(value.func.expr, nodes.Call)):
                        value = value.func.expr
                    return value
        return None

    def _candidate(self, call: nodes.Call) -> Optional[_Candidate]:
        func = call.func
        if model_flow.inside_module_class(call):
            return None  # a layer of a model, not a model
        found = self._candidate_kind(call)
        if found is not None:
            return found
        cls = param_count.resolve_class(func)
        if cls is None and isinstance(func, (nodes.Subscript, nodes.Call)):
            named = param_count.named_callee(func)  # ``MODELS[args.model](...)``, ``models_mae.__dict__[...]``
            if isinstance(named, nodes.ClassDef) and param_count.is_module_class(named):
                cls = named
            elif isinstance(named, nodes.FunctionDef):
                return _Candidate(call, named.name,
                                  params=param_count.count_params(call, external=self._external_params))
        if cls is None:
            factory = model_flow.model_factory(call)
            if factory is None:
                return None
            return _Candidate(call, factory.name, params=param_count.count_params(call, external=self._external_params))
        if cls.qname() == "torch.nn.Sequential" or (
                not cls.qname().startswith("torch.") and param_count.is_module_class(cls)):
            if model_flow.is_passed_to_model(call) or model_flow.returned_from_factory(call):
                return None
            return _Candidate(call, cls.name, params=param_count.count_params(call, external=self._external_params))
        return None

    def _candidate_kind(self, call: nodes.Call) -> Optional[_Candidate]:
        """A catalogue model built by ``call`` (from_pretrained, pipeline, torchvision, timm)."""
        func = call.func
        method = infer.method_name(call)
        if method == "from_pretrained" and isinstance(func, nodes.Attribute):
            owner = infer.dotted_name(func.expr) or func.expr.as_string()
            last = owner.rsplit(".", 1)[-1]
            if not MODEL_CLASS.match(last) or NOT_MODELS.search(last):
                return None
            name = static_values.str_value(infer.argument(call, "pretrained_model_name_or_path", 0))
            candidate = self._catalogue(call, name)
            candidate.model_class = last
            self._pretrained_options(call, candidate)
            return candidate
        dotted = infer.dotted_name(func) if isinstance(func, (nodes.Name, nodes.Attribute)) else None
        if dotted is None and isinstance(func, (nodes.Subscript, nodes.Call)):
            named = param_count.named_callee(func)  # ``models.__dict__[args.arch]``
            dotted = named if isinstance(named, str) else None
        if dotted is not None:
            if dotted in ("transformers.pipeline", "transformers.pipelines.pipeline"):
                return self._pipeline(call)
            if dotted.startswith("torchvision.models."):
                builder = dotted.rsplit(".", 1)[-1]
                if builder == "get_model":
                    name = static_values.str_value(infer.argument(call, "name", 0))
                elif builder[:1].islower() and not builder.startswith("get_"):
                    name = Resolved(builder, call)
                else:
                    return None
                return self._image_model(call, name)
            if dotted in TIMM_FACTORIES:
                return self._image_model(call, static_values.str_value(infer.argument(call, "model_name", 0)))
        return None

    def _external_params(self, call: nodes.Call) -> Optional[int]:
        """Parameters of a catalogue model built inside a hand-written module
        (``self.backbone = AutoModel.from_pretrained("bert-base-uncased")``), for the counter."""
        candidate = self._candidate_kind(call)
        if candidate is None or candidate.quantized:
            return None
        return candidate.params if candidate.params is not None else (
            candidate.spec.params if candidate.spec is not None else None)

    def _catalogue(self, call: nodes.Call, name: Optional[Resolved]) -> _Candidate:
        if name is None:
            self.notes.append(f"model name at {self.source(call)} not resolved")
            return _Candidate(call, call.func.as_string())
        spec = resolve_model(str(name.value))
        if spec is None:
            self.notes.append(f"model '{name.value}' at {self.source(call)} is not in the catalogue")
            return _Candidate(call, str(name.value))
        return _Candidate(call, str(name.value), spec=spec)

    def _pretrained_options(self, call: nodes.Call, candidate: _Candidate) -> None:
        """Note the keywords of a ``from_pretrained``/``pipeline`` call on its candidate."""
        candidate.options["pretrained"] = call
        for key in ("load_in_8bit", "load_in_4bit", "quantization_config", "device_map"):
            arg = infer.argument(call, key)
            if arg is None:
                continue
            value = static_values.evaluate(arg)
            if key == "device_map":
                split = value is None or isinstance(value.value, ConfigDict) or value.value in (
                    "auto", "balanced", "balanced_low_0", "sequential")
                if split:
                    candidate.quantized = True
                    self.notes.append(f"device_map at {self.source(arg)} may split the model: not priced")
            elif value is not None and value.value in (False, None):
                continue
            elif key != "quantization_config" and value is not None and value.value is True:
                # transformers' load_in_4bit alone: bitsandbytes' default 4-bit type, fp4
                candidate.quantization = ("int8" if key == "load_in_8bit" else "fp4", arg)
            elif key == "quantization_config" and _bnb_mode(arg) is not None:
                candidate.quantization = (_bnb_mode(arg) or "", arg)
            else:
                candidate.quantized = True
                self.notes.append(f"quantized weights at {self.source(arg)}: not priced")
        for key in ("attn_implementation", "torch_dtype", "dtype"):
            arg = infer.argument(call, key)
            if arg is not None:
                candidate.options[key] = arg

    def _apply_pretrained_options(self, chosen: _Candidate) -> None:
        attn = chosen.options.get("attn_implementation")
        if attn is not None:
            value = static_values.str_value(attn)
            if value is None:
                self.unknown.add("flash")
            else:
                self.set("flash", value.value != "eager", value.node)
        else:
            self.unknown.add("flash")  # transformers picks SDPA where it can: not known from the file
        self.pretrained = chosen

    def _pipeline(self, call: nodes.Call) -> Optional[_Candidate]:
        name = static_values.str_value(infer.argument(call, "model", 1))
        task = static_values.str_value(infer.argument(call, "task", 0))
        candidate = self._catalogue(call, name)
        self._pretrained_options(call, candidate)
        self.fields["_pipeline"] = (call, task.value if task is not None else None)
        return candidate

    def _image_model(self, call: nodes.Call, name: Optional[Resolved]) -> _Candidate:
        candidate = self._catalogue(call, name)
        spec = candidate.spec
        classes_arg = infer.argument(call, "num_classes")
        if spec is None or classes_arg is None:
            return candidate
        classes = static_values.int_value(classes_arg)
        native = spec.shape.get("num_classes")
        if classes is None:
            self.notes.append(f"num_classes at {self.source(classes_arg)} not resolved; catalogue head used")
            return candidate
        if classes.value != native:
            shape = dict(spec.shape)
            shape["num_classes"] = classes.value
            changed = ModelSpec(spec.key, spec.kind, spec.params, spec.source, shape, spec.aliases)
            counted = count_params(changed)
            if counted is not None:
                candidate.spec = ModelSpec(spec.key, spec.kind, counted, spec.source, shape, spec.aliases)
                candidate.params = counted
            else:
                self.notes.append(f"num_classes={classes.value}: head size not re-counted for {spec.key}")
        return candidate

    def _flow_names(self, node: nodes.NodeNG) -> Set[str]:
        """Names (and ``self.x``) the model built at ``node`` is bound to, through wrappers and
        re-assignments (``model = DDP(model)``, ``model, opt = accelerator.prepare(model, opt)``).

        Read syntactically: a name rebound to something else in another function would be
        conflated; the reader uses these names only to tell which model an optimizer trains.
        """
        names = set(model_flow.assigned_targets(node))
        for _ in range(4):
            grown = set(names)
            for assign in self.module.nodes_of_class(nodes.Assign):
                source = model_flow.strip_wrappers(assign.value)
                for index, root in model_flow.flow_sources(source):
                    if root in names:
                        grown.update(model_flow.target_names(assign.targets, index))
            if grown == names:
                break
            names = grown
        return names

    def _tied(self, optimizer: nodes.Call, candidate: _Candidate) -> bool:
        params = infer.argument(optimizer, "params", 0)
        if params is None:
            return False
        for call in params.nodes_of_class(nodes.Call):
            if infer.method_name(call) in ("parameters", "named_parameters") and isinstance(call.func, nodes.Attribute):
                root = model_flow.root_text(call.func.expr)
                if root in candidate.names:
                    return True
                if root == "self" and model_flow.enclosing_class(call) is model_flow.class_of(candidate.node):
                    return True
        return False

    def _given_to_trainer(self, candidate: _Candidate) -> bool:
        for call in self.calls:
            dotted = model_flow.callee_name(call)
            given: Optional[nodes.NodeNG] = None
            if dotted and _framework_trainer(dotted):
                given = infer.argument(call, "model", 0)
            elif loader_use.runs_trainer(call) and call.args:  # ``trainer.fit(model)``
                given = call.args[0]
            if given is not None and (model_flow.root_text(given) in candidate.names or given is candidate.node):
                return True
        return False

    # ----------------------------------------------------------------- training

    def _training_mode(self) -> None:
        # the rules' answers: a backward or an optimizer step (``training_step.is_step_call``, as
        # TP003/TP004 read them: ``loader_use.file_steps``), or a framework trainer's fit/train
        # (``loader_use.runs_trainer``)
        if loader_use.file_steps(self.module) or any(loader_use.runs_trainer(c) for c in self.calls):
            return
        pipeline = self.fields.get("_pipeline")
        generate = [c for c in self.calls if infer.method_name(c) == "generate"
                    and (not self.model_names or model_flow.root_text(c.func.expr) in self.model_names)]
        cached = [c for c in self.calls if any(kw.arg == "use_cache" and isinstance(kw.value, nodes.Const)
                                               and kw.value.value is True for kw in c.keywords or ())]
        if generate:
            call = generate[0]
            self.set("generation", True, call)
            tokens = infer.argument(call, "max_new_tokens")
            if tokens is not None:
                self.set_resolved("max_new_tokens", static_values.int_value(tokens))
        elif pipeline is not None and pipeline[1] in GENERATION_TASKS:
            self.set("generation", True, pipeline[0])
        elif cached:
            self.set("generation", True, cached[0])
        else:
            self.fields["inference"] = True  # no backward() anywhere: forward passes only
            self.sources["inference"] = os.path.basename(self.filename) + " (no backward)"
            loss = next((c for c in self.calls if self._computes_loss(c)), None)
            if loss is not None:
                self.set("eval_loss", True, loss)

    def _computes_loss(self, call: nodes.Call) -> bool:
        """A loss computed in a run without backward: a functional loss, a call of a loss module
        (resolved, not by name), or the model called with ``labels=`` (Hugging Face computes it)."""
        if models.is_loss_function(call) or kinds.kind(call.func) == kinds.LOSS:
            return True
        labelled = any(kw.arg == "labels" for kw in call.keywords or ())
        return labelled and bool(self.model_names) and model_flow.root_text(call.func) in self.model_names

    # ---------------------------------------------------------------- optimizer

    def _optimizer_kind(self, call: nodes.Call) -> Optional[str]:
        if infer.call_name(call) is None:
            return None
        dotted = model_flow.callee_name(call)
        if dotted in EXTERNAL_OPTIMIZERS:
            return EXTERNAL_OPTIMIZERS[dotted]
        if self._built_kind(call) == kinds.OPTIMIZER:
            return TORCH_OPTIMIZERS.get(model_flow.class_qname(call) or "", "?")
        return None

    @staticmethod
    def _built_kind(call: nodes.Call) -> str:
        """What a class instantiation builds (``kinds.kind``); ``kinds.UNKNOWN`` for any other call
        (a cheap filter: the reader asks this of every call of the file)."""
        return kinds.kind(call) if model_flow.class_qname(call) is not None else kinds.UNKNOWN

    def _optimizer(self) -> None:
        if not self._training():
            return
        found = [(c, self._optimizer_kind(c)) for c in self.calls]
        optimizers = [(c, k) for c, k in found if k is not None]
        tied = [(c, k) for c, k in optimizers if model_flow.root_names(c) & self.model_names] or optimizers
        if not tied:
            if self.hf_args is not None:
                self._hf_optimizer()
            else:
                self.unknown.add("optimizer")
            return
        kinds = {self._refine(c, k) for c, k in tied}
        if len(kinds) != 1 or None in kinds or "?" in kinds:
            self.unknown.add("optimizer")
            return
        call, _ = tied[0]
        self.set("optimizer", kinds.pop(), call)
        if not self._covers_model(call):
            self.unknown.add("optimizer")  # a subset of the parameters: less state than priced
            self.notes.append(f"optimizer at {self.source(call)} may hold only some parameters")
        fused = infer.argument(call, "fused")
        foreach = infer.argument(call, "foreach")
        if fused is not None or foreach is not None:
            f = static_values.evaluate(fused) if fused is not None else None
            e = static_values.evaluate(foreach) if foreach is not None else None
            if (fused is not None and f is None) or (foreach is not None and e is None):
                self.unknown.add("fused_optimizer")
            else:
                value = bool(f and f.value) or (e is not None and e.value is False)
                self.set("fused_optimizer", value, (fused or foreach))

    def _refine(self, call: nodes.Call, kind: Optional[str]) -> Optional[str]:
        if kind == "sgd":
            momentum = infer.argument(call, "momentum", 2)
            if momentum is None:
                return "sgd"
            value = static_values.evaluate(momentum)
            if value is None:
                return None
            return "sgd-momentum" if value.value else "sgd"
        if kind == "rmsprop":
            momentum = infer.argument(call, "momentum")
            value = static_values.evaluate(momentum) if momentum is not None else Resolved(0, call)
            return None if value is None or value.value else "rmsprop"
        return kind

    def _covers_model(self, call: nodes.Call) -> bool:
        """The optimizer holds every parameter of the model: its params are ``model.parameters()``
        (``model.module``, ``self`` in a Lightning module, ``filter(...)`` and
        ``named_parameters()`` groups included), not a sub-module's."""
        params = infer.argument(call, "params", 0)
        if params is None:
            return False
        holders: List[nodes.NodeNG] = [params]
        if isinstance(params, nodes.Name):
            holders = list(dataflow.assigned_values(params) or [])
        receivers = [c.func.expr for h in holders for c in h.nodes_of_class(nodes.Call)
                     if infer.method_name(c) in ("parameters", "named_parameters")
                     and isinstance(c.func, nodes.Attribute)]
        if not receivers:
            return False
        for receiver in receivers:
            base = model_flow.strip_wrappers(receiver)
            if isinstance(base, nodes.Attribute) and base.attrname == "module":
                base = base.expr
            text = base.as_string() if isinstance(base, (nodes.Name, nodes.Attribute)) else ""
            if text not in self.model_names and text != "self":
                return False
        return True

    def _hf_optimizer(self) -> None:
        call = self.hf_args
        assert call is not None
        optim = infer.argument(call, "optim")
        if optim is None:
            if self.hf_args_opaque:
                self.unknown.add("optimizer")
            else:
                self.set("optimizer", "adamw", call)  # transformers' default is an AdamW
                self.unknown.add("fused_optimizer")
            return
        value = static_values.str_value(optim)
        kind = HF_OPTIM.get(str(value.value).lower()) if value is not None else None
        if kind is None:
            self.unknown.add("optimizer")
        else:
            self.set("optimizer", kind, optim)
            if value is not None and "fused" in str(value.value):
                self.set("fused_optimizer", True, optim)

    def _training(self) -> bool:
        return not (self.fields.get("inference") or self.fields.get("generation"))

    # ---------------------------------------------------------------- precision

    def _hf_training_arguments(self) -> None:
        for call in self.calls:
            dotted = model_flow.callee_name(call)
            if dotted is None:
                continue
            if HF_ARGUMENTS.match(dotted) and self.hf_args is None:
                self.hf_args = call
                self.hf_args_opaque = self.hf_args_opaque or static_values.has_opaque_arguments(call)
            elif dotted.endswith("HfArgumentParser"):
                self.hf_args_opaque = True  # the command line sets the training arguments

    def _precision(self) -> None:
        weights: Any = "absent"
        stated = True
        if self.pretrained is not None:
            dtype = self.pretrained.options.get("torch_dtype") or self.pretrained.options.get("dtype")
            if dtype is None:
                stated = False  # transformers 5 loads a checkpoint in its own dtype, 4 in fp32
            else:
                kind = model_flow.dtype_kind(dtype)
                weights = _Found(kind, dtype) if kind is not None else None
        self._read_precision(weights)
        if not stated and "precision" not in self.unknown and not self._cast_found:
            self.unknown.add("precision")

    def _read_precision(self, weights: Any) -> None:
        self._cast_found = False
        half = self._model_cast()
        if isinstance(half, _Found):
            self._cast_found = True
        autocast = self._autocast()
        framework = self._framework_precision()
        if half == "unknown" or weights is None or autocast == "unknown" or framework == "unknown":
            self.unknown.add("precision")
            return
        if isinstance(half, _Found):
            self.set("precision", half.value, half.node)
            return
        if isinstance(weights, _Found) and weights.value != "fp32":
            self.set("precision", weights.value, weights.node)
            return
        if isinstance(autocast, _Found):
            self.set("precision", "amp", autocast.node)
            return
        if isinstance(framework, _Found):
            self.set("precision", framework.value, framework.node)
            return
        if isinstance(weights, _Found):
            self.set("precision", "fp32", weights.node)

    def _model_cast(self) -> Any:
        """``.half()``/``.bfloat16()``/``.to(dtype)`` on the model: _Found, "unknown" or None."""
        found: Any = None
        for call in self.calls:
            method = infer.method_name(call)
            if method not in ("half", "bfloat16", "to", "float"):
                continue
            assert isinstance(call.func, nodes.Attribute)
            if not self._is_model_expr(call.func.expr):
                continue
            if method == "half":
                kind: Optional[str] = "fp16"
            elif method == "bfloat16":
                kind = "bf16"
            elif method == "float":
                kind = "fp32"
            else:
                dtype = infer.argument(call, "dtype")
                if dtype is None:
                    dtype = next((a for a in call.args if model_flow.looks_like_dtype(a)), None)
                if dtype is None:
                    continue
                kind = model_flow.dtype_kind(dtype)
                if kind is None:
                    return "unknown"
            if found is not None and found.value != kind:
                return "unknown"
            found = _Found(kind, call)
        if found is not None and found.value == "fp32":
            return None
        return found

    def _is_model_expr(self, expr: nodes.NodeNG) -> bool:
        base = model_flow.strip_wrappers(expr)
        if isinstance(base, nodes.Call):
            return any(base is c or c in base.nodes_of_class(nodes.Call) for c in self._candidate_nodes())
        return model_flow.root_text(expr) in self.model_names

    def _candidate_nodes(self) -> List[nodes.Call]:
        return [self.model_node] if self.model_node is not None else []

    def _autocast(self) -> Any:
        found: Any = None
        for call in self.calls:
            name = model_flow.class_qname(call)
            if name in AUTOCAST_CONTEXTS:
                enabled = infer.argument(call, "enabled")
                if enabled is not None:
                    value = static_values.evaluate(enabled)
                    if value is None:
                        return "unknown"
                    if not value.value:
                        continue
                device = static_values.str_value(infer.argument(call, "device_type", 0))
                if name == "torch.amp.autocast" and device is not None and device.value == "cpu":
                    continue
                found = found or _Found("amp", call)
            elif self._built_kind(call) == kinds.SCALER:
                enabled = infer.argument(call, "enabled")
                if enabled is not None:
                    value = static_values.evaluate(enabled)
                    if value is None:
                        return "unknown"
                    if not value.value:
                        continue
                found = found or _Found("amp", call)
        return found

    def _framework_precision(self) -> Any:
        found: Any = None
        if self.hf_args is not None:
            for key in ("fp16", "bf16"):
                arg = infer.argument(self.hf_args, key)
                if arg is None:
                    continue
                value = static_values.evaluate(arg)
                if value is None:
                    return "unknown"
                if value.value:
                    found = _Found("amp", arg)
            if found is None and self.hf_args_opaque:
                return "unknown"
        elif self.hf_args_opaque:
            return "unknown"
        for call in self.calls:
            dotted = model_flow.callee_name(call)
            if dotted in ("accelerate.Accelerator", "accelerate.accelerator.Accelerator"):
                arg = infer.argument(call, "mixed_precision")
                value = static_values.str_value(arg) if arg is not None else None
                if value is None:
                    return "unknown"  # `accelerate launch` and its config decide
                found = _Found("fp32" if value.value == "no" else "amp", arg)
            elif dotted and (dotted.endswith("lightning.Trainer") or dotted.endswith("pytorch.Trainer")
                             or dotted == "lightning.pytorch.trainer.Trainer" or _is_fabric(dotted)):
                arg = infer.argument(call, "precision")
                if arg is None:
                    found = found or _Found("fp32", call)
                    continue
                value = static_values.evaluate(arg)
                kind = LIGHTNING_PRECISION.get(str(value.value)) if value is not None else None
                if kind is None:
                    return "unknown"
                found = _Found(kind, arg)
        return found

    # --------------------------------------------------------------- batch size

    def _batch_size(self) -> None:
        if self.hf_args is not None:
            key = "per_device_train_batch_size" if self._training() else "per_device_eval_batch_size"
            arg = infer.argument(self.hf_args, key)
            if arg is not None:
                self.set_resolved("batch_size", static_values.int_value(arg))
                return
            if not self.hf_args_opaque:
                self.set("batch_size", 8, self.hf_args)  # the TrainingArguments default
                return
        loaders = [c for c in self.calls if self._built_kind(c) == kinds.LOADER]
        pipeline = self.fields.get("_pipeline")
        if not loaders and pipeline is not None:
            names = set(model_flow.assigned_targets(pipeline[0]))
            uses = [c for c in self.calls if isinstance(c.func, nodes.Name) and c.func.name in names]
            sizes = [self._loader_batch(c) for c in uses]
            if uses and all(s is not None for s in sizes) and len({s.value for s in sizes if s}) == 1:
                first = sizes[0]
                assert first is not None
                self.set("batch_size", first.value, first.node)
                return
        if not loaders:
            self.unknown.add("batch_size")
            return
        chosen = self._iterated_loaders(loaders) or loaders
        sizes = [self._loader_batch(c) for c in chosen]
        if any(s is None for s in sizes):
            loader = next(c for c, s in zip(chosen, sizes) if s is None)
            self.cannot_read("batch_size", f"the batch size of {_shown(loader)}", loader)
            return
        values = {s.value for s in sizes if s is not None}
        if len(values) != 1:
            self.unknown.add("batch_size")
            self.notes.append("several DataLoaders with different batch sizes; none is known to be the one trained on")
            return
        first = sizes[0]
        assert first is not None
        self.set("batch_size", first.value, first.node)

    def _loader_batch(self, call: nodes.Call) -> Optional[Resolved]:
        arg = infer.argument(call, "batch_size", 1)
        if arg is None:
            if infer.argument(call, "batch_sampler") is not None or static_values.has_opaque_arguments(call):
                return None
            return Resolved(1, call)  # DataLoader's default
        return static_values.int_value(arg)

    def _iterated_loaders(self, loaders: List[nodes.Call]) -> List[nodes.Call]:
        """The loaders a training loop (one that calls backward) iterates or a training call is handed,
        as the rules read them (``analysis.training.loader_use``); with no training, those any loop iterates;
        Lightning's ``train_dataloader`` hook."""
        training = self._training()
        found: List[nodes.Call] = []
        for loader in loaders:
            uses = loader_use.uses_of(loader, through_prepare=True)
            trained = bool(uses.training_loops) or uses.handed_to_training
            if trained or (not training and uses.other_loops):
                found.append(loader)
        if not found and training:
            for loader in loaders:
                scope = loader.scope()
                if isinstance(scope, nodes.FunctionDef) and scope.name == "train_dataloader":
                    found.append(loader)
        return found

    # ---------------------------------------------------------- sequence, image

    def _sequence_and_image(self) -> None:
        self._sequence()
        self._image()

    def _sequence(self) -> None:
        exact: List[Resolved] = []
        bounds: List[Resolved] = []
        unresolved = False
        for call in self.calls:
            for kw in call.keywords or ():
                if kw.arg == "max_length" and self._is_tokenizer_call(call):
                    value = static_values.int_value(kw.value)
                    padding = static_values.str_value(infer.argument(call, "padding"))
                    if value is None:
                        unresolved = True
                    elif padding is not None and padding.value == "max_length":
                        exact.append(value)
                    else:
                        bounds.append(value)
                elif kw.arg in ("block_size", "max_seq_length"):
                    value = static_values.int_value(kw.value)
                    packing = static_values.evaluate(infer.argument(call, "packing"))
                    if value is None:
                        unresolved = True
                    elif kw.arg == "block_size" or (packing is not None and packing.value is True):
                        exact.append(value)
                    else:
                        bounds.append(value)
        for assign in self.module.nodes_of_class(nodes.Assign):
            for target in assign.targets:
                if isinstance(target, nodes.AssignName) and target.name == "block_size":
                    value = static_values.int_value(assign.value)
                    if isinstance(target.scope(), nodes.Module) and static_values.rewritten_later(target):
                        unresolved = True
                    elif value is not None:
                        exact.append(value)
        if self.hf_args is not None:
            arg = infer.argument(self.hf_args, "max_seq_length") or infer.argument(
                self.hf_args, "max_length")
            if arg is not None:
                value = static_values.int_value(arg)
                packing = static_values.evaluate(infer.argument(self.hf_args, "packing"))
                if value is None:
                    unresolved = True
                elif packing is not None and packing.value is True:
                    exact.append(value)
                else:
                    bounds.append(value)
        chosen = exact or bounds
        if not chosen:
            if unresolved:
                self.unknown.add("seq_len")
            return
        values = {v.value for v in chosen}
        if len(values) != 1:
            self.unknown.add("seq_len")
            self.notes.append("several sequence lengths: {}".format(sorted(values)))
            return
        self.set("seq_len", chosen[0].value, chosen[0].node)
        if not exact:
            self.upper.add("seq_len")  # truncation to max_length: sequences may be shorter

    def _is_tokenizer_call(self, call: nodes.Call) -> bool:
        """A tokenizer call: its receiver is bound to ``*Tokenizer*.from_pretrained(...)``; a
        name containing "tokeniz" stands in when that binding cannot be read (a parameter)."""
        func = call.func
        receiver: nodes.NodeNG = func
        if isinstance(func, nodes.Attribute) and func.attrname in TOKENIZER_METHODS:
            receiver = func.expr
        if not isinstance(receiver, (nodes.Name, nodes.Attribute)):
            return False
        values = dataflow.assigned_values(receiver)
        if values:
            for value in values:
                if isinstance(value, nodes.Call) and infer.method_name(value) == "from_pretrained":
                    owner = value.func.expr.as_string() if isinstance(value.func, nodes.Attribute) else ""
                    if "Tokenizer" in owner or "Processor" in owner:
                        return True
            return False
        return "tokeniz" in receiver.as_string().lower()

    def _image(self) -> None:
        crops: List[Resolved] = []
        resizes: List[Resolved] = []
        unresolved = False
        for call in self.calls:
            dotted = model_flow.callee_name(call)
            if not dotted or not dotted.startswith("torchvision.transforms"):
                continue
            last = dotted.rsplit(".", 1)[-1]
            if last not in CROPS and last not in RESIZES:
                continue
            value = static_values.evaluate(infer.argument(call, "size", 0))
            side = _side(value)
            if side is None:
                unresolved = True
                continue
            (crops if last in CROPS else resizes).append(side)
        chosen = crops or resizes
        if not chosen:
            if unresolved:
                self.unknown.add("image_size")
            return
        smallest = min(chosen, key=lambda r: r.value)
        if len({r.value for r in chosen}) > 1:
            self.notes.append("several image sizes {}; the smallest is used".format(sorted({r.value for r in chosen})))
        self.set("image_size", smallest.value, smallest.node)  # Resize(n) fixes the shorter side

    # ------------------------------------------------- checkpointing, attention

    def _checkpointing_and_attention(self) -> None:
        for call in self.calls:
            method = infer.method_name(call)
            if method == "gradient_checkpointing_enable":
                self.set("checkpointing", True, call)
            elif infer.callee_qname(call) in ("torch.utils.checkpoint.checkpoint",
                                              "torch.utils.checkpoint.checkpoint_sequential"):
                self.set("checkpointing", True, call)
            elif infer.callee_qname(call) == "torch.nn.functional.scaled_dot_product_attention":
                if "flash" not in self.fields:
                    self.set("flash", True, call)
        if self.hf_args is not None and "checkpointing" not in self.fields:
            arg = infer.argument(self.hf_args, "gradient_checkpointing")
            if arg is not None:
                value = static_values.evaluate(arg)
                if value is None:
                    self.unknown.add("checkpointing")
                else:
                    self.set("checkpointing", bool(value.value), arg)
            elif self.hf_args_opaque:
                self.unknown.add("checkpointing")
        elif self.hf_args_opaque and "checkpointing" not in self.fields:
            self.unknown.add("checkpointing")

    # -------------------------------------------------------------- accumulation

    def _accumulation(self) -> None:
        args = [self.hf_args] if self.hf_args is not None else []
        for call in self.calls:
            dotted = model_flow.callee_name(call)
            if dotted and dotted.endswith("Accelerator"):
                args.append(call)
        for call in args:
            arg = infer.argument(call, "gradient_accumulation_steps")
            if arg is not None and self.set_resolved("grad_accum_steps", static_values.int_value(arg)):
                return
        for found in accumulation.accumulations(self.module):
            # the gate of a step taken every N iterations, or the count of a micro-batch loop
            steps = static_values.int_value(found.divisor) if found.divisor is not None else None
            if steps is not None:
                self.set("grad_accum_steps", steps.value, steps.node)
            else:
                where = found.divisor or found.scope
                self.cannot_read("grad_accum_steps", f"the accumulation over {found.text}", where)
            return

    # ------------------------------------------------------------------- sharding

    def _sharding(self) -> None:
        for call in self.calls:
            name = model_flow.class_qname(call) or infer.callee_qname(call)
            dotted = model_flow.callee_name(call)
            if name in MODEL_WRAPPERS and model_flow.class_qname(call) is None:
                continue
            if name in MODEL_WRAPPERS:
                if name.endswith("DistributedDataParallel"):
                    self.set("sharding", "ddp", call)
                elif name.endswith("FullyShardedDataParallel"):
                    self._fsdp(call)
            elif name == "torch.distributed.fsdp.fully_shard" or (dotted and dotted.endswith(".fully_shard")):
                self.set("sharding", "fsdp", call)
                self.unknown.add("world_size")
            elif dotted in ("deepspeed.initialize",):
                config = infer.argument(call, "config") or infer.argument(call, "config_params")
                self._deepspeed(config, call)
            elif dotted and dotted.endswith("DeepSpeedPlugin"):
                self._deepspeed_plugin(call)
            elif dotted and (dotted.endswith(("lightning.Trainer", "pytorch.Trainer")) or _is_fabric(dotted)):
                self._lightning_strategy(call)
            elif dotted in ("accelerate.Accelerator", "accelerate.accelerator.Accelerator"):
                if infer.argument(call, "deepspeed_plugin") is None and infer.argument(
                        call, "fsdp_plugin") is None:
                    self.cannot_read("sharding", f"{_shown(call)} leaves sharding to `accelerate launch` and its "
                                                 "config", call)
        if self.hf_args is not None:
            ds = infer.argument(self.hf_args, "deepspeed")
            if ds is not None:
                self._deepspeed(ds, self.hf_args)
            fsdp = infer.argument(self.hf_args, "fsdp")
            if fsdp is not None:
                value = static_values.evaluate(fsdp)
                if value is None:
                    self.unknown.add("sharding")
                elif value.value:
                    text = str(value.value)
                    kind = "zero-2" if "shard_grad_op" in text else ("fsdp" if "full_shard" in text else None)
                    if kind is None or "offload" in text or "hybrid" in text:
                        self.unknown.add("sharding")
                    else:
                        self.set("sharding", kind, fsdp)
                        self.unknown.add("world_size")
            elif self.hf_args_opaque:
                self.unknown.add("sharding")
        elif self.hf_args_opaque:
            self.unknown.add("sharding")

    def _lightning_strategy(self, call: nodes.Call) -> None:
        """``Trainer`` / ``Fabric(strategy=..., devices=..., num_nodes=...)``: a strategy name, or a
        strategy object (``FSDPStrategy(...)``, ``DDPStrategy()``, ``DeepSpeedStrategy(stage=N)``)
        written in place or bound to a name (assignments in branches that known tests rule out
        left aside); the devices times the nodes are the world size."""
        strategy = infer.argument(call, "strategy")
        kind: Optional[str] = "none"
        where: nodes.NodeNG = call
        if strategy is not None:
            built = static_values.live_value(strategy)
            value = static_values.str_value(strategy)
            if value is not None:
                kind, where = LIGHTNING_STRATEGY.get(str(value.value)), value.node
            elif isinstance(built, nodes.Call):
                kind, where = self._strategy_object(built), built
            else:
                kind = None
            if kind is None:
                self.cannot_read("sharding", f"the strategy {_shown(strategy)}", strategy)
                return
            self.set("sharding", kind, where)
        count = self._devices(call)
        if count is not None:
            self.set("world_size", count.value, count.node)
        elif kind in ("fsdp", "zero-1", "zero-2", "zero-3") or strategy is None:
            self.unknown.add("world_size")

    def _strategy_object(self, built: nodes.Call) -> Optional[str]:
        name = (model_flow.callee_name(built) or "").rsplit(".", 1)[-1]
        if name == "FSDPStrategy":
            offload = infer.argument(built, "cpu_offload")
            value = static_values.evaluate(offload) if offload is not None else None
            if offload is not None and (value is None or value.value not in (False, None)):
                return None  # parameters offloaded to the host: not priced
            policy = infer.argument(built, "activation_checkpointing_policy") or infer.argument(
                built, "activation_checkpointing")
            if policy is not None:
                checked = static_values.evaluate(policy)
                if checked is None or checked.value not in (None, False):
                    self.set("checkpointing", True, policy)
            member = infer.argument(built, "sharding_strategy")
            if member is None:
                return "fsdp"
            text = static_values.str_value(member)
            label = text.value if text is not None else getattr(member, "attrname", "")
            return FSDP_STRATEGIES.get(str(label).upper())
        if name in ("DDPStrategy",):
            return "ddp"
        if name == "DeepSpeedStrategy":
            stage = static_values.int_value(infer.argument(built, "stage", 1))
            if stage is None or stage.value not in (1, 2, 3):
                return None
            for key in ("offload_optimizer", "offload_parameters"):
                flag = infer.argument(built, key)
                value = static_values.evaluate(flag) if flag is not None else None
                if flag is not None and (value is None or value.value is not False):
                    return None
            return f"zero-{stage.value}"
        if name == "SingleDeviceStrategy":
            return "none"
        return None

    def _devices(self, call: nodes.Call) -> Optional[Resolved]:
        """``devices=N`` times ``num_nodes=M`` of a Trainer / Fabric, when both are known integers."""
        devices = infer.argument(call, "devices")
        if devices is None:
            return None
        count = static_values.int_value(devices)
        if count is None or isinstance(count.value, bool) or count.value < 1:
            return None
        nodes_arg = infer.argument(call, "num_nodes")
        machines = static_values.int_value(nodes_arg) if nodes_arg is not None else Resolved(1, call)
        if machines is None or machines.value < 1:
            return None
        return Resolved(count.value * machines.value, count.node)

    def _fsdp(self, call: nodes.Call) -> None:
        strategy = infer.argument(call, "sharding_strategy", 2)
        kind: Optional[str] = "fsdp"
        if strategy is not None:
            member = strategy.attrname if isinstance(strategy, nodes.Attribute) else None
            kind = FSDP_STRATEGIES.get(member or "")
        offload = infer.argument(call, "cpu_offload", 3)
        if offload is not None and not (isinstance(offload, nodes.Const) and offload.value is None):
            kind = None  # parameters offloaded to the host: not priced
        if kind is None:
            self.unknown.add("sharding")
            return
        self.set("sharding", kind, call)
        if kind != "ddp":
            self.unknown.add("world_size")

    def _deepspeed(self, config: Optional[nodes.NodeNG], call: nodes.Call) -> None:
        if config is None:
            self.unknown.add("sharding")
            return
        value = static_values.evaluate(config)
        data: Any = None
        where = config
        if value is not None and isinstance(value.value, ConfigDict):
            data = value.value.plain()
            where = value.node
        elif value is not None and isinstance(value.value, str):
            data = self._read_json(value.value)
            if data is None:
                self.notes.append(f"DeepSpeed config {value.value!r} not found or not JSON")
        if not isinstance(data, dict):
            self.unknown.add("sharding")
            return
        zero = data.get("zero_optimization", {})
        stage = zero.get("stage", 0) if isinstance(zero, dict) else None
        if stage not in (0, 1, 2, 3):
            self.unknown.add("sharding")
            return
        self.set("sharding", "ddp" if stage == 0 else f"zero-{stage}", where)
        if stage:
            self.unknown.add("world_size")
        optimizer_offload = _offload_device(zero.get("offload_optimizer"))
        param_offload = _offload_device(zero.get("offload_param"))
        if optimizer_offload is None or param_offload is None:
            self.unknown.add("sharding")
        else:
            if optimizer_offload:
                self.set("offload_optimizer", True, where)
            if param_offload:
                self.unknown.add("weights_layout")  # parameters offloaded to the host: not priced
        micro = data.get("train_micro_batch_size_per_gpu")
        if isinstance(micro, int) and not isinstance(micro, bool):
            self.set("batch_size", micro, where)
        accum = data.get("gradient_accumulation_steps")
        if isinstance(accum, int) and not isinstance(accum, bool):
            self.set("grad_accum_steps", accum, where)
        for key, kind in (("fp16", "fp16"), ("bf16", "bf16")):
            section = data.get(key)
            if isinstance(section, dict):
                enabled = section.get("enabled")
                if enabled is True:
                    self.set("precision", kind, where)
                elif enabled not in (False, None):
                    self.unknown.add("precision")

    def _read_json(self, name: str) -> Any:
        """The JSON file a script names, read beside the script (then the working folder).
        Reading data is not executing code."""
        here = os.path.dirname(os.path.abspath(str(getattr(self.module, "file", None) or self.filename)))
        for folder in (here, os.getcwd()):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and os.path.getsize(path) < 1_000_000:
                try:
                    with open(path, encoding="utf-8") as handle:
                        return json.load(handle)
                except (OSError, ValueError):
                    return None
        return None

    def _deepspeed_plugin(self, call: nodes.Call) -> None:
        stage = static_values.int_value(infer.argument(call, "zero_stage"))
        if stage is None or stage.value not in (0, 1, 2, 3):
            self.unknown.add("sharding")
            return
        self.set("sharding", "ddp" if stage.value == 0 else f"zero-{stage.value}", stage.node)
        if stage.value:
            self.unknown.add("world_size")
        device = infer.argument(call, "offload_optimizer_device")
        if device is not None:
            value = static_values.str_value(device)
            if value is None:
                self.unknown.add("sharding")
            elif value.value in ("cpu", "nvme"):
                self.set("offload_optimizer", True, device)
        params = infer.argument(call, "offload_param_device")
        if params is not None:
            value = static_values.str_value(params)
            if value is None or value.value not in ("none",):
                self.unknown.add("weights_layout")

    # ------------------------------------------------------------------ placement

    def _placement(self) -> Optional[bool]:
        """Where the model runs: see ``RunReading.on_gpu``."""
        evidence = False
        for call in self.calls:
            method = infer.method_name(call)
            if method == "cpu" and isinstance(call.func, nodes.Attribute) and self._is_model_expr(call.func.expr):
                return False
            if method == "to" and isinstance(call.func, nodes.Attribute) and self._is_model_expr(call.func.expr):
                device = infer.argument(call, "device", 0)
                if device is not None and model_flow.dtype_kind(device) is None:
                    kind = model_flow.device_kind(device)
                    if kind == "cpu":
                        return False
                    evidence = True
            if method in ("cuda", "set_device", "set_default_device") or model_flow.device_kind(call) == "cuda":
                evidence = True
            name = model_flow.class_qname(call)
            dotted = model_flow.callee_name(call)
            if name in MODEL_WRAPPERS or (dotted and (
                    dotted.startswith(("deepspeed.", "accelerate.")) or _framework_trainer(dotted)
                    or dotted.endswith(("lightning.Trainer", "pytorch.Trainer", ".Fabric")))):
                evidence = True
            if self._cpu_framework(call, dotted):
                return False
            for kw in call.keywords or ():
                if kw.arg == "device_map" or (kw.arg == "device" and model_flow.device_kind(kw.value) == "cuda"):
                    evidence = True
        return True if evidence else None

    def _cpu_framework(self, call: nodes.Call, dotted: Optional[str]) -> bool:
        """``Accelerator(cpu=True)``, ``Trainer(accelerator="cpu")``, ``TrainingArguments(use_cpu=True)``."""
        for key in ("cpu", "use_cpu", "no_cuda"):
            arg = infer.argument(call, key)
            if arg is not None and dotted and (dotted.startswith(("accelerate.", "transformers.", "trl."))):
                value = static_values.evaluate(arg)
                if value is not None and value.value is True:
                    return True
        accelerator = infer.argument(call, "accelerator")
        if accelerator is not None and dotted and dotted.endswith(("lightning.Trainer", "pytorch.Trainer", ".Fabric")):
            value = static_values.str_value(accelerator)
            return value is not None and value.value == "cpu"
        return False

    # ----------------------------------------------------------------------- LoRA

    def _lora(self) -> None:
        for call in self.calls:
            dotted = model_flow.callee_name(call)
            if dotted not in ("peft.LoraConfig", "peft.tuners.lora.LoraConfig"):
                continue
            self.set("lora", True, call)
            rank = infer.argument(call, "r")
            if rank is None:
                self.set("lora_rank", 8, call)  # peft's default rank
            else:
                self.set_resolved("lora_rank", static_values.int_value(rank))
            self._lora_dropout(call)
            targets = infer.argument(call, "target_modules")
            value = static_values.evaluate(targets) if targets is not None else None
            names = value.value if value is not None else None
            if isinstance(names, str):
                names = [names]
            if isinstance(names, (list, tuple)) and names and all(isinstance(n, str) for n in names):
                try:
                    parsed = parse_lora_targets(",".join(names))
                except RunSpecError:
                    parsed = ()  # a module name the cost model does not know
                if parsed != ():
                    if parsed is not None:
                        self.set("lora_targets", parsed, targets)
                    return
            self.unknown.add("lora_rank")  # adapters on layers not read: not what is priced
            return

    def _lora_dropout(self, config: nodes.Call) -> None:
        """``LoraConfig(lora_dropout=p)``: the adapters' input dropout (peft's default 0.0 when
        not given); a value that is not a probability is not read."""
        given = infer.argument(config, "lora_dropout")
        if given is None:
            return
        found = static_values.evaluate(given)
        value = found.value if found is not None else None
        if found is None or lora_dropout_error(value) is not None:
            self.cannot_read("lora_dropout", f"lora_dropout={_shown(given)}: not a probability read", given)
            return
        self.set("lora_dropout", float(value), found.node)

    def _frozen(self) -> None:
        """``requires_grad_(False)`` or ``p.requires_grad = False``: fewer trainable parameters
        than the model has, which the cost model cannot express."""
        for call in self.calls:
            if infer.method_name(call) == "requires_grad_" and call.args:
                value = static_values.evaluate(call.args[0])
                if value is None or value.value is False:
                    self.cannot_read("trainable", f"{_shown(call)} freezes parameters (how many not counted)", call)
        for target in self.module.nodes_of_class(nodes.AssignAttr):
            if target.attrname == "requires_grad":
                value = dataflow._value_of_binding(target)
                found = static_values.evaluate(value) if value is not None else None
                if found is None or found.value is not True:
                    self.cannot_read("trainable", f"{_shown(target.parent)} freezes parameters (how many not "
                                                  "counted)", target)


# ==================================================================================== helpers


def _is_fabric(dotted: Optional[str]) -> bool:
    return bool(dotted) and (dotted.endswith(".Fabric") or dotted == "lightning_fabric.Fabric")


def _size(candidate: _Candidate) -> Optional[int]:
    if candidate.params is not None:
        return candidate.params
    return candidate.spec.params if candidate.spec is not None else None


def _side(value: Optional[Resolved]) -> Optional[Resolved]:
    """The image side for a transform size: ``224`` or ``(224, 224)`` (the smaller side)."""
    if value is None:
        return None
    size = value.value
    if isinstance(size, int) and not isinstance(size, bool):
        return Resolved(size, value.node)
    if isinstance(size, (list, tuple)) and size and all(isinstance(s, int) and not isinstance(s, bool) for s in size):
        return Resolved(min(size), value.node)
    return None


def _offload_device(section: Any) -> Optional[bool]:
    """True (host/NVMe), False (none or absent), None (not readable, e.g. "auto")."""
    if section is None:
        return False
    if not isinstance(section, dict):
        return None
    device = section.get("device", "none")
    if device in ("cpu", "nvme"):
        return True
    if device == "none":
        return False
    return None


__all__ = ["RunReading", "read_run", "run_from_module", "read_module", "DEFAULT_LORA_RANK"]
