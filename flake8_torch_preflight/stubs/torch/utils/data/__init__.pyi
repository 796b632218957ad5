"""Stub of ``torch.utils.data`` for astroid inference.  Never imported, only parsed."""
import torch
import torch.utils.data.distributed as distributed


class Dataset:
    def __getitem__(self, index):
        return None

    def __len__(self):
        return 0


class IterableDataset(Dataset):
    def __iter__(self):
        return iter([])


class TensorDataset(Dataset):
    def __init__(self, *tensors):
        self.tensors = tensors


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = datasets


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        return iter([0])

    def __len__(self):
        return 0


class SequentialSampler(Sampler): pass
class RandomSampler(Sampler):
    def __init__(self, data_source, replacement=False, num_samples=None, generator=None): pass
class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None): pass
class WeightedRandomSampler(Sampler):
    def __init__(self, weights, num_samples, replacement=True, generator=None): pass


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        self.sampler = sampler


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        self.dataset = dataset

    def set_epoch(self, epoch):
        return None


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None, prefetch_factor=None, persistent_workers=False, pin_memory_device=""):
        self.dataset = dataset
        self.batch_size = batch_size
        self.sampler = sampler
        self.batch_sampler = batch_sampler

    def __iter__(self):
        return iter([torch.Tensor()])

    def __len__(self):
        return 0


def random_split(dataset, lengths, generator=None):
    return [Subset(dataset, [])]


def default_collate(batch):
    return batch


def get_worker_info():
    return None
