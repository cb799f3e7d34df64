"""The CPU through NumPy: always available (NumPy is one of the app's own dependencies).

Bandwidth: `np.copyto` (copy) and `np.add(b, c, out=a)` (add; NumPy has no
one-pass triad, and `b + s * c` would be two passes). Matmul: fp32 through
the BLAS NumPy was built with. NumPy has no bf16, its float16 and integer
products do not use the BLAS, so they are skipped: they would measure
NumPy's loops, not the hardware.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from core.probe.document import Device, Skipped

ELEMENT = 8  # float64 buffers for the streams: the widest loads NumPy's loops issue


def cpu_name() -> str:
    """The processor's name from /proc/cpuinfo (Linux), else what Python's platform module says."""
    info = Path("/proc/cpuinfo")
    if info.exists():
        for line in info.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "CPU"


def last_level_cache_bytes() -> float | None:
    """The largest CPU cache Linux lists under /sys (L3 on most parts); None elsewhere."""
    best = 0.0
    for size in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = size.read_text().strip().upper()
        factor = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * factor)
    return best or None


def memory_bytes() -> float | None:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def blas_name() -> str | None:
    """The BLAS NumPy was built with, e.g. 'scipy-openblas 0.3.29'."""
    try:
        config: Any = np.show_config(mode="dicts")  # type: ignore[func-returns-value]
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', '')} {blas.get('version', '')}".strip() or None
    except (KeyError, TypeError, ValueError):
        return None


class NumpyBackend:
    """The CPU measured through NumPy."""

    kind = "cpu"

    def __init__(self) -> None:
        self._held: list[np.ndarray[Any, Any]] = []

    def device(self) -> Device:
        return Device(
            name=cpu_name(),
            kind="cpu",
            backend="numpy",
            memory_bytes=memory_bytes(),
            last_level_cache_bytes=last_level_cache_bytes(),
            cores=os.cpu_count(),
            runtime=blas_name(),
        )

    def libraries(self) -> dict[str, str]:
        return {"numpy": np.__version__}

    def sync(self) -> None:  # NumPy calls return when done
        return None

    def streams(self, buffer_bytes: float) -> list[tuple[str, Callable[[], object], float]]:
        n = int(buffer_bytes // ELEMENT)
        a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
        self._held = [a, b, c]
        size = float(n * ELEMENT)
        return [
            ("copy", lambda: np.copyto(a, b), 2 * size),
            ("add", lambda: np.add(b, c, out=a), 3 * size),
        ]

    def precisions(self) -> tuple[list[str], list[Skipped]]:
        why = "NumPy's {} product does not use the BLAS: it would time NumPy's loops, not the hardware"
        return ["fp32"], [
            Skipped(what="bf16 matmul", why="NumPy has no bfloat16 type"),
            Skipped(what="fp16 matmul", why=why.format("float16")),
            Skipped(what="int8 matmul", why=why.format("integer")),
            Skipped(what="tf32 and fp8 matmul", why="tensor-core formats: measured with PyTorch on a GPU (requirements-probe.txt)"),
        ]

    def product(self, precision: str, m: int, n: int, k: int) -> Callable[[], object] | str:
        if precision != "fp32":
            return f"NumPy runs fp32 only, not {precision}"
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), dtype=np.float32)
        self._held = [a, b, out]
        return lambda: np.matmul(a, b, out=out)

    def release(self) -> None:
        self._held = []
