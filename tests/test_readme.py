"""README.rst's rule sections are generated from the rule classes, and their examples are run.

Regenerate after changing a rule's message, rationale or examples::

    TP_UPDATE_README=1 python -m pytest tests/test_readme.py
"""
from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest

from harness import ROOT, run_plugin

from flake8_torch_preflight.rules import ALL_RULES

README = ROOT / "README.rst"
EXAMPLE_OPTIONS = ["--tp-target-gpu", "t4"]
BEGIN = ".. BEGIN GENERATED RULES (tests/test_readme.py)"
END = ".. END GENERATED RULES"


def _block(code: str) -> str:
    return ".. code-block:: python\n\n" + textwrap.indent(textwrap.dedent(code).strip("\n"), "    ") + "\n"


def _rst_text(text: str) -> str:
    """Rationale prose as safe reStructuredText: code in double backticks, no stray markup."""
    text = re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)
    parts = re.split(r"(``[^`]+``)", text)
    for i, part in enumerate(parts):
        if not part.startswith("``"):
            part = re.sub(r"(\*\*?\w+|(?<![\w.])[\w.]*\w_(?!\w)(?:\([^)]*\))?)", r"``\1``", part)
            parts[i] = part
    return "".join(parts)


def rule_sections() -> str:
    parts = []
    for rule in ALL_RULES:
        title = "{} {}".format(rule.code, rule.slug)
        found = run_plugin(Path("example.py"), textwrap.dedent(rule.example_bad), [rule.code], EXAMPLE_OPTIONS)
        message = found[0][2] if found else rule.code + " " + rule.message
        parts.append(
            "\n".join(
                [
                    ".. _{}:".format(rule.code),
                    "",
                    title,
                    "~" * len(title),
                    "",
                    "Message for the example below::",
                    "",
                    textwrap.indent(textwrap.fill(message, 96, break_on_hyphens=False, break_long_words=False), "    "),
                    "",
                    textwrap.fill(_rst_text(rule.rationale), 100, break_on_hyphens=False, break_long_words=False),
                    "",
                    "Reported:",
                    "",
                    _block(getattr(rule, "example_bad", "")),
                    "Silent:",
                    "",
                    _block(getattr(rule, "example_good", "")),
                ]
            )
        )
    return "\n".join(parts)


def _generated_part(text: str) -> str:
    start = text.index(BEGIN) + len(BEGIN)
    return text[start:text.index(END)].strip("\n")


def test_readme_rule_sections_are_current() -> None:
    text = README.read_text(encoding="utf-8")
    fresh = rule_sections().strip("\n")
    if os.environ.get("TP_UPDATE_README"):
        start = text.index(BEGIN) + len(BEGIN)
        text = text[:start] + "\n\n" + fresh + "\n\n" + text[text.index(END):]
        README.write_text(text, encoding="utf-8")
    assert _generated_part(text) == fresh, "run: TP_UPDATE_README=1 python -m pytest tests/test_readme.py"


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_readme_examples_behave(rule, tmp_path: Path) -> None:
    options = EXAMPLE_OPTIONS
    bad = textwrap.dedent(rule.example_bad)
    good = textwrap.dedent(rule.example_good)
    found = [m.split(" ", 1)[0] for _, _, m in run_plugin(tmp_path / "bad.py", bad, [rule.code], options)]
    assert found == [rule.code]
    assert run_plugin(tmp_path / "good.py", good, [rule.code], options) == []
