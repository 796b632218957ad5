"""The VRAM cost model: pure arithmetic from a ``RunSpec`` (and a GPU) to bytes per device.

No I/O, no astroid, no torch. ``estimate(run, gpu)`` returns an ``Estimate`` whose breakdown is

    peak = weights + gradients + optimizer_state + master_weights + autocast_cache
         + activations + kv_cache + optimizer_step + cuda_context + fragmentation

each term an ``int`` number of bytes on one device, ``0`` when it does not apply to the run
(no gradients when only running inference) and ``None`` when it cannot be estimated (no
activation figure for a CNN, no batch size); an unknown is never a guessed zero.

``optimizer_step`` is what the optimizer step allocates beyond what the backward pass had
live: the foreach implementations of Adam/AdamW/RMSprop/Adagrad build one temporary copy of
the state (``torch._foreach_sqrt``) while activations are already freed, so the term is
``max(0, temporaries - activations - autocast_cache)`` and the sum stays the peak.

The interval
------------
Every term carries ``(low, point, high)``. Definitional terms (weights, gradients, optimizer
state, master weights) are exact once the parameter count is known. The others widen by the
named fractions in the CALIBRATION block: activations by ``ACTIVATIONS_LOW_FRACTION`` /
``ACTIVATIONS_HIGH_FRACTION`` (the coefficients are measured for ten Hugging Face families;
the margin is for unmeasured ones and backward's transients), the CUDA context by
``CUDA_CONTEXT_*_FRACTION``, the KV cache by one layer's growth copy, fragmentation from
``FRAGMENTATION_LOW_FRACTION`` of the low allocated total to ``FRAGMENTATION_HIGH_FRACTION``
of the high one. One cross-term widens the low end only: the point assumes gradients of the
previous step are still held through the forward (``zero_grad()`` after ``step()``, or
``set_to_none=False``); with ``zero_grad()`` before the forward they never coexist with all
activations, so the low end subtracts the smaller of the two
(``GRADIENT_ACTIVATION_OVERLAP_LOW_FRACTION``).

A term that cannot be estimated has ``bytes = None``, a known lower bound (usually 0) and an
upper bound that is ``None`` (unbounded) unless something bounds it (LoRA adapters cannot have
more gradient bytes than the full model); ``fragmentation`` and ``optimizer_step``, which are
computed from other terms, are unknown with them. Then ``peak_bytes`` is the known terms plus
the unknown ones' lower bounds, a lower bound itself (``peak_is_lower_bound``); the interval's
high end is ``None`` when any unknown term is unbounded; ``fits`` is ``None`` unless the lower
bound alone already exceeds the GPU (then ``False``).

Memory that measured runs held and no documented mechanism prices is an uncertain term
(``Estimate.uncertain``, ``UNCERTAIN_LABELS``): ``bytes = None`` with a bounded high end, outside
the breakdown and the point, in the interval's high end only (and in fragmentation's high end).
Training under FSDP carries ``fsdp_unexplained`` (``FSDP_UNEXPLAINED_*``).

Fit: ``fits`` compares the point peak with ``gpu.usable_bytes`` (the CUDA context is a term of
the peak, so it is paid out of the usable memory); ``fits_interval`` compares the high end;
``verdict`` is ``fits`` (whole interval), ``fits-point``, ``does-not-fit``, ``unknown`` or
``no-gpu``. With no GPU the context is ``DEFAULT_CUDA_CONTEXT_BYTES``.

The activation model
--------------------
Transformer layers follow Korthikanti et al. 2022, "Reducing Activation Recomputation in
Large Transformer Models" (arXiv:2205.05198, §4.1): one layer keeps
``s·b·h·(34 + 5·a·s/h)`` bytes with 16-bit activations and dropout. Here the same terms are
kept apart, per token, so that each run trait changes only its own terms, and their values are
those measured for the Hugging Face implementations under fake CUDA tensors
(tests/calibration: exact for GPT-2, OPT, Llama 2/3, Qwen2, BERT, RoBERTa, DistilBERT, T5 and
ViT, eager and SDPA, fp32/amp/bf16). What an implementation does differently is a catalogue
shape flag (``attention_dropout``, ``softmax_fp32``, ``qkv_fused``, ``ffn_dropout``, ...):

* attention (``ATTENTION_SAVED_ELEMENTS``): QKV input (under amp one 16-bit cast per
  projection), Q, K, V, output-projection input, residual dropout mask; eager attention keeps
  K and V expanded to all heads (``repeat_kv``, so GQA saves nothing), fused flash/SDPA kernels
  keep them at ``kv_heads`` width plus the fp32 logsumexp (their output is the output
  projection's input), and no ``s²`` terms; fp32 with GQA runs the math kernel (priced as
  eager); T5's position bias is an ``s²`` mask even for a fused kernel;
* attention scores (``ATTENTION_SCORE_ELEMENTS``, eager only, per head per key): softmax
  output, dropout mask and dropout output, or without attention dropout a 16-bit copy when the
  softmax is fp32 (under autocast, or upcast by the model);
* MLP (``MLP_SAVED_ELEMENTS_PER_FFN``): input (two casts under amp for gated kinds), then per
  FFN width 2 (GELU), 5 (GPT-2's gelu_new), 1 (ReLU: its output is the next input), 4
  (SwiGLU/GeGLU: gate, activation, up, product), plus dropout inside the FFN (T5); MoE layers
  pay the expert part ``experts_per_token`` times;
* norms (``NORM_SAVED_BYTES_PER_HIDDEN`` by precision plus fp32 statistics), cross-attention
  (encoder-decoders: decoder queries against encoder keys and values), and outside the layers
  the LM head's logits (``LOGITS_COPIES``: head output, fp32 upcast, fp32 log-softmax kept by
  the loss). ``activations`` is what autograd keeps, except that the head output and its fp32
  upcast are counted too: they are not saved, but they are live at the end of the forward,
  where the peak is, and at a large vocabulary they are gigabytes.

Inference (``no_grad``) keeps one layer's working set plus the residual stream; generation adds
the KV cache (``kv_cache_bytes``: K and V per layer at ``kv_heads`` width, so grouped-query
attention shrinks it) and keeps logits for the last position only. LoRA prices adapters on the
linear layers it targets (every one by default, ``lora_params``; the output head with ``lm_head``),
the layers it leaves frozen keep no input for a weight gradient (``_frozen_input_elements``), an
adapter's dropout keeps its output and mask (``LORA_DROPOUT_*``), and an adapted output head's
vocabulary-wide branch and sum are live at the head (``LORA_HEAD_TRANSIENT_COPIES``); sharding
divides what it shards by the world size (ZeRO-1: optimizer state and fp32 master weights;
ZeRO-2: also gradients; ZeRO-3/FSDP: also weights, plus the layers gathered for compute);
optimizer offload moves the optimizer state and master weights to the host.

Each element is priced at the width of its tensor class (``ACTIVATION_BYTES``): under
autocast the residual stream and softmax outputs stay fp32 while matmul inputs are 16-bit.
Gradient checkpointing keeps one input per layer plus one layer's working set. CNNs use the
catalogue's ``activation_elements_per_sample`` scaled by ``(image_size / native)²`` at 4 bytes
in fp32 and the measured ``activation_bytes_per_element`` otherwise, ``None`` where the
catalogue has no figure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Mapping, Optional, Set, Tuple

from .run import LORA_HEAD_KIND, lora_target_kinds

if TYPE_CHECKING:
    from .catalogue import GpuTarget, ModelSpec
    from .run import RunSpec

# =============================================================================== CALIBRATION
# Every number the model uses. Tags: PUBLISHED <source> | MEASURED <fixture> | ASSUMED <why>.

#: PUBLISHED IEEE 754 binary32: torch.float32 is 4 bytes per element.
FP32_BYTES = 4
#: PUBLISHED IEEE 754 binary16 / bfloat16: torch.float16 and torch.bfloat16 are 2 bytes.
HALF_BYTES = 2
#: PUBLISHED torch.bool is 1 byte per element; dropout keeps its mask as bool.
#: MEASURED tests/calibration/cpu_vs_cuda.json (CUDA's fused native_dropout keeps a bool mask;
#: the CPU path would keep float noise, which is why every fixture is measured on CUDA paths).
MASK_BYTES = 1

#: PUBLISHED torch.nn.Module.half()/.to(bfloat16) casts the parameters; amp (torch.autocast)
#: leaves them fp32 (AMP docs: "autocast ... ops run in float16 while the model stays fp32").
WEIGHT_BYTES_BY_PRECISION: Dict[str, int] = {"fp32": 4, "amp": 4, "fp16": 2, "bf16": 2}

#: PUBLISHED PyTorch AMP op reference ("Autocast Op Reference", CUDA): matmul/linear/addmm/bmm/
#: conv autocast to float16; softmax, log_softmax, layer_norm, pow to float32. So under amp the
#: residual stream (fp32 embeddings, fp32 norms) and softmax outputs stay 4 bytes while inputs
#: saved by matmuls are 2. Bytes per element, by tensor class: ``stream`` (the residual stream),
#: ``matmul`` (what linear/matmul/conv save), ``softmax`` (outputs of the ops autocast runs in
#: fp32: softmax, pow), ``mask`` (a dropout mask). ``fp16`` is 16-bit weights without autocast,
#: priced like ``bf16`` (same element sizes).
#: MEASURED tests/calibration/activations_gpt2.json (eager/amp/lm bssa 7 = fp32 softmax 4 + bool
#: mask 1 + fp16 dropout output 2; breakdown.json gpt2 eager/amp: ln_1 float32, mlp.act float32).
ACTIVATION_BYTES: Dict[str, Dict[str, int]] = {
    "fp32": {"stream": 4, "matmul": 4, "softmax": 4, "mask": MASK_BYTES},
    "amp": {"stream": 4, "matmul": 2, "softmax": 4, "mask": MASK_BYTES},
    "fp16": {"stream": 2, "matmul": 2, "softmax": 2, "mask": MASK_BYTES},
    "bf16": {"stream": 2, "matmul": 2, "softmax": 2, "mask": MASK_BYTES},
}

#: Per token per layer, in elements of the width in the key name (hidden h, attention width
#: heads·head_dim, kv width kv_heads·head_dim), at the matmul class; the dropout mask in bool.
#: PUBLISHED Korthikanti et al. 2022 (arXiv:2205.05198) §4.1, attention block "11sbh" minus the
#: norm: QKV input, Q, K, V, output-projection input, residual dropout mask. Eager K/V are
#: expanded to all heads by repeat_kv before the matmul that saves them. Dao et al. 2022
#: (arXiv:2205.14135) Alg. 2 / Dao 2023 (arXiv:2307.08691): a fused kernel keeps Q, K, V (GQA at
#: kv width) and a per-row fp32 logsumexp, and no s x s matrix.
#: MEASURED tests/calibration/activations_{bert,roberta,opt,llama,llama-gqa,qwen2,vit}.json: with
#: these values every per-layer fit (eager and sdpa, fp32/amp/bf16) is reproduced exactly.
#: * fused_output_per_attention_width 0 (Korthikanti/Dao: 1): the kernel's output and the output
#:   projection's input are one storage (transpose + reshape is a view): activations_bert.json
#:   sdpa/fp32/cls bsh 34 = eager/fp32/cls bsh 34; breakdown.json keeps nothing under o_proj /
#:   attention.output.dense with sdpa.
#: * qkv_input_autocast_per_hidden 3: under amp the q, k and v nn.Linears each cast the fp32
#:   normed input (autocast's cache holds only leaf weights): activations_bert.json eager/amp/cls
#:   bsh 26 (22 with one cast); a fused qkv projection (catalogue ``qkv_fused``, GPT-2's c_attn)
#:   casts once: activations_gpt2.json eager/amp/lm bsh 22. Without autocast q, k, v share one
#:   input (qkv_input_per_hidden 1, every fp32/bf16 fit).
#: * fused_logsumexp_fp32_per_head 1: every sdpa fit has bsa 4.
#: * pinned_qkv_kv_copies_per_kv_width 2: GPT-2 under sdpa (catalogue ``qkv_views_pinned``): the
#:   kernel keeps its query as a view of c_attn's output, which pins all of q, k, v, and K and V as
#:   the copies the DynamicCache makes (torch.cat), two more kv-wide tensors:
#:   activations_gpt2.json sdpa bsh 42/26/22 vs eager 34/22/18 (fp32/amp/bf16).
ATTENTION_SAVED_ELEMENTS: Dict[str, float] = {
    "qkv_input_per_hidden": 1.0,
    "qkv_input_autocast_per_hidden": 3.0,
    "query_per_attention_width": 1.0,
    "key_value_eager_per_attention_width": 2.0,
    "key_value_fused_per_kv_width": 2.0,
    "fused_output_per_attention_width": 0.0,
    "fused_logsumexp_fp32_per_head": 1.0,
    "output_projection_input_per_attention_width": 1.0,
    "residual_dropout_mask_per_hidden": 1.0,
    "pinned_qkv_kv_copies_per_kv_width": 2.0,
}

#: PUBLISHED Korthikanti et al. 2022 §4.1, the "5as²b" of eager attention: per token, per head,
#: per key: softmax output (softmax class), dropout mask (bool) and dropout output (matmul
#: class) with attention dropout; without it the softmax output feeds attention-over-values
#: itself, unless it is wider than the matmul class, when the 16-bit copy made for the matmul is
#: kept too.
#: MEASURED tests/calibration/activations_*.json eager per_layer bssa: with attention dropout
#: (catalogue ``attention_dropout``, default ``dropout``) 9/7/5 B (fp32/amp/bf16: GPT-2, BERT,
#: RoBERTa, DistilBERT, T5); without it 4/6 B in fp32/amp (OPT: attention_dropout 0.0; Llama,
#: Qwen2, ViT); models whose eager attention upcasts the softmax (catalogue ``softmax_fp32``:
#: ``softmax(..., dtype=torch.float32).to(dtype)``) keep an fp32 softmax and a 16-bit copy in
#: bf16 too: 6 B (activations_{llama,qwen2,opt,vit}.json eager/bf16 bssa 6).
ATTENTION_SCORE_ELEMENTS: Dict[str, float] = {
    "softmax_output": 1.0,
    "dropout_mask": 1.0,
    "dropout_output": 1.0,
    "cast_for_values": 1.0,
}

#: MEASURED tests/calibration/activations_t5.json (sdpa per_layer ssa 4 B in fp32, 2 B in amp and
#: bf16; the decoder also ss 1 B): T5's relative position bias (catalogue relative_kind "t5")
#: reaches sdpa as an explicit float mask, so the memory-efficient kernel keeps, per layer and
#: self-attention block, an (a, s, s) bias at the matmul class without a batch dimension, and a
#: causal stack a bool (s, s) mask as well. Elements per head per query per key, and per query
#: per key. Only the low end uses it: on a real GPU (gpu_h200.json) T5 under SDPA kept what the
#: math kernel keeps (``_uses_fused_kernel``).
POSITION_BIAS_FUSED_ELEMENTS: Dict[str, float] = {"bias_per_head": 1.0, "causal_mask": 1.0}

#: Per token per layer, elements per FFN width by tensor class, the second linear's input
#: included. PUBLISHED Korthikanti et al. 2022 §4.1 MLP "19sbh" (GELU input 8sbh, GELU output
#: 8sbh): gelu 2; ReLU backward uses its output, which is the next input: 1; gated kinds keep
#: gate output, activation output, up output and their product: 4.
#: MEASURED tests/calibration/activations_bert.json (bsf 8/4/4 fp32/amp/bf16: gelu 2),
#: activations_opt.json (bsf 4/2/2: relu 1), activations_llama.json (bsf 16/8/8: swiglu 4);
#: geglu ASSUMED as swiglu (not measured). gelu_new, GPT-2's tanh approximation
#: (NewGELUActivation, Python ops; Phi-2 names the same module): activations_gpt2.json bsf
#: 20/16/10: input, tanh output, 0.5·x, 1 + tanh and their product; under amp pow runs in fp32,
#: so three are fp32 (softmax class) and two 16-bit (breakdown.json gpt2 eager/amp mlp.act).
MLP_SAVED_ELEMENTS_PER_FFN: Dict[str, Dict[str, float]] = {
    "gelu": {"matmul": 2.0},
    "relu": {"matmul": 1.0},
    "swiglu": {"matmul": 4.0},
    "geglu": {"matmul": 4.0},
    "gelu_new": {"softmax": 3.0, "matmul": 2.0},
}
#: Dropout between the activation and the second linear (catalogue ``ffn_dropout``: T5's
#: DenseReluDense / DenseGatedActDense), elements per FFN width added to the kind's.
#: MEASURED tests/calibration/activations_t5.json (bsf 9/5/5 = relu output + bool mask +
#: dropout output, which the second linear keeps). Other kinds ASSUMED from the autograd
#: formulas: the dropout output replaces the activation output as the second linear's input, so
#: only the mask is added.
MLP_INNER_DROPOUT_ELEMENTS_PER_FFN: Dict[str, Dict[str, float]] = {
    "relu": {"matmul": 1.0, "mask": 1.0},
    "gelu": {"mask": 1.0},
    "gelu_new": {"mask": 1.0},
    "swiglu": {"mask": 1.0},
    "geglu": {"mask": 1.0},
}
#: PUBLISHED Korthikanti et al. 2022 §4.1: the first linear keeps its input (sbh elements).
#: MEASURED tests/calibration/activations_bert.json (eager/fp32/cls bsh 34: one input).
MLP_INPUT_ELEMENTS_PER_HIDDEN = 1.0
#: MEASURED tests/calibration/activations_llama.json (eager/amp/lm bsh 34; 32 with one cast):
#: under amp gate_proj and up_proj each cast the fp32 normed input, two 16-bit copies.
MLP_INPUT_AUTOCAST_GATED_ELEMENTS_PER_HIDDEN = 2.0
#: PUBLISHED Korthikanti et al. 2022 §4.1: MLP dropout mask, sbh bools.
#: MEASURED tests/calibration/breakdown.json (gpt2 mlp.dropout bool, 1 B per hidden).
MLP_DROPOUT_MASK_PER_HIDDEN = 1.0
#: Bytes per hidden element that each norm keeps, by precision (the norm's own statistics are
#: below). PUBLISHED Korthikanti et al. 2022 §4.1: a layer norm keeps its input (stream class).
#: MEASURED layernorm 4/4/2 B: activations_bert.json (breakdown.json ln_1 float32 4 B·h,
#: bfloat16 2 B·h). rmsnorm as transformers' LlamaRMSNorm writes it (input cast to fp32,
#: normalised in fp32, cast back before the weight) keeps the fp32 input and the normalised
#: copy: 8 B in fp32 and amp, 4 + 2 B in bf16: activations_llama.json per_layer bsh 40/34/24.
#: rmsnorm_variance_upcast (catalogue ``rmsnorm_upcast: "variance"``, T5LayerNorm: only the
#: variance in fp32) keeps an fp32 copy, the 16-bit input and the normalised output: 8 B in
#: every precision: activations_t5.json per_layer bsh 42/34/30. fp16 is priced as bf16.
NORM_SAVED_BYTES_PER_HIDDEN: Dict[str, Dict[str, int]] = {
    "layernorm": {"fp32": 4, "amp": 4, "fp16": 2, "bf16": 2},
    "rmsnorm": {"fp32": 8, "amp": 8, "fp16": 6, "bf16": 6},
    "rmsnorm_variance_upcast": {"fp32": 8, "amp": 8, "fp16": 8, "bf16": 8},
}
#: PUBLISHED aten native_layer_norm saves mean and rstd (fp32, one each per token); RMSNorm as
#: written in transformers keeps one fp32 rsqrt per token. fp32 values per token per norm.
#: MEASURED tests/calibration/activations_bert.json (per_layer bs 16: two LayerNorms x 8 B),
#: activations_llama.json (bs 8: two RMSNorms x 4 B), activations_t5.json (bs 8 encoder, 12 decoder).
NORM_STATISTICS_FP32_PER_TOKEN: Dict[str, float] = {"layernorm": 2.0, "rmsnorm": 1.0}

#: MEASURED tests/calibration/activations_{gpt2,opt,llama,llama-gqa,qwen2}.json (non_layer bsV
#: plus loss_transient_bytes, every precision): transformers' causal-LM loss (ForCausalLMLoss),
#: copies of batch·seq·vocab: the head's output in the matmul dtype (alive through
#: ``outputs.logits``, not saved), an fp32 upcast (``logits.float()``, absent when already fp32;
#: live while the loss is computed, at the end of the forward, where the peak is) and the fp32
#: log_softmax output that cross_entropy saves for backward. Only the last is autograd-saved
#: (the fixtures' bsV 4); the first two are the loss-time transient, counted because they are
#: live at the peak. Encoder-decoders call CrossEntropyLoss on the head output without the
#: upcast, so "log_softmax_fp32" is then in the head's dtype and the fp32 copy exists only under
#: amp, where autocast casts the log_softmax output for nll_loss (kept): activations_t5.json
#: non_layer bsV 4/6/2 (fp32/amp/bf16) = log_softmax 4/2/2 + the amp copy 4.
LOGITS_COPIES: Dict[str, float] = {"head_output": 1.0, "fp32_upcast": 1.0, "log_softmax_fp32": 1.0}

#: MEASURED tests/calibration/activations_{bert,distilbert}.json, non_layer "mlm" minus "cls"
#: (the same in eager and sdpa): a masked-LM head (dense + GELU + LayerNorm transform before the
#: vocabulary projection) keeps bsh 12/10/6 B (fp32/amp/bf16) more than a classification head,
#: plus the transform LayerNorm's fp32 statistics, bs 8 B. Its logits are priced like an
#: encoder-decoder's (CrossEntropyLoss on the head output, no ``.float()``): bsV 4/6/2 saved +
#: the head output, which ``_logits_bytes_per_position(upcast=False)`` reproduces (8/8/4 B).
#: Confirmed on a GPU: tests/calibration/gpu_h200.json, BertForMaskedLM / DistilBertForMaskedLM.
MLM_HEAD_BYTES_PER_HIDDEN: Dict[str, float] = {"fp32": 12.0, "amp": 10.0, "fp16": 6.0, "bf16": 6.0}
MLM_HEAD_BYTES_PER_TOKEN = 8.0

#: PUBLISHED Korthikanti et al. 2022 §5 (full recomputation keeps 2sbhL bytes): with
#: checkpointing each layer keeps its input (stream class) ...
CHECKPOINT_INPUT_ELEMENTS_PER_HIDDEN = 1.0
#: PUBLISHED Chen et al. 2016 (arXiv:1604.06174) §4: ... and backward recomputes one segment
#: (here one layer) at a time, whose full working set is then live.
CHECKPOINT_RECOMPUTED_LAYERS_COUNT = 1

#: MEASURED tests/calibration/gpu_h200.json. Under no_grad only one layer's intermediates are
#: live at a time, and not all of them: each is freed once used. Beyond weights, autocast cache,
#: logits and KV cache, GPT-2 held 0.39x (generation prefill, 16 x 512) and 0.59x (forward,
#: 32 x 1024) of one training layer's saved bytes; the higher is used. Plus the residual stream
#: in and out of the layer.
INFERENCE_LIVE_LAYER_FRACTION = 0.6
INFERENCE_STREAM_COPIES_COUNT = 2
#: ASSUMED a CNN forward under no_grad holds about a tenth of what training saves (the
#: largest pair of consecutive feature maps), between 3% and 30%.
CNN_INFERENCE_FRACTION = 0.10
CNN_INFERENCE_LOW_FRACTION = 0.03
CNN_INFERENCE_HIGH_FRACTION = 0.30

#: ASSUMED recent transformers (``logits_to_keep``) compute only the last position's logits
#: while generating; the high end of the interval allows logits for the whole prompt.
GENERATION_LOGITS_POSITIONS_COUNT = 1
#: ASSUMED DynamicCache grows by torch.cat, briefly holding an old and a new copy of one layer.
KV_CACHE_GROWTH_EXTRA_LAYERS_COUNT = 1

#: MEASURED tests/calibration/activations_*.json real_validation (120 points, 10 families,
#: eager/sdpa x fp32/amp/bf16): the point sits at 0.988-1.001 of the measured saved bytes +
#: loss-time transient (4 T5 amp points at 0.83-0.90 because the fixture counts a loss cast twice;
#: see tests/calibration/README.md), so the measured spread alone would allow 0.99-1.02.
#: ASSUMED margin beyond it: what the fake-tensor measurement cannot see or did not cover -
#: backward's transients (one layer's activation gradients, live while its saved tensors are),
#: and architecture details of unmeasured families that keep more (per-head q/k norms of Qwen3
#: and Gemma 3, Gemma's fp32 norm weights and Gemma 2's logit soft-capping, MoE routing: up to
#: about +20%) or less (dropout rates that the catalogue's flags get wrong: about -10%).
ACTIVATIONS_LOW_FRACTION = 0.9
ACTIVATIONS_HIGH_FRACTION = 1.25
#: ASSUMED the per-sample CNN figures are MEASURED (tests/calibration/activations_cnn.json: exact
#: at 224 px, linear in the batch, (image/224)^2 within 1.3% from 160 to 320 px) for torchvision's
#: own modules; the interval covers re-implementations (timm, Hugging Face) and backward transients.
CNN_ACTIVATIONS_LOW_FRACTION = 0.7
CNN_ACTIVATIONS_HIGH_FRACTION = 1.5

#: PUBLISHED bitsandbytes Optimizer8bit.init_state (blockwise): each state is uint8 with one
#: fp32 absmax per 256-element block.
ADAMW_8BIT_STATE_BYTES = 1
ADAMW_8BIT_BLOCK_ELEMENTS = 256
ADAMW_8BIT_ABSMAX_BYTES = 4

#: PUBLISHED torch.optim sources: parameter-sized state tensors per trainable parameter
#: (SGD without momentum: none; momentum_buffer; Adam exp_avg + exp_avg_sq; RMSprop
#: square_avg; Adagrad sum; Adadelta square_avg + acc_delta, torch/optim/adadelta.py
#: ``_init_group``: two ``zeros_like(p)``); Lion keeps one momentum (Chen et al. 2023, arXiv:2302.06675).
#: Adafactor is factored (below), so it has no parameter-sized state.
OPTIMIZER_STATE_TENSORS_COUNT: Dict[str, int] = {
    "sgd": 0,
    "sgd-momentum": 1,
    "adam": 2,
    "adamw": 2,
    "adamw-8bit": 2,
    "adafactor": 0,
    "lion": 1,
    "rmsprop": 1,
    "adagrad": 1,
    "adadelta": 2,
}
#: PUBLISHED Shazeer & Stern 2018 (arXiv:1804.04235) §3: a factored second moment keeps one
#: row and one column vector per matrix (transformers.Adafactor default beta1=None: no first
#: moment). ASSUMED square matrices of the model width: 2/hidden state elements per parameter
#: (2/rank for LoRA adapters).
ADAFACTOR_FACTORED_VECTORS_COUNT = 2.0
#: PUBLISHED torch/optim/{adam,adamw,rmsprop,adagrad}.py ``_multi_tensor_*`` (foreach, the
#: CUDA default): ``torch._foreach_sqrt`` of the second moment allocates one state-sized copy;
#: the fused step (``fused=True``) and the per-tensor loop (``foreach=False``) do not.
#: torch/optim/adadelta.py ``_multi_tensor_adadelta``: ``std = _foreach_add(square_avgs, eps)``
#: and ``deltas = _foreach_add(acc_deltas, eps)`` are both live until the update: two copies.
OPTIMIZER_STEP_TEMPORARY_COPIES: Dict[str, int] = {"adam": 1, "adamw": 1, "rmsprop": 1, "adagrad": 1, "adadelta": 2}

#: PUBLISHED Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054) §3.1: mixed-precision training
#: keeps fp32 master parameters (and fp32 Adam states) next to 16-bit weights; DeepSpeed's
#: zero-1/2/3 with fp16/bf16 weights does, torch.optim on .half() weights does not.
MASTER_WEIGHT_BYTES = 4

#: PUBLISHED torch DistributedDataParallel docs, ``gradient_as_bucket_view``: by default the
#: all-reduce buckets hold a second copy of the gradients.
DDP_BUCKET_GRADIENT_COPIES_COUNT = 1
#: ASSUMED FSDP with a per-layer auto-wrap policy and backward prefetch: two layers' full
#: weights are gathered at once (the whole model when the layer count is unknown).
FSDP_GATHERED_LAYERS_COUNT = 2
#: PUBLISHED DeepSpeed configuration docs, ZeRO ``stage3_max_live_parameters`` (default 1e9):
#: "the upper bound of the number of full parameters that are resident in a GPU at any given time"
#: under ZeRO-3; the high end of the gathered working set when the layer count is not known.
ZERO3_MAX_LIVE_PARAMETERS_COUNT = 1_000_000_000
#: PUBLISHED torch.distributed.fsdp.FullyShardedDataParallel docs, ``use_orig_params``: FSDP
#: supports mixing frozen and non-frozen parameters in one flat parameter, "but it's recommended to
#: avoid doing so to prevent higher than expected gradient memory usage": the flat parameter's
#: gradient covers every parameter in it. Per-layer auto-wrapping puts a LoRA layer's frozen base
#: weight and its adapters in one flat parameter (Lightning's FSDPStrategy and accelerate set
#: ``use_orig_params=True``), so the point prices a gradient shard for the whole model in the
#: weights' dtype; the low end the trainable parameters alone (FSDP2's ``fully_shard`` keeps
#: per-parameter gradients). The fraction of the flat parameters that carries a gradient:
FSDP_FLAT_GRADIENT_FRACTION = 1.0
#: PUBLISHED litgpt ``tutorials/resource-tables.md`` and ``config_hub/finetune/README.md`` at
#: 26857050 (benchmarks/published: lt-10, lt-11, lc-3, lc-14; ``max_memory_allocated``): FSDP runs
#: (Lightning Fabric's FSDPStrategy, per-block wrapping, activation checkpointing) held more than
#: every priced term, and no mechanism that FSDP or FSDPStrategy documents accounts for it. The
#: excess is not priced at the point; it is the uncertain term ``fsdp_unexplained``, which widens
#: the interval's high end only. Its bound is the form each kind of run's figures support, with
#: the ratio of (figure - the high end of the priced allocated terms) to it:
#: with part of the model frozen (LoRA, adapters), copies of the whole model's weights in the
#: compute dtype (16-bit under amp/fp16/bf16): lt-10 (Llama 2 7B, LoRA q+v, 2 x A100-40GB,
#: 22.18 GB) 0.49, lt-11 (Llama 2 13B, 4 x A100-40GB, 35.57 GB) 0.75 of one bf16 copy;
FSDP_UNEXPLAINED_WEIGHT_COPIES_COUNT = 1
#: PUBLISHED the same figures, with every parameter trained: a multiple of the sharded model
#: states as priced (the points of weights, gradients, optimizer state and master weights on one
#: device): lc-3 (Gemma 2B, full fine-tuning, 4 x A10G, 17.43 GB) 1.80, lc-14 (Phi-2, 4 x A10G,
#: 14.44 GB) 1.08. (One bf16 copy of the weights would leave lc-3 out, 2.01 copies; sharded states
#: would not suit the LoRA runs, 0.46 of them on 2 GPUs against 1.37 on 4.)
FSDP_UNEXPLAINED_STATES_HIGH_FRACTION = 2.0

#: PUBLISHED PEFT ``LoraModel`` (``autocast_adapter_dtype=True``, the default): adapter weights
#: of a 16-bit model are upcast to fp32 (peft ``tuners_utils._cast_adapter_dtype``). Their
#: gradients and optimizer state follow (``zeros_like``). ``--lora-dtype model`` (litgpt's LoRA;
#: PEFT with ``autocast_adapter_dtype=False``) keeps them in the weights' dtype instead.
LORA_ADAPTER_BYTES = 4

#: PUBLISHED Dettmers et al. 2023, QLoRA (arXiv:2305.14314) §3, "4-bit NormalFloat": each weight of
#: a quantized linear layer is stored in 4 bits (NF4; bitsandbytes' FP4 is the same width).
QUANTIZED_4BIT_BITS_PER_PARAMETER = 4
#: PUBLISHED QLoRA §3, "Double Quantization": blocks of 64 weights share one fp32 absmax constant,
#: 32/64 = 0.5 bits per parameter (bitsandbytes' default, ``bnb_4bit_use_double_quant=False``:
#: the high end of the interval).
QUANTIZED_4BIT_BLOCK_ELEMENTS = 64
QUANTIZED_4BIT_ABSMAX_BYTES = 4
#: PUBLISHED QLoRA §3: double quantization stores those constants as 8-bit floats in blocks of 256,
#: each block with one fp32 constant of its own: 8/64 + 32/(64·256) = 0.127 bits per parameter,
#: "4.127 bits per parameter" in all, the setting QLoRA trains with (the point).
DOUBLE_QUANT_ABSMAX_BYTES = 1
DOUBLE_QUANT_BLOCK_ELEMENTS = 256
#: PUBLISHED bitsandbytes docs, LLM.int8() (Dettmers et al. 2022, arXiv:2208.07339 §3.1, vector-wise
#: quantization; ``Int8Params``: CB and SCB): a quantized linear layer keeps int8 weights, 1 byte per
#: parameter, and one fp32 absmax scale per output row.
INT8_WEIGHT_BYTES = 1
INT8_ROW_SCALE_BYTES = 4
#: PUBLISHED bitsandbytes ``autograd/_functions.py``: ``MatMul4Bit`` dequantizes the whole weight of
#: the layer it runs to the compute dtype (``F.dequantize_4bit``) for the forward and again for the
#: backward, and ``MatMul8bitLt``'s backward does the same (``CB * SCB / 127``); the copy is freed
#: after the matmul, so one layer's weight in 16 bits (the matmul class) is live on top of the
#: quantized model: the largest linear layer is priced.
DEQUANTIZED_LAYERS_COUNT = 1

#: MEASURED tests/calibration/gpu_h200.json, Qwen2-0.5B in bf16, b8 x 1024, LoRA r=8 on every
#: linear (peft 0.21): the forward keeps 19.60 GiB against 15.20 GiB without adapters. PEFT
#: casts each adapted linear's input to the adapters' fp32 dtype before ``lora_A``
#: (``_cast_input_dtype``), and the cast is saved: one fp32 copy per adapted linear of its input
#: (q, k, v each, o, gate and up each, down) = +7.5 GiB there, less the frozen base linears'
#: 16-bit inputs that are no longer saved (2.8 GiB, ``LORA_FROZEN_INPUTS_NOT_SAVED_FRACTION``). Applies to
#: 16-bit weights without autocast; under amp the input is already fp32 (Llama-3.2-1B amp LoRA
#: measured at 0.99x of the estimate without this term).
LORA_INPUT_CAST_COPIES_COUNT = 1
#: PUBLISHED torch.nn.functional.linear's autograd formula (tools/autograd/derivatives.yaml,
#: ``addmm``/``mm``): the input is saved only for the weight gradient (``mat1`` for ``mat2``'s
#: grad), so a linear whose weight is frozen (a LoRA base layer; bitsandbytes' MatMul4Bit keeps
#: only the quantized weight, ``ctx.tensors = (None, B)``) saves no input. What the full-training
#: terms priced only as such inputs is taken out for the layers LoRA leaves frozen
#: (``_frozen_input_elements``); 1 = all of it.
#: MEASURED tests/calibration/gpu_h200.json, Qwen2-0.5B bf16 LoRA r8 on every linear: the forward
#: kept +4.40 GiB with adapters; the fp32 casts add 7.5 GiB and the frozen layers' 16-bit inputs
#: (q/k/v, gate/up, down) that are no longer saved are 2.8 GiB of it: +4.7 GiB.
LORA_FROZEN_INPUTS_NOT_SAVED_FRACTION = 1.0
#: PUBLISHED Korthikanti et al. 2022 §4.1 (the second MLP linear keeps its input, ffn wide):
#: one element per FFN width, the activation's output (GELU), the gate-up product (SwiGLU,
#: GeGLU, gelu_new's final product) or the inner dropout's output; counted inside
#: ``MLP_SAVED_ELEMENTS_PER_FFN`` / ``MLP_INNER_DROPOUT_ELEMENTS_PER_FFN``.
LORA_FROZEN_DOWN_INPUT_ELEMENTS_PER_FFN = 1.0
#: PUBLISHED bitsandbytes PR #1270 (merged 2024-07-16, release 0.43.2, "delete useless buffered
#: activation"): before it, ``MatMul4Bit`` saved its input ``A`` for a backward that never used
#: it, and ``Linear4bit`` casts that input to ``compute_dtype`` first, float32 unless set
#: (bitsandbytes' Linear4bit and transformers' ``BitsAndBytesConfig.bnb_4bit_compute_dtype``
#: default). So older releases kept one fp32 copy of every 4-bit layer's input: the high end of a
#: 4-bit run includes it (copies per quantized linear; the point follows the current release).
QUANTIZED_INPUT_SAVED_FP32_COPIES = 1
#: PUBLISHED PEFT ``LoraLayer.update_layer``: ``nn.Dropout(p=lora_dropout)`` per adapted layer,
#: ``nn.Identity()`` at ``LoraConfig``'s default ``lora_dropout=0.0``; ``lora.Linear.forward``:
#: ``lora_B(lora_A(dropout(x)))``. litgpt ``lora.py``: ``LoRALinear`` and ``LoRAQKVLinear`` apply
#: ``nn.Dropout(p=lora_dropout)`` to the input before ``lora_A`` when ``lora_dropout > 0``.
#: tools/autograd/derivatives.yaml, ``native_dropout``: the backward is
#: ``native_dropout_backward(grad, result1, scale)``, so the dropout saves its mask (``result1``,
#: bool on CUDA: ``MASK_BYTES``) and not its input; ``lora_A`` saves the dropout's output for its
#: weight gradient in place of the layer's input. Per adapted layer, per element of its input,
#: with ``lora_dropout > 0``: the dropout's output (in the adapter input's dtype: the matmul class,
#: under amp the 16-bit cast ``lora_A`` makes of it; with PEFT's fp32 casts it is that fp32 copy,
#: ``LORA_INPUT_CAST_COPIES_COUNT``, already priced) and the mask. The layer's own input is then no
#: longer saved for the adapter (``_frozen_input_elements``). The probability does not change the
#: bytes (the mask and the output are full-size for any p > 0).
LORA_DROPOUT_OUTPUT_COPIES_COUNT = 1
LORA_DROPOUT_MASK_COPIES_COUNT = 1
#: PUBLISHED PEFT ``lora.Linear.forward`` (``result = result + lora_B(lora_A(dropout(x))) *
#: scaling``, then ``result.to(torch_result_dtype)``) and litgpt ``LoRALinear.forward``
#: (``pretrained + (dropout(x) @ lora_A.T @ lora_B.T) * scaling``): with the output head adapted
#: (``lm_head`` in the targets, litgpt's ``lora_head``) its output is built from vocabulary-wide
#: tensors per position. Inside the scaling, the base output, ``lora_B``'s output and the scaled
#: branch are live; inside the addition, the base output, the scaled branch and the sum (type
#: promotion: the wider of the two dtypes). None of them is saved for backward (derivatives.yaml:
#: ``mul.Scalar`` and ``add.Tensor`` save no tensor; ``lora_B``'s matmul saves its rank-wide input),
#: so they are a transient at the head, before the loss makes its copies of the logits: the
#: ``logits`` term holds the larger of the two moments. Copies beyond the base output, at the
#: branch's dtype (the adapters' compute dtype: fp32 with PEFT's casts, the matmul class otherwise)
#: and at the sum's:
LORA_HEAD_TRANSIENT_COPIES: Dict[str, float] = {"branch": 1.0, "sum": 1.0}

#: ASSUMED how much of the cast-weight estimate autocast really keeps (weights used twice are
#: cast once; ops outside the autocast lists are not cast).
AUTOCAST_CACHE_LOW_FRACTION = 0.9
AUTOCAST_CACHE_HIGH_FRACTION = 1.1

#: PUBLISHED ptrblck, pytorch/pytorch#109888 (2023): the CUDA context is "around 400MB if CUDA
#: >= 11.7 is used and lazy module loading enabled"; used when no GPU is given.
DEFAULT_CUDA_CONTEXT_BYTES = 400 * 1024**2
#: ASSUMED context and library workspaces vary with CUDA version, cuDNN/cuBLAS handles and
#: lazy loading; the high end MEASURED: an H200 process with CUDA 13 and torch 2.11 held
#: 717-837 MiB after real steps (tests/calibration/gpu_h200.json; 837 with peft's LoRA
#: kernels loaded), 2.09x the published default above.
CUDA_CONTEXT_LOW_FRACTION = 0.75
CUDA_CONTEXT_HIGH_FRACTION = 2.1

#: MEASURED tests/calibration/gpu_h200.json (baseline_allocated_bytes): cuBLAS takes a 32 MiB
#: workspace per handle and stream through the caching allocator (CUBLAS_WORKSPACE_CONFIG's
#: default on sm_90, :4096:8), one on the first matmul of the main thread and one more on the
#: first backward (autograd's device thread): 33,554,432 then 68,157,952 bytes allocated before
#: any tensor of the run. Charged with the context, outside the tensors.
CUBLAS_WORKSPACE_BYTES = 32 * 1024**2

#: MEASURED tests/calibration/gpu_h200.json (gpt2 b8 x 512 amp, ddp): initialising NCCL and
#: wrapping the model in DistributedDataParallel (one rank) raised the memory held outside the
#: caching allocator from 837 to 1,397 MiB: NCCL's communicator buffers and kernels. More
#: peers and channels take more (NCCL_BUFFSIZE per channel per peer): ASSUMED up to twice that.
NCCL_COMMUNICATOR_BYTES = 560 * 1024**2
NCCL_COMMUNICATOR_HIGH_FRACTION = 2.0

#: MEASURED tests/calibration/gpu_h200.json: over 26 real runs (GPT-2, BERT, DistilBERT, OPT,
#: Qwen2, TinyLlama, Llama-3.2-1B, ViT, ResNet-50; amp/bf16/fp32, AdamW/SGD, checkpointing,
#: inference) max_memory_reserved exceeded the steady max_memory_allocated by 1.5-35 %, median
#: 9.5 %, with the default allocator settings (no expandable_segments); a fraction of the
#: allocated total.
FRAGMENTATION_FRACTION = 0.10
FRAGMENTATION_LOW_FRACTION = 0.015
FRAGMENTATION_HIGH_FRACTION = 0.35

#: ASSUMED with zero_grad() before the forward (set_to_none, the default) gradients and a
#: full set of activations never coexist; the low end subtracts this fraction of the smaller.
GRADIENT_ACTIVATION_OVERLAP_LOW_FRACTION = 1.0
# ============================================================================ end CALIBRATION

#: The breakdown terms, in report order.
TERMS: Tuple[str, ...] = (
    "weights",
    "gradients",
    "optimizer_state",
    "master_weights",
    "autocast_cache",
    "activations",
    "logits",
    "kv_cache",
    "optimizer_step",
    "cuda_context",
    "fragmentation",
)

#: How text (the report, messages) names the terms; JSON keeps the keys above.
TERM_LABELS: Dict[str, str] = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer_state": "optimizer state",
    "master_weights": "master weights",
    "autocast_cache": "autocast cache",
    "activations": "activations",
    "logits": "logits",
    "kv_cache": "KV cache",
    "optimizer_step": "optimizer step",
    "cuda_context": "CUDA context",
    "fragmentation": "fragmentation",
}

#: Terms that are allocations (fragmentation is a fraction of their sum).
ALLOCATED_TERMS = TERMS[:-2]

#: Uncertain terms: memory that measured runs held and no documented mechanism prices. Each is
#: ``bytes = None`` (not estimated) with a bounded high end; it is outside the breakdown and the
#: point, and only widens the interval's high end (``Estimate.uncertain``). Text labels:
UNCERTAIN_LABELS: Dict[str, str] = {
    "fsdp_unexplained": "FSDP, unexplained",
}

_TRANSFORMER_KINDS = ("decoder", "encoder", "encoder-decoder", "vision-transformer")
_ZERO_STAGES = ("zero-1", "zero-2", "zero-3")


@dataclass(frozen=True)
class Term:
    """One breakdown term: ``bytes`` is the point (``None`` = cannot be estimated).

    ``low`` is a lower bound (0 when nothing is known), ``high`` an upper bound or ``None`` when
    unbounded. ``note`` says what the term holds, or why it is unknown.
    """

    bytes: Optional[int]
    low: int
    high: Optional[int]
    note: str = ""

    @property
    def known(self) -> bool:
        return self.bytes is not None


def _exact(value: float, note: str = "") -> Term:
    number = int(math.ceil(value))
    return Term(number, number, number, note)


def _spread(value: float, low_fraction: float, high_fraction: float, note: str = "") -> Term:
    return Term(int(math.ceil(value)), int(value * low_fraction), int(math.ceil(value * high_fraction)), note)


def _unknown(note: str, low: int = 0, high: Optional[int] = None) -> Term:
    return Term(None, low, high, note)


ZERO = Term(0, 0, 0, "does not apply")


@dataclass(frozen=True)
class Estimate:
    """The priced run: per-device terms, the point peak and the interval."""

    run: RunSpec
    gpu: Optional[GpuTarget]
    params: Optional[int]
    trainable_params: Optional[int]
    terms: Mapping[str, Term]
    activation_parts: Mapping[str, int] = field(default_factory=dict)
    notes: Tuple[str, ...] = ()
    #: uncertain terms (``UNCERTAIN_LABELS``): not in the point, in the interval's high end
    uncertain: Mapping[str, Term] = field(default_factory=dict)

    @property
    def breakdown(self) -> Dict[str, Optional[int]]:
        return {name: self.terms[name].bytes for name in TERMS}

    @property
    def unknown_terms(self) -> List[str]:
        return [name for name in TERMS if self.terms[name].bytes is None]

    @property
    def peak_bytes(self) -> int:
        """The sum of the terms; with ``unknown_terms``, a lower bound: known terms plus the
        lower bounds of the unknown ones."""
        return sum(term.bytes if term.bytes is not None else term.low for term in self.terms.values())

    @property
    def peak_is_lower_bound(self) -> bool:
        return bool(self.unknown_terms)

    @property
    def interval_bytes(self) -> Tuple[int, Optional[int]]:
        low = sum(term.low for term in self.terms.values())
        grads = self.terms["gradients"]
        acts = self.terms["activations"].low + self.terms["logits"].low
        low -= int(GRADIENT_ACTIVATION_OVERLAP_LOW_FRACTION * min(grads.low, acts))
        low += sum(term.low for term in self.uncertain.values())
        highs = [term.high for term in self.terms.values()] + [term.high for term in self.uncertain.values()]
        high = None if any(h is None for h in highs) else sum(h for h in highs if h is not None)
        return max(low, 0), high

    @property
    def usable_bytes(self) -> Optional[int]:
        return None if self.gpu is None else self.gpu.usable_bytes

    @property
    def fits(self) -> Optional[bool]:
        """Point peak within the GPU's usable memory; None without a GPU or when unknown."""
        usable = self.usable_bytes
        if usable is None:
            return None
        if self.peak_bytes > usable:
            return False
        return None if self.peak_is_lower_bound else True

    @property
    def fits_interval(self) -> Optional[bool]:
        """Whole interval within usable memory (False when the low end exceeds it)."""
        usable = self.usable_bytes
        if usable is None:
            return None
        low, high = self.interval_bytes
        if low > usable:
            return False
        if high is None:
            return None
        return high <= usable

    @property
    def verdict(self) -> str:
        """``fits`` (whole interval), ``fits-point`` (point only), ``does-not-fit``,
        ``unknown`` (unknown terms), or ``no-gpu``."""
        if self.gpu is None:
            return "no-gpu"
        fits = self.fits
        if fits is None:
            return "unknown"
        if not fits:
            return "does-not-fit"
        return "fits" if self.fits_interval else "fits-point"


