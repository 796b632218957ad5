"""What a script does when it is run: the calls its module-level code makes, in order.

A file runs its module-level statements (``if __name__ == "__main__":``
bodies included) when executed.  ``run_calls`` lists the calls those
statements make in evaluation order, with the functions and methods of the
file they call expanded where they are first called (each once), the
``__init__`` of classes of the file expanded where they are instantiated, and the
function a process launcher runs (``mp.spawn(main, ...)``) expanded at the launch.
A module that only defines functions and classes makes no module-level call:
it is not a run.
"""
from __future__ import annotations

from typing import List, Optional, Set

from astroid import nodes

from . import device, frameworks, gradients, infer, loops
from .modes import calls_in_order
from .torch_names import MODULE_BASES

#: How deep helper functions are expanded (main -> train -> train_epoch -> step).
HELPER_DEPTH = 5

#: Calls that show a script trains (rather than only evaluates or converts).
TRAINING_METHODS = gradients.BACKWARD_METHODS
TRAINING_CALLS = frameworks.FIT_METHODS

#: Launchers that run the function they are given (first argument or ``fn=``) in each worker
#: process, as (module, function) import paths.  ``torch.multiprocessing`` has no stub, so these
#: are matched on the dotted path the file's imports give (``import torch.multiprocessing as mp;
#: mp.spawn`` is ``torch.multiprocessing.spawn``), like NumPy names.
SPAWN_FUNCTIONS = frozenset({("torch.multiprocessing", "spawn"), ("torch.multiprocessing", "start_processes")})
#: Process classes whose ``target=`` function is the worker's run (same matching).
PROCESS_CLASSES = frozenset(
    {("multiprocessing", "Process"), ("torch.multiprocessing", "Process"), ("multiprocessing.context", "Process")}
)

_LAUNCHER_NAMES = frozenset(name for _, name in SPAWN_FUNCTIONS | PROCESS_CLASSES)


def is_main_guard(node: nodes.NodeNG) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if not isinstance(node, nodes.If) or not isinstance(node.test, nodes.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or test.ops[0][0] != "==":
        return False
    sides = [test.left, test.ops[0][1]]
    names = [s for s in sides if isinstance(s, nodes.Name) and s.name == "__name__"]
    consts = [s for s in sides if isinstance(s, nodes.Const) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def run_calls(module: nodes.Module, helper_depth: int = HELPER_DEPTH) -> List[nodes.Call]:
    """Calls the module's top-level code makes when run, helpers of the file expanded in place."""
    found: List[nodes.Call] = []
    expanded: Set[int] = set()

    def visit(statements: List[nodes.NodeNG], depth: int) -> None:
        for statement in statements:
            if isinstance(statement, (nodes.FunctionDef, nodes.ClassDef)):
                continue
            for call in calls_in_order(statement):
                found.append(call)
                if depth <= 0:
                    continue
                body = _callee_body(call)
                if body is not None and id(body) not in expanded:
                    expanded.add(id(body))
                    visit(body.body, depth - 1)

    visit(list(module.body), helper_depth)
    return found


def _callee_body(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The file's function ``call`` runs: a helper (or a function imported from a project module,
    ``loops.local_helper``), a method, the ``__init__`` of a class it builds (not when built on the
    meta device or under ``init_module(empty_init=True)``, ``device.built_empty``), or the function
    a process launcher starts (``mp.spawn(main, ...)``, ``Process(target=main)``)."""
    helper = loops.local_helper(call)
    if helper is not None:
        return helper
    target = launched_function(call)
    if target is not None:
        return target
    klass = constructed_local_class(call)
    if klass is None or device.built_empty(call):
        return None  # built on the meta device / under empty_init: its constructor initialises nothing
    init = klass.locals.get("__init__")
    if init and isinstance(init[0], nodes.FunctionDef):
        return init[0]
    return None


def launched_function(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The function of the file that a process launcher runs in each worker: the first argument of
    ``torch.multiprocessing.spawn`` / ``start_processes``, the ``target=`` of a ``Process``."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return None
    dotted = infer.dotted_name(call.func)  # the file's imports, aliases included (no inference)
    if dotted is None and infer.call_name(call) in _LAUNCHER_NAMES:
        dotted = infer.qname(call.func)  # e.g. ``mp = torch.multiprocessing``
    name = tuple(dotted.rsplit(".", 1)) if dotted and "." in dotted else None
    if name in SPAWN_FUNCTIONS:
        target: Optional[nodes.NodeNG] = call.args[0] if call.args else None
        if target is None:
            target = next((kw.value for kw in call.keywords or () if kw.arg == "fn"), None)
    elif name in PROCESS_CLASSES:
        target = next((kw.value for kw in call.keywords or () if kw.arg == "target"), None)
    else:
        return None
    if not isinstance(target, (nodes.Name, nodes.Attribute)):
        return None
    func = infer.function_def(target)
    return func if func is not None and func.root() is call.root() else None


def constructed_local_class(call: nodes.Call) -> Optional[nodes.ClassDef]:
    """The class of the checked file that ``call`` instantiates, or None."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return None
    if infer.call_name(call) not in loops.defined_class_names(call.root()):
        return None  # no class of that name in the file (an alias of a local class is missed)
    value = infer.safe_infer(call.func)
    if isinstance(value, nodes.ClassDef) and value.root() is call.root():
        return value
    return None


def trains(calls: List[nodes.Call]) -> bool:
    """The run reaches a training step: ``loss.backward()``, ``trainer.fit(...)``, or ``trainer.train()``
    on something that is not a module (``model.train()`` only switches a module's mode)."""
    for call in calls:
        if infer.method_name(call) in TRAINING_METHODS or infer.call_name(call) in TRAINING_CALLS:
            return True
        if infer.method_name(call) == "train" and not call.args and not call.keywords:
            if not infer.is_instance_of(call.func.expr, MODULE_BASES):  # type: ignore[union-attr]
                return True
    return False
