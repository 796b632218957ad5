"""Optimizer names as training code and recipes write them, by the cost model's names.

Shared by the script reader (``extract``) and the recipe reader (``recipe``), which must not
import astroid.
"""
from __future__ import annotations

#: torch.optim classes by the cost model's optimizer names. NAdam/RAdam/Adamax/Adadelta keep
#: two state tensors per parameter, as Adam does.
TORCH_OPTIMIZERS = {
    "torch.optim.SGD": "sgd",
    "torch.optim.Adam": "adam",
    "torch.optim.AdamW": "adamw",
    "torch.optim.NAdam": "adam",
    "torch.optim.RAdam": "adam",
    "torch.optim.Adamax": "adam",
    "torch.optim.Adadelta": "adam",
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
