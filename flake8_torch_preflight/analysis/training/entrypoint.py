"""What a script does when it is run: the calls its module-level code makes, in order.

A file runs its module-level statements (``if __name__ == "__main__":``
bodies included) when executed.  ``run_calls`` lists the calls those
statements make in evaluation order, with the functions and methods of the
file they call expanded where they are first called (each once), the
``__init__`` of classes of the file expanded where they are instantiated, and the
function a forking process launcher runs (``Process(target=main)``) expanded at the
launch.  A function started in fresh interpreters (``mp.spawn(main, ...)``, the
``spawn`` and ``forkserver`` start methods) shares nothing with the parent, the seeds
of its random generators included: it is a run of its own (``spawned_runs``).
A run trains (``trains``) when it reaches a backward or a framework's fit;
``updates_parameters`` tells a backward whose gradients change weights (an optimizer
step, ``gradients.stepped_optimizer``) from one that only checks them.  A module that only
defines functions and classes makes no module-level call: it is not a run; nor is a library
module of the project whose ``__main__`` block trains on made-up tensors (``library_self_test``).
``made_up_benchmark`` tells a function that times or measures training steps on made-up tensors
(a benchmark, whose trained weights nothing reads) from one that trains; ``reads_data`` tells a
call that reads data by its library, its class or where its value goes, never by its name.
"""
from __future__ import annotations

import builtins
import os
import re
from typing import Dict, List, NamedTuple, Optional, Set, Tuple, Union

from astroid import nodes
from astroid.exceptions import AstroidError

from ..semantic import dataflow, infer, loops, memo, static_values
from . import device, evaluation, frameworks, gradients, models
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

#: Modules whose ``get_context(method)`` / ``set_start_method(method)`` choose how processes start
#: (matched on the imports' dotted path like ``SPAWN_FUNCTIONS``: ``torch.multiprocessing`` has no stub).
MULTIPROCESSING_MODULES = ("multiprocessing", "torch.multiprocessing")
#: Start methods that begin each process in a fresh interpreter, which inherits none of the parent's
#: state (the seeds of its random generators included).  ``fork``, Linux's default for ``Process``
#: before Python 3.14, copies the parent, seeds and all; a launch whose method is not written in the
#: file is taken to fork (``torch.multiprocessing.spawn`` always spawns).
FRESH_START_METHODS = frozenset({"spawn", "forkserver"})
#: How many spawned runs are listed per file.
MAX_SPAWNED_RUNS = 8


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
    """Calls the module's top-level code makes when run, helpers of the file expanded in place (a
    function started in fresh interpreters is not: ``spawned_runs``)."""
    return _expanded_calls(list(module.body), helper_depth, set())


class SpawnedRun(NamedTuple):
    """A function of the file that a launch starts in fresh interpreters, and the calls it makes."""

    launch: nodes.Call
    function: nodes.FunctionDef
    calls: List[nodes.Call]


def spawned_runs(module: nodes.Module, calls: List[nodes.Call], helper_depth: int = HELPER_DEPTH) -> List[SpawnedRun]:
    """The runs of the functions that launches among ``calls`` start in fresh interpreters
    (``spawns``), and the runs those start in turn; a function launched twice is listed once.
    A spawned process imports the main module again before it calls the function: its run is the
    module-level code outside ``if __name__ == "__main__":`` (a seed there reaches every process),
    then the function, each expanded like ``run_calls``."""
    runs: List[SpawnedRun] = []
    seen: Set[int] = set()
    pending = [calls]
    imported = [statement for statement in module.body if not is_main_guard(statement)]
    while pending and len(runs) < MAX_SPAWNED_RUNS:
        for call in pending.pop(0):
            function = launched_function(call)
            if function is None or id(function) in seen or not spawns(call):
                continue
            seen.add(id(function))
            expanded = {id(function)}
            worker = _expanded_calls(imported, helper_depth, expanded)
            worker += _expanded_calls(list(function.body), helper_depth - 1, expanded)
            runs.append(SpawnedRun(call, function, worker))
            pending.append(worker)
    return runs[:MAX_SPAWNED_RUNS]


def calls_run_by(statements: List[nodes.NodeNG]) -> List[nodes.Call]:
    """The calls ``statements`` make as they run, the file's functions they run expanded, as ``run_calls``
    reads the module's top-level code."""
    return _expanded_calls(statements, HELPER_DEPTH, set())


def _expanded_calls(statements: List[nodes.NodeNG], helper_depth: int, expanded: Set[int]) -> List[nodes.Call]:
    """The calls ``statements`` make as they run, the file's functions they run expanded (``_callee_body``)."""
    return loops.calls_in(statements, helper_depth, callee=_callee_body, expanded=expanded, as_run=True)


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
        return None if spawns(call) else target  # a spawned function is a run of its own
    klass = constructed_local_class(call)
    if klass is None or device.built_empty(call):
        return None  # built on the meta device / under empty_init: its constructor initialises nothing
    init = klass.locals.get("__init__")
    if init and isinstance(init[0], nodes.FunctionDef):
        return init[0]
    return None


