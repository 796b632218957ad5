"""TP011 redundant-transfer: the same loop-invariant tensor or module moved to the device every iteration.

Invariance is read syntactically (``rules.tp011_redundant_transfer.invariance``): the loop never rebinds the name or
attribute chain, never changes it in place, and never sends it back to the host.  That holds
whatever the value is, so a receiver inference cannot resolve (a parameter with no call site) is
reported too, with a cost that covers both a tensor and a module; one that resolves to anything
but a tensor or a module is not.  The destination must be a device: a provable accelerator, or
an unresolved ``torch.device``/device-named argument in a file with CUDA evidence.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Set

from astroid import nodes
from astroid.const import Context
from astroid.exceptions import AstroidError

from ...analysis.semantic import branches, dataflow, infer, loops, memo, static_values
from ...analysis.training import device, models, origins, param_count, training_step
from . import invariance
from ...analysis.training.torch_names import DATALOADERS, MODULE_BASES, VARIABLE
from .._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ...analysis.setup.build import FileContext

#: Methods that move a receiver to the device (``.cpu()`` is a download, see ``device.transfer_target``).
TO_DEVICE_METHODS = frozenset({"to", "cuda"})

#: Host factories whose result differs on every call (new random values): not loop-invariant.
RANDOM_FACTORIES = frozenset({"torch.rand", "torch.randn", "torch.randint", "torch.randperm"})

#: Host factories that copy the data they are given.
DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy"})

#: The other host factories: their values follow from their shape (and fill) arguments, so they can be
#: built on the device with ``device=`` whatever those arguments are (a shape read from the batch too).
SHAPE_FACTORIES = device.HOST_FACTORIES - RANDOM_FACTORIES - DATA_FACTORIES

#: What the message says happens to the value, and the fix, by case.
RESENT = "is re-sent to the device each iteration unchanged"
BUILT = "is built on the host and copied each {}"
MOVE = "move it before the loop"
BUILD_THERE = "pass {}"

#: torch functions and tensor methods whose output size depends on the values: the host waits for the
#: device to learn it.  With ``device.sync_text``'s calls (reads of a value, explicit waits) they are
#: the calls that block the host (``blocks_host``).
#: (Only names the stubs define; ``torch.masked_select`` / ``argwhere`` as functions are not there yet.)
SIZE_SYNC_FUNCTIONS = frozenset({"torch.unique", "torch.nonzero"})
SIZE_SYNC_METHODS = frozenset({"unique", "nonzero", "masked_select", "argwhere", "unique_consecutive"})

#: ``nn.Module`` methods that return the module itself, looked through when matching receivers.
SELF_RETURNING_METHODS = frozenset({"eval", "train", "requires_grad_", "float", "half", "double", "bfloat16"})


@register
class RedundantTransfer(Rule):
    code, slug = "TP011", "redundant-transfer"
    requires = text_gate(r"\.(to|cuda)\s*\(")  # no transfer without one
    message = "{what} {how} ({cost}); {fix}"
    quoted = ("what",)
    rationale = (
        "A tensor that does not change between iterations (a name the loop never rebinds or modifies in "
        "place, class weights, a torch.tensor([...]) of constants) only needs to reach the GPU once. Calling "
        ".to(device) or .cuda() on it inside the batch loop makes a fresh host-to-device copy every step, "
        "which waits on pageable host memory and competes with the batch itself; doing it to the model walks "
        "every parameter and buffer on every step. A blocking copy (no non_blocking=True) also makes the host "
        "wait until the GPU has run everything queued before it (PyTorch's copy_kernel_cuda in "
        "aten/src/ATen/native/cuda/Copy.cu ends it with cudaStreamSynchronize), so the CPU can no longer run "
        "ahead of the GPU. The rule looks at batch loops (loops that call backward() "
        "or a resolved optimizer.step(), or iterate a DataLoader) and at a module's forward(), which runs once "
        "per step. A torch.zeros/ones/full/arange(...) built on the host (in the call, or in a name bound to it "
        "there) and then sent (.to(device), .cuda(), "
        ".type_as(x)) in either place is reported even when its shape is read from the batch: the shape changes "
        "nothing about the fix, which is to build it on the device (torch.zeros(..., device=x.device), "
        "x.new_zeros(...)) instead of allocating on the host and copying every step. Where the statements "
        "that always run just before the copy already make the host wait (torch.unique, masked_select, "
        "nonzero, .item()), the message prices it as a copy per step, not a new stall."
    )
    leaves_alone = (
        "Per-batch data, downloads (.cpu(), .to('cpu')), tensors created on the device, casts "
        "(.to(torch.float16)), values modified in place before being sent, and a model moved back and forth "
        "in the same loop (to the CPU for a checkpoint, then back) are not reported; nor is an unresolved "
        "device in a file that never uses CUDA."
        " A tensor rebound to its own device copy (``x = x.to(device)``) is left alone: from the second "
        "iteration on it is on the device and the call copies nothing (a module rebound that way is still walked)."
        " A small tensor is left alone: at most 16 values per sample (a label or weight per sample, an "
        "(n, 1) column) or at most 16,384 values in all (class weights, a literal): its copy takes "
        "microseconds and its stall is one gap between kernels; a size read from a tensor (x.shape) is "
        "not known to be small."
        " A transfer under a branch no run takes (``if DEBUG:`` with every assignment of the project "
        "leaving the flag False or None) is not reported, nor a copy that statements always run just before it "
        "in the same iteration or forward already made the host wait for (``.item()``, ``torch.unique``, "
        "``repeat_interleave`` by a tensor of counts, or a model called before it whose forward, or a layer "
        "it builds, waits: a host tensor copied in every graph convolution): it adds a small transfer, not a "
        "stall. The state a recurrence starts from (an LSTM's h0 and c0 handed to nn.LSTM/GRU/RNN or a cell, "
        "or a state a call rebinds step after step) is left alone: layers x directions x hidden values a "
        "sample, one step of the output for the whole sequence the forward runs over. One statement "
        "is one finding (``torch.cat((torch.ones(n, 1).cuda(), torch.zeros(n, k).cuda()))`` has one fix), and "
        "so is one forward() that builds several tensors on the host (an LSTM's h0 and c0, in each branch): "
        "the first is reported."
    )
    example_bad = (
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "device = torch.device('cuda')\n"
        "model = nn.Linear(10, 512).to(device)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "prototypes = torch.zeros(1000, 512)\n"
        "for x, y in DataLoader([], batch_size=8):\n"
        "    x, y = x.to(device), y.to(device)\n"
        "    loss = nn.functional.cross_entropy(model(x) @ prototypes.to(device).T, y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    optimizer.zero_grad()\n"
    )
    example_good = (
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "device = torch.device('cuda')\n"
        "model = nn.Linear(10, 512).to(device)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "prototypes = torch.zeros(1000, 512).to(device)\n"
        "for x, y in DataLoader([], batch_size=8):\n"
        "    x, y = x.to(device), y.to(device)\n"
        "    loss = nn.functional.cross_entropy(model(x) @ prototypes.T, y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    optimizer.zero_grad()\n"
    )

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        self._statements: Set[int] = set()  # ids of the statements (and forwards) already reported

    def visit_call(self, node: nodes.Call) -> None:
        method = infer.method_name(node)
        if method not in TO_DEVICE_METHODS and method != "type_as":
            return  # cheap syntactic check first
        loop = loops.innermost(node)
        forward = _module_forward(node)
        if loop is None and forward is None:
            return
        if loop is not None and forward is not None and not _is_batch_loop(loop):
            loop = None  # a loop inside forward() (over stages, over time) runs every step too
        target = _destination(node)
        if target is None or target == "host":
            return
        if target == "device" and not device.uses_cuda(node.root()):
            return  # an unresolved device in a file with no accelerator evidence may be the CPU
        receiver = node.func.expr
        if method != "type_as" and _few_values(receiver):
            return  # a label or weight per sample: the copy is microseconds, the stall between kernels too
        if loop is None:
            built = _shape_factory(_built_in(receiver, forward))
            if built is not None and _initial_state(node):
                return  # a recurrence's starting state: layers x hidden values a sample, once a sequence
            if built is not None:
                self._report(node, what=built, how=BUILT.format("forward"), cost=_cost(node, _TENSOR_COST),
                             fix=BUILD_THERE.format(_on_device(node)))
            return
        if training_step.under_periodic_branch(node, loop):
            return  # ``if step % 500 == 0:`` / ``if epoch == 0:`` does not run every iteration
        if method == "type_as":
            what = None
        else:
            what = _invariant_value(receiver, loop)
        built = _shape_factory(_built_in(receiver, loop)) if what is None else None
        if what is None and built is None:
            return
        if not _is_batch_loop(loop):
            return
        if built is not None:
            self._report(node, what=built, how=BUILT.format("iteration"), cost=_cost(node, _TENSOR_COST),
                         fix=BUILD_THERE.format(_on_device(node)))
            return
        assert what is not None
        if what[1] != _MODULE_COST and _rebinds_its_receiver(node):
            return  # ``x = x.to(device)``: from the second iteration on, x is there and .to() copies nothing
        self._report(node, what=what[0], how=RESENT, cost=_cost(node, what[1]), fix=MOVE)

    def _report(self, node: nodes.Call, **fields: str) -> None:
        if branches.reached_only_when_off(node):
            return  # ``if DEBUG:`` with the flag off wherever the project sets it: no run copies it
        if fields.get("cost") == _PAID_COST:
            return  # the host already waited just before: the copy adds a small transfer, no stall
        statement = id(node.statement())
        if statement in self._statements:
            return  # ``torch.cat((torch.ones(n, 1).cuda(), torch.zeros(n, k).cuda()))``: one fix, one finding
        self._statements.add(statement)
        if fields.get("how") == BUILT.format("forward"):
            forward = id(node.scope())
            if forward in self._statements:
                return  # ``h0 = torch.zeros(...).cuda(); c0 = torch.zeros(...).cuda()``: one forward, one fix
            self._statements.add(forward)
        self.report(node, **fields)


#: Recurrent layers (``nn.LSTM``, ``nn.GRUCell``...): their second argument is the state the recurrence starts from.
RECURRENT_LAYERS = frozenset({"torch.nn.RNNBase", "torch.nn.RNNCellBase"})


def _initial_state(node: nodes.Call) -> bool:
    """The tensor ``node`` sends is the state a recurrence starts from: the name it is assigned to
    (through ``Variable(...)`` too) is read only as the state argument of a recurrent layer
    (``self.lstm(x, (h0, c0))``, ``self.cell(x_t, hx=h)``) or of a call whose result rebinds it
    (``h = self.gru(x[:, t], h)`` in a loop over time steps: a cell of the project).  Such a state holds
    layers x directions x hidden values a sample, a step of the output, for a whole sequence the
    forward runs over: its copy is small next to the work it starts (``torch.zeros(1, b, 256).cuda()``)."""
    value: nodes.NodeNG = node
    while isinstance(value.parent, nodes.Call) and value in value.parent.args and \
            infer.dotted_name(value.parent.func) == VARIABLE:
        value = value.parent
    binding = dataflow.assignment_target(value, unpack=True)  # ``h0, c0 = h0.cuda(), c0.cuda()`` too
    if not isinstance(binding, nodes.AssignName):
        return False
    uses = dataflow.name_uses(binding)
    states = [use for use in uses if _state_argument(use, binding.name)]
    others = [use for use in uses if use not in states]
    return bool(states) and all(_rebound_too(use, binding) for use in others)


def _rebound_too(use: nodes.Name, binding: nodes.AssignName) -> bool:
    """``use`` may also read a later binding of its name (``return self.fc(h_t)`` after the loop that
    rebinds ``h_t``): what it reads is the recurrence's state, not only the initial one."""
    try:
        _, bindings = use.lookup(use.name)
    except (AstroidError, RecursionError):
        return False
    return any(other is not binding for other in bindings)


