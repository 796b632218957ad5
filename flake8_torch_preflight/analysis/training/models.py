"""What a callee is: a model with parameters, a loss, a parameter-free layer, or none of these.

``kind(expr)`` answers for the expression a call invokes (``model`` in
``model(x)``) and returns one of :data:`MODEL`, :data:`LOSS`, :data:`LAYER` or
None (not a module, or unknown).  The binding is read, never the name:

* astroid inference first: an instance of an ``nn.Module`` subclass (stubs or
  the file's own classes, DDP/FSDP wrappers included), a class of the file
  that derives from a third-party model base (``LightningModule``,
  ``PreTrainedModel``, diffusers' ``ModelMixin``, read through the imports);
* where inference stops (third-party constructors are never read), the
  reaching assignments: ``AutoModelForCausalLM.from_pretrained(...)``,
  ``timm.create_model(...)``, ``torchvision.models.resnet50()``,
  ``peft.get_peft_model(m, ...)``, ``torch.compile(m)``, ``m.to(device)``,
  ``model, opt = accelerator.prepare(model, opt)``, loop targets over a
  ``ModuleList``, and parameters through the file's call sites.

A tokenizer or processor (``AutoTokenizer.from_pretrained``) is resolved as
*not* a model.  :func:`model_named` is the documented name-based fallback for a
callee nothing resolves; the provenance analysis uses it only with
corroboration (see ``provenance/runner.py``).
"""
from __future__ import annotations

import itertools
import re
from typing import Dict, List, Optional

from astroid import nodes
from astroid.bases import BoundMethod, Instance, UnboundMethod
from astroid.exceptions import AstroidError

from ..semantic import dataflow, infer, loops
from ..semantic import static_values
from ..setup import brain
from . import param_count
from .torch_names import INSTANCE_NORMS, LOSS_BASES, MODE_DEPENDENT_LAYERS, MODE_FREE_LAYERS, MODULE_BASES

#: Results of :func:`kind`.
MODEL, LOSS, LAYER = "model", "loss", "layer"


#: Functional losses; their result is a loss value.
LOSS_FUNCTIONS = frozenset(
    "torch.nn.functional." + name
    for name in (
        "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss",
        "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "ctc_loss", "margin_ranking_loss",
        "triplet_margin_loss", "triplet_margin_with_distance_loss", "cosine_embedding_loss", "poisson_nll_loss",
        "gaussian_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
        "multilabel_margin_loss", "hinge_embedding_loss",
    )
)

#: Modules without parameters: calling one builds no graph of its own, its output
#: carries a graph only when its input does.
PARAMETERLESS_LAYERS = frozenset(
    "torch.nn." + name
    for name in (
        "Identity", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "ReLU", "ReLU6",
        "LeakyReLU", "ELU", "GELU", "SiLU", "Mish", "Hardswish", "Hardsigmoid", "Tanh", "Sigmoid", "Softplus",
        "Softmax", "LogSoftmax", "Softmax2d", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d",
        "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
        "AdaptiveMaxPool2d", "Upsample", "PixelShuffle", "ZeroPad2d",
    )
)

#: Third-party base classes (as the file imports them) whose subclasses are nn.Modules.
THIRD_PARTY_MODEL_BASES = re.compile(r"(^|\.)(LightningModule|PreTrainedModel|ModelMixin|PeftModel)$")

#: Third-party calls that return a model, by the dotted name the imports give them.
MODEL_FACTORIES = frozenset(
    {
        "timm.create_model",
        "peft.get_peft_model",
        "torchvision.models.get_model",
        "sentence_transformers.SentenceTransformer",
    }
)

#: ``<Class>.from_pretrained`` / ``from_config`` of these libraries returns a model when
#: the class names a model, and a tokenizer, processor or config otherwise.
PRETRAINED_LIBRARIES = frozenset({"transformers", "diffusers", "peft", "sentence_transformers", "open_clip", "timm"})
PRETRAINED_CONSTRUCTORS = frozenset({"from_pretrained", "from_config", "from_single_file"})
#: Class methods that return an instance of the class they are called on (Lightning's
#: ``LightningModule.load_from_checkpoint``, the pretrained constructors): for a class of the project,
#: the instance is of that class.
CLASS_CONSTRUCTORS = PRETRAINED_CONSTRUCTORS | frozenset({"load_from_checkpoint"})
PRETRAINED_MODEL_CLASS = re.compile(r"Model|For[A-Z]|LMHead|UNet|Autoencoder|Transformer\dD|VQ")
PRETRAINED_NOT_MODEL = re.compile(r"Tokenizer|Processor|Config|FeatureExtractor|Pipeline|Scheduler|Processing")

