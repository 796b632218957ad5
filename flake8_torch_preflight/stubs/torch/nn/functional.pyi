"""Stub of ``torch.nn.functional`` for astroid inference.  Never imported, only parsed."""
import torch


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return torch.Tensor()


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return torch.Tensor()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return torch.Tensor()


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    return torch.Tensor()


def sigmoid(input):
    return torch.Tensor()


def logsigmoid(input):
    return torch.Tensor()


def tanh(input):
    return torch.Tensor()


def relu(input, inplace=False):
    return torch.Tensor()


def gelu(input, approximate="none"):
    return torch.Tensor()


def silu(input, inplace=False):
    return torch.Tensor()


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return torch.Tensor()


def dropout(input, p=0.5, training=True, inplace=False):
    return torch.Tensor()


def linear(input, weight, bias=None):
    return torch.Tensor()


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return torch.Tensor()


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    return torch.Tensor()


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    return torch.Tensor()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    return torch.Tensor()


def pad(input, pad, mode="constant", value=None):
    return torch.Tensor()


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None, antialias=False):
    return torch.Tensor()


def one_hot(tensor, num_classes=-1):
    return torch.Tensor()


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return torch.Tensor()


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    return torch.Tensor()


def adaptive_avg_pool2d(input, output_size):
    return torch.Tensor()


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return torch.Tensor()


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
    return torch.Tensor()


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return torch.Tensor()


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
    return torch.Tensor()


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return torch.Tensor()


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return torch.Tensor()


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return torch.Tensor()


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    return torch.Tensor()


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    return torch.Tensor()


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return torch.Tensor()


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    return torch.Tensor()


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()


def triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=None, margin=1.0, swap=False, reduction="mean"):
    return torch.Tensor()


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-08, reduce=None, reduction="mean"):
    return torch.Tensor()


def gaussian_nll_loss(input, target, var, full=False, eps=1e-06, reduction="mean"):
    return torch.Tensor()


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    return torch.Tensor()