def _state_argument(use: nodes.Name, name: str) -> bool:
    argument: nodes.NodeNG = use
    while isinstance(argument.parent, nodes.Tuple):
        argument = argument.parent  # ``(h0, c0)``
    call = argument.parent
    if isinstance(call, nodes.Keyword) and call.arg == "hx":
        argument, call = call, call.parent
    if not isinstance(call, nodes.Call) or argument is call.func or (call.args and argument is call.args[0]):
        return False
    if infer.is_instance_of(call.func, RECURRENT_LAYERS):
        return True
    target = call.parent
    if isinstance(target, nodes.Assign):
        bound = [n.name for t in target.targets for n in t.nodes_of_class(nodes.AssignName)]
        return name in bound  # ``h_t, c_t = self.lstm(x[:, t], (h_t, c_t))``: carried from step to step
    return False


_TENSOR_COST = "a sync per step"  # a blocking host-to-device copy ends in cudaStreamSynchronize
_ASYNC_COST = "a copy per step"  # ``non_blocking=True``: the copy is queued, the host does not wait
_PAID_COST = "a copy per step, no new stall"  # the same block already blocks the host: not reported
_MODULE_COST = "a parameter walk per step"
_UNKNOWN_COST = "a copy or walk per step"


def _invariant_value(receiver: nodes.NodeNG, loop: "loops.Loop") -> Optional["tuple[str, str]"]:
    """(how the message names it, its cost) when ``receiver`` is the same value every iteration."""
    if isinstance(receiver, nodes.Call):
        return _constant_factory(receiver, loop)
    if not _is_reference(receiver):
        return None
    kind = _kind(receiver)
    if kind is None:
        return None
    text = dataflow.binding_text(receiver)
    if invariance.rebound_in(loop, receiver, ignore=_self_transfer) or invariance.mutated_in(loop, receiver):
        return None
    if _moved_to_host_in(loop, text):
        return None
    if kind == "module":
        return "module '{}'".format(text), _MODULE_COST
    if kind == "tensor":
        return "'{}'".format(text), _TENSOR_COST
    return "'{}'".format(text), _UNKNOWN_COST


