"""Who calls a function of the file, and whether every call runs with autograd off.

Read from the file's syntax and inference alone, before and apart from the dataflow: a
function whose every in-file call site runs under ``no_grad`` (or in a caller decorated with
it, a Lightning evaluation hook, or a caller only called that way) starts with autograd off;
one handed on as a value and never called has callers nobody knows.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Set

from astroid import nodes

from .. import grad
from ...semantic import infer

#: Lightning hooks the framework runs under no_grad / inference_mode.
LIGHTNING_EVAL_HOOKS = frozenset(
    {"validation_step", "test_step", "predict_step", "validation_epoch_end", "test_epoch_end",
     "on_validation_epoch_end", "on_test_epoch_end", "on_predict_epoch_end", "on_validation_batch_end",
     "on_test_batch_end", "on_predict_batch_end"}
)
_LIGHTNING_BASE = re.compile(r"(^|\.)LightningModule$")
_GRAD_OFF_WORDS = frozenset({"no_grad", "inference_mode", "set_grad_enabled"})


class CallSites:
    """The call sites of the file's functions, found once per file."""

    def __init__(self, module: nodes.Module) -> None:
        self.module = module
        self._func_memo: Dict[int, Optional[nodes.FunctionDef]] = {}
        self._sites_memo: Dict[int, List[nodes.Call]] = {}
        self._calls_by_name: Optional[Dict[str, List[nodes.Call]]] = None
        self._grad_off_names: Optional[bool] = None
        self._value_names: Optional[Set[str]] = None

    def scope_of(self, node: nodes.NodeNG) -> nodes.NodeNG:
        """The function (or module) whose analysis covers ``node``."""
        scope = node.scope()
        while not isinstance(scope, (nodes.FunctionDef, nodes.Module)):
            scope = scope.parent.scope() if scope.parent is not None else self.module
        return scope

    def _named_sites(self, func: nodes.FunctionDef) -> List[nodes.Call]:
        """Calls of ``func`` under its own name (found by name, confirmed by inference)."""
        if self._calls_by_name is None:
            table: Dict[str, List[nodes.Call]] = {}
            for call in self.module.nodes_of_class(nodes.Call):
                name = infer.call_name(call)
                if name is not None:
                    table.setdefault(name, []).append(call)
            self._calls_by_name = table
        return [c for c in self._calls_by_name.get(func.name, []) if self._function_of(c.func) is func]

    def call_sites(self, func: nodes.FunctionDef) -> List[nodes.Call]:
        """Calls of the file that invoke ``func`` (by name first, then confirmed by inference)."""
        cached = self._sites_memo.get(id(func))
        if cached is not None:
            return cached
        sites = self._named_sites(func)
        if self._used_as_value(func.name):
            assert self._calls_by_name is not None
            # ``step = make_step(model)`` / ``return inner``: calls under other names, found by inference.
            for name, calls in self._calls_by_name.items():
                if name != func.name:
                    sites.extend(c for c in calls if self._function_of(c.func) is func)
        self._sites_memo[id(func)] = sites
        return sites

    def callers_unknown(self, func: nodes.FunctionDef) -> bool:
        """The function is handed on as a value (a callback, a returned closure) and no call of it
        is found in the file: who calls it, and with autograd on or off, is unknown."""
        return self._used_as_value(func.name) and not self.call_sites(func)

    def _used_as_value(self, name: str) -> bool:
        """``name`` appears other than as the callee of a call (returned, assigned, passed on)."""
        if self._value_names is None:
            found: Set[str] = set()
            for node in self.module.nodes_of_class((nodes.Name, nodes.Attribute)):
                if isinstance(node.parent, nodes.Call) and node.parent.func is node:
                    continue
                found.add(node.name if isinstance(node, nodes.Name) else node.attrname)
            self._value_names = found
        return name in self._value_names

    def is_lightning_eval_hook(self, func: nodes.FunctionDef) -> bool:
        """``validation_step``/``test_step``/``predict_step`` (and epoch-end hooks) of a LightningModule,
        or of any class when the file never calls the method itself (the framework does)."""
        if func.name not in LIGHTNING_EVAL_HOOKS or not func.is_method():
            return False
        klass = func.parent.frame()
        if isinstance(klass, nodes.ClassDef):
            for base in klass.bases:
                dotted = infer.dotted_name(base)
                if dotted is not None and _LIGHTNING_BASE.search(dotted):
                    return True
        return not self.call_sites(func)

    def calls_only_without_grad(self, func: nodes.FunctionDef, depth: int = 2) -> bool:
        """The function has call sites in the file and every one runs with autograd off
        (a ``no_grad`` block, a decorated caller, a Lightning eval hook, or a caller that
        is itself only called that way, ``depth`` levels up)."""
        if not self._grad_off_in_file():
            return False  # nothing in the file turns autograd off: skip the call-site search
        if not all(self._site_grad_off(site, func, depth) for site in self._named_sites(func)):
            return False  # one call with autograd on decides it: no search for calls under other names
        sites = self.call_sites(func)
        return bool(sites) and all(self._site_grad_off(site, func, depth) for site in sites)

    def _site_grad_off(self, site: nodes.Call, func: nodes.FunctionDef, depth: int) -> bool:
        if grad.grad_disabled(site):
            return True
        caller = self.scope_of(site)
        if isinstance(caller, nodes.FunctionDef) and caller is not func:
            if grad.function_grad_off(caller) or self.is_lightning_eval_hook(caller):
                return True
            if depth > 1 and self.calls_only_without_grad(caller, depth - 1):
                return True
        return False

    def _grad_off_in_file(self) -> bool:
        """Cheap syntactic test: the file names a grad-off context or defines a Lightning eval hook."""
        if self._grad_off_names is None:
            found = False
            kinds = (nodes.Name, nodes.Attribute, nodes.FunctionDef, nodes.ImportFrom)
            for node in self.module.nodes_of_class(kinds):
                if isinstance(node, nodes.ImportFrom):
                    labels = [name for name, _ in node.names]
                else:
                    labels = [node.attrname if isinstance(node, nodes.Attribute) else node.name]
                if any(label in _GRAD_OFF_WORDS or label in LIGHTNING_EVAL_HOOKS for label in labels):
                    found = True
                    break
            self._grad_off_names = found
        return self._grad_off_names

    def _function_of(self, expr: nodes.NodeNG) -> Optional[nodes.FunctionDef]:
        key = id(expr)
        if key not in self._func_memo:
            func = infer.function_def(expr)
            self._func_memo[key] = func if func is not None and func.root() is self.module else None
        return self._func_memo[key]
