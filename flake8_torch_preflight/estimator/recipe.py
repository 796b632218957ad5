"""Read the run out of a training recipe: a YAML or JSON file of LLaMA-Factory, torchtune,
axolotl or TRL / Hugging Face ``TrainingArguments`` fields (``estimate recipe.yaml``).

A recipe is data. YAML is composed with PyYAML's safe loader (no tags that build objects, nothing
imported or run; PyYAML is the optional extra ``recipes``); JSON with the standard library. Every
value read records ``sources[field] = "recipe.yaml:LINE"``, the line of its key. What is read:

* **model**: ``model_name_or_path`` (LLaMA-Factory, TRL, ``TrainingArguments`` scripts),
  ``base_model`` (axolotl), ``model_name`` / ``model_id``, ``model.path``, torchtune's model
  builder (``model._component_: torchtune.models.llama2.lora_llama2_7b``: the catalogue name,
  LoRA for ``lora_``, LoRA on NF4 weights for ``qlora_``); a local folder holding a
  ``config.json`` is read as ``--model-config`` reads one;
* **batch**: ``per_device_train_batch_size``, ``micro_batch_size`` (axolotl), ``batch_size``
  (torchtune), DeepSpeed's ``train_micro_batch_size_per_gpu``;
* **sequence length**: ``cutoff_len`` (LLaMA-Factory), ``max_seq_length`` (TRL),
  ``sequence_len`` (axolotl), ``max_seq_len`` (torchtune's tokenizer), ``max_length``,
  ``block_size``: the truncation length, priced as the length;
* **precision**: ``bf16`` / ``fp16`` (what they mean depends on the framework: axolotl and
  LLaMA-Factory's LoRA load the weights in that dtype, ``TrainingArguments`` autocasts fp32
  weights, LLaMA-Factory's full fine-tune too unless ``pure_bf16``), ``torch_dtype``, torchtune's
  ``dtype``;
* **optimizer**: ``optim`` / ``optimizer`` (transformers' names) or torchtune's
  ``optimizer._component_`` (with ``fused``);
* **gradient checkpointing** (``gradient_checkpointing``, torchtune's
  ``enable_activation_checkpointing``, LLaMA-Factory's default on unless
  ``disable_gradient_checkpointing``), **accumulation** (``gradient_accumulation_steps``),
  **attention** (``flash_attn``, ``flash_attention``, ``sdp_attention``, ``attn_implementation``);
* **LoRA**: ``finetuning_type`` (LLaMA-Factory: ``lora``, its default, ``freeze``: the last
  ``freeze_trainable_layers`` layers train, ``full``), ``adapter`` (axolotl), ``use_peft``,
  ``lora_rank`` / ``lora_r`` / torchtune's ``model.lora_rank``, ``lora_target`` /
  ``lora_target_modules`` / ``lora_target_linear`` / torchtune's ``lora_attn_modules`` and
  ``apply_lora_to_mlp`` / litgpt's ``lora_query`` ... ``lora_head``, ``lora_dropout`` (torchtune's
  ``model.lora_dropout``);
* **quantization**: ``quantization_bit`` (with ``quantization_type``), ``load_in_4bit`` (with
  ``bnb_4bit_quant_type``), ``load_in_8bit``, torchtune's ``quantize_base``;
* **sharding**: ``deepspeed`` (a config inline or the JSON file it names, next to the recipe:
  ZeRO stage and optimizer offload), ``fsdp`` (``full_shard`` / ``shard_grad_op``).

A value of the wrong type (a batch size of ``"abc"``) is bad input, one line naming its line;
``auto`` (DeepSpeed's "taken from elsewhere") is skipped.
"""
from __future__ import annotations

import itertools
import json
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from .catalogue import CatalogueError, ModelSpec, layer_params, model_from_config
from .files import parse_json, read_json, read_text
from .names import EXTERNAL_OPTIMIZERS, HF_OPTIM, TORCH_OPTIMIZERS, resolve_model
from .run import (
    ALL_LINEAR_TARGET,
    DEFAULT_LORA_RANK,
    RunSpec,
    RunSpecError,
    limit_words,
    lora_dropout_error,
    parse_lora_targets,
    shown_value,
    within_limits,
)

#: The one line said when a YAML recipe is given and PyYAML is not installed.
NEEDS_YAML = "reading a YAML recipe needs PyYAML: pip install flake8-torch-preflight[recipes]"