def _is_reference(expr: nodes.NodeNG) -> bool:
    """A name or a chain of attributes on a name (``weights``, ``self.class_weights``, ``cfg.w``)."""
    while isinstance(expr, nodes.Attribute):
        expr = expr.expr
    return isinstance(expr, nodes.Name)


def _kind(receiver: nodes.NodeNG) -> Optional[str]:
    """``"module"``, ``"tensor"``, or ``"unknown"`` for a value inference cannot resolve; None
    when it resolves to something else (a user object whose ``.to()`` is not a transfer)."""
    if infer.is_instance_of(receiver, MODULE_BASES):
        return "module"
    value = infer.safe_infer(receiver)
    if value is None:
        return "unknown"
    return "tensor" if device.is_tensor(receiver) else None


def _constant_factory(expr: nodes.Call, loop: "loops.Loop") -> Optional["tuple[str, str]"]:
    """``torch.tensor([0.2, 0.8])`` / ``torch.ones(n_classes)`` built on the host from values the loop never changes."""
    name = infer.callee_qname(expr)
    if name not in device.HOST_FACTORIES or name in RANDOM_FACTORIES:
        return None  # random factories give new values each time
    if any(kw.arg == "device" or kw.arg is None for kw in expr.keywords or ()):
        return None  # created on the device already (or unknown keywords)
    if device.context_device(expr) in ("accelerator", "device"):
        return None  # ``with torch.device("cuda"):`` / ``with fabric.init_module():`` builds it there
    arguments: List[nodes.NodeNG] = list(expr.args) + [kw.value for kw in expr.keywords or ()]
    for arg in arguments:
        if any(True for _ in arg.nodes_of_class(nodes.Call)) or isinstance(arg, nodes.Starred):
            return None
        for name_node in arg.nodes_of_class(nodes.Name):
            if invariance.rebound_in(loop, name_node):
                return None
    return "constant {}(...)".format(expr.func.as_string()), _TENSOR_COST


