"""Shared machinery for the calibration measurements (imports torch; never imported by the test run).

What the harness measures
    The bytes that autograd keeps for the backward pass after one training forward *including the
    loss*, captured with ``torch.autograd.graph.saved_tensors_hooks`` and deduplicated by storage
    (two saved views of one storage count once, and a saved view counts its whole storage).

How every saved storage is classified
    ``state``          a parameter or buffer storage (a linear saves its weight): the weights term.
    ``state_derived``  computed only from parameters/buffers: under autocast the fp16 copy of each
                       weight (the autocast cache), transposed/cast weight copies. Reported as
                       ``weight_copy_bytes``; this is the contract's ``autocast_cache``, not activations.
    ``input``          one of the batch tensors handed to the model (input_ids, labels, pixel_values).
                       Reported as ``input_bytes``; not part of ``activation_bytes``.
    ``activation``     everything else, including tensors made from inputs only (position ids,
                       masks, shifted labels) and factory tensors (causal masks). ``activation_bytes``.
    A tensor is state-derived when every tensor argument of the op that produced it is state or
    state-derived (tracked by a ``TorchDispatchMode`` under the fake mode).

How CUDA behaviour is obtained on a CPU-only build
    Tensors are ``FakeTensorMode`` tensors on device ``cuda:0`` (they allocate nothing), so every op
    takes its CUDA code path as far as device checks go:
    * dropout takes the fused ``native_dropout`` path (``is_cuda()``), which saves a 1-byte bool mask;
    * ``amp`` runs under the real CUDA autocast dispatch key (``AutocastCUDA``), enabled through the
      low-level ``torch.set_autocast_enabled("cuda", True)`` because ``torch.autocast("cuda")``
      refuses when no CUDA device exists; so the CUDA op lists apply (softmax, log_softmax,
      layer_norm, pow, cross_entropy in fp32; linear, matmul, conv, sdpa in fp16);
    * a CPU-only build has no CUDA device guard, which autograd needs to record streams; a 10-line
      C++ shim (``_GUARD_SRC``, compiled with the system C++ compiler against torch's headers)
      registers c10's ``NoOpDeviceGuardImpl<CUDA>``, the same guard torch itself installs in
      FakeTensorMode for CUDA builds without a device (``torch._C._ensureCUDADeviceGuardSet``);
    * ``scaled_dot_product_attention``: the kernel choice is device-query code that a CPU build
      lacks (it falls back to the math kernel), so ``cuda_sdpa`` below re-implements the choice of
      torch 2.13's ``sdp_utils.cpp`` for an sm80+ GPU (flash: fp16/bf16, no explicit mask, head dim
      <= 256, grouped-query allowed; else memory-efficient: no grouped-query; else math) and calls
      the chosen aten op, whose fake kernel gives the CUDA saved-tensor shapes (logsumexp etc.).
"""
from __future__ import annotations

import contextlib
import ctypes
import datetime
import json
import os
import pathlib
import platform
import subprocess
import tempfile
from typing import Any, Callable, Iterator

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

HERE = pathlib.Path(__file__).resolve().parent

_GUARD_SRC = r"""
#include <c10/core/impl/DeviceGuardImplInterface.h>
namespace {
static c10::impl::NoOpDeviceGuardImpl<c10::DeviceType::CUDA> g_impl;
struct Register {
  Register() {
    auto& slot = c10::impl::device_guard_impl_registry[static_cast<size_t>(c10::DeviceType::CUDA)];
    if (slot.load() == nullptr) slot.store(&g_impl);
  }
};
static Register reg;
}
"""

_GUARD_LIB: Any = None


def install_fake_cuda() -> str:
    """Make autograd over fake CUDA tensors possible; return how ("cuda-build" or "cpu-build+shim")."""
    global _GUARD_LIB
    if torch.cuda.is_available() or torch.version.cuda is not None:
        torch._C._ensureCUDADeviceGuardSet()
        return "cuda-build"
    if _GUARD_LIB is None:
        root = pathlib.Path(torch.__file__).resolve().parent
        build = pathlib.Path(tempfile.mkdtemp(prefix="tp-calib-guard-"))
        src, lib = build / "guard.cpp", build / "guard.so"
        src.write_text(_GUARD_SRC)
        cxx = os.environ.get("CXX", "c++")
        subprocess.run(
            [cxx, "-O1", "-shared", "-fPIC", "-std=c++17", f"-I{root / 'include'}", str(src),
             "-o", str(lib), f"-L{root / 'lib'}", "-lc10", f"-Wl,-rpath,{root / 'lib'}"],
            check=True,
        )
        _GUARD_LIB = ctypes.CDLL(str(lib))
    return "cpu-build+shim"