def launched_function(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The function of the file that a process launcher runs in each worker: the first argument of
    ``torch.multiprocessing.spawn`` / ``start_processes``, the ``target=`` of a ``Process`` (one of
    a ``get_context(...)`` context included)."""
    launch = _launch(call)
    if launch is None:
        return None
    target = launch[1]
    if not isinstance(target, (nodes.Name, nodes.Attribute)):
        return None
    func = infer.function_def(target)
    return func if func is not None and func.root() is call.root() else None


def spawns(call: nodes.Call) -> bool:
    """``call`` launches processes that start in fresh interpreters (``FRESH_START_METHODS``):
    ``torch.multiprocessing.spawn``; ``start_processes`` unless given another ``start_method``; a
    ``Process`` of a ``get_context("spawn")`` context, or of a file that calls
    ``set_start_method("spawn")``.  False for anything else, an unknown method included."""
    launch = _launch(call)
    if launch is None:
        return False
    kind = launch[0]
    if kind == "spawn":
        return True
    if kind == "start_processes":
        method = infer.argument(call, "start_method", 5)
        return method is None or _constant(method) in FRESH_START_METHODS
    if kind == "context":
        context = _start_context(call.func.expr)  # type: ignore[union-attr]
        method = infer.argument(context, "method", 0) if context is not None else None
        return method is not None and _constant(method) in FRESH_START_METHODS
    return _file_start_method(call.root()) in FRESH_START_METHODS


def _launch(call: nodes.Call) -> Optional[Tuple[str, Optional[nodes.NodeNG]]]:
    """(kind, the function argument) of a process launch: kind ``spawn`` / ``start_processes``, ``process``
    (a ``Process`` class of the imports) or ``context`` (``ctx.Process`` of a ``get_context`` call)."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)) or infer.call_name(call) not in _LAUNCHER_NAMES:
        return None
    dotted = infer.dotted_name(call.func)  # the file's imports, aliases included (no inference)
    if dotted is None:
        dotted = infer.qname(call.func)  # e.g. ``mp = torch.multiprocessing``
    name = tuple(dotted.rsplit(".", 1)) if dotted and "." in dotted else None
    target = next((kw.value for kw in call.keywords or () if kw.arg == "target"), None)
    if name in SPAWN_FUNCTIONS:
        return str(name[1]), infer.argument(call, "fn", 0)  # type: ignore[index]
    if name in PROCESS_CLASSES:
        return "process", target
    if isinstance(call.func, nodes.Attribute) and call.func.attrname == "Process":
        if _start_context(call.func.expr) is not None:
            return "context", target
    return None


def _launched(read: nodes.NodeNG) -> Optional[infer.Launch]:
    """How a process launch calls the function ``read`` hands it: ``mp.spawn(fn, args=(a, b))`` calls
    ``fn(rank, a, b)``, ``Process(target=fn, args=(a,), kwargs={"k": v})`` calls ``fn(a, k=v)``.
    None when ``read`` is not a launch's function, or its arguments are not written out."""
    call = read.parent.parent if isinstance(read.parent, nodes.Keyword) else read.parent
    launch = _launch(call) if isinstance(call, nodes.Call) else None
    if launch is None or launch[1] is not read:
        return None
    spawned = launch[0] in ("spawn", "start_processes")
    given = infer.argument(call, "args", 1 if spawned else 3)
    passed: List[Optional[nodes.NodeNG]] = [None] if spawned else []  # spawn passes the rank first
    if given is not None:
        if not isinstance(given, (nodes.Tuple, nodes.List)) or any(isinstance(e, nodes.Starred) for e in given.elts):
            return None
        passed.extend(given.elts)
    named: Dict[str, nodes.NodeNG] = {}
    given = None if spawned else infer.argument(call, "kwargs", 4)
    if given is not None:
        if not isinstance(given, nodes.Dict):
            return None
        for key, value in given.items:
            if not isinstance(key, nodes.Const) or not isinstance(key.value, str):
                return None
            named[key.value] = value
    return passed, named


infer.LAUNCH_CONVENTIONS.append(_launched)


def _start_context(expr: nodes.NodeNG) -> Optional[nodes.Call]:
    """The ``multiprocessing.get_context(...)`` call that ``expr`` is, written there or bound once to its name."""
    if isinstance(expr, nodes.Name):
        values = dataflow.assigned_values(expr)
        expr = values[0] if values and len(values) == 1 else None
    if not isinstance(expr, nodes.Call) or infer.call_name(expr) != "get_context":
        return None
    dotted = infer.dotted_name(expr.func)
    return expr if dotted is not None and dotted.rsplit(".", 1)[0] in MULTIPROCESSING_MODULES else None


_START_METHODS: "Dict[nodes.Module, Optional[str]]" = memo.per_file()


def _file_start_method(module: nodes.Module) -> Optional[str]:
    """The start method the file sets (``mp.set_start_method("spawn")``); None when it sets none,
    an unknown one or several."""
    if module not in _START_METHODS:
        methods = set()
        for call in module.nodes_of_class(nodes.Call):
            if infer.call_name(call) != "set_start_method":
                continue
            dotted = infer.dotted_name(call.func)
            if dotted is not None and dotted.rsplit(".", 1)[0] in MULTIPROCESSING_MODULES:
                method = infer.argument(call, "method", 0)
                methods.add(_constant(method) if method is not None else None)
        _START_METHODS[module] = methods.pop() if len(methods) == 1 else None
    return _START_METHODS[module]


def _constant(node: nodes.NodeNG) -> Optional[str]:
    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, str) else None


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
    return any(infer.method_name(call) in TRAINING_METHODS for call in calls) or _fits(calls)


def fails_before_training(calls: List[nodes.Call]) -> bool:
    """The run stops with a NameError or a TypeError before its first training step: a call it makes
    first (in ``calls``' run order) goes through a name the file never binds, not a builtin either
    (``torch.optim.SGD(...)`` in a script that only imports ``from torch import nn``), or, at the
    script's top level (``_at_top``), passes an argument its callee does not take
    (``loops.rejected_argument``).  A file with a
    star import, ``exec``, ``globals()`` or a module ``__getattr__`` may bind names unseen: never judged."""
    module = calls[0].root() if calls else None
    if module is None or _binds_unseen(module):
        return False
    for call in calls:
        if infer.method_name(call) in TRAINING_METHODS:
            return False
        head = call.func
        while isinstance(head, (nodes.Attribute, nodes.Call, nodes.Subscript)):
            if isinstance(head, nodes.Attribute):
                head = head.expr
            else:
                head = head.value if isinstance(head, nodes.Subscript) else head.func
        if isinstance(head, nodes.Name) and head.root() is module and _unbound(head):
            return True
        if _at_top(call) and loops.rejected_argument(call) is not None:
            return True  # a TypeError: ``AFADDataset(root, transforms=t)`` for a class taking ``transform``
    return False


def _at_top(call: nodes.Call) -> bool:
    """``call`` is in a statement of the module's top level or of its ``if __name__ == "__main__":``
    block: it runs whenever the script does (not in a branch, a loop or a function)."""
    statement = call.statement()
    parent = statement.parent
    if isinstance(parent, nodes.Module):
        return True
    return is_main_guard(parent) and statement in parent.body and isinstance(parent.parent, nodes.Module)


def _binds_unseen(module: nodes.Module) -> bool:
    if any(infer.star_import(node) for node in module.nodes_of_class(nodes.ImportFrom)):
        return True
    if "__getattr__" in module.locals:
        return True
    return any(
        isinstance(c.func, nodes.Name) and c.func.name in ("exec", "globals", "eval")
        for c in module.nodes_of_class(nodes.Call)
    )


def _unbound(name: nodes.Name) -> bool:
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return False
    return not bindings and not hasattr(builtins, name.name) and name.name not in ("__file__", "__name__")


def repeats_training(calls: List[nodes.Call]) -> bool:
    """The run's training repeats: a framework fits (its own loop), or a backward runs in a loop, in
    its own function or at a call of that function the run makes in a loop (up to ``HELPER_DEPTH``
    calls up).  One forward, backward and optimizer step on a few rows (a profiler's or
    ``torch.utils.bottleneck``'s demonstration) shows an API; it trains nothing."""
    if _fits(calls):
        return True
    return any(
        _repeated(call, calls, HELPER_DEPTH) for call in calls if infer.method_name(call) in TRAINING_METHODS
    )


