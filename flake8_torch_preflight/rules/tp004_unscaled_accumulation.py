"""TP004 unscaled-accumulation: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class UnscaledAccumulation(Rule):
    code, slug = "TP004", "unscaled-accumulation"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
