"""Shared analysis on one astroid module per file: stubs, build, walk, inference and predicates.

Dependencies flow one way: rules import from here; nothing here imports a rule.
"""
