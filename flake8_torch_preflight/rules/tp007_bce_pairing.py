"""TP007 bce-pairing: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class BcePairing(Rule):
    code, slug = "TP007", "bce-pairing"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