def _repeated(call: nodes.Call, calls: List[nodes.Call], depth: int) -> bool:
    if loops.enclosing_loops(call):
        return True
    func = loops.enclosing_function(call)
    if func is None or depth <= 0:
        return False
    return any(_callee_body(site) is func and _repeated(site, calls, depth - 1) for site in calls if site is not call)


def _fits(calls: List[nodes.Call]) -> bool:
    """A call of the run trains in a loop of its own: a trainer object's ``fit``/``train()``, or a
    function of another module of the project whose body runs the steps (``trains_in_project``)."""
    for call in calls:
        if infer.call_name(call) in TRAINING_CALLS and infer.dotted_name(call.func) is None:
            if loops.local_helper(call) is None and frameworks.fits_torch(call) and not frameworks.smoke_test_fit(call):
                return True  # a trainer object's fit (not the file's own ``def fit``, nor a ``fast_dev_run`` check)
        if infer.method_name(call) == "train" and not call.args and not call.keywords:
            if not _module_receiver(call.func.expr):  # type: ignore[union-attr]
                return True
        if trains_in_project(call):
            return True
    return False


#: How many levels of the project's functions ``trains_in_project`` reads below the call.
PROJECT_TRAINING_DEPTH = 2

_TRAINS_IN_PROJECT: "Dict[int, bool]" = memo.per_file()


def trains_in_project(call: nodes.Call, depth: int = PROJECT_TRAINING_DEPTH) -> bool:
    """``call`` runs a function of another module of the project (``loops.project_callee``:
    ``solver.train(n)``, ``Trainer(cfg).run()``) whose body, or a function of the project it calls,
    both runs a backward and steps an optimizer: the training loop of a thin entry script."""
    func, _ = loops.project_callee(call)
    if func is None:
        return False
    key = id(func)
    if key not in _TRAINS_IN_PROJECT:
        _TRAINS_IN_PROJECT[key] = False  # a recursive project call reads as not training
        inner = loops.calls_in(list(func.body), depth, callee=loops.local_helper, expanded={key}, as_run=True)
        _TRAINS_IN_PROJECT[key] = any(infer.method_name(c) in TRAINING_METHODS for c in inner) and any(
            _steps_optimizer(c) for c in inner
        )
    return _TRAINS_IN_PROJECT[key]


def _module_receiver(expr: nodes.NodeNG) -> bool:
    """``expr`` is a module: an instance of ``nn.Module``, what a module's self-returning method gives
    (``net.cuda()``, ``models.SELF_RETURNING_METHODS``: a tensor has no ``train()`` to call on it, a trainer
    object is not moved to a device), or built from classes that define a ``forward`` (a model whose ``nn``
    comes from a star import of a module that is not read)."""
    if infer.is_instance_of(expr, MODULE_BASES):
        return True
    if isinstance(expr, nodes.Call) and infer.method_name(expr) in models.SELF_RETURNING_METHODS:
        return True  # ``net.cuda().train()``: a mode switch
    classes = models.model_classes(expr)
    return bool(classes) and all(_defines_forward(cls) for cls in classes)


def _defines_forward(cls: nodes.ClassDef) -> bool:
    if infer.own_method(cls, "forward") is not None:
        return True
    try:
        return any(infer.own_method(base, "forward") is not None for base in cls.ancestors())
    except (AstroidError, RecursionError):
        return False


#: Library functions that step the optimizer they are handed (resolved through the file's imports).
OPTIMIZER_STEP_FUNCTIONS = frozenset({"torch_xla.core.xla_model.optimizer_step"})
#: Backwards that write gradients into a distributed-autograd context, not ``.grad``: only a
#: ``DistributedOptimizer``'s ``step(context_id)`` (often on another worker) applies them.
CONTEXT_BACKWARDS = frozenset({"torch.distributed.autograd.backward"})
#: Frameworks whose engine object steps its optimizer itself (``engine.step()`` after ``deepspeed.initialize``).
STEPPING_ENGINES = frozenset({"deepspeed"})


def updates_parameters(calls: List[nodes.Call]) -> bool:
    """The run changes parameters: a framework fits (``trains``), it steps an optimizer
    (``gradients.stepped_optimizer``: ``optimizer.step()``, ``scaler.step(opt)``), a library function
    or a framework engine steps one (``xm.optimizer_step(opt)``, DeepSpeed's ``engine.step()``), it runs a
    distributed-autograd backward (``CONTEXT_BACKWARDS``, for a remote optimizer to apply), or, in
    a function it runs, it writes a gradient into a tensor in place (``p -= lr * p.grad``,
    ``p.data.add_(p.grad, alpha=-lr)``, ``p.data = p.data - lr * p.grad``).  A scheduler's or an
    environment's ``step()`` updates nothing."""
    if _fits(calls):
        return True
    scopes: Dict[int, nodes.NodeNG] = {}
    for call in calls:
        if _steps_optimizer(call):
            return True
        name = infer.call_name(call) or ""
        if name.endswith("_") and any(_reads_grad(arg) for arg in call.args):
            return True
        scopes.setdefault(id(call.scope()), call.scope())
    for scope in scopes.values():
        for node in scope.nodes_of_class((nodes.AugAssign, nodes.Assign)):
            if isinstance(node, nodes.Assign) and not any(isinstance(t, nodes.AssignAttr) for t in node.targets):
                continue  # a plain name bound to a value computed from a gradient (a norm for a log)
            if _reads_grad(node.value):
                return True
    return False


def _steps_optimizer(call: nodes.Call) -> bool:
    if gradients.stepped_optimizer(call) is not None:
        return True
    if isinstance(call.func, nodes.Attribute) and call.func.attrname == "step":
        return frameworks.framework_of(call.func.expr) in STEPPING_ENGINES
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return False
    dotted = infer.dotted_name(call.func)
    return dotted in OPTIMIZER_STEP_FUNCTIONS or is_context_backward(call)


def is_context_backward(call: nodes.Call) -> bool:
    """``dist_autograd.backward(context_id, [loss])``: gradients for a distributed optimizer (``CONTEXT_BACKWARDS``)."""
    if infer.method_name(call) != "backward":
        return False
    return (infer.qname(call.func) or infer.dotted_name(call.func)) in CONTEXT_BACKWARDS


#: torch's numerical gradient checks, as (module, function) import paths: no stub defines them, so
#: they are matched on the dotted path the file's imports give, like ``SPAWN_FUNCTIONS``.
GRADIENT_CHECKS = frozenset(
    {("torch.autograd", "gradcheck"), ("torch.autograd", "gradgradcheck"), ("torch.autograd.gradcheck", "gradcheck"),
     ("torch.autograd.gradcheck", "gradgradcheck")}
)


