"""Stub of ``torch.optim`` for astroid inference.  Never imported, only parsed."""
import torch.optim.lr_scheduler as lr_scheduler


class Optimizer:
    def __init__(self, params, defaults=None):
        self.param_groups = []
        self.state = {}

    def zero_grad(self, set_to_none=True):
        return None

    def step(self, closure=None):
        return None

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        return None

    def add_param_group(self, param_group):
        return None


class SGD(Optimizer):
    def __init__(self, params, lr=0.001, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False, foreach=None, differentiable=False, fused=None):
        self.param_groups = []


class Adam(Optimizer):
    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, amsgrad=False, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        self.param_groups = []


class AdamW(Optimizer):
    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01, amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        self.param_groups = []


class Adamax(Optimizer): pass
class NAdam(Optimizer): pass
class RAdam(Optimizer): pass
class Adadelta(Optimizer): pass
class Adafactor(Optimizer): pass
class SparseAdam(Optimizer): pass
class ASGD(Optimizer): pass
class Rprop(Optimizer): pass
class LBFGS(Optimizer): pass


class Adagrad(Optimizer):
    def __init__(self, params, lr=0.01, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, foreach=None, maximize=False, differentiable=False, fused=None):
        self.param_groups = []


class RMSprop(Optimizer):
    def __init__(self, params, lr=0.01, alpha=0.99, eps=1e-08, weight_decay=0, momentum=0, centered=False, capturable=False, foreach=None, maximize=False, differentiable=False):
        self.param_groups = []
