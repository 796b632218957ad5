"""TP009 unseeded-run: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class UnseededRun(Rule):
    code, slug = "TP009", "unseeded-run"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
