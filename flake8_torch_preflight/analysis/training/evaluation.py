"""Is a forward pass an evaluation?  Evidence read from the code around it, for TP002.

* the function is named like one (``evaluate``, ``validate``, ``predict``, ``infer``; ``test``
  only with a loop, so model-file smoke tests and pytest functions do not count);
* an enclosing loop iterates a held-out split (``val_loader``, ``loaders["test"]``, ``testloader``);
* the model was switched to ``eval()`` before the call (:func:`mode_before`);

and the counter-evidence: a pass that uses gradients (backward, autograd.grad, requires_grad_),
a model frozen with ``requires_grad_(False)``.  All syntactic except where noted.

A forward that runs once (:func:`repeats`, :func:`dummy_input`, :func:`test_module`) is not an
evaluation loop: TP002 asks its callers whether their function runs once too.  A forward on a
``Variable(x, volatile=True)`` input (:func:`volatile_input`) runs without autograd in the
PyTorch (0.3 and before) the file is written for.

A forward under another name is a method of the project's model class that runs its submodules
(:func:`model_method`).  A pass function shared by training and validation is an evaluation for
a call whose constant arguments skip all its gradient use, after an eval() switch
(:func:`eval_pass_call`).
"""
from __future__ import annotations

import os
import re
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple, Union

from astroid import nodes
from astroid.bases import BoundMethod, Instance, UnboundMethod
from astroid.exceptions import AstroidError

from ..setup import brain
from ..semantic import dataflow, infer, loops, memo, project
from . import device, grad, model_flow, models, modes, origins, param_count, training_step
from .models import SELF_RETURNING_METHODS as _SELF_RETURNING
from .param_count import TENSOR_FACTORIES
from .torch_names import VARIABLE

#: Words of a function name that make it an evaluation or inference function.
EVAL_FUNCTION_WORDS = frozenset(
    {"val", "valid", "validate", "validation", "eval", "evaluate", "evaluation", "test", "testing", "predict",
     "prediction", "predictions", "infer", "inference"}
)

#: Objects that an evaluation word applied to names a quantity of the training loss, not an evaluation:
#: ``evaluate_actions(obs, actions)`` gives the log-probabilities and values a policy-gradient loss is
#: made of (the actor-critic policies of stable-baselines3 and their descendants).
TRAINING_QUANTITY_WORDS = frozenset({"action", "actions"})

#: "test" alone names an evaluation only for a function with a loop (``def test(): y = net(x)`` in a
#: model file, or a pytest function, is a smoke test).
TEST_WORDS = frozenset({"test", "testing"})

#: Words of a loop's iterable that name a held-out split (``val_loader``, ``loaders["test"]``, ``testloader``).
EVAL_SPLIT_WORDS = frozenset({"val", "valid", "validation", "eval", "evaluation", "test", "testing", "dev", "holdout"})

#: Suffixes glued to a split word without an underscore (``testloader``, ``valset``).
SPLIT_SUFFIXES = ("loader", "loaders", "dl", "set", "data", "dataset", "batches", "iter")

#: Calls showing that a pass needs gradients (adversarial examples, saliency maps): never reported.
GRADIENT_METHODS = frozenset({"backward", "manual_backward", "requires_grad_"})
GRADIENT_FUNCTIONS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})

#: Mode switches on a module: ``eval()`` (or ``train(False)``) and ``train()``.
MODE_METHODS = frozenset({"eval", "train"})

#: Method calls that are never a forward pass.
NOT_FORWARD_METHODS = GRADIENT_METHODS | MODE_METHODS

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def uses_gradients(call: nodes.Call) -> bool:
    """``backward()``, ``manual_backward``, ``requires_grad_()``, ``requires_grad=True`` or ``autograd.grad``."""
    if infer.method_name(call) in GRADIENT_METHODS:
        return True
    for kw in call.keywords or ():
        if kw.arg == "requires_grad" and isinstance(kw.value, nodes.Const) and kw.value.value is True:
            return True
    if infer.call_name(call) in ("grad", "backward"):
        return infer.callee_qname(call) in GRADIENT_FUNCTIONS or infer.dotted_name(call.func) in GRADIENT_FUNCTIONS
    return False


def _own_nodes(scope: nodes.NodeNG, klass: type) -> List[nodes.NodeNG]:
    """Nodes of ``klass`` in a function, or in a module's own statements (not its functions)."""
    if not isinstance(scope, nodes.Module):
        return list(scope.nodes_of_class(klass))
    return list(scope.nodes_of_class(klass, skip_klass=(nodes.FunctionDef, nodes.ClassDef)))


_FROZEN: "Dict[int, Set[str]]" = memo.per_file()


def frozen_model(
    model: nodes.NodeNG,
    func: Optional[nodes.FunctionDef],
    reaching: Optional[Callable[[nodes.NodeNG], Optional[FrozenSet[object]]]] = None,
) -> bool:
    """The model's forward records no graph of its own: ``model.requires_grad_(False)`` (also
    ``model.eval().requires_grad_(False)``) or ``for p in model.parameters(): p.requires_grad = False``
    on the model (or an object it belongs to) in the function ``func``, at module level for a
    module-level model, or in any method of the class for ``self.model``; or, with ``reaching``
    (flow-sensitive Defs), every binding reaching it builds a frozen model (``built_frozen``)."""
    return (
        _frozen_by_call(model, func)
        or (reaching is not None and built_frozen(model, reaching))
        or _frozen_by_class(model)
    )


def _frozen_by_class(model: nodes.NodeNG) -> bool:
    """Every class the model may be an instance of freezes itself when built: its ``__init__``, or a
    method of its own that ``__init__`` calls (``self.freeze()``), runs ``self.requires_grad_(False)`` or
    ``for p in self.parameters(): p.requires_grad = False`` (a frozen text encoder of a diffusion
    sampler, whatever module defines it)."""
    built = models.model_constructions(model) if isinstance(model, (nodes.Name, nodes.Attribute)) else None
    return bool(built) and all(_freezes_itself(klass, call) for klass, call in built)  # type: ignore[union-attr]


def _freezes_itself(klass: nodes.ClassDef, call: Optional[nodes.Call] = None) -> bool:
    """``klass``'s ``__init__`` (or a method it calls) freezes ``self``; a flag it freezes with
    (``p.requires_grad = requires_grad``) is read from ``call``, the constructor call, or the default
    (not when the construction is not in sight)."""
    init = infer.own_method(klass, "__init__")
    if init is None:
        return False
    methods = [init] + [
        m for m in (infer.own_method(klass, c.func.attrname) for c in init.nodes_of_class(nodes.Call)
                    if isinstance(c.func, nodes.Attribute) and dataflow.is_self_attr(c.func))
        if m is not None and m is not init
    ]
    flags = frozenset(
        name for name in (init.argnames()[1:] if call is not None else ()) if _flag_value(init, call, name) is False
    )  # a construction not in sight may pass anything
    return any("self" in frozen_receivers(m, flags) for m in methods)


#: How many parameter-to-argument hops ``_frozen_by_call`` follows to the caller that froze the model.
FROZEN_CALLER_DEPTH = 2


