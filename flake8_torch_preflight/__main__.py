"""``python -m flake8_torch_preflight``: the VRAM estimator's command line."""
from __future__ import annotations

from .estimator.cli import main

raise SystemExit(main())
