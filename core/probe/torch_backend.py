"""GPUs (CUDA, ROCm, Apple MPS) and the CPU through PyTorch, when it is installed (requirements-probe.txt).

What a device can run is decided by plain functions of what it reports
(`runnable`, `shape_refusal`), so the logic is tested without a GPU:

- fp32 with TF32 switched off, tf32 with it on (CUDA from compute capability
  8.0, Ampere), bf16 and fp16 everywhere PyTorch offers them;
- fp8 (e4m3 inputs, bf16 output) through `torch._scaled_mm` on CUDA from
  compute capability 8.9 (Ada, Hopper, Blackwell) and on ROCm parts whose
  PyTorch build exposes it; it needs every dimension a multiple of 16, so a
  decode product with m < 16 is refused, not padded;
- int8 (int32 output) through `torch._int_mm` on CUDA, which needs m > 16
  and k, n multiples of 8.

Bandwidth: a device-to-device copy (`dst.copy_(src)`) and a one-kernel triad
(`torch.add(b, c, alpha=s, out=a)`). Identity: `torch.cuda.get_device_properties`
(name, memory, L2 cache), and driver, clocks and power limit from NVML
(`pynvml`, package nvidia-ml-py) where it is installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from core.probe.document import Device, Skipped

ELEMENT = 4  # float32 buffers for the streams


def available() -> bool:
    """Whether PyTorch can be imported here."""
    return importlib.util.find_spec("torch") is not None


def runnable(kind: str, capability: tuple[int, int] | None, *, scaled_mm: bool, int_mm: bool) -> tuple[list[str], list[Skipped]]:
    """The precisions a device runs (kind: cuda, rocm, mps, cpu; capability: CUDA's (major, minor)), and why not the rest."""
    run, skip = ["fp32"], []
    cap = capability or (0, 0)
    if kind == "cuda" and cap >= (8, 0):
        run.append("tf32")
    else:
        skip.append(Skipped(what="tf32 matmul", why="TF32 tensor cores are NVIDIA's, from compute capability 8.0 (Ampere)"))
    if kind != "cpu":
        run += ["bf16", "fp16"]
    else:  # measured here: 1 GFLOP/s in bf16 on an EPYC without AVX512-BF16, against 40+ in fp32
        skip.append(Skipped(what="bf16 and fp16 matmul", why="PyTorch's CPU half-precision products are emulated on most CPUs"))
    fp8 = scaled_mm and ((kind == "cuda" and cap >= (8, 9)) or kind == "rocm")
    if fp8:
        run.append("fp8")
    else:
        skip.append(Skipped(what="fp8 matmul", why="needs torch._scaled_mm on CUDA compute capability 8.9+ or ROCm"))
    if int_mm and kind == "cuda":
        run.append("int8")
    else:
        skip.append(Skipped(what="int8 matmul", why="needs torch._int_mm on CUDA"))
    return run, skip


def shape_refusal(precision: str, m: int, n: int, k: int) -> str | None:
    """Why a product cannot run at a precision in this shape (None: it can)."""
    if precision == "fp8" and any(d % 16 for d in (m, n, k)):
        return "torch._scaled_mm needs every dimension a multiple of 16"
    if precision == "int8" and (m <= 16 or k % 8 or n % 8):
        return "torch._int_mm needs m > 16 and k, n multiples of 8"
    return None


def pick_device(requested: str, torch: Any) -> str:
    """auto -> cuda (or rocm) if present, else mps, else cpu; a named kind must be present."""
    has_gpu = bool(torch.cuda.is_available())
    is_rocm = bool(getattr(torch.version, "hip", None))
    has_mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if requested == "auto":
        return ("rocm" if is_rocm else "cuda") if has_gpu else "mps" if has_mps else "cpu"
    present = {"cuda": has_gpu and not is_rocm, "rocm": has_gpu and is_rocm, "mps": has_mps, "cpu": True}
    if not present.get(requested, False):
        raise RuntimeError(f"--device {requested}: PyTorch sees no {requested} device here")
    return requested


class TorchBackend:
    """One device measured through PyTorch."""

    def __init__(self, kind: str) -> None:
        import torch

        self.torch = torch
        self.kind = kind
        self.dev = torch.device("cuda" if kind in ("cuda", "rocm") else kind)
        self._held: list[Any] = []

    def device(self) -> Device:
        torch = self.torch
        if self.kind in ("cuda", "rocm"):
            props = torch.cuda.get_device_properties(0)
            nvml = _nvml()
            return Device(
                name=props.name,
                kind=self.kind,  # type: ignore[arg-type]
                backend="torch",
                memory_bytes=float(props.total_memory),
                last_level_cache_bytes=float(getattr(props, "L2_cache_size", 0) or 0) or None,
                cores=int(props.multi_processor_count),
                runtime=f"CUDA {torch.version.cuda}" if self.kind == "cuda" else f"HIP {torch.version.hip}",
                **nvml,
            )
        if self.kind == "mps":
            from core.probe.numpy_backend import memory_bytes

            return Device(name="Apple GPU (MPS)", kind="mps", backend="torch", memory_bytes=memory_bytes())
        from core.probe.numpy_backend import cpu_name, last_level_cache_bytes, memory_bytes

        return Device(
            name=cpu_name(), kind="cpu", backend="torch", memory_bytes=memory_bytes(), last_level_cache_bytes=last_level_cache_bytes()
        )

    def libraries(self) -> dict[str, str]:
        return {"torch": str(self.torch.__version__)}

    def sync(self) -> None:
        if self.kind in ("cuda", "rocm"):
            self.torch.cuda.synchronize()
        elif self.kind == "mps":
            self.torch.mps.synchronize()

    def streams(self, buffer_bytes: float) -> list[tuple[str, Callable[[], object], float]]:
        torch = self.torch
        n = int(buffer_bytes // ELEMENT)
        a = torch.empty(n, dtype=torch.float32, device=self.dev)
        b = torch.ones(n, dtype=torch.float32, device=self.dev)
        c = torch.full((n,), 2.0, dtype=torch.float32, device=self.dev)
        self._held = [a, b, c]
        size = float(n * ELEMENT)
        return [
            ("copy", lambda: a.copy_(b), 2 * size),
            ("triad", lambda: torch.add(b, c, alpha=3.0, out=a), 3 * size),
        ]

    def precisions(self) -> tuple[list[str], list[Skipped]]:
        torch = self.torch
        cap = tuple(torch.cuda.get_device_capability(0)) if self.kind == "cuda" else None
        return runnable(self.kind, cap, scaled_mm=hasattr(torch, "_scaled_mm"), int_mm=hasattr(torch, "_int_mm"))  # type: ignore[arg-type]

    def product(self, precision: str, m: int, n: int, k: int) -> Callable[[], object] | str:
        refusal = shape_refusal(precision, m, n, k)
        if refusal:
            return refusal
        torch = self.torch
        if self.kind in ("cuda", "rocm"):
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        if dtype is not None:
            a = torch.randn(m, k, device=self.dev, dtype=dtype)
            b = torch.randn(k, n, device=self.dev, dtype=dtype)
            self._held = [a, b]
            return lambda: torch.mm(a, b)
        if precision == "fp8":
            f8 = torch.float8_e4m3fnuz if self.kind == "rocm" else torch.float8_e4m3fn
            a = torch.randn(m, k, device=self.dev).to(f8)
            b = torch.randn(n, k, device=self.dev).to(f8).t()  # column-major, as _scaled_mm wants its second operand
            one = torch.ones((), device=self.dev)
            self._held = [a, b, one]
            return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        a = torch.randint(-64, 64, (m, k), device=self.dev, dtype=torch.int8)
        b = torch.randint(-64, 64, (k, n), device=self.dev, dtype=torch.int8)
        self._held = [a, b]
        return lambda: torch._int_mm(a, b)

    def release(self) -> None:
        self._held = []
        if self.kind in ("cuda", "rocm"):
            self.torch.cuda.empty_cache()


def _nvml() -> dict[str, Any]:
    """Driver version, clocks and power limit from NVML, where nvidia-ml-py is installed (empty otherwise)."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        out = {
            "driver": str(pynvml.nvmlSystemGetDriverVersion()),
            "clock_mhz": float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)),
            "memory_clock_mhz": float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)),
            "power_limit_w": pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0,
        }
        pynvml.nvmlShutdown()
        return out
    except Exception:  # NVML present but refusing (a container without the driver's library): leave it out
        return {}
