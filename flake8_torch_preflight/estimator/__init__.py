"""Static VRAM estimator: catalogues, cost model, solver and report."""

from __future__ import annotations
