"""Stub of ``torch.cuda`` for astroid inference.  Never imported, only parsed."""
import torch.cuda.amp as amp


def is_available():
    return True


def is_bf16_supported(including_emulation=True):
    return True


def device_count():
    return 1


def current_device():
    return 0


def set_device(device):
    return None


def synchronize(device=None):
    return None


def empty_cache():
    return None


def manual_seed(seed):
    return None


def manual_seed_all(seed):
    return None


def seed():
    return None


def seed_all():
    return None


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


def reset_peak_memory_stats(device=None):
    return None


def mem_get_info(device=None):
    return (0, 0)


def get_device_name(device=None):
    return ""


class device:
    def __init__(self, device):
        pass

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


class Stream:
    def __init__(self, device=None, priority=0):
        pass

    def synchronize(self):
        return None


class Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        pass

    def record(self, stream=None):
        return None

    def synchronize(self):
        return None

    def elapsed_time(self, end_event):
        return 0.0


def stream(stream):
    return Stream()


def current_stream(device=None):
    return Stream()