def checks_gradients(calls: List[nodes.Call]) -> bool:
    """The run compares gradients numerically (``torch.autograd.gradcheck``): a test of an op."""
    names = {name for _, name in GRADIENT_CHECKS}
    for call in calls:
        if isinstance(call.func, (nodes.Name, nodes.Attribute)) and infer.call_name(call) in names:
            if tuple((infer.dotted_name(call.func) or "").rsplit(".", 1)) in GRADIENT_CHECKS:
                return True
    return False


def _reads_grad(node: nodes.NodeNG) -> bool:
    return any(attribute.attrname == "grad" for attribute in node.nodes_of_class(nodes.Attribute))


#: Libraries whose functions and classes read data: files, datasets, environments (resolved through the imports).
DATA_LIBRARIES = (
    "torch.utils.data.", "torchvision.datasets.", "torchaudio.datasets.", "torchtext.", "datasets.", "pandas.",
    "h5py.", "PIL.", "cv2.", "imageio.", "soundfile.", "librosa.", "scipy.io.", "sklearn.datasets.", "gym.",
    "gymnasium.", "json.", "pickle.", "csv.", "glob.", "tarfile.", "zipfile.", "urllib.", "requests.",
    "numpy.load", "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromfile", "numpy.memmap", "os.listdir",
    "os.scandir", "os.walk",
)
#: Base classes of the datasets a run may build.
DATASET_BASES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.IterableDataset"})
#: Iterables of a loop that only counts repetitions.
COUNTING_ITERABLES = frozenset({"range", "itertools.count", "tqdm.trange", "tqdm.auto.trange"})


def library_self_test(module: nodes.Module, calls: List[nodes.Call]) -> bool:
    """The file is a library with a smoke or memory test, not a run: a module of a library
    (``library_module``: imported by another module of the project, or in a package), whose
    ``__main__`` block trains on made-up tensors only (``torch.randn`` inputs): no call of the run
    reads data (``reads_data``) or hands the training to another module of the project
    (``trains_in_project``: ``CityDM(cfg).train()``, whose data that module reads)."""
    return library_module(module) and not any(reads_data(call) or trains_in_project(call) for call in calls)


def reads_data(call: nodes.Call) -> bool:
    """``call`` reads data, builds a dataset or loader, or makes an environment: a function of a
    data library (``DATA_LIBRARIES``), ``open``, a dataset class, or a value that a training loop
    iterates or that is handed to a framework's training (``loader_use.uses_of``: a loader built by a
    helper of another module, ``AudioDataLoader(...)``)."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return False
    dotted = infer.dotted_name(call.func) or infer.callee_qname(call) or ""
    if any(dotted.startswith(prefix) for prefix in DATA_LIBRARIES):
        return True
    if isinstance(call.func, nodes.Name) and infer.call_name(call) == "open":
        return True
    klass = infer.safe_infer(call.func)
    if isinstance(klass, nodes.ClassDef) and infer.class_is_subclass_of(klass, DATASET_BASES):
        return True
    return _feeds_training(call)


def _feeds_training(call: nodes.Call) -> bool:
    """The value ``call`` makes is iterated by a loop that trains, or handed to a framework's ``fit``
    or to another module's function together with an optimizer."""
    from . import loader_use  # loader_use reads this module's launchers when it is imported

    name = infer.call_name(call)
    qname = infer.callee_qname(call) or infer.dotted_name(call.func) or ""  # type: ignore[arg-type]
    if name in loops.ITERATION_WRAPPERS or qname in COUNTING_ITERABLES or qname.startswith(("builtins.", "torch.")):
        return False  # ``range(n)``, ``enumerate(...)`` (its argument is judged itself), a torch tensor
    uses = loader_use.uses_of(call, through_prepare=True)
    return bool(uses.training_loops) or uses.handed_to_training


#: Clocks a benchmark reads around the code it times (resolved through the imports).
CLOCKS = frozenset(
    {"time.time", "time.time_ns", "time.perf_counter", "time.perf_counter_ns", "time.monotonic", "time.monotonic_ns",
     "time.process_time", "timeit.default_timer"}
)
#: Probes of the GPU's memory use (``pynvml`` resolved through the imports).
MEMORY_PROBES = frozenset(
    {"torch.cuda.memory_allocated", "torch.cuda.max_memory_allocated", "torch.cuda.memory_reserved",
     "torch.cuda.max_memory_reserved", "torch.cuda.reset_peak_memory_stats", "pynvml.nvmlDeviceGetMemoryInfo"}
)
#: CUDA events time the code between them when built with ``enable_timing=True``.
TIMING_EVENTS = frozenset({"torch.cuda.Event"})

_BENCHMARKS: "Dict[nodes.Module, Dict[int, bool]]" = memo.per_file()


def made_up_benchmark(scope: nodes.NodeNG) -> bool:
    """``scope`` (a function, or a module's own statements) measures training steps on made-up
    tensors, a benchmark or a self-test rather than a training run: it reads a clock or a memory
    probe (``CLOCKS``, ``MEMORY_PROBES``, a timing ``torch.cuda.Event``); it trains (a backward) by
    repeating a loop that only counts (``range``) or once, on a forward whose every input is a tensor
    built in place (``torch.ones(...)``, ``torch.randn(...)``: ``evaluation.dummy_input``); nothing it
    runs reads data (``reads_data``); and nothing reads what it trains: the forward's outputs (and
    the loss made from them) only reach the backward, and the trained module is not read after the
    last backward (not evaluated, saved or returned).  A regression on generated data whose model
    or loss is then looked at is a training run."""
    root = scope.root()
    table = _BENCHMARKS.setdefault(root, {})
    if id(scope) not in table:
        table[id(scope)] = _made_up_benchmark(scope)
    return table[id(scope)]


def benchmark_only(calls: List[nodes.Call]) -> bool:
    """Every backward of the run sits in a benchmark on made-up tensors (``made_up_benchmark``) and
    no framework fits: the run measures training steps, it does not train."""
    backwards = [call for call in calls if infer.method_name(call) in TRAINING_METHODS]
    if not backwards or _fits(calls):
        return False
    return all(made_up_benchmark(loops.enclosing_function(call) or call.root()) for call in backwards)


#: Base class of a custom autograd op, whose ``apply`` computes from its arguments.
AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function"})
#: torch functions that read a file: their tensors are data.
TORCH_READS = frozenset({"torch.load"})
#: How many values the trace of a loss's inputs reads before it gives up (the answer is then "not made up").
MAX_TRACED = 200


