"""TP001 graph-retention: a tensor still attached to its autograd graph is kept across loop iterations."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, FrozenSet, Optional, Sequence, Set

from astroid import nodes

from . import accumulators
from ...analysis.training import device, evaluation, gradients, provenance, training_step
from ...analysis.semantic import infer, loops
from ...analysis.training.torch_names import DATALOADERS
from ...analysis.training.provenance import Backward, Prov, Provenance, source_text
from .._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ...analysis.setup.build import FileContext

#: Container methods that keep their argument beyond the iteration (lists, deques).
STORE_METHODS = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})

#: In-place tensor accumulation into a receiver that outlives the iteration.
INPLACE_ACCUMULATE = frozenset({"add_", "sub_"})

#: Fallback by name: an opaque callee (nothing resolves it) that receives the stored value and may
#: run backward itself (timm's NativeScaler ``loss_scaler(loss, opt)``, apex ``scale_loss``, a
#: ``train_step`` from another module).  Which of the two cases applies is then unknown: silence.
MAY_BACKPROPAGATE = re.compile(r"backward|scaler|scale_loss|step|optimi[sz]e", re.IGNORECASE)

#: Iterables that count steps or epochs: a loop over them is the run's loop, never a walk over values.
STEP_COUNTERS = frozenset({"range", "count", "cycle", "repeat"})

#: Most graphs a container keeps after backward() freed their activations without a finding.  What stays is
#: each graph's nodes in host memory: about 27 KB per step for a four-convolution TinyVGG (50 MB over 1,875
#: steps, measured on the CPU by the readers of benchmarks/fresh34, finding #15), so 5,000 graphs hold about
#: 130 MB of host memory and no GPU memory.
MAX_KEPT_AFTER_BACKWARD = 5000

#: Longest stored expression quoted in the message.
MAX_TEXT = 32

#: No backward() in the loop frees the stored graph: its activations stay on the GPU.
_OOM = "GPU memory grows to OOM"
#: backward() already freed the activations; the graph nodes stay, in host memory.
_AFTER = "graph nodes pile up in RAM"
#: Bound fresh per step, but filled over a loop with no backward and read later only detached.
_UNUSED = "memory held by graphs never used"


@register
class GraphRetention(Rule):
    code, slug = "TP001", "graph-retention"
    requires = text_gate(r"backward\(|\.eval\(|(?i:evaluat|validat|predict|infer)")
    message = "{value} kept with its autograd graph across iterations: {case}; keep .item() or .detach()"
    quoted = ("value",)
    rationale = (
        "A loss or model output is a tensor that references the autograd graph that produced it. Appending it "
        "to a list, adding it into a running total (`total += loss`, `x = x + loss`), or storing it under a "
        "changing key keeps that graph alive for as long as the container lives. When no backward() ran on "
        "it, every iteration's saved activations stay on the GPU and memory grows until the run dies; when "
        "backward() already ran, the activations are freed but the graph nodes still accumulate in host "
        "memory and the stored values stay differentiable. The rule follows grad-bearing values through the "
        "provenance analysis (model and loss calls, arithmetic, tensor methods, helper returns; `.item()`, "
        "`.detach()` and `no_grad` stop them) and reports a store in a loop into a container that outlives "
        "the iteration. A container bound fresh for each update but filled over a loop that runs no backward() "
        "(a rollout's values and log-probabilities) holds every step's activations until the update; when "
        "every backward() reads it only through a detached copy (``values = torch.cat(values).detach()``), "
        "those graphs were never used: reported once per loop (one no_grad around it frees every list)."
    )
    leaves_alone = (
        "It stays silent for containers created inside the loop, and for a container local to a function when "
        "every loop between its binding and the store only walks tensors that already exist (no forward pass, "
        "no backward(): this step's loss dict split into fresh dicts, an episode's saved log-probabilities "
        "turned into losses), since it is dropped when the call returns; for parameters, buffers and modules "
        "(leaves, no operation's graph); for a value written into a tensor under no_grad or inference_mode "
        "(the copy records no graph); and for retention that a later backward() needs: micro-batch losses "
        "summed and backpropagated, and loops that run no backward() themselves and hand their result to a "
        "caller (a model's forward, a chunked loss, a pipeline schedule). An autoregressive loop with no "
        "backward() whose stored output is computed from a state the previous step made (a decoder's hidden "
        "state) is not reported: that chain keeps every step's graph anyway, and the defect is the missing "
        "no_grad. A method no tensor has (loss.get_loss() on a project's loss object) returns an unknown value. "
        "The indices half of a (values, indices) pair (``out.topk(k)[1]``, ``out.max(1)[1]``, ``.indices``) is "
        "int64 and keeps no graph; the values half does. A backward called with the loss as its argument "
        "(``engine.backward(loss)`` on a DeepSpeed engine, ``accelerator.backward(loss)``) differentiates the "
        "loss, not the object it is called on: plain attributes of that object are not graphs. "
        "A list bound fresh for each optimizer step and filled over that step's micro-batches "
        "(``losses = []`` then a loop over ``x.chunk(n)`` backpropagating each chunk, then ``optimizer.step()``) "
        "holds one step's handful and is dropped at the next. After backward() freed their activations, a few"
        " graphs are left alone: a store every N steps (``if step % 10000 == 0:``), or a container bound in the"
        " function and filled over loops with fixed bounds that run it at most 5,000 times (500 full-batch epochs)."
        " A loop with no backward() whose kept graph "
        "comes from a forward written in it that evaluates with autograd on (after model.eval(), over a "
        "held-out split, in a function named for an evaluation) is TP002's finding: one torch.no_grad() "
        "fixes both, so one root cause gives one finding."
    )
    example_bad = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "model = nn.Linear(8, 2)\n"
        "criterion = nn.CrossEntropyLoss()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "losses = []\n"
        "for x, y in [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * 10:\n"
        "    optimizer.zero_grad()\n"
        "    loss = criterion(model(x), y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    losses.append(loss)\n"
    )
    example_good = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "model = nn.Linear(8, 2)\n"
        "criterion = nn.CrossEntropyLoss()\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "losses = []\n"
        "for x, y in [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * 10:\n"
        "    optimizer.zero_grad()\n"
        "    loss = criterion(model(x), y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    losses.append(loss.item())\n"
    )

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        self._unused_loops: Set[int] = set()  # loops already reported for graphs kept for nothing

    # ------------------------------------------------------------ patterns
    def visit_call(self, node: nodes.Call) -> None:
        method = infer.method_name(node)
        if method not in STORE_METHODS and method not in INPLACE_ACCUMULATE:
            return
        index = 1 if method == "insert" else 0
        if len(node.args) <= index or isinstance(node.args[index], nodes.Starred):
            return
        if provenance.host_value(node.args[index]):
            return  # ``losses.append(loss.item())``: nothing to retain
        loop = loops.innermost(node)
        if loop is None:
            return
        container = node.func.expr  # type: ignore[union-attr]
        self._check(node, node.args[index], container, loop, frozenset())

    def visit_augassign(self, node: nodes.AugAssign) -> None:
        if provenance.host_value(node.value):
            return  # ``i += 1``, ``total += loss.item()``: every path below ends in "no graph"
        loop = loops.innermost(node)
        if loop is None:
            return
        p = provenance.of(self.ctx)
        target = node.target
        if accumulators.is_name_or_self_attr(target):
            new = p.value(target)
            if new is None or not new.graph:
                return  # computed with autograd off, or nothing grad-bearing was added
            made = p.def_of(target)
            self._check(node, node.value, target, loop, frozenset({id(made)}) if made is not None else frozenset())
        elif isinstance(target, nodes.Subscript) and p.grad_mode(node) == provenance.ON:
            self._check(node, node.value, target.value, loop, frozenset())

    def visit_assign(self, node: nodes.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0]
        if isinstance(target, nodes.Subscript):
            self._keyed_store(node, target, node.value, node.value)
            return
        if isinstance(target, (nodes.Tuple, nodes.List)):
            # ``losses[i], costs[i] = step()``: each subscript element is a keyed store of its part
            value = node.value
            paired = (
                isinstance(value, (nodes.Tuple, nodes.List))
                and len(value.elts) == len(target.elts)
                and not any(isinstance(e, nodes.Starred) for e in list(value.elts) + list(target.elts))
            )
            for index, element in enumerate(target.elts):
                if not isinstance(element, nodes.Subscript):
                    continue
                if paired:
                    reported = self._keyed_store(node, element, value.elts[index], value.elts[index])  # type: ignore
                else:
                    reported = self._keyed_store(node, element, value, element, unpacked=index)
                if reported:
                    return  # one finding per statement
            return
        if not accumulators.is_name_or_self_attr(target):
            return
        folded = accumulators.folded_operand(node.value, target)
        if folded is None:
            return
        loop = loops.innermost(node)
        if loop is None:
            return
        p = provenance.of(self.ctx)
        if not p.carries_graph(node.value):
            return
        made = p.def_of(target)
        added = accumulators.added_value(node.value, folded)
        self._check(node, added, folded, loop, frozenset({id(made)}) if made is not None else frozenset(),
                    whole=node.value)

    def _keyed_store(
        self,
        node: nodes.Assign,
        target: nodes.Subscript,
        value: nodes.NodeNG,
        shown: nodes.NodeNG,
        unpacked: Optional[int] = None,
    ) -> bool:
        """``history[k] = value`` (``unpacked``: the index of ``target`` in a tuple target whose value
        ``value`` is not a display, so the stored part is that element of its record)."""
        if isinstance(target.slice, nodes.Const):
            return False  # the same key every iteration: the old value is dropped
        if provenance.host_value(value):
            return False  # ``stats[k] = loss.item()``: nothing to retain
        p = provenance.of(self.ctx)
        if p.grad_mode(node) == provenance.OFF and _is_tensor(target.value):
            return False  # ``buf[i] = loss`` under no_grad: the value is copied, no graph is recorded
        root = accumulators.container_root(target.value)
        if root is not None and device.is_numpy_array(root):
            return False  # ``hist[i] = loss`` into ``np.zeros(n)``: NumPy keeps a number, not the graph
        loop = loops.innermost(node)
        if loop is None:
            return False
        stored = None
        if unpacked is not None:
            whole = p.value(value)
            if whole is None:
                return False
            stored = whole.elts[unpacked] if whole.elts is not None and len(whole.elts) > unpacked else whole
        return self._check(node, shown, target.value, loop, frozenset(), stored=stored)

    # ------------------------------------------------------------ the check
    def _check(
        self,
        store: nodes.NodeNG,
        value: nodes.NodeNG,
        container: nodes.NodeNG,
        loop: "loops.Loop",
        made: FrozenSet[int],
        whole: Optional[nodes.NodeNG] = None,
        stored: Optional[Prov] = None,
    ) -> bool:
        """Report ``store`` when what it keeps piles up across the loop's iterations; True if reported."""
        p = provenance.of(self.ctx)
        if stored is None:
            stored = p.value(whole if whole is not None else value)
        if stored is None or stored.stopped or (stored.sources and not stored.graph):
            return False  # never analysed, provably no graph, or a bare leaf (a parameter)
        root = accumulators.container_root(container)
        if root is None:
            return False
        defs = p.reaching_defs(root)
        if defs is None:
            return False
        if not defs and not isinstance(root, (nodes.Attribute, nodes.AssignAttr)):
            return False  # a name the analysis cannot bind (a builtin, a star import): unknown
        # ``losses[-1].backward()``: the container's elements are graphs, whatever made this one
        by_element = [b for b in p.backwards if _backpropagates_element(p, b, root, defs)]
        if not stored.graph and not by_element:
            return False  # nothing says the stored value carries a graph
        if defs and all(loops.inside(d.node, loop) for d in defs):
            return False  # a container created fresh in this iteration
        if _lives_for_one_step(p, root, defs, store):
            return False  # local to a function whose loops around the store only walk values that already exist
        if accumulators.reset_in_loop(root, loop, store):
            return False  # re-bound fresh in the loop (``running_loss = 0`` at each optimizer step): bounded
        if any(_stopped(p, w.value) for w in accumulators.element_rewrites(root, loop) if w is not store):
            return False  # ``losses[-1] = losses[-1].detach()``: the kept element is replaced by its copy
        stepping = _stepping_loop(p, loop, store, root, defs)
        if stepping is None:
            if not _kept_for_nothing(p, loop, store, stored, root, defs, made):
                return False  # an enclosing step loop re-binds the container: bounded
            if id(loop) not in self._unused_loops:  # one no_grad around the loop frees every list it fills
                self._unused_loops.add(id(loop))
                self.report(store, value=_text(_graph_element(p, value), self.ctx.lines), case=_UNUSED)
            return True
        loop = stepping
        if _one_step_of_micro_batches(defs, loop):
            return False  # bound fresh per optimizer step, filled over that step's micro-batches: bounded
        in_loop = loops.loop_call_ids(loop)
        # Each iteration backpropagates one element (the last one kept, ``losses[i - 1]``): the
        # older ones are needed by no backward() and pile up.
        by_element = [b for b in by_element if id(b.call) in in_loop]
        if not stored.graph and not by_element:
            return False  # only a backward() outside the loop reads the elements
        holders = frozenset(id(d) for d in defs) | made
        scope = p.scope_of(store)
        for b in p.backwards_in(scope):
            if p.graph_depends_on(b.prov, holders) and not any(b is e for e in by_element):
                return False  # a later backward() needs what was kept (micro-batches summed, then backpropagated)
            if id(b.call) not in in_loop and p.covers(b, stored):
                return False  # a backward() outside the loop runs through it anyway (decoder steps, unrolled RNNs)
        per_iteration = [b for b in p.backwards if id(b.call) in in_loop]
        covering = [b for b in per_iteration if any(b is e for e in by_element) or p.covers(b, stored)]
        if not per_iteration:
            if _evaluation_pass(p, loop, stored):
                return False  # an evaluation loop with autograd on: one root cause, TP002's missing no_grad
            if _escapes(p, scope, holders, root, defs):
                return False  # handed to the caller, who may backpropagate it (a forward, a chunked loss)
            if _chained_by_recurrence(p, loop, stored, holders):
                return False  # generation: each step's graph is kept by the state handed to the next step
            if _may_backpropagate(p, loop, stored):
                return False
            case = _OOM
        elif covering and not all(b.retain for b in covering):
            if _few_kept_after_backward(store, loop, root, defs, covering):
                return False  # a few hundred freed graphs' nodes: ``if step % 10000 == 0``, ``range(500)`` epochs
            case = _AFTER
        else:
            if not covering and _may_backpropagate(p, loop, stored):
                return False
            case = _OOM
        self.report(store, value=_text(_graph_element(p, value), self.ctx.lines), case=case)
        return True


