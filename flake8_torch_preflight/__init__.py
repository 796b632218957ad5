"""flake8-torch-preflight: static checks and a VRAM estimate for PyTorch training code."""
from __future__ import annotations

__version__ = "0.1.0"