#: Nodes of a YAML document walked at most (aliases are walked once); a recipe has hundreds.
MAX_NODES = 100_000

#: peft's ``LoraConfig`` rank when a recipe turns LoRA on without one (LLaMA-Factory's default too).
PEFT_DEFAULT_RANK = 8

#: LLaMA-Factory's ``freeze_trainable_layers`` default: the last two layers train.
FREEZE_DEFAULT_LAYERS = 2

#: Parent folders of a recipe searched for a file it names relative to the project's root.
MAX_PARENTS = 4

#: Lightning's ``precision`` names (litgpt recipes, Fabric and Trainer arguments).
LIGHTNING_PRECISION = {"16-mixed": "amp", "bf16-mixed": "amp", "16": "amp", "bf16": "amp", "16-true": "fp16",
                       "bf16-true": "bf16", "32": "fp32", "32-true": "fp32", "64": None, "64-true": None,
                       "transformer-engine": None}

#: LoRA keys of TRL's ``ModelConfig`` (and peft's names a recipe may use): any other ``lora_*``
#: key belongs to a project's own argument class.
TRL_LORA_KEYS = frozenset({"lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "lora_modules_to_save",
                           "lora_task_type", "lora_target", "lora_target_linear"})

#: litgpt's ``quantize`` values (bitsandbytes; ``-dq`` adds double quantisation of the scales).
LITGPT_QUANTIZE = {"bnb.nf4": "nf4", "bnb.nf4-dq": "nf4", "bnb.fp4": "fp4", "bnb.fp4-dq": "fp4", "bnb.int8": "int8"}

#: litgpt's LoRA switches -> the module each wraps (``lora_mlp``'s modules depend on the family;
#: ``lora_head`` wraps the output head, ``LITGPT_HEAD``).
LITGPT_LORA_FLAGS = {"query": "q_proj", "key": "k_proj", "value": "v_proj", "projection": "o_proj", "mlp": "",
                     "head": ""}
LITGPT_HEAD = "lm_head"

#: torchtune builders' LoRA arguments -> module names (``apply_lora_to_mlp``: w1, w2, w3).
TORCHTUNE_MLP = ("w1", "w2", "w3")

Path = Tuple[str, ...]


class RecipeError(RunSpecError):
    """A recipe that cannot be read (the message is one line)."""

    #: True when the message says all there is to say and is not about the file
    whole_line = False


class MissingYaml(RecipeError):
    """A YAML recipe without PyYAML installed."""

    whole_line = True


# ==================================================================================== reading


def read_run(path: str) -> RunSpec:
    """The run a recipe describes (see the module docstring)."""
    return read_reading(path)[0]


def read_reading(path: str) -> Tuple[RunSpec, Dict[str, str]]:
    """The run a recipe describes and what it could not read: ``{"model": "model_name_or_path
    'org/name' at recipe.yaml:2: not in the catalogue, no config.json beside it"}``."""
    text = read_text(path, "recipe")
    if path.lower().endswith(".json"):
        fields = _json_fields(text)
    else:
        fields = _yaml_fields(text)
    recipe = _Recipe(fields, path)
    return recipe.run(), recipe.unread


