"""Where a value built by a call (a DataLoader) goes: training loops, evaluation loops, Accelerate.

``uses_of(call)`` follows the value through assignments (names and ``self.attr``, one position of
a tuple assignment), arguments of helper functions of the file (to the parameter's uses; a method
called on a parameter of a ``mp.spawn`` worker is the method of the instance the launch passes),
``return`` (to the function's call sites), ``iter()``/``next()``, and wrappers in a ``for`` header
(``enumerate(loader)``, ``tqdm(loader)``).  A loop that iterates it is a **training loop** when one iteration runs a
backward (``loops.loop_calls``, helpers included).  ``prepare()``/``setup_dataloaders()``
(Accelerate, Lightning Fabric) mark it as handed to a framework that re-shards it.

``epoch_loops(loop)`` gives the loops that run a training loop again (enclosing loops, or loops
around an in-file call of its function); ``rank_zero_only(node)`` tells whether a node runs only
on the main process (``if rank == 0:``, ``if dist.get_rank() == 0``, ``if is_main_process():``),
which is read from names: the rank is an integer with no binding to resolve.

Samplers: ``plain_sampler`` names a resolved torch sampler that is not distributed,
``may_be_iterable_dataset`` tells datasets that shard themselves, and ``may_set_epoch`` /
``set_before_epoch_loop`` decide whether a ``set_epoch`` call can reach a given sampler each epoch.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Set, Tuple

from astroid import nodes
from astroid.exceptions import AstroidError

from ..semantic import dataflow, infer, loops, memo, project
from . import entrypoint, evaluation, frameworks, gradients, grad, training_step
from .torch_names import DATALOADERS

#: Names of the calls that may hand a DataLoader to a framework that replaces its sampler per rank
#: (a cheap filter: ``frameworks`` decides from the receiver what the call is).
PREPARE_CALLS = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders"})


#: Packages whose ``...Trainer`` classes train the model they are handed (resolved through imports).
TRAINER_PACKAGES = frozenset({"transformers", "trl", "lightning", "pytorch_lightning"})

#: The distributed sampler (subclasses count).
DISTRIBUTED_SAMPLERS = frozenset({"torch.utils.data.DistributedSampler"})

#: Base of every sampler; a resolved torch sampler outside DISTRIBUTED_SAMPLERS gives every rank
#: the same indices.
SAMPLER_BASES = frozenset({"torch.utils.data.Sampler"})

#: Datasets that produce their own stream (and must shard themselves by rank).
ITERABLE_DATASETS = frozenset({"torch.utils.data.IterableDataset"})

#: Receiver attributes through which a loader's sampler is reached (``loader.sampler.set_epoch``).
SAMPLER_ATTRIBUTES = frozenset({"sampler", "batch_sampler"})

#: Names of the launchers that start a function with the process index first (``mp.spawn``), a cheap
#: filter before ``entrypoint.launched_function`` resolves the call.
SPAWN_NAMES = frozenset(name for _, name in entrypoint.SPAWN_FUNCTIONS)

#: Method names a step call can have (a cheap filter before ``training_step.is_step_call``).
STEP_METHODS = gradients.BACKWARD_METHODS | {"step"}

#: How many hops (assignments, helper parameters, returns) a value is followed.
MAX_DEPTH = 6

#: Names of main-process checks (``accelerator.is_main_process``, ``is_master()``).
MAIN_PROCESS_NAME = re.compile(
    r"(^|_)(is_)?(main_process|master|main|rank_?zero|local_main_process)(_process)?$", re.IGNORECASE
)

#: Names holding a process rank (``rank``, ``local_rank``, ``args.global_rank``, ``dist.get_rank()``).
RANK_NAME = re.compile(r"rank", re.IGNORECASE)


class Uses:
    """What ``uses_of`` found for one value."""

    def __init__(self) -> None:
        self.training_loops: List[loops.Loop] = []
        self.other_loops: List[loops.Loop] = []
        #: For each training loop, the in-file calls the value was passed through to reach it.
        self.routes: List[Tuple[nodes.Call, ...]] = []
        #: The same for each of ``other_loops``.
        self.other_routes: List[Tuple[nodes.Call, ...]] = []
        self.prepared = False
        #: Handed to a framework's ``fit`` (``trainer.fit(model, loader)``) or to a function imported
        #: from another module together with an optimizer (``train_one_epoch(model, loader, optimizer)``);
        #: only recorded with ``through_prepare``.
        self.handed_to_training = False
        self.bindings: List[nodes.NodeNG] = []  # names / self.attrs the value was bound to
        #: Read with ``next(iter(value))`` where no training step runs per read: a batch to look at.
        self.sampled = False
        #: The loops (of ``training_loops`` and ``other_loops``) whose ``for`` header iterates the value
        #: (``for x in enumerate(value)``), not loops that draw from it with ``next()``.
        self.headers: List[loops.Loop] = []
        #: An iterator of the value is made inside a loop that steps (``batches = iter(loader)`` under the
        #: step loop's ``except StopIteration:``): the value is read in passes of a few steps.
        self.restarted_in_step = False


def uses_of(value: nodes.NodeNG, depth: int = MAX_DEPTH, through_prepare: bool = False) -> Uses:
    """Where ``value`` goes (see the module docstring).  With ``through_prepare`` the value is also
    followed out of ``prepare()`` / ``setup_dataloaders()`` (``model, loader = accelerator.prepare(model,
    loader)``: the prepared loader is the one iterated), out of tuples that a helper returns and its
    call site unpacks (``train_dl, val_dl = get_dataloaders()``), out of another module's call that hands
    it back unpacked (``net, opt, dl = backend.distribute(model=m, training_data=dl)``, see
    ``_wrapped_loader_target``), and into the ``__init__`` of a class
    of the file it is handed to (``Trainer(model, loader)`` keeping ``self.loader``); a framework ``fit`` call
    (``trainer.fit(model, loader)``) or a call of another module that is also handed an optimizer
    (``train_one_epoch(model, loader, optimizer)``) is recorded in ``Uses.handed_to_training``."""
    uses = Uses()
    _flow(value, depth, uses, set(), (), through_prepare)
    return uses


def _flow(
    expr: nodes.NodeNG,
    depth: int,
    uses: Uses,
    seen: Set[Tuple[int, Optional[str]]],
    via: Tuple[nodes.Call, ...],
    deep: bool = False,
    key: Optional[str] = None,
) -> None:
    """Follow ``expr`` to its uses; with ``key``, ``expr`` is a dict that holds the value under that
    constant key (``{"train": loader}``): it is followed as a whole until read as ``expr[key]``."""
    if (id(expr), key) in seen or depth < 0:
        return
    seen.add((id(expr), key))
    child = expr
    parent = expr.parent
    if key is not None and isinstance(parent, nodes.Subscript) and parent.value is expr:
        if isinstance(parent.slice, nodes.Const) and parent.slice.value == key:
            _flow(parent, depth, uses, seen, via, deep)
        return
    # Climb through call arguments (wrappers) while looking for a ``for`` header.
    while parent is not None:
        if key is not None and not isinstance(parent, (nodes.Keyword, nodes.Call)):
            break  # the dict itself is not iterated, prepared or sampled: only passed on
        if isinstance(parent, (nodes.For, nodes.Comprehension)) and child is parent.iter:
            if isinstance(parent, nodes.For):
                _classify(parent, uses, via)
                uses.headers.append(parent)
            return
        if isinstance(parent, nodes.Keyword) or (isinstance(parent, nodes.IfExp) and child is not parent.test):
            child, parent = parent, parent.parent  # ``f(data=ds if deepspeed else loader)``: may be the value
            continue
        if _next_method(parent, child):
            loop = loops.innermost(parent)
            fresh = isinstance(child, nodes.Call) and infer.call_name(child) == "iter"
            if fresh and (loop is None or not training_step.owns_step(loop)):
                uses.sampled = True  # iter(loader).next() once per epoch: a batch to look at
            elif loop is not None:
                _classify(loop, uses, via)
            return
        if isinstance(parent, nodes.Call) and child is not parent.func:
            name = infer.call_name(parent)
            if key is not None and not (
                loops.local_helper(parent) or launched_receiver_method(parent) or (deep and _constructor(parent))
            ):
                return  # a dict handed to a call the file does not define: not followed
            meaning = frameworks.call_meaning(parent) if name in PREPARE_CALLS else None
            if meaning is not None and meaning.reshards_loaders:
                uses.prepared = True
                if deep and child in parent.args:
                    for target in _unpacked_targets(parent, parent.args.index(child), len(parent.args)):
                        _flow_into_target(target, depth - 1, uses, seen, via)
                return
            if deep and name in frameworks.FIT_METHODS and isinstance(parent.func, nodes.Attribute):
                uses.handed_to_training = True
                return
            if name == "next" and isinstance(parent.func, nodes.Name):
                loop = loops.innermost(parent)
                if _fresh_iterator(parent) and (loop is None or not training_step.owns_step(loop)):
                    uses.sampled = True  # next(iter(loader)) once per epoch: a batch to look at
                elif loop is not None:
                    _classify(loop, uses, via)
                return
            if name == "iter" and isinstance(parent.func, nodes.Name):
                loop = loops.innermost(parent)
                if loop is not None and training_step.owns_step(loop):
                    uses.restarted_in_step = True
                _flow(parent, depth, uses, seen, via, deep)
                return
            helper = loops.local_helper(parent) or launched_receiver_method(parent)
            if helper is not None:
                param = _parameter_for(parent, child, helper)
                if param is not None and _yielding_loops(helper, param):
                    via = via + (parent,)  # ``cycle(loader)``: a generator of the project yielding its batches
                    child, parent = parent, parent.parent
                    continue
                if param is not None:
                    for use in dataflow.name_uses(param):
                        _flow(use, depth - 1, uses, seen, via + (parent,), deep, key)
                return
            init = _constructor(parent) if deep else None
            if init is not None:  # Trainer(model, loader): into __init__ (self.loader = loader)
                param = _parameter_for(parent, child, init, skip_self=True)
                if param is not None:
                    for use in dataflow.name_uses(param):
                        _flow(use, depth - 1, uses, seen, via + (parent,), deep, key)
                return
            if deep and name not in loops.ITERATION_WRAPPERS and name not in PREPARE_CALLS:
                wrapped = _wrapped_loader_target(parent, child)
                if wrapped is not None:  # ``model, opt, dl = backend.distribute(model=m, training_data=dl)``
                    _flow_into_target(wrapped, depth - 1, uses, seen, via)
                    return
            if name not in loops.ITERATION_WRAPPERS:
                if deep and _hands_optimizer(parent):
                    uses.handed_to_training = True  # train_one_epoch(model, loader, optimizer) of another module
                return  # len(loader), print(loader), a library call: not an iteration
            child, parent = parent, parent.parent  # a wrapper: enumerate(loader), tqdm(loader)
            continue
        break
    if key is None and child is expr and isinstance(parent, nodes.Dict):
        for k, v in parent.items:  # ``{"train": loader}``: follow the dict to its reads of that key
            if v is child and isinstance(k, nodes.Const) and isinstance(k.value, str):
                _flow(parent, depth - 1, uses, seen, via, deep, k.value)
        return
    if key is not None and (child is not expr or isinstance(parent, nodes.Tuple)):
        return
    if deep and child is expr and isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Return):
        func = parent.scope()  # ``return train_dl, val_dl``: follow the unpacked position at each call site
        if isinstance(func, nodes.FunctionDef):
            index = parent.elts.index(child)
            for site in loops.call_sites(func):
                for target in _unpacked_targets(site, index, len(parent.elts)):
                    _flow_into_target(target, depth - 1, uses, seen, via)
        return
    if child is expr and isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
        assign = parent.parent  # ``self.model, self.loader = model, loader``: the same position on the left
        if assign.value is parent:
            index = parent.elts.index(child)
            for target in assign.targets:
                if isinstance(target, (nodes.Tuple, nodes.List)) and len(target.elts) == len(parent.elts):
                    _flow_into_target(target.elts[index], depth - 1, uses, seen, via, deep)
        return
    if child is not expr and not (isinstance(parent, (nodes.Assign, nodes.Return))):
        return
    if isinstance(parent, nodes.Assign) and child is parent.value:
        for target in parent.targets:
            _flow_into_target(target, depth - 1, uses, seen, via, deep, key)
    elif isinstance(parent, nodes.Return):
        func = parent.scope()
        if isinstance(func, nodes.FunctionDef):
            for site in loops.call_sites(func):
                _flow(site, depth - 1, uses, seen, via, deep, key)


def model_texts(module: nodes.Module) -> Set[str]:
    """Texts of the file's models: receivers of ``.parameters()`` / ``.named_parameters()``
    (``model``, ``self._model``) and models handed to a framework trainer (``Trainer(model=model)``,
    ``trainer.fit(model)``)."""
    return gradients.parameter_owners(module) | trainer_models(module)


def trainer_models(module: nodes.Module) -> Set[str]:
    """Texts of the models a framework trainer trains: the ``model=`` (or first) argument of a
    ``...Trainer`` class of transformers, TRL or Lightning (resolved through the imports), and the
    first argument of ``.fit(...)`` on an object built from one."""
    found: Set[str] = set()
    for call in module.nodes_of_class(nodes.Call):
        if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
            continue
        dotted = infer.dotted_name(call.func)
        if dotted is None or dotted.split(".")[0] not in TRAINER_PACKAGES or not dotted.endswith("Trainer"):
            continue
        model = next((kw.value for kw in call.keywords or () if kw.arg == "model"), None)
        if model is None and call.args and not isinstance(call.args[0], nodes.Starred):
            model = call.args[0]
        if isinstance(model, (nodes.Name, nodes.Attribute)):
            found.add(dataflow.binding_text(model))
    for call in module.nodes_of_class(nodes.Call):
        if infer.method_name(call) not in frameworks.FIT_METHODS or not call.args:
            continue
        model, receiver = call.args[0], call.func.expr  # type: ignore[union-attr]
        if isinstance(model, (nodes.Name, nodes.Attribute)) and _built_by_trainer(receiver):
            found.add(dataflow.binding_text(model))
    return found


#: Methods that run a framework trainer's own training loop: Lightning's ``trainer.fit(model, dl)``,
#: Hugging Face's and TRL's ``trainer.train()``.
TRAINER_LOOP_METHODS = frameworks.FIT_METHODS | {"train"}


def runs_trainer(call: nodes.Call) -> bool:
    """``trainer.fit(...)`` / ``trainer.train()`` on an object a framework trainer built (see
    ``trainer_models``): the framework runs a training loop the file does not spell out
    (``model.train()`` on a module only switches its mode)."""
    return (
        infer.method_name(call) in TRAINER_LOOP_METHODS
        and isinstance(call.func, nodes.Attribute)
        and _built_by_trainer(call.func.expr)
    )


def _built_by_trainer(receiver: nodes.NodeNG) -> bool:
    """``receiver`` is (bound only to) a framework trainer built in the file: ``Trainer(...).fit``."""
    values: Optional[List[nodes.NodeNG]] = [receiver] if isinstance(receiver, nodes.Call) else None
    if isinstance(receiver, (nodes.Name, nodes.Attribute)):
        values = dataflow.assigned_values(receiver)
    if not values:
        return False
    for value in values:
        if not isinstance(value, nodes.Call) or not isinstance(value.func, (nodes.Name, nodes.Attribute)):
            return False
        if (infer.dotted_name(value.func) or "").split(".")[0] not in TRAINER_PACKAGES:
            return False
    return True


def used_models(loop: "loops.Loop", models: Set[str]) -> Set[str]:
    """The ``models`` (texts, see ``model_texts``) one iteration of ``loop`` uses in its calls
    (helpers of the file included): ``model`` in ``model(x)``, ``model.generate(**batch)`` or
    ``accelerator.unwrap_model(model).generate(...)``; ``self.model`` in ``self.model(x)``.  A loop
    over held-out batches that uses a model that is trained evaluates the trained model."""
    found: Set[str] = set()
    if not models:
        return found
    for call in loops.loop_calls(loop):
        parts: List[nodes.NodeNG] = [call.func] + list(call.args) + [kw.value for kw in call.keywords or ()]
        for part in parts:
            for node in _references(part):
                text = dataflow.binding_text(node)
                if text in models:
                    found.add(text)
    return found


def _references(expr: nodes.NodeNG) -> List[nodes.NodeNG]:
    """Names and ``name.attr`` references inside ``expr`` (not entering lambdas or comprehensions)."""
    found: List[nodes.NodeNG] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.Name) or (isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name)):
            found.append(node)
        if isinstance(node, (nodes.Lambda, nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)):
            continue
        stack.extend(node.get_children())
    return found


def _hands_optimizer(call: nodes.Call) -> bool:
    """``call`` is a function imported from another module (``train_one_epoch``, ``engine.train``;
    not a method of an object such as ``accelerator.free_memory``, not torch) and some argument is
    an optimizer (resolved, or unresolvable and named like one)."""
    imported = infer.dotted_name(call.func)
    if imported is None or imported.split(".")[0] == "torch":
        return False
    args = [a for a in call.args if not isinstance(a, nodes.Starred)]
    args += [kw.value for kw in call.keywords or () if kw.arg is not None]
    return any(isinstance(a, (nodes.Name, nodes.Attribute)) and gradients.is_optimizer(a) for a in args)


def launched_receiver_method(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The method of the file that ``obj.method(...)`` runs where ``obj`` is a parameter of a function a
    process launcher starts, bound to what every launch passes for it: ``mp.spawn(self._do_train,
    args=(self, data))`` runs the static ``_do_train(rank, self, data)`` with the instance, so its
    ``self._train_epoch(loader)`` is the class's method (``spawn`` passes the process index first)."""
    func = call.func
    if not isinstance(func, nodes.Attribute) or not isinstance(func.expr, nodes.Name):
        return None
    binding = dataflow.single_binding(func.expr)
    arguments = binding.parent if binding is not None else None
    worker = arguments.parent if isinstance(arguments, nodes.Arguments) else None
    if not isinstance(worker, nodes.FunctionDef) or binding in (arguments.kwonlyargs or []):
        return None
    launches = _launches(worker.root()).get(worker)
    if not launches:
        return None
    positional = list(arguments.posonlyargs or []) + list(arguments.args or [])
    skip = 2 if worker.type == "method" else 1  # a bound method's ``self``, then the process index
    index = positional.index(binding) - skip if binding in positional else -1
    found: Optional[nodes.FunctionDef] = None
    for launch in launches:
        passed = _launch_arguments(launch)
        if passed is None or not 0 <= index < len(passed):
            return None
        klass = infer.instance_class(passed[index])
        if klass is None or klass.root() is not call.root():
            return None
        try:
            method = klass.getattr(func.attrname)[0]
        except (AstroidError, IndexError):
            return None
        if not isinstance(method, nodes.FunctionDef) or (found is not None and method is not found):
            return None
        found = method
    return found


