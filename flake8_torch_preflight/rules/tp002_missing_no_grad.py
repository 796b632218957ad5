"""TP002 missing-no-grad: an evaluation or inference forward pass runs with autograd on."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Set, Tuple

from astroid import nodes

from ..analysis.semantic import dataflow, infer, loops, project
from ..analysis.setup import brain
from ..analysis.training import device, entrypoint, evaluation, gradients, param_count, provenance, training_step
from ._base import Rule, register, text_gate

if TYPE_CHECKING:
    from ..analysis.setup.build import FileContext

# The rule's data (the words that name an evaluation function or a held-out split, the calls that
# show gradients are wanted) lives in ``analysis/training/evaluation.py`` with the evidence it drives.


@register
class MissingNoGrad(Rule):
    code, slug = "TP002", "missing-no-grad"
    #: Evidence of an evaluation (see ``_evidence``): a ``.eval()`` or ``.train(<constant>)`` call, a
    #: ``def`` named for one (val, eval, test, predict, infer as substrings of the name), or a ``for``
    #: loop whose iterable (up to the first colon, over several lines) names a held-out split.
    requires = text_gate(
        r"(?im)\.eval\(|\.train\(\s*(?:True|False|None|\d|['\"])"
        r"|^[ \t]*(?:async[ \t]+)?def[ \t]+\w*(?:val|test|predict|infer)"
        r"|^[ \t]*(?:async[ \t]+)?for\b[^:]{0,300}?(?:val|test|dev|holdout)"
    )
    message = "{call} evaluates ({why}) with autograd on: records unused graphs (memory, time); use torch.no_grad()"
    quoted = ("call", "why")
    rationale = (
        "Autograd records every operation on tensors that require grad, and keeps the activations each one "
        "saved until the output is freed. An evaluation or inference loop never calls backward(), so that "
        "work and memory are wasted: peak memory during evaluation can exceed training's. The rule reports "
        "the forward call of a model (resolved through its binding: an nn.Module, a from_pretrained model, a "
        "DDP/FSDP wrapper; a tokenizer or preprocessor is not a model) made with autograd on in a function or "
        "loop that never calls backward() and that evaluates: the function is named like validate, evaluate, "
        "test, predict or infer, the model was put in eval() mode before the call, or the loop iterates a "
        "validation or test loader. A forward under another name counts: a method of the project's "
        "nn.Module class that runs its submodules (model.predict(u, items), resolved through the binding), "
        "a method named for a forward (model.incremental_forward(x)) of a model whose class is not read, "
        "and a model's own method that calls self.eval() and then its submodules in a loop (a decoder). One "
        "pass function shared by both phases (train_and_valid(model, loader, is_train), "
        "run_epoch(..., mode='eval'), _run_one_epoch(cross_valid=True)) is read with a call's constant "
        "arguments and the defaults it leaves: when they skip every backward() and the model is in eval() "
        "mode there (switched by the caller before the call, or in the function on the flag), the "
        "unconditional forward is reported once, naming that call's line."
    )
    leaves_alone = (
        "It is silent under no_grad/inference_mode/set_grad_enabled(False), on an input wrapped in "
        "Variable(x, volatile=True) (how PyTorch 0.3 and earlier, which the file is written for, turned "
        "autograd off), in decorated functions, in "
        "functions whose every call site in the file disables autograd, in Lightning's "
        "validation_step/test_step/predict_step (the trainer disables it), and where gradients are wanted "
        "(backward(), autograd.grad or requires_grad_ in the same pass: adversarial evaluation, saliency "
        "maps). A shared pass function is reported only for a call whose constants skip its gradients, "
        "made with autograd on, after an eval() switch; a forward under torch.set_grad_enabled(is_train) is "
        "silent. A model method decorated with no_grad, or running no submodule, is not a forward; nor is a "
        "call of a module whose own forward runs its layers under no_grad (an inference wrapper), or of a module "
        "whose class freezes every parameter when built (``self.freeze()`` in ``__init__`` setting "
        "requires_grad = False: a frozen text encoder). A forward in a loop that steps a simulator "
        "(``obs, reward, done, info = env.step(action)``: an agent's test episodes) takes one observation "
        "and frees its graph at each step: not reported. Nor is a forward on one item made a batch of one in "
        "place (``x[None]``, ``x.unsqueeze(0)``, ``x.view(1, ...)``, ``torch.LongTensor([[token]])``, a column "
        "``seq[:, i]`` of such a batch): a decoding step, one sentence translated, one observation; it records "
        "one item's graph, freed with its output. A batch built from a shape (``torch.zeros(1, 1, 1)``, the seed "
        "of a generation method that runs the model over a whole sequence) is not an item."
        " One root cause is one finding: the first forward of a function (in source order), and none in a "
        "function whose every call in the file is made from a function already reported."
        " A forward through a model method (model.predict(x)) needs an eval() switch or a loop over a "
        "held-out split: a function's name alone (predict_neg_score() on the training path) is not enough."
        " Nor is it for a wrapper that returns the forward's output as is (``def predict(self, s): return "
        "self.model(s)``, or through a name read only by the return): its callers decide what the graph is for "
        "(a policy's action probabilities feed its loss)."
        " Nor is a forward run once per call of its function (in no loop of it) on the very inputs of a "
        "training forward of the file, written alike and the same at every iteration "
        "(``self.model(data.adjacency, data.x)`` in ``predict()`` and in the training loop of a full-graph "
        "node classifier): its graph is no larger than the training step's, which the run holds anyway, and is "
        "freed at return."
        " A method of a model class (an nn.Module or a LightningModule) that no call in the file reaches "
        "(``Model.infer()`` run from another module or by the trainer, whose caller may disable autograd) is "
        "left alone, with the methods only it calls, unless it switches the model itself (self.eval()) and "
        "runs the forward in a loop."
        " A forward in a closure that its factory returns or passes on (``get_model_fn(model)`` returning "
        "``model_fn``), or in a function called only from such closures, belongs to the closure's callers: "
        "some may need the graph (a likelihood taking autograd.grad through it), so it is never reported; "
        "nor is a function that a caller in the file runs under torch.enable_grad()."
        " Policy on one-off forwards: the rule reports evaluation passes that repeat. A forward that runs "
        "once per run of the program is left alone: outside any loop or comprehension, and either at module "
        "level, on a dummy input built in place (``model(torch.ones(1, 3, 640, 640))``, also wrapped in "
        "``Variable(...)`` or handed through a helper of the project that only wraps and moves its argument: "
        "a warm-up, a shape probe or one sample grid), or in a function every call of which in the file runs "
        "once in turn (one full-batch "
        "``test()`` on a graph after training). It costs one graph, freed with its output, not one per "
        "batch. The same forward in a function the epoch loop calls, or one with no call in the "
        "file (its callers elsewhere may run it per batch or per request), is reported."
        " So is one pass over a test set once per run after training on its path (the final test after "
        "the epochs, at module level or in a function every call of which runs once) only when it keeps "
        "graphs across its iterations (``outputs.append(model(x))``, ``total += loss``): otherwise each "
        "batch's graph is freed at the next, under the training step's own peak. In a program that only "
        "evaluates, or on a path that only evaluates (``if args.eval: test() else: train()``), that pass "
        "is the run, and is reported."
        " A program that runs on the CPU (nothing in the file places work on an accelerator: no CUDA, no "
        "device, no framework or wrapper that places the model) wastes no GPU memory or time: its "
        "evaluation of a model bound in the file is left alone; one of a model handed in by callers "
        "elsewhere is still reported, unless no file of the project (code, scripts, configurations, "
        "README) names an accelerator (CUDA, a GPU, a framework that places the model)."
        " A function with no call in its file is looked up in the project's other modules (read as text, "
        "never imported): when each of them calls it under no_grad or inference_mode it is left alone; so is, in "
        "a project that is no installable package (no setup.py, setup.cfg or pyproject.toml: no code outside "
        "it calls its classes), a method of a class with no base outside the project that no module calls at "
        "all (an evaluation nobody runs; a framework's hook is not such a method), and an undecorated "
        "module-level function that nothing runs: its module does not name it, no other module imports and "
        "reads it (a caller importing another module's copy, a call in a comment or in a file Python cannot "
        "parse runs nothing), and no notebook, configuration or document names it."
        " The question is asked up the chain of callers: a helper every call of which in the file is under "
        "no_grad or made from a function whose own callers (here or in other modules) all disable autograd "
        "is left alone (a sampler's ``forward(model, x)`` reached only from ``@torch.no_grad()`` searches)."
        " Unit tests, by any code: nothing in a module of the test suite (a ``test_*.py``/``*_test.py`` module "
        "in a ``test``/``tests`` folder or importing pytest or unittest, or a ``conftest.py``) and nothing inside "
        "a test function elsewhere (a ``test_*`` function of a test module or a method of a ``Test*`` class) is "
        "reported: it runs once per test on the test's own inputs; a ``test_*`` name is no evaluation evidence. "
        "A script named like a test outside the suite (``tools/test_net.py``) is a program like any other."
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
        "evaluate(nn.Linear(8, 2).cuda(), [])\n"
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
        "evaluate(nn.Linear(8, 2).cuda(), [])\n"
    )

    def __init__(self, ctx: "FileContext") -> None:
        super().__init__(ctx)
        self._eval_scopes: Dict[int, bool] = {}
        self._found: List[Tuple[nodes.Call, Optional[nodes.FunctionDef], str]] = []
        self._kinds: Dict[int, Optional[str]] = {}
        self._self_switched: Set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        if not isinstance(node.func, (nodes.Name, nodes.Attribute)):
            return
        if isinstance(node.func, nodes.Attribute) and node.func.attrname in evaluation.NOT_FORWARD_METHODS:
            return
        func = loops.enclosing_function(node)
        named = func is not None and evaluation.eval_named(func)
        split_loop = evaluation.split_loop(node)
        if not named and split_loop is None and not self._has_eval_calls(func or node.root()):
            if func is None or not self._has_eval_calls(node.root()):
                return  # no evaluation evidence anywhere near: skip the analysis
        method = False
        if not provenance.could_be_model_call(node, self._kinds):
            method = evaluation.model_method(node)
            if not method:
                return  # not a model's forward: no need to start the whole-file analysis
        model = node.func.expr if method else evaluation.model_expression(node)  # type: ignore[union-attr]
        mode = evaluation.mode_before(node, model, func or node.root())
        why = self._evidence(node, func, mode)
        shared: Optional[nodes.Call] = None
        if why is None and func is not None and evaluation.takes_gradients(func):
            # one train/eval pass for both phases, run for evaluation by a call with its flag
            shared = evaluation.eval_pass_call(node, func, model)
            why = None if shared is None else "eval call at line {}".format(shared.lineno)
        if why is None:
            return  # checked before the whole-file analysis is started: it needs none
        if evaluation.volatile_input(node):
            return  # ``Variable(x, volatile=True)``: PyTorch 0.3's no_grad, in the version the file is for
        if evaluation.in_rollout(node):
            return  # one observation per forward in a simulator loop: a tiny graph, freed at each step
        if evaluation.single_item_input(node):
            return  # one item made a batch of one (a decoding step, one sentence): one item's graph
        named_only = shared is None and split_loop is None and (mode is None or mode[0] != "eval")
        if named_only and (method or evaluation.returned_as_is(node)):
            return  # only named like an evaluation: a model method, or a wrapper returning the output as is
        p = provenance.of(self.ctx)
        kind = provenance.MODEL_CALL if method else p.call_kind(node)  # ``model.predict(x)``
        if kind not in (provenance.MODEL_CALL, provenance.MAYBE_MODEL_CALL):
            return
        if p.grad_mode(node) != provenance.ON:
            return
        if func is not None and p.callers_unknown(func):
            return  # a callback or returned closure: its callers may well disable autograd
        if kind == provenance.MAYBE_MODEL_CALL and (mode is None or mode[0] != "eval") and shared is None:
            return  # an unresolved callee named like a model counts only after <it>.eval()
        if shared is None and _backpropagated(p, node):
            return  # its output reaches a backward(): not an evaluation (the eval call skips it)
        if shared is None and func is not None and _result_trained(p, func):
            return  # ``results = inference(net, batch)`` then ``calc_loss(results).backward()``: the training forward
        if shared is not None and p.grad_mode(shared) == provenance.OFF:
            return  # the eval call itself runs under no_grad
        if not method and evaluation.forward_grad_off(node):
            return  # the module's own forward runs its layers under no_grad: always an inference
        if evaluation.frozen_model(model, func, p.reaching_defs):
            return  # requires_grad_(False) on the model, or built frozen (a PEFT adapter loaded for inference)
        if func is not None and _handed_out(p, func, _CALLER_DEPTH):
            return  # a closure returned or passed on: whoever calls it chooses the grad mode
        if func is not None and _callers_want_graph(p, func, _CALLER_DEPTH):
            return  # a caller runs it under enable_grad(): it wants the graph
        if _runs_once(p, node, func, _CALLER_DEPTH):
            return  # a one-off forward (a final test, a warm-up, a unit test): not an evaluation loop
        if _replays_training_forward(p, node, func):
            return  # the training forward's own inputs, once (a full-graph GNN): no new peak, freed at return
        if device.cpu_only(node.root()) and (_bound_in_file(model) or device.cpu_project(node.root())):
            return  # a program that runs on the CPU: no accelerator's memory or time is at stake
        runner = loops.enclosing_function(shared) if shared is not None else func
        if runner is not None and _graph_free(p, runner, _CALLER_DEPTH):
            return  # every path to it has autograd off (here or in the project's other modules), or none runs
        if func is not None and mode == ("eval", "self") and func.is_method() and evaluation.repeats(node):
            self._self_switched.add(id(func))  # ``generate()`` calls self.eval() and decodes in a loop
        self._found.append((node, func, why))

    def leave_module(self, node: nodes.Module) -> None:
        """One finding per root cause: the first forward (in source order) of each function, and none
        in a function whose every call in the file is made from a function already reported (one
        ``no_grad`` on the caller fixes both)."""
        first: Dict[int, Tuple[nodes.Call, Optional[nodes.FunctionDef], str]] = {}
        for call, func, why in sorted(self._found, key=lambda f: (f[0].lineno, f[0].col_offset)):
            first.setdefault(id(func) if func is not None else -call.lineno, (call, func, why))
        if not first:
            return
        p = provenance.of(self.ctx)
        elsewhere = {
            id(func)
            for _, func, _ in first.values()
            if func is not None and id(func) not in self._self_switched and _called_elsewhere(p, func, 2)
        }
        reported = {id(func) for _, func, _ in first.values() if func is not None} - elsewhere
        for call, func, why in first.values():
            if func is not None and id(func) in elsewhere:
                continue  # ``Model.infer()`` run from another module: its caller may well disable autograd
            callers = _callers(p, func) if func is not None else None
            if callers and all(id(c) in reported for c in callers):
                continue  # every call comes from a function already reported: one no_grad there fixes both
            self.report(call, call=_text(call.func, self.ctx.lines) + "(...)", why=why)

    def _evidence(
        self,
        call: nodes.Call,
        func: Optional[nodes.FunctionDef],
        mode: Optional[Tuple[str, str]],
    ) -> Optional[str]:
        """Why this is an evaluation (``evaluation.evidence``), as the message says it, or None."""
        found = evaluation.evidence(call, func, mode)
        if found is None:
            return None
        reason, about = found
        if reason == "named":
            return "in {}()".format(about.name)  # type: ignore[attr-defined]
        if reason == "split":
            return "in the loop over {}".format(_text(about.iter, self.ctx.lines))  # type: ignore[attr-defined]
        return "after {}.eval()".format(about)

    def _has_eval_calls(self, scope: nodes.NodeNG) -> bool:
        cached = self._eval_scopes.get(id(scope))
        if cached is None:
            cached = self._eval_scopes[id(scope)] = evaluation.has_eval_calls(scope)
        return cached


#: Levels of callers read to tell who runs a function (a closure handed out, a one-off call).
_CALLER_DEPTH = 3


def _callers_want_graph(p: "provenance.Provenance", func: nodes.FunctionDef, depth: int) -> bool:
    """A call of ``func`` in the file runs under ``enable_grad()`` (``depth`` levels of callers up):
    the caller wants the graph (a likelihood or saliency map taking gradients through it)."""
    for site in p.call_sites(func):
        if evaluation.enables_grad(site):
            return True
        caller = loops.enclosing_function(site)
        if caller is None or caller is func:
            continue
        if depth > 1 and _callers_want_graph(p, caller, depth - 1):
            return True
    return False


def _handed_out(p: "provenance.Provenance", func: nodes.FunctionDef, depth: int) -> bool:
    """``func`` is a closure its defining function returns or passes on (``get_model_fn(model)``
    returns ``model_fn``), or every call of it is made from such a closure: its callers, and the
    grad mode they run it in, are elsewhere."""
    outer = func.parent.scope() if func.parent is not None else None
    if isinstance(outer, nodes.FunctionDef) and not func.is_method() and _escapes(func, outer):
        return True
    if depth <= 1:
        return False
    callers = _callers(p, func)
    return bool(callers) and all(_handed_out(p, c, depth - 1) for c in callers)  # type: ignore[union-attr]


def _escapes(func: nodes.FunctionDef, outer: nodes.FunctionDef) -> bool:
    """``func``'s name is used in ``outer`` other than as a callee: returned, stored or passed on."""
    for name in outer.nodes_of_class(nodes.Name):
        if name.name != func.name or name.scope() is func:
            continue
        if isinstance(name.parent, nodes.Call) and name.parent.func is name:
            continue
        return True
    return False


