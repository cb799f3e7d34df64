"""Benchmark: the CPU probe's figures against NumPy timed alone, on the same buffers and the same product.

Runs the probe (core.probe.methods.run_probe through the NumPy backend, the buffers it plans from this machine's
cache and memory: 8 x the last-level cache, or a twelfth of the memory), then, in the same process:

- bandwidth: `np.copyto` between two float64 arrays of the probe's copy buffer, best of --repeat calls, 2 x bytes
  over the best time, against the probe's copy over that buffer;
- fp32 peak: the probe's fastest square product (`a @ b`, float32), best of --repeat calls, 2 m n k FLOPs over the
  best time, against the probe's summary.

It prints each pair and their ratio (probe / alone) and asserts nothing: the ratios depend on what else the machine
runs (the tests once required 0.5-2.0 and failed in a full suite on this shared 2-core machine while passing alone).

    .venv/bin/python benchmarks/probe.py [--full] [--repeat 5]

--full runs the whole probe (three buffer sizes, seven repeats) instead of the quick one.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from core.probe.methods import run_probe  # noqa: E402
from core.probe.numpy_backend import NumpyBackend  # noqa: E402


def best_s(fn: Callable[[], object], repeats: int) -> float:
    """The shortest of `repeats` timed calls, after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def copy_alone(buffer_bytes: float, repeats: int) -> float:
    """Bytes/s of a plain `np.copyto` between two float64 arrays of this size: 2 x bytes over the best time."""
    n = int(buffer_bytes // 8)
    src, dst = np.ones(n), np.zeros(n)
    return 2 * n * 8 / best_s(lambda: np.copyto(dst, src), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="the whole probe, not the quick one")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls of each plain NumPy kernel (best is kept)")
    args = parser.parse_args()

    start = time.perf_counter()
    doc = run_probe(NumpyBackend(), quick=not args.full)
    took = time.perf_counter() - start
    cache = doc.device.last_level_cache_bytes
    print(f"probe ({'full' if args.full else 'quick'}): {took:.1f} s on {doc.device.name}, last-level cache {cache or 0:,.0f} B")

    copy = max((r for r in doc.bandwidth if r.method == "copy"), key=lambda r: r.bytes_per_s)
    alone = copy_alone(copy.buffer_bytes, args.repeat)
    print(
        f"copy over {copy.buffer_bytes / 1e6:,.0f} MB: probe {copy.bytes_per_s / 1e9:,.2f} GB/s, NumPy alone {alone / 1e9:,.2f} GB/s, "
        f"ratio {copy.bytes_per_s / alone:.3f}"
    )

    square = max((r for r in doc.matmul if r.shape == "square"), key=lambda r: r.flops_per_s)
    a = np.ones((square.m, square.k), dtype=np.float32)
    b = np.ones((square.k, square.n), dtype=np.float32)
    alone = 2 * square.m * square.n * square.k / best_s(lambda: a @ b, args.repeat)
    peak = doc.summary.peak_flops["fp32"]
    print(f"fp32 square {square.m}: probe {peak / 1e9:,.1f} GFLOP/s, NumPy alone {alone / 1e9:,.1f} GFLOP/s, ratio {peak / alone:.3f}")


if __name__ == "__main__":
    main()
