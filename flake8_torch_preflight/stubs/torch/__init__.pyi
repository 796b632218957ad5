"""Stub of ``torch`` for astroid inference.  Never imported, only parsed.

Each name is defined at the public path users write, so ``qname()`` gives
``torch.softmax`` or ``torch.Tensor``.  Factories return ``Tensor()`` so that
method calls on their results resolve.
"""
import torch.nn as nn
import torch.optim as optim
import torch.utils as utils
import torch.cuda as cuda
import torch.amp as amp
import torch.random as random
import torch.autograd as autograd
import torch.distributed as distributed
from torch.amp import autocast


class dtype:
    is_floating_point = True


float32 = dtype()
float = float32
float64 = dtype()
double = float64
float16 = dtype()
half = float16
bfloat16 = dtype()
int8 = dtype()
uint8 = dtype()
int16 = dtype()
int32 = dtype()
int64 = dtype()
long = int64
bool = dtype()


class device:
    def __init__(self, type, index=None):
        self.type = type
        self.index = index


class Size(tuple):
    def numel(self):
        return 0


class Generator:
    def __init__(self, device="cpu"):
        pass

    def manual_seed(self, seed):
        return self

    def seed(self):
        return 0


class Tensor:
    grad = None
    requires_grad = False
    is_cuda = False
    device = device("cpu")
    dtype = float32
    shape = Size()
    data = None
    T = None

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        return None

    def item(self):
        return 0.0

    def tolist(self):
        return []

    def numpy(self, force=False):
        return None

    def detach(self):
        return Tensor()

    def detach_(self):
        return self

    def clone(self, memory_format=None):
        return Tensor()

    def cpu(self, memory_format=None):
        return Tensor()

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        return Tensor()

    def to(self, *args, **kwargs):
        return Tensor()

    def pin_memory(self):
        return Tensor()

    def half(self):
        return Tensor()

    def float(self):
        return Tensor()

    def double(self):
        return Tensor()

    def bfloat16(self):
        return Tensor()

    def long(self):
        return Tensor()

    def int(self):
        return Tensor()

    def bool(self):
        return Tensor()

    def type(self, dtype=None, non_blocking=False):
        return Tensor()

    def size(self, dim=None):
        return Size()

    def dim(self):
        return 0

    def numel(self):
        return 0

    def requires_grad_(self, requires_grad=True):
        return self

    def retain_grad(self):
        return None

    def zero_(self):
        return self

    def softmax(self, dim=None, dtype=None):
        return Tensor()

    def log_softmax(self, dim=None, dtype=None):
        return Tensor()

    def sigmoid(self):
        return Tensor()

    def sigmoid_(self):
        return self

    def uniform_(self, a=0.0, b=1.0, generator=None):
        return self

    def normal_(self, mean=0.0, std=1.0, generator=None):
        return self

    def random_(self, *args, generator=None):
        return self

    def bernoulli_(self, p=0.5, generator=None):
        return self

    def exponential_(self, lambd=1.0, generator=None):
        return self

    def geometric_(self, p, generator=None):
        return self

    def cauchy_(self, median=0.0, sigma=1.0, generator=None):
        return self

    def log_normal_(self, mean=1.0, std=2.0, generator=None):
        return self

    def relu(self):
        return Tensor()

    def tanh(self):
        return Tensor()

    def exp(self):
        return Tensor()

    def log(self):
        return Tensor()

    def sum(self, dim=None, keepdim=False, dtype=None):
        return Tensor()

    def mean(self, dim=None, keepdim=False, dtype=None):
        return Tensor()

    def max(self, dim=None, keepdim=False):
        return Tensor()

    def min(self, dim=None, keepdim=False):
        return Tensor()

    def argmax(self, dim=None, keepdim=False):
        return Tensor()

    def argmin(self, dim=None, keepdim=False):
        return Tensor()

    def argsort(self, dim=-1, descending=False):
        return Tensor()

    def topk(self, k, dim=None, largest=True, sorted=True):
        return Tensor()

    def eq(self, other):
        return Tensor()

    def ne(self, other):
        return Tensor()

    def view(self, *shape):
        return Tensor()

    def reshape(self, *shape):
        return Tensor()

    def flatten(self, start_dim=0, end_dim=-1):
        return Tensor()

    def squeeze(self, dim=None):
        return Tensor()

    def unsqueeze(self, dim):
        return Tensor()

    def permute(self, *dims):
        return Tensor()

    def transpose(self, dim0, dim1):
        return Tensor()

    def contiguous(self, memory_format=None):
        return Tensor()

    def expand(self, *sizes):
        return Tensor()

    def repeat(self, *sizes):
        return Tensor()

    def chunk(self, chunks, dim=0):
        return [Tensor()]

    def split(self, split_size, dim=0):
        return [Tensor()]

    def norm(self, p="fro", dim=None, keepdim=False):
        return Tensor()

    def abs(self):
        return Tensor()

    def pow(self, exponent):
        return Tensor()

    def sqrt(self):
        return Tensor()

    def mul(self, other):
        return Tensor()

    def add(self, other, alpha=1):
        return Tensor()

    def sub(self, other, alpha=1):
        return Tensor()

    def div(self, other, rounding_mode=None):
        return Tensor()

    def matmul(self, other):
        return Tensor()

    def masked_fill(self, mask, value):
        return Tensor()

    def fill_(self, value):
        return self

    def copy_(self, src, non_blocking=False):
        return self

    def add_(self, other, alpha=1):
        return self

    def mul_(self, other):
        return self

    def div_(self, other):
        return self

    def clamp(self, min=None, max=None):
        return Tensor()

    def float_power(self, exponent):
        return Tensor()

    def gather(self, dim, index):
        return Tensor()

    def scatter(self, dim, index, src):
        return Tensor()

    def index_select(self, dim, index):
        return Tensor()

    def masked_select(self, mask):
        return Tensor()

    def nonzero(self, as_tuple=False):
        return Tensor()

    def any(self, dim=None):
        return Tensor()

    def all(self, dim=None):
        return Tensor()

    def __getitem__(self, index):
        return Tensor()

    def __add__(self, other):
        return Tensor()

    def __radd__(self, other):
        return Tensor()

    def __sub__(self, other):
        return Tensor()

    def __rsub__(self, other):
        return Tensor()

    def __mul__(self, other):
        return Tensor()

    def __rmul__(self, other):
        return Tensor()

    def __truediv__(self, other):
        return Tensor()

    def __rtruediv__(self, other):
        return Tensor()

    def __floordiv__(self, other):
        return Tensor()

    def __matmul__(self, other):
        return Tensor()

    def __pow__(self, other):
        return Tensor()

    def __neg__(self):
        return Tensor()

    def __iter__(self):
        return iter([Tensor()])

    def __len__(self):
        return 0


