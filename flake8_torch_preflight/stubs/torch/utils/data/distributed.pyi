"""Stub of ``torch.utils.data.distributed`` for astroid inference.  Never imported, only parsed."""
from torch.utils.data import DistributedSampler