def _runs_once(p: "provenance.Provenance", call: nodes.Call, func: Optional[nodes.FunctionDef], depth: int) -> bool:
    """The forward runs once per run of the program: outside any loop, in module code, a test, a
    warm-up on a dummy input, a probe whose output nobody reads, or a function every call of which
    in the file runs once; or it is a speed or smoke check (``evaluation.speed_check``)."""
    if evaluation.speed_check(call):
        return True  # a loop timing the forward, or a model file's __main__ check on a random input
    if evaluation.repeats(call):
        if _few_fixed_items(call) and (func is None or _function_runs_once(p, func, depth)):
            return True  # five prompts written in the source, encoded once before training
        return _final_pass(p, call, func, depth)
    if func is None or evaluation.dummy_input(call) or evaluation.discarded(call):
        return True
    return _function_runs_once(p, func, depth)


def _final_pass(
    p: "provenance.Provenance", call: nodes.Call, func: Optional[nodes.FunctionDef], depth: int
) -> bool:
    """One pass over a test set in a program that trains: the forward repeats only inside one loop
    that itself runs once per run (at module level, or in a function every call of which runs once),
    in a file that takes optimizer steps, and no value that carries the pass's graph outlives an
    iteration. Each batch's graph is freed at the next; the waste is one forward's saved activations,
    under the training step's own peak, once per run: not the repeated evaluation the rule is for."""
    around = loops.enclosing_loops(call)
    if len(around) != 1 or call.scope() is not (func or call.root()):
        return False  # a pass per epoch; or a comprehension, which keeps every element it builds
    if not training_step.file_trains(call.root()):
        return False  # an evaluation or inference program: the pass is the run
    if func is not None and not _function_runs_once(p, func, depth):
        return False
    if not _after_training(p, call, depth):
        return False  # ``if args.eval: test() else: train()``: on its path the pass is the run
    kinds = (nodes.AugAssign, nodes.Assign, nodes.Call)
    return not any(_keeps_graph(p, node) for stmt in around[0].body for node in stmt.nodes_of_class(kinds))