# ===================================================================================== shape


def _int(shape: Mapping[str, Any], key: str) -> Optional[int]:
    value = shape.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


@dataclass(frozen=True)
class _Stack:
    """The widths and traits of one transformer stack (what the activation terms are priced in).

    Traits come from the catalogue shape (documented in ``catalogue.py``): ``dropout`` (residual
    and embedding dropout), ``attention_dropout`` (on the attention probabilities) and
    ``attention_output_dropout`` (after the output projection; both default to ``dropout``),
    ``softmax_fp32`` (eager softmax upcast to fp32), ``qkv_fused`` (one q/k/v
    projection), ``qkv_views_pinned`` (GPT-2's sdpa path), ``ffn_dropout`` (dropout inside the
    FFN), ``norm_kind`` (a key of ``NORM_SAVED_BYTES_PER_HIDDEN``) and ``t5_position_bias``.
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    ffn_kind: str
    dropout: bool
    experts_per_token: int
    experts: int
    norms_per_layer: int
    norm: str
    norm_kind: str = "layernorm"
    attention_dropout: bool = False
    attention_output_dropout: bool = False
    softmax_fp32: bool = False
    qkv_fused: bool = False
    qkv_views_pinned: bool = False
    ffn_dropout: bool = False
    t5_position_bias: bool = False

    @property
    def attention_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim


def _stack(shape: Mapping[str, Any], layers_key: str = "layers") -> Optional[_Stack]:
    layers, hidden, heads = _int(shape, layers_key), _int(shape, "hidden"), _int(shape, "heads")
    ffn = _int(shape, "ffn")
    kind = shape.get("ffn_kind")
    if layers is None or hidden is None or not heads or ffn is None or kind not in MLP_SAVED_ELEMENTS_PER_FFN:
        return None
    kv_heads = _int(shape, "kv_heads") or heads
    head_dim = _int(shape, "head_dim") or hidden // heads
    experts = _int(shape, "experts") or 0
    per_token = _int(shape, "experts_per_token") or 1
    dropout = bool(shape.get("dropout", False))
    norm = "rmsnorm" if shape.get("norm") == "rmsnorm" else "layernorm"
    norm_kind = norm
    if norm == "rmsnorm" and shape.get("rmsnorm_upcast") == "variance":
        norm_kind = "rmsnorm_variance_upcast"
    return _Stack(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn=ffn,
        ffn_kind=str(kind),
        dropout=dropout,
        experts_per_token=per_token if experts > 0 else 1,
        experts=experts,
        norms_per_layer=_int(shape, "norms_per_layer") or 2,
        norm=norm,
        norm_kind=norm_kind,
        attention_dropout=bool(shape.get("attention_dropout", dropout)),
        attention_output_dropout=bool(shape.get("attention_output_dropout", dropout)),
        softmax_fp32=bool(shape.get("softmax_fp32", False)),
        qkv_fused=bool(shape.get("qkv_fused", False)),
        qkv_views_pinned=bool(shape.get("qkv_views_pinned", False)),
        ffn_dropout=bool(shape.get("ffn_dropout", False)),
        t5_position_bias=shape.get("relative_kind") == "t5",
    )


# =============================================================================== activations


def _uses_fused_kernel(st: _Stack, precision: str, flash: bool) -> bool:
    """Whether SDPA runs a fused kernel (flash or memory-efficient) for this stack.

    With fp32 and grouped-query attention it does not: flash takes only fp16/bf16 and the
    memory-efficient kernel no GQA, so CUDA runs the math kernel, which keeps K/V expanded and
    the s x s scores like eager attention (tests/calibration/activations_llama-gqa.json
    sdpa/fp32/lm: the eager fit, bssa 4).

    Nor for T5's learned position bias (``t5_position_bias``), an s x s float mask that requires
    grad: MEASURED tests/calibration/gpu_h200.json, T5-small (amp) and Flan-T5-base (bf16) under
    SDPA on an H200 peak at 0.96x / 0.89x of the eager pricing and 1.6x / 1.7x of the fused one.
    (The fake-tensor harness, which re-implements the kernel choice, picked the memory-efficient
    kernel for them: activations_t5.json sdpa; the GPU is taken as the truth.)
    """
    if st.t5_position_bias:
        return False
    return flash and not (precision == "fp32" and st.kv_heads < st.heads)


def _qkv_input_elements(st: _Stack, precision: str) -> float:
    """Copies of the normed input that the q, k, v projections keep (one cast each under amp)."""
    c = ATTENTION_SAVED_ELEMENTS
    if precision == "amp" and not st.qkv_fused:
        return c["qkv_input_autocast_per_hidden"]
    return c["qkv_input_per_hidden"]


def _attention_bytes_per_token(
    st: _Stack, precision: str, fused: bool, keys: int, self_attention: bool = True
) -> float:
    """Bytes one attention block keeps per query token (``keys`` = key length, eager scores).

    For cross-attention (``self_attention=False``) K and V live on the encoder side and are
    priced by ``_cross_kv_bytes_per_encoder_token``; only the query projection's input is here.
    """
    c = ATTENTION_SAVED_ELEMENTS
    dt = ACTIVATION_BYTES[precision]
    inputs = _qkv_input_elements(st, precision) if self_attention else c["qkv_input_per_hidden"]
    total = inputs * st.hidden * dt["matmul"]
    total += c["query_per_attention_width"] * st.attention_width * dt["matmul"]
    total += c["output_projection_input_per_attention_width"] * st.attention_width * dt["matmul"]
    if st.attention_output_dropout:
        total += c["residual_dropout_mask_per_hidden"] * st.hidden * dt["mask"]
    if fused:
        total += c["fused_output_per_attention_width"] * st.attention_width * dt["matmul"]
        total += c["fused_logsumexp_fp32_per_head"] * st.heads * FP32_BYTES
        if self_attention:
            total += c["key_value_fused_per_kv_width"] * st.kv_width * dt["matmul"]
            if st.qkv_views_pinned:
                total += c["pinned_qkv_kv_copies_per_kv_width"] * st.kv_width * dt["matmul"]
    else:
        if self_attention:
            total += c["key_value_eager_per_attention_width"] * st.attention_width * dt["matmul"]
        total += st.heads * keys * _score_bytes_per_element(st, dt)
    return total


def _cross_kv_bytes_per_encoder_token(st: _Stack, precision: str, fused: bool) -> float:
    """K and V of one cross-attention block, per encoder token; under amp also the casts of the
    encoder output that the k and v projections keep (the fp32/bf16 encoder output itself is
    shared by every layer and priced once, as ``encoder_output``)."""
    c = ATTENTION_SAVED_ELEMENTS
    dt = ACTIVATION_BYTES[precision]
    casts = _qkv_input_elements(st, precision) - c["qkv_input_per_hidden"]
    total = casts * st.hidden * dt["matmul"]
    if fused:
        return total + c["key_value_fused_per_kv_width"] * st.kv_width * dt["matmul"]
    return total + c["key_value_eager_per_attention_width"] * st.attention_width * dt["matmul"]


def _score_bytes_per_element(st: _Stack, dt: Mapping[str, int]) -> float:
    c = ATTENTION_SCORE_ELEMENTS
    softmax = FP32_BYTES if st.softmax_fp32 else dt["softmax"]
    total = c["softmax_output"] * softmax
    if st.attention_dropout:
        total += c["dropout_mask"] * dt["mask"] + c["dropout_output"] * dt["matmul"]
    elif softmax != dt["matmul"]:
        total += c["cast_for_values"] * dt["matmul"]
    return total


def _position_bias_bytes(st: _Stack, precision: str, fused: bool, queries: int, keys: int, causal: bool) -> float:
    """Per layer, batch-independent: T5's position bias handed to a fused kernel as a mask."""
    if not (fused and st.t5_position_bias):
        return 0.0
    c = POSITION_BIAS_FUSED_ELEMENTS
    total = c["bias_per_head"] * st.heads * queries * keys * ACTIVATION_BYTES[precision]["matmul"]
    if causal:
        total += c["causal_mask"] * queries * keys * ACTIVATION_BYTES[precision]["mask"]
    return total