_LAUNCHES: "Dict[nodes.Module, Dict[nodes.FunctionDef, List[nodes.Call]]]" = memo.per_file()


def _launches(module: nodes.Module) -> "Dict[nodes.FunctionDef, List[nodes.Call]]":
    """The process launches of the file (``mp.spawn(worker, ...)``) by the function they start."""
    table = _LAUNCHES.get(module)
    if table is None:
        table = {}
        for call in module.nodes_of_class(nodes.Call):
            if infer.call_name(call) in SPAWN_NAMES:
                worker = entrypoint.launched_function(call)
                if worker is not None:
                    table.setdefault(worker, []).append(call)
        _LAUNCHES[module] = table
    return table


def _launch_arguments(launch: nodes.Call) -> Optional[List[nodes.NodeNG]]:
    """The values a launch hands its function after the process index: the ``args=`` tuple of
    ``spawn`` (written there or bound once to a name); None when unknown or starred."""
    passed = infer.argument(launch, "args", 1)
    if isinstance(passed, nodes.Name):
        values = dataflow.assigned_values(passed)
        passed = values[0] if values and len(values) == 1 else None
    if not isinstance(passed, nodes.Tuple) or any(isinstance(e, nodes.Starred) for e in passed.elts):
        return None
    return list(passed.elts)