def _after_training(p: "provenance.Provenance", node: nodes.NodeNG, depth: int) -> bool:
    """Training runs before ``node`` on every path to it: a statement ahead of it in its block, or in
    an enclosing block (``loops.run_before``), makes a backward or optimizer step (the file's functions
    it calls expanded, ``entrypoint.calls_run_by``); in a function, this holds at every call of it in the
    file."""
    before = list(loops.run_before(node))
    if any(training_step.is_step_call(c) for c in entrypoint.calls_run_by(before)):
        return True
    func = node.scope()
    if not isinstance(func, nodes.FunctionDef) or depth <= 0:
        return False
    sites = p.call_sites(func)
    return bool(sites) and all(_after_training(p, site, depth - 1) for site in sites)


def _graph_free(p: "provenance.Provenance", func: nodes.FunctionDef, depth: int) -> bool:
    """Every path to ``func`` runs with autograd off: each call of it in the file is under
    ``no_grad`` or made from a function for which this holds in turn (``depth`` levels of callers);
    one with no call in the file is asked of the project's other modules (``_graph_free_elsewhere``):
    ``forward(model, x)`` called by ``sample()``, which only a ``@torch.no_grad()`` function here
    calls, and by ``get_logp()``, which only other modules' ``no_grad`` searches call."""
    def settled(site: nodes.Call) -> Optional[bool]:
        if p.grad_mode(site) == provenance.OFF:
            return True
        return False if loops.enclosing_function(site) is None else None  # module code with autograd on

    return _at_every_call(p, func, depth, settled, lambda f: _graph_free_elsewhere(p, f))