#: ``torchvision.models.<fn>()`` builders are lower-case; these are not builders.
TORCHVISION_NOT_BUILDERS = frozenset({"get_weight", "get_model_weights", "list_models", "get_model_builder"})

#: Calls whose first argument comes back (as a model) when it is one.
MODEL_PASSTHROUGH = frozenset(
    {
        "torch.compile",
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
    }
)

#: Module methods that return the module itself.
SELF_RETURNING_METHODS = frozenset(
    {"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train", "eval", "requires_grad_", "type", "apply",
     "to_empty"}
)

#: ``a, b = accelerator.prepare(a, b)`` / ``fabric.setup(model, opt)`` hand back their arguments in order.
PREPARE_METHODS = frozenset({"prepare", "setup", "prepare_model", "setup_module"})

#: Modules that hold modules: iterating one (or ``.children()``/``.modules()``/``.values()``) yields modules.
MODULE_ITERATORS = frozenset({"children", "modules", "values"})

#: The name-based fallback (see :func:`model_named`).
MODEL_NAME = re.compile(
    r"(^|_)(model|net|network|encoder|decoder|backbone|generator|discriminator|critic|actor|policy|classifier|"
    r"student|teacher|unet|vae|transformer|llm|lm)s?(\d+|_|$)|^net[A-Z0-9]|^model[A-Z0-9]",
    re.IGNORECASE,
)

_MEMO_KEY = "models.kind"
_MAX_DEPTH = 4


def kind(expr: nodes.NodeNG, memo: Optional[Dict[int, Optional[str]]] = None) -> Optional[str]:
    """:data:`MODEL`, :data:`LOSS`, :data:`LAYER` for a callee that resolves to one; else None."""
    if memo is not None and id(expr) in memo:
        return memo[id(expr)]
    result = _kind(expr, _MAX_DEPTH)
    if memo is not None:
        memo[id(expr)] = result
    return result


def is_loss_function(call: nodes.Call) -> bool:
    """``F.cross_entropy(...)`` and the other functional losses."""
    name = infer.callee_qname(call) or infer.dotted_name(call.func)
    return name in LOSS_FUNCTIONS


def sum_reduced(call: nodes.Call) -> bool:
    """A loss over the batch summed rather than averaged: ``F.mse_loss(..., reduction="sum")``, a loss
    module built with ``reduction="sum"`` (or ``size_average=False``), or a loss class of the project
    whose ``forward`` calls only sum-reduced losses."""
    if _reduces_by_sum(call):
        return True
    func = call.func
    if isinstance(func, (nodes.Name, nodes.Attribute)):
        built = [v for v in dataflow.assigned_values(func) or () if isinstance(v, nodes.Call)]
        if built and all(_reduces_by_sum(v) for v in built):
            return True
    cls = infer.instance_class(func)
    if cls is None or cls.qname().startswith("torch."):
        return False
    forward = cls.locals.get("forward")
    body = forward[0] if forward and isinstance(forward[0], nodes.FunctionDef) else None
    if body is None:
        return False
    losses = [c for c in body.nodes_of_class(nodes.Call) if is_loss_function(c) or _kind(c.func, 2) == LOSS]
    return bool(losses) and all(_reduces_by_sum(c) for c in losses)


def _reduces_by_sum(call: nodes.Call) -> bool:
    reduction = infer.argument(call, "reduction")
    if isinstance(reduction, nodes.Const):
        return reduction.value == "sum"
    average = infer.argument(call, "size_average")
    return isinstance(average, nodes.Const) and average.value is False


