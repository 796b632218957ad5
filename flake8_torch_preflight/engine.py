"""One astroid build and one walk per file, shared by every entry-point class.

flake8 builds each tree plugin once per file and hands all of them the same
``tree`` object.  The first class to run (``plugin._findings``) has
``analyse_file`` build the astroid module from the lines flake8 read
(``analysis.setup.build``) and run every selected rule in one walk; the other classes
read their code's findings from the plugin's one-entry cache.  Dependencies flow one way:
plugin -> engine -> rules -> analysis -> stubs.
"""
from __future__ import annotations

import functools
import gc
import importlib
import io
import signal
import sys
import threading
import time
import tokenize
import warnings
from typing import Any, Callable, Dict, List, Sequence, Tuple, Type

from astroid.exceptions import AstroidSyntaxError

from .analysis.setup import brain
from .analysis.semantic import memo, notes, project, work
from .analysis.setup.build import FileContext, Settings, build_module, worth_analysing
from .analysis.semantic.walker import BudgetExceeded, walk
from .rules import ALL_RULES, Rule

#: CPU seconds one file's analysis may take before it is abandoned (its findings
#: dropped, a note printed).  The budget that decides is ``work.MAX_INFERENCES``, a count,
#: the same in every run; this one only stops a single astroid call that never returns to
#: that counter, so it sits far above what any file of the scanned repositories takes
#: (``benchmarks/scan.py --slow`` lists the slowest).
BUDGET_SECONDS = 20.0

#: Allocations between two young-generation garbage collections while a file is analysed.
#: astroid allocates many long-lived objects, so Python's default (700 on 3.11) makes the
#: collector rescan them over and over; with this threshold the analysis costs what it costs
#: with the collector off (``benchmarks/bench.py`` measures it).  It is restored after each
#: file, so flake8's own work and memory across files are unchanged (tests/test_robustness.py).
GC_THRESHOLD0 = 50_000

Findings = Dict[str, List[Tuple[int, int, str]]]


def _gated_rules(source: str, settings: Settings) -> List[Type[Rule]]:
    """The selected rules whose ``requires`` gate the file's code matches.  A gate is matched on the
    source first (cheap); where one passes, again without the comments, so that no finding depends
    on what a comment says."""
    selected = [r for r in ALL_RULES if settings.selected is None or r.code in settings.selected]
    rules = [r for r in selected if r.requires is None or r.requires.search(source)]
    if not any(r.requires is not None for r in rules) or "#" not in source:
        return rules
    code = without_comments(source)
    return [r for r in rules if r.requires is None or r.requires.search(code)]


def without_comments(source: str) -> str:
    """``source`` with every comment blanked (the same lines and columns); unchanged where it does
    not tokenize."""
    lines = source.splitlines(keepends=True)
    try:
        comments = [t.start for t in tokenize.generate_tokens(io.StringIO(source).readline)
                    if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, ValueError):
        return source
    for row, col in comments:
        line = lines[row - 1]
        end = len(line.rstrip("\r\n"))
        lines[row - 1] = line[:col] + " " * (end - col) + line[end:]
    return "".join(lines)


def analyse_file(filename: str, lines: Sequence[str], settings: Settings, tree: object = None) -> Findings:
    """Run every selected rule on one file; never raises. ``tree``: flake8's ``ast`` of ``lines``,
    reused for the astroid build."""
    source = "".join(lines)
    rules = _gated_rules(source, settings)
    if not rules or not worth_analysing(source):
        return {}
    brain.install()  # routes torch imports to the stubs (built on first use)
    brain.begin_file(filename)
    budget = FileBudget()
    thresholds = gc.get_threshold()
    try:
        gc.set_threshold(max(GC_THRESHOLD0, thresholds[0]), *thresholds[1:])
        with budget, warnings.catch_warnings():
            # astroid warns (several lines each) when a transform overflows the recursion limit,
            # and Python when a module it parses has an invalid escape: none of it is the user's.
            warnings.simplefilter("ignore")
            found = _analyse(filename, source, lines, settings, rules, budget.deadline, tree)
        for what, text in notes.take():
            _note(filename, what, text)
        return found
    except BudgetExceeded:
        _note(filename, "analysis", budget.exceeded() + " and was skipped")
    except Exception as exc:  # never let one file abort the flake8 run
        if budget.past_deadline():
            # The alarm fired inside C code (ast.parse turns it into a SystemError).
            _note(filename, "analysis", budget.exceeded() + " and was skipped")
        else:
            _note(filename, "analysis", "failed: {}: {}".format(type(exc).__name__, exc))
    finally:
        gc.set_threshold(*thresholds)
        notes.take()
        _forget_file()
        _freeze_survivors()
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
        # build_module cuts what nests too deep for astroid (analysis.semantic.depth); a module it reads
        # while building this one may still overflow.
        notes.add("analysis", "nests too deep for astroid to build it and was skipped")
        return {}
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