def _cost(transfer: nodes.Call, cost: str) -> str:
    """A tensor's copy waits for the GPU's queue unless the transfer is ``non_blocking=True``, or
    the statements that always run just before it in the same iteration or forward already made
    the host wait (``torch.unique(...)``, ``.item()``): then it adds a copy, not a new stall."""
    if cost == _TENSOR_COST and _non_blocking(transfer):
        return _ASYNC_COST
    if cost == _TENSOR_COST and _host_waits_before(transfer):
        return _PAID_COST
    return cost


def _non_blocking(transfer: nodes.Call) -> bool:
    """``x.to(device, non_blocking=True)``: the copy is queued and the host goes on."""
    blocking = infer.argument(transfer, "non_blocking")
    return isinstance(blocking, nodes.Const) and blocking.value is True


def blocks_host(call: nodes.Call) -> bool:
    """``call`` makes the host wait for the device: a read of a device value or an explicit wait
    (``device.sync_text``), an op whose output size depends on the values (``torch.unique``,
    ``masked_select``, ``nonzero``, ``repeat_interleave`` by a tensor of counts without
    ``output_size``) on a value not provably on the host."""
    if device.sync_text(call) is not None:
        return True
    func = call.func
    if isinstance(func, nodes.Attribute) and func.attrname == "repeat_interleave":
        repeats = infer.argument(call, "repeats", 0)
        sized = infer.argument(call, "output_size") is not None
        return repeats is not None and device.is_tensor(repeats) and not device.is_host_value(repeats) and not sized

    if (infer.callee_qname(call) or infer.dotted_name(func)) in SIZE_SYNC_FUNCTIONS:
        return bool(call.args) and not device.is_host_value(call.args[0])
    if isinstance(func, nodes.Attribute) and func.attrname in SIZE_SYNC_METHODS:
        return device.is_tensor(func.expr) and not device.is_host_value(func.expr)
    return False