def _few_kept_after_backward(
    store: nodes.NodeNG, loop: "loops.Loop", root: nodes.NodeNG, defs: FrozenSet, covering: "Sequence[Backward]"
) -> bool:
    """What ``store`` keeps after backward() stays few: a backward() of the store's own function frees
    each kept graph (not a helper's, whose returned value may chain a whole epoch), and the store runs
    under a periodic branch of the step loop
    (``if step % 10000 == 0: errors.append(loss)``), or the container is a name bound in the store's own
    function and every loop between that binding and the store has a fixed bound (``loops.iteration_bound``)
    whose product is at most ``MAX_KEPT_AFTER_BACKWARD`` (``losses[epoch] = loss`` over ``range(500)``
    full-batch epochs).  A container that outlives the function (``self.losses``, a module list filled by
    a function the run calls many times) is never bounded here."""
    frame = store.frame()
    if not any(b.call.frame() is frame for b in covering):
        return False
    if training_step.under_periodic_branch(store, loop):
        return True
    if not isinstance(root, nodes.Name) or not defs:
        return False
    if any(d.node.frame() is not frame for d in defs):
        return False
    bindings = [d.node for d in defs if d.node is not store and not loops.inside(d.node, store)]  # not ``x = x + loss``
    kept = 1
    for enclosing in loops.enclosing_loops(store):
        if any(loops.inside(node, enclosing) for node in bindings):
            return False  # re-bound in the loop: whether it starts afresh is the reset's question
        bound = loops.iteration_bound(enclosing, MAX_KEPT_AFTER_BACKWARD)
        if bound is None:
            return False
        kept *= bound
        if kept > MAX_KEPT_AFTER_BACKWARD:
            return False
    return True