def versions() -> dict[str, str]:
    out = {"torch": torch.__version__, "python": platform.python_version()}
    try:
        import transformers

        out["transformers"] = transformers.__version__
    except ImportError:  # pragma: no cover - the ResNet script needs only torch
        pass
    return out


def today() -> str:
    return datetime.date.today().isoformat()


# --------------------------------------------------------------------------------------------
# autocast on fake CUDA


@contextlib.contextmanager
def cuda_autocast(dtype: torch.dtype | None) -> Iterator[None]:
    """CUDA autocast through the dispatch key itself (torch.autocast('cuda') refuses without a GPU)."""
    if dtype is None:
        yield
        return
    prev_enabled = torch.is_autocast_enabled("cuda")
    prev_dtype = torch.get_autocast_dtype("cuda")
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", dtype)
    torch.autocast_increment_nesting()
    try:
        yield
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled("cuda", prev_enabled)
        torch.set_autocast_dtype("cuda", prev_dtype)


@contextlib.contextmanager
def cpu_autocast(dtype: torch.dtype | None) -> Iterator[None]:
    if dtype is None:
        yield
        return
    with torch.autocast("cpu", dtype=dtype):
        yield


# --------------------------------------------------------------------------------------------
# scaled_dot_product_attention as CUDA (sm80+, torch 2.13) dispatches it

_REAL_SDPA = torch.nn.functional.scaled_dot_product_attention
SDPA_CHOICES: list[str] = []


def _sdpa_backend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: Any,
                  is_causal: bool) -> str:
    gqa = q.shape[-3] != k.shape[-3]
    same_dims = q.shape[-1] == k.shape[-1] == v.shape[-1]
    square = q.shape[-2] == k.shape[-2]
    if (q.dtype in (torch.float16, torch.bfloat16) and attn_mask is None and same_dims
            and q.shape[-1] <= 256 and (square or not is_causal)):
        return "flash"
    if q.dtype in (torch.float16, torch.bfloat16, torch.float32) and not gqa:
        return "efficient"
    return "math"


