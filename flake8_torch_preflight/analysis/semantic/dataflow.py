"""What a name or ``self.attr`` was assigned from, read syntactically in the file.

astroid's inference follows values but forgets *how* they were made (a
``softmax`` result infers to a plain ``Tensor``); rules that care about the
producing expression use these helpers instead.  Every helper returns None
when a binding is not a plain assignment (parameters, loop targets, unpacking,
augmented assignment, ``global``): unknown means silence.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from astroid import nodes
from astroid.exceptions import AstroidError

#: Assignments looked at per name; more than this is treated as unknown.
MAX_BINDINGS = 8

#: Methods of a mapping that return its own entries without computing anything (``d.items()``).
ENTRY_METHODS = frozenset({"items", "values", "keys"})


def assigned_values(expr: nodes.NodeNG, unpack: bool = False) -> Optional[List[nodes.NodeNG]]:
    """Right-hand sides that may reach ``expr`` (a Name or ``self.attr``), or None when unknown.
    With ``unpack``, a name bound by unpacking a literal tuple gets its element
    (``train_sampler, dev_sampler = None, None``: ``None``)."""
    if isinstance(expr, nodes.Name):
        return _name_values(expr, unpack)
    if isinstance(expr, nodes.Attribute) and isinstance(expr.expr, nodes.Name) and expr.expr.name == "self":
        return _self_attr_values(expr)
    return None


def sole_binding(name: nodes.Name) -> Optional[nodes.NodeNG]:
    """The one statement or node that binds ``name`` where it is used (an ``AssignName``, an
    import, a class or function definition), or None when there are several or none."""
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    return bindings[0] if len(bindings) == 1 else None


def unpacked_from_call(name: nodes.Name) -> "Optional[Tuple[nodes.Call, int, int]]":
    """(call, index, count) when ``name`` is bound once by unpacking a call into ``count`` plain targets:
    ``a, b = model(x)`` gives ``(model(x), 1, 2)`` for ``b``."""
    binding = single_binding(name)
    if binding is None or not isinstance(binding.parent, nodes.Tuple):
        return None
    target = binding.parent
    assign = target.parent
    if not isinstance(assign, nodes.Assign) or target not in assign.targets or not isinstance(assign.value, nodes.Call):
        return None
    if any(isinstance(e, nodes.Starred) for e in target.elts):
        return None
    return assign.value, target.elts.index(binding), len(target.elts)


def loop_iterable(name: nodes.Name) -> Optional[nodes.NodeNG]:
    """The iterable of the ``for`` loop (or comprehension) whose plain target is ``name``'s one binding:
    ``outputs`` for ``out`` in ``for out in outputs:``; None for any other binding."""
    binding = single_binding(name)
    loop = binding.parent if binding is not None else None
    if isinstance(loop, (nodes.For, nodes.Comprehension)) and loop.target is binding:
        return loop.iter  # type: ignore[no-any-return]
    return None


def single_binding(name: nodes.Name) -> Optional[nodes.AssignName]:
    """The one ``AssignName`` that binds ``name`` where it is used (a parameter, a loop target, a
    plain assignment), or None when there are several bindings, none, or another kind."""
    binding = sole_binding(name)
    return binding if isinstance(binding, nodes.AssignName) else None


def _name_values(name: nodes.Name, unpack: bool = False) -> Optional[List[nodes.NodeNG]]:
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    if not bindings or len(bindings) > MAX_BINDINGS:
        return None
    values: List[nodes.NodeNG] = []
    for binding in bindings:
        value = _value_of_binding(binding)
        if value is None and unpack:
            value = unpacked_value(binding)
        if value is None:
            return None
        values.append(value)
    return values


def unpacked_value(binding: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    """``y`` for the ``b`` of ``a, b = x, y``: the element at its position of a literal tuple or list
    of the same length (no starred target), or None."""
    targets = binding.parent
    assign = targets.parent if targets is not None else None
    if not (isinstance(targets, (nodes.Tuple, nodes.List)) and isinstance(assign, nodes.Assign)
            and targets in assign.targets):
        return None
    value = assign.value
    if not isinstance(value, (nodes.Tuple, nodes.List)) or len(value.elts) != len(targets.elts):
        return None
    if any(isinstance(e, nodes.Starred) for e in targets.elts + value.elts):
        return None
    return value.elts[targets.elts.index(binding)]


def _value_of_binding(binding: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    if not isinstance(binding, (nodes.AssignName, nodes.AssignAttr)):
        return None
    parent = binding.parent
    if isinstance(parent, nodes.Assign) and binding in parent.targets:
        return parent.value
    if isinstance(parent, nodes.AnnAssign) and parent.target is binding and parent.value is not None:
        return parent.value
    if isinstance(parent, nodes.NamedExpr) and parent.target is binding:
        return parent.value
    return None


def _self_attr_values(attr: nodes.Attribute) -> Optional[List[nodes.NodeNG]]:
    func = attr.frame()  # the method, also from inside a comprehension (its own scope)
    klass = func.parent.frame() if isinstance(func, nodes.FunctionDef) and func.parent is not None else None
    if not isinstance(klass, nodes.ClassDef):
        return None
    values: List[nodes.NodeNG] = []
    for method in klass.mymethods():
        for node in method.nodes_of_class(nodes.AssignAttr):
            if node.attrname == attr.attrname and is_self_attr(node):
                value = _value_of_binding(node)
                if value is None:
                    return None
                values.append(value)
                if len(values) > MAX_BINDINGS:
                    return None
    return values or None


def branch_values(name: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """The values of ``name`` when the statement before its use (in its block or an enclosing one,
    within the function) is an ``if``/``else`` whose two arms both end by assigning it plainly
    (``if cuda: x = Variable(x.cuda(), volatile=True) else: x = Variable(x, volatile=True)``): what
    was bound before (a loop target) no longer reaches.  None otherwise."""
    node: nodes.NodeNG = name.statement()
    while node is not None and not isinstance(node, (nodes.FunctionDef, nodes.Module, nodes.ClassDef, nodes.Lambda)):
        previous = node.previous_sibling()
        while previous is not None:
            if isinstance(previous, nodes.If) and previous.orelse:
                arms = [_last_assignment(previous.body, name.name), _last_assignment(previous.orelse, name.name)]
                if all(arm is not None for arm in arms):
                    return arms  # type: ignore[return-value]
            if any(n.name == name.name for n in previous.nodes_of_class(nodes.AssignName)):
                return None  # bound again otherwise in between
            previous = previous.previous_sibling()
        node = node.parent
    return None


def _last_assignment(block: List[nodes.NodeNG], name: str) -> Optional[nodes.NodeNG]:
    """The value of the last statement of ``block`` that binds ``name`` plainly (``x = value``) at its
    top level, when no later statement of the block binds it."""
    for statement in reversed(block):
        if isinstance(statement, nodes.Assign) and any(
            isinstance(t, nodes.AssignName) and t.name == name for t in statement.targets
        ):
            return statement.value if len(statement.targets) == 1 else None
        if any(n.name == name for n in statement.nodes_of_class(nodes.AssignName)):
            return None
    return None


def assigned_name(value: nodes.NodeNG) -> Optional[nodes.AssignName]:
    """The one plain name ``value`` is assigned to (``x = value``), or None."""
    target = assignment_target(value)
    return target if isinstance(target, nodes.AssignName) else None


def assignment_target(value: nodes.NodeNG, unpack: bool = False) -> "Optional[nodes.AssignName | nodes.AssignAttr]":
    """The one plain name or attribute ``value`` is assigned to (``x = value``, ``self.x = value``); with
    ``unpack``, also as an element of a literal tuple unpacked into as many plain targets
    (``sampler, shuffle = DistributedSampler(ds), False``: the reverse of ``unpacked_value``)."""
    parent = value.parent
    if unpack and isinstance(parent, (nodes.Tuple, nodes.List)):
        assign = parent.parent
        if not isinstance(assign, nodes.Assign) or assign.value is not parent or len(assign.targets) != 1:
            return None
        targets = assign.targets[0]
        if not isinstance(targets, (nodes.Tuple, nodes.List)) or len(targets.elts) != len(parent.elts):
            return None
        if any(isinstance(e, nodes.Starred) for e in targets.elts + parent.elts):
            return None
        target = targets.elts[parent.elts.index(value)]
    elif isinstance(parent, nodes.Assign) and len(parent.targets) == 1 and parent.value is value:
        target = parent.targets[0]
    else:
        return None
    return target if isinstance(target, (nodes.AssignName, nodes.AssignAttr)) else None


def name_uses(binding: nodes.AssignName) -> List[nodes.Name]:
    """The reads, in the binding's scope, whose lookup reaches ``binding``."""
    found: List[nodes.Name] = []
    for name in binding.scope().nodes_of_class(nodes.Name):
        if name.name != binding.name:
            continue
        try:
            _, bindings = name.lookup(name.name)
        except (AstroidError, RecursionError):
            continue
        if any(b is binding for b in bindings):
            found.append(name)
    return found


