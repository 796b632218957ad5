"""TP012 starved-dataloader: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class StarvedDataloader(Rule):
    code, slug = "TP012", "starved-dataloader"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