def _at_every_call(
    p: "provenance.Provenance",
    func: nodes.FunctionDef,
    depth: int,
    settled: "Callable[[nodes.Call], Optional[bool]]",
    uncalled: "Callable[[nodes.FunctionDef], bool]",
) -> bool:
    """A property holds at every call of ``func`` in the file: ``settled(site)`` answers for a site
    (None: ask the function making the call, ``depth`` levels up); a function with no call in the file
    answers ``uncalled(func)``."""
    sites = p.call_sites(func)
    if not sites:
        return uncalled(func)
    if depth <= 0:
        return False
    for site in sites:
        verdict = settled(site)
        if verdict is None:
            caller = loops.enclosing_function(site)
            verdict = caller is not None and caller is not func and _at_every_call(
                p, caller, depth - 1, settled, uncalled
            )
        if not verdict:
            return False
    return True


def _graph_free_elsewhere(p: "provenance.Provenance", func: nodes.FunctionDef) -> bool:
    """``func`` has no call in this file, and the project's other modules call it only under
    ``torch.no_grad()``/``inference_mode()``, in a function that runs a ``backward()`` (a policy's
    ``evaluate_actions`` feeding the loss) or in a loop that steps a simulator (``project.external_calls``,
    ``evaluation.rollout_call``: one observation per forward); or, in a project that is no
    installable package (an application: no code outside it calls its classes), it is a method of a
    class with no base outside the project that no module of the project calls at all (an evaluation
    nobody runs, not a framework hook), or a module-level function nothing runs (``_run_by_nobody``)."""
    if p.call_sites(func):
        return False
    calls = project.external_calls(func)
    if calls is None:
        return False
    if calls:
        return all(call.grad_off or call.trains or evaluation.rollout_call(call) for call in calls)
    if not func.is_method():
        return _run_by_nobody(func)
    klass = func.parent.frame() if func.is_method() else None
    if not isinstance(klass, nodes.ClassDef) or project.packaged(str(func.root().file)):
        return False
    if any(infer.method_name(call) == func.name for call in loops.calls_named(func.root(), func.name)):
        return False  # ``self._valid_epoch()`` in a base class of the file: a call that did not resolve to it
    return _project_bases_only(klass)