def made_up_demo(calls: List[nodes.Call]) -> bool:
    """The run is a demo on made-up data: it trains (a backward, no framework's fit), every backward
    is repeated by loops that only count (``range``) or none, and every input its loss is computed
    from is made up in the file (``made_up_inputs``: ``torch.randn(N, D_in)``, a synthetic generator
    such as ``sklearn.datasets.make_blobs``, a literal such as ``torch.FloatTensor([[0, 1], [1, 0]])``).
    What it does with the model afterwards (prints it, evaluates it on more made-up data, saves it)
    does not make the data real: the run is a demonstration of the made-up task."""
    backwards = [call for call in calls if infer.method_name(call) in TRAINING_METHODS]
    if not backwards or _fits(calls):
        return False
    for call in backwards:
        if any(not counting_loop(loop) and not _made_up_loop(loop) for loop in loops.enclosing_loops(call)):
            return False  # a loop over batches, a parameter, a list: data
        if not isinstance(call.func, nodes.Attribute) or not made_up_inputs(call.func.expr):
            return False
    return True


def made_up_inputs(expr: nodes.NodeNG, names: Optional[Set[str]] = None,
                   entered: Optional[nodes.FunctionDef] = None, found_one: bool = True) -> bool:
    """Every input ``expr`` (a loss) is computed from is made up in the file, and there is one: a
    tensor a factory makes (``evaluation.dummy_input``'s: ``torch.randn``, ``torch.ones``...), a synthetic
    generator or NumPy draw, a literal (``_synthetic``), a constant that is no keyword's option.  Names
    are followed through their assignments (a call unpacked into several included); modules, torch
    functions, tensor methods, custom autograd ops, ``PURE_BUILTINS`` and functions of the project that
    read no data (``_computes_only``) compute from their arguments; a counter of a counting loop is no data.
    A parameter, a loop over anything else, a file's tensor (``torch.load``, ``reads_data``) or any other
    call (``env.step(action)``, ``next(batches)``, a helper) may bring data: False.  A call of such a
    function of the file whose every returned value is made up (``get_batch()`` returning
    ``torch.randn(32, 1)`` and a function of it) makes its data up; the parameters of the function
    ``entered`` (the one whose returns are traced) are its caller's arguments, traced there.  ``names``
    collects the texts of the names and modules read on the way (what is trained).  With ``found_one``
    False, a value computed from ``entered``'s parameters alone passes too (nothing made up is needed)."""
    seen: Set[int] = set()
    pending: List[nodes.NodeNG] = [expr]
    made_up = False
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if len(seen) > MAX_TRACED:
            return False
        if evaluation.factory_call(node) or _synthetic(node):
            made_up = True  # ``torch.randn(N, D_in)``, ``make_blobs(...)``, ``torch.tensor([[0, 1]])``
            continue
        if isinstance(node, nodes.Const) and not isinstance(node.parent, nodes.Keyword):
            made_up = True  # data written in the file: ``list(map(ord, "hello"))``, ``x * 2 + 1``
            continue
        if isinstance(node, nodes.Call) and _makes_up(node):
            made_up = True  # ``x, y = get_batch()``, its every return computed from ``torch.randn``
            pending.extend(list(node.args) + [keyword.value for keyword in node.keywords or ()])
            continue
        if entered is not None and _parameter_of(node, entered):
            continue  # the caller's argument, traced at the call
        inputs = _inputs_of(node, names)
        if inputs is None:
            return False
        pending.extend(inputs)
    return made_up or not found_one


#: Functions that generate a synthetic dataset (resolved through the imports; sklearn is not read).
SYNTHETIC_DATA = ("sklearn.datasets.make_",)
#: NumPy's draws of made-up arrays from its global generator.
NUMPY_DRAWS = frozenset(
    "numpy.random." + name for name in ("rand", "randn", "randint", "random", "normal", "uniform", "choice")
)
#: NumPy's constructors of arrays of a given shape or range (``np.zeros((batch, 2))``): values written in the
#: file (``np.array(x)`` converts what it is given: not one of them).
NUMPY_FACTORIES = device.NUMPY_ARRAYS - {"numpy.array", "numpy.asarray"}
#: Functions and classes that split, wrap or batch the arrays and datasets they are given, reading nothing else
#: (resolved through the imports; sklearn is not read): made-up tensors stay made up through them.
WRAPPERS_OF_ARGUMENTS = frozenset(
    {"sklearn.model_selection.train_test_split"}
    | {"torch.utils.data." + name
       for name in ("DataLoader", "TensorDataset", "random_split", "Subset", "ConcatDataset")}
)
#: Builtins whose result is computed from their arguments only (``list(map(ord, "hello"))``).
PURE_BUILTINS = frozenset({"list", "tuple", "map", "ord", "chr", "len", "range", "zip", "sorted", "float", "int"})


def _pure_builtin(node: nodes.NodeNG) -> bool:
    """``node`` names one of ``PURE_BUILTINS`` (resolved: not a rebinding of the name)."""
    return isinstance(node, nodes.Name) and node.name in PURE_BUILTINS and infer.qname(node) == "builtins." + node.name


def _synthetic(node: nodes.NodeNG) -> bool:
    """``node`` makes data up: a synthetic generator (``make_blobs(...)``), a NumPy draw or array of a shape, or a
    tensor built from a literal of constants (``torch.FloatTensor([[0, 0], [0, 1]])``)."""
    if not isinstance(node, nodes.Call) or not isinstance(node.func, (nodes.Name, nodes.Attribute)):
        return False
    dotted = infer.dotted_name(node.func) or infer.callee_qname(node) or ""
    if dotted.startswith(SYNTHETIC_DATA) or dotted in NUMPY_DRAWS or dotted in NUMPY_FACTORIES:
        return True
    data = node.args[0] if len(node.args) == 1 else None
    return (
        dotted.startswith("torch.")
        and isinstance(data, (nodes.List, nodes.Tuple))
        and static_values.literal_values(data) is not None
    )


