"""Every torch qualified name the rules look for exists in the stubs (catches typos and missing stubs)."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Iterator, Tuple

import pytest

import flake8_torch_preflight.analysis as analysis_pkg
import flake8_torch_preflight.rules as rules_pkg
from flake8_torch_preflight.analysis.setup import brain


def _torch_names() -> Iterator[Tuple[str, str]]:
    for pkg in (rules_pkg, analysis_pkg):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            module = importlib.import_module(info.name)
            for attr, value in vars(module).items():
                if attr.isupper() and isinstance(value, frozenset):
                    for name in value:
                        if isinstance(name, str) and name.startswith("torch."):
                            yield "{}.{}".format(module.__name__.rsplit(".", 1)[-1], attr), name


NAMES = sorted(set(_torch_names()))


def resolve(qname: str):
    brain.install()
    parts = qname.split(".")
    for cut in range(len(parts), 0, -1):
        module = brain.stub_module(".".join(parts[:cut]))
        if module is None:
            continue
        node = module
        for attr in parts[cut:]:
            node = node.getattr(attr)[0]
            if node.__class__.__name__ in ("Import", "ImportFrom"):
                node = next(iter(node.infer()))  # a re-export: follow it
        return node
    raise LookupError(qname)


def test_some_names_are_collected() -> None:
    assert len(NAMES) > 20


@pytest.mark.parametrize("where, qname", NAMES, ids=["{}:{}".format(w, q) for w, q in NAMES])
def test_name_resolves_to_a_stub_definition(where: str, qname: str) -> None:
    node = resolve(qname)
    assert node.qname() == qname, "{} resolves to {}".format(qname, node.qname())
