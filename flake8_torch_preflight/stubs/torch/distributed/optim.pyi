"""Stub of ``torch.distributed.optim`` for astroid inference.  Never imported, only parsed.

``DistributedOptimizer`` steps gradients kept per distributed-autograd context: it is not a
``torch.optim.Optimizer`` and has no ``zero_grad``.
"""
import torch.optim


class DistributedOptimizer:
    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        pass

    def step(self, context_id):
        return None


class ZeroRedundancyOptimizer(torch.optim.Optimizer):
    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        self.param_groups = []

    def zero_grad(self, set_to_none=True):
        return None

    def step(self, closure=None):
        return None

    def consolidate_state_dict(self, to=0):
        return None