def _flow_into_target(
    target: nodes.NodeNG,
    depth: int,
    uses: Uses,
    seen: Set[Tuple[int, Optional[str]]],
    via: Tuple[nodes.Call, ...],
    deep: bool = True,
    key: Optional[str] = None,
) -> None:
    """Follow a value (or, with ``key``, a dict holding it under that key) into the name or
    ``self.attr`` it is assigned to, or into the dict whose constant key it is stored under."""
    if isinstance(target, nodes.AssignName):
        if key is None:
            uses.bindings.append(target)
        for use in dataflow.name_uses(target):
            _flow(use, depth, uses, seen, via, deep, key)
    elif isinstance(target, nodes.AssignAttr) and dataflow.binding_text(target.expr) == "self":
        if key is None:
            uses.bindings.append(target)
        for use in _self_attr_uses(target):
            _flow(use, depth, uses, seen, via, deep, key)
    elif isinstance(target, nodes.Subscript) and key is None and isinstance(target.value, nodes.Name):
        slot = target.slice  # ``loaders["extra"] = DataLoader(...)``: the dict's reads of that key
        binding = dataflow.single_binding(target.value)
        if binding is not None and isinstance(slot, nodes.Const) and isinstance(slot.value, str):
            for use in dataflow.name_uses(binding):
                if use is not target.value:
                    _flow(use, depth, uses, seen, via, deep, slot.value)


