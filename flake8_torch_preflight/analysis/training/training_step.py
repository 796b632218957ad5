"""The training step, from resolved evidence: which loops and functions run once per
optimisation step, what runs once per *element* inside a step, and which branches are rare.

* A **step call** is ``<x>.backward(...)`` (``loss.backward()``, ``scaler.scale(loss).backward()``,
  ``accelerator.backward(loss)``) or ``.step()`` on a resolved optimizer or GradScaler.
* A **step loop** owns a step call: the call sits in the loop's body outside nested loops, or
  in a helper function of the file that the body calls that way, outside the helper's own loops
  (two helper levels).  An epoch loop that calls ``train_epoch()``, whose batch loop backwards,
  is not one (``loops.loop_calls``, which TP003 uses, does not make that distinction).
* A **step function** makes a step call outside any loop of its own (``def train_step(batch)``),
  or is a Lightning ``training_step``.  A function **runs per step** when it is a step function
  or some in-file call of it sits in a step loop or in a function that runs per step.
* A **per-element** position sits inside a loop or comprehension nested in a step (not the
  step loop itself), outside any rare branch (``if step % 100 == 0:``) between the two.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set

from astroid import nodes

from . import frameworks, gradients
from ..semantic import dataflow, infer, loops, memo, static_values
from .torch_names import GRAD_SCALERS, OPTIMIZER_BASES

#: Comprehension node types: each evaluates its element once per item.
COMPREHENSIONS = (nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)

#: Base classes whose ``training_step`` method Lightning calls once per step (resolved
#: syntactically through the file's imports; lightning is never read).
LIGHTNING_MODULES = frameworks.LIGHTNING_MODULES

#: Trainer classes whose ``fit``/``train`` runs a training loop the file does not spell out
#: (resolved syntactically through the file's imports; these packages are never read).
TRAINER_CLASSES = frozenset(
    {"lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer", "transformers.Trainer"}
)

#: How many helper levels "runs per step" follows from a step loop.
MAX_HELPER_DEPTH = 2

_SCOPES = (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef, nodes.Module)

Element = loops.Element

_MEMO: "Dict[nodes.Module, Dict[object, bool]]" = memo.per_file()


def _memo(node: nodes.NodeNG) -> Dict[object, bool]:
    root = node.root()
    table = _MEMO.get(root)
    if table is None:
        table = {}
        _MEMO[root] = table
    return table


def is_step_call(call: nodes.Call) -> bool:
    """``loss.backward()`` or ``optimizer.step()`` / ``scaler.step(optimizer)`` (resolved)."""
    if gradients.is_backward(call):
        return True
    if infer.method_name(call) != "step":
        return False
    receiver = call.func.expr
    return infer.is_instance_of(receiver, OPTIMIZER_BASES) or infer.is_instance_of(receiver, GRAD_SCALERS)


def owns_step(loop: "loops.Loop") -> bool:
    """``loop`` is the innermost loop around some step call: one in its body outside nested
    loops, or one in a helper of the file called that way, outside the helper's own loops
    (an epoch loop calling ``train_epoch()``, whose batch loop backwards, does not own it)."""
    memo = _memo(loop)
    key = ("owns", id(loop))
    if key not in memo:
        memo[key] = False  # provisional, guards recursion
        memo[key] = _steps_once(list(loop.body), loop, MAX_HELPER_DEPTH, set())
    return memo[key]


def _steps_once(
    statements: "List[nodes.NodeNG]", container: "Optional[loops.Loop]", depth: int, seen: "Set[int]"
) -> bool:
    """Some call among ``statements`` whose innermost loop is ``container`` (None in a helper)
    is a step call, or calls a helper that makes one that way."""
    for stmt in statements:
        for call in infer.iter_calls(stmt):
            if loops.innermost(call) is not container:
                continue  # runs per element of a nested loop, not once per iteration
            if infer.method_name(call) in ("backward", "step") and is_step_call(call):
                return True
            if depth <= 0 or infer.call_name(call) not in loops.defined_function_names(call.root()):
                continue  # cheap: only names the file defines can be its helpers
            helper = loops.local_helper(call)
            if helper is not None and id(helper) not in seen:
                seen.add(id(helper))
                if _steps_once(helper.body, None, depth - 1, seen):
                    return True
    return False


def is_step_function(func: nodes.FunctionDef) -> bool:
    """``func`` makes a step call outside its own loops, or is a Lightning ``training_step``."""
    memo = _memo(func)
    key = ("stepfn", id(func))
    if key not in memo:
        memo[key] = _lightning_training_step(func) or any(
            infer.method_name(c) in ("backward", "step") and is_step_call(c) and loops.innermost(c) is None
            for stmt in func.body
            for c in infer.iter_calls(stmt)
        )
    return memo[key]


def _lightning_training_step(func: nodes.FunctionDef) -> bool:
    if func.name != "training_step" or not func.is_method():
        return False
    klass = func.parent.frame()
    if not isinstance(klass, nodes.ClassDef):
        return False
    return any(infer.dotted_name(base) in LIGHTNING_MODULES for base in klass.bases)


def runs_per_step(func: nodes.FunctionDef, depth: int = MAX_HELPER_DEPTH) -> bool:
    """``func`` is a step function, or is called (in this file) from inside a step."""
    if is_step_function(func):
        return True
    if depth <= 0:
        return False
    memo = _memo(func)
    key = ("perstep", id(func), depth)
    if key not in memo:
        memo[key] = False  # provisional, guards recursion
        memo[key] = any(in_step(site, depth - 1) for site in loops.call_sites(func))
    return memo[key]


def in_step(node: nodes.NodeNG, depth: int = MAX_HELPER_DEPTH) -> bool:
    """``node`` runs once per step: in a step loop of its function, or in a function that runs
    per step, and not under a rare branch (``if step % 100 == 0: evaluate()``) on the way."""
    child: nodes.NodeNG = node
    parent = node.parent
    while parent is not None and not isinstance(parent, _SCOPES):
        if isinstance(parent, nodes.If) and child in parent.body and is_rare_branch(parent):
            return False
        if isinstance(parent, (nodes.For, nodes.While)) and child in parent.body and owns_step(parent):
            return True
        child, parent = parent, parent.parent
    return isinstance(parent, nodes.FunctionDef) and runs_per_step(parent, depth)


def per_element_loop(node: nodes.NodeNG, depth: int = 1, per_step: bool = False) -> Optional[Element]:
    """The loop or comprehension that runs ``node`` once per element inside a training step.

    Walking out from ``node`` within its function: the first enclosing loop/comprehension is
    the element loop, provided a step loop encloses it (or the function runs per step), that
    element loop is not itself a step loop, and no rare branch sits between them.  A
    comprehension's first iterable and a ``for`` loop's iterable run once, not per element.
    A helper with no loop of its own around ``node`` runs per element when every call of it in
    the file is made per element (``for p in model.parameters(): log_norm(p)``): the loop at
    its call site, ``depth`` levels of callers up.  With ``per_step`` the function around ``node`` is
    known to run per step (a helper of another module called from this file's step).
    """
    element: Optional[Element] = None
    gated = False
    child: nodes.NodeNG = node
    parent = node.parent
    once_comprehension: Optional[nodes.NodeNG] = None
    while parent is not None and not isinstance(parent, _SCOPES):
        if isinstance(parent, nodes.Comprehension) and child is parent.iter:
            comp = parent.parent
            if isinstance(comp, COMPREHENSIONS) and comp.generators and comp.generators[0] is parent:
                once_comprehension = comp
        elif isinstance(parent, COMPREHENSIONS) and parent is not once_comprehension:
            if element is None:
                element = parent
        elif isinstance(parent, (nodes.For, nodes.While)) and child is not getattr(parent, "iter", None):
            if child not in parent.orelse:
                if owns_step(parent):
                    return element if element is not None and not gated else None
                if element is None:
                    element = parent
        elif isinstance(parent, nodes.If) and element is not None and child in parent.body:
            if is_rare_branch(parent):
                gated = True
        child, parent = parent, parent.parent
    if gated or not isinstance(parent, nodes.FunctionDef):
        return None
    if element is None:
        if depth <= 0:
            return None
        sites = loops.call_sites(parent)
        found = [per_element_loop(site, depth - 1) for site in sites]
        return found[0] if found and all(f is not None for f in found) else None
    return element if per_step or runs_per_step(parent) else None


def is_rare_branch(branch: nodes.If) -> bool:
    """A periodic logging branch: its test takes a modulo (``step % 100 == 0``,
    ``not i % args.log_every``), or caps a list its body fills (``if len(examples) < 5:`` around
    ``examples.append(...)``: a few times in a run); and its body makes no step call (an
    accumulation branch ``if (i + 1) % accum == 0: optimizer.step()`` runs every optimizer step: not rare)."""
    if not any(op.op == "%" for op in branch.test.nodes_of_class(nodes.BinOp)) and not _caps_a_list(branch):
        return False
    for stmt in branch.body:
        for call in infer.iter_calls(stmt):
            if infer.method_name(call) in ("backward", "step") and is_step_call(call):
                return False
    return True


#: The most items ``_caps_a_list`` allows a capped list: a handful of examples kept for a figure.
FEW_KEPT = 16


def _caps_a_list(branch: nodes.If) -> bool:
    """``branch``'s test (or an operand of its ``and``) is ``len(x) < N`` with N fixed and at most
    ``FEW_KEPT``, and its body appends to ``x``: the body runs until x holds N items, then never."""
    test = branch.test
    operands = test.values if isinstance(test, nodes.BoolOp) and test.op == "and" else [test]
    for operand in operands:
        if not (isinstance(operand, nodes.Compare) and len(operand.ops) == 1 and operand.ops[0][0] in ("<", "<=")):
            continue
        left, right = operand.left, operand.ops[0][1]
        if not (isinstance(left, nodes.Call) and infer.call_name(left) == "len" and len(left.args) == 1):
            continue
        limit = static_values.int_value(right)
        if limit is None or limit.value > FEW_KEPT:
            continue
        kept = dataflow.binding_text(left.args[0])
        if any(
            infer.method_name(c) == "append" and dataflow.binding_text(c.func.expr) == kept  # type: ignore[union-attr]
            for stmt in branch.body for c in stmt.nodes_of_class(nodes.Call)
        ):
            return True
    return False


def file_trains(module: nodes.Module) -> bool:
    """The file trains: it makes a step call, builds a torch optimizer, or builds a Lightning /
    Hugging Face ``Trainer``."""
    memo = _memo(module)
    key = ("trains", id(module))
    if key not in memo:
        memo[key] = any(_training_evidence(call) for call in module.nodes_of_class(nodes.Call))
    return memo[key]


def _training_evidence(call: nodes.Call) -> bool:
    method = infer.method_name(call)
    if method in ("backward", "step"):
        return is_step_call(call)
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return False
    if infer.dotted_name(call.func) in TRAINER_CLASSES:
        return True
    value = infer.safe_infer(call.func)
    return isinstance(value, nodes.ClassDef) and infer.class_is_subclass_of(value, OPTIMIZER_BASES)


def under_periodic_branch(node: nodes.NodeNG, loop: "loops.Loop") -> bool:
    """Between ``loop`` and ``node`` sits the body of an ``if`` that does not run every iteration:
    its test takes a modulo (``if step % 500 == 0:``) or compares a name the loop binds for
    equality (``if epoch == 0:``, ``if batch_idx == last:``)."""
    bound = {n.name for n in loop.target.nodes_of_class(nodes.AssignName)} if isinstance(loop, nodes.For) else set()
    child: nodes.NodeNG = node
    parent = node.parent
    while parent is not None and parent is not loop and not isinstance(parent, _SCOPES):
        if isinstance(parent, nodes.If) and child in parent.body and _periodic_test(parent.test, bound):
            return True
        child, parent = parent, parent.parent
    return False


def _periodic_test(test: nodes.NodeNG, bound: "Set[str]") -> bool:
    if any(op.op == "%" for op in test.nodes_of_class(nodes.BinOp)):
        return True
    for compare in test.nodes_of_class(nodes.Compare):
        if all(op == "==" for op, _ in compare.ops):
            names = {n.name for n in compare.nodes_of_class(nodes.Name)}
            if names & bound:
                return True
    return False