def cuda_sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Any = None,
              dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
              enable_gqa: bool = False) -> torch.Tensor:
    if torch.is_autocast_enabled("cuda"):
        # sdpa is on CUDA autocast's lower-precision list: every floating argument is cast.
        dt = torch.get_autocast_dtype("cuda")
        query, key, value = (t.to(dt) if t.is_floating_point() else t for t in (query, key, value))
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.to(dt)
        torch.set_autocast_enabled("cuda", False)
        try:
            return cuda_sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        finally:
            torch.set_autocast_enabled("cuda", True)
    if query.device.type != "cuda":
        return _REAL_SDPA(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                          is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    backend = _sdpa_backend(query, key, value, attn_mask, is_causal)
    SDPA_CHOICES.append(backend)
    aten = torch.ops.aten
    if backend == "flash":
        return aten._scaled_dot_product_flash_attention(
            query, key, value, dropout_p, is_causal, False, scale=scale)[0]
    if backend == "efficient":
        bias = attn_mask
        if bias is not None:
            if bias.dtype == torch.bool:  # sdp::convert_boolean_attn_mask
                bias = torch.where(bias, 0.0, float("-inf")).to(query.dtype)
            shape = (query.shape[0], query.shape[-3], query.shape[-2], key.shape[-2])
            if bias.shape[-1] % 16:  # sdp::pad_bias (mem-efficient alignment 16)
                pad = 16 - bias.shape[-1] % 16
                bias = torch.nn.functional.pad(bias, (0, pad))[..., : key.shape[-2]]
            bias = bias.expand(shape)
        need_lse = query.requires_grad or key.requires_grad or value.requires_grad
        return aten._scaled_dot_product_efficient_attention(
            query, key, value, bias, need_lse, dropout_p, is_causal, scale=scale)[0]
    return _REAL_SDPA(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                      is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


@contextlib.contextmanager
def patched_sdpa() -> Iterator[None]:
    torch.nn.functional.scaled_dot_product_attention = cuda_sdpa
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = _REAL_SDPA


# --------------------------------------------------------------------------------------------
# saved-tensor capture


def storage_key(t: torch.Tensor) -> int:
    return int(t.untyped_storage()._cdata)


class _StateTracker(TorchDispatchMode):
    """Marks outputs computed only from parameters/buffers (autocast weight copies, weight.t())."""

    def __init__(self, state: set[int]) -> None:
        super().__init__()
        self.state = state
        self.derived: set[int] = set()
        self.keep: list[torch.Tensor] = []  # keeps storages alive so that ids are never reused

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        if tensors and all(storage_key(a) in self.state or storage_key(a) in self.derived
                           for a in tensors):
            for o in tree_flatten(out)[0]:
                if isinstance(o, torch.Tensor) and storage_key(o) not in self.state:
                    self.derived.add(storage_key(o))
                    self.keep.append(o)
        return out


class Capture:
    """Result of one measured forward."""

    def __init__(self) -> None:
        self.rows: dict[int, dict[str, Any]] = {}
        self.keep: list[torch.Tensor] = []

    def total(self, category: str) -> int:
        return sum(r["bytes"] for r in self.rows.values() if r["category"] == category)

    def summary(self) -> dict[str, int]:
        return {
            "activation_bytes": self.total("activation"),
            "input_bytes": self.total("input"),
            "weight_copy_bytes": self.total("state_derived"),
            "saved_storages": sum(1 for r in self.rows.values() if r["category"] == "activation"),
        }

    def by_dtype(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows.values():
            if r["category"] == "activation":
                out[r["dtype"]] = out.get(r["dtype"], 0) + r["bytes"]
        return dict(sorted(out.items()))


@contextlib.contextmanager
def fake_mode(device: str) -> Iterator[FakeTensorMode]:
    if device == "cuda":
        install_fake_cuda()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode, torch.device(device):
        yield mode


def measure(model: torch.nn.Module, inputs: dict[str, torch.Tensor],
            forward: Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor],
            amp_dtype: torch.dtype | None, device: str) -> Capture:
    """Run ``forward`` (which must return the loss) once in training mode and classify saved storages.

    Must be called inside ``fake_mode(device)``.
    """
    state = {storage_key(p) for p in model.parameters()} | {storage_key(b) for b in model.buffers()}
    input_keys = {storage_key(t) for t in inputs.values() if isinstance(t, torch.Tensor)}
    tracker = _StateTracker(state)
    cap = Capture()

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = storage_key(t)
        if key not in cap.rows:
            if key in state:
                cat = "state"
            elif key in tracker.derived:
                cat = "state_derived"
            elif key in input_keys:
                cat = "input"
            else:
                cat = "activation"
            cap.rows[key] = {"category": cat, "bytes": int(t.untyped_storage().nbytes()),
                             "dtype": str(t.dtype).replace("torch.", ""), "shape": tuple(t.shape),
                             "module": stack[-1] if stack else ""}
            cap.keep.append(t)
        return t

    # attribute each saved storage to the innermost module running when it was first saved
    names = {id(m): n for n, m in model.named_modules()}
    stack: list[str] = []

    def pre(module: torch.nn.Module, args: Any) -> None:
        stack.append(names.get(id(module), "?"))

    def post(module: torch.nn.Module, args: Any, out: Any) -> None:
        stack.pop()

    model.train()
    autocast = cuda_autocast if device == "cuda" else cpu_autocast
    h1 = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = torch.nn.modules.module.register_module_forward_hook(post)
    try:
        with tracker, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast(amp_dtype):
            loss = forward(model, inputs)
    finally:
        h1.remove()
        h2.remove()
    assert loss.requires_grad and loss.dim() == 0, "forward must return the scalar training loss"
    cap.keep.append(loss)
    return cap


# --------------------------------------------------------------------------------------------
# fitting


def lstsq_fit(rows: list[dict[str, float]], features: list[str], target: str) -> dict[str, Any]:
    """Exact least squares (float64) of ``target`` on ``features``; returns coefficients and residuals."""
    a = torch.tensor([[float(r[f]) for f in features] for r in rows], dtype=torch.float64)
    y = torch.tensor([float(r[target]) for r in rows], dtype=torch.float64)
    sol = torch.linalg.lstsq(a, y.unsqueeze(1), driver="gelsd").solution.squeeze(1)
    pred = a @ sol
    resid = (y - pred).abs()
    return {
        "coefficients": {f: float(c) for f, c in zip(features, sol.tolist())},
        "max_abs_residual_bytes": float(resid.max()),
        "max_rel_residual": float((resid / y.clamp(min=1)).max()),
    }


def write_fixture(name: str, payload: dict[str, Any]) -> pathlib.Path:
    path = HERE / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    return path
