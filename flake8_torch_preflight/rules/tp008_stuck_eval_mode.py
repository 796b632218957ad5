"""TP008 stuck-eval-mode: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class StuckEvalMode(Rule):
    code, slug = "TP008", "stuck-eval-mode"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
