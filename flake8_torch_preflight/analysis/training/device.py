"""Where values live and move: does a file use CUDA, is an expression a tensor, on the host or on
the device, and where does a ``.to()``/``.cuda()``/``.cpu()`` call send its receiver.

Used by TP010 (host-device syncs), TP011 (redundant transfers) and TP012 (DataLoader tuning);
any rule that needs "this file runs on a GPU" should ask ``uses_cuda``.

Everything is decided from resolved evidence (astroid inference against the torch stubs,
reaching assignments from ``dataflow``); the one name-based fallback is ``DEVICE_NAME``, used
only when a ``.to(x)`` argument cannot be resolved at all (documented at the constant).  Every
predicate answers False when it cannot tell.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Optional, Set

from astroid import nodes
from astroid.bases import Instance

from ..setup import brain
from ..semantic import dataflow, infer, memo, project
from . import frameworks, gradients
from .torch_names import MODULE_BASES

#: Classes whose instances are tensors (``nn.Parameter`` subclasses ``torch.Tensor`` in the stubs).
TENSOR_BASES = frozenset({"torch.Tensor"})

#: Tensor methods that copy a value to the host, so the host waits for every queued kernel.
SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})

#: Builtins that read a tensor's value on the host (``float(loss)`` calls ``.item()``).
SYNC_BUILTINS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})

#: Calls that block the host until the device (or a stream, or an event) is idle.
SYNC_FUNCTIONS = frozenset({"torch.cuda.synchronize", "torch.cuda.Stream.synchronize", "torch.cuda.Event.synchronize"})

#: Tensor methods whose result lives on the host: the download (a sync) already happened.
HOST_RESULT_METHODS = SYNC_METHODS

#: torch factories that build a new tensor on the host unless given ``device=``.
#: (``*_like`` factories follow their input's device, so they are not listed.)
HOST_FACTORIES = frozenset(
    {
        "torch.tensor",
        "torch.as_tensor",
        "torch.from_numpy",
        "torch.zeros",
        "torch.ones",
        "torch.empty",
        "torch.full",
        "torch.arange",
        "torch.linspace",
        "torch.eye",
        "torch.rand",
        "torch.randn",
        "torch.randint",
        "torch.randperm",
    }
)

#: Device types that are the host (``meta`` holds no data at all).
HOST_DEVICE_TYPES = frozenset({"cpu", "meta"})

#: Device types of accelerators (a string ``"cuda:1"`` or ``torch.device("mps")``).
ACCELERATOR_DEVICE_TYPES = frozenset({"cuda", "mps", "xpu", "npu", "hpu", "xla", "mtia", "privateuseone"})

#: A device string naming CUDA; any such constant in a file is evidence that it runs on CUDA.
CUDA_STRING = re.compile(r"^cuda(:\d+)?$")

#: Distributed backends that only run on CUDA devices (``init_process_group("nccl")``).
CUDA_BACKENDS = frozenset({"nccl"})

#: Qualified-name prefixes whose use means the file targets CUDA (``torch.cuda.is_available()``,
#: ``torch.cuda.amp.GradScaler()``, ``torch.backends.cudnn.benchmark = True``).  The generic
#: ``torch.accelerator`` API counts too: it picks CUDA where there is one, and the devices it
#: picks otherwise (MPS, XPU) queue work and sync the same way.
CUDA_PREFIXES = ("torch.cuda.", "torch.backends.cudnn", "torch.accelerator")

#: Method names that move a receiver between host and device.
TRANSFER_METHODS = frozenset({"to", "cuda", "cpu"})

#: Fallback, used only when the argument of ``.to(x)`` cannot be resolved at all (a parameter
#: with no call site, an attribute of an opaque config): names people give device handles.
#: ``.to(dtype)`` with an unresolved dtype is the risk, hence names that never mean a dtype.
DEVICE_NAME = re.compile(r"(^|_)(device|dev|gpu|cuda|rank|local_rank|accelerator)(_|\d|$)", re.IGNORECASE)

#: How far value origins are followed (assignments, method chains, loop targets).
MAX_DEPTH = 8


# -- does the file use CUDA -------------------------------------------------------------------

_CUDA_MEMO: "Dict[nodes.Module, bool]" = memo.per_file()
_CPU_MEMO: "Dict[nodes.Module, bool]" = memo.per_file()


def uses_cuda(module: nodes.Module) -> bool:
    """The file targets CUDA: a ``"cuda"``/``"cuda:N"`` device string, a ``.cuda()`` call, a
    ``torch.cuda.*`` (other than ``CUDA_NEUTRAL``: a seeding helper's ``torch.cuda.manual_seed(s)``),
    ``torch.backends.cudnn`` or ``torch.accelerator`` use or import, or the ``nccl`` distributed backend.

    "When available" counts (``"cuda" if torch.cuda.is_available() else "cpu"``): the
    script is written to run on CUDA.  A file that only receives an opaque ``device``
    argument has no evidence and answers False.
    """
    cached = _CUDA_MEMO.get(module)
    if cached is None:
        cached = _find_cuda_evidence(module)
        _CUDA_MEMO[module] = cached
    return cached


#: Calls that hand a model or tensors to a framework or wrapper that may place them on an accelerator.
PLACING_CALLS = frozenset({
    "prepare", "setup", "setup_module", "DataParallel", "DistributedDataParallel", "FullyShardedDataParallel",
    "Trainer", "Fabric", "Accelerator", "set_default_device", "initialize", "from_pretrained",
})


def cpu_only(module: nodes.Module) -> bool:
    """Nothing in the file places work on an accelerator: no CUDA evidence (``uses_cuda``), no
    ``.to(...)`` whose target is a device or may be one (``transfer_target``), no ``.cuda()``, and no
    call that hands the model to a framework or wrapper that places it (``PLACING_CALLS``, by name)."""
    cached = _CPU_MEMO.get(module)
    if cached is None:
        cached = _CPU_MEMO[module] = not uses_cuda(module) and not any(
            _may_place(call) for call in module.nodes_of_class(nodes.Call)
        )
    return cached


#: Words a project that may run on an accelerator writes somewhere (its code, a launch script, a
#: configuration, its README): CUDA, a GPU, a framework or wrapper that places the model.  Not inside
#: the name of an ``nvidia-*`` wheel (``nvidia-cuda-runtime-cu12``, ``nvidia-nccl-cu12``): torch's own
#: dependencies on Linux, pinned by any ``pip freeze`` whatever the run's device.
ACCELERATOR_WORDS = re.compile(
    r"(?<!nvidia-)\b(cuda|gpus?|accelerators?|fabric|trainer|devices|mps|xla|tpu|device_map|deepspeed|dataparallel|"
    r"distributeddataparallel|nccl)\b",
    re.IGNORECASE,
)


def cpu_project(module: nodes.Module) -> bool:
    """No file of the module's project names an accelerator (``ACCELERATOR_WORDS``): a program that
    runs on the CPU, whichever of its modules builds the model.  Unknown (a file seen alone) is not."""
    path = getattr(module, "file", None)
    return bool(path) and project.mentions(str(path), ACCELERATOR_WORDS) is False


def _may_place(call: nodes.Call) -> bool:
    """A transfer to a device (or to one a ``**kwargs`` names), or a call that hands work to a placer."""
    if transfer_target(call) in ("accelerator", "device") or infer.call_name(call) in PLACING_CALLS:
        return True
    return infer.method_name(call) == "to" and any(k.arg is None for k in call.keywords or [])


#: ``torch.cuda`` functions that seed or ask about the device without placing any work on it: a seeding
#: helper copied into a CPU script calls them too.
CUDA_NEUTRAL = frozenset({
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "is_available", "device_count",
    "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
})


def _find_cuda_evidence(module: nodes.Module) -> bool:
    for node in module.nodes_of_class((nodes.Const, nodes.Call, nodes.Attribute, nodes.Import, nodes.ImportFrom)):
        if isinstance(node, nodes.Const):
            if isinstance(node.value, str) and (CUDA_STRING.match(node.value) or node.value in CUDA_BACKENDS):
                return True
        elif isinstance(node, nodes.Call):
            if infer.method_name(node) == "cuda" and isinstance(node.func, nodes.Attribute):
                if not _resolved_non_torch(node.func.expr):
                    return True
        elif isinstance(node, nodes.Import):
            if any(_is_cuda_name(name) for name, _ in node.names):
                return True
        elif isinstance(node, nodes.ImportFrom):
            if not node.level and any(_is_cuda_name("{}.{}".format(node.modname, name)) for name, _ in node.names):
                return True
        elif node.attrname in ("cuda", "cudnn", "accelerator"):
            # ``torch.cuda.x`` / ``torch.backends.cudnn.x``: resolve the chain, never the word alone.
            if isinstance(node.parent, nodes.Attribute) and node.parent.attrname in CUDA_NEUTRAL:
                continue  # ``torch.cuda.manual_seed(s)`` in a seeding helper: no work placed on the GPU
            if _is_cuda_name(infer.dotted_name(node) or infer.qname(node) or ""):
                return True
    return False


def _is_cuda_name(name: str) -> bool:
    return name in ("torch.cuda", "torch.backends.cudnn", "torch.accelerator") or name.startswith(CUDA_PREFIXES)


def _resolved_non_torch(expr: nodes.NodeNG) -> bool:
    """``expr`` resolves to an instance of a class that is neither a tensor nor a module."""
    cls = infer.instance_class(expr)
    if cls is None:
        return False
    return not (infer.class_is_subclass_of(cls, TENSOR_BASES) or infer.class_is_subclass_of(cls, MODULE_BASES))


# -- cheap name pre-filter ----------------------------------------------------------------------

_ALIASES: "Dict[nodes.Module, Dict[str, FrozenSet[str]]]" = memo.per_file()


def local_aliases(module: nodes.Module, name: str) -> FrozenSet[str]:
    """Names under which the file may refer to something called ``name``: the name itself,
    ``import ... as`` / ``from ... import name as alias`` aliases, and plain rebindings
    (``Loader = DL``), transitively.  A syntactic pre-filter before inference, never a verdict."""
    table = _ALIASES.setdefault(module, {})
    if name not in table:
        found: Set[str] = {name}
        changed = True
        while changed:
            changed = False
            for node in module.nodes_of_class((nodes.ImportFrom, nodes.Import, nodes.Assign)):
                if isinstance(node, (nodes.ImportFrom, nodes.Import)):
                    for imported, alias in node.names:
                        if alias and imported.split(".")[-1] in found and alias not in found:
                            found.add(alias)
                            changed = True
                elif isinstance(node.value, (nodes.Name, nodes.Attribute)):
                    source = dataflow.terminal_name(node.value)
                    for target in node.targets:
                        if source in found and isinstance(target, nodes.AssignName) and target.name not in found:
                            found.add(str(target.name))
                            changed = True
        table[name] = frozenset(found)
    return table[name]


# -- tensors ------------------------------------------------------------------------------------

_TENSOR_METHODS: Dict[str, FrozenSet[str]] = {}


def tensor_methods() -> FrozenSet[str]:
    """Methods of the stub ``torch.Tensor`` whose every return is a tensor (``Tensor()`` or ``self``)."""
    if "methods" not in _TENSOR_METHODS:
        found: Set[str] = set()
        brain.install()
        torch_stub = brain.stub_module("torch")
        klass = torch_stub.locals.get("Tensor", [None])[0] if torch_stub is not None else None
        if isinstance(klass, nodes.ClassDef):
            for method in klass.mymethods():
                returns = list(method.nodes_of_class(nodes.Return))
                if returns and all(_returns_tensor(r.value) for r in returns):
                    found.add(str(method.name))
        _TENSOR_METHODS["methods"] = frozenset(found)
    return _TENSOR_METHODS["methods"]


def tensor_attribute(name: str) -> bool:
    """``name`` is an attribute or method torch's ``Tensor`` defines (in the stubs): not one a library
    set on a parameter (DeepSpeed's ``p.ds_numel``, ``p.ds_shape``)."""
    if "attributes" not in _TENSOR_METHODS:
        brain.install()
        torch_stub = brain.stub_module("torch")
        klass = torch_stub.locals.get("Tensor", [None])[0] if torch_stub is not None else None
        _TENSOR_METHODS["attributes"] = frozenset(klass.locals) if isinstance(klass, nodes.ClassDef) else frozenset()
    return name in _TENSOR_METHODS["attributes"]


def _returns_tensor(value: Optional[nodes.NodeNG]) -> bool:
    if isinstance(value, nodes.Name) and value.name == "self":
        return True
    return isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name) and value.func.name == "Tensor"


def is_tensor(expr: nodes.NodeNG, depth: int = MAX_DEPTH) -> bool:
    """``expr`` is a torch tensor: resolved to one, or built from one by tensor methods,
    indexing, ``.grad``/``.data``, arithmetic, or iterating parameters of a resolved module."""
    if depth <= 0:
        return False
    if isinstance(expr, nodes.Attribute) and expr.attrname == "grad" and infer.safe_infer(expr.expr) is None:
        return True  # ``p.grad`` of a value not read (a parameter a helper is handed): autograd's gradient
    if isinstance(expr, nodes.Attribute) and expr.attrname in ("grad", "data", "T"):
        return is_tensor(expr.expr, depth - 1)  # the stub's ``grad = None`` would say otherwise
    value = infer.safe_infer(expr)
    if value is not None:
        return isinstance(value, Instance) and infer.class_is_subclass_of(value._proxied, TENSOR_BASES)
    if isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute):
        return expr.func.attrname in tensor_methods() and is_tensor(expr.func.expr, depth - 1)
    if isinstance(expr, nodes.Subscript):
        return is_tensor(expr.value, depth - 1)
    if isinstance(expr, nodes.BinOp):
        return is_tensor(expr.left, depth - 1) or is_tensor(expr.right, depth - 1)
    if isinstance(expr, nodes.Name):
        source = iteration_source(expr)
        if source is not None:
            return _yields_tensors(source[0], source[1], depth - 1)
        values = infer.bound_values(expr)  # assignments, or what the call sites pass for a parameter
        return values is not None and len(values) > 0 and all(is_tensor(v, depth - 1) for v in values)
    return False