def _unpacked_targets(call: nodes.Call, index: int, count: int) -> List[nodes.NodeNG]:
    """The targets that receive position ``index`` of the ``count`` values ``call`` gives back:
    ``a, b = f()`` gives ``b`` for index 1; a single target takes the only value."""
    parent = call.parent
    if not isinstance(parent, nodes.Assign) or parent.value is not call:
        return []
    found: List[nodes.NodeNG] = []
    for target in parent.targets:
        if isinstance(target, (nodes.Tuple, nodes.List)):
            elts = target.elts
            if len(elts) == count and not any(isinstance(e, nodes.Starred) for e in elts):
                found.append(elts[index])
        elif count == 1:
            found.append(target)
    return found


def _wrapped_loader_target(call: nodes.Call, arg: nodes.NodeNG) -> Optional[nodes.AssignName]:
    """The name that receives ``arg`` back from a call of another module (not torch, not a
    framework's prepare) whose result is unpacked into names: ``model, opt, dl = wrap(model, opt, dl)``
    (every argument positional, one name per argument: the same position), or, where the positions
    do not say (``distribute(model=m, training_data=dl)``), the only unpacked name that a ``for``
    header iterates.  None when the call is not unpacked so or no single name qualifies."""
    assign = call.parent
    if not isinstance(assign, nodes.Assign) or assign.value is not call or len(assign.targets) != 1:
        return None
    target = assign.targets[0]
    if not isinstance(target, (nodes.Tuple, nodes.List)) or len(target.elts) < 2:
        return None
    if not all(isinstance(e, nodes.AssignName) for e in target.elts):
        return None
    if (infer.dotted_name(call.func) or "").split(".")[0] == "torch":
        return None
    args = list(call.args)
    if arg in args and not call.keywords and len(args) == len(target.elts):
        if not any(isinstance(a, nodes.Starred) for a in args):
            return target.elts[args.index(arg)]  # type: ignore[no-any-return]
    iterated = [e for e in target.elts if any(_iterated_by_header(use) for use in dataflow.name_uses(e))]
    return iterated[0] if len(iterated) == 1 else None


