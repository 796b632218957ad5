"""One astroid build and one walk per file, shared by every entry-point class.

flake8 builds each tree plugin once per file and hands all of them the same
``tree`` object.  The first class to run builds the astroid module from the
lines flake8 read (``analysis.build``), runs every selected rule in one walk,
and keeps the findings keyed on that ``tree``; the other classes read their
code's findings from this one-entry cache.  Dependencies flow one way:
plugin -> engine -> rules -> analysis -> stubs.
"""
from __future__ import annotations

import gc
import signal
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

from astroid.exceptions import AstroidSyntaxError

from .analysis import brain
from .analysis.build import SETTINGS, FileContext, Settings, build_module, worth_analysing
from .analysis.walker import BudgetExceeded, walk
from .rules import ALL_RULES, Rule

#: CPU seconds one file's analysis may take before it is abandoned (its findings
#: dropped, a note printed).  CPU time, not wall time, so a loaded machine or
#: ``--jobs`` oversubscription does not trip it.  Measured: a 1000-deep call
#: chain takes ~30 s of unbounded astroid inference; training scripts of
#: pytorch/examples take < 1 s, the largest timm files ~2 s.
BUDGET_SECONDS = 5.0

#: Allocations between two young-generation garbage collections while a file is analysed.
#: astroid allocates many long-lived objects, so Python's default (700 on 3.11) makes the
#: collector rescan them over and over: measured with benchmarks/bench.py-style timing on
#: pytorch/examples + nanoGPT + detr (133 files), 2.71 s of CPU with the default, 2.24 s with
#: this (the same as with the collector off).  It is restored after each file, so flake8's own
#: work and memory across files are unchanged (tests/test_robustness.py).
GC_THRESHOLD0 = 50_000

Findings = Dict[str, List[Tuple[int, int, str]]]
_last: Optional[Tuple[object, str, Findings]] = None


def findings_for(tree: object, filename: str, lines: Sequence[str], code: str) -> List[Tuple[int, int, str]]:
    """Findings of ``code`` for this file, analysing the file on first request."""
    global _last
    if _last is None or _last[0] is not tree or _last[1] != filename:
        _last = (tree, filename, analyse_file(filename, lines, SETTINGS, tree))
    return _last[2].get(code, [])


def analyse_file(filename: str, lines: Sequence[str], settings: Settings, tree: object = None) -> Findings:
    """Run every selected rule on one file; never raises. ``tree``: flake8's ``ast`` of ``lines``,
    reused for the astroid build."""
    source = "".join(lines)
    rules = [
        r
        for r in ALL_RULES
        if (settings.selected is None or r.code in settings.selected)
        and (r.requires is None or r.requires.search(source))
    ]
    if not rules or not worth_analysing(source):
        return {}
    brain.install()  # routes torch imports to the stubs (built on first use)
    brain.begin_file(filename)
    deadline = time.process_time() + BUDGET_SECONDS
    too_slow = "took longer than {:.0f} s and was skipped".format(BUDGET_SECONDS)
    thresholds = gc.get_threshold()
    try:
        gc.set_threshold(max(GC_THRESHOLD0, thresholds[0]), *thresholds[1:])
        with _time_budget(BUDGET_SECONDS):
            return _analyse(filename, source, lines, settings, rules, deadline, tree)
    except BudgetExceeded:
        _note(filename, "analysis", too_slow)
    except Exception as exc:  # never let one file abort the flake8 run
        if time.process_time() >= deadline:
            # The alarm fired inside C code (ast.parse turns it into a SystemError).
            _note(filename, "analysis", too_slow)
        else:
            _note(filename, "analysis", "failed: {}: {}".format(type(exc).__name__, exc))
    finally:
        gc.set_threshold(*thresholds)
        _reset_inference_caches()
    return {}


def _analyse(
    filename: str, source: str, lines: Sequence[str], settings: Settings, rules: List[Type[Rule]], deadline: float,
    tree: object = None,
) -> Findings:
    try:
        module = build_module(source, filename, tree)
    except AstroidSyntaxError:
        return {}  # flake8 reports E999 itself
    except RecursionError:
        return {}  # very long expressions overflow astroid's rebuilder; nothing to say
    ctx = FileContext(module, filename, lines, settings)
    instances = [rule(ctx) for rule in rules]
    failures: Dict[str, BaseException] = {}
    walk(module, instances, failures, deadline)
    result: Findings = {}
    for rule in instances:
        if rule.code in failures:
            exc = failures[rule.code]
            _note(filename, rule.code, "failed: {}: {}".format(type(exc).__name__, exc))
            continue
        result[rule.code] = sorted(set(rule.findings))
    return result


def _note(filename: str, what: str, text: str) -> None:
    """Make an internal problem visible without stopping flake8 (stderr, one line)."""
    sys.stderr.write("flake8-torch-preflight: {} on {} {}; please report it\n".format(what, filename, text))


def _reset_inference_caches() -> None:
    try:
        from astroid import context

        context._invalidate_cache()
    except Exception:  # pragma: no cover - internal API moved
        pass
    try:
        from astroid.inference_tip import clear_inference_tip_cache

        clear_inference_tip_cache()
    except Exception:  # pragma: no cover
        pass


class _time_budget:
    """SIGPROF-based CPU-time budget on POSIX main threads; a no-op elsewhere (the walker
    still checks the deadline between nodes)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.active = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        self.previous: Any = None

    def __enter__(self) -> "_time_budget":
        if self.active:
            try:
                self.previous = signal.signal(signal.SIGPROF, _raise_budget)
                signal.setitimer(signal.ITIMER_PROF, self.seconds)
            except (ValueError, OSError):  # pragma: no cover - embedded interpreters
                self.active = False
        return self

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, self.previous if self.previous is not None else signal.SIG_DFL)


def _raise_budget(signum: int, frame: object) -> None:
    raise BudgetExceeded()
