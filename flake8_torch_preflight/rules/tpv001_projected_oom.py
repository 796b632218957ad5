"""TPV001 projected-oom: placeholder until the rule lands (reports nothing)."""
from __future__ import annotations

from ._base import Rule, register


@register
class ProjectedOom(Rule):
    code, slug = "TPV001", "projected-oom"
    message = "NOT IMPLEMENTED"
    rationale = "NOT IMPLEMENTED"