def _host_waits_before(node: nodes.NodeNG) -> bool:
    """A call that blocks the host (``_waits_for_device``) runs on every path to ``node`` earlier in the
    same loop iteration or function call (``loops.run_before``): in a statement before it in the same
    block or an enclosing one (an ``if``'s test, a loop's iterable, a ``with`` block; not the bodies of
    branches and loops, which may not run)."""
    for statement in loops.run_before(node, within_iteration=True):
        if any(_waits_for_device(call) for call in _always_run_calls(statement)):
            return True
        if not hasattr(statement, "body") and any(_mask_indexing(s) for s in statement.nodes_of_class(nodes.Subscript)):
            return True
    return False


#: Methods and functions whose result is a boolean (or ``uint8``) mask.
MASK_METHODS = frozenset({"bool", "byte", "eq", "ne", "gt", "lt", "ge", "le", "logical_and", "logical_or",
                          "logical_not", "isnan", "isinf", "isfinite"})
#: Legacy tensor types of masks (``torch.cuda.ByteTensor(n)``), matched on the last part of a ``torch`` name:
#: the stubs do not define the legacy types.
MASK_TENSOR_TYPES = frozenset({"BoolTensor", "ByteTensor"})


def _mask_indexing(subscript: nodes.Subscript) -> bool:
    """``pred[mask]`` with a boolean mask of a value not provably on the host: like ``masked_select``, its
    size depends on the mask's values, so the host waits for them (``mask = target[..., 4] > 0``,
    ``torch.cuda.ByteTensor(...)``, ``x.eq(0)``)."""
    if subscript.ctx != Context.Load or device.is_host_value(subscript.value):
        return False
    index = subscript.slice
    for _ in range(MASK_HOPS):
        if isinstance(index, nodes.Name):
            values = dataflow.assigned_values(index)
            if not values or len(values) != 1:
                return False
            index = values[0]
        elif isinstance(index, nodes.Call) and infer.method_name(index) in origins.SHAPE_METHODS:
            index = index.func.expr  # type: ignore[union-attr]  # ``mask.unsqueeze(-1).expand_as(t)``: still a mask
        else:
            break
    if isinstance(index, nodes.Compare):
        return True
    if isinstance(index, nodes.Call):
        if infer.method_name(index) in MASK_METHODS and isinstance(index.func, nodes.Attribute):
            return True
        dotted = infer.dotted_name(index.func) or ""
        return dotted.startswith("torch.") and dotted.rsplit(".", 1)[-1] in MASK_TENSOR_TYPES
    return False


#: How many assignments and reshapes ``_mask_indexing`` follows back from an index.
MASK_HOPS = 4


#: How many levels of submodules (classes built in a model's ``__init__``) ``_class_waits`` reads.
SUBMODULE_DEPTH = 3


def _waits_for_device(call: nodes.Call) -> bool:
    """``call`` makes the host wait: ``blocks_host``, or a forward of a model of the project whose
    class, or a submodule class it builds, waits in its ``forward`` (a value read back, a blocking copy
    of a host tensor: ``torch.zeros(n, 2).to(edge_attr.device)`` in every graph convolution)."""
    if blocks_host(call):
        return True
    if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
        return False
    classes = models.model_classes(call.func)
    return bool(classes) and any(_class_waits(klass, SUBMODULE_DEPTH) for klass in classes)


_CLASS_WAITS: "Dict[int, bool]" = memo.per_file()


def _class_waits(klass: nodes.ClassDef, depth: int) -> bool:
    key = id(klass)
    if key not in _CLASS_WAITS:
        _CLASS_WAITS[key] = False  # provisional, guards recursion
        _CLASS_WAITS[key] = _forward_waits(klass) or (depth > 0 and any(
            _class_waits(built, depth - 1) for built in _built_submodules(klass)
        ))
    return _CLASS_WAITS[key]


