"""Stub of ``torch.autograd`` for astroid inference.  Never imported, only parsed."""
import torch
from torch import no_grad, enable_grad, set_grad_enabled, inference_mode


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    return (torch.Tensor(),)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    return None


class Function:
    @staticmethod
    def forward(ctx, *args, **kwargs):
        return torch.Tensor()

    @staticmethod
    def backward(ctx, *grad_outputs):
        return torch.Tensor()

    @classmethod
    def apply(cls, *args, **kwargs):
        return torch.Tensor()


class set_detect_anomaly:
    def __init__(self, mode, check_nan=True):
        pass

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def detect_anomaly(check_nan=True):
    return set_detect_anomaly(True)
