"""How a model flows through a training script, read syntactically.

The names a model is bound to through wrappers and re-assignments (``model = DDP(model)``,
``model, opt = accelerator.prepare(model, opt)``), what an expression's root name is once
``.to(device)``/``.cuda()``/``torch.compile`` are stripped, whether a call builds a model or a
layer of one, and how dtypes and devices are spelled. Used by ``estimator.extract``; names are
compared as text within one file, so a name rebound to something else in another function
would be conflated (the reader uses them only to tell which model an optimizer trains).
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Set, Tuple

from astroid import nodes

from ..semantic import dataflow, infer, static_values
from . import param_count
from .torch_names import MODEL_WRAPPERS

#: Calls that return the model they are given (so the model keeps its binding through them).
MODEL_PASSTHROUGH_METHODS = frozenset({"to", "cuda", "half", "bfloat16", "float", "train", "eval",
                                       "requires_grad_"})

#: Functions that return the model they are given.
MODEL_PASSTHROUGH_FUNCTIONS = frozenset({"torch.compile", "peft.get_peft_model",
                                         "peft.prepare_model_for_kbit_training"})

#: dtype spellings, as attribute names, strings or argparse choices.
DTYPES = {"float16": "fp16", "half": "fp16", "fp16": "fp16", "bfloat16": "bf16", "bf16": "bf16",
          "float32": "fp32", "float": "fp32", "fp32": "fp32", "32": "fp32"}


def class_qname(call: nodes.Call) -> Optional[str]:
    """The qualified name of the class ``call`` instantiates (not of an instance it calls:
    ``model(x)`` on a DDP-wrapped model is not a new DDP)."""
    value = infer.safe_infer(call.func)
    return value.qname() if isinstance(value, nodes.ClassDef) else None


def callee_name(call: nodes.Call) -> Optional[str]:
    """The import-resolved name of what ``call`` invokes (``transformers.TrainingArguments``)."""
    return infer.dotted_name(call.func) if isinstance(call.func, (nodes.Name, nodes.Attribute)) else None


def dtype_kind(expr: nodes.NodeNG, depth: int = 0) -> Optional[str]:
    """``fp16``/``bf16``/``fp32`` for ``torch.bfloat16``, ``"bfloat16"``, ``args.dtype`` ..."""
    if depth > 4:
        return None
    value = static_values.evaluate(expr)
    if value is not None and isinstance(value.value, str):
        return DTYPES.get(value.value.lower().replace("torch.", ""))
    if isinstance(expr, (nodes.Attribute, nodes.Name)):
        dotted = infer.dotted_name(expr)
        if dotted and dotted.startswith("torch."):
            return DTYPES.get(dotted[len("torch."):])
        values = dataflow.assigned_values(expr) if isinstance(expr, nodes.Name) else None
        if values:
            kinds = {dtype_kind(v, depth + 1) for v in values}
            return kinds.pop() if len(kinds) == 1 else None
    if isinstance(expr, nodes.Call) and infer.call_name(expr) == "getattr" and len(expr.args) == 2:
        name = static_values.str_value(expr.args[1])
        if name is not None and infer.dotted_name(expr.args[0]) == "torch":
            return DTYPES.get(str(name.value))
    return None


def device_kind(expr: nodes.NodeNG) -> Optional[str]:
    """``"cuda"`` / ``"cpu"`` for a device expression (``"cuda:0"``, ``torch.device("cuda", r)``,
    a name bound to one, an argparse default), None when unknown or not a device."""
    if isinstance(expr, nodes.Call) and infer.callee_qname(expr) == "torch.device" and expr.args:
        expr = expr.args[0]
    elif isinstance(expr, nodes.Call):
        return None
    value = static_values.str_value(expr)
    if value is None and isinstance(expr, nodes.Name):
        values = dataflow.assigned_values(expr) or []
        kinds = {device_kind(v) for v in values if not isinstance(v, nodes.Name)}
        return kinds.pop() if len(kinds) == 1 else None
    if value is None:
        return None
    text = str(value.value).split(":")[0]
    return text if text in ("cuda", "cpu") else None


def looks_like_dtype(expr: nodes.NodeNG) -> bool:
    if isinstance(expr, (nodes.Attribute, nodes.Name)):
        dotted = infer.dotted_name(expr)
        if dotted and dotted.startswith("torch.") and dotted[len("torch."):] in DTYPES:
            return True
        return "dtype" in expr.as_string().lower()
    return False


def root_text(expr: nodes.NodeNG) -> str:
    """``model`` for ``model.module.fc``, ``self.model`` for ``self.model.encoder``."""
    expr = strip_wrappers(expr)
    while isinstance(expr, nodes.Attribute):
        if isinstance(expr.expr, nodes.Name) and expr.expr.name == "self":
            return "self." + expr.attrname
        expr = expr.expr
    return expr.name if isinstance(expr, nodes.Name) else ""


def root_names(optimizer: nodes.Call) -> Set[str]:
    params = infer.argument(optimizer, "params", 0)
    if params is None:
        return set()
    return {root_text(c.func.expr) for c in params.nodes_of_class(nodes.Call)
            if infer.method_name(c) in ("parameters", "named_parameters") and isinstance(c.func, nodes.Attribute)}


def strip_wrappers(expr: nodes.NodeNG) -> nodes.NodeNG:
    """``model`` for ``DDP(model.to(device))``, ``torch.compile(model)``, ``model.cuda()``."""
    for _ in range(8):
        if not isinstance(expr, nodes.Call) or not isinstance(expr.func, (nodes.Name, nodes.Attribute)):
            return expr
        method = infer.method_name(expr)
        if method in ("prepare", "setup", "prepare_model") and expr.args:
            expr = expr.args[0]
            continue
        if method in MODEL_PASSTHROUGH_METHODS and isinstance(expr.func, nodes.Attribute):
            expr = expr.func.expr
            continue
        qname = infer.callee_qname(expr)
        dotted = infer.dotted_name(expr.func)
        if (qname in MODEL_WRAPPERS or qname in MODEL_PASSTHROUGH_FUNCTIONS
                or dotted in MODEL_PASSTHROUGH_FUNCTIONS) and expr.args:
            expr = expr.args[0]
            continue
        return expr
    return expr


def flow_sources(value: nodes.NodeNG) -> Iterable[Tuple[Optional[int], str]]:
    """(tuple index or None, root name) of what an assignment's value forwards."""
    if isinstance(value, nodes.Call) and infer.method_name(value) in ("prepare", "setup"):
        for index, arg in enumerate(value.args):
            yield index, root_text(arg)
        return
    if isinstance(value, (nodes.Name, nodes.Attribute)):
        yield None, root_text(value)