#: Leading words that make a name an accessor or a factory of a model (``unwrap_model``,
#: ``create_softmax_model``, ``get_encoder``), which returns a module, not a forward's output.
FACTORY_VERBS = frozenset(
    {"get", "build", "create", "make", "load", "init", "unwrap", "setup", "prepare", "wrap", "copy", "save",
     "freeze", "unfreeze", "to", "set", "register", "export", "convert", "instantiate", "configure"}
)


#: Last words that make a name a property of a model (``model_size``, ``calculate_model_size``,
#: ``encoder_config``), not a model.
PROPERTY_WORDS = frozenset(
    {"size", "sizes", "path", "paths", "name", "names", "dir", "file", "files", "config", "cfg", "type", "args",
     "kwargs", "params", "parameters", "state", "info", "id", "version", "summary", "stats", "dim", "dims", "flops"}
)


def model_named(expr: nodes.NodeNG) -> bool:
    """Name-based fallback: an unresolved callee named like a model (``model``, ``net``,
    ``self.encoder``, ``netG``), not like an accessor or factory of one (``unwrap_model``,
    ``build_model``: ``FACTORY_VERBS``) nor a property of one (``calculate_model_size``:
    ``PROPERTY_WORDS``).  Never enough on its own to report anything."""
    name = dataflow.terminal_name(expr)
    if name is None or "_" in name and (
        name.split("_", 1)[0].lower() in FACTORY_VERBS or name.rsplit("_", 1)[1].lower() in PROPERTY_WORDS
    ):
        return False
    return MODEL_NAME.search(name) is not None


def _kind(expr: nodes.NodeNG, depth: int) -> Optional[str]:
    if depth <= 0:
        return None
    value = infer.attribute_value(expr) if isinstance(expr, nodes.Attribute) else infer.safe_infer(expr)
    if value is not None:
        return _kind_of_value(value)
    if isinstance(expr, nodes.Attribute) and expr.attrname == "module" and _kind(expr.expr, depth - 1) == MODEL:
        return MODEL  # ``model.module`` of a wrapper
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = dataflow.assigned_values(expr)
        if values:
            kinds = {_kind_of_producer(v, depth - 1) for v in values}
            return kinds.pop() if len(kinds) == 1 else None
    if isinstance(expr, nodes.Name):
        return _kind_of_name_binding(expr, depth - 1)
    if isinstance(expr, nodes.Call):
        return _kind_of_producer(expr, depth - 1)
    return None


def _kind_of_value(value: object) -> Optional[str]:
    if not isinstance(value, Instance) or isinstance(value, (BoundMethod, UnboundMethod)):
        return None
    cls = value._proxied
    if not isinstance(cls, nodes.ClassDef):
        return None
    if infer.class_is_subclass_of(cls, LOSS_BASES):
        return LOSS
    if cls.qname() in PARAMETERLESS_LAYERS or _parameter_free_class(cls):
        return LAYER
    if infer.class_is_subclass_of(cls, MODULE_BASES) or _third_party_model_class(cls):
        return MODEL
    return None


#: Calls that give a module parameters or submodules without a ``self.x = ...`` statement.
REGISTERING_CALLS = frozenset({"register_parameter", "register_module", "add_module", "setattr", "register_buffer"})


def _parameter_free_class(cls: nodes.ClassDef) -> bool:
    """A class of the checked file deriving directly from ``nn.Module`` whose methods only ever store
    constants (or parameters with constant defaults) on ``self``: a ``DropPath``/``DropBlock2d``.
    It has no parameters, so autograd records nothing on a constant input."""
    if cls.qname().startswith("torch.") or str(getattr(cls.root(), "file", "") or "").endswith(".pyi"):
        return False  # torch's own classes (stubs) declare no __init__ body: never read as parameter-free
    if len(cls.bases) != 1:
        return False
    base = infer.safe_infer(cls.bases[0])
    if not (isinstance(base, nodes.ClassDef) and base.qname() == "torch.nn.Module"):
        return False
    for func in cls.mymethods():
        for call in func.nodes_of_class(nodes.Call):
            if infer.call_name(call) in REGISTERING_CALLS:
                return False
        for assign in func.nodes_of_class((nodes.Assign, nodes.AnnAssign, nodes.AugAssign)):
            targets = assign.targets if isinstance(assign, nodes.Assign) else [assign.target]
            stores_on_self = any(
                isinstance(t, nodes.AssignAttr) and isinstance(t.expr, nodes.Name) and t.expr.name == "self"
                for target in targets
                for t in [target] + list(target.nodes_of_class(nodes.AssignAttr))
            )
            if stores_on_self and not _constant_value(assign.value, func):
                return False
    return True


