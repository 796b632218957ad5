"""Stub of ``torch.distributed`` for astroid inference.  Never imported, only parsed."""
import torch.distributed.fsdp as fsdp
import torch.distributed.optim as optim
import torch.distributed.autograd as autograd


class ReduceOp:
    SUM = 0
    AVG = 1
    MAX = 2
    MIN = 3


def is_available():
    return True


def is_initialized():
    return True


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None, group_name="", pg_options=None, device_id=None):
    return None


def destroy_process_group(group=None):
    return None


def get_rank(group=None):
    return 0


def get_world_size(group=None):
    return 1


def barrier(group=None, async_op=False, device_ids=None):
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    return None


def all_gather(tensor_list, tensor, group=None, async_op=False):
    return None


def broadcast(tensor, src, group=None, async_op=False):
    return None


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    return None
