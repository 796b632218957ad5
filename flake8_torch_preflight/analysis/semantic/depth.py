"""Bound the nesting depth of the tree astroid builds, so that deep code costs no findings.

astroid's rebuilder, its transforms, its inference and the analyses here walk the
tree recursively.  Past a few hundred nested nodes they overflow Python's
recursion limit (1,000 frames): a ``'a' + 'a' + ...`` of about 500 terms made the
build fail and the file lose every finding, a chain of 330 attributes cost
TP001, an ``elif`` ladder of about 250 rungs every finding, all silently.  Real
code stays far below (the deepest expression of ten training repositories
nests 16 levels, the deepest statement 25; Python's parser refuses more than
100 indentation levels and 200 nested brackets), so only pathological files are
touched, in a copy of their syntax tree (flake8's own tree is never changed):

* an expression nested deeper than ``MAX_EXPRESSION_DEPTH`` inside its statement
  is replaced by the name ``PRUNED_NAME``, which resolves to nothing: inference
  through it answers "unknown" and the analyses stay silent about it;
* an ``elif`` ladder that would nest statements deeper than
  ``MAX_STATEMENT_DEPTH`` is read as a sequence of separate ``if`` statements
  (its rungs are no longer exclusive: a name they bind has more possible
  values, which reads as doubt, never as a finding); a statement still deeper
  (the parser allows none) is replaced by ``PRUNED_NAME``.

Everything else of the file, its lines and columns included, is unchanged, so its
other findings survive.  Deep trees are rare; ``too_deep`` finds them in one cheap pass.
"""
from __future__ import annotations

import ast
from typing import Any, List, Optional, Tuple

#: Nodes nested in one statement beyond which expressions are cut (see the module docstring).
MAX_EXPRESSION_DEPTH = 100
#: Statements nested beyond which ``elif`` ladders are flattened.
MAX_STATEMENT_DEPTH = 100
#: Total nesting (statements and expressions) up to which a tree is left alone without a closer look.
_SAFE_DEPTH = 100
#: The name a cut expression is replaced with (no file defines it).
PRUNED_NAME = "__tp_preflight_pruned__"


def too_deep(tree: ast.AST) -> bool:
    """The tree nests more than ``_SAFE_DEPTH`` nodes somewhere (one pass, no recursion)."""
    level: List[ast.AST] = [tree]
    depth = 0
    children = ast.iter_child_nodes
    while level:
        depth += 1
        if depth > _SAFE_DEPTH:
            return True
        following: List[ast.AST] = []
        extend = following.extend
        for node in level:
            extend(children(node))
        level = following
    return False


def bounded(tree: ast.Module) -> ast.Module:
    """A copy of ``tree`` with its deep parts cut or flattened as the module docstring says.  The copy
    is made without recursion (``copy.deepcopy`` and a second ``ast.parse`` both overflow on the
    trees this is for) and ``tree`` itself is left as it is."""
    root = ast.Module.__new__(ast.Module)
    stack: List[Tuple[ast.AST, ast.AST, int, int]] = [(tree, root, 0, 0)]
    while stack:
        old, new, statements, expressions = stack.pop()
        for attribute in old._attributes:
            if hasattr(old, attribute):
                setattr(new, attribute, getattr(old, attribute))
        for field, value in ast.iter_fields(old):
            if isinstance(value, list):
                if value and isinstance(value[0], ast.stmt):
                    value = _flattened(value, statements)
                items = []
                for child in value:
                    items.append(_copied(old, child, statements, expressions, stack))
                setattr(new, field, items)
            else:
                setattr(new, field, _copied(old, value, statements, expressions, stack))
    return root


def _copied(parent: ast.AST, child: Any, statements: int, expressions: int, stack: List[Any]) -> Any:
    """The copy of one field value of ``parent``: a fresh node whose own fields are filled when
    ``stack`` comes to it, a replacement when it lies too deep, the value itself when no node."""
    if not isinstance(child, ast.AST):
        return child
    replaced = _bounded_child(parent, child, statements, expressions)
    if replaced is not None:
        return replaced
    if isinstance(child, ast.stmt):
        depths = (statements + 1, 0)
    elif isinstance(child, ast.expr):
        depths = (statements, expressions + 1)
    else:
        depths = (statements, expressions)
    kind = type(child)
    fresh = kind.__new__(kind)  # its fields are set from ``child``'s (no constructor warnings on 3.13)
    stack.append((child, fresh, depths[0], depths[1]))
    return fresh


def _bounded_child(parent: ast.AST, child: Any, statements: int, expressions: int) -> Optional[ast.AST]:
    """The replacement of ``child`` when it lies too deep, else None."""
    if isinstance(child, ast.expr) and expressions + 1 > MAX_EXPRESSION_DEPTH:
        if isinstance(parent, ast.JoinedStr):
            return ast.copy_location(ast.Constant(value=""), child)
        return ast.copy_location(ast.Name(id=PRUNED_NAME, ctx=getattr(child, "ctx", None) or ast.Load()), child)
    if isinstance(child, ast.stmt) and statements + 1 > MAX_STATEMENT_DEPTH:
        return ast.copy_location(ast.Expr(value=ast.copy_location(ast.Name(id=PRUNED_NAME, ctx=ast.Load()), child)),
                                 child)
    return None


def _flattened(body: List[ast.stmt], statements: int) -> List[ast.stmt]:
    """``body`` with each ``if``/``elif`` ladder too long for the depth it starts at split into
    separate ``if`` statements (the last keeps the ladder's ``else``).  The rungs are shallow copies:
    the caller's tree keeps its ladder."""
    result: List[ast.stmt] = []
    for statement in body:
        rungs = _ladder(statement)
        if statements + len(rungs) <= MAX_STATEMENT_DEPTH:
            result.append(statement)
            continue
        for rung in rungs[:-1]:
            result.append(ast.copy_location(ast.If(test=rung.test, body=rung.body, orelse=[]), rung))
        result.append(rungs[-1])
    return result


def _ladder(statement: ast.stmt) -> List[ast.If]:
    """The ``if`` and each ``elif`` of a ladder headed by ``statement`` (empty for other statements)."""
    rungs: List[ast.If] = []
    current: Any = statement
    while isinstance(current, ast.If):
        rungs.append(current)
        current = current.orelse[0] if len(current.orelse) == 1 else None
    return rungs