def item_stores(name: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """The values stored into items of what ``name`` is bound to, in its bindings' scopes:
    ``v`` for ``images[i] = v``, ``images[i, :, :] = v`` or ``images[i] += v``; None when a store
    is neither (``images[i], labels[i] = pair``, a store in a ``for`` target)."""
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    found: List[nodes.NodeNG] = []
    for scope in {id(b.scope()): b.scope() for b in bindings}.values():
        for subscript in scope.nodes_of_class(nodes.Subscript):
            base = subscript.value
            while isinstance(base, nodes.Subscript):
                base = base.value
            if not isinstance(base, nodes.Name) or base.name != name.name:
                continue
            statement = subscript.parent
            if isinstance(statement, nodes.Assign) and subscript in statement.targets:
                found.append(statement.value)
            elif isinstance(statement, nodes.AugAssign) and statement.target is subscript:
                found.append(statement.value)
            elif getattr(subscript, "ctx", None) is not None and subscript.ctx.name == "Store":
                return None
    return found


def returned_values(func: nodes.FunctionDef, bare: bool = False) -> List[Optional[nodes.NodeNG]]:
    """The values ``func``'s own ``return`` statements give back (a nested function's returns are its
    own); a bare ``return`` gives none, or, with ``bare``, a None in the list (for a caller that needs
    every return to be of one shape)."""
    return [r.value for r in func.nodes_of_class(nodes.Return) if r.scope() is func and (bare or r.value is not None)]


def is_self_attr(node: nodes.NodeNG) -> bool:
    """``self.x``, read or assigned."""
    return (isinstance(node, (nodes.Attribute, nodes.AssignAttr)) and isinstance(node.expr, nodes.Name)
            and node.expr.name == "self")


def binding_text(expr: nodes.NodeNG) -> str:
    """Source text of an expression, whitespace-free: how rules compare receivers."""
    return "".join(expr.as_string().split())


def terminal_name(expr: nodes.NodeNG) -> Optional[str]:
    """``optimizer`` for ``self.optimizer`` or ``optimizer``; None for anything else."""
    if isinstance(expr, nodes.Name):
        return str(expr.name)
    if isinstance(expr, nodes.Attribute):
        return str(expr.attrname)
    return None