def _frozen_by_call(model: nodes.NodeNG, func: Optional[nodes.FunctionDef], depth: int = FROZEN_CALLER_DEPTH) -> bool:
    """``_frozen_here``, or, for a model that is a parameter of ``func``, frozen where every call
    site of ``func`` in the file passes it (``infer.parameter_arguments``: ``evaluate(model)`` after
    ``model.requires_grad_(False)`` in the caller)."""
    if _frozen_here(model, func):
        return True
    root = unwrap(model)
    if depth <= 0 or func is None or not isinstance(root, nodes.Name) or root.name not in func.argnames():
        return False
    arguments = infer.parameter_arguments(root)
    return bool(arguments) and all(
        _frozen_by_call(a, loops.enclosing_function(a), depth - 1) for a in arguments  # type: ignore[union-attr]
    )


def _frozen_here(model: nodes.NodeNG, func: Optional[nodes.FunctionDef]) -> bool:
    text = dataflow.binding_text(unwrap(model))
    scopes: List[nodes.NodeNG] = [func] if func is not None else []
    root = unwrap(model)
    while isinstance(root, nodes.Attribute):
        root = root.expr
    if func is None or (isinstance(root, nodes.Name) and root.scope() is not func and root.name not in func.locals):
        scopes.append(model.root())
    klass = func.parent if func is not None and func.is_method() else None
    if isinstance(root, nodes.Name) and root.name == "self" and isinstance(klass, nodes.ClassDef):
        # ``self.teacher.requires_grad_(False)`` in ``__init__`` freezes it for every method of the class
        scopes.extend(m for m in klass.mymethods() if m is not func)
    for scope in scopes:
        texts = _FROZEN.get(id(scope))
        if texts is None:
            texts = _FROZEN[id(scope)] = frozen_receivers(scope)
        if any(text == f or text.startswith(f + ".") for f in texts):
            return True
    return False


#: How many results a simulator's step returns: gym's (obs, reward, done, info), gymnasium's five.
ENV_STEP_RESULTS = (4, 5)


def in_rollout(node: nodes.NodeNG) -> bool:
    """``node`` runs in a loop that steps a simulator, ``obs, reward, done, info = env.step(action)``
    (read from the shape of the call and its unpacking, not from names): each forward there takes one
    observation, and its graph is freed before the next step (a reinforcement-learning agent's test
    episodes)."""
    for loop in loops.enclosing_loops(node):
        for assign in loop.nodes_of_class(nodes.Assign):
            value, targets = assign.value, assign.targets
            if (
                isinstance(value, nodes.Call)
                and len(targets) == 1
                and isinstance(targets[0], nodes.Tuple)
                and _steps_simulator(infer.method_name(value), len(targets[0].elts))
            ):
                return True
    return False


def rollout_call(call: "project.ExternalCall") -> bool:
    """A call another module of the project makes inside a loop that steps a simulator (``in_rollout``
    for a call read from that module's text: ``a = agent.evaluate(s)`` beside ``s, r, done, _ = env.step(a)``)."""
    return any(_steps_simulator(name, count) for name, count in call.loop_unpacks)


def _steps_simulator(method: Optional[str], targets: int) -> bool:
    return method == "step" and targets in ENV_STEP_RESULTS


def forward_grad_off(call: nodes.Call) -> bool:
    """The module ``call`` runs turns autograd off itself: every class it may be an instance of
    (``models.model_classes``) runs its submodules (``self.<attr>(...)``) in ``forward`` only with
    autograd off (``with torch.no_grad():`` around them, or ``forward`` decorated so): a vocoder
    wrapper that is always an inference, whoever calls it."""
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return False
    classes = models.model_classes(call.func)
    if not classes:
        return False
    for klass in classes:
        forward = infer.own_method(klass, "forward")
        forward = _dispatched(forward, call) if forward is not None else None
        if forward is None or _runs_submodules(forward, 2):
            return False  # a layer runs with autograd on (``_runs_submodules``)
        if not any(dataflow.is_self_attr(c.func) and grad.grad_disabled(c) for c in forward.nodes_of_class(nodes.Call)):
            return False  # no layer runs under its no_grad either: nothing says it is an inference
    return True


def frozen_receivers(scope: nodes.NodeNG, false_names: FrozenSet[str] = frozenset()) -> Set[str]:
    """Texts of the models frozen in ``scope``: ``X.requires_grad_(False)`` and
    ``for p in X.parameters(): p.requires_grad = False``; a name of ``false_names`` (a constructor's
    parameter bound to False) counts as False."""
    found: Set[str] = set()
    for call in _own_nodes(scope, nodes.Call):
        if infer.method_name(call) == "requires_grad_" and call.args:
            flag = call.args[0]
            if _is_false(flag, false_names):
                # ``sampler.eval().requires_grad_(False)`` freezes ``sampler``
                receiver = model_flow.strip_wrappers(call.func.expr)  # type: ignore[union-attr]
                found.add(dataflow.binding_text(unwrap(receiver)))
    for assign in _own_nodes(scope, nodes.Assign):
        if not _is_false(assign.value, false_names):
            continue
        for target in assign.targets:
            if not (isinstance(target, nodes.AssignAttr) and target.attrname == "requires_grad"):
                continue
            loop = target.parent
            while loop is not None and not isinstance(loop, nodes.For):
                loop = loop.parent
            iterable = loop.iter if isinstance(loop, nodes.For) else None
            if (
                isinstance(iterable, nodes.Call)
                and infer.method_name(iterable) in ("parameters", "named_parameters")
                and isinstance(target.expr, nodes.Name)
            ):
                found.add(dataflow.binding_text(unwrap(iterable.func.expr)))  # type: ignore[union-attr]
    return found


def _is_false(value: nodes.NodeNG, false_names: FrozenSet[str]) -> bool:
    if isinstance(value, nodes.Const):
        return value.value is False
    return isinstance(value, nodes.Name) and value.name in false_names


def _words(name: str) -> List[str]:
    return [w.lower() for w in _WORD.findall(name)]


def eval_named(func: nodes.FunctionDef) -> bool:
    if pytest_function(func):
        return False  # the name says what is tested (``test_inference_mode_...``), not that it evaluates
    all_words = set(_words(func.name))
    words = all_words & EVAL_FUNCTION_WORDS
    if not words or all_words & TRAINING_QUANTITY_WORDS:
        return False
    if words <= TEST_WORDS and next(func.nodes_of_class((nodes.For, nodes.While)), None) is None:
        return False  # a pytest function or a model file's shape smoke test, not an evaluation loop
    return True


def split_words(expr: nodes.NodeNG) -> bool:
    texts: List[str] = []
    for node in [expr] + list(expr.nodes_of_class((nodes.Name, nodes.Attribute, nodes.Const))):
        if isinstance(node, nodes.Name):
            texts.append(node.name)
        elif isinstance(node, nodes.Attribute):
            texts.append(node.attrname)
        elif isinstance(node, nodes.Const) and isinstance(node.value, str):
            texts.append(node.value)
    for text in texts:
        for word in _words(text):
            if word in EVAL_SPLIT_WORDS:
                return True
            if any(word.startswith(split) and word[len(split):] in SPLIT_SUFFIXES for split in EVAL_SPLIT_WORDS):
                return True
    return False


def split_loop(call: nodes.Call) -> Optional["loops.Loop"]:
    """The innermost enclosing ``for`` loop that iterates a validation / test split."""
    for loop in loops.enclosing_loops(call):
        if isinstance(loop, nodes.For) and split_words(loop.iter):
            return loop
    return None


_TAKES_GRADIENTS: "Dict[nodes.NodeNG, bool]" = memo.per_file()


