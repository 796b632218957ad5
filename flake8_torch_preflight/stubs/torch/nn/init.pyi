"""Stub of ``torch.nn.init`` for astroid inference.  Never imported, only parsed."""
import torch


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return tensor


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return tensor


def zeros_(tensor):
    return tensor


def ones_(tensor):
    return tensor


def constant_(tensor, val):
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    return tensor


def xavier_normal_(tensor, gain=1.0, generator=None):
    return tensor


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return tensor


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    return tensor


def orthogonal_(tensor, gain=1, generator=None):
    return tensor