def _iterated_by_header(name: nodes.Name) -> bool:
    """``name`` is what a ``for`` header iterates, under its wrappers (``enumerate(tqdm(name))``)."""
    child: nodes.NodeNG = name
    parent = name.parent
    while isinstance(parent, nodes.Call) and child in parent.args:
        if infer.call_name(parent) not in loops.ITERATION_WRAPPERS:
            return False
        child, parent = parent, parent.parent
    return isinstance(parent, nodes.For) and child is parent.iter


def _classify(loop: "loops.Loop", uses: Uses, via: Tuple[nodes.Call, ...]) -> None:
    if any(gradients.is_backward(c) for c in loops.loop_calls(loop)):
        uses.training_loops.append(loop)
        uses.routes.append(via)
    else:
        uses.other_loops.append(loop)
        uses.other_routes.append(via)


def trains_out_of_sight(loop: "loops.Loop") -> bool:
    """One iteration of ``loop`` may run a training step that the file cannot show: the file makes no
    step call anywhere (``training_step.is_step_call``: the step lives in the project's or a library's
    code), and the loop hands its batch to a call nothing resolves (``model.feed_data(batch)`` on a
    model an imported factory built), outside autograd-off blocks and rank-0 branches, not in an
    evaluation function, and not over a held-out split (``val_loader``)."""
    if not isinstance(loop, nodes.For) or file_steps(loop.root()):
        return False
    if grad.grad_disabled(loop) or rank_zero_only(loop) or evaluation.split_words(loops.unwrap_iteration(loop.iter)):
        return False
    func = loops.enclosing_function(loop)
    if func is not None and evaluation.eval_named(func):
        return False
    batch = {n.name for n in _batch_target(loop).nodes_of_class(nodes.AssignName)}
    for stmt in loop.body:
        for call in infer.iter_calls(stmt):
            args = list(call.args) + [kw.value for kw in call.keywords or ()]
            takes_batch = any(isinstance(n, nodes.Name) and n.name in batch for a in args for n in _references(a))
            if takes_batch and infer.safe_infer(call.func) is None and loops.local_helper(call) is None:
                return True
    return False


def _batch_target(loop: nodes.For) -> nodes.NodeNG:
    """The part of a ``for`` target that holds the batch: ``batch`` of ``for i, batch in enumerate(loader)``."""
    target = loop.target
    if infer.call_name(loop.iter) == "enumerate" and isinstance(target, nodes.Tuple) and len(target.elts) == 2:
        return target.elts[1]  # type: ignore[no-any-return]
    return target  # type: ignore[no-any-return]


_FILE_STEPS: "Dict[nodes.Module, bool]" = memo.per_file()


