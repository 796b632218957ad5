"""TP001 graph-retention: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class GraphRetention(Rule):
    code, slug = "TP001", "graph-retention"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
