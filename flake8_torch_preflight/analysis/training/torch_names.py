"""Qualified names used by more than one rule (as ``qname()`` gives them from the stubs)."""
from __future__ import annotations

#: Base class of every module; instances of subclasses are models or layers.
MODULE_BASES = frozenset({"torch.nn.Module"})

#: Base class of the torch loss modules (parameter-free, not a model).
LOSS_BASES = frozenset({"torch.nn._Loss"})

#: Base class of every torch optimizer.
OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer"})

#: Context managers / decorators that turn autograd off when called with no argument.
GRAD_OFF_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode"})

#: ``set_grad_enabled(False)`` turns autograd off; ``inference_mode(False)`` does not.
GRAD_MODE_SETTERS = frozenset({"torch.set_grad_enabled"})

#: Softmax-family functions, layers and tensor methods.
SOFTMAX_FUNCTIONS = frozenset(
    {"torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax"}
)
LOG_SOFTMAX_FUNCTIONS = frozenset(
    {"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.Tensor.log_softmax"}
)
SOFTMAX_LAYERS = frozenset({"torch.nn.Softmax", "torch.nn.LogSoftmax"})

#: Sigmoid functions, layers and tensor methods.
SIGMOID_FUNCTIONS = frozenset(
    {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.Tensor.sigmoid"}
)
SIGMOID_LAYERS = frozenset({"torch.nn.Sigmoid"})

#: Model wrappers whose ``module`` is the real model.
MODEL_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
    }
)

#: Gradient scalers (``torch.cuda.amp.GradScaler`` subclasses ``torch.amp.GradScaler``).
GRAD_SCALERS = frozenset({"torch.amp.GradScaler", "torch.cuda.amp.GradScaler"})

#: Autocast context managers.
AUTOCAST_CONTEXTS = frozenset({"torch.amp.autocast", "torch.cuda.amp.autocast"})

#: The DataLoader class.
DATALOADERS = frozenset({"torch.utils.data.DataLoader"})

#: Losses that apply log_softmax to their input themselves (TP006's double softmax, TP007's logits).
LOG_SOFTMAX_LOSSES = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.functional.cross_entropy"})

#: The loss classes that apply log_softmax themselves (a trainer is handed the class or an instance).
CROSS_ENTROPY_CLASSES = frozenset({"torch.nn.CrossEntropyLoss"})
