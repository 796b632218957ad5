"""TP005 ddp-sampler: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class DdpSampler(Rule):
    code, slug = "TP005", "ddp-sampler"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
