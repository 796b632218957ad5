"""TP011 redundant-transfer: the same loop-invariant tensor or module moved to the device every iteration."""
from __future__ import annotations

from typing import List, Optional, Set

from astroid import nodes

from ..analysis import dataflow, device, infer, loops, training_step
from ..analysis.torch_names import DATALOADERS, MODULE_BASES
from ._base import Rule, register

#: Methods that move a receiver to the device (``.cpu()`` is a download, see ``device.transfer_target``).
TO_DEVICE_METHODS = frozenset({"to", "cuda"})

#: Tensor methods that change a tensor in place (trailing underscore), so re-sending it is needed.
#: Checked as "method name ends with ``_``"; these are the common ones, listed for the README.
IN_PLACE_EXAMPLES = frozenset({"copy_", "add_", "mul_", "fill_", "zero_", "uniform_", "normal_"})

#: Wrappers around a DataLoader in a ``for`` header that still iterate batches.
BATCH_ITERATOR_WRAPPERS = frozenset({"builtins.enumerate", "builtins.zip", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm"})


@register
class RedundantTransfer(Rule):
    code, slug = "TP011", "redundant-transfer"
    message = (
        "{what} is moved to the device on every iteration although it does not change inside the loop, "
        "so {cost} every step. Move it to the device once, before the loop, and reuse that copy "
        "(or create it there with device=...)."
    )
    rationale = (
        "A tensor that does not change between iterations (a name the loop never rebinds or modifies in "
        "place, class weights, a torch.tensor([...]) of constants) only needs to reach the GPU once. Calling "
        ".to(device) or .cuda() on it inside the batch loop makes a fresh host-to-device copy every step, "
        "which waits on pageable host memory and competes with the batch itself; doing it to the model "
        "walks every parameter and buffer on every step. The rule looks at batch loops (loops that call "
        "backward() or a resolved optimizer.step(), or iterate a DataLoader). Per-batch data, downloads "
        "(.cpu(), .to('cpu')), tensors created on the device, casts (.to(torch.float16)), values modified "
        "in place before being sent, and a model moved back and forth in the same loop (to the CPU for a "
        "checkpoint, then back) are not reported; nor is an unresolved device in a file that never uses CUDA."
    )
    example_bad = (
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "device = torch.device('cuda')\n"
        "model = nn.Linear(10, 3).to(device)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "weights = torch.tensor([1.0, 2.0, 0.5])\n"
        "for x, y in DataLoader([], batch_size=8):\n"
        "    x, y = x.to(device), y.to(device)\n"
        "    loss = nn.functional.cross_entropy(model(x), y, weight=weights.to(device))\n"
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
        "model = nn.Linear(10, 3).to(device)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "weights = torch.tensor([1.0, 2.0, 0.5]).to(device)\n"
        "for x, y in DataLoader([], batch_size=8):\n"
        "    x, y = x.to(device), y.to(device)\n"
        "    loss = nn.functional.cross_entropy(model(x), y, weight=weights)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    optimizer.zero_grad()\n"
    )

    def visit_call(self, node: nodes.Call) -> None:
        if infer.method_name(node) not in TO_DEVICE_METHODS:
            return  # cheap syntactic check first
        loop = loops.innermost(node)
        if loop is None:
            return
        target = device.transfer_target(node)
        if target is None or target == "host":
            return
        if target == "device" and not device.uses_cuda(node.root()):
            return  # an unresolved device in a file with no accelerator evidence may be the CPU
        receiver = node.func.expr  # type: ignore[union-attr]
        what = _invariant_value(receiver, node, loop)
        if what is None:
            return
        if not _is_batch_loop(loop):
            return
        self.report(node, what=what[0], cost=what[1])


_TENSOR_COST = "a fresh host-to-device copy is made"
_MODULE_COST = "every parameter and buffer is walked again"


def _invariant_value(receiver: nodes.NodeNG, call: nodes.Call, loop: "loops.Loop") -> Optional["tuple[str, str]"]:
    """(how the message names it, its cost) when ``receiver`` is the same value every iteration."""
    if isinstance(receiver, nodes.Call):
        return _constant_factory(receiver, loop)
    if not _is_reference(receiver):
        return None
    kind = _kind(receiver)
    if kind is None:
        return None
    text = dataflow.binding_text(receiver)
    if _rebound_in(loop, receiver) or _mutated_in(loop, text) or _moved_to_host_in(loop, text):
        return None
    if kind == "module":
        return "the model {}".format(text), _MODULE_COST
    return text, _TENSOR_COST


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
    if name not in device.HOST_FACTORIES or name in ("torch.rand", "torch.randn", "torch.randint", "torch.randperm"):
        return None  # random factories give new values each time
    if any(kw.arg == "device" or kw.arg is None for kw in expr.keywords or ()):
        return None  # created on the device already (or unknown keywords)
    arguments: List[nodes.NodeNG] = list(expr.args) + [kw.value for kw in expr.keywords or ()]
    for arg in arguments:
        if any(True for _ in arg.nodes_of_class(nodes.Call)) or isinstance(arg, nodes.Starred):
            return None
        for name_node in arg.nodes_of_class(nodes.Name):
            if _rebound_in(loop, name_node):
                return None
    return "{}(...) of loop-invariant values".format(expr.func.as_string()), _TENSOR_COST


def _root_name(expr: nodes.NodeNG) -> Optional[nodes.Name]:
    while isinstance(expr, nodes.Attribute):
        expr = expr.expr
    return expr if isinstance(expr, nodes.Name) else None


def _rebound_in(loop: "loops.Loop", receiver: nodes.NodeNG) -> bool:
    """The loop (its target, body, or a helper of the file it calls) assigns the receiver's
    root name, or the attribute it reads.  ``x = x.to(device)`` does not count: it is the
    transfer itself."""
    root = _root_name(receiver)
    if root is None:
        return True
    attrs = _attribute_names(receiver)
    scope = _defining_scope(root)
    for node in _loop_nodes(loop):
        if isinstance(node, nodes.AssignName) and node.name == root.name and node.scope() is scope:
            if not _self_transfer(node):
                return True
        if isinstance(node, nodes.AssignAttr) and node.attrname in attrs:
            if not _self_transfer(node):
                return True
        if isinstance(node, (nodes.Global, nodes.Nonlocal)) and root.name in node.names:
            return True
    for helper in _helpers(loop):
        for node in helper.nodes_of_class((nodes.AssignAttr, nodes.Global)):
            if isinstance(node, nodes.AssignAttr) and node.attrname in attrs:
                return True
            if isinstance(node, nodes.Global) and root.name in node.names:
                return True
    return False


def _attribute_names(expr: nodes.NodeNG) -> Set[str]:
    names: Set[str] = set()
    while isinstance(expr, nodes.Attribute):
        names.add(str(expr.attrname))
        expr = expr.expr
    return names


def _defining_scope(name: nodes.Name) -> Optional[nodes.NodeNG]:
    try:
        scope, _ = name.lookup(name.name)
    except Exception:  # astroid lookups raise several error types on broken scopes
        return None
    return scope


def _self_transfer(target: nodes.NodeNG) -> bool:
    """``x = x.to(device)`` / ``self.m = self.m.cuda()``: the name is rebound to its own device copy."""
    assign = target.parent
    if not isinstance(assign, nodes.Assign) or len(assign.targets) != 1 or assign.targets[0] is not target:
        return False
    value = assign.value
    if not (isinstance(value, nodes.Call) and infer.method_name(value) in TO_DEVICE_METHODS):
        return False
    return dataflow.binding_text(value.func.expr) == dataflow.binding_text(target)  # type: ignore[union-attr]


def _loop_nodes(loop: "loops.Loop") -> List[nodes.NodeNG]:
    found: List[nodes.NodeNG] = []
    parts: List[nodes.NodeNG] = list(loop.body)
    if isinstance(loop, nodes.For):
        parts.append(loop.target)
    for part in parts:
        found.append(part)
        found.extend(part.nodes_of_class(nodes.NodeNG))
    return found


def _helpers(loop: "loops.Loop") -> List[nodes.FunctionDef]:
    helpers: List[nodes.FunctionDef] = []
    for call in loops.loop_calls(loop, helper_depth=1):
        helper = loops.local_helper(call)
        if helper is not None and helper not in helpers:
            helpers.append(helper)
    return helpers


def _mutated_in(loop: "loops.Loop", text: str) -> bool:
    """The loop changes the value in place before sending it again (``buf.copy_(x)``, ``w[i] = 0``)."""
    for node in _loop_nodes(loop):
        if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute):
            if node.func.attrname.endswith("_") and not node.func.attrname.startswith("_"):
                if dataflow.binding_text(node.func.expr) == text:
                    return True
        if isinstance(node, nodes.Subscript) and isinstance(node.parent, (nodes.Assign, nodes.AugAssign)):
            stored = node in getattr(node.parent, "targets", ()) or node is getattr(node.parent, "target", None)
            if stored and dataflow.binding_text(node.value) == text:
                return True
        if isinstance(node, nodes.AugAssign) and dataflow.binding_text(node.target) == text:
            return True
    return False


def _moved_to_host_in(loop: "loops.Loop", text: str) -> bool:
    """A device restore: the same value is also sent to the host in this loop (checkpointing on the CPU)."""
    for node in _loop_nodes(loop):
        if isinstance(node, nodes.Call) and infer.method_name(node) in device.TRANSFER_METHODS:
            if dataflow.binding_text(node.func.expr) == text and device.transfer_target(node) == "host":  # type: ignore[union-attr]
                return True
    return False


def _is_batch_loop(loop: "loops.Loop") -> bool:
    """A loop that runs once per batch: it owns a training step, or iterates a DataLoader."""
    if training_step.owns_step(loop):
        return True
    if not isinstance(loop, nodes.For):
        return False
    return _iterates_dataloader(loop.iter)


def _iterates_dataloader(expr: nodes.NodeNG) -> bool:
    if infer.is_instance_of(expr, DATALOADERS):
        return True
    if isinstance(expr, nodes.Call) and expr.args:
        wrapper = infer.qname(expr.func) or infer.dotted_name(expr.func)
        if wrapper in BATCH_ITERATOR_WRAPPERS:
            return any(_iterates_dataloader(a) for a in expr.args if not isinstance(a, nodes.Starred))
    return False
