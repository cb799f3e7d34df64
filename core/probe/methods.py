"""How the probe measures, whatever the backend: buffer sizes, matmul shapes, timing, and the document.

A backend (core.probe.numpy_backend, core.probe.torch_backend) says what the
device is and builds the kernels; this module decides what to run and times
it the same way for every backend:

- bandwidth: a copy and a triad (NumPy: an add) over buffers of 8, 16 and 32
  times the last-level cache (quick: 8 times), capped so the three arrays of
  the triad take at most a quarter of the device's memory;
- matmul, per precision the backend runs: square products (the roof), skinny
  decode-like products (m = 1 .. 64 rows against a k x n weight of at least
  4 times the cache, so it streams from memory) and a prefill-like one
  (m = 2048 on a GPU), so the measured roofline shows both the roof and how
  close real shapes get;
- timing: one warm-up call, then enough calls per sample for a sample to last
  `min_sample_s` (launch overhead vanishes), `repeats` samples; the rate is
  taken from the best sample, the median and every sample are kept.
"""

from __future__ import annotations

import datetime as dt
import math
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from core.probe.document import (
    BandwidthRun,
    Device,
    Host,
    MatmulRun,
    ProbeDocument,
    Skipped,
    summarise,
)

#: Bytes per element of a product's inputs and of its output, per precision.
OPERAND_BYTES = {"fp32": (4, 4), "tf32": (4, 4), "bf16": (2, 2), "fp16": (2, 2), "fp8": (1, 2), "int8": (1, 4)}
#: Buffers for the bandwidth runs, as multiples of the last-level cache.
CACHE_MULTIPLES = (8, 16, 32)
FALLBACK_CACHE_BYTES = 64e6  # when the device does not say (larger than most caches: errs towards big buffers)
DECODE_ROWS = (1, 8, 16, 32, 64)
WEIGHT_CACHE_MULTIPLE = 4  # a decode-like product's weight, in multiples of the last-level cache


@dataclass(frozen=True)
class Plan:
    """What one probe runs."""

    buffer_bytes: tuple[float, ...]
    square: tuple[int, ...]
    hidden: int  # k = n of the decode- and prefill-like products (a weight matrix of an LLM layer)
    decode_rows: tuple[int, ...]
    prefill_rows: int
    repeats: int
    min_sample_s: float


def plan(kind: str, *, cache_bytes: float | None, memory_bytes: float | None, quick: bool = False) -> Plan:
    """The runs for a device: buffers from its cache and memory, shapes from its kind (a CPU gets smaller ones)."""
    cache = cache_bytes or FALLBACK_CACHE_BYTES
    multiples = CACHE_MULTIPLES[:1] if quick else CACHE_MULTIPLES
    cap = (memory_bytes or math.inf) / 4 / 3  # one of the triad's three arrays
    sizes = tuple(sorted({min(m * cache, cap) for m in multiples}))
    if kind == "cpu":
        square, hidden, prefill = ((512, 1024) if quick else (512, 1024, 2048)), 2048, 512
    else:
        square, hidden, prefill = ((4096, 8192) if quick else (2048, 4096, 8192)), 8192, 2048
    # the decode-like products read a weight of hidden x hidden: at least 4 x the cache (fp32 on a CPU, bf16 on a GPU),
    # or repeated calls would time the cache, not memory (a 2048 x 2048 fp32 weight reached 28 GB/s here, over the
    # 21.5 GB/s this CPU streams)
    width = 4 if kind == "cpu" else 2
    hidden = max(hidden, 1024 * math.ceil(math.sqrt(WEIGHT_CACHE_MULTIPLE * cache / width) / 1024))
    return Plan(
        buffer_bytes=sizes,
        square=square,
        hidden=hidden,
        decode_rows=DECODE_ROWS[::2] if quick else DECODE_ROWS,
        prefill_rows=prefill,
        repeats=3 if quick else 7,
        min_sample_s=0.01 if quick else 0.03,
    )


def shapes(p: Plan) -> list[tuple[str, int, int, int]]:
    """(shape, m, n, k) of every product the plan runs."""
    out = [("square", s, s, s) for s in p.square]
    out += [("decode", m, p.hidden, p.hidden) for m in p.decode_rows]
    out.append(("prefill", p.prefill_rows, p.hidden, p.hidden))
    return out


def product_cost(precision: str, m: int, n: int, k: int) -> tuple[float, float]:
    """(FLOPs, bytes) of one product: 2 m n k; A and B read and C written once at the precision's widths."""
    width_in, width_out = OPERAND_BYTES[precision]
    return 2.0 * m * n * k, float((m * k + k * n) * width_in + m * n * width_out)