def _inputs_of(node: nodes.NodeNG, names: Optional[Set[str]]) -> Optional[List[nodes.NodeNG]]:
    """What ``node``'s value is computed from, or None when it may bring data."""
    if isinstance(node, nodes.Const):
        return []
    if isinstance(node, nodes.Name):
        if names is not None:
            names.add(node.name)
        values = dataflow.assigned_values(node, unpack=True)
        if values:
            stores = dataflow.item_stores(node)  # ``images[i] = torch.Tensor(g)`` into ``torch.zeros(...)``
            return None if stores is None else list(values) + stores
        if _pure_builtin(node):
            return []  # ``map(ord, text)``: the function handed on
        unpacked = dataflow.unpacked_from_call(node)
        if unpacked is not None:
            return [unpacked[0]]  # ``x, y = make_blobs(...)``: computed from what the call is
        if _counter(node):
            return []
        iterable = dataflow.loop_iterable(node)
        if iterable is not None and isinstance(iterable.parent, nodes.Comprehension):
            return [iterable]  # ``[encode(i) for i in range(limit)]``: an element of what it walks
        generated = _generated(node)
        if generated is not None:
            return generated
        return infer.parameter_arguments(node)  # what every call of the file passes: ``train(x, y)``
    if isinstance(node, nodes.Call):
        arguments = list(node.args) + [keyword.value for keyword in node.keywords or ()]
        if _wraps_arguments(node):
            return arguments  # ``DataLoader(TensorDataset(x, y), batch_size=16)``, ``train_test_split(x, y)``
        if reads_data(node) or (infer.dotted_name(node.func) or "") in TORCH_READS:
            return None
        func = node.func
        if _pure_builtin(func):
            return arguments
        helper = loops.local_helper(node)
        if helper is not None and _returns_from_arguments(helper):
            return arguments  # ``label_map(y, [0, 1], 0)``: a function of the file that reads no data
        if (infer.dotted_name(func) or "").startswith("numpy."):
            return arguments  # ``np.linalg.norm(points, axis=1)`` (NumPy's readers are ``DATA_LIBRARIES``)
        if _computes_from_arguments(func):
            if names is not None and infer.is_instance_of(func, MODULE_BASES):
                names.add(dataflow.binding_text(func))  # the module trained
            if isinstance(func, nodes.Attribute) and not isinstance(infer.safe_infer(func.expr), nodes.Module):
                return [func.expr] + arguments  # a tensor method resolved in torch: ``net(xs).sum()``
            return arguments
        if isinstance(func, nodes.Attribute):
            if infer.is_instance_of(func.expr, MODULE_BASES):
                if names is not None:
                    names.add(dataflow.binding_text(func.expr))
                return arguments  # ``model.forward(x)``
            return [func.expr] + arguments  # a tensor method: ``x.mm(w1).clamp(min=0)``
        return None
    if isinstance(node, nodes.Attribute) and (infer.dotted_name(node) or "").startswith(("numpy.", "torch.")):
        return []  # ``np.int64``, ``np.pi``, ``dtype=torch.float32``: a library's constant, no data
    if isinstance(node, (nodes.BinOp, nodes.UnaryOp, nodes.Subscript, nodes.Tuple, nodes.List, nodes.Attribute,
                         nodes.Starred, nodes.Slice, nodes.Compare)):
        return list(node.get_children())
    if isinstance(node, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp)):
        return [node.elt] + [part for g in node.generators for part in [g.iter] + list(g.ifs)]
    return None


#: How many functions deep ``_computes_only`` reads (``get_data`` calling ``encode`` and ``split``).
COMPUTE_DEPTH = 3


def _computes_only(func: nodes.FunctionDef, depth: int = COMPUTE_DEPTH) -> bool:
    """A function of the file or of a project module (not a method: an object keeps state) that
    computes its result from its arguments: it reads no data (``reads_data``, ``torch.load``), binds
    no global, and the functions of its module it calls (up to ``COMPUTE_DEPTH``) do the same
    (``get_data(input_size)`` building FizzBuzz pairs from ``range`` and arithmetic)."""
    if next(func.nodes_of_class((nodes.Global, nodes.Nonlocal)), None) is not None:
        return False
    for call in func.nodes_of_class(nodes.Call):
        if not _wraps_arguments(call) and (reads_data(call) or (infer.dotted_name(call.func) or "") in TORCH_READS):
            return False
        inner = loops.local_helper(call)
        if inner is not None and inner is not func:
            if depth <= 1 or not isinstance(inner.parent, nodes.Module) or not _computes_only(inner, depth - 1):
                return False
    return True


def _wraps_arguments(call: nodes.Call) -> bool:
    """``call`` splits, wraps or batches what it is given (``WRAPPERS_OF_ARGUMENTS``)."""
    return isinstance(call.func, (nodes.Name, nodes.Attribute)) and (
        infer.dotted_name(call.func) or infer.callee_qname(call) or ""
    ) in WRAPPERS_OF_ARGUMENTS


def _computes_from_arguments(func: nodes.NodeNG) -> bool:
    """A module instance (``model``, ``loss_fn``), a torch function (``F.mse_loss``) or a custom
    autograd op's ``apply``."""
    if not isinstance(func, (nodes.Name, nodes.Attribute)):
        return False
    if infer.is_instance_of(func, MODULE_BASES):
        return True
    if (infer.dotted_name(func) or infer.qname(func) or "").startswith("torch."):
        return True
    value = infer.safe_infer(func)
    klass = value.parent.frame() if isinstance(value, (nodes.FunctionDef,)) and value.parent else None
    if klass is None and hasattr(value, "_proxied"):
        method = getattr(value, "_proxied", None)
        klass = method.parent.frame() if isinstance(method, nodes.FunctionDef) and method.parent else None
    return isinstance(klass, nodes.ClassDef) and infer.class_is_subclass_of(klass, AUTOGRAD_FUNCTIONS)


def _makes_up(call: nodes.Call) -> bool:
    """``call`` runs a function of the file's top level that returns only made-up values
    (``_made_up_results``)."""
    func = loops.local_helper(call)
    return func is not None and not func.is_generator() and _made_up_results(func)


def _produced(func: nodes.FunctionDef) -> List[Optional[nodes.NodeNG]]:
    """What ``func`` hands its caller: the values it yields (a generator) or returns (a bare ``return``
    as a None)."""
    if func.is_generator():
        return [y.value for y in func.nodes_of_class(nodes.Yield) if y.scope() is func]
    return dataflow.returned_values(func, bare=True)


def _made_up_results(func: nodes.FunctionDef) -> bool:
    """``func``, a function of the file's top level, reads no data (``_computes_only``) and every value
    it returns or yields is made up (``made_up_inputs``, its parameters being its caller's arguments)."""
    return _traced_results(func, found_one=True)


def _returns_from_arguments(func: nodes.FunctionDef) -> bool:
    """``func``, a function (no generator) of the file's top level or of a project module, reads no data
    (``_computes_only``) and every value it returns is computed from its parameters and values made up in
    it: ``label_map(y, [0, 1], 0)``.  A function whose return comes from a call nothing resolves
    (``sns.load_dataset("iris")``) may read data."""
    return not func.is_generator() and _traced_results(func, found_one=False)