def takes_gradients(unit: nodes.NodeNG) -> bool:
    """A function or a loop calls backward(), autograd.grad or requires_grad_ (``uses_gradients``),
    in its body or in the helpers of the file it calls; asked once per unit and file."""
    found = _TAKES_GRADIENTS.get(unit)
    if found is None:
        if isinstance(unit, (nodes.For, nodes.While)):
            calls = loops.loop_calls(unit)
        else:
            calls = loops.calls_in(list(unit.body))  # type: ignore[attr-defined]
        found = _TAKES_GRADIENTS[unit] = any(uses_gradients(c) for c in calls)
    return found


#: Why a forward is an evaluation (``evidence``): the reason, and the function, loop or model text it names.
Evidence = Tuple[str, object]


def evidence(
    call: nodes.Call, func: Optional[nodes.FunctionDef], mode: Optional[Tuple[str, str]]
) -> Optional[Evidence]:
    """Why the forward ``call`` (in ``func``, the model's last switch ``mode`` before it, from
    ``mode_before``) evaluates, or None: ``("named", func)`` in a function named for an evaluation
    and not switched to train(); ``("split", loop)`` in a loop over a held-out split; ``("eval",
    model text)`` after the model's eval().  Each needs a unit (that function or loop) that takes no
    gradients (``takes_gradients``)."""
    if func is not None and eval_named(func) and not takes_gradients(func):
        if mode is None or mode[0] != "train":
            return "named", func
    loop = split_loop(call)
    if loop is not None and not takes_gradients(loop):
        return "split", loop
    if mode is not None and mode[0] == "eval":
        unit = loops.innermost(call) or func
        if unit is not None and not takes_gradients(unit):
            return "eval", mode[1]
    return None


def has_eval_calls(scope: nodes.NodeNG) -> bool:
    """Any ``x.eval()``/``x.train(False)`` in the function (or the module body and its functions)."""
    for call in scope.nodes_of_class(nodes.Call):
        method = infer.method_name(call)
        if method == "eval" or (method == "train" and call.args and isinstance(call.args[0], nodes.Const)):
            return True
    return False


def model_expression(call: nodes.Call) -> nodes.NodeNG:
    func = call.func
    if isinstance(func, nodes.Attribute) and func.attrname == "forward":
        return func.expr
    return func


def model_method(call: nodes.Call) -> bool:
    """``call`` runs a method of a model that is a forward pass under another name.

    Read: a method of an ``nn.Module`` class of the project that runs the model's submodules
    (``model.predict(u, items)``, ``model.incremental_forward(x)``), not ``forward`` itself, a mode
    switch, a dunder, a method that runs no submodule (``model.init_hidden(n)``) or a library's.
    Unread (the receiver's class is not in the files read, as for a model built by a builder
    module of the project that was not found): a method named for a forward
    (:data:`FORWARD_METHOD_WORDS`: ``incremental_forward``, ``forward_features``) of a receiver that
    is a model (``models.kind``) or an unresolved one named like a model; the rule asks for an
    ``eval()`` switch or a held-out split on top.  ``predict``/``generate``/``encode`` of a class
    not read are left alone: libraries commonly run those under ``no_grad`` themselves."""
    func = call.func
    if not isinstance(func, nodes.Attribute) or func.attrname == "forward" or func.attrname.startswith("__"):
        return False
    if func.attrname in NOT_FORWARD_METHODS:
        return False
    method = infer.function_def(func) or _method_of_argument(func) or _method_of_constructed(func)
    if method is None:
        return _unread_forward(func)
    if not method.is_method():
        return False
    klass = method.parent.frame()
    if not isinstance(klass, nodes.ClassDef) or not param_count.is_module_class(klass):
        return False
    if not loops.of_project(method, call):
        return False  # a library's method (``generate`` of a pretrained model): not read here
    return _runs_submodules(method, 2)


#: Words of a method name that make it a forward pass when its class is not read.
FORWARD_METHOD_WORDS = frozenset({"forward"})


def _unread_forward(func: nodes.Attribute) -> bool:
    """``model.incremental_forward`` where ``model`` resolves to no class (only its name or its
    reaching assignments say it is a model) and the method is named for a forward."""
    if not set(_words(func.attrname)) & FORWARD_METHOD_WORDS:
        return False
    if infer.safe_infer(func.expr) is not None:
        return False  # resolved to something whose method was not found: not this case
    return models.kind(func.expr) == models.MODEL or models.model_named(func.expr)


def _method_of_constructed(func: nodes.Attribute) -> Optional[nodes.FunctionDef]:
    """For ``model.method`` on a model whose one class is known from how it was built
    (``models.model_classes``: ``ScoreModel.load_from_checkpoint(path)`` included), that class's method."""
    classes = models.model_classes(func.expr)
    if not classes or len({c.qname() for c in classes}) != 1:
        return None
    return infer.class_method(classes[0], func.attrname)


def _method_of_argument(func: nodes.Attribute) -> Optional[nodes.FunctionDef]:
    """For ``model.predict`` on a parameter ``model``: the method that every in-file call site's
    argument resolves to (``evaluate(model, users)`` with ``model = Rec()`` there, or a parameter
    of the caller bound the same way one level up), or None."""
    classes = _argument_classes(func.expr, 2)
    if not classes or len({c.qname() for c in classes}) != 1:
        return None
    try:
        candidates = classes[0].getattr(func.attrname)
    except (AstroidError, RecursionError):
        return None
    return candidates[0] if candidates and isinstance(candidates[0], nodes.FunctionDef) else None


def _argument_classes(expr: nodes.NodeNG, depth: int) -> Optional[List[nodes.ClassDef]]:
    """The classes of the instances every in-file call site passes for the parameter ``expr``."""
    if not isinstance(expr, nodes.Name) or depth <= 0:
        return None
    arguments = infer.parameter_arguments(expr)
    if not arguments:
        return None
    classes: List[nodes.ClassDef] = []
    for argument in arguments:
        value = infer.safe_infer(argument)
        if isinstance(value, Instance) and not isinstance(value, (BoundMethod, UnboundMethod)):
            if not isinstance(value._proxied, nodes.ClassDef):
                return None
            classes.append(value._proxied)
            continue
        inner = _argument_classes(argument, depth - 1)
        if not inner:
            return None
        classes.extend(inner)
    return classes


def _dispatched(forward: nodes.FunctionDef, call: nodes.Call) -> nodes.FunctionDef:
    """The method of its own that ``forward`` hands the call to, when its body only dispatches on a
    flag the call fixes (``if not reverse: return self.normal_flow(...) else: return
    self.reverse_flow(...)`` called with ``reverse=True``); ``forward`` itself otherwise."""
    body = [s for s in forward.body if not (isinstance(s, nodes.Expr) and isinstance(s.value, nodes.Const))]
    if len(body) != 1 or not isinstance(body[0], nodes.If):
        return forward
    test, negated = body[0].test, False
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        test, negated = test.operand, True
    if not isinstance(test, nodes.Name) or test.name not in forward.argnames():
        return forward
    flag = _flag_value(forward, call, test.name)
    if flag is None:
        return forward
    taken = body[0].body if bool(flag) != negated else body[0].orelse
    if len(taken) != 1 or not isinstance(taken[0], nodes.Return) or not isinstance(taken[0].value, nodes.Call):
        return forward
    func = taken[0].value.func
    if not (isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == "self"):
        return forward
    inner = infer.own_method(forward.parent, func.attrname) if isinstance(forward.parent, nodes.ClassDef) else None
    return inner if inner is not None else forward