def _classes_bytes(elements: Mapping[str, float], dt: Mapping[str, int]) -> float:
    return sum(count * dt[cls] for cls, count in elements.items())


def _mlp_bytes_per_token(st: _Stack, precision: str) -> float:
    dt = ACTIVATION_BYTES[precision]
    gated = st.ffn_kind in ("swiglu", "geglu")
    copies = MLP_INPUT_ELEMENTS_PER_HIDDEN
    if precision == "amp" and gated:  # gate_proj and up_proj each cast the normed input
        copies = MLP_INPUT_AUTOCAST_GATED_ELEMENTS_PER_HIDDEN
    inputs = copies * st.hidden * dt["matmul"]
    if st.experts > 0:  # the router keeps the normed input, each chosen expert a gathered copy
        inputs *= 1 + st.experts_per_token
    per_ffn = _classes_bytes(MLP_SAVED_ELEMENTS_PER_FFN[st.ffn_kind], dt)
    if st.ffn_dropout:
        per_ffn += _classes_bytes(MLP_INNER_DROPOUT_ELEMENTS_PER_FFN[st.ffn_kind], dt)
    ffn = per_ffn * st.ffn * st.experts_per_token
    mask = MLP_DROPOUT_MASK_PER_HIDDEN * st.hidden * dt["mask"] if st.dropout else 0.0
    return inputs + ffn + mask