def warm_up() -> None:
    """Build what every file's analysis shares (astroid's builtins, every torch stub) now, so
    that the first file does not pay for it: the analysis server (``server.py``) calls it while
    it waits for its first request."""
    brain.install()
    brain.build_all_stubs()
    gc.collect()
    gc.freeze()  # what lives for the whole process, out of the collector's way (see below)


def _freeze_survivors() -> None:
    """After the 2nd, 4th, 8th, ... analysed file of this process, collect and move what
    survives to the collector's permanent generation (``gc.freeze``).

    What survives a file (``_forget_file`` has run) is what lives for the whole run: astroid's
    builtins, the torch stubs, the user's modules astroid read, flake8's own state.  Python's
    full collections rescanned all of it again and again; frozen, they scan only what is newer,
    at no cost in peak memory.  Doubling the interval bounds what a freeze can pin that later
    turns to garbage (a node that one of astroid's class-level object models last saw) to a few
    trees per doubling."""
    global _analysed
    _analysed += 1
    if _analysed > 1 and _analysed & (_analysed - 1) == 0:  # 2, 4, 8, ...: a one-file run (an editor's save) skips it
        gc.collect()
        gc.freeze()


_analysed = 0


def _note(filename: str, what: str, text: str) -> None:
    """Make an internal problem visible without stopping flake8 (stderr, one line)."""
    sys.stderr.write("flake8-torch-preflight: {} on {} {}; please report it\n".format(what, filename, text))


def forget_project() -> None:
    """Drop the project listings and sources kept for the process (``analysis.semantic.project``): a
    long-lived server reads the tree afresh for each request, as a new flake8 run would."""
    project.forget()


def _forget_file() -> None:
    """Drop what the file's analysis cached (the analysis memos, astroid's inference caches and
    the ``functools.lru_cache`` of astroid that hold nodes: ``LookupMixIn.lookup``,
    ``ClassDef._metaclass_lookup_attribute``, ``ObjectModel.attributes``, and the guards that
    precede each statement (``astroid.constraint``); astroid's own
    ``clear_cache`` empties the same ones) and cut cached modules loose from it, so that no
    node of the file outlives it."""
    memo.end_file()
    brain.end_file()
    for clear in _astroid_cache_clearers():
        clear()


@functools.lru_cache(maxsize=None)
def _astroid_cache_clearers() -> Tuple[Callable[[], None], ...]:
    """The functions that empty the astroid caches ``_forget_file`` empties, looked up once; one
    that this astroid lacks is left out."""
    found = []
    for owner, name in _ASTROID_CACHES:
        try:
            target: Any = importlib.import_module(owner)
            for part in name.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError):  # pragma: no cover - internal API moved in another astroid
            continue
        found.append(getattr(target, "cache_clear", target))
    return tuple(found)


#: (module, attribute) of each astroid cache ``_forget_file`` empties.
_ASTROID_CACHES = (
    ("astroid.context", "_invalidate_cache"),
    ("astroid.constraint", "clear_preceding_guards_cache"),  # astroid >= 4.4: guards by statement
    ("astroid.inference_tip", "clear_inference_tip_cache"),
    ("astroid.nodes._base_nodes", "LookupMixIn.lookup"),
    ("astroid.nodes.scoped_nodes", "ClassDef._metaclass_lookup_attribute"),
    ("astroid.interpreter.objectmodel", "ObjectModel.attributes"),
)


class FileBudget:
    """The per-file budget of the linter, and of the estimator reading a script: at most
    ``work.MAX_INFERENCES`` astroid inferences (a count: the same in every run), and
    ``BUDGET_SECONDS`` of CPU time for a single step that never returns to that counter.
    Either raises ``BudgetExceeded`` inside the ``with`` block."""

    def __init__(self) -> None:
        self.deadline = 0.0
        self._timer = _time_budget(BUDGET_SECONDS)

    def __enter__(self) -> "FileBudget":
        work.install()
        self.deadline = time.process_time() + BUDGET_SECONDS
        work.begin_file()
        self._timer.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.__exit__(*exc)
        work.end_file()

    def past_deadline(self) -> bool:
        return time.process_time() >= self.deadline

    def exceeded(self) -> str:
        """Which limit was passed, in words (``needed more than 2,000,000 inferences``)."""
        if work.used() > work.MAX_INFERENCES:
            return "needed more than {:,} inferences".format(work.MAX_INFERENCES)
        return "took longer than {:g} s of CPU time".format(BUDGET_SECONDS)


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