def _constant_value(value: Optional[nodes.NodeNG], func: nodes.FunctionDef) -> bool:
    if value is None:
        return True
    if isinstance(value, nodes.Const):
        return True
    if isinstance(value, (nodes.UnaryOp, nodes.BinOp, nodes.BoolOp, nodes.Compare)):
        return all(_constant_value(child, func) for child in value.get_children())
    if isinstance(value, nodes.Name):
        args = func.args
        names = [a.name for a in (args.args or [])] + [a.name for a in (args.kwonlyargs or [])]
        if value.name not in names:
            return False
        positional = [a.name for a in (args.args or [])]
        if value.name in positional:
            index = positional.index(value.name) - (len(positional) - len(args.defaults or []))
            return index >= 0 and isinstance(args.defaults[index], nodes.Const)
        kw_index = [a.name for a in (args.kwonlyargs or [])].index(value.name)
        defaults = args.kw_defaults or []
        return kw_index < len(defaults) and isinstance(defaults[kw_index], nodes.Const)
    return False


def _third_party_model_class(cls: nodes.ClassDef) -> bool:
    """A class of the checked file deriving (maybe through its own classes) from a model base it imports."""
    seen: List[nodes.ClassDef] = []
    stack = [cls]
    while stack and len(seen) < 16:
        current = stack.pop()
        if current in seen:
            continue
        seen.append(current)
        for base in current.bases:
            dotted = infer.dotted_name(base)
            if dotted is not None and THIRD_PARTY_MODEL_BASES.search(dotted):
                return True
            if isinstance(base, (nodes.Name, nodes.Attribute)):
                inferred = infer.safe_infer(base)
                if isinstance(inferred, nodes.ClassDef) and inferred.root() is cls.root():
                    stack.append(inferred)
    return False


def _kind_of_producer(value: nodes.NodeNG, depth: int) -> Optional[str]:
    """Kind of the object an assigned expression produces (``from_pretrained(...)``, ``m.to(dev)``)."""
    if not isinstance(value, nodes.Call):
        return _kind(value, depth) if isinstance(value, (nodes.Name, nodes.Attribute)) else None
    func = value.func
    dotted = infer.dotted_name(func)
    if dotted is not None:
        parts = dotted.split(".")
        if dotted in MODEL_FACTORIES:
            return MODEL
        if parts[0] in PRETRAINED_LIBRARIES and len(parts) >= 3 and parts[-1] in PRETRAINED_CONSTRUCTORS:
            owner = parts[-2]
            if PRETRAINED_NOT_MODEL.search(owner) or not PRETRAINED_MODEL_CLASS.search(owner):
                return None
            return MODEL
        builder = parts[-1]
        if parts[:2] == ["torchvision", "models"] and builder[:1].islower() and builder not in TORCHVISION_NOT_BUILDERS:
            return MODEL
    callee = infer.callee_qname(value) or dotted
    if callee in MODEL_PASSTHROUGH and value.args:
        return MODEL if _kind(value.args[0], depth) == MODEL else None
    if isinstance(func, nodes.Attribute):
        if func.attrname in SELF_RETURNING_METHODS:
            return _kind(func.expr, depth)
        if func.attrname in PREPARE_METHODS and len(value.args) == 1:
            return _kind(value.args[0], depth)
    inferred = infer.safe_infer(value)
    return _kind_of_value(inferred) if inferred is not None else None