def _backpropagates_element(p: Provenance, backward: Backward, root: nodes.NodeNG, defs: FrozenSet) -> bool:
    """``backward`` runs on one element of the container ``root`` bound by ``defs``
    (``losses[-1].backward()``, ``scaler.scale(losses[i - 1]).backward()``) and reads the container
    in no other way: one element's graph is needed, not the ones kept before it."""
    idents = frozenset(id(d) for d in defs)
    elements = [t for t in backward.values if _element_of(p, t, root, idents, backward.values)]
    if not elements:
        return False
    for target in backward.values:
        if any(target is e for e in elements):
            continue
        value = p.value(target)
        if value is None or (p.depends_on(value, idents) if idents else accumulators.reads_binding(target, root)):
            return False  # ``(losses[-1] + sum(losses)).backward()``: more than one element is needed
    return True


def _element_of(
    p: Provenance, node: nodes.NodeNG, root: nodes.NodeNG, idents: FrozenSet[int], targets: Sequence[nodes.NodeNG]
) -> bool:
    """``node`` is ``c[i]`` of the container ``root`` (bound by ``idents``; a ``self.x`` this function
    does not bind is matched by its name in the same function), or an argument-free method of it
    (``c[-1].mean()``), or the ``scale`` call the runner also backpropagates the argument of."""
    while True:
        if isinstance(node, nodes.Subscript):
            container = node.value
            if isinstance(node.slice, nodes.Slice) or accumulators.container_root(container) is not container:
                return False  # a slice (several elements), or an element of an element
            reaching = p.reaching_defs(container)
            if reaching is None:
                return False
            if idents:
                return bool(reaching) and all(id(d) in idents for d in reaching)
            return (
                not reaching
                and isinstance(root, (nodes.Attribute, nodes.AssignAttr))
                and accumulators.same_binding_key(container, root)
                and p.scope_of(container) is p.scope_of(root)
            )
        if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute):
            if not node.args and not node.keywords:
                node = node.func.expr
                continue
            if infer.method_name(node) == "scale" and len(node.args) == 1 and any(node.args[0] is t for t in targets):
                node = node.args[0]
                continue
        return False


