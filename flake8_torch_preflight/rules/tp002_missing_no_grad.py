"""TP002 missing-no-grad: an evaluation or inference forward pass runs with autograd on."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

from astroid import nodes

from ..analysis import dataflow, infer, loops, provenance
from ._base import Rule, register

#: Words of a function name that make it an evaluation or inference function.
EVAL_FUNCTION_WORDS = frozenset(
    {"val", "valid", "validate", "validation", "eval", "evaluate", "evaluation", "test", "testing", "predict",
     "prediction", "predictions", "infer", "inference"}
)

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

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@register
class MissingNoGrad(Rule):
    code, slug = "TP002", "missing-no-grad"
    message = (
        "{call} is an evaluation forward pass ({why}) that runs with autograd on, so every batch records a "
        "graph and keeps its activations alive for nothing, often doubling memory and slowing the pass. "
        "Run it under `with torch.no_grad():` or `torch.inference_mode()`, or decorate the function with "
        "@torch.no_grad()."
    )
    rationale = (
        "Autograd records every operation on tensors that require grad, and keeps the activations each one "
        "saved until the output is freed. An evaluation or inference loop never calls backward(), so that "
        "work and memory are wasted: peak memory during evaluation can exceed training's. The rule reports "
        "the forward call of a model (resolved through its binding: an nn.Module, a from_pretrained model, "
        "a DDP/FSDP wrapper; a tokenizer or preprocessor is not a model) made with autograd on in a function "
        "or loop that never calls backward() and that evaluates: the function is named like validate, "
        "evaluate, test, predict or infer, the model was put in eval() mode before the call, or the loop "
        "iterates a validation or test loader. It is silent under no_grad/inference_mode/"
        "set_grad_enabled(False), in decorated functions, in functions whose every call site in the file "
        "disables autograd, in Lightning's validation_step/test_step/predict_step (the trainer disables it), "
        "and where gradients are wanted (backward(), autograd.grad or requires_grad_ in the same pass: "
        "adversarial evaluation, saliency maps)."
    )
    example_bad = (
        "import torch.nn as nn\n"
        "\n"
        "\n"
        "def evaluate(model, loader):\n"
        "    model.eval()\n"
        "    correct = 0\n"
        "    for x, y in loader:\n"
        "        correct += (model(x).argmax(1) == y).sum().item()\n"
        "    return correct\n"
        "\n"
        "\n"
        "evaluate(nn.Linear(8, 2), [])\n"
    )
    example_good = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "\n"
        "@torch.no_grad()\n"
        "def evaluate(model, loader):\n"
        "    model.eval()\n"
        "    correct = 0\n"
        "    for x, y in loader:\n"
        "        correct += (model(x).argmax(1) == y).sum().item()\n"
        "    return correct\n"
        "\n"
        "\n"
        "evaluate(nn.Linear(8, 2), [])\n"
    )

    def __init__(self, ctx: "object") -> None:
        super().__init__(ctx)  # type: ignore[arg-type]
        self._gradient_units: Dict[int, bool] = {}
        self._eval_scopes: Dict[int, bool] = {}
        self._frozen_texts: Dict[int, Set[str]] = {}
        self._reported_lines: Set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        if not isinstance(node.func, (nodes.Name, nodes.Attribute)):
            return
        if isinstance(node.func, nodes.Attribute) and node.func.attrname in GRADIENT_METHODS | MODE_METHODS:
            return
        func = _enclosing_function(node)
        named = func is not None and _eval_named(func)
        split_loop = _split_loop(node)
        if not named and split_loop is None and not self._has_eval_calls(func or node.root()):
            return  # no evaluation evidence anywhere near: skip the analysis
        p = provenance.of(self.ctx)
        kind = p.call_kind(node)
        if kind not in (provenance.MODEL_CALL, provenance.MAYBE_MODEL_CALL):
            return
        if p.grad_mode(node) != provenance.ON:
            return
        model = _model_expression(node)
        why = self._evidence(node, func, named, split_loop, model)
        if why is None:
            return
        mode = _mode_before(node, model, func or node.root())
        if kind == provenance.MAYBE_MODEL_CALL and (mode is None or mode[0] != "eval"):
            return  # an unresolved callee named like a model counts only after <it>.eval()
        if _backpropagated(p, node):
            return  # its output reaches a backward(): not an evaluation
        if self._frozen(func, model):
            return  # requires_grad_(False) on the model: no graph is recorded
        if node.lineno in self._reported_lines:
            return
        self._reported_lines.add(node.lineno)
        self.report(node, call=_text(node.func, self.ctx.lines) + "(...)", why=why)

    def _evidence(
        self,
        call: nodes.Call,
        func: Optional[nodes.FunctionDef],
        named: bool,
        split_loop: Optional["loops.Loop"],
        model: nodes.NodeNG,
    ) -> Optional[str]:
        """Why this is an evaluation, or None.  Each reason needs a unit without gradient use."""
        mode = _mode_before(call, model, func if func is not None else call.root())
        if named and func is not None and not self._wants_gradients(func):
            if mode is None or mode[0] != "train":
                return "in {}()".format(func.name)
        if split_loop is not None and not self._wants_gradients(split_loop):
            return "in the loop over {}".format(_text(split_loop.iter, self.ctx.lines))  # type: ignore[union-attr]
        if mode is not None and mode[0] == "eval":
            unit = loops.innermost(call) or func
            if unit is not None and not self._wants_gradients(unit):
                return "after {}.eval()".format(mode[1])
        return None

    def _frozen(self, func: Optional[nodes.FunctionDef], model: nodes.NodeNG) -> bool:
        """``model.requires_grad_(False)`` or ``for p in model.parameters(): p.requires_grad = False``
        on the model (or an object it belongs to) in the same function, or at module level for a
        module-level model."""
        text = dataflow.binding_text(_unwrap(model))
        scopes: List[nodes.NodeNG] = [func] if func is not None else []
        root = _unwrap(model)
        while isinstance(root, nodes.Attribute):
            root = root.expr
        if func is None or (isinstance(root, nodes.Name) and root.scope() is not func and root.name not in func.locals):
            scopes.append(model.root())
        for scope in scopes:
            texts = self._frozen_texts.get(id(scope))
            if texts is None:
                texts = self._frozen_texts[id(scope)] = _frozen_receivers(scope)
            if any(text == f or text.startswith(f + ".") for f in texts):
                return True
        return False

    def _has_eval_calls(self, scope: nodes.NodeNG) -> bool:
        cached = self._eval_scopes.get(id(scope))
        if cached is None:
            cached = self._eval_scopes[id(scope)] = _has_eval_calls(scope)
        return cached

    def _wants_gradients(self, unit: nodes.NodeNG) -> bool:
        """The function or loop calls backward()/autograd.grad/requires_grad_ (helpers included)."""
        cached = self._gradient_units.get(id(unit))
        if cached is None:
            if isinstance(unit, (nodes.For, nodes.While)):
                calls = loops.loop_calls(unit)
            else:
                calls = loops.calls_in(list(unit.body))  # type: ignore[attr-defined]
            cached = any(_uses_gradients(c) for c in calls)
            self._gradient_units[id(unit)] = cached
        return cached


def _enclosing_function(node: nodes.NodeNG) -> Optional[nodes.FunctionDef]:
    """The ``def`` a node runs in, looking through comprehensions (None at module level or in a lambda)."""
    scope = node.scope()
    while isinstance(scope, (nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)):
        scope = scope.parent.scope()
    return scope if isinstance(scope, nodes.FunctionDef) else None


def _uses_gradients(call: nodes.Call) -> bool:
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


def _frozen_receivers(scope: nodes.NodeNG) -> Set[str]:
    found: Set[str] = set()
    for call in _own_nodes(scope, nodes.Call):
        if infer.method_name(call) == "requires_grad_" and call.args:
            flag = call.args[0]
            if isinstance(flag, nodes.Const) and flag.value is False:
                found.add(dataflow.binding_text(_unwrap(call.func.expr)))  # type: ignore[union-attr]
    for assign in _own_nodes(scope, nodes.Assign):
        value = assign.value
        if not (isinstance(value, nodes.Const) and value.value is False):
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
                found.add(dataflow.binding_text(_unwrap(iterable.func.expr)))  # type: ignore[union-attr]
    return found


def _words(name: str) -> List[str]:
    return [w.lower() for w in _WORD.findall(name)]


def _eval_named(func: nodes.FunctionDef) -> bool:
    words = set(_words(func.name)) & EVAL_FUNCTION_WORDS
    if not words:
        return False
    if words <= TEST_WORDS and next(func.nodes_of_class((nodes.For, nodes.While)), None) is None:
        return False  # a pytest function or a model file's shape smoke test, not an evaluation loop
    return True


def _split_words(expr: nodes.NodeNG) -> bool:
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


def _split_loop(call: nodes.Call) -> Optional["loops.Loop"]:
    """The innermost enclosing ``for`` loop that iterates a validation / test split."""
    for loop in loops.enclosing_loops(call):
        if isinstance(loop, nodes.For) and _split_words(loop.iter):
            return loop
    return None


def _has_eval_calls(scope: nodes.NodeNG) -> bool:
    """Any ``x.eval()``/``x.train(False)`` in the function (or the module body and its functions)."""
    for call in scope.nodes_of_class(nodes.Call):
        method = infer.method_name(call)
        if method == "eval" or (method == "train" and call.args and isinstance(call.args[0], nodes.Const)):
            return True
    return False


def _model_expression(call: nodes.Call) -> nodes.NodeNG:
    func = call.func
    if isinstance(func, nodes.Attribute) and func.attrname == "forward":
        return func.expr
    return func


def _unwrap(expr: nodes.NodeNG) -> nodes.NodeNG:
    """``model`` for ``model.module`` (a wrapper's inner model)."""
    while isinstance(expr, nodes.Attribute) and expr.attrname == "module":
        expr = expr.expr
    return expr


def _mode_before(call: nodes.Call, model: nodes.NodeNG, scope: nodes.NodeNG) -> Optional[Tuple[str, str]]:
    """(``"eval"``/``"train"``, receiver text) of the last ``<model>.eval()``/``.train()`` before
    ``call`` in its function (a call on ``model`` also switches ``model.head``)."""
    wanted = dataflow.binding_text(_unwrap(model))
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


def _last_mode_call(stmt: nodes.NodeNG, wanted: str) -> Optional[Tuple[str, str]]:
    result: Optional[Tuple[Tuple[int, int], Tuple[str, str]]] = None
    for call in infer.iter_calls(stmt):
        method = infer.method_name(call)
        if method not in MODE_METHODS:
            continue
        receiver = dataflow.binding_text(_unwrap(call.func.expr))  # type: ignore[union-attr]
        if wanted != receiver and not wanted.startswith(receiver + "."):
            continue  # model.eval() also switches model.head
        mode = "eval" if method == "eval" else "train"
        if method == "train" and call.args and isinstance(call.args[0], nodes.Const) and call.args[0].value is False:
            mode = "eval"
        key = (call.lineno or 0, call.col_offset or 0)
        if result is None or key > result[0]:
            result = (key, (mode, receiver))
    return result[1] if result is not None else None


def _backpropagated(p: provenance.Provenance, call: nodes.Call) -> bool:
    ident = id(call)
    return any(ident in b.prov.sources or ident in b.prov.maybe for b in p.backwards)


def _text(node: nodes.NodeNG, lines: Sequence[str]) -> str:
    """An expression as written (from the file's lines), shortened for the message."""
    text = provenance.source_text(node, lines) or "the model"
    return text if len(text) <= 40 else text[:37] + "..."
