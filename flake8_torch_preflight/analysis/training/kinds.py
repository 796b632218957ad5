"""What a value is for a training run: one answer, ``kind(expr)``, over the kinds the rules ask about.

``kind(expr)`` returns one of :data:`TENSOR`, :data:`MODEL`, :data:`LOSS`, :data:`LAYER`,
:data:`OPTIMIZER`, :data:`SCALER`, :data:`LOADER`, :data:`SAMPLER` or :data:`UNKNOWN`.  It holds
no knowledge of its own: each kind is the answer of the module that already decides it, read from
the binding (astroid inference against the stubs, reaching assignments), never from the name:

* a module (model, loss, parameter-free layer): ``models.kind``;
* a tensor: ``device.is_tensor``;
* an optimizer: an instance of ``torch.optim.Optimizer`` (or a subclass), as
  ``training_step.is_step_call`` and ``gradients.is_optimizer`` resolve a receiver;
* a gradient scaler: an instance of a ``GradScaler``, as ``gradients`` and ``training_step`` resolve
  the receiver of ``scaler.step(opt)``;
* a DataLoader and a sampler: ``loader_use.is_loader`` / ``loader_use.is_sampler``.

The documented name fallbacks of those modules (``models.model_named``, ``gradients.OPTIMIZER_NAME``
and ``SCALER_NAME``) are not consulted: a value whose binding cannot be read is :data:`UNKNOWN`,
whatever it is called.
"""
from __future__ import annotations

from astroid import nodes

from . import device, loader_use, models
from ..semantic import infer
from .models import LAYER, LOSS, MODEL
from .torch_names import GRAD_SCALERS, OPTIMIZER_BASES

#: Results of :func:`kind` (the module kinds are ``models``' own constants).
TENSOR, OPTIMIZER, SCALER, LOADER, SAMPLER, UNKNOWN = "tensor", "optimizer", "scaler", "loader", "sampler", "unknown"

#: Every answer :func:`kind` gives.
KINDS = (TENSOR, MODEL, LOSS, LAYER, OPTIMIZER, SCALER, LOADER, SAMPLER, UNKNOWN)


def kind(expr: nodes.NodeNG) -> str:
    """The kind of the value ``expr`` evaluates to (see the module docstring); :data:`UNKNOWN`
    when its binding does not say."""
    module_kind = models.kind(expr)
    if module_kind is not None:
        return module_kind
    if device.is_tensor(expr):
        return TENSOR
    if infer.is_instance_of(expr, OPTIMIZER_BASES):
        return OPTIMIZER
    if infer.is_instance_of(expr, GRAD_SCALERS):
        return SCALER
    if loader_use.is_loader(expr):
        return LOADER
    if loader_use.is_sampler(expr):
        return SAMPLER
    return UNKNOWN


__all__ = ["kind", "KINDS", "TENSOR", "MODEL", "LOSS", "LAYER", "OPTIMIZER", "SCALER", "LOADER", "SAMPLER",
           "UNKNOWN"]