def _forward_waits(klass: nodes.ClassDef) -> bool:
    forward = infer.own_method(klass, "forward")
    if forward is None:
        return False
    return any(blocks_host(call) or _blocking_host_copy(call) for call in forward.nodes_of_class(nodes.Call))


def _blocking_host_copy(call: nodes.Call) -> bool:
    """``x.to(device)`` / ``x.cuda()`` of a tensor on the host, without ``non_blocking=True``."""
    if device.transfer_target(call) not in ("accelerator", "device") or _non_blocking(call):
        return False
    return device.is_host_value(call.func.expr)  # type: ignore[union-attr]


def _built_submodules(klass: nodes.ClassDef) -> List[nodes.ClassDef]:
    """Module classes the model's ``__init__`` constructs (``GINConv(...)`` appended to a ModuleList
    included; a class with a ``forward`` counts whatever its base, a library's message-passing layer)."""
    init = infer.own_method(klass, "__init__")
    if init is None:
        return []
    found = []
    for call in init.nodes_of_class(nodes.Call):
        built = param_count.resolve_class(call.func)
        if built is None or built is klass:
            continue
        if "forward" in built.locals or param_count.is_module_class(built):
            found.append(built)
    return found


def _always_run_calls(statement: nodes.NodeNG) -> "List[nodes.Call]":
    """Calls a statement makes whenever it runs: all of a simple statement's; an ``if``'s or
    ``while``'s test, a ``for``'s iterable, a ``with``'s context and body; nothing of a ``try``."""
    if isinstance(statement, nodes.If) or isinstance(statement, nodes.While):
        return list(infer.iter_calls(statement.test))
    if isinstance(statement, nodes.For):
        return list(infer.iter_calls(statement.iter))
    if isinstance(statement, nodes.With):
        found = [call for item, _ in statement.items for call in infer.iter_calls(item)]
        return found + [call for inner in statement.body for call in _always_run_calls(inner)]
    if hasattr(statement, "body"):
        return []  # a ``try`` (it may raise before the call), a definition
    return list(infer.iter_calls(statement))


def _destination(call: nodes.Call) -> Optional[str]:
    """Where a transfer sends its receiver (``device.transfer_target``); ``.type_as(x)`` sends it to
    ``x``'s device, a device wherever the file uses one."""
    if infer.method_name(call) == "type_as":
        return "device" if call.args else None
    return device.transfer_target(call)


def _factory_of(expr: nodes.NodeNG) -> nodes.NodeNG:
    """The factory call under reshapes (``torch.arange(b).view(-1, 1)``: still on the host) and a
    ``Variable(torch.zeros(...), requires_grad=True)`` wrapper of the same host tensor."""
    while isinstance(expr, nodes.Call) and infer.method_name(expr) in origins.SHAPE_METHODS:
        expr = expr.func.expr  # type: ignore[union-attr]
    if isinstance(expr, nodes.Call) and expr.args and infer.dotted_name(expr.func) == VARIABLE:
        expr = expr.args[0]
    return expr


def _built_in(receiver: nodes.NodeNG, within: Optional[nodes.NodeNG]) -> nodes.NodeNG:
    """The call a name sent to the device was built by, when each of its bindings that reaches the
    transfer assigns one call inside ``within`` (the forward or the loop iteration making the copy) and
    nothing changes it in place before it is sent (``u = torch.zeros(n, d)`` then ``if self.gpu: u =
    u.cuda()``): built afresh on the host every time.  Anything else is returned as it is."""
    if not isinstance(receiver, nodes.Name) or within is None:
        return receiver
    values = dataflow.assigned_values(receiver)
    if not values or len({id(v) for v in values}) != 1 or not isinstance(values[0], nodes.Call):
        return receiver
    value = values[0]
    if not loops.inside(value, within) and value.frame() is not within:
        return receiver
    if invariance.mutated_in(within, receiver, before=receiver):  # type: ignore[arg-type]
        return receiver  # filled in place (``u[mask] = 1``, ``u.fill_(v)``) before it is sent
    return value


def _shape_factory(expr: nodes.NodeNG) -> Optional[str]:
    """``torch.zeros(...)`` (and the other ``SHAPE_FACTORIES``) built on the host: how the message
    names it, else None."""
    expr = _factory_of(expr)
    if not isinstance(expr, nodes.Call):
        return None
    name = infer.callee_qname(expr)
    if name not in SHAPE_FACTORIES:
        return None
    if any(kw.arg == "device" or kw.arg is None for kw in expr.keywords or ()):
        return None  # created on the device already (or unknown keywords)
    if device.context_device(expr) in ("accelerator", "device"):
        return None
    if any(isinstance(a, nodes.Const) and a.value == 0 for a in expr.args[:1]) and name != "torch.arange":
        return None  # ``torch.empty(0)``: nothing to copy, no copy made
    return "{}(...)".format(expr.func.as_string())