def _run_by_nobody(func: nodes.FunctionDef) -> bool:
    """A module-level function of an application (no installable package: no code outside it imports
    its modules) that nothing runs: no statement of its module names it outside its body, no other
    module of the project imports it or reads it from its module (``project.imported_elsewhere``; a
    copy of the same function in another module is that module's), and no notebook, configuration or
    document names it.  A decorated function may be registered; it is left to run."""
    path = str(getattr(func.root(), "file", "") or "")
    if not path or func.decorators is not None or project.packaged(path):
        return False
    if evaluation.named_in_module(func):
        return False
    return project.imported_elsewhere(func) is False and project.named_elsewhere(func.name, path, False) is False


def _project_bases_only(klass: nodes.ClassDef, depth: int = 3) -> bool:
    """Every base of the class is ``object`` or a class of the project (its methods are no framework's hooks)."""
    for base in klass.bases:
        if isinstance(base, nodes.Name) and base.name == "object":
            continue
        resolved = infer.safe_infer(base)
        if not isinstance(resolved, nodes.ClassDef) or depth <= 0:
            return False
        home = resolved.root()
        if home is not klass.root() and not brain.project_module(str(home.name)):
            return False
        if not _project_bases_only(resolved, depth - 1):
            return False
    return True


def _bound_in_file(model: nodes.NodeNG) -> bool:
    """What ``model`` names is bound in this file (an assignment, or an argument every in-file call
    site passes: ``infer.bound_values``), not handed in by a caller elsewhere that may place it."""
    root = evaluation.unwrap(model)
    while isinstance(root, nodes.Attribute):
        root = root.expr
    if not isinstance(root, nodes.Name):
        return False
    values = infer.bound_values(root)
    return values is not None and all(
        not isinstance(v, nodes.Name) or infer.bound_values(v) is not None for v in values
    )