def file_steps(module: nodes.Module) -> bool:
    """Some call of the file is a step call (``training_step.is_step_call``: a backward, or a step on a
    resolved optimizer or scaler); asked once per file."""
    found = _FILE_STEPS.get(module)
    if found is None:
        found = _FILE_STEPS[module] = any(
            infer.method_name(c) in STEP_METHODS and training_step.is_step_call(c)
            for c in module.nodes_of_class(nodes.Call)
        )
    return found


def _constructor(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The ``__init__`` of the class of the checked file that ``call`` builds, or None."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return None
    klass = infer.safe_infer(call.func)
    if not isinstance(klass, nodes.ClassDef) or klass.root() is not call.root():
        return None
    init = klass.locals.get("__init__")
    return init[0] if init and isinstance(init[0], nodes.FunctionDef) else None


def _parameter_for(
    call: nodes.Call, arg: nodes.NodeNG, func: nodes.FunctionDef, skip_self: bool = False
) -> Optional[nodes.AssignName]:
    params = list(func.args.posonlyargs or []) + list(func.args.args or [])
    if (skip_self or (func.is_method() and isinstance(call.func, nodes.Attribute))) and params:
        params = params[1:]  # bound method or constructor: ``self`` is not in the call
    if isinstance(arg, nodes.Keyword):
        for p in params + list(func.args.kwonlyargs or []):
            if p.name == arg.arg:
                return p  # type: ignore[no-any-return]
        return None
    if arg in call.args:
        index = call.args.index(arg)
        if any(isinstance(a, nodes.Starred) for a in call.args[: index + 1]) or index >= len(params):
            return None
        return params[index]  # type: ignore[no-any-return]
    return None


def _yielding_loops(func: nodes.FunctionDef, param: nodes.AssignName) -> List[nodes.For]:
    """The ``for`` headers of generator ``func`` that iterate its parameter ``param`` and yield in their
    body (``def cycle(it): while True: for b in it: yield b``): a call of ``func`` on a loader is an
    iteration wrapper of the project, and the loops around those headers start new passes."""
    if not func.is_generator():
        return []
    found = []
    for header in func.nodes_of_class(nodes.For):
        if not (isinstance(header.iter, nodes.Name) and header.iter.name == param.name):
            continue
        if header.scope() is func and any(True for _ in header.nodes_of_class((nodes.Yield, nodes.YieldFrom))):
            found.append(header)
    return found


def _self_attr_uses(target: nodes.AssignAttr) -> List[nodes.Attribute]:
    klass = target.scope().parent.frame() if target.scope().parent is not None else None
    if not isinstance(klass, nodes.ClassDef):
        return []
    return [
        attr
        for attr in klass.nodes_of_class(nodes.Attribute)
        if attr.attrname == target.attrname and isinstance(attr.expr, nodes.Name) and attr.expr.name == "self"
    ]


def _next_method(parent: nodes.NodeNG, child: nodes.NodeNG) -> bool:
    """``child.next()`` / ``child.__next__()``: one batch read from an iterator, as ``next(child)``."""
    return (
        isinstance(parent, nodes.Attribute)
        and parent.expr is child
        and parent.attrname in ("next", "__next__")
        and isinstance(parent.parent, nodes.Call)
        and parent.parent.func is parent
    )


def _rebound_unread(bindings: List[nodes.NodeNG]) -> bool:
    """Every name the loader was bound to is read nowhere: bound again in the same scope before any
    use (``loader = DataLoader(ds)`` replaced by ``loader = DataLoader(train_part)``), a function's
    local, or a module's name that no other file of the project names (``val_loader`` built and
    forgotten; another module may import a name it names)."""
    if not bindings or not all(isinstance(b, nodes.AssignName) for b in bindings):
        return False
    for binding in bindings:
        if dataflow.name_uses(binding):
            return False
        scope = binding.scope()
        others = [
            n for n in scope.nodes_of_class(nodes.AssignName)
            if n.name == binding.name and n is not binding and n.scope() is scope
        ]
        if others or isinstance(scope, nodes.FunctionDef):
            continue
        path = getattr(binding.root(), "file", None)
        if not path or project.named_elsewhere(binding.name, str(path)) is not False:
            return False  # bound once at the top level: another module may import it
    return True


def _fresh_iterator(next_call: nodes.Call) -> bool:
    """``next(iter(x))``: the first batch of a new pass, not the next one of a running iterator."""
    args = next_call.args
    return len(args) == 1 and isinstance(args[0], nodes.Call) and infer.call_name(args[0]) == "iter"


def epoch_loops(loop: "loops.Loop", via: Tuple[nodes.Call, ...] = (), depth: int = 2) -> List["loops.Loop"]:
    """Loops that run ``loop`` again: around it, around the calls ``via`` which the value was
    passed through, or (when none, and the route did not call the loop's function itself) around
    an in-file call of its function (a method looping over ``self.train_data`` that another
    method calls per epoch)."""
    outer = list(loops.enclosing_loops(loop))
    for site in via:
        outer.extend(loops.enclosing_loops(site))
        helper = loops.local_helper(site)
        for arg in (list(site.args) + list(site.keywords or ())) if helper is not None else ():
            param = _parameter_for(site, arg, helper)  # type: ignore[arg-type]
            for header in _yielding_loops(helper, param) if param is not None else ():  # type: ignore[arg-type]
                outer.extend(loops.enclosing_loops(header))  # ``while True: for b in it: yield b`` restarts it
    func = loop.scope()
    if outer or depth <= 0 or not isinstance(func, nodes.FunctionDef):
        return outer
    if any(loops.local_helper(site) is func for site in via):
        return []  # handed straight to the loop's function: that call runs it once
    found: List[loops.Loop] = []
    for site in loops.call_sites(func):
        around = loops.enclosing_loops(site)
        if around:
            found.extend(around)
        else:
            caller = site.scope()
            if isinstance(caller, nodes.FunctionDef) and caller is not func:
                found.extend(_function_epoch_loops(caller, depth - 1))
    return found


def _function_epoch_loops(func: nodes.FunctionDef, depth: int) -> List["loops.Loop"]:
    if depth <= 0:
        return []
    found: List[loops.Loop] = []
    for site in loops.call_sites(func):
        found.extend(loops.enclosing_loops(site))
    return found


def rank_zero_only(node: nodes.NodeNG) -> bool:
    """``node`` runs under ``if rank == 0:`` (or a main-process check) in its function."""
    child = node
    parent = node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.If) and child in parent.body and _rank_zero_test(parent.test):
            return True
        child, parent = parent, parent.parent
    return False