def _stepping_loop(
    p: Provenance, loop: "loops.Loop", store: nodes.NodeNG, root: nodes.NodeNG, defs: FrozenSet
) -> Optional["loops.Loop"]:
    """The loop whose iterations the store accumulates over: ``loop`` (the innermost) when one of its
    iterations runs a backward(), else the nearest enclosing loop of the function that the container
    outlives and whose iteration runs one (``for name, v in step_losses.items(): total[name] += v``
    inside the step loop); None when that loop re-binds the container fresh."""
    found = loop
    for outer in loops.enclosing_loops(store):
        if any(id(b.call) in loops.loop_call_ids(outer) for b in p.backwards):
            found = outer
            break
        if defs and all(loops.inside(d.node, outer) for d in defs):
            break  # bound fresh in this loop: it does not outlive the ones around it
    if found is not loop and accumulators.reset_in_loop(root, found, store):
        return None
    return found


def _kept_for_nothing(
    p: Provenance, loop: "loops.Loop", store: nodes.NodeNG, stored: Prov, root: nodes.NodeNG, defs: FrozenSet,
    made: FrozenSet[int],
) -> bool:
    """A container bound fresh for each step of an enclosing loop is filled, with graphs, over a loop
    of its own that runs no backward(), and no backward() of the function runs through what it kept
    (``values = torch.cat(values).detach()`` before the update): a rollout's values and log-probs kept
    with every step's activations that nothing backpropagates.  Not when the graphs leave the function,
    the loop is an evaluation (TP002's finding), a recurrence keeps them anyway, or a call may
    backpropagate them."""
    if not stored.graph or not defs:
        return False
    in_loop = loops.loop_call_ids(loop)
    if any(id(b.call) in in_loop for b in p.backwards):
        return False
    holders = frozenset(id(d) for d in defs) | made
    scope = p.scope_of(store)
    if not any(b.scope is scope for b in p.backwards):
        return False  # the function trains nothing: whoever uses the kept values is elsewhere
    if any(p.graph_depends_on(b.prov, holders) for b in p.backwards_in(scope)):
        return False  # micro-batch losses summed, then backpropagated: the graphs are needed
    if _escapes(p, scope, holders, root, defs) or _evaluation_pass(p, loop, stored):
        return False
    return not _chained_by_recurrence(p, loop, stored, holders) and not _may_backpropagate(p, loop, stored)


