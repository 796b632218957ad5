"""TP013 amp-scaling: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class AmpScaling(Rule):
    code, slug = "TP013", "amp-scaling"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
