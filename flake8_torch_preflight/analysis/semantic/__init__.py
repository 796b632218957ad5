"""Questions about Python code with no torch knowledge: a call's argument, a binding, a constant's
value, the enclosing loop or function, per-file memos, the analysis budget."""
