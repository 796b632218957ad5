"""Stub of ``torch.optim.lr_scheduler`` for astroid inference.  Never imported, only parsed."""


class LRScheduler:
    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer

    def step(self, epoch=None):
        return None

    def get_last_lr(self):
        return [0.0]

    def state_dict(self):
        return {}


class _LRScheduler(LRScheduler): pass
class LambdaLR(LRScheduler): pass
class MultiplicativeLR(LRScheduler): pass
class StepLR(LRScheduler): pass
class MultiStepLR(LRScheduler): pass
class ConstantLR(LRScheduler): pass
class LinearLR(LRScheduler): pass
class ExponentialLR(LRScheduler): pass
class SequentialLR(LRScheduler): pass
class PolynomialLR(LRScheduler): pass
class CosineAnnealingLR(LRScheduler): pass
class ChainedScheduler(LRScheduler): pass
class CyclicLR(LRScheduler): pass
class CosineAnnealingWarmRestarts(LRScheduler): pass
class OneCycleLR(LRScheduler): pass


class ReduceLROnPlateau(LRScheduler):
    def step(self, metrics, epoch=None):
        return None