def _keeps_graph(p: "provenance.Provenance", node: nodes.NodeNG) -> bool:
    """``node`` stores a graph-carrying value where it outlives the iteration: an augmented
    assignment, an element or attribute store, or an argument of a container's append/extend/insert."""
    if isinstance(node, nodes.AugAssign):
        return p.carries_graph(node.value)
    if isinstance(node, nodes.Assign) and any(isinstance(t, (nodes.Subscript, nodes.AssignAttr)) for t in node.targets):
        return p.carries_graph(node.value)
    if isinstance(node, nodes.Call) and infer.method_name(node) in provenance.STORE_METHODS:
        return any(p.carries_graph(a) for a in node.args)
    return False


#: A loop over at most this many items written in the source (``for prompt in [...]``) is a one-off
#: pass over a handful of examples, like TP010's few fixed items.
FEW_FIXED_ITEMS = 16


def _few_fixed_items(call: nodes.Call) -> bool:
    """Every loop around ``call`` iterates a few items fixed in its header (``loops.few_fixed_items``)."""
    around = loops.enclosing_loops(call)
    return bool(around) and all(loops.few_fixed_items(loop, FEW_FIXED_ITEMS) for loop in around)


def _function_runs_once(p: "provenance.Provenance", func: nodes.FunctionDef, depth: int) -> bool:
    """Every call of ``func`` in the file runs once per run: none in a loop, each in module code or in a
    function every call of which runs once (a function with no call here may run per batch elsewhere)."""
    def settled(site: nodes.Call) -> Optional[bool]:
        if evaluation.repeats(site):
            return False
        return True if loops.enclosing_function(site) is None else None

    return _at_every_call(p, func, depth, settled, lambda f: False)


