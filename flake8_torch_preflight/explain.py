"""The long form of a code: ``python -m flake8_torch_preflight explain TP001``.

Everything here is generated from the rule class (``code``, ``slug``, ``message``, ``rationale``,
``leaves_alone``, ``configure``, ``example_bad``, ``example_good``), so the flake8 message, the
``explain`` text and the page under ``docs/rules/`` cannot drift apart.
"""
from __future__ import annotations

import re
import textwrap
from typing import List, Type

WIDTH = 100
_FIELD = re.compile(r"\{(\w+)\}")


class UnknownCode(ValueError):
    """``explain`` was given a code that no rule has."""


def _rules():  # type: ignore[no-untyped-def]
    from .rules import REGISTRY  # imports astroid: only when a code is explained

    return REGISTRY


def codes() -> List[str]:
    """Every code, sorted."""
    return sorted(_rules())


def rule_for(code: str) -> "Type":
    table = _rules()
    key = code.strip().upper()
    if key not in table:
        raise UnknownCode(f"unknown code {code!r}; known codes: {', '.join(sorted(table))}")
    return table[key]


def _template(message: str) -> str:
    """The flake8 message with its fields shown as ``<field>``."""
    return _FIELD.sub(lambda m: "<" + m.group(1) + ">", message)


def _paragraphs(text: str) -> List[str]:
    return [textwrap.fill(" ".join(p.split()), WIDTH) for p in text.strip().split("\n\n") if p.strip()]


def _code_block(source: str) -> str:
    return textwrap.indent(textwrap.dedent(source).strip("\n"), "    ")


def silence_text(code: str) -> str:
    return (f"Silence one line with `# noqa: {code}` on the reported line; turn the rule off with "
            f"`extend-ignore = {code}` in the [flake8] section of setup.cfg, tox.ini or .flake8.")


def render(code: str) -> str:
    """The plain-text explanation printed by ``explain CODE``."""
    rule = rule_for(code)
    out: List[str] = [f"{rule.code} {rule.slug}", "", "Message:", f"    {rule.code} {_template(rule.message)}", ""]
    out += ["What it catches and why it costs:"] + _paragraphs(rule.rationale) + [""]
    out += ["Bad:", _code_block(rule.example_bad), "", "Good:", _code_block(rule.example_good), ""]
    leaves = getattr(rule, "leaves_alone", "")
    if leaves:
        out += ["Deliberately left alone:"] + _paragraphs(leaves) + [""]
    out += ["Silence or configure:"] + _paragraphs(silence_text(rule.code) + " " + getattr(rule, "configure", ""))
    return "\n".join(out).rstrip() + "\n"


def render_markdown(code: str) -> str:
    """The rule's page under ``docs/rules/`` (Markdown), generated from the same fields."""
    rule = rule_for(code)

    def para(text: str) -> str:
        return "\n\n".join(" ".join(p.split()) for p in text.strip().split("\n\n") if p.strip())

    def block(source: str) -> str:
        return "```python\n" + textwrap.dedent(source).strip("\n") + "\n```"

    parts = [
        f"# {rule.code} {rule.slug}",
        "Message:\n\n```text\n" + rule.code + " " + _template(rule.message) + "\n```",
        "## What it catches and why it costs\n\n" + para(rule.rationale),
        "## Bad\n\n" + block(rule.example_bad),
        "## Good\n\n" + block(rule.example_good),
    ]
    leaves = getattr(rule, "leaves_alone", "")
    if leaves:
        parts.append("## Deliberately left alone\n\n" + para(leaves))
    parts.append("## Silence or configure\n\n" + para(silence_text(rule.code) + " " + getattr(rule, "configure", "")))
    parts.append(f"Print this page in a terminal: `python -m flake8_torch_preflight explain {rule.code}`.")
    return "\n\n".join(parts) + "\n"