def _flag_value(method: nodes.FunctionDef, call: nodes.Call, name: str) -> Optional[object]:
    """The constant ``call`` binds to the parameter ``name`` of ``method`` (a keyword, a position after
    ``self``, or the parameter's default); None when it is not a constant."""
    positional = [a.name for a in method.args.args or ()][1:]  # after ``self``
    value = infer.argument(call, name, positional.index(name) if name in positional else None)
    unpacked = any(isinstance(a, nodes.Starred) for a in call.args) or any(k.arg is None for k in call.keywords or ())
    if value is None and not unpacked:
        try:
            value = method.args.default_value(name)  # not passed (no ``*args``/``**kwargs`` that may hold it)
        except (AstroidError, LookupError):
            value = None
    return value.value if isinstance(value, nodes.Const) else None


def _runs_submodules(method: nodes.FunctionDef, depth: int) -> bool:
    """``method`` calls ``self(...)``, ``self.forward(...)``, a submodule with parameters
    (``self.decoder(...)``), or a method of its own that does (``depth`` levels), with autograd on
    there (not under its own ``no_grad``)."""
    for call in method.nodes_of_class(nodes.Call):
        func = call.func
        if grad.grad_disabled(call):
            continue
        if isinstance(func, nodes.Name) and func.name == "self":
            return True
        if not (isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == "self"):
            continue
        if func.attrname == "forward" or models.kind(func) == models.MODEL:
            return True
        if depth > 1 and func.attrname not in NOT_FORWARD_METHODS:
            inner = infer.function_def(func)
            if inner is not None and inner is not method and inner.is_method() and _runs_submodules(inner, depth - 1):
                return True
    return False


def unwrap(expr: nodes.NodeNG) -> nodes.NodeNG:
    """``model`` for ``model.module`` (a wrapper's inner model)."""
    while isinstance(expr, nodes.Attribute) and expr.attrname == "module":
        expr = expr.expr
    return expr


def mode_before(call: nodes.Call, model: nodes.NodeNG, scope: nodes.NodeNG) -> Optional[Tuple[str, str]]:
    """(``"eval"``/``"train"``, receiver text) of the last ``<model>.eval()``/``.train()`` before
    ``call`` in its function (a call on ``model`` also switches ``model.head``)."""
    return mode_before_text(call, dataflow.binding_text(unwrap(model)), scope)