def _kind_of_name_binding(name: nodes.Name, depth: int) -> Optional[str]:
    """Loop targets over module containers, ``prepare`` unpacking, parameters via call sites."""
    binding = dataflow.single_binding(name)
    if binding is None:
        return None
    parent = binding.parent
    if isinstance(parent, (nodes.For, nodes.Comprehension)) and parent.target is binding:
        iterable = parent.iter
        if isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Attribute):
            if iterable.func.attrname in MODULE_ITERATORS:
                return MODEL if _kind(iterable.func.expr, depth) == MODEL else None
            return None
        return MODEL if _kind(iterable, depth) == MODEL else None
    if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
        value = parent.parent.value
        if (
            isinstance(value, nodes.Call)
            and isinstance(value.func, nodes.Attribute)
            and value.func.attrname in PREPARE_METHODS
            and len(value.args) == len(parent.elts)
            and not any(isinstance(a, nodes.Starred) for a in value.args)
        ):
            index = parent.elts.index(binding)
            return MODEL if _kind(value.args[index], depth) == MODEL else None
        return None
    if isinstance(parent, nodes.Arguments):
        args = infer.parameter_arguments(name)
        if args:
            kinds = {_kind(a, depth) for a in args}
            return kinds.pop() if len(kinds) == 1 else None
    return None


#: Levels of submodule classes, helper calls and bindings followed by :func:`mode_dependent`.
MODE_DEPTH = 6

#: Calls that register their arguments as submodules (or keep them in a container that may).
_REGISTERING_METHODS = frozenset(
    {"append", "extend", "insert", "add_module", "register_module", "update", "setattr", "__setitem__"}
)


def mode_dependent(expr: nodes.NodeNG) -> Optional[bool]:
    """Does ``eval()`` change what the model ``expr`` computes?  True when its class, one of its base
    classes or a submodule class (recursively) is a mode-dependent torch layer (``MODE_DEPENDENT_LAYERS``:
    dropout, batch norm, an ``InstanceNorm`` tracking running statistics, recurrent/attention layers) or
    reads ``.training``; False when every class is read and every torch layer built is mode-free
    (``MODE_FREE_LAYERS``: a ``Linear``/``ReLU`` MLP); None when anything is unknown: a class not read
    (a library model, ``torchvision.models.resnet18()``), a torch layer in neither set, a call in the
    constructor that does not resolve, or a value that may be a module handed in from outside (an
    ``__init__`` argument that is not a plain constant at the construction, a config object)."""
    built = _constructions(expr, MODE_DEPTH)
    if not built:
        return None
    answers = [
        _container_mode(call, MODE_DEPTH, set()) if cls.qname() in param_count.CONTAINERS and call is not None
        else _class_mode(cls, call, MODE_DEPTH, set())
        for cls, call in built
    ]  # ``nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))`` built in place: what its arguments build
    if True in answers:
        return True
    return None if None in answers else False


def model_classes(expr: nodes.NodeNG) -> Optional[List[nodes.ClassDef]]:
    """The classes the module ``expr`` may be an instance of, through aliases, ``.to(dev)``, wrappers
    and call-site parameters (as ``mode_dependent`` reads them); None when a binding is not read."""
    built = _constructions(expr, MODE_DEPTH)
    return [cls for cls, _ in built] if built else None


def model_constructions(expr: nodes.NodeNG) -> Optional[List["tuple[nodes.ClassDef, Optional[nodes.Call]]"]]:
    """``model_classes`` with the constructor call of each class, when seen (None for an instance
    whose construction is not in sight)."""
    return _constructions(expr, MODE_DEPTH) or None


def _constructions(expr: nodes.NodeNG, depth: int) -> Optional[List["tuple[nodes.ClassDef, Optional[nodes.Call]]"]]:
    """The classes (with their constructor calls, when seen) ``expr`` may be an instance of, through
    aliases, ``model.to(dev)``/``model.train()``, wrappers (DDP, ``torch.compile``) and parameters
    bound at the file's call sites; None when one binding is not read."""
    if depth <= 0:
        return None
    if isinstance(expr, nodes.Call):
        func = expr.func
        if isinstance(func, nodes.Attribute) and func.attrname in SELF_RETURNING_METHODS:
            return _constructions(func.expr, depth - 1)
        callee = infer.callee_qname(expr) or infer.dotted_name(func)
        if callee in MODEL_PASSTHROUGH and expr.args:
            return _constructions(expr.args[0], depth - 1)
        if isinstance(func, nodes.Attribute) and func.attrname in CLASS_CONSTRUCTORS:
            built = infer.safe_infer(func.expr)  # ``ScoreModel.load_from_checkpoint(path)``: an instance of it
            if isinstance(built, nodes.ClassDef) and loops.of_project(built, expr):
                return [(built, None)]
        cls = param_count.resolve_class(func)  # the class a constructor names, sibling modules included
        return [(cls, expr)] if cls is not None else None
    if isinstance(expr, nodes.Attribute) and expr.attrname == "module":
        return _constructions(expr.expr, depth - 1)
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = infer.bound_values(expr) or (_binding_values(expr) if isinstance(expr, nodes.Name) else None)
        if values:
            found: List["tuple[nodes.ClassDef, Optional[nodes.Call]]"] = []
            for value in values:
                inner = _constructions(value, depth - 1)
                if not inner:
                    return None
                found.extend(inner)
            return found
    cls = infer.instance_class(expr)
    return [(cls, None)] if cls is not None else None


