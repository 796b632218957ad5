"""Stub of ``torch.amp`` for astroid inference.  Never imported, only parsed."""
import torch


class autocast:
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device_type = device_type
        self.fast_dtype = dtype

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None

    def __call__(self, func):
        return func


class GradScaler:
    def __init__(self, device="cuda", init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        pass

    def scale(self, outputs):
        return torch.Tensor()

    def unscale_(self, optimizer):
        return None

    def step(self, optimizer, *args, **kwargs):
        return None

    def update(self, new_scale=None):
        return None

    def get_scale(self):
        return 1.0

    def is_enabled(self):
        return True

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        return None