def mode_before_text(call: nodes.Call, wanted: str, scope: nodes.NodeNG) -> Optional[Tuple[str, str]]:
    """:func:`mode_before` for a model named by its text (``wanted``) in ``call``'s function."""
    child: nodes.NodeNG = call
    parent = call.parent
    while parent is not None:
        before: List[nodes.NodeNG] = []
        for field in ("body", "orelse", "handlers", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and child in block:
                before = block[: block.index(child)]
                break
        for stmt in reversed(before):
            found = _last_mode_call(stmt, wanted)
            if found is not None:
                return found
        if parent is scope:
            return None
        child = parent
        parent = parent.parent
    return None


# ---------------------------------------------------------------- a shared train/eval pass
def eval_pass_call(forward: nodes.Call, func: nodes.FunctionDef, model: nodes.NodeNG) -> Optional[nodes.Call]:
    """A call in the file of ``func``, a train/eval pass shared by both phases (it takes gradients
    under a condition on its parameters: ``if is_train: loss.backward()``), that runs it as an
    evaluation: with that call's constant arguments (and the defaults it leaves) every gradient use
    of ``func`` is skipped and ``forward`` still runs, and ``model`` is in eval mode there (switched
    in ``func`` on the flag before ``forward``, or by the caller before the call).  None otherwise."""
    if not any(uses_gradients(c) for c in loops.calls_in(list(func.body))):
        return None  # not a shared pass: the ordinary evidence decides
    for site in loops.call_sites(func):
        if grad.grad_disabled(site) or not (repeats(forward) or repeats(site)):
            continue
        reached = modes.calls_when_called(func, site)
        if not any(c is forward for c, _ in reached) or _takes_gradients(reached):
            continue
        frame = next(f for c, f in reached if c is forward)
        wanted = modes.caller_text(unwrap(model), frame)
        if wanted is None:
            continue
        if _switched_before(forward, reached, wanted):
            return site
        caller = loops.enclosing_function(site) or site.root()
        mode = mode_before_text(site, wanted, caller)
        if mode is not None and mode[0] == "eval":
            return site
    return None


def _takes_gradients(reached: "List[Tuple[nodes.Call, modes.Frame]]") -> bool:
    """A reached call uses gradients, itself or in a helper of the file it calls."""
    for call, _ in reached:
        if uses_gradients(call):
            return True
        helper = loops.local_helper(call)
        if helper is not None and any(uses_gradients(c) for c in loops.calls_in(list(helper.body))):
            return True
    return False


def _switched_before(forward: nodes.Call, reached: "List[Tuple[nodes.Call, modes.Frame]]", wanted: str) -> bool:
    """An eval switch on ``wanted`` (or a module holding it) among the calls reached before ``forward``."""
    for call, frame in reached:
        if call is forward:
            return False
        if not (isinstance(call.func, nodes.Attribute) and modes.switches_to_eval(call, frame)):
            continue
        receiver = modes.caller_text(unwrap(call.func.expr), frame)
        if receiver is not None and (wanted == receiver or wanted.startswith(receiver + ".")):
            return True
    return False


def _last_mode_call(stmt: nodes.NodeNG, wanted: str) -> Optional[Tuple[str, str]]:
    result: Optional[Tuple[Tuple[int, int], Tuple[str, str]]] = None
    for call in infer.iter_calls(stmt):
        method = infer.method_name(call)
        if method not in MODE_METHODS:
            continue
        receiver = dataflow.binding_text(unwrap(call.func.expr))  # type: ignore[union-attr]
        if wanted != receiver and not wanted.startswith(receiver + "."):
            continue  # model.eval() also switches model.head
        mode = "eval" if method == "eval" else "train"
        if method == "train" and call.args and isinstance(call.args[0], nodes.Const) and call.args[0].value is False:
            mode = "eval"
        key = (call.lineno or 0, call.col_offset or 0)
        if result is None or key > result[0]:
            result = (key, (mode, receiver))
    return result[1] if result is not None else None


# ---------------------------------------------------------------- forwards that run once
_COMPREHENSIONS = (nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)

#: Methods that only move or cast a tensor (``torch.ones(1, 3, 8, 8).cuda()`` is still a dummy input).
_MOVES = device.TRANSFER_METHODS | origins.SHAPE_METHODS | frozenset({"long", "int", "bool"})


def repeats(node: nodes.NodeNG) -> bool:
    """``node`` runs more than once per call of its function: in a ``for``/``while`` body, or in a
    comprehension (``[model(x) for x in loader]``)."""
    if loops.enclosing_loops(node):
        return True
    scope = node.scope()
    return isinstance(scope, _COMPREHENSIONS) and not _in_first_iterable(node, scope)


def _in_first_iterable(node: nodes.NodeNG, comprehension: nodes.NodeNG) -> bool:
    """``node`` is part of the first ``for`` clause's iterable (evaluated once, in the outer scope)."""
    generators = getattr(comprehension, "generators", None) or []
    return bool(generators) and (node is generators[0].iter or loops.inside(node, generators[0].iter))


def dummy_input(call: nodes.Call) -> bool:
    """Every argument of the forward is a tensor built in place by a factory (``torch.ones(1, 3, 64, 64)``,
    moved or cast): a warm-up or a shape probe, not data."""
    arguments = _arguments(call)
    return bool(arguments) and all(_always(a, _made_in_place) for a in arguments)


def _made_in_place(expr: nodes.NodeNG) -> bool:
    """A factory's tensor, or one wrapped in ``Variable(...)`` (PyTorch 0.3's wrapper of the same tensor)."""
    if factory_call(expr):
        return True
    return (
        isinstance(expr, nodes.Call) and bool(expr.args) and infer.dotted_name(expr.func) == VARIABLE
        and _always(expr.args[0], factory_call)
    )


def speed_check(call: nodes.Call) -> bool:
    """The forward is a speed or smoke check in a file that trains nothing, not an evaluation: on a
    dummy input (``dummy_input``) in the ``__main__`` block of a file that defines a module class (the
    model file's own check), or with its output never read (``discarded``) on a dummy input or in a
    function that reads a clock (``t1 = time.time(); y = net(x); t2 = time.time()``, and its warm-up loop)."""
    from . import entrypoint  # entrypoint imports this module

    module = call.root()
    if training_step.file_trains(module):
        return False
    made_up = dummy_input(call)
    if made_up and any(entrypoint.is_main_guard(s) and loops.inside(call, s) for s in module.body):
        if any(param_count.is_module_class(k) for k in module.body if isinstance(k, nodes.ClassDef)):
            return True
    if not discarded(call):
        return False
    if made_up:
        return True
    scope = loops.enclosing_function(call) or module  # the timed loop and its warm-up loop
    return any(entrypoint.measures(c) for c in scope.nodes_of_class(nodes.Call))


def discarded(call: nodes.Call) -> bool:
    """The forward's output is never read: a statement of its own, or assigned to a name no later
    code reads (``_ = flops_model(**inputs)``).  Such a forward runs for its side effects (hooks that
    count FLOPs or record shapes, a warm-up), not to evaluate anything."""
    if isinstance(call.parent, nodes.Expr):
        return True
    target = dataflow.assigned_name(call)
    return target is not None and not dataflow.name_uses(target)


def returned_as_is(call: nodes.Call) -> bool:
    """The forward's output is what its function returns, unchanged: ``return self.model(x)``, an
    element of a returned tuple, or a name bound to it that is read only there (``out = net(x)``,
    ``return out``).  Whether its graph is used is decided by the callers (a policy's ``predict(s)``
    whose output feeds the loss)."""
    if _in_return(call):
        return True
    target = dataflow.assigned_name(call)
    uses = dataflow.name_uses(target) if target is not None else []
    return bool(uses) and all(_in_return(use) for use in uses)


def _in_return(node: nodes.NodeNG) -> bool:
    parent = node.parent
    if isinstance(parent, nodes.Tuple):
        parent = parent.parent
    return isinstance(parent, nodes.Return)


# ``Variable(x, volatile=True)`` (torch_names.VARIABLE) switched autograd off for every operation
# reading it, the way ``no_grad`` does since 0.4 (which ignores ``volatile``).


def volatile_input(call: nodes.Call) -> bool:
    """An argument of the forward is ``Variable(x, volatile=True)`` (inline, or every assignment
    reaching the name, moves and casts left aside): in the PyTorch the file is written for (0.3 and
    before) the forward builds no graph, an inference forward."""
    return any(_volatile(a, VOLATILE_HOPS) for a in _arguments(call))


#: How many assignments and operations ``_volatile`` follows back from a forward's argument.
VOLATILE_HOPS = 8


def _volatile(expr: nodes.NodeNG, hops: int) -> bool:
    """``expr`` is volatile in PyTorch 0.3: ``Variable(x, volatile=True)`` (``_always``: every value reaching
    a name), a volatile variable a project helper returns (``_volatile_returned``), or the result of any
    operation or call one of whose inputs is volatile (the rule of that version: ``torch.cat([data,
    data_oe])``, ``output.view(-1, n)``, ``model.decoder(output)`` of a forward's volatile output)."""
    if _always(expr, _volatile_variable) or _volatile_returned(expr):
        return True
    if hops <= 0:
        return False
    if isinstance(expr, nodes.Name):
        unpacked = dataflow.unpacked_from_call(expr)
        if unpacked is not None:
            return _volatile(unpacked[0], hops - 1)  # ``output, hidden = model(data, hidden)``
        values = _reaching(expr)
        return bool(values) and all(_volatile(value, hops - 1) for value in values)  # type: ignore[union-attr]
    if isinstance(expr, nodes.Call):
        inputs = _arguments(expr)
        if isinstance(expr.func, nodes.Attribute) and not isinstance(infer.safe_infer(expr.func.expr), nodes.Module):
            inputs.append(expr.func.expr)  # a method of a tensor or of a module's output: ``output.view(...)``
    elif isinstance(expr, (nodes.BinOp, nodes.Subscript, nodes.Attribute, nodes.Starred)):
        inputs = list(expr.get_children())
    else:
        return False
    flat: List[nodes.NodeNG] = []
    for item in inputs:
        flat.extend(item.elts if isinstance(item, (nodes.List, nodes.Tuple)) else [item])
    return any(_volatile(item, hops - 1) for item in flat)


def _volatile_returned(expr: nodes.NodeNG) -> bool:
    """``expr`` is a name unpacked from a call of a function of the project whose every return puts,
    in that place, ``Variable(..., volatile=flag)`` with the flag true for that call: a literal
    ``True``, or a parameter the call passes ``True`` for or whose default is ``True``
    (``data, targets = get_batch(source, i, evaluation=True)`` where ``get_batch`` returns
    ``Variable(source[i:j], volatile=evaluation), target``)."""
    unpacked = dataflow.unpacked_from_call(expr) if isinstance(expr, nodes.Name) else None
    if unpacked is None or not isinstance(unpacked[0].func, (nodes.Name, nodes.Attribute)):
        return False
    call, index, count = unpacked
    func = _called_function(call)
    if func is None:
        return False
    params = _parameters(func)
    returns = dataflow.returned_values(func, bare=True)
    for value in returns:
        if not isinstance(value, nodes.Tuple) or len(value.elts) != count:
            return False
        element = value.elts[index]
        if isinstance(element, nodes.Name):
            values = dataflow.assigned_values(element)
            element = values[0] if values and len(values) == 1 else element
        if not (isinstance(element, nodes.Call) and infer.dotted_name(element.func) == VARIABLE):
            return False
        flag = infer.argument(element, "volatile", 2)
        if isinstance(flag, nodes.Name) and flag.name in params:
            passed = infer.argument(call, flag.name, params.index(flag.name))
            flag = passed if passed is not None else infer.parameter_default(flag)
        if not (isinstance(flag, nodes.Const) and flag.value is True):
            return False
    return bool(returns)


def single_item_input(call: nodes.Call) -> bool:
    """The forward's input (its first positional argument) is one item made a batch of one in place:
    ``x[None]``, ``x.unsqueeze(0)``, ``torch.unsqueeze(x, 0)``, ``x.view(1, ...)``, a tensor of a
    one-element literal (``torch.LongTensor([[token]])``), or a column of such a batch
    (``seq[:, i]``); moved, cast or wrapped in ``Variable(...)``, inline or in every assignment
    reaching the name.  A batch built by a factory from a shape (``torch.zeros(1, 1, 1)``) is not an
    item.  Such a forward records one item's graph: a decoding step, one observation of an agent, one
    sentence translated."""
    return bool(call.args) and _batch_of_one(call.args[0], 3)


#: Methods that move or cast a tensor without changing its shape.
_CASTS = device.TRANSFER_METHODS | frozenset(
    {"float", "double", "half", "bfloat16", "long", "int", "bool", "contiguous", "detach"}
)


def _batch_of_one(expr: nodes.NodeNG, hops: int) -> bool:
    while isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute) and expr.func.attrname in _CASTS:
        expr = expr.func.expr
    if isinstance(expr, nodes.Name):
        values = _reaching(expr) if hops > 0 else None
        return bool(values) and all(_batch_of_one(v, hops - 1) for v in values)  # type: ignore[union-attr]
    if isinstance(expr, nodes.IfExp):
        return _batch_of_one(expr.body, hops) and _batch_of_one(expr.orelse, hops)
    if isinstance(expr, nodes.Subscript):
        index = expr.slice
        first = index.elts[0] if isinstance(index, nodes.Tuple) and index.elts else index
        if isinstance(first, nodes.Const) and first.value is None:
            return True  # ``x[None]``, ``x[None, :]``
        full = isinstance(first, nodes.Slice) and first.lower is None and first.upper is None and first.step is None
        return full and isinstance(index, nodes.Tuple) and _batch_of_one(expr.value, hops)  # ``seq[:, i]``
    if not isinstance(expr, nodes.Call):
        return False
    if infer.dotted_name(expr.func) == VARIABLE:
        return bool(expr.args) and _batch_of_one(expr.args[0], hops)
    dotted = infer.dotted_name(expr.func) or ""
    if dotted == "torch.unsqueeze":
        return _is_zero(infer.argument(expr, "dim", 1))
    method = infer.method_name(expr)
    if method == "unsqueeze" and isinstance(expr.func, nodes.Attribute):
        return _is_zero(infer.argument(expr, "dim", 0))
    if method in ("view", "reshape") and isinstance(expr.func, nodes.Attribute) and expr.args:
        return isinstance(expr.args[0], nodes.Const) and expr.args[0].value == 1
    data = expr.args[0] if len(expr.args) == 1 else None
    return dotted.startswith("torch.") and isinstance(data, (nodes.List, nodes.Tuple)) and len(data.elts) == 1