def _norms_bytes_per_token(st: _Stack, precision: str, norms: int) -> float:
    saved = NORM_SAVED_BYTES_PER_HIDDEN[st.norm_kind][precision] * st.hidden
    return norms * (saved + NORM_STATISTICS_FP32_PER_TOKEN[st.norm] * FP32_BYTES)


def _layer_bytes_per_token(st: _Stack, precision: str, fused: bool, keys: int) -> float:
    """One encoder/decoder self-attention layer (norms + attention + MLP), per token."""
    return (
        _norms_bytes_per_token(st, precision, st.norms_per_layer)
        + _attention_bytes_per_token(st, precision, fused, keys)
        + _mlp_bytes_per_token(st, precision)
    )


def _logits_bytes_per_position(vocab: int, dt: Mapping[str, int], with_loss: bool, upcast: bool = True) -> float:
    """Bytes per LM position: the head output, and with the loss its fp32 copy and log_softmax.

    ``upcast``: the loss calls ``logits.float()`` first (transformers' ForCausalLMLoss, every
    decoder). Encoder-decoders (T5, BART, Whisper) call ``CrossEntropyLoss`` on the head output
    itself: log_softmax runs in the head's dtype and keeps a 16-bit output, and under amp
    autocast casts that output to fp32 for nll_loss, which keeps the copy.
    """
    total = LOGITS_COPIES["head_output"] * vocab * dt["matmul"]
    if with_loss:
        if (upcast or dt["softmax"] == FP32_BYTES) and dt["matmul"] != FP32_BYTES:
            total += LOGITS_COPIES["fp32_upcast"] * vocab * FP32_BYTES
        total += LOGITS_COPIES["log_softmax_fp32"] * vocab * (FP32_BYTES if upcast else dt["matmul"])
    return total


