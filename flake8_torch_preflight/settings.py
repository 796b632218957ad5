"""The plugin's settings and codes, in a module that imports nothing heavy.

flake8 imports every installed plugin and calls ``parse_options`` and ``run`` whatever
``--select`` says.  Keeping this module (and ``plugin``/``options``) free of astroid means a
flake8 run that selects no TP code never imports astroid or the analysis.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional

#: Every code the plugin reports (the rules package registers one rule per code).
CODES = tuple("TP{:03d}".format(i) for i in range(1, 14)) + ("TPV001",)


@dataclass
class Settings:
    """Options parsed from flake8 (see ``options.py``)."""

    target_gpu: Optional[str] = None
    gpu_memory: Optional[str] = None
    selected: Optional[FrozenSet[str]] = None  # None = every code
    server: bool = False  # ask the analysis server (``--tp-server`` with exactly one file to check)


SETTINGS = Settings()