def _is_zero(node: Optional[nodes.NodeNG]) -> bool:
    return isinstance(node, nodes.Const) and node.value == 0 and not isinstance(node.value, bool)


def _arguments(call: nodes.Call) -> List[nodes.NodeNG]:
    return list(call.args) + [kw.value for kw in call.keywords or ()]


def factory_call(expr: nodes.NodeNG) -> bool:
    """``expr`` builds a tensor in place from a shape (``torch.randn(N, D)``, ``torch.ones(...)``)."""
    return isinstance(expr, nodes.Call) and infer.dotted_name(expr.func) in TENSOR_FACTORIES


def _volatile_variable(expr: nodes.NodeNG) -> bool:
    if not (isinstance(expr, nodes.Call) and infer.dotted_name(expr.func) == VARIABLE):
        return False
    flag = infer.argument(expr, "volatile", 2)
    return isinstance(flag, nodes.Const) and flag.value is True


def _always(expr: nodes.NodeNG, made: Callable[[nodes.NodeNG], bool], hops: int = 3) -> bool:
    """``made`` holds for ``expr`` once moves and casts are stripped (``torch.ones(...).cuda()``),
    inline or for every assignment reaching a name, unpacked literal tuples included
    (``x = torch.rand(...)`` then ``if use_gpu: x = x.cuda()``; ``x, y = Variable(x, ...), y``), or
    both arms of an ``if``/``else`` that rebinds a loop target (``dataflow.branch_values``)."""
    expr = _unmoved(expr)
    passed = moved_argument(expr) if hops > 0 else None
    if passed is not None:
        return _always(passed, made, hops - 1)  # ``self.get_torch_variable(torch.randn(...))``
    if isinstance(expr, nodes.Name) and hops > 0:
        values = _reaching(expr)
        return bool(values) and all(_always(value, made, hops - 1) for value in values)  # type: ignore[union-attr]
    return made(expr)