def iteration_source(name: nodes.Name) -> "Optional[tuple[nodes.NodeNG, List[int]]]":
    """For a name bound only as a ``for``/comprehension target: (iterable, index path in the target).

    ``for n, p in model.named_parameters()`` gives ``(model.named_parameters(), [1])`` for ``p``.
    """
    binding = dataflow.single_binding(name)
    if binding is None:
        return None
    path: List[int] = []
    child: nodes.NodeNG = binding
    parent = child.parent
    while isinstance(parent, (nodes.Tuple, nodes.List)):
        path.insert(0, parent.elts.index(child))
        child, parent = parent, parent.parent
    if isinstance(parent, (nodes.For, nodes.Comprehension)) and parent.target is child:
        return parent.iter, path
    return None


#: Module methods yielding tensors, and the position of the tensor in each element.
_MODULE_TENSOR_ITERATORS = {"parameters": [], "buffers": [], "named_parameters": [1], "named_buffers": [1]}


def _yields_tensors(iterable: nodes.NodeNG, path: List[int], depth: int) -> bool:
    """Elements of ``iterable`` at ``path`` are tensors."""
    if depth <= 0:
        return False
    if isinstance(iterable, nodes.Call):
        method = infer.method_name(iterable)
        if method in _MODULE_TENSOR_ITERATORS and path == _MODULE_TENSOR_ITERATORS[method]:
            owner = iterable.func.expr
            # a receiver inference cannot follow (``model`` handed to ``__init__``): only modules
            # have ``parameters()`` / ``named_parameters()`` (the documented name fallback)
            return infer.safe_infer(owner) is None or infer.is_instance_of(owner, MODULE_BASES)
        func = iterable.func
        if isinstance(func, nodes.Name) and infer.qname(func) in ("builtins.list", "builtins.tuple") and iterable.args:
            return _yields_tensors(iterable.args[0], path, depth - 1)
        if isinstance(func, nodes.Name) and infer.qname(func) == "builtins.enumerate" and iterable.args:
            return bool(path) and path[0] == 1 and _yields_tensors(iterable.args[0], path[1:], depth - 1)
        if isinstance(func, nodes.Name) and infer.qname(func) == "builtins.filter" and len(iterable.args) == 2:
            return _yields_tensors(iterable.args[1], path, depth - 1)  # filter(lambda p: p.requires_grad, ...)
    if isinstance(iterable, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp)):
        element = iterable.elt  # [p for p in model.parameters() if p.requires_grad]
        for index in path:
            if not isinstance(element, (nodes.Tuple, nodes.List)) or index >= len(element.elts):
                return False
            element = element.elts[index]
        return is_tensor(element, depth - 1)
    if isinstance(iterable, (nodes.Name, nodes.Attribute)):  # a name, or a list kept on ``self``
        values = dataflow.assigned_values(iterable)
        if values and all(_yields_tensors(v, path, depth - 1) for v in values):
            return True
    return not path and is_tensor(iterable, depth - 1)  # iterating a tensor yields its rows