class no_grad:
    def __init__(self, orig_func=None):
        pass

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None

    def __call__(self, func):
        return func


class enable_grad(no_grad):
    pass


class inference_mode(no_grad):
    def __init__(self, mode=True):
        pass


class set_grad_enabled(no_grad):
    def __init__(self, mode):
        pass


def is_grad_enabled():
    return True


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    return Tensor()


def as_tensor(data, dtype=None, device=None):
    return Tensor()


def from_numpy(ndarray):
    return Tensor()


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    return Tensor()


def full(size, fill_value, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def arange(start=0, end=None, step=1, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def linspace(start, end, steps, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def eye(n, m=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def zeros_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return Tensor()


def ones_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return Tensor()


def empty_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return Tensor()


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def randint(low=0, high=None, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def randperm(n, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def rand_like(input, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def randn_like(input, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def randint_like(input, low=0, high=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def normal(mean, std, size=None, generator=None, out=None):
    return Tensor()


def bernoulli(input, p=None, generator=None, out=None):
    return Tensor()


def multinomial(input, num_samples, replacement=False, generator=None, out=None):
    return Tensor()


def manual_seed(seed):
    return Generator()


def seed():
    return 0


def initial_seed():
    return 0


def use_deterministic_algorithms(mode, warn_only=False):
    return None


def stack(tensors, dim=0, out=None):
    return Tensor()


def cat(tensors, dim=0, out=None):
    return Tensor()


def concat(tensors, dim=0, out=None):
    return Tensor()


def where(condition, input=None, other=None):
    return Tensor()


def softmax(input, dim, dtype=None):
    return Tensor()


def log_softmax(input, dim, dtype=None):
    return Tensor()


def sigmoid(input, out=None):
    return Tensor()


def tanh(input, out=None):
    return Tensor()


def relu(input):
    return Tensor()


def exp(input, out=None):
    return Tensor()


def log(input, out=None):
    return Tensor()


def sum(input, dim=None, keepdim=False, dtype=None):
    return Tensor()


def mean(input, dim=None, keepdim=False, dtype=None):
    return Tensor()


def max(input, dim=None, keepdim=False):
    return Tensor()


def min(input, dim=None, keepdim=False):
    return Tensor()


def argmax(input, dim=None, keepdim=False):
    return Tensor()


def argmin(input, dim=None, keepdim=False):
    return Tensor()


def matmul(input, other, out=None):
    return Tensor()


def mm(input, mat2, out=None):
    return Tensor()


def bmm(input, mat2, out=None):
    return Tensor()


def einsum(equation, *operands):
    return Tensor()


def clamp(input, min=None, max=None, out=None):
    return Tensor()


def abs(input, out=None):
    return Tensor()


def sqrt(input, out=None):
    return Tensor()


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    return Tensor()


def flatten(input, start_dim=0, end_dim=-1):
    return Tensor()


def eq(input, other, out=None):
    return Tensor()


def topk(input, k, dim=None, largest=True, sorted=True, out=None):
    return Tensor()


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True):
    return None


def load(f, map_location=None, pickle_module=None, weights_only=None, mmap=None, **pickle_load_args):
    return {}


def compile(model=None, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, disable=False):
    return model


def set_float32_matmul_precision(precision):
    return None


def is_tensor(obj):
    return True



def argsort(input, dim=-1, descending=False, stable=False):
    return Tensor()


def isnan(input):
    return Tensor()


def isinf(input):
    return Tensor()


def isfinite(input):
    return Tensor()


def ne(input, other, out=None):
    return Tensor()


def lt(input, other, out=None):
    return Tensor()


def le(input, other, out=None):
    return Tensor()


def gt(input, other, out=None):
    return Tensor()


def ge(input, other, out=None):
    return Tensor()


def nonzero(input, out=None, as_tuple=False):
    return Tensor()


def count_nonzero(input, dim=None):
    return Tensor()


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return Tensor()


def bucketize(input, boundaries, out_int32=False, right=False, out=None):
    return Tensor()


def searchsorted(sorted_sequence, input, out_int32=False, right=False, side=None, out=None, sorter=None):
    return Tensor()


def full_like(input, fill_value, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return Tensor()


def logspace(start, end, steps, base=10.0, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return Tensor()


def empty_strided(size, stride, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    return Tensor()


def add(input, other, alpha=1, out=None):
    return Tensor()


def sub(input, other, alpha=1, out=None):
    return Tensor()


def mul(input, other, out=None):
    return Tensor()


def multiply(input, other, out=None):
    return Tensor()


def div(input, other, rounding_mode=None, out=None):
    return Tensor()


def divide(input, other, rounding_mode=None, out=None):
    return Tensor()


def true_divide(dividend, divisor, out=None):
    return Tensor()


def hstack(tensors, out=None):
    return Tensor()


def vstack(tensors, out=None):
    return Tensor()


def numel(input):
    return 0


def equal(input, other):
    return True


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return True


def get_default_dtype():
    return float32