def _evaluation_pass(p: Provenance, loop: "loops.Loop", stored: Prov) -> bool:
    """The graph kept comes from a forward of ``loop`` that evaluates with autograd on
    (``evaluation.evidence``: after model.eval(), over a held-out split, in a function named for an
    evaluation) and no unit around it takes gradients: the defect is the missing ``no_grad``, whose
    fix also drops what is kept."""
    sources = p.source_calls(stored)
    for call in loop.nodes_of_class(nodes.Call):  # written in the loop: a helper's forward may train elsewhere
        if id(call) not in sources or p.call_kind(call) not in (provenance.MODEL_CALL, provenance.MAYBE_MODEL_CALL):
            continue
        if p.grad_mode(call) != provenance.ON:
            continue
        func = loops.enclosing_function(call)
        mode = evaluation.mode_before(call, evaluation.model_expression(call), func or call.root())
        if evaluation.evidence(call, func, mode) is not None:
            return True
    return False


def _one_step_of_micro_batches(defs: FrozenSet, loop: "loops.Loop") -> bool:
    """The container is bound fresh in a loop around ``loop`` whose iteration steps the optimizer outside
    ``loop`` (``for x, y in loader: losses = []; for chunk in x.chunk(n): ... loss.backward();
    losses.append(loss)`` then ``optimizer.step()``): it holds the micro-batches of one step and is
    dropped at the next.  A list bound per epoch and filled per optimizer step is not bounded so."""
    for outer in loops.enclosing_loops(loop):
        if defs and all(loops.inside(d.node, outer) for d in defs):
            around = [stmt for stmt in outer.body if stmt is not loop and not loops.inside(loop, stmt)]
            return any(gradients.stepped_optimizer(call) is not None for call in loops.calls_in(around))
    return False


