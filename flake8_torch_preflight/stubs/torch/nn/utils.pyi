"""Stub of ``torch.nn.utils`` for astroid inference.  Never imported, only parsed."""
import torch


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    return torch.Tensor()


def clip_grad_value_(parameters, clip_value, foreach=None):
    return None


def parameters_to_vector(parameters):
    return torch.Tensor()