def _backpropagated(p: provenance.Provenance, call: nodes.Call) -> bool:
    ident = id(call)
    return any(ident in b.prov.sources or ident in b.prov.maybe for b in p.backwards)


def _replays_training_forward(p: "provenance.Provenance", node: nodes.Call, func: Optional[nodes.FunctionDef]) -> bool:
    """``node`` runs once per call of its function (in no loop of it) on the very inputs of a forward of
    the file whose output reaches a ``backward()``, written alike (``self.model(data.adjacency, data.X)``
    in ``predict()`` and in the training loop: full-batch training on one graph).  Its graph is no larger
    than the training step's, which the run already holds at its peak, and is freed when the function
    returns: a cost in recording time only."""
    if func is None or any(loops.inside(loop, func) for loop in loops.enclosing_loops(node)):
        return False
    if not _fixed_inputs(node) or isinstance(node.scope(), nodes.ComprehensionScope):
        return False
    text = dataflow.binding_text(node)
    return any(
        other is not node and dataflow.binding_text(other) == text and _fixed_inputs(other) and _backpropagated(p, other)
        for other in loops.calls_named(node.root(), infer.call_name(node) or "")
    )


def _fixed_inputs(call: nodes.Call) -> bool:
    """Every argument of ``call`` is an attribute of an object (``self.graph.x``, ``data.edge_index``) that
    no loop around the call rebinds: the same tensors at every iteration, not a batch."""
    arguments = list(call.args) + [keyword.value for keyword in call.keywords or ()]
    if not arguments:
        return False
    rebound = {
        name.name for loop in loops.enclosing_loops(call)
        for name in loop.nodes_of_class(nodes.AssignName)
    }
    for argument in arguments:
        root = argument
        while isinstance(root, nodes.Attribute):
            root = root.expr
        if root is argument or not isinstance(root, nodes.Name) or root.name in rebound:
            return False
    return True