#: A host tensor this small costs microseconds to copy: at most ``FEW_VALUES`` values per sample (a
#: label or weight per sample, an ``(n, 1)`` column) for a batch of up to ``ASSUMED_BATCH``, or at most
#: ``SMALL_TENSOR`` values in all (class weights, a literal table): 64 KiB of float32, a few
#: microseconds over PCIe 4.0 x16 (about 25 GB/s, the published bandwidth), so what is at stake is
#: one stall between kernels, microseconds against a step of many milliseconds.
FEW_VALUES, ASSUMED_BATCH = 16, 1024
SMALL_TENSOR = FEW_VALUES * ASSUMED_BATCH

#: Factories whose first argument is a size, and those that build one dimension from their arguments.
_SIZE_FIRST = frozenset({"torch.full"})
_ONE_DIMENSIONAL = frozenset({"torch.arange", "torch.linspace", "torch.randperm"})


def _few_values(expr: nodes.NodeNG) -> bool:
    """``expr`` (a factory call, or a name bound once to one) is small (see ``SMALL_TENSOR``): a literal
    tensor written in the source, a shape fixed in the source of at most ``SMALL_TENSOR`` values, or one
    with a single dimension the source does not fix (the batch, ``len(x)``) and at most ``FEW_VALUES``
    values along the fixed ones. A size read from a tensor (``x.shape``, ``x.size()``) has an unknown
    rank: not small."""
    if isinstance(expr, nodes.Name):
        values = dataflow.assigned_values(expr)
        if not values or len(values) != 1:
            return False
        expr = values[0]
    expr = _factory_of(expr)
    if not isinstance(expr, nodes.Call) or not expr.args:
        return False
    name = infer.callee_qname(expr)
    if name in DATA_FACTORIES:
        data = expr.args[0]
        if isinstance(data, nodes.BinOp) and data.op == "*":  # ``[0] * args.batch_size``: a value per sample
            sides = (data.left, data.right)
            literal = next((side for side in sides if isinstance(side, (nodes.List, nodes.Tuple))), None)
            count = static_values.literal_values(literal) if literal is not None else None
            return count is not None and count <= FEW_VALUES
        if isinstance(data, nodes.UnaryOp):
            data = data.operand  # ``torch.tensor(-1)``
        if isinstance(data, nodes.Const) and isinstance(data.value, (int, float, bool)):
            return True  # one number: ``torch.tensor(1).to("cuda").repeat(b, n)`` copies one value
        return isinstance(data, (nodes.List, nodes.Tuple)) and _plain_literal(data)
    if name in _ONE_DIMENSIONAL:
        length = _literal_length(name, expr)
        return length is None or length <= SMALL_TENSOR  # unknown: one value per index of a batch's worth
    if name not in device.HOST_FACTORIES:
        return False
    dims = [expr.args[0]] if name in _SIZE_FIRST else list(expr.args)
    if len(dims) == 1 and isinstance(dims[0], (nodes.Tuple, nodes.List)):
        dims = list(dims[0].elts)
    unknown, product = 0, 1
    for dim in dims:
        if isinstance(dim, nodes.Const) and isinstance(dim.value, int):
            product *= max(dim.value, 1)
        elif isinstance(dim, nodes.Starred) or _tensor_size(dim):
            return False
        else:
            unknown += 1
    return (unknown == 0 and product <= SMALL_TENSOR) or (unknown == 1 and product <= FEW_VALUES)


def _plain_literal(data: nodes.NodeNG) -> bool:
    """A literal written out in the source: nothing unpacked, called or comprehended in it."""
    return not any(True for _ in data.nodes_of_class((nodes.Starred, nodes.Call, nodes.ListComp)))


