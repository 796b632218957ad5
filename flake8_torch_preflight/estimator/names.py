"""Optimizer names as training code and recipes write them, by the cost model's names.

Shared by the script reader (``extract``) and the recipe reader (``recipe``), which must not
import astroid.
"""
from __future__ import annotations

import re
from typing import Iterator, Optional

from .catalogue import CatalogueError, ModelSpec, find_model

#: A released checkpoint's name ends in these to say it is a fine-tune, a chat or instruction
#: tuning, a date-stamped re-release or a packaging of the same weights' shapes
#: (``Qwen3-4B-Instruct-2507``, ``gemma-2-9b-it``, ``Llama-2-7b-chat-hf``).
_VARIANT_SUFFIX = re.compile(r"[-_.](instruct|chat|it|base|hf|sft|dpo|orpo|rlhf|\d{4})$", re.IGNORECASE)

#: Meta's own prefix on Llama 3 repository names (``Meta-Llama-3.1-8B``).
_META_PREFIX = re.compile(r"^meta-(?=llama)", re.IGNORECASE)

#: Suffixes stripped at most, one after another.
_MAX_SUFFIXES = 4

#: torch.optim classes by the cost model's optimizer names. NAdam/RAdam/Adamax keep two state
#: tensors per parameter, as Adam does; Adadelta has its own entry (two states, and a step with
#: two temporary copies).
TORCH_OPTIMIZERS = {
    "torch.optim.SGD": "sgd",
    "torch.optim.Adam": "adam",
    "torch.optim.AdamW": "adamw",
    "torch.optim.NAdam": "adam",
    "torch.optim.RAdam": "adam",
    "torch.optim.Adamax": "adam",
    "torch.optim.Adadelta": "adadelta",
    "torch.optim.Adagrad": "adagrad",
    "torch.optim.RMSprop": "rmsprop",
    "torch.optim.Adafactor": "adafactor",
}

#: Third-party optimizers by import name.
EXTERNAL_OPTIMIZERS = {
    "bitsandbytes.optim.AdamW8bit": "adamw-8bit",
    "bitsandbytes.optim.Adam8bit": "adamw-8bit",
    "bitsandbytes.optim.PagedAdamW8bit": "adamw-8bit",
    "bitsandbytes.optim.PagedAdam8bit": "adamw-8bit",
    "bitsandbytes.optim.AdamW": "adamw",
    "bitsandbytes.optim.Lion": "lion",
    "lion_pytorch.Lion": "lion",
    "transformers.Adafactor": "adafactor",
    "transformers.optimization.Adafactor": "adafactor",
    # torchtune's QLoRA recipes: 8-bit states in blocks of 256 with an fp32 scale, as bitsandbytes'
    "torchao.optim.AdamW8bit": "adamw-8bit",
    "torchao.prototype.low_bit_optim.AdamW8bit": "adamw-8bit",
    "bitsandbytes.optim.PagedAdamW": "adamw",
}

#: ``TrainingArguments(optim=...)`` values (transformers ``OptimizerNames``).
HF_OPTIM = {
    "adamw_hf": "adamw", "adamw_torch": "adamw", "adamw_torch_fused": "adamw", "adamw_apex_fused": "adamw",
    "adamw_anyprecision": "adamw", "adamw_bnb_8bit": "adamw-8bit", "adamw_8bit": "adamw-8bit",
    "paged_adamw_8bit": "adamw-8bit", "paged_adamw_32bit": "adamw", "adafactor": "adafactor", "sgd": "sgd",
    "adagrad": "adagrad", "rmsprop": "rmsprop", "lion_32bit": "lion", "paged_lion_32bit": "lion",
}


def _name_variants(name: str) -> Iterator[str]:
    """``name``, without its organisation, without Meta's prefix, then with each fine-tune
    suffix stripped in turn (``NousResearch/Meta-Llama-3.1-8B-Instruct`` -> ``Llama-3.1-8B``)."""
    yield name
    bare = name.rsplit("/", 1)[-1]
    bare = _META_PREFIX.sub("", bare)
    yield bare
    for _ in range(_MAX_SUFFIXES):
        stripped = _VARIANT_SUFFIX.sub("", bare)
        if stripped == bare or not stripped:
            return
        bare = stripped
        yield bare


def resolve_model(name: str) -> Optional[ModelSpec]:
    """The catalogue entry of a model name as training code and recipes write it: the name
    itself (a key, an alias, a Hugging Face id), else the same name without an organisation,
    Meta's prefix or the suffixes of a fine-tune of the same architecture; ``None`` when none
    of them is in the catalogue."""
    for candidate in _name_variants(str(name)):
        try:
            return find_model(candidate)
        except CatalogueError:
            continue
    return None