def _lives_for_one_step(p: Provenance, root: nodes.NodeNG, defs: FrozenSet, store: nodes.NodeNG) -> bool:
    """The container is a local of the function that fills it, and every loop between its binding
    and the store only walks values that already exist (this step's loss dict, an episode's saved
    log-probabilities): it holds one entry per existing tensor and is dropped when the call ends."""
    if not defs or isinstance(root, (nodes.Attribute, nodes.AssignAttr)):
        return False
    scope = p.scope_of(store)
    if not isinstance(scope, nodes.FunctionDef):
        return False  # module level: the container lives for the whole run
    for d in defs:
        if d.scope is not scope or isinstance(d.node.parent, nodes.Arguments):
            return False  # a global or a parameter: the caller owns it
    for loop in loops.enclosing_loops(store):
        if not loops.inside(loop, scope):
            break
        if all(loops.inside(d.node, loop) for d in defs):
            return True  # bound fresh in this loop: lives for one of its iterations
        if not _walks_existing_values(p, loop):
            return False
    return True


def _walks_existing_values(p: Provenance, loop: "loops.Loop") -> bool:
    """A ``for`` over a collection whose body makes no forward pass and runs no backward(): each
    iteration only re-keys or combines tensors the collection already holds, not a training step."""
    if not isinstance(loop, nodes.For):
        return False
    for part in _iterated(loop.iter):
        if infer.call_name(part) in STEP_COUNTERS or infer.is_instance_of(part, DATALOADERS):
            return False
    for call in loops.calls_in(list(loop.body)):
        if infer.method_name(call) == "backward":
            return False
        if p.call_kind(call) in (provenance.MODEL_CALL, provenance.MAYBE_MODEL_CALL):
            return False
    return True


def _iterated(iterable: nodes.NodeNG) -> "list[nodes.NodeNG]":
    """What a ``for`` header iterates, through ``enumerate``/``zip``/``tqdm`` and ``.items()``-like views."""
    if isinstance(iterable, nodes.Call):
        if infer.call_name(iterable) in loops.ITERATION_WRAPPERS | {"reversed", "sorted"}:
            return [part for arg in iterable.args for part in _iterated(arg)]
        if infer.method_name(iterable) in provenance.ENTRY_METHODS and isinstance(iterable.func, nodes.Attribute):
            return _iterated(iterable.func.expr)
    if isinstance(iterable, nodes.Subscript):
        return _iterated(iterable.value)
    return [iterable]


def _stopped(p: Provenance, value: nodes.NodeNG) -> bool:
    """``value`` provably carries no graph (``.detach()``, ``.item()``, a number)."""
    record = p.value(value)
    return record is not None and record.stopped


