"""TP013 amp-scaling: fp16 autocast training with no GradScaler, or clipping still-scaled gradients.

Two findings:

* **backward without scaling**: ``x.backward()`` where the loss (or a value it was computed
  from, traced by ``analysis.training.derivation`` through assignments, helpers of the file and call
  sites) was computed inside an fp16 CUDA autocast block, or the backward itself runs in one,
  and the loss never goes through ``GradScaler.scale``.  fp16 means: ``torch.autocast`` /
  ``torch.amp.autocast`` with ``device_type`` resolved to ``"cuda"`` and no dtype (CUDA's
  default is float16) or ``dtype=torch.float16``/``torch.half``; ``torch.cuda.amp.autocast()``
  with no dtype or float16.  bf16, CPU autocast, a device or dtype that cannot be resolved,
  ``enabled=False``, values computed under ``no_grad`` or ``.detach()``-ed, and a loss that is
  passed to ``scaler.scale`` anywhere in its function (the ``if scaler: ... else:
  loss.backward()`` pattern) stay silent; so do ``accelerator.backward(loss)`` and Lightning
  or Hugging Face Trainer classes, whose precision plugins scale.
* **clip before unscale_**: ``clip_grad_norm_``/``clip_grad_value_`` after a ``scaler.scale(...)``
  in the same function (helpers of the file included, in order) with no ``scaler.unscale_``
  between them; or followed by ``scaler.step(...)`` in a function when the file never calls
  ``unscale_``.

Name-based fallback (documented in ``analysis.training.gradients``): an unresolvable receiver named
``*scaler*`` counts as a GradScaler.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set

from astroid import nodes

from ..analysis.semantic import branches, dataflow, infer, loops
from ..analysis.training import derivation, gradients
from ..analysis.training.grad import grad_disabled
from ..analysis.training.torch_names import AUTOCAST_CONTEXTS
from ._base import Rule, register, text_gate

#: Autocast whose ``device_type`` is its first argument (default dtype depends on the device).
DEVICE_AUTOCASTS = frozenset({"torch.amp.autocast"})

#: Autocast that always runs on CUDA (default dtype float16).
CUDA_AUTOCASTS = frozenset({"torch.cuda.amp.autocast"})

#: Names of the half-precision dtype in the torch module (``torch.float16``, ``torch.half``).
FLOAT16_NAMES = frozenset({"float16", "half"})

#: Gradient clipping functions that read ``.grad`` as it is.
CLIP_FUNCTIONS = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_"})

#: Helper levels of the file expanded when ordering the calls of a function.
HELPER_DEPTH = 2


@register
class AmpScaling(Rule):
    code, slug = "TP013", "amp-scaling"
    #: A backward with autocast in the file, or a clipping call (the two findings below).
    requires = text_gate(r"(?s)^(?=.*autocast)(?=.*backward)|clip_grad")
    message = "{problem}: {cost}; {fix}"
    rationale = (
        "Under float16 autocast the backward pass produces fp16 gradients, and values below about 6e-8 flush "
        "to zero: without a GradScaler multiplying the loss first, small gradients vanish and training "
        'quietly stalls or diverges. CUDA autocast defaults to float16 (torch.autocast(device_type="cuda") '
        "and torch.cuda.amp.autocast() alike); bfloat16 has fp32's range and needs no scaler. With a scaler, "
        "the gradients stay multiplied by the scale factor (65536 at the start) until scaler.step() unscales "
        "them, so clip_grad_norm_ or clip_grad_value_ called before scaler.unscale_(optimizer) compares the "
        "threshold with gradients tens of thousands of times too large and clips almost every step. The rule "
        "traces the loss given to backward() back to an fp16 CUDA autocast block and checks that it goes "
        "through scaler.scale(); it orders the calls of a function (and its helpers) to check that unscale_() "
        "comes between scale() and a clip."
    )
    leaves_alone = (
        "bfloat16 autocast (no scaler needed), CPU autocast, losses that go through scaler.scale() anywhere "
        "on their path, backward() run by a framework (Lightning, Accelerate, Fabric, DeepSpeed) and clipping "
        "after scaler.unscale_(optimizer) are left alone."
    )
    example_bad = (
        "import torch\n"
        "\n"
        "model = torch.nn.Linear(8, 2).cuda()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "\n"
        "\n"
        "def train(loader):\n"
        "    for x, y in loader:\n"
        "        optimizer.zero_grad()\n"
        "        with torch.autocast(device_type=\"cuda\"):\n"
        "            loss = torch.nn.functional.cross_entropy(model(x), y)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    example_good = (
        "import torch\n"
        "\n"
        "model = torch.nn.Linear(8, 2).cuda()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scaler = torch.amp.GradScaler(\"cuda\")\n"
        "\n"
        "\n"
        "def train(loader):\n"
        "    for x, y in loader:\n"
        "        optimizer.zero_grad()\n"
        "        with torch.autocast(device_type=\"cuda\"):\n"
        "            loss = torch.nn.functional.cross_entropy(model(x), y)\n"
        "        scaler.scale(loss).backward()\n"
        "        scaler.unscale_(optimizer)\n"
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "        scaler.step(optimizer)\n"
        "        scaler.update()\n"
    )

    #: The two kinds of finding, filled into ``message``.
    NO_SCALER = dict(
        problem="backward() under fp16 autocast without a GradScaler",
        cost="small gradients flush to zero",
        fix="use a GradScaler or bfloat16",
    )
    CLIP_SCALED = dict(
        problem="{clip} sees GradScaler-scaled gradients",
        cost="almost every step clips",
        fix="call scaler.unscale_(optimizer) first",
    )

    def visit_call(self, node: nodes.Call) -> None:
        if gradients.is_tensor_backward(node):
            self._check_backward(node)
            return
        if "clip_grad" not in self._source():
            return  # cheap check first: no clipping function named anywhere in the file
        name = infer.call_name(node)
        if isinstance(node.func, nodes.Name) or (name is not None and name.startswith("clip_grad")):
            self._check_clip(node)

    # -- backward without a scaler ------------------------------------------------------------
    def _check_backward(self, call: nodes.Call) -> None:
        if "autocast" not in self._source():
            return  # cheap check first: no autocast anywhere in the file
        receiver = gradients.backward_receiver(call)
        if gradients.is_scale_call(receiver) or gradients.scaled_by_context(receiver):
            return
        if gradients.framework_managed(call):
            return
        trace = derivation.derive(receiver, follow_all=True)
        if any(gradients.is_scale_call(n) for n in trace.nodes):
            return
        under = _in_fp16_autocast(call) or any(
            isinstance(n, nodes.NodeNG) and _in_fp16_autocast(n) and not grad_disabled(n) and not _exclusive(n, call)
            for n in trace.nodes[1:]
        )
        if not under or _scaled_elsewhere(call, trace.nodes):
            return
        self.report(call, **self.NO_SCALER)

    # -- clip before unscale_ ------------------------------------------------------------------
    def _check_clip(self, call: nodes.Call) -> None:
        if infer.callee_qname(call) not in CLIP_FUNCTIONS:
            return
        scope = call.scope()
        if not isinstance(scope, (nodes.FunctionDef, nodes.Module)):
            return
        ordered = loops.calls_in(_own_statements(scope), HELPER_DEPTH)
        if not any(c is call for c in ordered):
            return
        position = next(i for i, c in enumerate(ordered) if c is call)
        before = ordered[:position]
        last_scale = max(
            (i for i, c in enumerate(before) if gradients.is_scale_call(c) and not _exclusive(c, call)), default=None
        )
        if last_scale is not None:
            if any(gradients.is_unscale_call(c) for c in before[last_scale:]):
                return
        else:
            after = ordered[position + 1:]
            if not any(gradients.is_scaler_step(c) for c in after) or self._file_unscales():
                return
        fields = dict(self.CLIP_SCALED)
        fields["problem"] = fields["problem"].format(clip=str(infer.callee_qname(call)).rsplit(".", 1)[-1])
        self.report(call, **fields)

    def _file_unscales(self) -> bool:
        found = self.ctx.memo.get("tp013.unscales")
        if found is None:
            found = any(gradients.is_unscale_call(c) for c in self.ctx.module.nodes_of_class(nodes.Call))
            self.ctx.memo["tp013.unscales"] = found
        return bool(found)

    def _source(self) -> str:
        text = self.ctx.memo.get("tp013.source")
        if text is None:
            text = "".join(self.ctx.lines)
            self.ctx.memo["tp013.source"] = text
        return str(text)


def _own_statements(scope: nodes.NodeNG) -> List[nodes.NodeNG]:
    """The statements of a function or module body, without the functions and classes it defines."""
    return [s for s in scope.body if not isinstance(s, (nodes.FunctionDef, nodes.ClassDef))]


def _exclusive(a: nodes.NodeNG, b: nodes.NodeNG) -> bool:
    """``a`` and ``b`` sit in different branches of one ``if`` (``if use_amp: scale... else: clip``),
    or in opposite branches of two ``if`` blocks on the same condition (``if use_amp: with autocast():
    ...`` then ``if use_amp: scaler... else: loss.backward()``)."""
    if any(stmt is b or loops.inside(b, stmt) for other in branches.other_arms(a) for stmt in other):
        return True
    sides_a, sides_b = _branches(a), _branches(b)
    return any(test in sides_b and sides_b[test] != side for test, side in sides_a.items())


def _branches(node: nodes.NodeNG) -> Dict[str, bool]:
    """The conditions of the ``if`` blocks around ``node`` in its function, each with whether
    ``node`` is in the body (True) or the ``else`` (False)."""
    found: Dict[str, bool] = {}
    child = node
    parent = node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.If) and (child in parent.body or child in parent.orelse):
            found.setdefault(parent.test.as_string(), child in parent.body)
        child, parent = parent, parent.parent
    return found


def _in_fp16_autocast(node: nodes.NodeNG) -> bool:
    """``node`` runs inside ``with <fp16 CUDA autocast>:`` in its function."""
    return any(_fp16_cuda_autocast(item) for _, item in gradients.with_items_around(node))


def _fp16_cuda_autocast(item: nodes.NodeNG, depth: int = 2) -> bool:
    """A with-item that is, for certain, a float16 autocast on CUDA."""
    if isinstance(item, (nodes.Name, nodes.Attribute)) and depth > 0:
        values = dataflow.assigned_values(item)
        return bool(values) and all(_fp16_cuda_autocast(v, depth - 1) for v in values)  # type: ignore[union-attr]
    if not isinstance(item, nodes.Call):
        return False
    qname = infer.callee_qname(item)
    if qname not in AUTOCAST_CONTEXTS:
        return False
    if _is_false(infer.argument(item, "enabled", 2 if qname in DEVICE_AUTOCASTS else 0)):
        return False
    if qname in DEVICE_AUTOCASTS:
        device = infer.argument(item, "device_type", 0)
        if device is None or infer.const_values(device) != ["cuda"]:
            return False
    elif qname not in CUDA_AUTOCASTS:
        return False
    dtype = infer.argument(item, "dtype", 1)
    return dtype is None or _is_float16(dtype)


def _is_false(expr: Optional[nodes.NodeNG]) -> bool:
    return expr is not None and infer.const_values(expr) == [False]


def _is_float16(dtype: nodes.NodeNG, depth: int = 2) -> bool:
    """``torch.float16`` / ``torch.half`` (through the torch module's aliases and plain names)."""
    if isinstance(dtype, nodes.Attribute):
        return dtype.attrname in FLOAT16_NAMES and infer.qname(dtype.expr) == "torch"
    if isinstance(dtype, nodes.Name) and depth > 0:
        values = dataflow.assigned_values(dtype)
        if values:
            return all(_is_float16(v, depth - 1) for v in values)
        dotted = infer.dotted_name(dtype)  # from torch import float16 as f16
        return dotted is not None and dotted.split(".")[0] == "torch" and dotted.split(".")[-1] in FLOAT16_NAMES
    return False


def _scaled_elsewhere(call: nodes.Call, traced: List[nodes.NodeNG]) -> bool:
    """The loss (a name it derives from) is passed to ``scaler.scale`` in the same function:
    the unscaled backward is the no-AMP branch."""
    names: Set[str] = {n.name for n in traced if isinstance(n, nodes.Name)}
    receiver = gradients.backward_receiver(call)
    names.update(n.name for n in receiver.nodes_of_class(nodes.Name))
    scope = call.scope()
    body = _own_statements(scope) if isinstance(scope, (nodes.FunctionDef, nodes.Module)) else [scope]
    for other in loops.calls_in(body, HELPER_DEPTH):
        if gradients.is_scale_call(other) and other.args:
            if any(n.name in names for n in other.args[0].nodes_of_class(nodes.Name)):
                return True
    return False