@dataclass(frozen=True)
class Times:
    best_s: float
    median_s: float
    times_s: list[float]

    def fields(self) -> dict[str, Any]:
        """The Timing fields of a run (core.probe.document.Timing)."""
        return {"repeats": len(self.times_s), "best_s": self.best_s, "median_s": self.median_s, "times_s": self.times_s}


def time_it(
    fn: Callable[[], object],
    sync: Callable[[], None],
    *,
    repeats: int,
    min_sample_s: float,
    clock: Callable[[], float] = time.perf_counter,
) -> Times:
    """Seconds per call of `fn`: a warm-up, then `repeats` samples of enough calls to last `min_sample_s` each."""
    fn()
    sync()
    start = clock()
    fn()
    sync()
    once = max(clock() - start, 1e-9)
    calls = max(1, math.ceil(min_sample_s / once))
    samples = []
    for _ in range(repeats):
        start = clock()
        for _ in range(calls):
            fn()
        sync()
        samples.append(max((clock() - start) / calls, 1e-12))
    return Times(min(samples), statistics.median(samples), samples)


class Backend(Protocol):
    """What a backend gives the probe (core.probe.numpy_backend, core.probe.torch_backend)."""

    kind: str

    def device(self) -> Device: ...
    def libraries(self) -> dict[str, str]: ...
    def sync(self) -> None: ...
    def streams(self, buffer_bytes: float) -> list[tuple[str, Callable[[], object], float]]:
        """(method, kernel, bytes moved per call) of each bandwidth run over buffers of this size."""
        ...

    def precisions(self) -> tuple[list[str], list[Skipped]]:
        """The precisions whose products it runs, and those it cannot, with why."""
        ...

    def product(self, precision: str, m: int, n: int, k: int) -> Callable[[], object] | str:
        """A kernel computing one m x k by k x n product, or why this shape cannot run at this precision."""
        ...

    def release(self) -> None: ...


def run_probe(backend: Backend, *, quick: bool = False, progress: Callable[[str], None] = lambda _: None) -> ProbeDocument:
    """Measure a device through its backend; the document of every run."""
    device = backend.device()
    p = plan(backend.kind, cache_bytes=device.last_level_cache_bytes, memory_bytes=device.memory_bytes, quick=quick)
    bandwidth: list[BandwidthRun] = []
    for size in p.buffer_bytes:
        for method, kernel, moved in backend.streams(size):
            progress(f"bandwidth: {method} over {size / 1e6:,.0f} MB")
            t = time_it(kernel, backend.sync, repeats=p.repeats, min_sample_s=p.min_sample_s)
            bandwidth.append(
                BandwidthRun(
                    method=method,  # type: ignore[arg-type]
                    buffer_bytes=size,
                    bytes_moved=moved,
                    bytes_per_s=moved / t.best_s,
                    **t.fields(),
                )
            )
        backend.release()
    runnable, skipped = backend.precisions()
    matmul: list[MatmulRun] = []
    for precision in runnable:
        for shape, m, n, k in shapes(p):
            try:
                made = backend.product(precision, m, n, k)
            except (RuntimeError, MemoryError, TypeError, ValueError) as exc:  # operands this device's build cannot make
                made = f"the kernel failed: {exc}"[:300]
            if isinstance(made, str):
                skipped.append(Skipped(what=f"{precision} {shape} matmul m={m} n={n} k={k}", why=made))
                continue
            kernel = made
            progress(f"matmul: {precision} {shape} {m} x {n} x {k}")
            try:
                t = time_it(kernel, backend.sync, repeats=p.repeats, min_sample_s=p.min_sample_s)
            except (RuntimeError, MemoryError, TypeError, ValueError) as exc:  # a kernel this device's build refuses
                skipped.append(Skipped(what=f"{precision} {shape} matmul m={m} n={n} k={k}", why=f"the kernel failed: {exc}"[:300]))
                backend.release()
                continue
            flops, nbytes = product_cost(precision, m, n, k)
            matmul.append(
                MatmulRun(
                    precision=precision,  # type: ignore[arg-type]
                    shape=shape,  # type: ignore[arg-type]
                    m=m,
                    n=n,
                    k=k,
                    flops=flops,
                    bytes=nbytes,
                    flops_per_s=flops / t.best_s,
                    **t.fields(),
                )
            )
            backend.release()
    host = Host(platform=platform.platform(), python=platform.python_version(), libraries=backend.libraries())
    return ProbeDocument(
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        quick=quick,
        device=device,
        host=host,
        bandwidth=bandwidth,
        matmul=matmul,
        summary=summarise(bandwidth, matmul),
        skipped=skipped,
    )
