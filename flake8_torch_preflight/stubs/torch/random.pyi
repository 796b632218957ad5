"""Stub of ``torch.random`` for astroid inference: where torch defines the seeding of its default
generator (``torch.manual_seed`` and ``torch.seed`` re-export these).  Never imported, only parsed."""
import torch


def manual_seed(seed):
    return torch.Generator()


def seed():
    return 0


def initial_seed():
    return 0