def _traced_results(func: nodes.FunctionDef, found_one: bool) -> bool:
    """What ``func`` hands back, traced by ``made_up_inputs`` (``found_one`` passed on) in a function of a
    module's top level that reads no data; once per function and question."""
    if not isinstance(func.parent, nodes.Module):
        return False
    key = (id(func), found_one)
    if key not in _TRACED_RESULTS:
        _TRACED_RESULTS[key] = False  # a function returning its own call is traced to nothing
        values = _produced(func)
        _TRACED_RESULTS[key] = (
            (bool(values) or not found_one) and all(v is not None for v in values) and _computes_only(func)
            and all(made_up_inputs(v, entered=func, found_one=found_one) for v in values)
        )
    return _TRACED_RESULTS[key]


_TRACED_RESULTS: "Dict[Tuple[int, bool], bool]" = memo.per_file()


def _parameter_of(node: nodes.NodeNG, func: nodes.FunctionDef) -> bool:
    """``node`` is a name bound only to a parameter of ``func``."""
    if not isinstance(node, nodes.Name):
        return False
    binding = dataflow.sole_binding(node)
    return isinstance(binding, nodes.AssignName) and isinstance(binding.parent, nodes.Arguments) and (
        binding.parent.parent is func
    )


def _made_up_loop(loop: nodes.NodeNG) -> bool:
    """A ``for`` whose iterables (through ``zip``, ``enumerate``...) are each a count (``range(n)``), a
    generator function of the file that makes its data up (``_made_up_generator``) or a value made up in
    the file (a tensor of ``torch.randn`` rows, a ``DataLoader`` over a ``TensorDataset`` of them), at least
    one of them: ``for i, (x, y) in zip(range(10000), batches()):`` over uniform random points labelled by
    their norm."""
    return _only_made_up(_loop_sources(loop))


def _only_made_up(sources: "List[Union[str, nodes.NodeNG, None]]") -> bool:
    return any(isinstance(s, nodes.NodeNG) for s in sources) and all(
        isinstance(s, nodes.NodeNG) or s == "count" for s in sources
    )


#: Loops whose sources are being traced (a made-up iterable is traced through its own loop's targets).
_TRACING: Set[int] = set()


def _loop_sources(loop: nodes.NodeNG, made_up: bool = True) -> "List[Union[str, nodes.NodeNG, None]]":
    """What a ``for`` iterates, each iterable of a ``zip`` apart, through the iteration wrappers:
    ``"count"`` for a ``range`` or a literal of constants, the generator function of
    ``_made_up_generator``, the iterable itself when it is made up in the file (``made_up_inputs``, only
    traced with ``made_up``), or None for anything else."""
    if not isinstance(loop, nodes.For) or id(loop) in _TRACING:
        return []
    _TRACING.add(id(loop))
    try:
        return _iterables_of(loop, made_up)
    finally:
        _TRACING.discard(id(loop))


def _iterables_of(loop: nodes.For, made_up: bool) -> "List[Union[str, nodes.NodeNG, None]]":
    pending, found = [loop.iter], []  # type: List[nodes.NodeNG], List[Union[str, nodes.NodeNG, None]]
    while pending:
        iterable = pending.pop()
        if isinstance(iterable, nodes.Call) and infer.call_name(iterable) in loops.ITERATION_WRAPPERS:
            pending.extend(iterable.args if infer.call_name(iterable) == "zip" else iterable.args[:1])
            continue
        if isinstance(iterable, (nodes.Tuple, nodes.List, nodes.Set)):
            constants = all(isinstance(element, nodes.Const) for element in iterable.elts)
            found.append("count" if constants else None)  # settings tried in turn: ``for bins in (0, 2, 10):``
            continue
        if isinstance(iterable, nodes.Call):
            name = infer.dotted_name(iterable.func) or infer.call_name(iterable) or ""
            if name in COUNTING_ITERABLES:
                found.append("count")
                continue
            generator = _made_up_generator(iterable)
            if generator is not None:
                found.append(generator)
                continue
        found.append(iterable if made_up and made_up_inputs(iterable) else None)
    return found


def _made_up_generator(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The generator function of the file's top level that ``call`` runs with constant arguments, when its
    every yield is made up (``_made_up_results``), or None."""
    func = loops.local_helper(call)
    if func is None or not func.is_generator() or not _made_up_results(func):
        return None
    constants = all(isinstance(a, nodes.Const) for a in list(call.args) + [k.value for k in call.keywords or ()])
    return func if constants else None


def _generated(name: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """The values yielded to ``name``, a target of a ``for`` over made-up generators of the file
    (``_made_up_loop``), or None."""
    for loop in loops.enclosing_loops(name):
        if not isinstance(loop, nodes.For) or not any(
            isinstance(t, nodes.AssignName) and t.name == name.name
            for t in loop.target.nodes_of_class(nodes.AssignName)
        ):
            continue
        sources = _loop_sources(loop)
        if not _only_made_up(sources):
            return None
        return [v for g in sources if isinstance(g, nodes.FunctionDef) for v in _produced(g) if v is not None] + [
            g for g in sources if isinstance(g, nodes.NodeNG) and not isinstance(g, nodes.FunctionDef)
        ]
    return None


def _counter(name: nodes.Name) -> bool:
    """``name`` is the target of a loop that only counts (``for t in range(500)``)."""
    for loop in loops.enclosing_loops(name):
        if isinstance(loop, nodes.For) and isinstance(loop.target, nodes.AssignName) and loop.target.name == name.name:
            return counting_loop(loop)
    return False


def _own(scope: nodes.NodeNG, klass: type) -> List[nodes.NodeNG]:
    """Nodes of ``klass`` in ``scope``'s own code (nested functions and classes left out)."""
    skip = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)
    if isinstance(scope, nodes.Module):
        body = [statement for statement in scope.body if not isinstance(statement, skip)]
    else:
        body = list(scope.body)
    found: List[nodes.NodeNG] = []
    for statement in body:
        if isinstance(statement, klass):
            found.append(statement)
        found.extend(statement.nodes_of_class(klass, skip_klass=skip))
    return found


def _made_up_benchmark(scope: nodes.NodeNG) -> bool:
    own_calls: List[nodes.Call] = _own(scope, nodes.Call)  # type: ignore[assignment]
    backwards = [call for call in own_calls if infer.method_name(call) in TRAINING_METHODS]
    if not backwards or not any(measures(call) for call in own_calls):
        return False
    if any(not counting_loop(loop) for call in backwards for loop in loops.enclosing_loops(call)):
        return False  # a loop over batches, a parameter, a list: data the caller chose
    forwards = [call for call in own_calls if evaluation.dummy_input(call)]
    if not forwards:
        return False
    statements = [s for s in scope.body if not isinstance(s, (nodes.FunctionDef, nodes.ClassDef))]
    if any(reads_data(call) for call in loops.calls_in(statements)):
        return False
    return not _results_read(scope, forwards, backwards)


