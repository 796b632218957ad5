"""``python -m flake8_torch_preflight``: the command line (``estimate``, ``gpus``, ``models``, ``explain``)."""
from __future__ import annotations

from .estimator.cli import main

raise SystemExit(main())
