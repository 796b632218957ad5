"""One code set everywhere: the contract, the registry, entry points, plugin classes, fixtures (the docs: test_docs)."""
from __future__ import annotations

import configparser
import re
from pathlib import Path

from harness import FIXTURES, ROOT

from flake8_torch_preflight.plugin import ENTRY_CLASSES
from flake8_torch_preflight.rules import ALL_RULES, REGISTRY
from flake8_torch_preflight.settings import CODES

#: The 14 codes fixed by shared/INTERFACE.md.
CONTRACT_CODES = {"TP{:03d}".format(i) for i in range(1, 14)} | {"TPV001"}
INTERFACE = ROOT.parent / "shared" / "INTERFACE.md"


def test_contract_codes_match_interface_file_when_present() -> None:
    if not INTERFACE.exists():  # the contract lives beside the repo, not in it
        return
    text = INTERFACE.read_text(encoding="utf-8")
    assert set(re.findall(r"^\| (TPV?\d{3}) \|", text, re.M)) == CONTRACT_CODES


def test_registry_and_entry_classes() -> None:
    assert set(REGISTRY) == CONTRACT_CODES
    assert [r.code for r in ALL_RULES] == sorted(CONTRACT_CODES)
    assert {cls.code for cls in ENTRY_CLASSES} == CONTRACT_CODES
    assert list(CODES) == sorted(CONTRACT_CODES)  # the light list options.py selects from


def test_setup_cfg_entry_points() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = [line.strip() for line in cfg["options.entry_points"]["flake8.extension"].splitlines() if line.strip()]
    points = dict(line.split(" = ") for line in lines)
    assert set(points) == CONTRACT_CODES
    for code, target in points.items():
        assert target == "flake8_torch_preflight.plugin:{}Checker".format(code)
        assert re.match(r"^[A-Z]{1,3}[0-9]{0,3}$", code), "flake8 rejects entry-point names outside this pattern"


def test_every_rule_has_fixtures_and_module_names_follow_the_code() -> None:
    prefixes = {Path(p).stem.split("_")[0].upper() for p in FIXTURES.glob("*.py")}
    assert prefixes == CONTRACT_CODES
    for rule in ALL_RULES:
        module = rule.__module__.rsplit(".", 1)[-1]
        assert module == "{}_{}".format(rule.code.lower(), rule.slug.replace("-", "_"))