def measures(call: nodes.Call) -> bool:
    """``call`` reads a clock or a memory probe, or builds a timing CUDA event: code around it is timed."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return False
    name = infer.dotted_name(call.func) or infer.callee_qname(call) or ""
    if name in CLOCKS or name in MEMORY_PROBES:
        return True
    if name in TIMING_EVENTS or infer.callee_qname(call) in TIMING_EVENTS:
        timing = infer.argument(call, "enable_timing", 0)
        return isinstance(timing, nodes.Const) and timing.value is True
    return False


def counting_loop(loop: nodes.NodeNG) -> bool:
    """A ``while`` loop, or a ``for`` whose every iterable (``_loop_sources``: through ``tqdm``,
    ``enumerate``, each one of a ``zip``) is a ``range(n)`` or a literal of constants (``for bins in
    (0, 2, 10):``, settings tried in turn)."""
    if not isinstance(loop, nodes.For):
        return isinstance(loop, nodes.While)
    sources = _loop_sources(loop, made_up=False)
    return bool(sources) and all(source == "count" for source in sources)


def _results_read(scope: nodes.NodeNG, forwards: List[nodes.Call], backwards: List[nodes.Call]) -> bool:
    """Something other than the backward reads what the made-up forwards compute (a printed or
    accumulated loss, a returned output), or the trained module is read after the last backward."""
    outputs: Set[str] = set()
    assigns: List[nodes.Assign] = _own(scope, nodes.Assign)  # type: ignore[assignment]
    changed = True
    while changed:
        changed = False
        for assign in assigns:
            computed = any(call in forwards for call in assign.value.nodes_of_class(nodes.Call)) or any(
                name.name in outputs for name in assign.value.nodes_of_class(nodes.Name)
            )
            targets = {name.name for target in assign.targets for name in target.nodes_of_class(nodes.AssignName)}
            if computed and not targets <= outputs:
                outputs |= targets
                changed = True
    differentiated = [call.func.expr for call in backwards if isinstance(call.func, nodes.Attribute)]
    for name in _own(scope, nodes.Name):
        if name.name not in outputs:
            continue
        statement = name.statement()
        if isinstance(statement, nodes.Assign) and statement in assigns and loops.inside(name, statement.value):
            targets = {n.name for target in statement.targets for n in target.nodes_of_class(nodes.AssignName)}
            if targets <= outputs:
                continue  # an output computed from an output: the loss
        if any(name is receiver or loops.inside(name, receiver) for receiver in differentiated):
            continue  # ``loss.backward()``, ``scaler.scale(loss).backward()``
        return True
    return reads_trained(scope, {dataflow.binding_text(call.func) for call in forwards}, backwards)


def reads_trained(scope: nodes.NodeNG, trained: Set[str], backwards: List[nodes.Call]) -> bool:
    """``scope`` reads what it trains once training is over: a value named in ``trained`` (receiver
    texts: the trained module, a weight tensor) read after the last of ``backwards`` and after the loop
    that repeats it (evaluated, printed, saved or returned), and not only used to train."""
    last = max(_training_end(call) for call in backwards)
    for node in _own(scope, (nodes.Name, nodes.Attribute)):  # type: ignore[arg-type]
        if node.lineno > last and dataflow.binding_text(node) in trained:
            return True
    return False


def _training_end(backward: nodes.Call) -> int:
    """The last line of the outermost loop of its function that repeats ``backward`` (its own line outside loops)."""
    enclosing = loops.enclosing_loops(backward)
    return enclosing[-1].tolineno if enclosing else backward.lineno


def library_module(module: nodes.Module) -> bool:
    """The file is a module of a library with a ``__main__`` check, not a script: it has a
    ``__main__`` block, and another module of the project imports it (``imported_by_project``) or its
    folder is a package (an ``__init__.py`` beside it)."""
    if not any(is_main_guard(statement) for statement in module.body):
        return False
    if imported_by_project(module):
        return True
    path = getattr(module, "file", None)
    if not path or not str(path).endswith(".py"):
        return False
    return os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(str(path))), "__init__.py"))


def imported_by_project(module: nodes.Module) -> bool:
    """A module of the file's folder or of the folder above imports the file (``from .unet import
    UNet``, ``import library.unet``, ``from networks import lora``; a bare ``import unet`` from its
    own folder).  Only those two folders are read, and only their import lines."""
    path = getattr(module, "file", None)
    if not path or not str(path).endswith(".py"):
        return False
    path = os.path.abspath(str(path))
    folder = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    package = os.path.basename(folder)
    nearby = re.compile(r"^(?:from\s+\.?{0}\b|import\s+{0}\b|from\s+\.\s+import\s+.*\b{0}\b)".format(re.escape(stem)))
    qualified = re.compile(
        r"^(?:from|import)\s+[\w.]*\b{0}\.{1}\b|^from\s+[\w.]*\b{0}\s+import\s+.*\b{1}\b".format(
            re.escape(package), re.escape(stem)
        )
    )
    for other, lines in _import_lines(folder).items():
        if other != path and any(nearby.match(line) or qualified.match(line) for line in lines):
            return True
    parent = os.path.dirname(folder)
    if parent == folder:
        return False
    return any(qualified.match(line) for lines in _import_lines(parent).values() for line in lines)


#: Files of one folder read for their import lines, and how much of each.
MAX_FOLDER_FILES, MAX_FILE_BYTES = 400, 200_000


#: Import lines per folder, read once per checked file: a file edited since (an editor's server keeps
#: running) is read again for the next file.
_FOLDER_IMPORTS: "Dict[str, Dict[str, Tuple[str, ...]]]" = memo.per_file()


def _import_lines(folder: str) -> Dict[str, Tuple[str, ...]]:
    """The import lines (stripped) of each Python file directly in ``folder``."""
    if folder not in _FOLDER_IMPORTS:
        _FOLDER_IMPORTS[folder] = _read_import_lines(folder)
    return _FOLDER_IMPORTS[folder]


def _read_import_lines(folder: str) -> Dict[str, Tuple[str, ...]]:
    found: Dict[str, Tuple[str, ...]] = {}
    try:
        names = sorted(os.listdir(folder))[: MAX_FOLDER_FILES * 4]
    except OSError:
        return found
    for name in names:
        if not name.endswith(".py") or len(found) >= MAX_FOLDER_FILES:
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(MAX_FILE_BYTES)
        except OSError:
            continue
        found[path] = tuple(
            line.strip() for line in text.splitlines() if line.lstrip().startswith(("import ", "from "))
        )
    return found