def _result_trained(p: "provenance.Provenance", func: nodes.FunctionDef) -> bool:
    """Every call of ``func`` in the file gives a result that reaches a ``backward()`` there: a helper
    named like an evaluation (``inference(net, batch)``) that makes the training forward."""
    sites = p.call_sites(func)
    return bool(sites) and all(_backpropagated(p, site) or _makes_loss(site) for site in sites)


def _makes_loss(site: nodes.Call) -> bool:
    """The result of ``site`` is handed to a call whose result gets ``.backward()``: ``results =
    inference(net, batch)``, ``loss = calc_loss(loss_dict, results)``, ``loss.backward()`` (read
    through the names they are bound to, where the provenance of a helper's loss stops)."""
    target = dataflow.assigned_name(site)
    if target is None:
        return False
    for use in dataflow.name_uses(target):
        call = use.parent
        if isinstance(call, nodes.Keyword):
            call = call.parent
        if not isinstance(call, nodes.Call) or use is call.func:
            continue
        loss = dataflow.assigned_name(call)
        if loss is not None and any(
            isinstance(read.parent, nodes.Attribute) and gradients.is_backward(read.parent.parent)
            for read in dataflow.name_uses(loss)
        ):
            return True
    return False


def _callers(p: "provenance.Provenance", func: nodes.FunctionDef) -> Optional[List[nodes.FunctionDef]]:
    """The functions the file calls ``func`` from ([] when it has no call here), or None when a call
    sits outside any function or in ``func`` itself."""
    callers = [loops.enclosing_function(site) for site in p.call_sites(func)]
    if any(c is None or c is func for c in callers):
        return None
    return callers  # type: ignore[return-value]


def _called_elsewhere(p: "provenance.Provenance", func: nodes.FunctionDef, depth: int) -> bool:
    """A method of a model class with no call in this file (its callers live in other modules), or
    one called only from such methods (``depth`` levels up)."""
    callers = _callers(p, func)
    if callers is None:
        return False
    if not callers:  # a model's own method (an nn.Module's or a LightningModule's) no call here reaches
        klass = func.parent.frame() if func.is_method() else None
        return isinstance(klass, nodes.ClassDef) and param_count.is_module_class(klass)
    return depth > 0 and all(_called_elsewhere(p, c, depth - 1) for c in callers)


def _text(node: nodes.NodeNG, lines: Sequence[str]) -> str:
    """An expression as written (from the file's lines), shortened for the message."""
    text = provenance.source_text(node, lines) or "the model"
    return text if len(text) <= 40 else text[:37] + "..."
