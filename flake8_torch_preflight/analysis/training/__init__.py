"""What the code means for a training run: the kind of a value, the step and its backward,
accumulation, devices, seeds, data, evaluation passes, the frameworks (torch knowledge, on the semantic layer)."""

from . import entrypoint  # noqa: F401,E402  (registers how process launchers call their function)
