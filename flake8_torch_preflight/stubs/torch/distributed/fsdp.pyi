"""Stub of ``torch.distributed.fsdp`` for astroid inference.  Never imported, only parsed."""
import torch.nn


class FullyShardedDataParallel(torch.nn.Module):
    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None, auto_wrap_policy=None, backward_prefetch=None, mixed_precision=None, ignored_modules=None, param_init_fn=None, device_id=None, sync_module_states=False, forward_prefetch=False, limit_all_gathers=True, use_orig_params=False, ignored_states=None, device_mesh=None):
        self.module = module


class MixedPrecision:
    def __init__(self, param_dtype=None, reduce_dtype=None, buffer_dtype=None, keep_low_precision_grads=False, cast_forward_inputs=False, cast_root_forward_inputs=True):
        self.param_dtype = param_dtype


class ShardingStrategy:
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4


class CPUOffload:
    def __init__(self, offload_params=False):
        self.offload_params = offload_params


def fully_shard(module, **kwargs):
    return module