# -- host or device ---------------------------------------------------------------------------


def is_host_value(expr: nodes.NodeNG, depth: int = MAX_DEPTH) -> bool:
    """``expr`` provably lives on the host: a download's result, a host factory without
    ``device=``, or something computed from one by tensor methods and indexing."""
    if depth <= 0:
        return False
    if isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute):
        method = expr.func.attrname
        if method in HOST_RESULT_METHODS or (method == "to" and transfer_target(expr) == "host"):
            return True
        if method in tensor_methods() and method not in TRANSFER_METHODS:
            return is_host_value(expr.func.expr, depth - 1)
    if isinstance(expr, nodes.Call):
        if infer.callee_qname(expr) in HOST_FACTORIES:
            device = infer.argument(expr, "device")
            if device is None:
                return context_device(expr) in (None, "host")
            return classify_device(device) == "host"
        return False
    if isinstance(expr, nodes.Subscript):
        return is_host_value(expr.value, depth - 1)
    if isinstance(expr, nodes.Name):
        source = iteration_source(expr)
        if source is not None:  # a row of a host tensor is on the host
            return not source[1] and is_host_value(source[0], depth - 1)
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = dataflow.assigned_values(expr)
        return values is not None and len(values) > 0 and all(is_host_value(v, depth - 1) for v in values)
    return False