#: Activation parts that are the output head's logits and the loss's copies of them: the
#: ``logits`` term of the breakdown (INTERFACE.md), priced with the activations' interval.
LOGIT_PARTS = frozenset({"logits", "mlm_head_and_logits", "evaluation_loss"})


@dataclass
class _Acts:
    point: float = 0.0
    high_extra: float = 0.0
    #: what the low end leaves out of the point (a kernel that may keep less than the one priced)
    low_less: float = 0.0
    #: the share of ``point`` and ``high_extra`` that is logits (``LOGIT_PARTS``)
    logits: float = 0.0
    logits_high_extra: float = 0.0
    parts: Dict[str, int] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def add(self, name: str, value: float) -> None:
        self.point += value
        if name in LOGIT_PARTS:
            self.logits += value
        self.parts[name] = self.parts.get(name, 0) + int(math.ceil(value))

    def widen(self, value: float, logits: bool) -> None:
        """Raise the high end only (a head or a loss the run may or may not have)."""
        self.high_extra += value
        if logits:
            self.logits_high_extra += value


def lora_casts_inputs(run: RunSpec) -> bool:
    """Whether PEFT keeps fp32 casts of the adapted linears' inputs (``LORA_INPUT_CAST_COPIES_COUNT``):
    LoRA training on 16-bit weights with fp32 adapters (``lora_dtype`` ``fp32``), where adapters then
    add activations rather than only save. Adapters in the model's dtype read the input as it is."""
    return run.lora and run.training and run.precision in ("fp16", "bf16") and run.lora_dtype == "fp32"


def lora_drops_inputs(run: RunSpec) -> bool:
    """Whether the adapters apply dropout to their input (``lora_dropout > 0`` while training):
    each adapted layer then keeps the dropout's output and mask (``LORA_DROPOUT_*``)."""
    return run.lora and run.training and run.lora_dropout > 0


def lora_head_adapted(run: RunSpec) -> bool:
    """Whether a LoRA adapter wraps the output head (``lm_head`` among the targets)."""
    kinds = lora_kinds(run)
    return run.lora and kinds is not None and LORA_HEAD_KIND in kinds


def _lora_adapter_input_bytes_per_element(run: RunSpec, dt: Mapping[str, int]) -> float:
    """Bytes per element of an adapted layer's input that its adapter saves for ``lora_A`` beyond
    the layer's own input: PEFT's fp32 cast (``lora_casts_inputs``), the dropout's output (the
    matmul class; replaced by the fp32 cast with casts) and the dropout's mask."""
    total = LORA_INPUT_CAST_COPIES_COUNT * LORA_ADAPTER_BYTES if lora_casts_inputs(run) else 0.0
    if lora_drops_inputs(run):
        if not total:
            total += LORA_DROPOUT_OUTPUT_COPIES_COUNT * dt["matmul"]
        total += LORA_DROPOUT_MASK_COPIES_COUNT * dt["mask"]
    return total


def _lora_dropout_per_token(st: _Stack, kinds: Optional[FrozenSet[str]], dt: Mapping[str, int],
                            casts: bool) -> float:
    """Bytes per token per layer that the adapters' dropout keeps (``LORA_DROPOUT_*``): per
    adapted projection, over its input width, the mask and (unless PEFT's fp32 cast, priced by
    ``_lora_input_casts_per_token``, is what the dropout reads and returns) the output."""
    experts = max(st.experts_per_token, 1)
    widths = sum(d_in * (experts if mlp else 1)
                 for kind, d_in, _, mlp in _layer_projections(st) if _adapted(kind, kinds))
    per = LORA_DROPOUT_MASK_COPIES_COUNT * dt["mask"]
    if not casts:
        per += LORA_DROPOUT_OUTPUT_COPIES_COUNT * dt["matmul"]
    return widths * per


def _lora_head_bytes_per_position(run: RunSpec, vocab: int, dt: Mapping[str, int]) -> float:
    """Bytes per position live at an adapted output head (``LORA_HEAD_TRANSIENT_COPIES``): the
    base output, the adapter branch (fp32 with PEFT's casts) and the sum at the wider dtype."""
    base = LOGITS_COPIES["head_output"] * dt["matmul"]
    branch = LORA_ADAPTER_BYTES if lora_casts_inputs(run) else dt["matmul"]
    c = LORA_HEAD_TRANSIENT_COPIES
    return vocab * (base + c["branch"] * branch + c["sum"] * max(branch, dt["matmul"]))


def lora_adapter_bytes(run: RunSpec, weight_bytes: int) -> int:
    """Bytes per adapter parameter (and per element of its gradient and optimizer state):
    ``LORA_ADAPTER_BYTES`` (fp32) by default, the weights' own with ``lora_dtype`` ``model``."""
    return weight_bytes if run.lora_dtype == "model" else LORA_ADAPTER_BYTES


def _lora_input_casts_per_token(st: _Stack, kinds: Optional[FrozenSet[str]] = None) -> float:
    """Bytes per token per layer of PEFT's fp32 casts of the adapted linears' inputs (``kinds``:
    the adapted projections, ``None`` = all): one per adapted projection of its input width."""
    experts = max(st.experts_per_token, 1)  # a token passes through this many experts' MLPs
    widths = sum(d_in * (experts if mlp else 1)
                 for kind, d_in, _, mlp in _layer_projections(st) if _adapted(kind, kinds))
    return LORA_INPUT_CAST_COPIES_COUNT * widths * LORA_ADAPTER_BYTES


def _frozen_input_elements(st: _Stack, precision: str, fused: bool,
                           kinds: Optional[FrozenSet[str]], casts: bool) -> Dict[str, float]:
    """Per token per layer, by tensor class: what full training saves only for the weight
    gradient of a linear layer that LoRA leaves frozen (``LORA_FROZEN_INPUTS_NOT_SAVED_FRACTION``).

    A frozen linear (a LoRA base layer, or a bitsandbytes one) needs only its weight for the
    input gradient, so its input is saved only where another op or an adapter needs it:
    the q/k/v input (one cast per projection under amp, one shared tensor otherwise), the
    output projection's input under eager attention (a fused kernel keeps its output, which is
    that input, for its own backward), the MLP input (gate and up: one cast each under amp) and
    the second MLP linear's input (the GELU/SwiGLU product, or the inner dropout's output; a
    ReLU's output stays, its backward needs it). An adapted layer's input stays, unless its
    adapter saves a copy of its own instead (``casts``: PEFT's fp32 cast, priced by
    ``_lora_input_casts_per_token``, or the output of the adapter's dropout, priced by
    ``_lora_dropout_per_token``).
    MoE layers are left as priced.
    """
    def dropped(kind: str) -> bool:
        return casts or not _adapted(kind, kinds)

    c = ATTENTION_SAVED_ELEMENTS
    matmul = 0.0
    if st.qkv_fused:
        matmul += c["qkv_input_per_hidden"] * st.hidden if dropped("qkv") else 0.0
    elif precision == "amp":
        per = c["qkv_input_autocast_per_hidden"] / 3  # one cast per projection
        matmul += per * st.hidden * sum(dropped(kind) for kind in ("q", "k", "v"))
    elif all(dropped(kind) for kind in ("q", "k", "v")):
        matmul += c["qkv_input_per_hidden"] * st.hidden
    if not fused and dropped("o"):
        matmul += c["output_projection_input_per_attention_width"] * st.attention_width
    if st.experts > 0:
        return {"matmul": matmul}
    gated = st.ffn_kind in ("swiglu", "geglu")
    if precision == "amp" and gated:
        per = MLP_INPUT_AUTOCAST_GATED_ELEMENTS_PER_HIDDEN / 2  # gate_proj and up_proj: a cast each
        matmul += per * st.hidden * (dropped("gate") + dropped("up"))
    elif all(dropped(kind) for kind in (("gate", "up") if gated else ("up",))):
        matmul += MLP_INPUT_ELEMENTS_PER_HIDDEN * st.hidden
    if dropped("down") and (st.ffn_kind != "relu" or st.ffn_dropout):
        matmul += LORA_FROZEN_DOWN_INPUT_ELEMENTS_PER_FFN * st.ffn
    return {"matmul": matmul}


def _fused_only_at_the_low_end(st: _Stack, run: RunSpec) -> bool:
    """SDPA asked for on a stack priced as the math kernel the H200 run showed (T5's position
    bias, ``_uses_fused_kernel``): the low end is the fused kernel the fake-tensor harness chose
    (activations_t5.json sdpa), in case another torch picks it."""
    return run.flash and st.t5_position_bias