def _literal_length(name: Optional[str], call: nodes.Call) -> Optional[int]:
    """How many values ``torch.arange(a, b)`` / ``linspace(a, b, n)`` / ``randperm(n)`` builds when the
    source fixes it."""
    args = call.args
    if name == "torch.linspace":
        count = args[2] if len(args) > 2 else infer.argument(call, "steps")
        return count.value if isinstance(count, nodes.Const) and isinstance(count.value, int) else None
    if not all(isinstance(a, nodes.Const) and isinstance(a.value, (int, float)) for a in args):
        return None
    values = [a.value for a in args]  # type: ignore[attr-defined]
    if name == "torch.randperm" or len(values) == 1:
        return int(values[0])
    step = values[2] if len(values) > 2 else 1
    return int((values[1] - values[0]) / step) if step else None


def _tensor_size(dim: nodes.NodeNG) -> bool:
    """``x.shape`` / ``x.size()`` (a whole size, of unknown rank); ``x.size(0)`` / ``x.shape[0]`` is one dimension."""
    if isinstance(dim, nodes.Attribute) and dim.attrname == "shape":
        return True
    return isinstance(dim, nodes.Call) and infer.method_name(dim) == "size" and not dim.args


def _on_device(transfer: nodes.Call) -> str:
    """The fix's keyword: ``device=<where the transfer sends it>``."""
    if infer.method_name(transfer) == "cuda":
        return "device='cuda'"
    if infer.method_name(transfer) == "type_as":
        return "device={}.device".format(transfer.args[0].as_string())
    dest = infer.argument(transfer, "device", 0)
    return "device={}".format(dest.as_string() if dest is not None else "...")


def _module_forward(node: nodes.NodeNG) -> Optional[nodes.FunctionDef]:
    """The ``forward`` method of an ``nn.Module`` class that ``node`` runs in (once per step)."""
    func = loops.enclosing_function(node)
    if func is None or func.name != "forward" or not isinstance(func.parent, nodes.ClassDef):
        return None
    return func if infer.class_is_subclass_of(func.parent, MODULE_BASES) else None


def _rebinds_its_receiver(transfer: nodes.Call) -> bool:
    """``x = x.to(device)``: the transfer's result is assigned back to what it moved."""
    assign = transfer.parent
    return (
        isinstance(assign, nodes.Assign)
        and len(assign.targets) == 1
        and assign.value is transfer
        and _self_transfer(assign.targets[0])
    )


def _self_transfer(target: nodes.NodeNG) -> bool:
    """``x = x.to(device)`` / ``self.m = self.m.cuda()``: the name is rebound to its own device copy."""
    assign = target.parent
    if not isinstance(assign, nodes.Assign) or len(assign.targets) != 1 or assign.targets[0] is not target:
        return False
    value = assign.value
    if not (isinstance(value, nodes.Call) and infer.method_name(value) in TO_DEVICE_METHODS):
        return False
    return dataflow.binding_text(value.func.expr) == dataflow.binding_text(target)


def _moved_to_host_in(loop: "loops.Loop", text: str) -> bool:
    """A device restore: the same value is also sent to the host in this loop (checkpointing on
    the CPU: ``model.eval().cpu(); torch.save(...); model.to(device).train()``)."""
    for node in invariance.loop_nodes(loop):
        if isinstance(node, nodes.Call) and infer.method_name(node) in device.TRANSFER_METHODS:
            receiver = _strip_self_returning(node.func.expr)
            if dataflow.binding_text(receiver) == text and device.transfer_target(node) == "host":
                return True
    return False


def _strip_self_returning(expr: nodes.NodeNG) -> nodes.NodeNG:
    """``model`` for ``model.eval()`` / ``model.train(False)``: module methods that return the module."""
    while isinstance(expr, nodes.Call) and infer.method_name(expr) in SELF_RETURNING_METHODS:
        expr = expr.func.expr
    return expr


def _is_batch_loop(loop: "loops.Loop") -> bool:
    """A loop that runs once per batch: it owns a training step, or iterates a DataLoader."""
    if training_step.owns_step(loop):
        return True
    if not isinstance(loop, nodes.For):
        return False
    return _iterates_dataloader(loop.iter)


def _iterates_dataloader(expr: nodes.NodeNG) -> bool:
    """``expr`` yields a DataLoader's batches: the loader, or an iteration wrapper
    (``loops.ITERATION_WRAPPERS``) around it in any argument (``zip(other, loader)``)."""
    if infer.is_instance_of(expr, DATALOADERS):
        return True
    if isinstance(expr, nodes.Call) and expr.args and infer.call_name(expr) in loops.ITERATION_WRAPPERS:
        return any(_iterates_dataloader(a) for a in expr.args if not isinstance(a, nodes.Starred))
    return False