def _rank_zero_test(test: nodes.NodeNG) -> bool:
    if isinstance(test, nodes.BoolOp) and test.op == "and":
        return any(_rank_zero_test(v) for v in test.values)
    if isinstance(test, nodes.Compare) and len(test.ops) == 1:
        op, right = test.ops[0]
        left = test.left
        if op == "==":
            for side, other in ((left, right), (right, left)):
                if _mentions_rank(side) and isinstance(other, nodes.Const) and other.value == 0:
                    return True
        if op == "in" and _mentions_rank(left) and isinstance(right, (nodes.List, nodes.Tuple, nodes.Set)):
            return all(isinstance(e, nodes.Const) and e.value in (0, -1) for e in right.elts)
        return False
    target = test.func if isinstance(test, nodes.Call) else test
    name = dataflow.terminal_name(target)
    return name is not None and MAIN_PROCESS_NAME.search(name) is not None


def _mentions_rank(expr: nodes.NodeNG) -> bool:
    target = expr.func if isinstance(expr, nodes.Call) else expr
    name = dataflow.terminal_name(target)
    return name is not None and RANK_NAME.search(name) is not None


def is_loader(expr: nodes.NodeNG) -> bool:
    """``expr`` is resolved to a DataLoader (or an instance of a subclass)."""
    return infer.is_instance_of(expr, DATALOADERS)


def is_sampler(expr: nodes.NodeNG) -> bool:
    """``expr`` is resolved to a torch sampler, distributed or not (or an instance of a subclass)."""
    return infer.is_instance_of(expr, SAMPLER_BASES)


def plain_sampler(sampler: nodes.NodeNG) -> Optional[str]:
    """The class name when every value ``sampler`` may hold is a torch sampler that is not
    distributed (or None); None when any may be distributed or cannot be resolved."""
    values: List[nodes.NodeNG] = [sampler]
    if isinstance(sampler, (nodes.Name, nodes.Attribute)):
        values = dataflow.assigned_values(sampler) or []
    expanded: List[nodes.NodeNG] = []
    for value in values:
        expanded.extend([value.body, value.orelse] if isinstance(value, nodes.IfExp) else [value])
    names = []
    for value in expanded:
        if infer.is_none(value):
            continue
        if not isinstance(value, nodes.Call):
            return None
        klass = infer.safe_infer(value.func)
        if not isinstance(klass, nodes.ClassDef) or not infer.class_is_subclass_of(klass, SAMPLER_BASES):
            return None
        if infer.class_is_subclass_of(klass, DISTRIBUTED_SAMPLERS) or not klass.qname().startswith("torch."):
            return None
        names.append(klass.name)
    return names[0] if names else None


def may_be_iterable_dataset(dataset: nodes.NodeNG, trust_map_style: bool) -> bool:
    """The dataset is (or, unresolved and not shuffled, may be) an IterableDataset."""
    klass = infer.instance_class(dataset)
    if klass is not None:
        return infer.class_is_subclass_of(klass, ITERABLE_DATASETS)
    value = infer.safe_infer(dataset)
    if value is not None:
        return False  # a list, a tuple: map-style
    return not trust_map_style  # shuffle=True only works on map-style datasets


def may_set_epoch(setter: nodes.Call, sampler: nodes.Call, loaders: List[nodes.Call]) -> bool:
    """``setter`` (a ``.set_epoch`` call) may reach ``sampler``: its receiver is bound to it, to a
    loader built with it (``loader.set_epoch``, ``loader.sampler.set_epoch``), or cannot be told
    apart from it (a parameter, an opaque value, a DistributedSampler from a call site)."""
    receiver = setter.func.expr  # type: ignore[union-attr]
    direct = bound_among(receiver, [sampler] + loaders)
    if direct is not None:
        return direct
    if isinstance(receiver, nodes.Attribute) and receiver.attrname in SAMPLER_ATTRIBUTES:
        inner = receiver.expr  # loader.sampler, loader.batch_sampler.sampler
        while isinstance(inner, nodes.Attribute) and inner.attrname in SAMPLER_ATTRIBUTES:
            inner = inner.expr
        via_loader = bound_among(inner, loaders)
        return True if via_loader is None else via_loader
    value = infer.safe_infer(receiver)
    return value is None or infer.is_instance_of(receiver, DISTRIBUTED_SAMPLERS | DATALOADERS)