def _stack_activations(
    acts: _Acts, prefix: str, st: _Stack, run: RunSpec, batch: int, seq: int, causal: bool = False
) -> float:
    """Add one self-attention stack; returns its per-layer bytes (for a recomputed layer)."""
    dt = ACTIVATION_BYTES[run.precision]
    fused = _uses_fused_kernel(st, run.precision, run.flash)
    tokens = batch * seq
    layer = _layer_bytes_per_token(st, run.precision, fused, seq) * tokens
    layer += _position_bias_bytes(st, run.precision, fused, seq, seq, causal)
    old_bnb = 0.0  # what bitsandbytes before 0.43.2 saves on top (the high end)
    if lora_drops_inputs(run):  # each adapter's dropout output and mask (int8: no casts priced)
        casts_priced = lora_casts_inputs(run) and run.quantization != "int8"
        layer += _lora_dropout_per_token(st, lora_kinds(run), dt, casts_priced) * tokens
    if run.lora and run.training and run.quantization != "int8":  # MatMul8bitLt keeps its input
        kinds, casts = lora_kinds(run), lora_casts_inputs(run)
        frozen = _frozen_input_elements(st, run.precision, fused, kinds, casts or lora_drops_inputs(run))
        layer -= LORA_FROZEN_INPUTS_NOT_SAVED_FRACTION * _classes_bytes(frozen, dt) * tokens
        if casts:
            layer += _lora_input_casts_per_token(st, kinds) * tokens
        if run.quantization in ("nf4", "fp4"):
            old_bnb = QUANTIZED_INPUT_SAVED_FP32_COPIES * _lora_input_casts_per_token(st) * tokens
    if run.training and not run.checkpointing:
        acts.add(f"{prefix}layers", layer * st.layers)
        if old_bnb:
            acts.widen(old_bnb * st.layers, logits=False)
            acts.notes.append("the high end includes the fp32 inputs that bitsandbytes before 0.43.2 "
                              "saved for every 4-bit layer")
        if _fused_only_at_the_low_end(st, run):
            kept = (_layer_bytes_per_token(st, run.precision, True, seq) * tokens
                    + _position_bias_bytes(st, run.precision, True, seq, seq, causal))
            acts.low_less += max(0.0, layer - kept) * st.layers
    elif run.training:
        kept = CHECKPOINT_INPUT_ELEMENTS_PER_HIDDEN * st.hidden * dt["stream"] * tokens * st.layers
        acts.add(f"{prefix}checkpointed_layer_inputs", kept)
    else:
        acts.add(f"{prefix}stream", INFERENCE_STREAM_COPIES_COUNT * st.hidden * dt["stream"] * tokens)
    if st.dropout and run.training:
        acts.add(f"{prefix}embedding_dropout_mask", st.hidden * dt["mask"] * tokens)
    return layer


