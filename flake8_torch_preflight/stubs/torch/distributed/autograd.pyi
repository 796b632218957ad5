"""Stub of ``torch.distributed.autograd`` for astroid inference.  Never imported, only parsed."""


class context:
    def __enter__(self):
        return 0

    def __exit__(self, *exc):
        return None


def backward(context_id, roots, retain_graph=False):
    return None


def get_gradients(context_id):
    return {}
