"""The long form of a code: ``python -m flake8_torch_preflight explain TP001``.

Everything here is generated from the rule class (``code``, ``slug``, ``message``, ``rationale``,
``leaves_alone``, ``configure``, ``example_bad``, ``example_good``), so the flake8 message, the
``explain`` text and the page under ``docs/rules/`` cannot drift apart.
"""
from __future__ import annotations

import re
import textwrap
from typing import List, Tuple, Type

WIDTH = 100
_FIELD = re.compile(r"\{(\w+)\}")


class UnknownCode(ValueError):
    """``explain`` was given a code that no rule has."""


def _rules():  # type: ignore[no-untyped-def]
    from .rules import REGISTRY  # imports astroid: only when a code is explained

    return REGISTRY


def rule_for(code: str) -> "Type":
    table = _rules()
    key = code.strip().upper()
    if key not in table:
        raise UnknownCode(f"unknown code {code!r}; known codes: {', '.join(sorted(table))}")
    return table[key]


def _template(message: str) -> str:
    """The flake8 message with its fields shown as ``<field>``."""
    return _FIELD.sub(lambda m: "<" + m.group(1) + ">", message)


def _words(text: str) -> List[str]:
    """The paragraphs of a rule's prose, each on one line."""
    return [" ".join(p.split()) for p in text.strip().split("\n\n") if p.strip()]


def _sections(rule: "Type") -> List[Tuple[str, str, str]]:
    """(heading, kind, content) of a code's long form, kind ``prose`` or ``code``; the one source of
    both the terminal text and the Markdown page."""
    found = [
        ("What it catches and why it costs", "prose", rule.rationale),
        ("Bad", "code", rule.example_bad),
        ("Good", "code", rule.example_good),
    ]
    if rule.leaves_alone:
        found.append(("Deliberately left alone", "prose", rule.leaves_alone))
    found.append(("Silence or configure", "prose", silence_text(rule.code) + " " + rule.configure))
    return found


def silence_text(code: str) -> str:
    return (f"Silence one line with `# noqa: {code}` on the reported line; turn the rule off with "
            f"`extend-ignore = {code}` in the [flake8] section of setup.cfg, tox.ini or .flake8.")


def _source(example: str) -> str:
    return textwrap.dedent(example).strip("\n")


def render(code: str) -> str:
    """The plain-text explanation printed by ``explain CODE``."""
    rule = rule_for(code)
    out: List[str] = [f"{rule.code} {rule.slug}", "", "Message:", f"    {rule.code} {_template(rule.message)}"]
    for heading, kind, content in _sections(rule):
        out += ["", heading + ":"]
        if kind == "code":
            out.append(textwrap.indent(_source(content), "    "))
        else:
            out += [textwrap.fill(paragraph, WIDTH) for paragraph in _words(content)]
    return "\n".join(out).rstrip() + "\n"


def render_markdown(code: str) -> str:
    """The rule's page under ``docs/rules/`` (Markdown), generated from the same sections."""
    rule = rule_for(code)
    message = f"{rule.code} {_template(rule.message)}"
    parts = [f"# {rule.code} {rule.slug}", f"Message:\n\n```text\n{message}\n```"]
    for heading, kind, content in _sections(rule):
        body = "```python\n" + _source(content) + "\n```" if kind == "code" else "\n\n".join(_words(content))
        parts.append(f"## {heading}\n\n{body}")
    parts.append(f"Print this page in a terminal: `python -m flake8_torch_preflight explain {rule.code}`.")
    return "\n\n".join(parts) + "\n"
