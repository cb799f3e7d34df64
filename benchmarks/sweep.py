"""Benchmark: the full catalogue sweep, against a plain per-scenario Python loop.

Every accelerator x every model x weights {bf16, fp8, int4} x batch 1..1024
(powers of two) x contexts {1k, 4k, 16k, 32k, 64k, 128k}. Prints scenarios/s,
peak memory (RSS) and the ratio against a Python loop of the same decode-step
formulas (decode step, prefill step for TTFT, memory fit) run on a random
sample in the same process; the loop's results are checked against the
vectorised ones, so the baseline is the same computation.

    .venv/bin/python benchmarks/sweep.py [--sample 2000] [--repeat 3]

Targets (issue 3): the whole sweep under 1 s on 2 cores, at least 50x the loop,
peak memory under 2 GB.
"""

from __future__ import annotations

import argparse
import math
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polars as pl  # noqa: E402

from core.catalogue import Catalogue, load_catalogue  # noqa: E402
from core.precisions import ACTIVATION_BYTES, FALLBACK_CHAIN, FORMATS, default_compute  # noqa: E402
from core.store import Store  # noqa: E402
from core.sweep import scenario_grid, sweep  # noqa: E402


def loop_step(
    s: dict[str, Any], ops: list[dict[str, Any]], gpu: dict[str, Any], model: Any, b: int, q: int, cached: int, prefill: bool
) -> float:
    """One step's time (s), operation by operation, in plain Python (the formulas of core.perfmodel)."""
    compute = default_compute(s["weights"])
    used = next(c for c in FALLBACK_CHAIN[compute] if gpu[f"peak_{c}"])
    peak, bw = gpu[f"peak_{used}"], gpu["bandwidth_bytes_per_s"]
    wb, kvb, ab = FORMATS[s["weights"]].bytes, FORMATS[s["kv"]].bytes, ACTIVATION_BYTES[used]
    n, t = s["num_gpus"], b * q
    total = 0.0
    for op in ops:
        kind, layers = op["kind"], op["layers"]
        flops = weight = act = kv = 0.0
        if kind in ("matmul", "lm_head"):
            tokens = b if (kind == "lm_head" and prefill) else t
            flops = 2 * tokens * op["params"]
            weight = op["params"] * wb
            act = tokens * (op["in_dim"] + op["out_dim"]) * ab
        elif kind == "moe":
            e, k = op["experts"], op["top_k"]
            flops = 2 * t * k * op["params"]
            weight = e * (1 - (1 - k / e) ** t) * op["params"] * wb
            act = t * k * (op["in_dim"] + op["out_dim"]) * ab
        elif kind == "embed":
            weight = min(t, op["params"] / op["out_dim"]) * op["out_dim"] * wb
            act = t * op["out_dim"] * ab
        elif kind == "norm":
            flops = 4 * t * op["in_dim"]
            weight = op["params"] * wb
            act = 2 * t * op["in_dim"] * ab
        elif kind == "attn":
            w = op["window"]
            pairs = sum(min(cached + i, w) if w else cached + i for i in range(1, q + 1)) if q < 64 else _pairs(cached, q, w)
            seen = min(cached + q, w) if w else cached + q
            flops = b * pairs * (op["pair_flops_prefill"] if prefill else op["pair_flops_decode"])
            weight = op["params"] * wb
            act = t * (op["in_dim"] + op["out_dim"]) * ab
            kv = b * seen * op["kv_elems"] * kvb + t * op["kv_elems"] * kvb
        shard = 1 if kind != "attn" or op["kv_replicated"] == 1 else min(n, op["kv_heads"])
        mem_t = ((weight + act) / n + kv / shard) * layers / bw
        comp_t = flops * layers / n / peak
        total += max(mem_t, comp_t)
    if n > 1:
        total += 2 * model.num_layers * 2 * (n - 1) / n * t * model.hidden_size * ab / (gpu["scaleup_bytes_per_s"] / 2)
    return total


