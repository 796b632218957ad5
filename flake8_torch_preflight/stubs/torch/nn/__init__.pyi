"""Stub of ``torch.nn`` for astroid inference.  Never imported, only parsed."""
import torch
import torch.nn.functional as functional
import torch.nn.utils as utils
import torch.nn.parallel as parallel
import torch.nn.init as init
from torch.nn.parallel import DataParallel


class Parameter(torch.Tensor):
    def __init__(self, data=None, requires_grad=True):
        self.requires_grad = requires_grad


class Module:
    training = True

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return torch.Tensor()

    def forward(self, *args, **kwargs):
        return torch.Tensor()

    def parameters(self, recurse=True):
        return iter([Parameter()])

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return iter([("", Parameter())])

    def buffers(self, recurse=True):
        return iter([torch.Tensor()])

    def children(self):
        return iter([Module()])

    def modules(self):
        return iter([Module()])

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        return iter([("", Module())])

    def zero_grad(self, set_to_none=True):
        return None

    def train(self, mode=True):
        return self

    def eval(self):
        return self

    def requires_grad_(self, requires_grad=True):
        return self

    def to(self, *args, **kwargs):
        return self

    def cuda(self, device=None):
        return self

    def cpu(self):
        return self

    def half(self):
        return self

    def float(self):
        return self

    def double(self):
        return self

    def bfloat16(self):
        return self

    def type(self, dst_type):
        return self

    def apply(self, fn):
        return self

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        return {}

    def load_state_dict(self, state_dict, strict=True, assign=False):
        return None

    def register_buffer(self, name, tensor, persistent=True):
        return None

    def register_parameter(self, name, param):
        return None

    def add_module(self, name, module):
        return None

    def register_forward_hook(self, hook):
        return None

    def extra_repr(self):
        return ""


class Identity(Module): pass
class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        self.in_features = in_features
        self.out_features = out_features
class Bilinear(Module):
    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None): pass
class LazyLinear(Module):
    def __init__(self, out_features, bias=True, device=None, dtype=None): pass
class Conv1d(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros", device=None, dtype=None): pass
class Conv2d(Conv1d): pass
class Conv3d(Conv1d): pass
class ConvTranspose1d(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None): pass
class ConvTranspose2d(ConvTranspose1d): pass
class ConvTranspose3d(ConvTranspose1d): pass
class BatchNorm1d(Module):
    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None): pass
class BatchNorm2d(BatchNorm1d): pass
class BatchNorm3d(BatchNorm1d): pass
class SyncBatchNorm(BatchNorm1d):
    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        return module
class InstanceNorm1d(Module):
    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False, device=None, dtype=None): pass
class InstanceNorm2d(InstanceNorm1d): pass
class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-05, elementwise_affine=True, bias=True, device=None, dtype=None): pass
class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None): pass
class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-05, affine=True, device=None, dtype=None): pass
class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None): pass
class EmbeddingBag(Embedding):
    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None, dtype=None): pass
class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None): pass
class RNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None): pass
class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None): pass
class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None): pass
class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None): pass
class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None): pass
class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None): pass
class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None): pass
class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None, dtype=None): pass
class TransformerEncoderLayer(Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-05, batch_first=False, norm_first=False, bias=True, device=None, dtype=None): pass
class TransformerDecoderLayer(Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-05, batch_first=False, norm_first=False, bias=True, device=None, dtype=None): pass
class TransformerEncoder(Module):
    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True): pass
class TransformerDecoder(Module):
    def __init__(self, decoder_layer, num_layers, norm=None): pass
class Transformer(Module):
    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-05, batch_first=False, norm_first=False, bias=True, device=None, dtype=None): pass
class Dropout(Module):
    def __init__(self, p=0.5, inplace=False): pass
class Dropout1d(Dropout): pass
class Dropout2d(Dropout): pass
class Dropout3d(Dropout): pass
class AlphaDropout(Dropout): pass
class ReLU(Module):
    def __init__(self, inplace=False): pass
class ReLU6(ReLU): pass
class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False): pass
class PReLU(Module):
    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None): pass
class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False): pass
class GELU(Module):
    def __init__(self, approximate="none"): pass
class SiLU(Module):
    def __init__(self, inplace=False): pass
class Mish(Module):
    def __init__(self, inplace=False): pass
class Hardswish(Module):
    def __init__(self, inplace=False): pass
class Hardsigmoid(Module):
    def __init__(self, inplace=False): pass
class Tanh(Module): pass
class Sigmoid(Module): pass
class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0): pass
class Softmax(Module):
    def __init__(self, dim=None): pass
class LogSoftmax(Module):
    def __init__(self, dim=None): pass
class Softmax2d(Module): pass
class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1): pass
class Unflatten(Module):
    def __init__(self, dim, unflattened_size): pass
class MaxPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False): pass
class MaxPool2d(MaxPool1d): pass
class MaxPool3d(MaxPool1d): pass
class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None): pass
class AvgPool2d(AvgPool1d): pass
class AvgPool3d(AvgPool1d): pass
class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size): pass
class AdaptiveAvgPool2d(AdaptiveAvgPool1d): pass
class AdaptiveAvgPool3d(AdaptiveAvgPool1d): pass
class AdaptiveMaxPool2d(AdaptiveAvgPool1d): pass
class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None): pass
class PixelShuffle(Module):
    def __init__(self, upscale_factor): pass
class ZeroPad2d(Module):
    def __init__(self, padding): pass


class Sequential(Module):
    def __init__(self, *args):
        pass

    def __getitem__(self, idx):
        return Module()

    def __iter__(self):
        return iter([Module()])

    def __len__(self):
        return 0

    def append(self, module):
        return self


class ModuleList(Module):
    def __init__(self, modules=None):
        pass

    def __getitem__(self, idx):
        return Module()

    def __iter__(self):
        return iter([Module()])

    def __len__(self):
        return 0

    def append(self, module):
        return self

    def extend(self, modules):
        return self


class ModuleDict(Module):
    def __init__(self, modules=None):
        pass

    def __getitem__(self, key):
        return Module()

    def items(self):
        return iter([("", Module())])

    def values(self):
        return iter([Module()])

    def keys(self):
        return iter([""])


class ParameterList(Module):
    def __init__(self, values=None): pass


class ParameterDict(Module):
    def __init__(self, parameters=None): pass


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        self.reduction = reduction


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
        self.reduction = reduction


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        self.reduction = reduction


class BCELoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        self.reduction = reduction


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        self.reduction = reduction


class MSELoss(_Loss): pass
class L1Loss(_Loss): pass
class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        self.reduction = reduction
class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        self.reduction = reduction
class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        self.reduction = reduction
class CTCLoss(_Loss):
    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        self.reduction = reduction
class MarginRankingLoss(_Loss): pass
class TripletMarginLoss(_Loss): pass
class CosineEmbeddingLoss(_Loss): pass
class MultiLabelSoftMarginLoss(_WeightedLoss): pass
class MultiMarginLoss(_WeightedLoss): pass
class PoissonNLLLoss(_Loss): pass
class GaussianNLLLoss(_Loss): pass
class SoftMarginLoss(_Loss): pass