def _is_tensor(container: nodes.NodeNG) -> bool:
    """The subscript store writes into a tensor (``index_put_`` copies), not a Python container."""
    root = accumulators.container_root(container)
    return root is not None and device.is_tensor(root)


def _escapes(p: Provenance, scope: nodes.NodeNG, holders: FrozenSet[int], root: nodes.NodeNG, defs: FrozenSet) -> bool:
    """The container leaves the function: returned, yielded, stored on ``self``, or owned by a caller."""
    if isinstance(root, (nodes.Attribute, nodes.AssignAttr)):
        return True  # self.x: the object outlives the call
    for d in defs:
        if d.scope is not scope or isinstance(d.node.parent, nodes.Arguments):
            return True  # a global or a parameter: the caller owns it
    return any(not e.prov.stopped and p.depends_on(e.prov, holders) for e in p.escapes_in(scope))


def _chained_by_recurrence(p: Provenance, loop: "loops.Loop", stored: Prov, holders: FrozenSet[int]) -> bool:
    """The stored value is computed by a statement of the loop that reads a graph-carrying binding
    the previous iteration made (a decoder's hidden state, the last frame): every step's graph is
    chained into the next one's, so the recurrence keeps it whatever the container holds, and
    ``.detach()`` on the stored value frees nothing (``no_grad`` around the loop would)."""
    made_from = p.graph_defs(stored) | set(stored.deps)
    for name in loop.nodes_of_class(nodes.Name):
        reaching = p.reaching_defs(name)
        if not reaching or not p.carries_graph(name):
            continue
        statement = name.statement()
        if not isinstance(statement, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign)):
            continue  # a loop header or a condition: what it binds is not computed from the read
        if not _graph_flows_up(p, name, statement):
            continue  # ``state.detach()``: the chain is cut at every step
        if not any(
            id(d) not in holders and d.prov.graph and loops.inside(d.node, loop) and _not_before(d.node, statement)
            for d in reaching
        ):
            continue
        for target in statement.nodes_of_class(nodes.AssignName):
            made = p.def_of(target)
            if made is not None and made.prov.graph and id(made) in made_from and id(made) not in holders:
                return True
    return False


def _graph_flows_up(p: Provenance, name: nodes.Name, statement: nodes.NodeNG) -> bool:
    """Every analysed expression between ``name`` and its statement still carries a graph."""
    node = name.parent
    while node is not None and node is not statement:
        value = p.value(node)
        if value is not None and not value.graph:
            return False
        node = node.parent
    return node is statement


def _not_before(binding: nodes.NodeNG, statement: nodes.NodeNG) -> bool:
    """``binding`` is made by ``statement`` itself or by a later statement: the value read there
    comes from the previous iteration."""
    made_by = binding.statement()
    return made_by is statement or (made_by.fromlineno or 0) > (statement.fromlineno or 0)


def _may_backpropagate(p: Provenance, loop: "loops.Loop", stored: Prov) -> bool:
    graph_defs = p.graph_defs(stored)
    for call in loops.calls_in(list(loop.body), 0):
        name = infer.call_name(call)
        if name is None or not MAY_BACKPROPAGATE.search(name):
            continue
        if infer.callee_qname(call) is not None:
            continue  # resolved: an optimizer step, a scheduler, a helper of this file
        for arg in list(call.args) + [kw.value for kw in call.keywords or ()]:
            value = p.value(arg)
            if value is not None and not value.stopped and (
                value.sources & stored.sources or p.depends_on(value, graph_defs)
            ):
                return True
    return False


def _graph_element(p: Provenance, value: nodes.NodeNG) -> nodes.NodeNG:
    """For a display (``{"loss": loss, "acc": acc}``), the first element that carries a graph."""
    if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
        elements = list(value.elts)
    elif isinstance(value, nodes.Dict):
        elements = [v for _, v in value.items]
    else:
        return value
    for element in elements:
        if p.carries_graph(element):
            return element
    return value


def _text(value: nodes.NodeNG, lines: Sequence[str]) -> str:
    """The stored expression as written (from the file's lines, never a recursive unparse)."""
    text = source_text(value, lines)
    return text if text is not None and len(text) <= MAX_TEXT else "(...)"