#: NumPy's array constructors: an element stored into their result is converted to a NumPy scalar.
NUMPY_ARRAYS = frozenset("numpy." + name for name in (
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "array", "asarray",
    "arange", "linspace", "eye",
))


def is_numpy_array(expr: nodes.NodeNG) -> bool:
    """``expr`` is a name (or ``self.x``) bound only to NumPy array constructors (``np.zeros(n)``), none
    with ``dtype=object``: storing a tensor into an element converts it to a number, graph and all gone
    (``hist[i] = loss``)."""
    values = dataflow.assigned_values(expr) if isinstance(expr, (nodes.Name, nodes.Attribute)) else None
    if not values:
        return False
    for value in values:
        if not isinstance(value, nodes.Call) or (infer.dotted_name(value.func) or "") not in NUMPY_ARRAYS:
            return False
        dtype = infer.argument(value, "dtype")
        if dtype is not None and _object_dtype(dtype):
            return False
    return True


def _object_dtype(dtype: nodes.NodeNG) -> bool:
    """``object``, ``np.object_``, ``"O"`` or ``"object"``: an array of Python objects keeps what it is given."""
    if isinstance(dtype, nodes.Const):
        return dtype.value in ("O", "object")
    return dataflow.terminal_name(dtype) in ("object", "object_")


