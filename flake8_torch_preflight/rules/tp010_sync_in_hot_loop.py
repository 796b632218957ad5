"""TP010 sync-in-hot-loop: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class SyncInHotLoop(Rule):
    code, slug = "TP010", "sync-in-hot-loop"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