def _yaml_fields(text: str) -> Dict[Path, Tuple[Any, int]]:
    """Every value of a YAML document by its key path, with the line of its key (1-based)."""
    try:
        import yaml
    except ImportError:
        raise MissingYaml(NEEDS_YAML) from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise RecipeError(f"not valid YAML: {' '.join(str(problem).split())}{where}") from None
    except RecursionError:
        raise RecipeError("not valid YAML: nested too deeply") from None
    fields: Dict[Path, Tuple[Any, int]] = {}
    if root is None:
        return fields
    if not isinstance(root, yaml.MappingNode):
        raise RecipeError("not a training recipe (a mapping of fields)")
    loader = yaml.SafeLoader("")
    seen: set = set()

    def value(node: Any) -> Any:
        try:
            return loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, RecursionError):
            return None

    def walk(node: Any, prefix: Path) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if len(seen) > MAX_NODES:
            raise RecipeError(f"more than {MAX_NODES:,} YAML nodes: not a training recipe")
        for key_node, value_node in node.value:
            key = value(key_node)
            if not isinstance(key, (str, int, float, bool)):
                continue
            path = prefix + (str(key),)
            line = key_node.start_mark.line + 1
            if isinstance(value_node, yaml.MappingNode):
                fields[path] = ({}, line)
                walk(value_node, path)
            else:
                fields[path] = (value(value_node), line)

    try:
        walk(root, ())
    except RecursionError:
        raise RecipeError("not valid YAML: nested too deeply") from None
    return fields


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _json_key_lines(text: str) -> Dict[Path, int]:
    """The line of each object key, by its path of keys (arrays are not entered)."""
    lines: Dict[Path, int] = {}
    stack: List[List[Any]] = []  # [is_object, current key]
    line, position = 1, 0
    last: Optional[Tuple[str, int]] = None
    for match in _JSON_TOKEN.finditer(text):
        start = match.start()
        line += text.count("\n", position, start)
        position = start
        token = match.group()
        if token in ("{", "["):
            stack.append([token == "{", None])
        elif token in ("}", "]"):
            if stack:
                stack.pop()
        elif token == ":":
            if last is not None and stack and stack[-1][0]:
                stack[-1][1] = last[0]
                if all(entry[0] for entry in stack):
                    lines.setdefault(tuple(str(entry[1]) for entry in stack), last[1])
        if token.startswith('"'):
            try:
                last = (json.loads(token), line)
            except ValueError:
                last = None
        elif token != ":":
            last = None
    return lines


def _json_fields(text: str) -> Dict[Path, Tuple[Any, int]]:
    data = parse_json(text, RecipeError)
    if not isinstance(data, dict):
        raise RecipeError("not a training recipe (a JSON object of fields)")
    lines = _json_key_lines(text)
    fields: Dict[Path, Tuple[Any, int]] = {}

    def walk(node: Dict[str, Any], prefix: Path) -> None:
        for key, item in node.items():
            path = prefix + (str(key),)
            fields[path] = ({} if isinstance(item, dict) else item, lines.get(path, 1))
            if isinstance(item, dict):
                walk(item, path)

    try:
        walk(data, ())
    except RecursionError:
        raise RecipeError("not valid JSON: nested too deeply") from None
    return fields


# ================================================================================== the recipe

_TORCHTUNE_BUILDER = re.compile(r"^(q?lora_)?(?P<name>.+?)(_base|_instruct|_chat|_it)?$")

#: Keys that say a JSON file is a model's config.json, not a recipe.
_MODEL_CONFIG_KEYS = ("num_hidden_layers", "n_layer", "hidden_size", "n_embd", "d_model")
_TRAINING_KEYS = ("per_device_train_batch_size", "micro_batch_size", "batch_size", "learning_rate", "output_dir",
                  "num_train_epochs", "max_steps", "stage", "finetuning_type", "base_model")


