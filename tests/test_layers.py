"""Dependencies flow one way: entry classes -> rules -> analysis -> stubs; the cost model is pure
arithmetic.  Every import of every package module (function-level ones included) is checked."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Set

import pytest

from harness import ROOT

PACKAGE = ROOT / "flake8_torch_preflight"
NAME = PACKAGE.name


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Absolute names of everything ``path`` imports."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            yield prefix
            for alias in node.names:
                yield prefix + "." + alias.name


def _layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != NAME:
        return "external:" + parts[0]
    if len(parts) == 1:
        return "package"
    return parts[1]


MODULES: Dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}

#: What each layer may not import (by the second component of the module name).
FORBIDDEN: Dict[str, Set[str]] = {
    "analysis": {"rules", "engine", "plugin", "estimator", "explain", "options"},
    "rules": {"engine", "plugin", "explain", "options"},  # TPV001 runs the estimator: rules may use it
}

#: Estimator modules that read scripts (through the analysis) or run the reader under the linter's
#: budget; every other estimator module is pure arithmetic and data.
ESTIMATOR_READERS = {NAME + ".estimator.extract", NAME + ".estimator.cli"}


@pytest.mark.parametrize("module", sorted(MODULES), ids=sorted(MODULES))
def test_dependencies_flow_one_way(module: str) -> None:
    imported = set(_imports(MODULES[module]))
    layer = _layer_of(module)
    wrong: List[str] = []
    for name in imported:
        target = _layer_of(name)
        if target == "external:torch":
            wrong.append(name)  # the plugin never imports torch
        if target in FORBIDDEN.get(layer, set()):
            wrong.append(name)
        if layer == "estimator" and module not in ESTIMATOR_READERS:
            if target in ("external:astroid", "analysis", "rules", "engine", "plugin"):
                wrong.append(name)
    assert not wrong, "{} imports {}".format(module, sorted(wrong))


def test_the_check_sees_the_imports_it_judges() -> None:
    """The scanner resolves relative imports: a known import of each kind is found."""
    extract = set(_imports(MODULES[NAME + ".estimator.extract"]))
    assert NAME + ".analysis.setup.build" in extract and "astroid" in extract
    costmodel = set(_imports(MODULES[NAME + ".estimator.costmodel"]))
    assert NAME + ".estimator.run" in costmodel
    assert _layer_of(NAME + ".analysis.semantic.infer") == "analysis"


def _name_sets() -> Iterator[tuple]:
    """(module, constant, its strings) for every module-level frozenset/set of string literals."""
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "frozenset" and value.args:
                value = value.args[0]
            if isinstance(value, ast.Set) and value.elts and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
            ):
                yield module, node.targets[0].id, frozenset(e.value for e in value.elts)


def test_each_shared_name_set_is_defined_once() -> None:
    """No two modules define the same set of names, and the iteration wrappers live in one place."""
    seen: Dict[frozenset, str] = {}
    for module, name, values in _name_sets():
        where = "{}.{}".format(module, name)
        assert values not in seen, "{} repeats {}".format(where, seen[values])
        seen[values] = where
    holders = {where for values, where in seen.items() if "enumerate" in values and "tqdm" in values}
    assert holders == {NAME + ".analysis.semantic.loops.ITERATION_WRAPPERS"}


#: The analysis in layers, one folder each.  ``setup``: one astroid tree per file against the torch stubs;
#: ``semantic``: questions about Python code with no torch knowledge (a call's argument, a binding, a constant's
#: value, the enclosing loop or function, per-file memos, the budget); ``training``: what the code means for a
#: training run (kind of a value, the step, accumulation, devices, seeds, data, frameworks).  A layer may not
#: import the layers named against it.
ANALYSIS_LAYERS = ("setup", "semantic", "training")
LAYER_FORBIDS: Dict[str, Set[str]] = {"setup": {"training"}, "semantic": {"training"}, "training": set()}


def _analysis_layer(module: str) -> str:
    """The layer folder of an analysis module (``""`` for anything else)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "analysis" else ""


def _rule_package(module: str) -> str:
    """The rule package a module belongs to (``rules.tp011_redundant_transfer`` for its private modules)."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 and parts[1] == "rules" and parts[2].startswith("tp") else ""


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _analysis_layer(m)))
def test_analysis_layers_flow_one_way(module: str) -> None:
    """Semantic and setup modules never import the training layer (no torch knowledge below it)."""
    forbidden = LAYER_FORBIDS[_analysis_layer(module)]
    wrong = sorted(name for name in _imports(MODULES[module]) if _analysis_layer(name) in forbidden)
    assert not wrong, "{} imports {}".format(module, wrong)


def test_every_analysis_module_lives_in_a_layer() -> None:
    loose = sorted(m for m in MODULES if m.startswith(NAME + ".analysis.") and not _analysis_layer(m)
                   and m.split(".")[2] not in ANALYSIS_LAYERS)
    assert not loose, loose
    assert {m.split(".")[2] for m in MODULES if _analysis_layer(m)} == set(ANALYSIS_LAYERS)


@pytest.mark.parametrize("module", sorted(MODULES), ids=sorted(MODULES))
def test_rule_private_modules_stay_private(module: str) -> None:
    """A module inside a rule's package is imported by that rule only."""
    own = _rule_package(module)
    wrong = sorted(name for name in _imports(MODULES[module])
                   if _rule_package(name) and name != _rule_package(name) and _rule_package(name) != own)
    assert not wrong, "{} imports {}".format(module, wrong)