def is_device_value(expr: nodes.NodeNG, depth: int = MAX_DEPTH) -> bool:
    """``expr`` provably lives on an accelerator: ``.cuda()``, ``.to(<accelerator>)``, a
    factory with ``device=<accelerator>``, or computed from one by tensor methods and indexing."""
    if depth <= 0:
        return False
    if isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute):
        method = expr.func.attrname
        if method in TRANSFER_METHODS:
            return transfer_target(expr) in ("accelerator", "device")
        if method in tensor_methods():
            return is_device_value(expr.func.expr, depth - 1)
    if isinstance(expr, nodes.Call):
        if infer.callee_qname(expr) in HOST_FACTORIES:
            device = infer.argument(expr, "device")
            placed = classify_device(device) if device is not None else context_device(expr)
            return placed in ("accelerator", "device")
        return False
    if isinstance(expr, nodes.Subscript):
        return is_device_value(expr.value, depth - 1)
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = dataflow.assigned_values(expr)
        return values is not None and len(values) > 0 and all(is_device_value(v, depth - 1) for v in values)
    return False


def transfer_target(call: nodes.Call) -> Optional[str]:
    """Where a ``.to()``/``.cuda()``/``.cpu()`` call sends its receiver.

    ``"host"`` (``.cpu()``, ``.to("cpu")``), ``"accelerator"`` (provably a device:
    ``.cuda()``, ``.to("cuda:0")``, ``.to(torch.device("cuda"))``), ``"device"`` (a
    ``torch.device`` built from something unknown, or an unresolved argument named like a
    device), or None (not a transfer: ``.to(torch.float16)``, ``.to(other_tensor)``, unknown).
    """
    method = infer.method_name(call)
    if method == "cuda":
        return "accelerator"
    if method == "cpu":
        return "host"
    if method != "to":
        return None
    dest = infer.argument(call, "device")
    if dest is None and call.args and not isinstance(call.args[0], nodes.Starred):
        dest = call.args[0]
    if dest is None:
        return None
    return classify_device(dest)


