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

#: Layers whose forward reads ``self.training`` (dropout, batch-norm running statistics, recurrent and
#: attention layers with a ``dropout`` argument): ``eval()`` changes what they compute.  Subclasses count
#: (``Dropout2d``, ``BatchNorm2d``, ``SyncBatchNorm``, ``LSTM``); ``InstanceNorm`` only with
#: ``track_running_stats=True`` (``INSTANCE_NORMS``).  A torch layer the stubs do not define
#: (``RReLU``, ``LazyBatchNorm1d``) does not resolve, so a model that builds one is unknown.
MODE_DEPENDENT_LAYERS = frozenset(
    "torch.nn." + name
    for name in (
        "Dropout", "AlphaDropout", "BatchNorm1d", "RNNBase", "MultiheadAttention", "TransformerEncoderLayer",
        "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder", "Transformer",
    )
)

#: Instance norms: running statistics (hence a train/eval difference) only with ``track_running_stats=True``.
INSTANCE_NORMS = frozenset({"torch.nn.InstanceNorm1d", "torch.nn.InstanceNorm2d"})

#: torch.nn modules whose forward is the same in train and eval mode (containers included).  A torch class in
#: neither set is not known either way.
MODE_FREE_LAYERS = frozenset(
    "torch.nn." + name
    for name in (
        "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity", "Linear",
        "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
        "ConvTranspose3d", "LayerNorm", "RMSNorm", "GroupNorm", "Embedding", "EmbeddingBag", "ReLU", "ReLU6",
        "LeakyReLU", "PReLU", "ELU", "GELU", "SiLU", "Mish", "Hardswish", "Hardsigmoid", "Tanh", "Sigmoid",
        "Softplus", "Softmax", "LogSoftmax", "Softmax2d", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d",
        "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d", "AdaptiveMaxPool2d", "Upsample", "PixelShuffle", "ZeroPad2d",
    )
)

#: The pre-0.4 autograd wrapper (``Variable(x)``; since 0.4 it returns ``x``, on the same device).
#: Matched by its import path (``infer.dotted_name``): the stubs do not define it.
VARIABLE = "torch.autograd.Variable"