def _reaching(name: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """The values that may reach ``name`` (its assignments, unpacked literal tuples included, or both
    arms of an ``if``/``else`` that rebinds it), the ones that only move or cast the name itself aside
    when others remain (``x = x.cuda()``: the other values decide)."""
    values = dataflow.assigned_values(name, unpack=True) or dataflow.branch_values(name)
    others = [v for v in values or () if not _moves_name(v, name.name)]
    return others or values


def _called_function(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """The function of the file or of another module of the project that ``call`` runs, or None."""
    func = infer.function_def(call.func)
    return func if func is not None and loops.of_project(func, call) else None


def _parameters(func: nodes.FunctionDef) -> List[str]:
    """The names of ``func``'s positional parameters a call passes (``self`` of a method aside)."""
    params = [a.name for a in func.args.args or []]
    return params[1:] if func.is_method() and func.type == "method" else params


def moved_argument(expr: nodes.NodeNG) -> Optional[nodes.NodeNG]:
    """For a call of a function or method of the project whose every return is its one parameter moved,
    cast or wrapped in ``Variable`` (``def get_torch_variable(self, arg): return Variable(arg).cuda()``),
    the argument the call passes; None otherwise."""
    if not isinstance(expr, nodes.Call) or not isinstance(expr.func, (nodes.Name, nodes.Attribute)):
        return None
    func = _called_function(expr)
    if func is None:
        return None
    params = _parameters(func)
    if len(params) != 1 or func.args.vararg or func.args.kwarg:
        return None
    returns = dataflow.returned_values(func, bare=True)
    if not returns or not all(_unwrapped_name(r) == params[0] for r in returns):
        return None
    return infer.argument(expr, params[0], 0)


def _unwrapped_name(value: Optional[nodes.NodeNG]) -> Optional[str]:
    value = _unmoved(value) if value is not None else None
    if isinstance(value, nodes.Call) and value.args and infer.dotted_name(value.func) == VARIABLE:
        value = _unmoved(value.args[0])
    return value.name if isinstance(value, nodes.Name) else None


def _moves_name(value: nodes.NodeNG, name: str) -> bool:
    """``value`` is the name ``name`` moved or cast (``x.cuda()`` assigned back to ``x``)."""
    inner = _unmoved(value)
    return isinstance(inner, nodes.Name) and inner.name == name


def _unmoved(expr: nodes.NodeNG) -> nodes.NodeNG:
    """``expr`` with its moves and casts stripped (``torch.ones(...).cuda()``: ``torch.ones(...)``)."""
    while isinstance(expr, nodes.Call) and infer.method_name(expr) in _MOVES and isinstance(expr.func, nodes.Attribute):
        expr = expr.func.expr
    return expr


def enables_grad(node: nodes.NodeNG) -> bool:
    """``node`` runs inside ``with torch.enable_grad():`` (or ``set_grad_enabled(True)``) in its
    function: whoever runs it there wants the graph."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
        if isinstance(parent, nodes.With) and child in parent.body:
            for item, _ in parent.items:
                if isinstance(item, nodes.Call) and _turns_grad_on(item):
                    return True
        child, parent = parent, parent.parent
    return False


def _turns_grad_on(item: nodes.Call) -> bool:
    name = infer.dotted_name(item.func)
    if name in ("torch.enable_grad", "torch.autograd.enable_grad"):
        return True
    if name == "torch.set_grad_enabled":
        flag = infer.argument(item, "mode", 0)
        return isinstance(flag, nodes.Const) and flag.value is True
    return False


# ---------------------------------------------------------------- pytest functions
#: Modules whose import makes a file a test module (its ``test_*`` functions are test cases).
TEST_FRAMEWORKS = frozenset({"pytest", "unittest"})


def pytest_function(func: nodes.FunctionDef) -> bool:
    """A ``test_*`` function collected by pytest/unittest: in a test module (``test_*.py``,
    ``*_test.py``, or a file importing pytest/unittest) or a method of a ``Test*`` class.  Its name
    describes what it tests (``test_inference_mode_...``), not an evaluation pass."""
    if not func.name.startswith("test_"):
        return False
    klass = func.parent.frame() if isinstance(func.parent, nodes.ClassDef) else None
    if klass is not None and isinstance(klass, nodes.ClassDef) and klass.name.startswith("Test"):
        return True
    return test_module(func.root())


def reported_code(node: nodes.NodeNG) -> bool:
    """Findings on ``node`` are reported: it is not in a unit test (``in_unit_test``), its module is code
    the project ships (``shipped_module``), and no import of the project's own code that fails stops the
    functions around it before it runs (``project.missing_import_before``)."""
    return (
        not in_unit_test(node)
        and shipped_module(node.root())
        and project.missing_import_before(node) is None
        and not in_unused_class(node)
        and not in_template(node)
        and not raises_before(node)
    )


#: Statements that run whole when they run (a compound statement's body may not run).
SIMPLE_STATEMENTS = (nodes.Expr, nodes.Assign, nodes.AnnAssign, nodes.AugAssign, nodes.Return)


def raises_before(node: nodes.NodeNG) -> bool:
    """A call that always runs before ``node`` in its function (or module), in a simple statement ahead of
    it or in the test of an ``if`` around it, passes an argument its callee does not take
    (``loops.rejected_argument``): the TypeError stops the code before ``node`` runs
    (``dataset = AFADDataset(root, transforms=t)`` for a class taking ``transform``, then the loaders)."""
    statement = node.statement()
    key = id(statement)
    if key not in _RAISES:
        _RAISES[key] = any(
            loops.rejected_argument(call) is not None
            for earlier in loops.run_before(node)
            if isinstance(earlier, SIMPLE_STATEMENTS) or not earlier.is_statement
            for call in infer.iter_calls(earlier)
        )
    return _RAISES[key]


_RAISES: "Dict[int, bool]" = memo.per_file()


def in_template(node: nodes.NodeNG) -> bool:
    """``node`` is in a function (or a module's top level) that holds a ``...`` statement beside other
    code, or binds a name to ``...``: a skeleton whose logic is left for its reader to fill (``for batch
    in loader: ...`` then ``loss.backward()`` on a placeholder loss; ``lr_scheduler = ...``), not a run.  A function whose whole body is ``...`` (a
    stub, an abstract method) holds nothing to report."""
    scope: Optional[nodes.NodeNG] = node.frame()
    while scope is not None:
        if isinstance(scope, (nodes.FunctionDef, nodes.Module)):
            key = id(scope)
            if key not in _TEMPLATES:
                _TEMPLATES[key] = _holds_placeholder(scope)
            if _TEMPLATES[key]:
                return True
        scope = scope.parent.frame() if scope.parent is not None else None
    return False


_TEMPLATES: "Dict[int, bool]" = memo.per_file()


def _holds_placeholder(scope: Union[nodes.FunctionDef, nodes.Module]) -> bool:
    body = [s for s in scope.body if not (isinstance(s, nodes.Expr) and isinstance(s.value, nodes.Const)
                                          and isinstance(s.value.value, str))]  # the docstring
    kinds = (nodes.Expr, nodes.Assign)
    for statement in scope.nodes_of_class(kinds, skip_klass=(nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
        if isinstance(statement.value, nodes.Const) and statement.value.value is Ellipsis:
            if not (statement.parent is scope and len(body) == 1):
                return True  # ``...`` beside other code, or ``lr_scheduler = ...``
    return False


def in_unused_class(node: nodes.NodeNG) -> bool:
    """``node`` is in a class of a module of an application (a project that is no installable package)
    that nothing uses: a class of the module's top level, with no decorator (a registry's), that no
    statement of its own module outside the class names, nor any other file of the project
    (``project.named_elsewhere``: modules, notebooks, configurations, scripts, documents).  A model file
    keeping a legacy variant that no run builds (``class sinc_conv`` beside the ``SincConv_fast`` the
    model uses).  Unknown (the file seen alone, no other module) is not unused."""
    klass = node if isinstance(node, nodes.ClassDef) else node.frame()
    while isinstance(klass, nodes.FunctionDef) or (
        isinstance(klass, nodes.ClassDef) and not isinstance(klass.parent, nodes.Module)
    ):
        klass = klass.parent.frame() if klass.parent is not None else None
    if not isinstance(klass, nodes.ClassDef) or klass.decorators is not None:
        return False
    module = klass.root()
    path = getattr(module, "file", None)
    if not path or project.packaged(str(path)):
        return False
    key = id(klass)
    if key not in _UNUSED:
        _UNUSED[key] = not named_in_module(klass) and project.named_elsewhere(klass.name, str(path)) is False
    return _UNUSED[key]


_UNUSED: "Dict[int, bool]" = memo.per_file()


def _in_all(const: nodes.Const) -> bool:
    assign = const.parent.parent if isinstance(const.parent, (nodes.List, nodes.Tuple)) else None
    return isinstance(assign, nodes.Assign) and any(
        isinstance(t, nodes.AssignName) and t.name == "__all__" for t in assign.targets
    )


def named_in_module(definition: "nodes.ClassDef | nodes.FunctionDef") -> bool:
    """A statement of the module of a class or function, outside it, names it (a name, an attribute, a
    string: a registry, ``getattr(module, "evaluate")``; not the module's ``__all__``, which only exports)."""
    wanted = definition.name.lower()
    for found in definition.root().nodes_of_class((nodes.Name, nodes.AssignName, nodes.Attribute, nodes.Const)):
        if isinstance(found, nodes.Const):
            if _in_all(found):
                continue  # ``__all__ = ["evaluate"]`` exports the name; the importers are read for its use
            text = found.value.lower() if isinstance(found.value, str) else ""
            hit = bool(re.search(r"\b{}\b".format(re.escape(wanted)), text))
        else:
            hit = (found.name if isinstance(found, (nodes.Name, nodes.AssignName)) else found.attrname).lower() == wanted
        if hit and not loops.inside(found, definition):
            return True
    return False


def in_unit_test(node: nodes.NodeNG) -> bool:
    """``node`` is inside a test function (``pytest_function``), nested functions included: code that
    runs once per test, on the test's own inputs, not a training or evaluation run."""
    scope = node.scope() if not isinstance(node, nodes.FunctionDef) else node
    while scope is not None and not isinstance(scope, nodes.Module):
        if isinstance(scope, nodes.FunctionDef) and pytest_function(scope):
            return True
        scope = scope.parent.scope() if scope.parent is not None else None
    return False


#: Folders that hold a project's test suite.
TEST_FOLDERS = frozenset({"test", "tests", "testing", "unittests"})

#: Folders of a project that hold scratch or backup copies, not the runs it ships (``Chapter10/tmp/00_pong_pg.py``;
#: ``breakout/bak/dqn.py`` beside the ``breakout/dqn.py`` that runs).
SCRATCH_FOLDERS = frozenset({
    "tmp", "temp", "scratch", "adhoc", "bak", "backup", "backups", "old", "archive", "archived", "deprecated",
    "obsolete", "unused",
})


def shipped_module(module: nodes.Module) -> bool:
    """The module is code the project ships and can run, where findings are reported: not its test suite
    (``test_suite_module``), not a scratch copy in a ``SCRATCH_FOLDERS`` folder of the project (below the
    folder holding its root marker; a file with no marked project is never taken for one), and not a
    file whose top-level import of the project's own code fails (``project.missing_import``: a stale
    script that stops with an ImportError before any of its code runs)."""
    if test_suite_module(module):
        return False
    path = getattr(module, "file", None)
    if not path:
        return True
    root = project.marked_root(str(path))
    if root is not None:
        relative = os.path.relpath(os.path.dirname(os.path.abspath(str(path))), root)
        if set(relative.split(os.sep)) & SCRATCH_FOLDERS:
            return False
    return project.missing_import(module) is None


def test_suite_module(module: nodes.Module) -> bool:
    """A module of the test suite: ``conftest.py``; a module named like a test (``test_*.py``,
    ``*_test.py``) in a ``test``/``tests`` folder or importing pytest/unittest; a module importing
    pytest/unittest in such a folder (the suite's shared helpers) or defining test cases (a
    ``unittest.TestCase`` subclass, ``test_*`` functions). Such a
    module holds tests and their helpers, run once on made-up inputs, not a training or evaluation run;
    a script named like a test elsewhere (``tools/test_net.py``) or one that only borrows
    ``unittest.mock`` is not one."""
    path = os.path.abspath(getattr(module, "file", None) or "")
    base = os.path.basename(path)
    if base == "conftest.py":
        return True
    framework = _imports_test_framework(module)
    in_folder = bool(set(os.path.dirname(path).split(os.sep)[-3:]) & TEST_FOLDERS)
    if base.startswith("test_") or base.endswith("_test.py"):
        return in_folder or framework
    return framework and (in_folder or _defines_tests(module))


def _defines_tests(module: nodes.Module) -> bool:
    for node in module.body:
        if isinstance(node, nodes.ClassDef) and any(
            base.as_string().split(".")[-1] == "TestCase" for base in node.bases
        ):
            return True
        if isinstance(node, nodes.FunctionDef) and node.name.startswith("test_"):
            return True
    return False


def _imports_test_framework(module: nodes.Module) -> bool:
    """An import of pytest or unittest (``unittest.mock``, a patching helper, is no test evidence)."""
    for node in module.body:
        if isinstance(node, nodes.Import) and any(
            n.split(".")[0] in TEST_FRAMEWORKS and not n.startswith("unittest.mock") for n, _ in node.names
        ):
            return True
        if isinstance(node, nodes.ImportFrom) and (node.modname or "").split(".")[0] in TEST_FRAMEWORKS:
            if not (node.modname or "").startswith("unittest.mock") and not (
                node.modname == "unittest" and all(name == "mock" for name, _ in node.names)
            ):
                return True
    return False


def test_module(module: nodes.Module) -> bool:
    """A test module: named ``test_*.py``, ``*_test.py`` or ``conftest.py``, or importing pytest/unittest."""
    base = os.path.basename(getattr(module, "file", None) or "")
    if base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py":
        return True
    return _imports_test_framework(module)


# ---------------------------------------------------------------- models built frozen (PEFT)
#: PEFT classes whose ``from_pretrained`` loads the adapter in inference mode (every parameter
#: frozen) unless ``is_trainable=True`` is passed.
PEFT_LOADED_FROZEN = re.compile(r"^peft(\.\w+)*\.(PeftModel\w*|AutoPeftModel\w*|PeftMixedModel)$")

#: PEFT functions wrapping a model with a config (frozen when the config says ``inference_mode=True``).
PEFT_WRAPPERS = frozenset({"peft.get_peft_model", "peft.mapping.get_peft_model", "peft.mapping_func.get_peft_model"})

#: ``merge_and_unload()`` folds the adapter into the base model, whose parameters PEFT froze.  PEFT's
#: own method name, read without resolving the receiver (PEFT is never read): a name-based fallback.
MERGE_METHODS = frozenset({"merge_and_unload"})


def built_frozen(model: nodes.NodeNG, reaching: Callable[[nodes.NodeNG], Optional[FrozenSet[object]]]) -> bool:
    """Every binding reaching ``model`` (a Name or ``self.attr``; ``reaching`` gives the flow-sensitive
    Defs, see ``provenance.reaching_defs``) builds a model whose parameters are all frozen:
    ``PeftModel.from_pretrained(...)`` without ``is_trainable=True``, ``x.merge_and_unload()``, or
    ``get_peft_model(base, <Config>(..., inference_mode=True))``.  Autograd then records nothing."""
    model = unwrap(model)
    defs = reaching(model)
    if not defs:
        return False
    for d in defs:
        node = getattr(d, "node", None)
        assign = node.parent if node is not None else None
        if not (isinstance(assign, nodes.Assign) and node in assign.targets):
            return False
        if not _frozen_producer(assign.value, reaching, 0):
            return False
    return True


def _frozen_producer(value: nodes.NodeNG, reaching: Callable[[nodes.NodeNG], Optional[FrozenSet[object]]],
                     depth: int) -> bool:
    while (
        isinstance(value, nodes.Call)
        and isinstance(value.func, nodes.Attribute)
        and value.func.attrname in _SELF_RETURNING
        and value.func.attrname != "requires_grad_"
    ):
        value = value.func.expr  # PeftModel.from_pretrained(...).to(device).eval()
    if not isinstance(value, nodes.Call):
        return False
    func = value.func
    if isinstance(func, nodes.Attribute) and func.attrname in MERGE_METHODS:
        return True
    if isinstance(func, nodes.Attribute) and func.attrname == "from_pretrained":
        owner = infer.dotted_name(func.expr)
        if owner is None or not PEFT_LOADED_FROZEN.match(owner):
            return False
        for kw in value.keywords or ():
            if kw.arg == "is_trainable":
                return isinstance(kw.value, nodes.Const) and kw.value.value is False
        return True
    if infer.dotted_name(func) in PEFT_WRAPPERS:
        config = infer.argument(value, "peft_config", 1)
        return config is not None and depth < 2 and _inference_config(config, reaching)
    return False


def _inference_config(config: nodes.NodeNG, reaching: Callable[[nodes.NodeNG], Optional[FrozenSet[object]]]) -> bool:
    """A PEFT config built with ``inference_mode=True`` (inline, or the one assignment reaching a name)."""
    if isinstance(config, (nodes.Name, nodes.Attribute)):
        defs = reaching(config)
        if not defs or len(defs) != 1:
            return False
        node = getattr(next(iter(defs)), "node", None)
        assign = node.parent if node is not None else None
        if not (isinstance(assign, nodes.Assign) and node in assign.targets):
            return False
        config = assign.value
    if not isinstance(config, nodes.Call):
        return False
    name = infer.dotted_name(config.func)
    if name is None or not name.startswith("peft.") or not name.endswith("Config"):
        return False
    for kw in config.keywords or ():
        if kw.arg == "inference_mode":
            return isinstance(kw.value, nodes.Const) and kw.value.value is True
    return False