def _pairs(cached: int, q: int, w: float | None) -> float:
    """Closed form of sum(min(cached + i, w)) for i = 1..q (w falsy: no window)."""
    a, c = cached + 1, cached + q
    if not w or c <= w:
        return (a + c) * q / 2
    if a > w:
        return q * w
    return (a + w) * (w - a + 1) / 2 + (c - w) * w


def loop_scenario(
    s: dict[str, Any], ops: list[dict[str, Any]], gpu: dict[str, Any], model: Any, total_params: float
) -> tuple[float, float, bool]:
    """(decode step time, time to first token, fits): what the sweep computes, one scenario at a time."""
    decode = loop_step(s, ops, gpu, model, s["batch"], 1, s["context"], False)
    ttft = loop_step(s, ops, gpu, model, 1, s["prompt"], 0, True)
    kv_seq = sum(
        op["layers"] * op["kv_elems"] * (min(s["context"], op["window"]) if op["window"] else s["context"])
        for op in ops
        if op["kind"] == "attn"
    )
    n = s["num_gpus"]
    fits = total_params * FORMATS[s["weights"]].bytes + s["batch"] * kv_seq * FORMATS[s["kv"]].bytes <= n * gpu["memory_bytes"] * 0.9
    return decode, ttft, fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=2000, help="scenarios the Python loop evaluates")
    parser.add_argument("--repeat", type=int, default=3, help="vectorised runs (best is reported)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        cat: Catalogue = load_catalogue(Store(Path(tmp) / "bench.duckdb"))
        grid = scenario_grid(cat.gpus["id"].to_list(), list(cat.records))
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        times = []
        result = pl.DataFrame()
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            result = sweep(cat, grid)
            times.append(time.perf_counter() - t0)
        best = min(times)
        peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6

        rng = random.Random(7)
        sample_idx = rng.sample(range(grid.height), args.sample)
        ops_by_model = {m: cat.ops.filter(pl.col("model_id") == m).to_dicts() for m in cat.records}
        gpus = {g["id"]: g for g in cat.gpus.to_dicts()}
        rows = grid[sample_idx].to_dicts()
        t0 = time.perf_counter()
        params = dict(zip(cat.models["id"], cat.models["total_params"], strict=True))
        loop_out = [loop_scenario(r, ops_by_model[r["model"]], gpus[r["gpu"]], cat.records[r["model"]], params[r["model"]]) for r in rows]
        loop_s = time.perf_counter() - t0
        vec = result[sample_idx]
        pairs = zip(loop_out, vec["step_time_s"], vec["ttft_s"], vec["fits"], strict=True)
        worst = max(max(abs(lo[0] - d) / d, abs(lo[1] - tt) / tt) + (0 if lo[2] == f else 1) for lo, d, tt, f in pairs)

    n = grid.height
    loop_rate = args.sample / loop_s
    vec_rate = n / best
    print(f"scenarios                 {n:,}")
    print(f"vectorised sweep          {best:.3f} s (best of {args.repeat}: {', '.join(f'{t:.3f}' for t in times)})")
    print(f"vectorised rate           {vec_rate:,.0f} scenarios/s")
    print(f"python loop ({args.sample} sample)  {loop_s:.3f} s -> {loop_rate:,.0f} scenarios/s")
    print(f"speed-up                  {vec_rate / loop_rate:.1f}x")
    print(f"loop vs vectorised        max relative difference {worst:.2e} on the sample (decode, TTFT, fit)")
    print(f"peak memory (max RSS)     {peak_gb:.2f} GB (after loading: {rss_before:.2f} GB)")
    print(f"rows that fit             {result['fits'].sum():,}")
    if not math.isfinite(worst) or worst > 1e-9:
        raise SystemExit("the loop and the vectorised sweep disagree: the baseline is not the same computation")


if __name__ == "__main__":
    main()
