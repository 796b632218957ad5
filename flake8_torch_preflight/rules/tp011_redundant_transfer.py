"""TP011 redundant-transfer: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class RedundantTransfer(Rule):
    code, slug = "TP011", "redundant-transfer"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
