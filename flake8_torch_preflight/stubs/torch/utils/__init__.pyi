"""Stub of ``torch.utils`` for astroid inference.  Never imported, only parsed."""
import torch.utils.data as data
import torch.utils.checkpoint as checkpoint
