"""The long form of every code: ``explain``, the pages under ``docs/rules/`` and the README.

The pages are generated from the rule classes (``flake8_torch_preflight/explain.py``); regenerate
after changing a rule's message, rationale, ``leaves_alone`` or examples::

    TP_UPDATE_DOCS=1 python -m pytest tests/test_docs.py
"""
from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest

from harness import FIXTURES, ROOT, codes_for, headers, run_plugin

from flake8_torch_preflight import explain
from flake8_torch_preflight.rules import ALL_RULES
from flake8_torch_preflight.rules._base import MAX_MESSAGE, fit_message

DOCS = ROOT / "docs"
README = ROOT / "README.rst"
EXAMPLE_OPTIONS = ["--tp-target-gpu", "t4"]
CODES = [rule.code for rule in ALL_RULES]


@pytest.mark.parametrize("code", CODES)
def test_rule_page_is_current(code: str) -> None:
    page = DOCS / "rules" / "{}.md".format(code)
    fresh = explain.render_markdown(code)
    if os.environ.get("TP_UPDATE_DOCS"):
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(fresh, encoding="utf-8")
    assert page.read_text(encoding="utf-8") == fresh, "run: TP_UPDATE_DOCS=1 python -m pytest tests/test_docs.py"


def test_no_stray_rule_pages() -> None:
    assert sorted(p.stem for p in (DOCS / "rules").glob("*.md")) == CODES


@pytest.mark.parametrize("rule", ALL_RULES, ids=CODES)
def test_explain_has_every_section(rule) -> None:
    text = explain.render(rule.code.lower())
    assert text.startswith("{} {}\n".format(rule.code, rule.slug))
    for heading in ("Message:", "What it catches and why it costs:", "Bad:", "Good:", "Deliberately left alone:",
                    "Silence or configure:"):
        assert "\n" + heading + "\n" in "\n" + text, heading
    assert "# noqa: {}".format(rule.code) in text
    assert textwrap.dedent(rule.example_bad).strip().splitlines()[-1].strip() in text
    assert rule.leaves_alone.strip(), "{} says nothing of what it leaves alone".format(rule.code)


def test_explain_unknown_code() -> None:
    with pytest.raises(explain.UnknownCode, match="unknown code 'TP999'"):
        explain.render("TP999")


@pytest.mark.parametrize("rule", ALL_RULES, ids=CODES)
def test_examples_behave(rule, tmp_path: Path) -> None:
    bad = textwrap.dedent(rule.example_bad)
    good = textwrap.dedent(rule.example_good)
    found = [m.split(" ", 1)[0] for _, _, m in run_plugin(tmp_path / "bad.py", bad, [rule.code], EXAMPLE_OPTIONS)]
    assert found == [rule.code]
    assert run_plugin(tmp_path / "good.py", good, [rule.code], EXAMPLE_OPTIONS) == []


def _all_messages():
    sources = sorted(FIXTURES.glob("*.py")) + sorted((ROOT / "examples").glob("*.py"))
    for path in sources:
        source = path.read_text(encoding="utf-8")
        codes = codes_for(path, source) if path.parent == FIXTURES else set(CODES)
        _, options = headers(source)
        options = options or EXAMPLE_OPTIONS
        for line, _, message in run_plugin(path, source, codes, options):
            yield "{}:{}".format(path.name, line), message


def test_every_message_fits_120_characters() -> None:
    seen = 0
    for where, message in _all_messages():
        code, text = message.split(" ", 1)
        assert len(text) <= MAX_MESSAGE, "{} {}: {} characters: {}".format(where, code, len(text), text)
        seen += 1
    assert seen > 100  # the fixtures and examples report many findings: the loop really ran


def test_long_quoted_field_is_shortened_and_the_rest_kept() -> None:
    template = "{value} is kept across iterations: memory grows; keep .item() or .detach()"
    long_expression = "torch.stack([loss_a, loss_b, loss_c, loss_d, loss_e, loss_f]).sum() * weight_schedule[step]"
    text = fit_message(template, {"value": long_expression}, ("value",))
    assert MAX_MESSAGE - 3 <= len(text) <= MAX_MESSAGE
    assert text.startswith("torch.stack([loss_a, loss_b,") and "... is kept across iterations" in text
    assert text.endswith(": memory grows; keep .item() or .detach()")


def test_short_message_is_not_touched() -> None:
    assert fit_message("{name} never zeroed", {"name": "optimizer"}, ("name",)) == "optimizer never zeroed"


def _documented_estimate() -> "tuple[list, str]":
    """The first ``$ tp-estimate ...`` example of docs/estimator.rst: its arguments and output."""
    text = (DOCS / "estimator.rst").read_text(encoding="utf-8")
    match = re.search(r"^    \$ tp-estimate (.*)\n((?:    .*\n|\n)+?)\n(?=\S)", text, re.M)
    assert match, "docs/estimator.rst has no tp-estimate example"
    output = "\n".join(line[4:] for line in match.group(2).rstrip("\n").split("\n")) + "\n"
    return match.group(1).split(), output


def test_documented_estimate_is_what_the_command_prints(capsys, monkeypatch, tmp_path: Path) -> None:
    from flake8_torch_preflight.estimator.cli import estimate_main

    monkeypatch.chdir(tmp_path)  # no flake8 config file around: only the command line counts
    arguments, documented = _documented_estimate()
    status = estimate_main(arguments)
    printed = capsys.readouterr().out
    if os.environ.get("TP_UPDATE_DOCS"):
        path = DOCS / "estimator.rst"
        indented = "".join(("    " + line if line.strip() else "\n") if line.endswith("\n") else line
                           for line in printed.splitlines(keepends=True))
        old = "".join(("    " + line if line.strip() else "\n") for line in documented.splitlines(keepends=True))
        path.write_text(path.read_text(encoding="utf-8").replace(old, indented), encoding="utf-8")
        documented = printed
    assert status == 0
    assert printed == documented, "run: TP_UPDATE_DOCS=1 python -m pytest tests/test_docs.py"


def test_readme_fits_a_screen_budget_and_links_every_code() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text) <= 15000, "README.rst is {} characters".format(len(text))
    for code in CODES:
        assert re.search(r"`{0} <docs/rules/{0}\.md>`_".format(code), text), code
        assert (DOCS / "rules" / "{}.md".format(code)).is_file()