def classify_device(expr: nodes.NodeNG, depth: int = MAX_DEPTH) -> Optional[str]:
    """``"host"``, ``"accelerator"``, ``"device"`` or None for a device argument (see ``transfer_target``).

    Constants, ``a if c else b``, ``torch.device(...)`` and reaching assignments are read
    structurally (a name bound to ``"cuda" if ok else "cpu"`` is ``"device"``: it may be either);
    parameters through their in-file call sites; inference last.
    """
    if depth <= 0:
        return None
    if isinstance(expr, nodes.Const):
        return _classify_string(expr.value)
    if isinstance(expr, nodes.IfExp):
        return _merge([classify_device(expr.body, depth - 1), classify_device(expr.orelse, depth - 1)])
    if isinstance(expr, nodes.Call) and infer.callee_qname(expr) == "torch.device":
        first = expr.args[0] if expr.args else infer.argument(expr, "type")
        if first is None or isinstance(first, nodes.Starred):
            return "device"
        return classify_device(first, depth - 1) or "device"
    if isinstance(expr, (nodes.Name, nodes.Attribute)):
        values = infer.bound_values(expr)
        if values:
            merged = _merge([classify_device(v, depth - 1) for v in values])
            if merged is not None:
                return merged
    value = infer.safe_infer(expr)
    if isinstance(value, nodes.Const):
        return _classify_string(value.value)
    if isinstance(value, Instance):
        return "device" if value._proxied.qname() == "torch.device" else None  # a dtype, a tensor, a user object
    if value is not None:
        return None
    name = dataflow.terminal_name(expr)
    if name is not None and DEVICE_NAME.search(name):
        return "device"
    return None