def bound_among(expr: nodes.NodeNG, targets: List[nodes.Call], depth: int = 2) -> Optional[bool]:
    """Whether ``expr`` is bound to one of the calls ``targets`` (a ``None`` on another branch,
    ``sampler = DistributedSampler(ds) if distributed else None``, aside), directly or through what a
    function of the file returns (``loader = build_dataloader(args, ds)`` whose ``return dataloader``
    is one of them, ``depth`` calls deep); None when not bound to calls."""
    if not isinstance(expr, (nodes.Name, nodes.Attribute)):
        return None
    values = [v for v in dataflow.assigned_values(expr, unpack=True) or () if not infer.is_none(v)]
    if not values or not all(isinstance(v, nodes.Call) for v in values):
        return None
    if any(v is t for v in values for t in targets):
        return True
    for value in values:
        helper = loops.local_helper(value) if depth > 0 else None
        if helper is not None and any(bound_among(r, targets, depth - 1) for r in dataflow.returned_values(helper)):
            return True
    return False


def set_before_epoch_loop(setter: nodes.Call, epoch_loops: List["loops.Loop"]) -> bool:
    """``set_epoch`` called once, outside any loop, in the function that runs the epoch loop."""
    if loops.enclosing_loops(setter):
        return False
    return any(setter.scope() is loop.scope() for loop in epoch_loops)


class LoaderConsumers:
    """Where the batches of the loaders of one file go, memoised per loader call.

    A loader **feeds the run** when its batches reach a training loop of the file (or a framework
    or imported function that trains from it), or an evaluation loop (one that uses a model the file
    trains) that runs again each epoch; or when it is never iterated in the file and is built
    beside a loader that feeds training (the evaluation loader of a pair whose loop lives in
    another module).  A loader iterated only by loops that train nothing and use no trained model
    (a sharding test, prompts for an image pipeline), or read once before or after training (a
    final test pass), does not.
    """

    TRAIN, EVALUATE, EVALUATED_ONCE, ITERATED, UNKNOWN = "train", "evaluate", "evaluated once", "iterated", "unknown"

    def __init__(self, module: nodes.Module, loader_classes: "frozenset[str]", names: "frozenset[str]") -> None:
        """``names``: the names a loader class may be called by in the file (a cheap syntactic
        filter before ``loader_classes`` is checked by inference)."""
        self.module = module
        self.loader_classes = loader_classes
        self.names = names
        self._uses: "dict[int, str]" = {}
        self._flows: "dict[int, Uses]" = {}
        self._models: Optional[Set[str]] = None
        self._trained: Optional[Set[str]] = None

    def feeds_run(self, call: nodes.Call) -> bool:
        use = self.use(call)
        if use in (self.TRAIN, self.EVALUATE):
            return True
        if use in (self.ITERATED, self.EVALUATED_ONCE):
            return False
        if _rebound_unread(self.flows(call).bindings):
            return False  # replaced before it was ever read: a dead loader
        scope = call.scope()
        for other in scope.nodes_of_class(nodes.Call):
            if other is call or other.scope() is not scope or infer.call_name(other) not in self.names:
                continue
            if infer.qname(other.func) in self.loader_classes and self.use(other) == self.TRAIN:
                return True
        return False

    def use(self, call: nodes.Call) -> str:
        """``TRAIN``, ``EVALUATE`` (by a loop that runs each epoch), ``EVALUATED_ONCE`` (read once,
        before or after training), ``ITERATED`` (only by loops that use no trained model) or
        ``UNKNOWN`` (not iterated anywhere the file shows)."""
        key = id(call)
        if key not in self._uses:
            uses = self.flows(call)
            if uses.training_loops or uses.handed_to_training:
                self._uses[key] = self.TRAIN
            elif self._evaluates(uses, repeated=True):
                self._uses[key] = self.EVALUATE
            elif self._evaluates(uses, repeated=False):
                self._uses[key] = self.EVALUATED_ONCE
            elif uses.other_loops or uses.sampled:
                self._uses[key] = self.ITERATED
            else:
                self._uses[key] = self.UNKNOWN
        return self._uses[key]

    def _evaluates(self, uses: Uses, repeated: bool) -> bool:
        """Some loop over the batches uses a model the file trains; with ``repeated``, that loop
        also runs again each epoch (an epoch loop around it or around the calls it is reached through)."""
        for loop, route in zip(uses.other_loops, uses.other_routes):
            if used_models(loop, self.models()) & self.trained_models():
                if not repeated or epoch_loops(loop, route):
                    return True
        return False

    def flows(self, call: nodes.Call) -> Uses:
        """Where the batches of the loader ``call`` builds go (``uses_of`` through framework prepares),
        found once per loader for every question asked about it."""
        key = id(call)
        if key not in self._flows:
            self._flows[key] = uses_of(call, through_prepare=True)
        return self._flows[key]

    def models(self) -> Set[str]:
        if self._models is None:
            self._models = model_texts(self.module)
        return self._models

    def trained_models(self) -> Set[str]:
        """Models the file trains: used by a training loop (one whose iteration runs backward) or
        handed to a framework trainer."""
        if self._trained is None:
            self._trained = set(trainer_models(self.module))
            for loop in self.module.nodes_of_class((nodes.For, nodes.While)):
                if any(gradients.is_backward(c) for c in loops.loop_calls(loop)):
                    self._trained |= used_models(loop, self.models())
        return self._trained