def assigned_targets(node: nodes.NodeNG) -> List[str]:
    """Names the value of ``node`` is assigned to, climbing through wrappers and method chains."""
    current = node
    for _ in range(10):
        parent = current.parent
        if isinstance(parent, nodes.Attribute) and parent.expr is current and isinstance(parent.parent, nodes.Call):
            if parent.attrname in MODEL_PASSTHROUGH_METHODS:
                current = parent.parent
                continue
            return []
        if isinstance(parent, nodes.Call) and current in parent.args:
            qname = infer.callee_qname(parent) if isinstance(parent.func, (nodes.Name, nodes.Attribute)) else None
            dotted = callee_name(parent)
            method = infer.method_name(parent)
            if method in ("prepare", "setup") and isinstance(parent.parent, nodes.Assign):
                index = parent.args.index(current)
                return target_names(parent.parent.targets, index)
            if (qname in MODEL_WRAPPERS or qname in MODEL_PASSTHROUGH_FUNCTIONS or dotted in MODEL_PASSTHROUGH_FUNCTIONS
                    or method in ("get_peft_model", "prepare_model_for_kbit_training")):
                current = parent
                continue
            return []
        if isinstance(parent, nodes.Keyword) and parent.arg in ("module", "model"):
            call = parent.parent
            qname = infer.callee_qname(call) if isinstance(call, nodes.Call) else None
            if qname in MODEL_WRAPPERS:
                current = call
                continue
            return []
        if isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
            targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
            return target_names(targets, None)
        if isinstance(parent, nodes.Return):
            function = parent.scope()
            if isinstance(function, nodes.FunctionDef):
                names: List[str] = []
                for call in function.root().nodes_of_class(nodes.Call):
                    if isinstance(call.func, nodes.Name) and call.func.name == function.name:
                        names.extend(assigned_targets(call))
                return names
        return []
    return []


def target_names(targets: List[nodes.NodeNG], index: Optional[int]) -> List[str]:
    names: List[str] = []
    for target in targets:
        if index is not None:
            if isinstance(target, (nodes.Tuple, nodes.List)) and index < len(target.elts):
                target = target.elts[index]
            else:
                continue
        if isinstance(target, nodes.AssignName):
            names.append(target.name)
        elif isinstance(target, nodes.AssignAttr) and is_self_name(target.expr):
            names.append("self." + target.attrname)
    return names


def is_self_name(node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.Name) and node.name == "self"


def enclosing_class(node: nodes.NodeNG) -> Optional[nodes.ClassDef]:
    scope = node.scope()
    while scope is not None and not isinstance(scope, nodes.ClassDef):
        parent = scope.parent
        scope = parent.scope() if parent is not None else None
    return scope


def class_of(call: nodes.Call) -> Optional[nodes.ClassDef]:
    return param_count.resolve_class(call.func)


def inside_module_class(node: nodes.NodeNG) -> bool:
    """``node`` sits in a method of an ``nn.Module`` subclass (a layer of a model, not a model).
    A LightningModule's ``__init__`` building its network is read as that module's layers."""
    cls = enclosing_class(node)
    return cls is not None and param_count.is_module_class(cls)


def model_factory(call: nodes.Call) -> Optional[nodes.FunctionDef]:
    """A function of the checked file that returns a module it builds (``def build(): return
    nn.Sequential(...)``), called here: the call builds the model."""
    function = infer.function_def(call.func) if isinstance(call.func, (nodes.Name, nodes.Attribute)) else None
    if function is None or function.root() is not call.root() or function.is_method():
        return None
    for ret in function.nodes_of_class(nodes.Return):
        value = ret.value
        if ret.scope() is function and isinstance(value, nodes.Call):
            cls = param_count.resolve_class(value.func)
            if cls is not None and param_count.is_module_class(cls):
                return function
    return None


def returned_from_factory(call: nodes.Call) -> bool:
    """``return nn.Sequential(...)`` in a factory function: its callers build the model."""
    return isinstance(call.parent, nodes.Return) and isinstance(call.scope(), nodes.FunctionDef) and any(
        isinstance(c.func, nodes.Name) and c.func.name == call.scope().name
        for c in call.root().nodes_of_class(nodes.Call))


def is_passed_to_model(call: nodes.Call) -> bool:
    """``nn.Sequential(...)`` handed to a model's constructor (a part, not the model)."""
    parent = call.parent
    while isinstance(parent, (nodes.Keyword, nodes.List, nodes.Tuple, nodes.Starred)):
        parent = parent.parent
    if isinstance(parent, nodes.Call) and parent is not call:
        cls = param_count.resolve_class(parent.func)
        return cls is not None and param_count.is_module_class(cls)
    return False