def context_device(node: nodes.NodeNG) -> Optional[str]:
    """The default device a ``with`` around ``node`` (in its function) sets for what is built there:
    ``with torch.device("cuda"):`` -> ``"accelerator"``, ``with fabric.init_module():`` -> ``"device"``
    (Fabric's), ``with torch.device("meta"):`` -> ``"host"``; None when no such block encloses it."""
    for _, item in gradients.with_items_around(node):
        if not isinstance(item, nodes.Call):
            continue
        if infer.callee_qname(item) == "torch.device":
            return classify_device(item)
        meaning = frameworks.call_meaning(item)
        if meaning is not None and meaning.builds_on_device:
            return "device"
    return None


def built_empty(node: nodes.NodeNG) -> bool:
    """``node`` runs where modules are built without initialising their weights (so building one
    draws no random numbers and fills no memory): ``with torch.device("meta"):``,
    ``with init_empty_weights():``, ``with fabric.init_module(empty_init=True):`` (the framework
    contexts from the framework table: ``skips_init``, ``skips_init_keyword``)."""
    for _, item in gradients.with_items_around(node):
        if not isinstance(item, nodes.Call):
            continue
        if infer.callee_qname(item) == "torch.device":
            first = item.args[0] if item.args else infer.argument(item, "type")
            values = infer.const_values(first) if first is not None else None
            if values and all(isinstance(v, str) and v.split(":")[0] == "meta" for v in values):
                return True
            continue
        meaning = frameworks.call_meaning(item)
        if meaning is None:
            continue
        if meaning.skips_init:
            return True
        if meaning.skips_init_keyword:
            flag = infer.argument(item, meaning.skips_init_keyword)
            if flag is not None and infer.const_values(flag) == [True]:
                return True
    return False


def _merge(kinds: "List[Optional[str]]") -> Optional[str]:
    """One answer for several possible devices: None if any is unknown, ``"device"`` if they differ."""
    if not kinds or any(k is None for k in kinds):
        return None
    distinct = set(kinds)
    return distinct.pop() if len(distinct) == 1 else "device"


def _classify_string(value: object) -> Optional[str]:
    if not isinstance(value, str):
        return None
    kind = value.split(":")[0]
    if kind in HOST_DEVICE_TYPES:
        return "host"
    if kind in ACCELERATOR_DEVICE_TYPES:
        return "accelerator"
    return None


def sync_text(call: nodes.Call) -> Optional[str]:
    """``call`` makes the host wait for the device (``.item()`` on a device tensor, ``float(t)``,
    ``torch.cuda.synchronize()``): how a message names it (``.item()``), else None.  A value provably
    on the host (``is_host_value``) makes no wait."""
    func = call.func
    if isinstance(func, nodes.Attribute) and func.attrname in SYNC_METHODS:
        receiver = func.expr
        if is_host_value(receiver) or not is_tensor(receiver):
            return None
        return ".{}()".format(func.attrname)
    if isinstance(func, nodes.Name) and func.name in ("float", "int", "bool"):
        if len(call.args) != 1 or call.keywords or infer.qname(func) not in SYNC_BUILTINS:
            return None
        arg = call.args[0]
        if is_host_value(arg) or not is_tensor(arg):
            return None
        return "{}(tensor)".format(func.name)
    if infer.call_name(call) == "synchronize" or isinstance(func, nodes.Name):
        name = infer.callee_qname(call)
        if name in SYNC_FUNCTIONS:
            return "{}()".format(name)
    return None