class _Recipe:
    def __init__(self, fields: Dict[Path, Tuple[Any, int]], path: str) -> None:
        self.fields = fields
        #: the fields shallowest first, as ``find`` looks them up
        self.ranked = sorted(fields.items(), key=lambda item: len(item[0]))
        self.path = path
        self.name = os.path.basename(path)
        self.folder = os.path.dirname(os.path.abspath(path))
        self.values: Dict[str, Any] = {}
        self.sources: Dict[str, str] = {}
        #: the fields that could not be read, with what held them
        self.unread: Dict[str, str] = {}
        top = {p[0] for p in fields if len(p) == 1}
        if any(p[-1] == "_component_" for p in fields):
            self.style = "torchtune"
        elif top & {"base_model", "sequence_len", "micro_batch_size", "adapter", "lora_target_linear"}:
            self.style = "axolotl"
        elif top & {"stage", "finetuning_type", "cutoff_len", "template", "quantization_bit", "lora_target"}:
            self.style = "llama-factory"
        elif "checkpoint_dir" in top or (("train", "global_batch_size") in fields and top & {"precision", "devices"}):
            self.style = "litgpt"
        else:
            self.style = "transformers"
        if top & set(_MODEL_CONFIG_KEYS) and "model_type" in top and not top & set(_TRAINING_KEYS):
            raise RecipeError("is a model's config.json, not a training recipe: give it as --model-config FILE")

    # ------------------------------------------------------------------ lookups

    def find(self, *names: str) -> Optional[Tuple[Any, int, Path]]:
        """The first of ``names`` found at the top level, else the shallowest anywhere; values
        ``None`` (YAML ``~``, JSON ``null``) and ``auto`` are not found."""
        for depth_one in (True, False):
            for name in names:
                for path, (value, line) in self.ranked:
                    if (len(path) == 1) != depth_one or path[-1] != name:
                        continue
                    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
                        continue
                    return value, line, path
        return None

    def at(self, *path: str) -> Optional[Tuple[Any, int]]:
        found = self.fields.get(tuple(path))
        if found is None or found[0] is None:
            return None
        return found

    def _beside(self, name: str, *inside: str) -> Optional[str]:
        """The file a recipe's value names (``inside`` a folder it names), ``None`` when there is
        no such file. A relative name is looked up next to the recipe, then in the current folder,
        then in the recipe's parent folders (``MAX_PARENTS``): recipes name their DeepSpeed file
        relative to the project's root, where the launcher runs."""
        if len(name) > 1000:
            return None
        folders = [self.folder, os.getcwd()]
        parent = self.folder
        for _ in range(MAX_PARENTS):
            parent, previous = os.path.dirname(parent), parent
            if parent == previous:
                break
            folders.append(parent)
        for folder in folders:
            path = os.path.normpath(os.path.join(folder, name, *inside))  # an absolute name stays
            if os.path.isfile(path):
                return path
        return None

    def source(self, line: int) -> str:
        return f"{self.name}:{line}"

    def set(self, name: str, value: Any, line: int) -> None:
        self.values[name] = value
        self.sources[name] = self.source(line)

    def set_default(self, name: str, value: Any, why: str) -> None:
        if name not in self.values:
            self.values[name] = value
            self.sources[name] = f"{self.name} ({why})"

    def fail(self, key: str, line: int, what: str, value: Any) -> RecipeError:
        return RecipeError(f"{key} must be {what}, got {shown_value(value)} (line {line})")

    def integer(self, name: str, found: Optional[Tuple[Any, int, Path]]) -> Optional[int]:
        if found is None:
            return None
        value, line, path = found
        if not within_limits(name, value):
            raise self.fail(path[-1], line, limit_words(name), value)
        self.set(name, value, line)
        return value

    def flag(self, *names: str) -> Optional[Tuple[bool, int]]:
        found = self.find(*names)
        if found is None:
            return None
        value, line, path = found
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise self.fail(path[-1], line, "true or false", value)
        return value, line

    # ------------------------------------------------------------------------ run

    def run(self) -> RunSpec:
        self._model()
        self._batch_and_sequence()
        self._adapters()
        self._quantization()
        self._precision()
        self._optimizer()
        self._checkpointing_and_attention()
        self._sharding()
        if self.style == "litgpt":
            self._litgpt()
        elif self.style == "transformers":
            self._project_arguments()
        return RunSpec(sources=dict(self.sources), **self.values)

    def _project_arguments(self) -> None:
        """A ``TrainingArguments`` file that also holds LoRA keys which are neither TRL's nor
        peft's (``lora_rank``) feeds a project's own argument class: that project's code loads the
        model, so the weights' dtype and their quantization are its defaults, not the file's.
        Unless the file states them, they are named as not read instead of assumed."""
        own = sorted(path[0] for path in self.fields if len(path) == 1 and path[0].startswith("lora_")
                     and path[0] not in TRL_LORA_KEYS)
        if not own:
            return
        key = own[0]
        line = self.fields[(key,)][1]
        held = f"the project's own arguments ({key} at {self.source(line)}) load the model"
        if "quantization" not in self.values and not self.find("load_in_4bit", "load_in_8bit"):
            self.unread["quantization"] = f"{held}; its quantization is not stated"
        if self.values.get("precision") == "amp" and not self.find("torch_dtype", "dtype"):
            self.unread["precision"] = f"{held}; the weights' dtype is not stated"
            self.values.pop("precision", None)
            self.sources.pop("precision", None)

    # --------------------------------------------------------------------- litgpt

    def _litgpt(self) -> None:
        """litgpt's CLI recipes (``litgpt finetune_lora --config x.yaml``): the checkpoint folder
        names the model, ``precision`` is Lightning's, ``quantize: bnb.nf4`` stores the base
        weights in 4 bits, ``lora_query`` ... say where the adapters go, and the accumulation is
        ``global_batch_size // (devices * num_nodes) // micro_batch_size``."""
        if "model" not in self.values:
            found = self.at("checkpoint_dir")
            if found is not None and isinstance(found[0], str):
                parts = [p for p in found[0].replace("\\", "/").split("/") if p]
                for name in ("/".join(parts[-2:]), parts[-1] if parts else ""):
                    spec = self._catalogue(name) if name else None
                    if spec is not None:
                        self.set("model", spec, found[1])
                        self.unread.pop("model", None)
                        break
                else:
                    self.unread["model"] = (f"checkpoint_dir {shown_value(found[0])} at {self.source(found[1])}: "
                                            "not in the catalogue")
        precision = self.at("precision")
        if precision is not None:
            kind = LIGHTNING_PRECISION.get(str(precision[0]).strip().lower())
            if kind is None:
                self.unread["precision"] = f"precision {shown_value(precision[0])} at {self.source(precision[1])}"
                self.values.pop("precision", None)
                self.sources.pop("precision", None)
            else:
                self.set("precision", kind, precision[1])
        quantize = self.at("quantize")
        if quantize is not None:
            mode = LITGPT_QUANTIZE.get(str(quantize[0]).strip().lower())
            if mode is None:
                self.unread["quantization"] = (f"quantize {shown_value(quantize[0])} at "
                                               f"{self.source(quantize[1])}: not priced")
            else:
                self.set("quantization", mode, quantize[1])
        self._litgpt_lora_targets()
        devices = [self.at(key) for key in ("devices", "num_nodes")]
        count = 1
        for found in devices:
            if found is None:
                continue
            if isinstance(found[0], bool) or not isinstance(found[0], int) or found[0] < 1:
                count = 0  # "auto", -1: every visible device
            else:
                count *= found[0]
        total = self.at("train", "global_batch_size")
        micro = self.at("train", "micro_batch_size")
        if total is None or micro is None or not all(
                isinstance(v[0], int) and not isinstance(v[0], bool) and v[0] > 0 for v in (total, micro)):
            return
        if count == 0:
            self.unread["grad_accum_steps"] = (f"global_batch_size at {self.source(total[1])} divided by the "
                                               "devices, which the recipe leaves to the machine")
            self.values.pop("grad_accum_steps", None)
            return
        steps = max(1, total[0] // count // micro[0])
        self.set("grad_accum_steps", steps, total[1])
        if count > 1:
            self.set("world_size", count, (devices[0] or devices[1] or total)[1])

    # ---------------------------------------------------------------------- model

    def _litgpt_lora_targets(self) -> None:
        """litgpt's ``lora_query`` ... ``lora_head`` switches (all of them written): the attention
        projections they name; ``lora_mlp`` with every attention switch on is every linear layer of
        the blocks (``all-linear``); ``lora_head`` adds the output head (``lm_head``). The MLP's
        modules alone depend on the family: left unset."""
        flags = {name: self.at(f"lora_{name}") for name in LITGPT_LORA_FLAGS}
        if not self.values.get("lora") or any(v is None for v in flags.values()):
            return
        chosen = {name for name, v in flags.items() if v is not None and v[0] is True}
        attention = [name for name in LITGPT_LORA_FLAGS if LITGPT_LORA_FLAGS[name]]
        if "mlp" in chosen:
            if not set(attention) <= chosen:
                return
            names = [ALL_LINEAR_TARGET]
        else:
            names = [LITGPT_LORA_FLAGS[name] for name in attention if name in chosen]
        if "head" in chosen:
            names.append(LITGPT_HEAD)
        if names:
            line = max(v[1] for v in flags.values() if v is not None)
            self.set("lora_targets", parse_lora_targets(",".join(names)), line)

    def _model(self) -> None:
        component = self.at("model", "_component_")
        if component is not None and isinstance(component[0], str):
            builder = component[0].rsplit(".", 1)[-1]
            match = _TORCHTUNE_BUILDER.match(builder)
            spec = self._torchtune_model(match.group("name") if match else builder)
            if spec is not None:
                self.set("model", spec, component[1])
            else:
                self.unread["model"] = (f"model builder {shown_value(component[0])} at {self.source(component[1])}: "
                                        "not in the catalogue")
            if builder.startswith("qlora_"):
                self.set("quantization", "nf4", component[1])
            if builder.startswith(("lora_", "qlora_")):
                self.set("lora", True, component[1])
            return
        found = self.find("model_name_or_path", "base_model", "model_name", "model_id")
        if found is None:
            path = self.at("model", "path")
            found = (path[0], path[1], ("model", "path")) if path is not None else None
        if found is None or not isinstance(found[0], str):
            self.unread["model"] = ("no model named in the recipe (model_name_or_path, base_model, model_name, "
                                    "model_id, model.path)")
            return
        name, line, path = found
        spec = self._catalogue(name) or self._local_config(name)
        if spec is not None:
            self.set("model", spec, line)
        else:
            self.unread["model"] = (f"{path[-1]} {shown_value(name)} at {self.source(line)}: not in the catalogue "
                                    "and no config.json in that folder")

    def _torchtune_model(self, name: str) -> Optional[ModelSpec]:
        """torchtune's builder names write a version's and a size's dot as ``_`` (``llama3_1_8b``,
        ``qwen2_0_5b``, ``llama2_7b``): each reading of those underscores is tried, the name as
        written first; the catalogue never guesses across a dot, so at most the intended one
        resolves."""
        spots = [m.start() for m in re.finditer(r"(?<=\d)_(?=\d)", name)][:4]
        for dots in itertools.product((False, True), repeat=len(spots)):
            letters = list(name)
            for spot, dot in zip(spots, dots):
                if dot:
                    letters[spot] = "."
            spec = self._catalogue("".join(letters))
            if spec is not None:
                return spec
        return None

    def _catalogue(self, name: str) -> Optional[ModelSpec]:
        return resolve_model(name)

    def _local_config(self, name: str) -> Optional[ModelSpec]:
        """A model given as a local folder: its config.json, read as ``--model-config`` reads it."""
        config = self._beside(name, "config.json")
        if config is None:
            return None
        try:
            return model_from_config(read_json(config, "model config"), config)
        except (OSError, ValueError, RecursionError, CatalogueError):
            return None

    # ----------------------------------------------------------- batch, sequence

    def _batch_and_sequence(self) -> None:
        self.integer("batch_size", self.find("per_device_train_batch_size", "micro_batch_size", "batch_size",
                                             "train_micro_batch_size_per_gpu"))
        self.integer("seq_len", self.find("cutoff_len", "max_seq_length", "sequence_len", "max_seq_len",
                                          "max_length", "block_size"))
        self.integer("grad_accum_steps", self.find("gradient_accumulation_steps"))

    # ------------------------------------------------------------------- adapters

    def _adapters(self) -> None:
        kind = self.find("finetuning_type", "adapter")
        method = str(kind[0]).strip().lower() if kind is not None else None
        if method is None and self.style == "llama-factory":
            method = "lora"  # LLaMA-Factory's default finetuning_type
            self.set_default("lora", True, "LLaMA-Factory default finetuning_type lora")
        if method in ("lora", "qlora"):
            if kind is not None:
                self.set("lora", True, kind[1])
            if method == "qlora" and not self.find("load_in_8bit", "quantization_bit"):
                self.set("quantization", "nf4", kind[1] if kind is not None else 1)
        elif method == "freeze" and kind is not None:
            self._freeze(kind[1])
        elif method not in (None, "full"):
            raise self.fail("finetuning_type" if self.style == "llama-factory" else "adapter", kind[1] if kind else 1,
                            "lora, qlora, freeze or full", method)
        peft = self.flag("use_peft")
        if peft is not None and peft[0]:
            self.set("lora", True, peft[1])
        rank = self.find("lora_rank", "lora_r")
        if rank is None:
            rank = self._nested_rank()
        if rank is not None:
            if "lora" not in self.values:
                self.set("lora", True, rank[1])
            self.integer("lora_rank", rank)
        elif self.values.get("lora"):
            if self.style == "transformers":  # TRL's ModelConfig.lora_r
                self.set_default("lora_rank", DEFAULT_LORA_RANK, "TRL default lora_r")
            else:
                self.set_default("lora_rank", PEFT_DEFAULT_RANK, "peft default r")
        if self.values.get("lora"):
            self._lora_dropout()
        self._lora_targets()

    def _lora_dropout(self) -> None:
        """``lora_dropout`` (peft's ``LoraConfig`` field as LLaMA-Factory, axolotl, litgpt and TRL
        write it; torchtune's ``model.lora_dropout``): the adapters' input dropout."""
        found = self.find("lora_dropout")
        if found is None:
            return
        value, line, path = found
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass
        if lora_dropout_error(value) is not None:
            raise self.fail(path[-1], line, "a probability at least 0 and below 1", value)
        self.set("lora_dropout", float(value), line)

    def _nested_rank(self) -> Optional[Tuple[Any, int, Path]]:
        for path, (value, line) in self.fields.items():
            if len(path) >= 2 and path[-1] == "r" and path[-2] in ("peft_config", "lora_config", "peft"):
                return value, line, path
        return None

    def _lora_targets(self) -> None:
        linear = self.flag("lora_target_linear")
        if linear is not None and linear[0]:
            self.set("lora_targets", None, linear[1])
            return
        found = self.find("lora_target", "lora_target_modules", "target_modules")
        names: List[str] = []
        line = 1
        if found is not None:
            value, line, path = found
            if isinstance(value, str):
                names = [value]
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                names = list(value)
            else:
                raise self.fail(path[-1], line, "module names", value)
        attention = self.at("model", "lora_attn_modules")
        if attention is not None and isinstance(attention[0], list):
            names += [str(v) for v in attention[0]]
            line = attention[1]
            mlp = self.at("model", "apply_lora_to_mlp")
            if mlp is not None and mlp[0] is True:
                names += list(TORCHTUNE_MLP)
        if not names:
            return
        try:
            targets = parse_lora_targets(",".join(names))
        except RunSpecError as err:
            raise RecipeError(f"{err} (line {line})") from None
        self.set("lora_targets", targets, line)

    def _freeze(self, line: int) -> None:
        """LLaMA-Factory's ``freeze``: the last N layers train (N = freeze_trainable_layers)."""
        spec = self.values.get("model")
        layers = self.find("freeze_trainable_layers")
        count = FREEZE_DEFAULT_LAYERS
        if layers is not None:
            value, where, path = layers
            if isinstance(value, bool) or not isinstance(value, int) or value == 0:
                raise self.fail(path[-1], where, "a non-zero integer", value)
            count, line = abs(value), where
        per_layer = layer_params(spec) if isinstance(spec, ModelSpec) else None
        total = spec.shape.get("layers") if isinstance(spec, ModelSpec) else None
        if per_layer is None or not isinstance(total, int):
            return  # the model's layers are not known: every parameter is priced as trainable
        self.set("trainable_params", min(count, total) * per_layer, line)

    # --------------------------------------------------------------- quantization

    def _quantization(self) -> None:
        bits = self.find("quantization_bit")
        if bits is not None:
            value, line, path = bits
            if value not in (4, 8) or isinstance(value, bool):
                raise self.fail(path[-1], line, "4 or 8", value)
            kind = self.find("quantization_type")
            mode = str(kind[0]).lower() if kind is not None else "nf4"
            self.set("quantization", "int8" if value == 8 else ("fp4" if mode == "fp4" else "nf4"), line)
            return
        four = self.flag("load_in_4bit")
        if four is not None and four[0]:
            kind = self.find("bnb_4bit_quant_type")
            self.set("quantization", "fp4" if kind is not None and str(kind[0]).lower() == "fp4" else "nf4", four[1])
            return
        eight = self.flag("load_in_8bit")
        if eight is not None and eight[0]:
            self.set("quantization", "int8", eight[1])
            return
        base = self.at("model", "quantize_base")
        if base is not None and base[0] is True:
            self.set("quantization", "nf4", base[1])

    # ------------------------------------------------------------------ precision

    def _precision(self) -> None:
        dtype = self.find("dtype", "torch_dtype")
        if dtype is not None and isinstance(dtype[0], str):
            weights = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "half": "fp16",
                       "fp32": "fp32", "float32": "fp32", "float": "fp32"}.get(dtype[0].strip().lower())
            if weights is not None:
                self.set("precision", weights, dtype[1])
                return
        for flag in ("bf16", "fp16", "bfloat16", "float16"):
            found = self.at(flag)
            if found is None:
                continue
            value, line = found
            if value == {}:  # DeepSpeed's {"enabled": true}
                value = (self.at(flag, "enabled") or (False,))[0]
            if isinstance(value, str):
                value = value.strip().lower() in ("true", "auto")  # axolotl's auto: bf16 where supported
            if value is True:
                half = "bf16" if flag.startswith("b") else "fp16"
                self.set("precision", self._half_precision(half), line)
                return

    def _half_precision(self, half: str) -> str:
        """What ``bf16: true`` means: 16-bit weights (axolotl; LLaMA-Factory's LoRA and freeze, and
        its full fine-tune with ``pure_bf16``) or autocast over fp32 weights (``TrainingArguments``,
        LLaMA-Factory's full fine-tune)."""
        if self.style == "axolotl":
            return half
        if self.style == "llama-factory":
            pure = self.flag("pure_bf16")
            if self.values.get("lora") or "trainable_params" in self.values or (pure is not None and pure[0]):
                return half
        return "amp"

    # ------------------------------------------------------------------ optimizer

    def _optimizer(self) -> None:
        component = self.at("optimizer", "_component_")
        if component is not None and isinstance(component[0], str):
            name = component[0]
            kind = TORCH_OPTIMIZERS.get(name) or EXTERNAL_OPTIMIZERS.get(name)
            if kind is None:
                raise RecipeError(f"optimizer {shown_value(name)} is not one the estimator prices (line "
                                  f"{component[1]}); give --optimizer")
            self.set("optimizer", kind, component[1])
            fused = self.at("optimizer", "fused")
            if fused is not None and fused[0] is True:
                self.set("fused_optimizer", True, fused[1])
            return
        found = self.find("optim", "optimizer")
        if found is None or not isinstance(found[0], str):
            return
        value, line, path = found
        kind = HF_OPTIM.get(value.strip().lower())
        if kind is None:
            raise self.fail(path[-1], line, f"one of transformers' optimizers ({', '.join(HF_OPTIM)})", value)
        self.set("optimizer", kind, line)
        if "fused" in value:
            self.set("fused_optimizer", True, line)

    # -------------------------------------------------- checkpointing, attention

    def _checkpointing_and_attention(self) -> None:
        found = self.flag("gradient_checkpointing", "enable_activation_checkpointing")
        if found is not None:
            self.set("checkpointing", found[0], found[1])
        elif self.style == "llama-factory":
            disabled = self.flag("disable_gradient_checkpointing")
            if disabled is not None:
                self.set("checkpointing", not disabled[0], disabled[1])
            else:
                self.set_default("checkpointing", True, "LLaMA-Factory enables gradient checkpointing by default")
        attention = self.find("flash_attn", "attn_implementation")
        if attention is not None and isinstance(attention[0], str):
            value = attention[0].strip().lower()
            if value in ("fa2", "fa3", "sdpa", "flash_attention_2", "flash_attention_3"):
                self.set("flash", True, attention[1])
            elif value in ("eager", "disabled"):
                self.set("flash", False, attention[1])
        for name in ("flash_attention", "sdp_attention"):
            flag = self.flag(name)
            if flag is not None and flag[0]:
                self.set("flash", True, flag[1])

    # ------------------------------------------------------------------- sharding

    def _sharding(self) -> None:
        deepspeed = self.find("deepspeed")
        if deepspeed is not None:
            value, line, path = deepspeed
            config: Any = None
            if isinstance(value, str):
                config = self._deepspeed_file(value)
            elif value == {}:  # a mapping: its fields are in the recipe
                config = {"zero_optimization": {
                    "stage": (self.at(*path, "zero_optimization", "stage") or (None,))[0],
                    "offload_optimizer": {"device": (self.at(*path, "zero_optimization", "offload_optimizer",
                                                             "device") or (None,))[0]}}}
            zero = config.get("zero_optimization") if isinstance(config, dict) else None
            stage = zero.get("stage") if isinstance(zero, dict) else None
            if stage in (1, 2, 3):
                self.set("sharding", f"zero-{stage}", line)
                offload = zero.get("offload_optimizer")
                if isinstance(offload, dict) and offload.get("device") in ("cpu", "nvme"):
                    self.set("offload_optimizer", True, line)
            return
        fsdp = self.find("fsdp")
        if fsdp is None:
            return
        value, line, _ = fsdp
        options = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
        options = [str(option).strip().lower() for option in options]
        if "full_shard" in options:
            self.set("sharding", "fsdp", line)
        elif "shard_grad_op" in options:
            self.set("sharding", "zero-2", line)

    def _deepspeed_file(self, name: str) -> Any:
        path = self._beside(name)
        if path is None:
            return None
        try:
            return read_json(path, "DeepSpeed config")
        except (OSError, ValueError, RecursionError, RunSpecError):
            return None


__all__ = ["NEEDS_YAML", "MissingYaml", "RecipeError", "read_run"]