def _binding_values(name: nodes.Name) -> Optional[List[nodes.NodeNG]]:
    """What ``name`` may hold when it is bound both as a parameter and by assignments
    (``model = model.train()`` in the function that takes ``model``): the assigned values and what
    the call sites pass for the parameter; None when one binding is of another kind."""
    try:
        _, bindings = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return None
    values: List[nodes.NodeNG] = []
    for binding in bindings:
        if not isinstance(binding, nodes.AssignName):
            return None
        if isinstance(binding.parent, nodes.Arguments):
            uses = [u for u in dataflow.name_uses(binding) if dataflow.single_binding(u) is binding]
            passed = infer.bound_values(uses[0]) if uses else None
            if not passed:
                return None
            values.extend(passed)
        elif isinstance(binding.parent, nodes.Assign) and binding in binding.parent.targets:
            values.append(binding.parent.value)
        else:
            return None
    return values or None


def _class_mode(cls: nodes.ClassDef, call: Optional[nodes.Call], depth: int, seen: set) -> Optional[bool]:
    """:func:`mode_dependent` for an instance of ``cls`` built by ``call`` (None: not seen)."""
    if depth <= 0:
        return None
    qname = cls.qname()
    if qname in INSTANCE_NORMS:
        tracking = infer.argument(call, "track_running_stats", 4) if call is not None else None
        if call is not None and tracking is None:
            return False  # torch's default: instance statistics in both modes
        return (tracking.value is True) if isinstance(tracking, nodes.Const) else None
    if infer.class_is_subclass_of(cls, MODE_DEPENDENT_LAYERS):
        return True
    if qname.startswith("torch."):
        return False if qname in MODE_FREE_LAYERS or infer.class_is_subclass_of(cls, LOSS_BASES) else None
    if id(cls) in seen:
        return False  # a class built inside itself: its first reading answers
    if not infer.class_is_subclass_of(cls, MODULE_BASES):
        return None
    seen.add(id(cls))
    plain = call is not None and _plain_arguments(call)
    try:
        ancestors = [cls] + [a for a in itertools.islice(cls.ancestors(), 32) if a.qname() != "builtins.object"]
    except (AstroidError, RecursionError):
        return None
    answers: List[Optional[bool]] = []
    for klass in ancestors:
        if klass.qname().startswith("torch."):
            answers.append(_class_mode(klass, None, depth - 1, seen) if klass.qname() != "torch.nn.Module" else False)
            continue
        if not _read_source(klass) or not all(isinstance(infer.safe_infer(b), nodes.ClassDef) for b in klass.bases):
            return None  # a base astroid does not read (a library mixin) may read ``self.training``
        for method in klass.mymethods():
            if any(a.attrname == "training" for a in method.nodes_of_class(nodes.Attribute)):
                return True
            answers.append(_built_in(method, method.name == "__init__", plain, depth - 1, seen))
    if True in answers:
        return True
    return None if None in answers else False


def _container_mode(call: nodes.Call, depth: int, seen: set) -> Optional[bool]:
    """:func:`mode_dependent` for a container built in place by ``call`` (not in a class's constructor,
    whose registered values ``_built_in`` reads): from the modules its arguments build (``nn.Dropout(0.1)``:
    True); a module handed in by name or unpacked (``*layers``) is unknown."""
    answers: List[Optional[bool]] = []
    for value in _call_values(call):
        for element in value.elts if isinstance(value, (nodes.List, nodes.Tuple)) else [value]:
            built = isinstance(element, nodes.Call)
            answers.append(_call_mode(element, True, False, depth - 1, seen) if built else None)
            if answers[-1] is True:
                return True
    return None if None in answers else False


