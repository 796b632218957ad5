"""Every rule, imported explicitly (``tests/test_registry.py`` fails if one is missing)."""
from __future__ import annotations

from typing import List, Type

from . import (  # noqa: F401  (imported for @register)
    tp001_graph_retention,
    tp002_missing_no_grad,
    tp003_missing_zero_grad,
    tp004_unscaled_accumulation,
    tp005_ddp_sampler,
    tp006_double_softmax,
    tp007_bce_pairing,
    tp008_stuck_eval_mode,
    tp009_unseeded_run,
    tp010_sync_in_hot_loop,
    tp011_redundant_transfer,
    tp012_starved_dataloader,
    tp013_amp_scaling,
    tpv001_projected_oom,
)
from ._base import REGISTRY, Finding, Rule, register

#: Rule classes sorted by code.
ALL_RULES: List[Type[Rule]] = [REGISTRY[code] for code in sorted(REGISTRY)]

__all__ = ["ALL_RULES", "REGISTRY", "Finding", "Rule", "register"]
