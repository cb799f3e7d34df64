"""Benchmark: the load simulator (core.plan.load) on 10,000 Poisson requests at max batch 256, against a plain heap loop.

One replica with decode_s[b] = 12 ms + 0.05 ms x b (b = 1 .. 256), chunked
prefill of 2,048 tokens at 20 µs a token, prompts uniform in 100 .. 2,000
tokens and outputs in 50 .. 500, at --rate requests/s (default 18, about
85% of the 20.8 requests/s this replica serves when saturated, so prompts
queue and some 150 sequences are in the replica on average). Timed in this process: `simulate()` of the stream, and as the
same-run baseline a plain Python loop of 10,000 heapq pushes then 10,000 pops
(the simulator's bookkeeping is of that kind), alternated, best of --repeat
samples each, wall time (time.perf_counter). Then, once each, the same
stream with 4 replicas, as a closed loop of 200 clients, and disaggregated
(2 prefill, 4 decode instances), against the same baseline.

    .venv/bin/python benchmarks/load_sim.py [--requests 10000] [--rate 18] [--repeat 5]

Target (the issue): 10,000 requests well under 1 s on a slow 2-core machine (about 0.2 .. 0.4 s). The ratio against
the heap loop is the figure to compare across machines; the load average says how busy this one was.
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.plan.load import Requests, StepTimes, poisson_arrivals, simulate, simulate_closed_loop, simulate_disaggregated  # noqa: E402

MAX_BATCH = 256
STEPS = StepTimes(
    decode_s=np.array([0.0, *(0.012 + 0.00005 * b for b in range(1, MAX_BATCH + 1))]),
    chunk_tokens=2048,
    prefill_tokens=np.array([0.0, 8192.0]),
    prefill_s=np.array([0.0, 8192 * 2e-5]),
    basis="benchmark",
)


def stream(count: int, rate: float) -> Requests:
    """Poisson arrivals at `rate` requests/s with uniform prompt and output lengths (seeded)."""
    rng = np.random.default_rng(0)
    return Requests(poisson_arrivals(rate, count, seed=0), rng.integers(100, 2001, count), rng.integers(50, 501, count))


def heap_loop(count: int) -> Callable[[], Any]:
    """The baseline: `count` heapq pushes of random floats, then `count` pops, in a plain Python loop."""
    values = [random.Random(1).random() for _ in range(count)]

    def run() -> float:
        heap: list[float] = []
        for v in values:
            heapq.heappush(heap, v)
        total = 0.0
        while heap:
            total += heapq.heappop(heap)
        return total

    return run


def seconds(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternated(a: Callable[[], Any], b: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Best wall time of each, their samples taken in turn (a, b, a, b ...), after one warm-up call of each."""
    a(), b()
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(seconds(a))
        tb.append(seconds(b))
    return min(ta), min(tb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000, help="requests in the stream")
    parser.add_argument("--rate", type=float, default=18.0, help="arrival rate, requests/s")
    parser.add_argument("--repeat", type=int, default=5, help="samples of each, alternated (the best is reported)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    requests = stream(args.requests, args.rate)
    baseline = heap_loop(args.requests)
    t_sim, t_base = alternated(lambda: simulate(requests, STEPS), baseline, args.repeat)
    result = simulate(requests, STEPS).summary()
    print(
        f"simulate: {args.requests:,} requests at {args.rate:g}/s, max batch {MAX_BATCH}: {t_sim:.4f} s "
        f"(best of {args.repeat}); heap loop of {args.requests:,} pushes + pops {t_base:.4f} s: {t_sim / t_base:.2f}x"
    )
    print(
        f"  its figures: TTFT p90 {result['ttft_p90_s']:.3f} s, TPOT p90 {result['tpot_p90_s'] * 1e3:.1f} ms, "
        f"{result['output_tokens_per_s']:,.0f} output tokens/s, {result['requests_per_s']:.2f} requests/s"
    )
    others = {
        "4 replicas": lambda: simulate(requests, STEPS, replicas=4),
        "closed loop, 200 clients": lambda: simulate_closed_loop(requests, STEPS, concurrency=200),
        "disaggregated, 2 prefill + 4 decode": lambda: simulate_disaggregated(
            requests, STEPS, STEPS, prefill_instances=2, decode_instances=4, kv_transfer_s=lambda p: 1e-6 * p
        ),
    }
    for label, fn in others.items():
        t, t_base = alternated(fn, baseline, args.repeat)
        print(f"{label}: {t:.4f} s, {t / t_base:.2f}x the heap loop")
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) after")


if __name__ == "__main__":
    main()