def _read_source(node: nodes.NodeNG) -> bool:
    """``node`` comes from source astroid read: the checked file or one of the project's modules (never
    torch's stubs, the standard library or an installed package, which astroid is not given)."""
    name = node.root().name
    top = name.split(".")[0]
    return top not in brain.STDLIB_READ and top != "torch"


def _plain_arguments(call: nodes.Call) -> bool:
    """Every argument of a constructor call is a plain constant (so no module is handed in)."""
    values = list(call.args or []) + [k.value for k in call.keywords or []]
    return all(_plain_value(v) for v in values)


def _plain_value(expr: nodes.NodeNG) -> bool:
    resolved = static_values.evaluate(expr)
    return resolved is not None and _plain_python(resolved.value)


def _plain_python(value: object) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain_python(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, complex, str, bytes))


def _built_in(func: nodes.FunctionDef, constructing: bool, plain: bool, depth: int, seen: set) -> Optional[bool]:
    """What the modules ``func`` builds say (True / False / None as :func:`mode_dependent`).  In a
    constructor (``__init__`` and the helpers it calls) a call that does not resolve, or a value
    that is registered and may be a module handed in (a parameter, when the construction's arguments
    are not all plain constants; an attribute of another object), is unknown."""
    if depth <= 0:
        return None
    answers: List[Optional[bool]] = []
    for call in func.nodes_of_class(nodes.Call):
        answers.append(_call_mode(call, constructing, plain, depth, seen))
        if answers[-1] is True:
            return True
        if constructing and _registers_values(call) and not all(
            _known_value(a, func, plain, depth) for a in _call_values(call)
        ):
            answers.append(None)
    if constructing:
        for assign in func.nodes_of_class((nodes.Assign, nodes.AnnAssign)):
            targets = assign.targets if isinstance(assign, nodes.Assign) else [assign.target]
            on_self = any(
                isinstance(t, nodes.AssignAttr) or isinstance(t, nodes.Subscript)
                for target in targets
                for t in [target] + list(target.nodes_of_class((nodes.AssignAttr, nodes.Subscript)))
            )
            if on_self and assign.value is not None and not _known_value(assign.value, func, plain, depth):
                answers.append(None)
    if True in answers:
        return True
    return None if None in answers else False


def _call_mode(call: nodes.Call, constructing: bool, plain: bool, depth: int, seen: set) -> Optional[bool]:
    func = call.func
    receiver = func.expr if isinstance(func, nodes.Attribute) else None
    if isinstance(receiver, nodes.Call) and infer.call_name(receiver) == "super":
        return False  # ``super().__init__(...)``: the base classes are read on their own
    callee = infer.safe_infer(func)
    if isinstance(callee, nodes.ClassDef):
        if callee.qname().startswith("torch.nn.") or infer.class_is_subclass_of(callee, MODULE_BASES):
            return _class_mode(callee, call, depth - 1, seen)
        return False  # not a module (an optimizer ``optim.Adam(self.parameters())``): never registered
    function = callee
    while isinstance(function, (BoundMethod, UnboundMethod)):
        function = function._proxied
    if isinstance(function, nodes.FunctionDef):
        if _read_source(function) and constructing:
            return _built_in(function, True, plain, depth - 1, seen)
        return False
    if isinstance(callee, Instance):
        return False  # calling a module or another object builds nothing that registers
    return None if constructing else False


def _registers_values(call: nodes.Call) -> bool:
    """A container constructor (``nn.Sequential(*layers)``), a registering method
    (``layers.append(x)``, ``self.add_module(name, m)``, ``setattr(self, n, m)``), or a call of a
    project class or helper (its arguments may be stored)."""
    name = infer.call_name(call)
    if name in _REGISTERING_METHODS or name == "__init__":
        return True  # ``super().__init__(backbone)`` hands values to a base class
    callee = infer.safe_infer(call.func)
    while isinstance(callee, (BoundMethod, UnboundMethod)):
        callee = callee._proxied
    if isinstance(callee, nodes.ClassDef):
        return callee.qname() in ("torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict") or (
            _read_source(callee) and infer.class_is_subclass_of(callee, MODULE_BASES)
        )
    return isinstance(callee, nodes.FunctionDef) and _read_source(callee)