def _transformer_activations(run: RunSpec, shape: Mapping[str, Any], kind: str) -> Tuple[Optional[_Acts], str]:
    dt = ACTIVATION_BYTES[run.precision]
    batch = run.batch_size
    if batch is None:
        return None, "batch size unknown"
    acts = _Acts()
    recompute: List[float] = []  # per-layer working sets; one is live at a time
    if kind == "vision-transformer":
        st = _stack(shape)
        image, patch = run.image_size or _int(shape, "image_size"), _int(shape, "patch_size")
        if st is None or not image or not patch:
            return None, "the catalogue shape lacks the widths or patch size"
        patches = (image // patch) ** 2 + (1 if shape.get("cls_token", True) else 0)
        channels = _int(shape, "channels") or 3
        if run.training and run.precision == "amp":
            # the patch convolution keeps the 16-bit cast of the pixels (the batch itself is the
            # caller's input, not an activation: tests/calibration/activations_vit.json non_layer)
            acts.add("patch_input", batch * channels * image * image * dt["matmul"])
        recompute.append(_stack_activations(acts, "", st, run, batch, patches))
        if run.training and _int(shape, "num_classes") and run.task != "backbone":
            # the classifier reads the class token: without autocast a view that pins the whole
            # normed output, under amp a 16-bit cast of that one token
            # (tests/calibration/activations_vit.json non_layer bsh 8/4/4, amp bh 2)
            tokens = batch * patches
            head_input = st.hidden * dt["matmul"] * (batch if run.precision == "amp" else tokens)
            acts.add("final_norm_and_head_input", _norms_bytes_per_token(st, run.precision, 1) * tokens + head_input)
        text = shape.get("text")
        if isinstance(text, Mapping):
            text_stack, text_seq = _stack(text), _int(text, "max_positions")
            if text_stack is None or text_seq is None:
                return None, "the CLIP text tower shape lacks its widths"
            recompute.append(_stack_activations(acts, "text_", text_stack, run, batch, text_seq, causal=True))
        return _finish(acts, recompute, run), ""
    seq = run.seq_len
    if seq is None:
        return None, "sequence length unknown"
    vocab = _int(shape, "vocab")
    head = run.vocabulary_head  # None: a decoder's LM head, an encoder's head not known
    if kind in ("decoder", "encoder"):
        st = _stack(shape)
        if st is None:
            return None, "the catalogue shape lacks the layer widths"
        recompute.append(_stack_activations(acts, "", st, run, batch, seq, causal=kind == "decoder"))
        final, lm_positions = st, (batch * seq if kind == "decoder" and head is not False else 0)
    else:  # encoder-decoder
        enc, dec = _stack(shape, "encoder_layers"), _stack(shape, "decoder_layers")
        if enc is None or dec is None:
            return None, "the catalogue shape lacks the layer widths"
        enc_seq = seq
        if shape.get("encoder_input") == "audio":
            enc_seq = _int(shape, "encoder_max_positions") or seq
        enc_layer = _stack_activations(acts, "encoder_", enc, run, batch, enc_seq)
        dec_seq = 1 if run.generation else seq  # with a KV cache the decoder runs one position at a time
        dec_tokens = batch * dec_seq
        fused = _uses_fused_kernel(dec, run.precision, run.flash)

        def cross_attention(fused: bool) -> float:
            # per decoder layer: cross-attention (norm + queries) against K and V projected from
            # the encoder output
            queries = (_norms_bytes_per_token(dec, run.precision, 1)
                       + _attention_bytes_per_token(dec, run.precision, fused, enc_seq, self_attention=False))
            return queries * dec_tokens + _cross_kv_bytes_per_encoder_token(dec, run.precision, fused) * batch * enc_seq

        cross = cross_attention(fused)
        dec_layer = _stack_activations(acts, "decoder_", dec, run, batch, dec_seq, causal=True)
        if run.training and not run.checkpointing:
            acts.add("decoder_cross_attention", cross * dec.layers)
            if _fused_only_at_the_low_end(dec, run):
                acts.low_less += max(0.0, cross - cross_attention(True)) * dec.layers
        if _qkv_input_elements(dec, run.precision) == ATTENTION_SAVED_ELEMENTS["qkv_input_per_hidden"]:
            # shared by every decoder layer's k and v projections (under amp each keeps a cast)
            acts.add("encoder_output", dec.hidden * dt["matmul"] * batch * enc_seq)
        recompute.extend([enc_layer, dec_layer + cross])
        final, lm_positions = dec, (dec_tokens if head is not False else 0)
    tokens = batch * seq
    if run.training:
        head_input = final.hidden * dt["matmul"] if kind != "encoder" and run.task != "backbone" else 0.0
        if run.lora and vocab and lm_positions:
            head_input = _lora_lm_head_input_bytes(run, shape, final, dt, head_input)
        acts.add("final_norm_and_head_input", (_norms_bytes_per_token(final, run.precision, 1) + head_input) * tokens)
    if kind == "encoder" and vocab and not run.generation:
        # an encoder's head: none or a classifier (priced, as the calibration's "cls" head) or a
        # masked-LM head over the vocabulary; the task or the reader (from the model class) says
        # which, and when neither does the MLM head widens the high end only
        per = MLM_HEAD_BYTES_PER_HIDDEN[run.precision] * st.hidden + MLM_HEAD_BYTES_PER_TOKEN
        with_loss = run.training or bool(run.eval_loss)
        mlm = (per + _logits_bytes_per_position(vocab, dt, with_loss=with_loss, upcast=False)) * tokens
        if head:
            acts.add("mlm_head_and_logits", mlm)
        elif head is None:
            acts.widen(mlm, logits=True)
            acts.notes.append("encoder head not known: a classification head is priced, the high end "
                              "includes a masked-LM head over the vocabulary (--task masked-lm or seq-cls "
                              "says which; a script's model class says it)")
    if vocab and lm_positions:
        if run.generation:
            point_positions = batch * GENERATION_LOGITS_POSITIONS_COUNT
            per = _logits_bytes_per_position(vocab, dt, with_loss=False)
            acts.add("logits", per * point_positions)
            acts.widen(per * (lm_positions - point_positions), logits=True)
        else:
            upcast = kind == "decoder"
            per = _logits_bytes_per_position(vocab, dt, with_loss=run.training, upcast=upcast)
            if run.training and lora_head_adapted(run):
                at_head = _lora_head_bytes_per_position(run, vocab, dt)
                if at_head > per:
                    acts.notes.append("the adapted output head's vocabulary-wide branch and sum are larger "
                                      "than the loss's copies of the logits")
                per = max(per, at_head)
            acts.add("logits", per * lm_positions)
            if not run.training:
                # an evaluation loop that passes labels also computes the loss under no_grad: its
                # fp32 copies are live at the peak (tests/calibration/gpu_h200.json, GPT-2
                # inference with and without labels); in the point when the run is known to, else
                # in the high end only
                loss = _logits_bytes_per_position(vocab, dt, with_loss=True, upcast=upcast) - per
                if run.eval_loss:
                    acts.add("evaluation_loss", loss * lm_positions)
                else:
                    acts.widen(loss * lm_positions, logits=True)
                    acts.notes.append("the high end includes the loss over the logits (labels passed "
                                      "in evaluation)")
    elif kind in ("decoder", "encoder-decoder") and not vocab:
        return None, "the catalogue shape has no vocabulary size for the LM head"
    return _finish(acts, recompute, run), ""


def _lora_lm_head_input_bytes(run: RunSpec, shape: Mapping[str, Any], final: _Stack,
                              dt: Mapping[str, int], head_input: float) -> float:
    """Bytes per token that a LoRA run keeps for its LM head's input (``head_input`` is what full
    training keeps: the input saved for the head's weight gradient).

    The head is frozen (``LORA_FROZEN_INPUTS_NOT_SAVED_FRACTION``: bitsandbytes leaves it
    unquantized, an ``nn.Linear`` whose weight needs no gradient), so its input is saved only for
    an adapter on it (``lm_head`` among the targets): as it is, or as the adapter's own copies
    (PEFT's fp32 cast, the dropout's output and mask) in its place.
    """
    kept = head_input * (1 - LORA_FROZEN_INPUTS_NOT_SAVED_FRACTION)
    if not lora_head_adapted(run):
        return kept
    width = _int(shape, "embedding_dim") or final.hidden
    own = _lora_adapter_input_bytes_per_element(run, dt) * width
    return own if own else head_input


def _finish(acts: _Acts, recompute: List[float], run: RunSpec) -> _Acts:
    if recompute and (run.checkpointing or not run.training):
        live = CHECKPOINT_RECOMPUTED_LAYERS_COUNT if run.training else INFERENCE_LIVE_LAYER_FRACTION
        acts.add("recomputed_layer" if run.training else "live_layer", live * max(recompute))
    return acts


def _activations(run: RunSpec) -> Tuple[Term, Term, Dict[str, int], List[str]]:
    """The activation and logits terms, the activations' parts, and what widened the high end
    (shown as notes)."""
    model = run.model
    if model is None:
        why = "no model shape (parameter count only)"
        return _unknown(why), _unknown(why), {}, []
    kind, shape = model.kind, model.shape
    if kind == "cnn":
        # a classifier's logits (batch x classes) are inside the measured per-sample maps
        return _cnn_activations(run, shape), Term(0, 0, 0, "inside the CNN's measured feature maps"), {}, []
    if kind not in _TRANSFORMER_KINDS:
        why = f"no activation model for kind {kind!r}"
        return _unknown(why), _unknown(why), {}, []
    acts, why = _transformer_activations(run, shape, kind)
    if acts is None:
        return _unknown(why), _unknown(why), {}, []
    logits = Term(
        int(math.ceil(acts.logits)),
        int(acts.logits * ACTIVATIONS_LOW_FRACTION),
        int(math.ceil((acts.logits + acts.logits_high_extra) * ACTIVATIONS_HIGH_FRACTION)),
        "the output head's logits and the loss's copies of them" if acts.logits or acts.logits_high_extra
        else "no output head over a vocabulary",
    )
    point = acts.point - acts.logits
    high_extra = acts.high_extra - acts.logits_high_extra
    if acts.low_less:
        acts.notes.append("T5's learned position bias under SDPA is priced as the math kernel "
                          "(measured on an H200); the low end as a fused kernel")
    note = "; ".join(["terms measured for Hugging Face models (tests/calibration)"] + (
        ["vision tower not included"] if "vision" in shape else []) + acts.notes)
    term = Term(
        int(math.ceil(point)),
        int((point - acts.low_less) * ACTIVATIONS_LOW_FRACTION),
        int(math.ceil((point + high_extra) * ACTIVATIONS_HIGH_FRACTION)),
        note,
    )
    return term, logits, dict(acts.parts), list(acts.notes)


def _context(run: RunSpec, gpu: Optional[GpuTarget]) -> Term:
    """Memory outside the tensors: the CUDA context (the GPU's, or the default), cuBLAS's
    workspaces (forward, and autograd's backward thread when training) and, in a distributed
    run, NCCL's communicator buffers."""
    context = gpu.context_bytes if gpu is not None else DEFAULT_CUDA_CONTEXT_BYTES
    low, high = int(context * CUDA_CONTEXT_LOW_FRACTION), int(math.ceil(context * CUDA_CONTEXT_HIGH_FRACTION))
    extra = (2 if run.training else 1) * CUBLAS_WORKSPACE_BYTES
    extra_high = extra
    parts = ["from the GPU entry" if gpu is not None else "default (no GPU given)", "plus cuBLAS workspaces"]
    if run.world_size > 1 or run.sharding != "none":
        extra += NCCL_COMMUNICATOR_BYTES
        extra_high += int(NCCL_COMMUNICATOR_BYTES * NCCL_COMMUNICATOR_HIGH_FRACTION)
        parts.append("NCCL's communicator buffers")
    return Term(context + extra, low + extra, high + extra_high, ", ".join(parts))


#: ``fp16`` CNN runs (16-bit weights and input) keep the same bytes as the measured ``bf16`` ones.
_CNN_BYTES_KEY = {"fp32": "fp32", "amp": "amp", "fp16": "bf16", "bf16": "bf16"}


def _cnn_activations(run: RunSpec, shape: Mapping[str, Any]) -> Term:
    per_sample, native = _int(shape, "activation_elements_per_sample"), _int(shape, "image_size")
    if per_sample is None or not native:
        return _unknown("the catalogue has no per-sample activation figure for this CNN")
    if run.batch_size is None:
        return _unknown("batch size unknown")
    if run.training and run.checkpointing:
        return _unknown("checkpointing a CNN: the per-sample figure has no layer structure")
    image = run.image_size or native
    measured = shape.get("activation_bytes_per_element")
    per_element: float = ACTIVATION_BYTES[run.precision]["matmul"]
    if run.precision != "fp32" and isinstance(measured, Mapping):
        per_element = float(measured.get(_CNN_BYTES_KEY[run.precision], per_element))
    value = per_sample * (image / native) ** 2 * run.batch_size * per_element
    note = f"{per_sample:,} elements/sample at {native}px, {per_element:g} B each"
    if not run.training:
        return Term(
            int(math.ceil(value * CNN_INFERENCE_FRACTION)),
            int(value * CNN_INFERENCE_LOW_FRACTION),
            int(math.ceil(value * CNN_INFERENCE_HIGH_FRACTION)),
            note + ", inference working set",
        )
    return _spread(value, CNN_ACTIVATIONS_LOW_FRACTION, CNN_ACTIVATIONS_HIGH_FRACTION, note)


# ================================================================================ parameters


@dataclass(frozen=True)
class _Linear:
    """The linear layers of one kind in the blocks: ``count`` matrices of ``d_in x d_out``."""

    kind: str  # q, k, v, o, qkv (fused), gate, up, down
    d_in: int
    d_out: int
    count: int

    @property
    def elements(self) -> int:
        return self.d_in * self.d_out * self.count


def _stacks(model: Optional[ModelSpec]) -> Optional[List[Tuple[_Stack, int]]]:
    """The transformer stacks of a model and the attention blocks per layer of each (2 in an
    encoder-decoder's decoder: self- and cross-attention); ``None`` without a transformer shape.
    A multimodal decoder's vision tower is not included."""
    if model is None or model.kind not in _TRANSFORMER_KINDS:
        return None
    shape = model.shape
    found: List[Tuple[Optional[_Stack], int]]
    if model.kind == "encoder-decoder":
        found = [(_stack(shape, "encoder_layers"), 1), (_stack(shape, "decoder_layers"), 2)]
    else:
        found = [(_stack(shape), 1)]
        text = shape.get("text")
        if isinstance(text, Mapping):
            found.append((_stack(text), 1))
    if any(st is None for st, _ in found):
        return None
    return [(st, blocks) for st, blocks in found if st is not None]


def _layer_projections(st: _Stack) -> List[Tuple[str, int, int, bool]]:
    """The linear layers of one block of ``st``: kind, ``d_in``, ``d_out``, and whether it is
    the MLP's (one per expert) rather than the attention's (one per attention block)."""
    h, aw, kw, f = st.hidden, st.attention_width, st.kv_width, st.ffn
    attention = [("qkv", h, aw + 2 * kw)] if st.qkv_fused else [("q", h, aw), ("k", h, kw), ("v", h, kw)]
    attention.append(("o", aw, h))
    mlp = ([("gate", h, f)] if st.ffn_kind in ("swiglu", "geglu") else []) + [("up", h, f), ("down", f, h)]
    return [(kind, d_in, d_out, False) for kind, d_in, d_out in attention] + [
        (kind, d_in, d_out, True) for kind, d_in, d_out in mlp]


def _stack_linears(st: _Stack, blocks: int) -> List[_Linear]:
    experts = max(st.experts, 1)
    return [_Linear(kind, d_in, d_out, st.layers * (experts if mlp else blocks))
            for kind, d_in, d_out, mlp in _layer_projections(st)]


def block_linears(model: Optional[ModelSpec]) -> Optional[List[_Linear]]:
    """Every linear layer of the transformer blocks (attention q, k, v, o or a fused qkv, every
    encoder-decoder cross-attention, the MLP of every expert), from the catalogue shape: what LoRA
    adapts by default and what bitsandbytes quantizes. Embeddings, norms and the LM head are not
    among them. ``None`` without a transformer shape."""
    stacks = _stacks(model)
    if stacks is None:
        return None
    return [linear for st, blocks in stacks for linear in _stack_linears(st, blocks)]


def lora_kinds(run: RunSpec) -> Optional[FrozenSet[str]]:
    """The projection kinds ``run.lora_targets`` names (``None`` = every linear layer)."""
    if run.lora_targets is None:
        return None
    kind = run.model.kind if run.model is not None else None
    found: Set[str] = set()
    for name in run.lora_targets:
        found |= lora_target_kinds(name, kind)
    return frozenset(found)


def _adapted(linear_kind: str, kinds: Optional[FrozenSet[str]]) -> bool:
    if kinds is None:
        return True
    if linear_kind == "qkv":  # one fused projection holds q, k and v
        return bool(kinds & {"q", "k", "v"})
    return linear_kind in kinds


def lora_params(run: RunSpec) -> Optional[int]:
    """Adapter parameters of rank ``run.lora_rank`` on the linear layers ``run.lora_targets``
    names, by default every linear layer of the blocks; with ``lm_head`` among the targets also
    the output head's (``r·(d_in + vocab)``).

    PUBLISHED Dettmers et al. 2023, QLoRA (arXiv:2305.14314) §4: adapters on every linear layer
    of the blocks (attention q, k, v, o and the MLP, all experts of an MoE layer), each
    ``r·(d_in + d_out)`` parameters (Hu et al. 2021, LoRA, arXiv:2106.09685 §4.1); a fused q/k/v
    projection (GPT-2's c_attn) is one layer. ``None`` for models without a transformer shape.
    """
    linears = block_linears(run.model)
    if linears is None:
        return None
    kinds = lora_kinds(run)
    blocks = sum(run.lora_rank * (lin.d_in + lin.d_out) * lin.count for lin in linears if _adapted(lin.kind, kinds))
    head = _lm_head_shape(run) if lora_head_adapted(run) else None
    return blocks + (run.lora_rank * (head[0] + head[1]) if head is not None else 0)


def _lm_head_shape(run: RunSpec) -> Optional[Tuple[int, int]]:
    """``(d_in, vocab)`` of a decoder's or encoder-decoder's LM head, ``None`` when the run has
    none (another task, an encoder, no vocabulary in the shape)."""
    model = run.model
    if model is None or model.kind not in ("decoder", "encoder-decoder") or run.vocabulary_head is False:
        return None
    vocab = _int(model.shape, "vocab")
    width = _int(model.shape, "embedding_dim") or _int(model.shape, "hidden")
    return (width, vocab) if vocab and width else None


def _quantized_weights(run: RunSpec, params: int, weight_bytes: int) -> Tuple[Term, float]:
    """The stored weights of a model whose block linears bitsandbytes quantizes, and the bytes of
    the one layer dequantized at a time (``DEQUANTIZED_LAYERS_COUNT``).

    transformers' bitsandbytes integration replaces the ``nn.Linear`` layers of the model except
    the output head (``get_keys_to_not_convert``); embeddings, norms, biases and the LM head stay
    in the compute dtype (the precision's weight bytes). 4-bit: ``QUANTIZED_4BIT_*`` with double
    quantization at the point and the low end, without it at the high end; int8: one byte per
    weight plus an fp32 scale per output row. Without a transformer shape the quantized share is
    unknown: between all parameters quantized and none.
    """
    mode = run.quantization
    if mode in ("nf4", "fp4"):
        block = QUANTIZED_4BIT_BLOCK_ELEMENTS
        bits = QUANTIZED_4BIT_BITS_PER_PARAMETER / 8
        double = bits + DOUBLE_QUANT_ABSMAX_BYTES / block + QUANTIZED_4BIT_ABSMAX_BYTES / (
            block * DOUBLE_QUANT_BLOCK_ELEMENTS)
        single = bits + QUANTIZED_4BIT_ABSMAX_BYTES / block
    else:
        double = single = float(INT8_WEIGHT_BYTES)
    linears = block_linears(run.model)
    if linears is None:
        return _unknown(f"{mode} weights: which layers are quantized is not known (no transformer shape)",
                        low=int(params * double), high=params * weight_bytes), 0.0
    quantized = sum(lin.elements for lin in linears)
    rows = sum(lin.d_out * lin.count for lin in linears)
    rest = max(params - quantized, 0) * weight_bytes
    scales = rows * INT8_ROW_SCALE_BYTES if mode == "int8" else 0
    point = quantized * double + scales + rest
    high = quantized * single + scales + rest
    largest = max(lin.d_in * lin.d_out for lin in linears)
    transient = DEQUANTIZED_LAYERS_COUNT * largest * ACTIVATION_BYTES[run.precision]["matmul"]
    detail = "4.127 bits each with double quantization" if mode != "int8" else "1 byte each, an fp32 scale per row"
    note = (f"{quantized:,} block weights in {mode} ({detail}), {max(params - quantized, 0):,} in "
            f"{run.precision}, one layer dequantized ({largest:,} weights)")
    return Term(int(math.ceil(point)), int(point), int(math.ceil(high)), note), transient


def _dropped_head_params(run: RunSpec) -> int:
    """Parameters of a catalogue decoder's (or encoder-decoder's) LM head that a task without one
    (``seq-cls``, ``token-cls``, ``backbone``) does not have: an untied ``vocab x width`` matrix
    (a tied head is the embedding, which stays). The classifier that replaces it (``hidden x
    labels``) is not counted."""
    model = run.model
    if run.params is not None or model is None or run.vocabulary_head is not False:
        return 0
    if model.kind not in ("decoder", "encoder-decoder") or model.shape.get("tied_embeddings", False):
        return 0
    shape = model.shape
    vocab = _int(shape, "vocab") or 0
    width = _int(shape, "embedding_dim") or _int(shape, "hidden") or 0
    return vocab * width + (vocab if shape.get("lm_head_bias", False) else 0)


def _cast_params(run: RunSpec, params: int) -> Tuple[float, str]:
    """Parameters autocast casts to 16 bits: those used by matmuls (not embeddings, norms)."""
    model = run.model
    if model is None or model.kind not in _TRANSFORMER_KINDS:
        return float(params), "all parameters (no shape to exclude embeddings and norms)"
    shape = model.shape
    hidden, vocab = _int(shape, "hidden") or 0, _int(shape, "vocab") or 0
    excluded = 0
    has_head = model.kind in ("decoder", "encoder-decoder") and run.vocabulary_head is not False
    if vocab and (not has_head or not shape.get("tied_embeddings", False)):
        excluded += vocab * (_int(shape, "embedding_dim") or hidden)  # looked up, not multiplied
    if shape.get("position") == "learned":
        excluded += ((_int(shape, "max_positions") or 0) + (_int(shape, "position_offset") or 0)) * hidden
    layers = (_int(shape, "layers") or 0) + (_int(shape, "encoder_layers") or 0) + (_int(shape, "decoder_layers") or 0)
    norms = layers * (_int(shape, "norms_per_layer") or 2) + (_int(shape, "decoder_layers") or 0) + 2
    excluded += norms * hidden * (2 if shape.get("norm") == "layernorm" else 1)
    why = "16-bit copies of the matmul weights"
    linears = block_linears(model) if run.quantization != "none" else None
    if linears is not None:  # bitsandbytes dequantizes those itself; autocast casts the rest
        excluded += sum(lin.elements for lin in linears)
        why += f" that are not {run.quantization}"
    return float(max(params - excluded, 0)), why


# ====================================================================================== model


def _shard_divisors(run: RunSpec) -> Tuple[int, int, int]:
    """(weights, gradients, optimizer) divisors for the sharding mode."""
    world = max(run.world_size, 1)
    mode = run.sharding
    optimizer = world if mode in ("zero-1", "zero-2", "zero-3", "fsdp") else 1
    gradients = world if mode in ("zero-2", "zero-3", "fsdp") else 1
    weights = world if mode in ("zero-3", "fsdp") else 1
    return weights, gradients, optimizer


def _optimizer_state_elements(run: RunSpec, trainable: int) -> Optional[float]:
    """State elements (not bytes) per device before sharding; None for Adafactor without widths."""
    if run.optimizer == "adafactor":
        width: Optional[int] = run.lora_rank if run.lora else None
        if width is None and run.model is not None:
            width = _int(run.model.shape, "hidden")
        if not width:
            return None
        return trainable * ADAFACTOR_FACTORED_VECTORS_COUNT / width
    return float(trainable * OPTIMIZER_STATE_TENSORS_COUNT[run.optimizer])


def estimate(run: RunSpec, gpu: Optional[GpuTarget] = None) -> Estimate:
    """Price ``run`` on one device of ``gpu`` (or with the default context when ``None``).

    An image model without an image size is priced at its native one; the estimate's ``run``
    then says so (``sources["image_size"] == "default (native 224)"``, and a note).
    """
    run = run.with_native_image_size()
    params = run.total_params
    terms: Dict[str, Term] = {}
    notes: List[str] = []
    dropped = _dropped_head_params(run)
    if params is not None and dropped:
        params -= dropped
        notes.append(f"task {run.task or 'without an LM head'}: no LM head over the vocabulary, "
                     f"{dropped:,} parameters fewer than {run.display_name}'s")
    w_div, g_div, o_div = _shard_divisors(run)
    weight_bytes = WEIGHT_BYTES_BY_PRECISION[run.precision]
    adapters: Optional[int] = 0
    if run.lora and run.training:
        adapters = run.trainable_params if run.trainable_params is not None else lora_params(run)
    master = run.training and run.precision in ("fp16", "bf16") and run.sharding in _ZERO_STAGES and not run.lora

    # trainable parameters and the dtype of their gradients/states
    trainable: Optional[int]
    if not run.training:
        trainable = 0
    elif run.lora:
        trainable = adapters
    elif run.trainable_params is not None:
        trainable = run.trainable_params if params is None else min(run.trainable_params, params)
    else:
        trainable = params
    adapter_bytes = lora_adapter_bytes(run, weight_bytes)
    train_bytes = adapter_bytes if run.lora else weight_bytes
    state_bytes = FP32_BYTES if master else train_bytes
    if run.trainable_params is not None and run.training and not run.lora:
        notes.append(f"{trainable:,} trainable parameters: gradients and optimizer state for them only; "
                     "activations priced as if every layer passes gradients back")

    # weights
    if params is None:
        terms["weights"] = _unknown("parameter count unknown")
    else:
        transient = 0.0
        if run.quantization != "none":
            stored, transient = _quantized_weights(run, params, weight_bytes)
        else:
            stored = _exact(params * weight_bytes)
        extra = (adapters or 0) * adapter_bytes
        values = [None if stored.bytes is None else stored.bytes + extra, stored.low + extra,
                  None if stored.high is None else stored.high + extra]
        note = stored.note
        if w_div > 1:
            layers = _layer_count(run)

            def gathered(base: float) -> float:
                if not layers:  # the gathered working set is not known: the shard alone
                    return base / w_div
                return min(float(base), base / w_div + FSDP_GATHERED_LAYERS_COUNT * base / layers)

            def gathered_high(base: float) -> float:
                if layers:
                    return gathered(base)
                if run.sharding == "zero-3":  # DeepSpeed bounds the parameters it gathers at once
                    return min(float(base), base / w_div + ZERO3_MAX_LIVE_PARAMETERS_COUNT * weight_bytes)
                return float(base)  # a model FSDP wraps as one unit is gathered whole

            values = [None if values[0] is None else gathered(values[0]), values[1] / w_div,
                      None if values[2] is None else gathered_high(values[2])]
            shard = (f"1/{w_div} shard + gathered layers" if layers else
                     f"1/{w_div} shard; the layers gathered for compute are not known (no layer count): "
                     "the high end allows " + ("DeepSpeed's stage3_max_live_parameters"
                                               if run.sharding == "zero-3" else "the whole model"))
            note = "; ".join(n for n in (shard, note) if n)
        point, low, high = (None if v is None else v + transient for v in values)
        if point is None or high is None:
            terms["weights"] = Term(None, int(low or 0), None if high is None else int(math.ceil(high)), note)
        elif w_div > 1 or stored.low != stored.high:
            terms["weights"] = Term(int(math.ceil(point)), int(low or 0), int(math.ceil(high)), note)
        else:
            terms["weights"] = _exact(point, note)
        if run.lora and adapters is None:
            terms["weights"] = _unknown("LoRA adapter size unknown (no transformer shape)",
                                        low=int(values[1] or 0) + int(transient))

    # gradients, optimizer state, master weights, optimizer step temporaries
    if not run.training:
        terms["gradients"] = terms["optimizer_state"] = terms["master_weights"] = ZERO
        terms["optimizer_step"] = ZERO
    elif trainable is None:
        full = None if params is None else params * FP32_BYTES
        why = "parameter count unknown" if params is None else "LoRA adapter size unknown (no transformer shape)"
        terms["gradients"] = _unknown(why, high=full)
        state_high = None if full is None else 2 * full
        terms["optimizer_state"] = ZERO if run.offload_optimizer else _unknown(why, high=state_high)
        terms["master_weights"] = ZERO if not master or run.offload_optimizer else _unknown(why, high=full)
        terms["optimizer_step"] = ZERO if run.offload_optimizer else _unknown(why)
    else:
        grads = trainable * train_bytes / g_div
        if run.sharding == "ddp":
            grads *= 1 + DDP_BUCKET_GRADIENT_COPIES_COUNT
        if run.sharding == "fsdp" and params is not None and trainable < params:
            # frozen and trainable parameters share flat parameters: a gradient for all of them
            flat = (params + (adapters or 0)) * weight_bytes * FSDP_FLAT_GRADIENT_FRACTION / g_div
            terms["gradients"] = Term(int(math.ceil(flat)), int(grads), int(math.ceil(flat)),
                                      "FSDP flat parameters mix frozen and trainable ones: a gradient "
                                      "shard for all of them (the low end: trainable ones only)")
        else:
            terms["gradients"] = _exact(grads)
        elements = _optimizer_state_elements(run, trainable)
        if run.offload_optimizer:
            terms["optimizer_state"] = Term(0, 0, 0, "offloaded to host memory")
            terms["master_weights"] = Term(0, 0, 0, "offloaded to host memory") if master else ZERO
            terms["optimizer_step"] = Term(0, 0, 0, "runs on the host")
            if elements is not None:
                host = elements * state_bytes + (trainable * MASTER_WEIGHT_BYTES if master else 0)
                notes.append(f"optimizer offload: {host / 1024**3:.2f} GiB of host memory per process")
        else:
            if elements is None:
                terms["optimizer_state"] = _unknown("Adafactor without the model width", high=trainable * FP32_BYTES)
            elif run.optimizer == "adamw-8bit":
                per_state = ADAMW_8BIT_STATE_BYTES + ADAMW_8BIT_ABSMAX_BYTES / ADAMW_8BIT_BLOCK_ELEMENTS
                terms["optimizer_state"] = _exact(elements * per_state / o_div)
            else:
                terms["optimizer_state"] = _exact(elements * state_bytes / o_div)
            terms["master_weights"] = _exact(trainable * MASTER_WEIGHT_BYTES / o_div) if master else ZERO
            copies = 0 if run.fused_optimizer else OPTIMIZER_STEP_TEMPORARY_COPIES.get(run.optimizer, 0)
            # one parameter-sized temporary per copy (the sqrt of the second moment)
            terms["optimizer_step"] = _exact(copies * trainable * state_bytes / o_div) if copies else ZERO

    # autocast cache
    if run.precision != "amp":
        terms["autocast_cache"] = ZERO
    elif params is None:
        terms["autocast_cache"] = _unknown("parameter count unknown")
    else:
        cast, why = _cast_params(run, params)
        terms["autocast_cache"] = _spread(cast * HALF_BYTES, AUTOCAST_CACHE_LOW_FRACTION,
                                          AUTOCAST_CACHE_HIGH_FRACTION, why)

    # activations
    activations, logits, parts, widened = _activations(run)
    terms["activations"] = activations
    terms["logits"] = logits
    notes.extend(f"activations: {why}" for why in widened)

    # the optimizer step allocates after activations and autocast copies are freed
    step = terms["optimizer_step"]
    if step.bytes:
        live = [terms["activations"], terms["logits"], terms["autocast_cache"]]
        if any(t.bytes is None for t in live):
            terms["optimizer_step"] = _unknown("depends on the unknown activations", high=step.bytes)
        else:
            extra = max(0, step.bytes - sum(t.bytes or 0 for t in live))
            low = max(0, step.bytes - sum(t.high or 0 for t in live))
            high = max(0, step.bytes - sum(t.low for t in live))
            note = "foreach temporaries " + ("beyond backward's peak" if extra else "fit in backward's peak")
            terms["optimizer_step"] = Term(extra, low, high, note)

    # KV cache
    terms["kv_cache"] = _kv_cache(run)

    # CUDA context
    terms["cuda_context"] = _context(run, gpu)

    # memory that FSDP runs held beyond every priced term: the high end only
    uncertain: Dict[str, Term] = {}
    unexplained = _fsdp_unexplained(run, params, trainable, terms)
    if unexplained is not None:
        uncertain["fsdp_unexplained"] = unexplained

    # fragmentation
    allocated = [terms[name] for name in ALLOCATED_TERMS]
    frag_low = int(FRAGMENTATION_LOW_FRACTION * sum(t.low for t in allocated))
    highs = [t.high for t in allocated] + [t.high for t in uncertain.values()]
    frag_high: Optional[int] = None
    if all(h is not None for h in highs):
        frag_high = int(math.ceil(FRAGMENTATION_HIGH_FRACTION * sum(h or 0 for h in highs)))
    if any(t.bytes is None for t in allocated):
        terms["fragmentation"] = _unknown("a fraction of an allocated total that is not known", frag_low, frag_high)
    else:
        point = int(math.ceil(FRAGMENTATION_FRACTION * sum(t.bytes or 0 for t in allocated)))
        note = f"{FRAGMENTATION_FRACTION:.0%} of the allocated total"
        terms["fragmentation"] = Term(point, frag_low, frag_high, note)

    notes.extend(_run_notes(run))
    ordered = {name: terms[name] for name in TERMS}
    return Estimate(run, gpu, params, trainable, ordered, parts, tuple(notes), uncertain)


def _fsdp_unexplained(run: RunSpec, params: Optional[int], trainable: Optional[int],
                      terms: Mapping[str, Term]) -> Optional[Term]:
    """The uncertain term ``fsdp_unexplained`` of a training run under FSDP, ``None`` otherwise:
    not estimated (``bytes = None``), from 0 to ``FSDP_UNEXPLAINED_WEIGHT_COPIES_COUNT`` copies of
    the whole model's weights in the compute dtype when part of the model is frozen, else to
    ``FSDP_UNEXPLAINED_STATES_HIGH_FRACTION`` of the sharded model states as priced (unbounded
    when one of them is)."""
    if run.sharding != "fsdp" or not run.training:
        return None
    if run.lora or (params is not None and trainable is not None and trainable < params):
        compute_bytes = FP32_BYTES if run.precision == "fp32" else HALF_BYTES
        copies = FSDP_UNEXPLAINED_WEIGHT_COPIES_COUNT
        high: Optional[int] = None if params is None else copies * params * compute_bytes
        bound = (f"up to {'one' if copies == 1 else copies} unsharded cop{'y' if copies == 1 else 'ies'} "
                 f"of the weights in {'fp32' if compute_bytes == FP32_BYTES else '16 bits'}")
    else:
        states = [terms[name] for name in ("weights", "gradients", "optimizer_state", "master_weights")]
        points = [t.bytes if t.bytes is not None else t.high for t in states]
        high = (None if any(p is None for p in points)
                else int(math.ceil(FSDP_UNEXPLAINED_STATES_HIGH_FRACTION * sum(p or 0 for p in points))))
        bound = f"up to {FSDP_UNEXPLAINED_STATES_HIGH_FRACTION:g}x the sharded model states"
    note = (f"{bound}: FSDP runs were measured above the priced terms by more than any documented "
            "mechanism explains; not in the point")
    return Term(None, 0, high, note)


def _layer_count(run: RunSpec) -> Optional[int]:
    if run.model is None:
        return None
    shape = run.model.shape
    total = (_int(shape, "layers") or 0) + (_int(shape, "encoder_layers") or 0) + (_int(shape, "decoder_layers") or 0)
    return total or None


def kv_cache_bytes(
    layers: int, batch: int, kv_heads: int, head_dim: int, positions: int, bytes_per_element: int
) -> int:
    """K and V for every layer: ``2 · layers · batch · kv_heads · head_dim · positions · bytes``."""
    return 2 * layers * batch * kv_heads * head_dim * positions * bytes_per_element


def _kv_cache(run: RunSpec) -> Term:
    if not run.generation:
        return ZERO
    model = run.model
    if model is None:
        return _unknown("no model shape (parameter count only)")
    if model.kind not in ("decoder", "encoder-decoder"):
        return ZERO
    shape = model.shape
    element = ACTIVATION_BYTES[run.precision]["matmul"]
    st = _stack(shape, "layers" if model.kind == "decoder" else "decoder_layers")
    if st is None:
        return _unknown("the catalogue shape lacks the layer widths")
    if run.batch_size is None:
        return _unknown("batch size unknown")
    prompt = run.seq_len
    if prompt is None:
        return _unknown("sequence length unknown")
    if model.kind == "decoder":
        fixed, grows = prompt, run.max_new_tokens
    else:  # decoder self-attention grows; cross-attention K/V cover the encoder sequence
        enc = prompt
        if shape.get("encoder_input") == "audio":
            enc = _int(shape, "encoder_max_positions") or prompt
        fixed, grows = enc, run.max_new_tokens
    low = kv_cache_bytes(st.layers, run.batch_size, st.kv_heads, st.head_dim, fixed, element)
    if grows is None:
        return _unknown("max_new_tokens unknown", low=low)
    value = kv_cache_bytes(st.layers, run.batch_size, st.kv_heads, st.head_dim, fixed + grows, element)
    high = value + KV_CACHE_GROWTH_EXTRA_LAYERS_COUNT * value // st.layers
    note = f"{st.kv_heads} KV heads x {st.head_dim} x {fixed + grows} positions"
    return Term(value, value, high, note)


def _run_notes(run: RunSpec) -> List[str]:
    notes: List[str] = []
    model = run.model
    if model is None:
        return notes
    limit = _int(model.shape, "max_positions")
    if run.seq_len is not None and limit is not None and model.kind in ("decoder", "encoder", "encoder-decoder"):
        total = run.seq_len + ((run.max_new_tokens or 0) if run.generation else 0)
        if total > limit:
            notes.append(f"sequence length {total} exceeds {model.key}'s {limit} positions")
    if run.image_size_defaulted:
        notes.append(f"image size not given: priced at {model.key}'s native {run.image_size} px")
    if run.image_size is not None and model.kind not in ("cnn", "vision-transformer"):
        notes.append(f"image size ignored: {model.key} is a {model.kind}")
    if run.flash and model.kind == "cnn":
        notes.append("flash attention does not apply to a CNN")
    if run.lora and model.kind not in _TRANSFORMER_KINDS:
        notes.append("LoRA is priced for transformer blocks only")
    if run.sharding in ("none", "ddp") and run.world_size > 1:
        notes.append(f"{run.sharding}: each of the {run.world_size} devices holds a full replica")
    return notes
