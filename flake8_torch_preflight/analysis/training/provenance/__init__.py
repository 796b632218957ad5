"""Autograd provenance: which values of a file carry a live autograd graph, and where.

Computed once per file and memoised in ``ctx.memo``: ``provenance.of(ctx)``.  Each module
answers one question:

- ``lattice``: what a value is made of (``Prov``), and how two possible values join;
- ``callers``: who calls a function of the file, and whether every call runs with autograd off;
- ``runner``: which record every expression gets (sources, propagation, stops, the flow over
  statements, loops and calls, helper summaries, the budgets);
- ``queries``: what the rules ask of the result (``of``, ``Provenance``'s methods, and the
  syntactic checks that come before it).
"""
from .lattice import CONSTANT, DYNAMIC, OFF, ON, UNKNOWN, Backward, Def, Escape, Prov, derived, join, join_all, stop
from .queries import Provenance, could_be_model_call, host_value, of, source_text
from .runner import ENTRY_METHODS, LOSS_CALL, MAYBE_MODEL_CALL, MODEL_CALL, STOP_METHODS, STORE_METHODS

__all__ = [
    "CONSTANT",
    "DYNAMIC",
    "ENTRY_METHODS",
    "LOSS_CALL",
    "MAYBE_MODEL_CALL",
    "MODEL_CALL",
    "OFF",
    "ON",
    "STOP_METHODS",
    "STORE_METHODS",
    "UNKNOWN",
    "Backward",
    "Def",
    "Escape",
    "Prov",
    "Provenance",
    "could_be_model_call",
    "derived",
    "host_value",
    "join",
    "join_all",
    "of",
    "source_text",
    "stop",
]
