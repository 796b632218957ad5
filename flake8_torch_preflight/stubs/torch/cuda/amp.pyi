"""Stub of ``torch.cuda.amp`` (deprecated aliases of ``torch.amp``) for astroid inference."""
import torch.amp


class autocast(torch.amp.autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        self.device_type = "cuda"
        self.fast_dtype = dtype


class GradScaler(torch.amp.GradScaler):
    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        pass
