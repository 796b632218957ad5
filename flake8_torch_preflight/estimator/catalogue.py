"""Model and GPU catalogues for the VRAM estimator.

Two JSON tables ship as package data and are read zip-safely through
``importlib.resources``:

* ``data/models.json``: architectures, keyed by a short name, each with its
  aliases (Hugging Face ids, torchvision and timm names), ``kind``, the published
  parameter count, the ``source`` of both, and a ``shape`` that drives the cost
  model. ``count_params`` recomputes the parameter count from the shape; the test
  suite holds it within 1% of the published figure, which checks the shape data.
* ``data/gpus.json``: GPUs (per-device figures, in MiB) and cloud instances
  (GPU key and count).

Names are matched case-insensitively with spaces and underscores read as
hyphens; a second, looser pass also ignores hyphens (``llama2-7b`` finds
``llama-2-7b``, ``rtx-4090`` finds ``rtx4090``), but never dots, so ``opt-13b``
does not silently become ``opt-1.3b``. Unknown names raise ``CatalogueError``,
a one-line ``ValueError`` that lists close matches.

Transformer shape fields (``null`` where a field does not apply):

``layers``, ``hidden``, ``heads``, ``kv_heads`` (null = ``heads``), ``head_dim``
(null = ``hidden // heads``), ``ffn`` (intermediate size; per expert when
``experts`` > 0), ``ffn_kind`` (gelu, gelu_new, relu, swiglu, geglu; the gated
kinds have three matrices; ``gelu_new`` is the tanh approximation that GPT-2 and
Phi-2 compute with Python ops, which keeps more for backward), ``vocab``,
``max_positions``, ``position`` (learned, rope, relative, alibi, sinusoidal), ``tied_embeddings``, ``dropout``, ``norm``
(layernorm: weight and bias; rmsnorm: weight only), ``bias`` (all linear layers),
``experts``, ``experts_per_token``; for encoder-decoders ``encoder_layers`` and
``decoder_layers`` (``layers`` is then null); for vision transformers
``image_size``, ``patch_size``, ``channels`` and ``num_classes``.

Optional fields, with the default used when absent: ``qkv_bias`` (= ``bias``),
``key_bias`` (= ``qkv_bias``; Whisper's k_proj has none), ``mlp_bias``
(= ``bias``), ``qk_norm`` (false; Qwen3 and Gemma 3 normalise q and k per head),
``norms_per_layer`` (2; 1 for a parallel block with one shared norm, 4 for
Gemma 2/3 sandwich norms; encoder-decoder decoder layers add one for
cross-attention), ``final_norm`` (true), ``embedding_norm`` (false; a norm right
after the embeddings, per stack), ``embedding_dim`` (= ``hidden``; OPT-350m
projects 512 to 1024), ``position_offset`` (0; OPT and BART keep 2 extra rows),
``type_vocab`` (0; BERT's token-type table), ``pooler`` (false), ``lm_head_bias``
(false), ``relative_buckets`` and ``relative_kind`` (``t5``: a per-head bias
table in the first layer of each stack; ``deberta``: a shared
``2 * buckets x hidden`` table plus ``relative_norm``), ``encoder_input``
(``tokens``; ``audio`` adds Whisper's two 3-wide convolutions over
``mel_bins``), ``encoder_position`` / ``encoder_max_positions`` (Whisper's
sinusoidal encoder table, stored in the checkpoint), ``cls_token`` (true) and
``patch_bias`` (true) for vision transformers, ``text`` (a CLIP text tower, with
``projection_dim``), ``vision`` (a vision tower for multimodal decoders, with a
``vision_hidden x hidden`` projector plus ``projector_norm``).

Optional fields that only the activation model reads (how the Hugging Face
implementation computes, checked against transformers 5.24 and, where
tests/calibration measured the family, against its fixture):
``attention_dropout`` (= ``dropout``; dropout on the attention probabilities, false
for OPT, whose configs set 0.0), ``attention_output_dropout`` (= ``dropout``;
dropout after the attention output projection, false for DistilBERT),
``softmax_fp32`` (false; eager attention computes the softmax in fp32 and casts
back, ``softmax(..., dtype=torch.float32)``: Llama, Mistral, Qwen, Gemma, Phi, OPT,
GPT-NeoX, ViT, CLIP), ``qkv_fused`` (false; one projection computes q, k and v,
so autocast casts its input once: GPT-2's c_attn, GPT-NeoX's and Falcon's
query_key_value, Phi-3's qkv_proj), ``qkv_views_pinned`` (false; GPT-2: q, k, v
are views of c_attn's output, and under SDPA the kernel keeps the query view
beside the KV cache's copies of K and V), ``ffn_dropout`` (false; dropout between
the activation and the second linear: T5), ``rmsnorm_upcast`` (``input``: the norm
casts its input to fp32 first, as LlamaRMSNorm; ``variance``: only the variance is
computed in fp32, as T5LayerNorm).

CNN shape fields: ``family``, ``image_size``, ``num_classes``,
``activation_elements_per_sample`` (what one sample keeps for backward at
``image_size``, fp32 bytes / 4; null until measured), optionally
``activation_bytes_per_element`` (``amp`` and ``bf16``: measured bytes per such
element, above 2 because max-pool indices stay int64 and batch norm keeps fp32
statistics; fp16 is priced as bf16) and, where
``count_params`` can use them, family fields: resnet (``block``, ``depths``,
``widths``, ``groups``, ``width_per_group``, ``stem_width``; ``stem_type: "deep"`` with
``deep_stem_width`` for timm's ResNet-D stem of three 3x3 convolutions), vgg (``config``,
``batch_norm``, ``classifier``), convnext (``depths``, ``widths``), densenet
(``growth_rate``, ``block_config``, ``init_features``, ``bn_size``).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib import resources
from types import MappingProxyType
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .run import shown_value

MIB = 1024**2

#: CUDA context + library workspaces charged to a custom ``--gpu-memory`` target,
#: in MiB. ptrblck (pytorch/pytorch#109888, 2023): "around 400MB if CUDA >= 11.7
#: is used and lazy module loading enabled (default in PyTorch)". The same figure
#: is the default for listed pre-Hopper NVIDIA GPUs in gpus.json.
DEFAULT_CONTEXT_MIB = 400

#: How many close matches an error message names.
_MAX_SUGGESTIONS = 3

_MODELS_HINT = "Give --params N or a known name (python -m flake8_torch_preflight models)"
_GPUS_HINT = "Give --gpu-memory SIZE or a known name (python -m flake8_torch_preflight gpus)"

#: Prefixes users write before a model name; stripped before lookup.
_MODEL_PREFIXES = ("hf-hub:", "hf_hub:", "timm/", "torchvision.models.", "models.")

#: Prefixes stripped from a name before an instance lookup (SageMaker's "ml.").
_INSTANCE_PREFIXES = ("ml.",)

#: Azure sizes are also found without their "Standard_" prefix.
_AZURE_PREFIX = "standard-"

_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*([kmgt])(i?)b\s*$", re.IGNORECASE)
_SIZE_POWERS = {"k": 1, "m": 2, "g": 3, "t": 4}
_SIZE_FORMS = (
    "give a positive number with a unit: KiB, MiB, GiB, TiB (powers of 1024) "
    "or KB, MB, GB, TB (powers of 1000), e.g. 48GiB or 80GB"
)
_COUNT_RE = re.compile(r"^([0-9]+)\s*[x\u00d7*]\s*(.+)$")

#: The largest ``--gpu-memory`` / ``tp-gpu-memory`` accepted: 1 PiB, far above any device, low
#: enough that every byte count stays exact and finite in a float.
MAX_SIZE_BYTES = 1024**5

#: The most devices ``<N>x<gpu>`` (times an instance's own count) may name: the range of
#: ``--world-size`` (run.LIMITS).
MAX_DEVICES = 10**6

#: Names longer than this are refused without looking for close matches.
MAX_NAME_CHARS = 200


class CatalogueError(ValueError):
    """A name or size that the catalogues cannot resolve. The message is one line."""


@dataclass(frozen=True)
class ModelSpec:
    """One catalogue architecture."""

    key: str
    kind: str
    params: int
    source: str
    shape: Mapping[str, Any]
    aliases: Tuple[str, ...]
    #: where the entry comes from: ``catalogue``, or ``config FILE`` for a Hugging Face
    #: ``config.json`` read with ``model_from_config``
    origin: str = "catalogue"


@dataclass(frozen=True)
class GpuTarget:
    """The hardware a run must fit, in per-device bytes.

    ``count`` is the number of devices (1 for a bare GPU, 8 for ``8xh100-sxm`` or
    ``p4d.24xlarge``). ``usable_bytes`` is what a process can allocate (the total
    ``cudaMemGetInfo`` reports); ``context_bytes`` is the CUDA context and library
    workspaces a PyTorch process pays out of it. ``gpu_key`` names the catalogue
    GPU (``None`` for ``--gpu-memory``), ``instance`` the cloud instance if one
    was named.
    """

    key: str
    name: str
    count: int
    memory_bytes: int
    usable_bytes: int
    context_bytes: int
    bf16: bool
    source: str
    gpu_key: Optional[str] = None
    instance: Optional[str] = None


# --------------------------------------------------------------------------- loading


def _read_json(filename: str) -> Dict[str, Any]:
    path = resources.files("flake8_torch_preflight.estimator") / "data" / filename
    data: Dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _normal(name: str) -> str:
    """Lower case, spaces and underscores as hyphens, hyphens collapsed."""
    text = re.sub(r"[\s_]+", "-", name.strip().lower())
    return re.sub(r"-{2,}", "-", text).strip("-")


def _compact(name: str) -> str:
    """The looser form: `_normal` without hyphens (dots and slashes kept)."""
    return _normal(name).replace("-", "")


@functools.lru_cache(maxsize=None)
def _model_table() -> Tuple[Tuple[ModelSpec, ...], Dict[str, str], Dict[str, str]]:
    data = _read_json("models.json")
    specs: List[ModelSpec] = []
    exact: Dict[str, str] = {}
    loose: Dict[str, str] = {}
    for key, entry in data["models"].items():
        spec = ModelSpec(
            key=key,
            kind=entry["kind"],
            params=int(entry["params"]),
            source=entry["source"],
            shape=_freeze(entry["shape"]),
            aliases=tuple(entry.get("aliases", ())),
        )
        specs.append(spec)
        for name in (key,) + spec.aliases:
            exact.setdefault(_normal(name), key)
            loose.setdefault(_compact(name), key)
    return tuple(specs), exact, loose


@functools.lru_cache(maxsize=None)
def _gpu_table() -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Dict[str, Any]], Dict[str, str], Dict[str, str]]:
    data = _read_json("gpus.json")
    gpus: Dict[str, Dict[str, Any]] = data["gpus"]
    instances: Dict[str, Dict[str, Any]] = data["instances"]
    exact: Dict[str, str] = {}
    loose: Dict[str, str] = {}
    for key, entry in gpus.items():
        for name in [key, entry["name"]] + list(entry.get("aliases", ())):
            exact.setdefault(_normal(name), key)
            loose.setdefault(_compact(name), key)
    for key, entry in instances.items():
        names = [key] + list(entry.get("aliases", ()))
        if _normal(key).startswith(_AZURE_PREFIX):
            names.append(_normal(key)[len(_AZURE_PREFIX):])
        for name in names:
            exact.setdefault(_normal(name), key)
            loose.setdefault(_compact(name), key)
    return gpus, instances, exact, loose


# ---------------------------------------------------------------------------- models


def list_models() -> List[ModelSpec]:
    """Every catalogue architecture, in catalogue order."""
    return list(_model_table()[0])


def _model_candidates(name: str) -> Iterable[str]:
    text = name.strip()
    yield text
    lowered = text.lower()
    for prefix in _MODEL_PREFIXES:
        if lowered.startswith(prefix):
            lowered = lowered[len(prefix):]
            yield lowered
    if "/" in lowered:
        yield lowered.rsplit("/", 1)[1]


def _suggest(query: str, names: Iterable[Tuple[str, str]]) -> List[str]:
    """Close matches as catalogue keys, best first, without repeats."""
    by_name: Dict[str, str] = {}
    for alias, key in names:
        by_name.setdefault(alias, key)
    found: List[str] = []
    for alias in difflib.get_close_matches(_normal(query), list(by_name), n=12, cutoff=0.6):
        key = by_name[alias]
        if key not in found:
            found.append(key)
        if len(found) == _MAX_SUGGESTIONS:
            break
    return found


def _unknown(what: str, name: str, matches: Sequence[str], hint: str) -> CatalogueError:
    shown = " ".join(name.split())
    if len(shown) > 60:
        shown = shown[:57] + "..."
    if matches:
        return CatalogueError(f"unknown {what} '{shown}'; close matches: {', '.join(matches)}. {hint}")
    return CatalogueError(f"unknown {what} '{shown}'; no close matches. {hint}")


def find_model(name: str) -> ModelSpec:
    """Resolve a key, alias or Hugging Face id (case-insensitive) to its entry.

    Also accepts ``timm/`` and ``torchvision.models.`` prefixes, a timm
    pretrained tag (``resnet50.a1_in1k``), and an unknown organisation in front
    of a known model name (``unsloth/Qwen3-8B``).
    """
    if len(name) > MAX_NAME_CHARS:
        raise _unknown("model", name, (), _MODELS_HINT)
    specs, exact, loose = _model_table()
    by_key = {spec.key: spec for spec in specs}
    candidates = list(_model_candidates(name))
    for table, form in ((exact, _normal), (loose, _compact)):
        for candidate in candidates:
            key = table.get(form(candidate))
            if key is not None:
                return by_key[key]
    # timm pretrained tags: "resnet50.a1_in1k" -> "resnet50", image models only.
    for candidate in candidates:
        if "." in candidate:
            key = exact.get(_normal(candidate.split(".", 1)[0]))
            if key is not None and by_key[key].kind in ("cnn", "vision-transformer"):
                return by_key[key]
    pool = [(alias, key) for alias, key in exact.items() if "/" not in alias]
    raise _unknown("model", name, _suggest(candidates[-1], pool), _MODELS_HINT)


def _int_or_none(value: Any) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def count_params(spec: ModelSpec) -> Optional[int]:
    """The parameter count implied by ``spec.shape``; None where it cannot be derived."""
    shape = spec.shape
    try:
        if spec.kind in ("decoder", "encoder"):
            return _decoder_or_encoder(shape, spec.kind)
        if spec.kind == "encoder-decoder":
            return _encoder_decoder(shape)
        if spec.kind == "vision-transformer":
            return _vision_transformer(shape)
        if spec.kind == "cnn":
            return _cnn(shape)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return None


def layer_params(spec: ModelSpec) -> Optional[int]:
    """Parameters of one transformer layer of a decoder or an encoder (what freezing all but the
    last N layers leaves to train, per layer); None for other kinds or an incomplete shape."""
    if spec.kind not in ("decoder", "encoder"):
        return None
    try:
        return _layer(spec.shape)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _norm(shape: Mapping[str, Any], dim: int) -> int:
    return 2 * dim if shape["norm"] == "layernorm" else dim


def _head_dim(shape: Mapping[str, Any]) -> int:
    head_dim = _int_or_none(shape.get("head_dim"))
    return head_dim if head_dim is not None else int(shape["hidden"]) // int(shape["heads"])


def _attention(shape: Mapping[str, Any]) -> int:
    hidden = int(shape["hidden"])
    head_dim = _head_dim(shape)
    q_dim = int(shape["heads"]) * head_dim
    kv_heads = _int_or_none(shape.get("kv_heads"))
    kv_dim = (kv_heads if kv_heads is not None else int(shape["heads"])) * head_dim
    bias = bool(shape["bias"])
    qkv_bias = bool(shape.get("qkv_bias", bias))
    key_bias = bool(shape.get("key_bias", qkv_bias))
    total = hidden * q_dim + 2 * hidden * kv_dim + q_dim * hidden
    total += (q_dim + kv_dim if qkv_bias else 0) + (kv_dim if key_bias else 0) + (hidden if bias else 0)
    if shape.get("qk_norm", False):
        total += 2 * _norm(shape, head_dim)
    return total


def _mlp(shape: Mapping[str, Any]) -> int:
    hidden, ffn = int(shape["hidden"]), int(shape["ffn"])
    mlp_bias = bool(shape.get("mlp_bias", shape["bias"]))
    kind = shape["ffn_kind"]
    if kind in ("swiglu", "geglu"):
        return 3 * hidden * ffn + ((2 * ffn + hidden) if mlp_bias else 0)
    if kind in ("gelu", "gelu_new", "relu"):
        return 2 * hidden * ffn + ((ffn + hidden) if mlp_bias else 0)
    raise ValueError(f"unknown ffn_kind {kind!r}")


def _feed_forward(shape: Mapping[str, Any]) -> int:
    experts = _int_or_none(shape.get("experts")) or 0
    if experts > 0:
        return experts * _mlp(shape) + int(shape["hidden"]) * experts  # experts + router
    return _mlp(shape)


def _layer(shape: Mapping[str, Any], cross_attention: bool = False) -> int:
    norms = int(shape.get("norms_per_layer", 2)) + (1 if cross_attention else 0)
    attention = _attention(shape) * (2 if cross_attention else 1)
    return attention + _feed_forward(shape) + norms * _norm(shape, int(shape["hidden"]))


def _positions(shape: Mapping[str, Any], position: Any, rows: Any) -> int:
    if position != "learned":
        return 0
    return (int(rows) + int(shape.get("position_offset", 0))) * int(shape["hidden"])


def _decoder_or_encoder(shape: Mapping[str, Any], kind: str) -> int:
    hidden, vocab = int(shape["hidden"]), int(shape["vocab"])
    embedding_dim = _int_or_none(shape.get("embedding_dim")) or hidden
    total = vocab * embedding_dim
    if embedding_dim != hidden:
        total += 2 * embedding_dim * hidden  # project_in / project_out, no bias (OPT-350m)
    total += _positions(shape, shape["position"], shape["max_positions"])
    total += int(shape.get("type_vocab", 0)) * hidden
    if shape.get("embedding_norm", False):
        total += _norm(shape, hidden)
    if shape.get("relative_kind") == "deberta":
        total += 2 * int(shape["relative_buckets"]) * hidden
        if shape.get("relative_norm", False):
            total += _norm(shape, hidden)
    total += int(shape["layers"]) * _layer(shape)
    if shape.get("final_norm", True):
        total += _norm(shape, hidden)
    if shape.get("pooler", False):
        total += hidden * hidden + hidden
    if kind == "decoder" and not shape["tied_embeddings"]:
        total += vocab * embedding_dim
    if shape.get("lm_head_bias", False):
        total += vocab
    vision = shape.get("vision")
    if vision is not None:
        vision_hidden = int(vision["hidden"])
        total += _vision_transformer(vision) + vision_hidden * hidden
        if shape.get("projector_norm", False):
            total += _norm(shape, vision_hidden)
    return total


def _encoder_decoder(shape: Mapping[str, Any]) -> int:
    hidden, vocab = int(shape["hidden"]), int(shape["vocab"])
    total = vocab * hidden  # token embedding shared by both stacks (decoder only for audio)
    if not shape["tied_embeddings"]:
        total += vocab * hidden
    if shape.get("encoder_input", "tokens") == "audio":
        mel = int(shape["mel_bins"])
        total += (mel * hidden * 3 + hidden) + (hidden * hidden * 3 + hidden)
    encoder_position = shape.get("encoder_position", shape["position"])
    if encoder_position == "sinusoidal" and shape.get("encoder_max_positions") is not None:
        total += int(shape["encoder_max_positions"]) * hidden  # stored in the checkpoint
    else:
        total += _positions(shape, encoder_position, shape["max_positions"])
    total += _positions(shape, shape["position"], shape["max_positions"])
    per_stack = 0
    if shape.get("embedding_norm", False):
        per_stack += _norm(shape, hidden)
    if shape.get("final_norm", True):
        per_stack += _norm(shape, hidden)
    if shape.get("relative_kind") == "t5":
        per_stack += int(shape["relative_buckets"]) * int(shape["heads"])
    total += 2 * per_stack
    total += int(shape["encoder_layers"]) * _layer(shape)
    total += int(shape["decoder_layers"]) * _layer(shape, cross_attention=True)
    return total


def _vision_transformer(shape: Mapping[str, Any]) -> int:
    hidden = int(shape["hidden"])
    patch, channels = int(shape["patch_size"]), int(shape["channels"])
    cls = 1 if shape.get("cls_token", True) else 0
    patches = (int(shape["image_size"]) // patch) ** 2
    total = channels * patch * patch * hidden + (hidden if shape.get("patch_bias", True) else 0)
    total += cls * hidden + (patches + cls) * hidden
    if shape.get("embedding_norm", False):
        total += _norm(shape, hidden)
    total += int(shape["layers"]) * _layer(shape)
    if shape.get("final_norm", True):
        total += _norm(shape, hidden)
    classes = _int_or_none(shape.get("num_classes"))
    if classes:
        total += hidden * classes + classes
    text = shape.get("text")
    if text is not None:
        projection = int(shape["projection_dim"])
        total += _decoder_or_encoder(text, "decoder")
        total += projection * (hidden + int(text["hidden"])) + 1  # projections + logit_scale
    return total


def _cnn(shape: Mapping[str, Any]) -> Optional[int]:
    family = shape.get("family")
    if family == "resnet":
        return _resnet(shape)
    if family == "vgg":
        return _vgg(shape)
    if family == "convnext":
        return _convnext(shape)
    if family == "densenet":
        return _densenet(shape)
    return None


def _resnet(shape: Mapping[str, Any]) -> int:
    """torchvision ResNet/ResNeXt/Wide ResNet and timm's ResNet-D (deep stem); batch-norm weight
    and bias, no conv bias."""
    bottleneck = shape["block"] == "bottleneck"
    expansion = 4 if bottleneck else 1
    groups, base_width = int(shape.get("groups", 1)), int(shape.get("width_per_group", 64))
    inplanes = int(shape.get("stem_width", 64))
    if shape.get("stem_type") == "deep":  # timm's ResNet-D: 3x3 convs 3 -> w -> w -> inplanes, each with BN
        inner = int(shape["deep_stem_width"])
        total = 3 * inner * 9 + 2 * inner + inner * inner * 9 + 2 * inner + inner * inplanes * 9 + 2 * inplanes
    else:  # torchvision's 7x7 stem convolution and its batch norm
        total = 3 * inplanes * 7 * 7 + 2 * inplanes
    for stage, (depth, planes) in enumerate(zip(shape["depths"], shape["widths"])):
        for index in range(int(depth)):
            stride = 2 if stage > 0 and index == 0 else 1
            out = planes * expansion
            if bottleneck:
                width = int(planes * (base_width / 64.0)) * groups
                total += inplanes * width + 2 * width
                total += (width // groups) * width * 9 + 2 * width
                total += width * out + 2 * out
            else:
                total += inplanes * planes * 9 + 2 * planes + planes * planes * 9 + 2 * planes
            if stride != 1 or inplanes != out:
                total += inplanes * out + 2 * out
            inplanes = out
    classes = int(shape["num_classes"])
    return total + inplanes * classes + classes


def _vgg(shape: Mapping[str, Any]) -> int:
    total, channels = 0, 3
    for item in shape["config"]:
        if item == "M":
            continue
        total += channels * int(item) * 9 + int(item)
        if shape.get("batch_norm", False):
            total += 2 * int(item)
        channels = int(item)
    features = channels * 7 * 7
    for width in list(shape["classifier"]) + [int(shape["num_classes"])]:
        total += features * int(width) + int(width)
        features = int(width)
    return total


def _convnext(shape: Mapping[str, Any]) -> int:
    widths = [int(w) for w in shape["widths"]]
    total = 3 * widths[0] * 4 * 4 + widths[0] + 2 * widths[0]  # stem conv + LayerNorm2d
    for stage, (depth, dim) in enumerate(zip(shape["depths"], widths)):
        if stage > 0:
            previous = widths[stage - 1]
            total += 2 * previous + previous * dim * 4 + dim  # LayerNorm2d + 2x2 conv
        block = (dim * 49 + dim) + 2 * dim + (dim * 4 * dim + 4 * dim) + (4 * dim * dim + dim) + dim
        total += int(depth) * block
    classes = int(shape["num_classes"])
    return total + 2 * widths[-1] + widths[-1] * classes + classes


def _densenet(shape: Mapping[str, Any]) -> int:
    growth, bn_size = int(shape["growth_rate"]), int(shape["bn_size"])
    features = int(shape["init_features"])
    total = 3 * features * 7 * 7 + 2 * features
    blocks = [int(b) for b in shape["block_config"]]
    for index, layers in enumerate(blocks):
        for layer in range(layers):
            width = features + layer * growth
            inner = bn_size * growth
            total += 2 * width + width * inner + 2 * inner + inner * growth * 9
        features += layers * growth
        if index != len(blocks) - 1:
            total += 2 * features + features * (features // 2)
            features //= 2
    classes = int(shape["num_classes"])
    return total + 2 * features + features * classes + classes


# ------------------------------------------------------------------ Hugging Face configs

#: ``model_type`` of a Hugging Face ``config.json`` -> the catalogue entry whose shape flags
#: (norm, position, biases, fused projections, dropout sites, softmax upcast: how the
#: implementation computes) the family shares; the widths come from the config.
CONFIG_FAMILIES: Dict[str, str] = {
    "llama": "llama-2-7b", "mistral": "mistral-7b", "mixtral": "mixtral-8x7b", "qwen2": "qwen2-7b",
    "qwen3": "qwen3-8b", "qwen3_moe": "qwen3-30b-a3b", "gemma": "gemma-7b", "gemma2": "gemma-2-9b",
    "gemma3_text": "gemma-3-1b", "phi3": "phi-3-mini", "phi": "phi-2", "gpt2": "gpt2", "gpt_neox": "pythia-410m",
    "falcon": "falcon-7b", "opt": "opt-1.3b", "bert": "bert-base-uncased", "roberta": "roberta-base",
    "xlm-roberta": "roberta-base", "distilbert": "distilbert-base-uncased", "electra": "electra-base",
    "deberta-v2": "deberta-v3-base", "t5": "t5-base", "mt5": "flan-t5-base", "umt5": "flan-t5-base",
    "bart": "bart-base", "mbart": "bart-base", "vit": "vit-b-16", "whisper": "whisper-small",
}

#: A ``model_type`` outside ``CONFIG_FAMILIES`` whose MLP is gated SiLU (``hidden_act`` silu and an
#: ``intermediate_size``) is priced with the Llama family's flags, which most such decoders share.
_LLAMA_LIKE = "llama-2-7b"

#: Shape fields and the config keys that give them, first found wins.
_CONFIG_KEYS: Dict[str, Tuple[str, ...]] = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "hidden": ("hidden_size", "n_embd", "d_model", "dim"),
    "heads": ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "head_dim": ("head_dim", "d_kv"),
    "ffn": ("intermediate_size", "n_inner", "ffn_dim", "d_ff", "hidden_dim", "encoder_ffn_dim"),
    "vocab": ("vocab_size",),
    "max_positions": ("max_position_embeddings", "n_positions", "max_target_positions"),
    "tied_embeddings": ("tie_word_embeddings",),
    "experts": ("num_local_experts", "num_experts"),
    "experts_per_token": ("num_experts_per_tok",),
    "type_vocab": ("type_vocab_size",),
    "image_size": ("image_size",),
    "patch_size": ("patch_size",),
    "channels": ("num_channels",),
    "relative_buckets": ("relative_attention_num_buckets", "position_buckets"),
    "mel_bins": ("num_mel_bins",),
    "encoder_max_positions": ("max_source_positions",),
}

#: Config keys of dropout rates: residual / embedding dropout, and on the attention probabilities.
_DROPOUT_KEYS = ("hidden_dropout_prob", "resid_pdrop", "hidden_dropout", "dropout_rate", "dropout")
_ATTENTION_DROPOUT_KEYS = ("attention_probs_dropout_prob", "attn_pdrop", "attention_dropout")

#: Families whose config leaves the MLP width implicit at 4 x hidden (GPT-2's ``n_inner: null``,
#: Falcon).
_FFN_FOUR_HIDDEN = ("gpt2", "falcon")

#: Fields a config must give, by kind (the names shown are the first spelling of each).
_REQUIRED: Dict[str, Tuple[str, ...]] = {
    "decoder": ("layers", "hidden", "heads", "ffn", "vocab"),
    "encoder": ("layers", "hidden", "heads", "ffn", "vocab"),
    "encoder-decoder": ("hidden", "heads", "ffn", "vocab"),
    "vision-transformer": ("layers", "hidden", "heads", "ffn", "image_size", "patch_size"),
}


def _config_value(config: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if key in config and config[key] is not None:
            return config[key]
    return None


def _config_int(config: Mapping[str, Any], field: str, keys: Sequence[str]) -> Optional[int]:
    value = _config_value(config, keys)
    if value is None:
        return None
    if isinstance(value, list) and value and field in ("image_size", "patch_size"):
        value = value[0]  # (height, width)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 10**9:
        raise CatalogueError(f"{keys[0]} must be a positive integer, got {shown_value(str(value))}")
    return value


#: Shape fields a config that leaves them out keeps from its family's entry (a family constant or
#: the config class's default); every other width it leaves out is not known.
_TEMPLATE_DEFAULTS = frozenset({"tied_embeddings", "type_vocab", "channels", "relative_buckets", "mel_bins",
                                "encoder_max_positions", "image_size", "patch_size"})


def model_from_config(config: Any, path: str) -> ModelSpec:
    """A ``ModelSpec`` for a Hugging Face ``config.json`` (its parsed object) read from ``path``:
    the widths from the config, the computing flags from the catalogue entry of its family
    (``CONFIG_FAMILIES``), the parameter count from the shape (``count_params``, the function the
    catalogue's published counts are checked with). Its ``origin`` is ``config PATH``.

    ``CatalogueError`` (one line) for what is not a config, a family the estimator cannot price,
    a missing field (named by its first spelling) or a value that is not a positive integer.
    """
    if not isinstance(config, Mapping):
        raise CatalogueError("not a Hugging Face model config (a JSON object with model_type, "
                             "num_hidden_layers, hidden_size, ...)")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type.strip():
        raise CatalogueError("missing model_type (the family: llama, gpt2, bert, t5, ...)")
    family = model_type.strip().lower()
    template_key = CONFIG_FAMILIES.get(family)
    if template_key is None:
        gated = str(config.get("hidden_act", "")).lower() in ("silu", "swish") and "intermediate_size" in config
        if not gated:
            raise CatalogueError(f"model_type {shown_value(model_type)} is not a family the estimator can price "
                                 f"(known: {', '.join(CONFIG_FAMILIES)}, or a decoder with a gated SiLU MLP); "
                                 "give --params N")
        template_key = _LLAMA_LIKE
    if family in ("t5", "mt5", "umt5"):
        gated_t5 = str(config.get("feed_forward_proj", "relu")).startswith("gated")
        template_key = "flan-t5-base" if gated_t5 else "t5-base"
    template = {spec.key: spec for spec in _model_table()[0]}[template_key]
    kind = template.kind
    shape: Dict[str, Any] = dict(template.shape)
    for field, keys in _CONFIG_KEYS.items():
        if field == "tied_embeddings":
            value = config.get("tie_word_embeddings")
            if isinstance(value, bool):
                shape[field] = value
            continue
        found = _config_int(config, field, keys)
        if found is not None:
            shape[field] = found
        elif field in ("experts", "experts_per_token"):
            shape[field] = 0
        elif field not in _TEMPLATE_DEFAULTS:
            shape[field] = None
    if family == "qwen3_moe":  # the experts' width; intermediate_size is the dense layers'
        shape["ffn"] = _config_int(config, "ffn", ("moe_intermediate_size",)) or shape["ffn"]
    if family == "falcon" and config.get("multi_query", True) and not config.get("new_decoder_architecture"):
        shape["kv_heads"] = 1
    if shape["ffn"] is None and family in _FFN_FOUR_HIDDEN and shape["hidden"] is not None:
        shape["ffn"] = 4 * int(shape["hidden"])
    if kind == "encoder-decoder":
        encoder = _config_int(config, "encoder_layers", ("encoder_layers", "num_layers"))
        if encoder is None:
            raise CatalogueError("missing encoder_layers (or num_layers)")
        decoder = _config_int(config, "decoder_layers", ("decoder_layers", "num_decoder_layers")) or encoder
        shape["encoder_layers"], shape["decoder_layers"], shape["layers"] = encoder, decoder, None
    if kind == "vision-transformer":
        labels = config.get("id2label")
        shape["num_classes"] = len(labels) if isinstance(labels, Mapping) and labels else None
    for field in _REQUIRED[kind]:
        if shape.get(field) is None:
            raise CatalogueError(f"missing {_CONFIG_KEYS[field][0]} (a {kind} config needs "
                                 f"{', '.join(_CONFIG_KEYS[f][0] for f in _REQUIRED[kind])})")
    if kind != "vision-transformer" and shape.get("position") == "learned" and not shape.get("max_positions"):
        raise CatalogueError("missing max_position_embeddings (learned positions are parameters)")
    dropout = _config_value(config, _DROPOUT_KEYS)
    if isinstance(dropout, (int, float)) and not isinstance(dropout, bool):
        shape["dropout"] = dropout > 0
    attention = _config_value(config, _ATTENTION_DROPOUT_KEYS)
    if isinstance(attention, (int, float)) and not isinstance(attention, bool):
        shape["attention_dropout"] = attention > 0
    heads, hidden = int(shape["heads"]), int(shape["hidden"])
    if shape.get("head_dim") is None and hidden % heads:
        raise CatalogueError(f"hidden_size {hidden} is not a multiple of the {heads} attention heads; give head_dim")
    name = config.get("_name_or_path")
    if isinstance(name, str) and name.strip() and len(name) <= MAX_NAME_CHARS and "\n" not in name:
        key = name.strip()
    else:
        key = f"{family} ({os.path.basename(path) or path})"
    frozen = _freeze(shape)
    params = count_params(ModelSpec(key=key, kind=kind, params=1, source="", shape=frozen, aliases=()))
    if params is None or params <= 0:
        raise CatalogueError("cannot count the parameters of this config")
    how = f"flags of {template_key}" + ("" if family in CONFIG_FAMILIES else f", model_type {family} as Llama-like")
    source = f"Hugging Face config (model_type {family}; widths from the config, {how})"
    return ModelSpec(key=key, kind=kind, params=params, source=source, shape=frozen, aliases=(),
                     origin=f"config {path}")


# ------------------------------------------------------------------------------ GPUs


def _target(key: str, entry: Mapping[str, Any], count: int = 1, instance: Optional[str] = None,
            label: Optional[str] = None, source: Optional[str] = None) -> GpuTarget:
    name = str(entry["name"]) if count == 1 else f"{count}x {entry['name']}"
    return GpuTarget(
        key=label or key,
        name=f"{label or instance} ({name})" if instance is not None else name,
        count=count,
        memory_bytes=int(entry["memory_mib"]) * MIB,
        usable_bytes=int(entry["usable_mib"]) * MIB,
        context_bytes=int(entry["context_mib"]) * MIB,
        bf16=bool(entry["bf16"]),
        source=source or entry["source"],
        gpu_key=key,
        instance=instance,
    )


def list_gpus() -> List[GpuTarget]:
    """Every catalogue GPU as a one-device target, in catalogue order."""
    gpus = _gpu_table()[0]
    return [_target(key, entry) for key, entry in gpus.items()]


def _instance_target(key: str, entry: Mapping[str, Any]) -> GpuTarget:
    gpu = str(entry["gpu"])
    return _target(gpu, _gpu_table()[0][gpu], int(entry["count"]), key, key, str(entry["source"]))


def list_instances() -> List[Tuple[str, GpuTarget, str]]:
    """Every cloud instance as ``(instance key, target, provider)``."""
    instances = _gpu_table()[1]
    return [
        (key, _instance_target(key, entry), str(entry["provider"]))
        for key, entry in instances.items()
    ]


def _lookup_gpu(name: str) -> Optional[GpuTarget]:
    gpus, instances, exact, loose = _gpu_table()
    forms = [name]
    lowered = _normal(name)
    for prefix in _INSTANCE_PREFIXES:
        if lowered.startswith(prefix):
            forms.append(lowered[len(prefix):])
    for table, form in ((exact, _normal), (loose, _compact)):
        for candidate in forms:
            key = table.get(form(candidate))
            if key is None:
                continue
            if key in gpus:
                return _target(key, gpus[key])
            return _instance_target(key, instances[key])
    return None


def find_gpu(name: str) -> GpuTarget:
    """Resolve a GPU key or alias, a cloud instance, or ``<N>x<gpu>`` (``8xh100-sxm``)."""
    if len(name) > MAX_NAME_CHARS:
        raise _unknown("GPU or instance", name, (), _GPUS_HINT)
    target = _lookup_gpu(name)
    if target is not None:
        return target
    match = _COUNT_RE.match(name.strip().lower())
    if match is not None:
        digits = match.group(1).lstrip("0") or "0"
        count = int(digits) if len(digits) <= len(str(MAX_DEVICES)) else MAX_DEVICES + 1
        inner = _lookup_gpu(match.group(2))
        if inner is not None and count < 1:
            raise CatalogueError(f"invalid device count in '{name.strip()}': it must be at least 1")
        if inner is not None and count * inner.count > MAX_DEVICES:
            raise CatalogueError(f"invalid device count in '{name.strip()}': it must be at least 1 and at most "
                                 f"{MAX_DEVICES:,} devices in all")
        if inner is not None:
            gpus = _gpu_table()[0]
            key = inner.gpu_key or inner.key
            if inner.instance is not None:  # "2xp4d.24xlarge": two instances
                return _target(key, gpus[key], count * inner.count, inner.instance, f"{count}x{inner.key}",
                               inner.source)
            return _target(key, gpus[key], count, None, f"{count}x{key}")
    exact = _gpu_table()[2]
    query = match.group(2) if match is not None else name
    raise _unknown("GPU or instance", name, _suggest(query, exact.items()), _GPUS_HINT)


def parse_size(text: str) -> int:
    """Bytes for ``48GiB``, ``48 GiB``, ``80GB`` (10**9), ``500MiB``, ``1.5TiB``.

    Bare numbers, negatives, zero and anything else raise ``CatalogueError``.
    """
    match = _SIZE_RE.match(text) if isinstance(text, str) and len(text) <= MAX_NAME_CHARS else None
    if match is None:
        raise CatalogueError(f"invalid size {shown_value(str(text))}; {_SIZE_FORMS}")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:  # pragma: no cover - the pattern only admits decimals
        raise CatalogueError(f"invalid size {text!r}; {_SIZE_FORMS}") from None
    base = 1024 if match.group(3) else 1000
    scale = base ** _SIZE_POWERS[match.group(2).lower()]
    if number > Decimal(MAX_SIZE_BYTES) / scale:
        raise CatalogueError(f"invalid size {shown_value(text)}: it must be at most 1 PiB (1024 TiB)")
    size = int(number * scale)
    if size <= 0:
        raise CatalogueError(f"invalid size {text!r}: it must be more than zero bytes; {_SIZE_FORMS}")
    return size


def gpu_from_memory(size_text: str) -> GpuTarget:
    """A one-device target of explicit capacity (``--gpu-memory``) for unlisted hardware.

    The whole given size counts as usable; the CUDA context is
    ``DEFAULT_CONTEXT_MIB``; bf16 is assumed supported.
    """
    size = parse_size(size_text)
    label = "".join(size_text.split()).lower()
    return GpuTarget(
        key=f"custom-{label}",
        name=f"custom GPU ({size_text.strip()})",
        count=1,
        memory_bytes=size,
        usable_bytes=size,
        context_bytes=DEFAULT_CONTEXT_MIB * MIB,
        bf16=True,
        source="--gpu-memory",
        gpu_key=None,
        instance=None,
    )