def _call_values(call: nodes.Call) -> List[nodes.NodeNG]:
    return list(call.args or []) + [k.value for k in call.keywords or []]


def _known_value(expr: nodes.NodeNG, func: nodes.FunctionDef, plain: bool, depth: int) -> bool:
    """``expr``, stored on the module or registered, holds nothing from outside the classes read: a
    constant, a call (read on its own), ``self.x``, a literal or comprehension of such, a local bound
    to such, a parameter of a helper (its caller's argument is checked where it is passed), or a
    parameter of ``__init__`` when the construction passes plain constants or its default is one."""
    if depth <= 0:
        return False
    if isinstance(expr, (nodes.Const, nodes.Call, nodes.JoinedStr, nodes.Lambda)):
        return True
    if isinstance(expr, nodes.Starred):
        return _known_value(expr.value, func, plain, depth - 1)
    if isinstance(expr, (nodes.List, nodes.Tuple, nodes.Set)):
        return all(_known_value(e, func, plain, depth - 1) for e in expr.elts)
    if isinstance(expr, nodes.Dict):
        return all(_known_value(v, func, plain, depth - 1) for _, v in expr.items)
    if isinstance(expr, (nodes.ListComp, nodes.GeneratorExp, nodes.SetComp)):
        return _known_value(expr.elt, func, plain, depth - 1)
    if isinstance(expr, nodes.DictComp):
        return _known_value(expr.value, func, plain, depth - 1)
    if isinstance(expr, (nodes.BinOp, nodes.UnaryOp, nodes.BoolOp, nodes.Compare)):
        return all(_known_value(c, func, plain, depth - 1) for c in expr.get_children())
    if isinstance(expr, nodes.IfExp):
        return _known_value(expr.body, func, plain, depth - 1) and _known_value(expr.orelse, func, plain, depth - 1)
    if isinstance(expr, nodes.Subscript):
        return _known_value(expr.value, func, plain, depth - 1)
    if isinstance(expr, nodes.Attribute):
        if isinstance(expr.expr, nodes.Name) and expr.expr.name == "self":
            return True
        return _plain_value(expr)
    if isinstance(expr, nodes.Name):
        binding = dataflow.single_binding(expr)
        if binding is not None and isinstance(binding.parent, nodes.Arguments):
            if binding.scope() is not func or func.name != "__init__":
                return True  # a helper's parameter: its caller's argument is checked at the call
            return plain or _plain_default(func, expr.name)
        if binding is not None and isinstance(binding.parent, (nodes.For, nodes.Comprehension)):
            return binding.parent.target is binding and _known_value(binding.parent.iter, func, plain, depth - 1)
        values = dataflow.assigned_values(expr)
        if values:
            return all(_known_value(v, func, plain, depth - 1) for v in values)
        value = infer.safe_infer(expr)
        return isinstance(value, nodes.ClassDef) or _plain_value(expr)
    return _plain_value(expr)


def _plain_default(func: nodes.FunctionDef, name: str) -> bool:
    """The parameter ``name`` of ``func`` has a plain constant default or a scalar annotation (``int``)."""
    args = func.args
    positional = list(args.posonlyargs or []) + list(args.args or [])
    names = [a.name for a in positional]
    if name in names:
        index = names.index(name)
        annotations = list(args.posonlyargs_annotations or []) + list(args.annotations or [])
        annotation = annotations[index] if index < len(annotations) else None
        shift = index - (len(names) - len(args.defaults or []))
        default = args.defaults[shift] if shift >= 0 else None
    else:
        kw_names = [a.name for a in args.kwonlyargs or []]
        if name not in kw_names:
            return False
        index = kw_names.index(name)
        annotation = (args.kwonlyargs_annotations or [None] * len(kw_names))[index]
        default = (args.kw_defaults or [None] * len(kw_names))[index]
    if isinstance(annotation, nodes.Name) and annotation.name in ("int", "float", "bool", "str"):
        return True
    return isinstance(default, nodes.Const) and default.value is not None
