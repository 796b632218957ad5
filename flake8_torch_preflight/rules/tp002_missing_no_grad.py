"""TP002 missing-no-grad: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class MissingNoGrad(Rule):
    code, slug = "TP002", "missing-no-grad"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
