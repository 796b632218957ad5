"""Stub of ``torch.nn.parallel`` for astroid inference.  Never imported, only parsed."""
import torch.nn


class DataParallel(torch.nn.Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        self.module = module


class DistributedDataParallel(torch.nn.Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True, process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False, gradient_as_bucket_view=False, static_graph=False):
        self.module = module

    def no_sync(self):
        return torch.no_grad()
