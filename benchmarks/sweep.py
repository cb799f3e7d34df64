"""Benchmark: one scenario, and the full catalogue sweep against a plain per-scenario Python loop.

Single scenario: `ceiling()` of a few scenarios (dense, MoE with MLA over 8
GPUs, speculative decoding), median of --single-runs calls each, beside
`evaluate()` of the same scenario (the one-row frame).

Full catalogue: every accelerator x every model x weights {bf16, fp8, int4} x
batch 1..1024 (powers of two) x contexts {1k, 4k, 16k, 32k, 64k, 128k}.
Prints scenarios/s, peak memory (RSS) and the ratio against a plain Python
loop that computes, one scenario at a time, every figure the sweep returns
(decode step operation by operation, prefill for TTFT, throughput, bandwidth
ceilings, memory fit, largest batch, fewest GPUs, flags) on a random sample
in the same process. Every one of the loop's figures is checked against the
sweep's, so the baseline is the same computation; both are timed best of
--repeat.

    .venv/bin/python benchmarks/sweep.py [--sample 2000] [--repeat 5] [--single-runs 300]

The sweep is timed first with glibc's own memory thresholds, then as the
app's server and the CLI run it, with freed memory kept in the process
(core/model/allocator.py); rate, speed-up and memory are the second.

Targets (issue 12): one scenario under 2 ms; the whole sweep at least 1 M
scenarios/s and at least 50x the loop; peak memory under 2 GB.
"""

from __future__ import annotations

import argparse
import math
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polars as pl  # noqa: E402

from core.catalogue.catalogue import Catalogue, load_catalogue  # noqa: E402
from core.catalogue.precisions import ACTIVATION_BYTES, FALLBACK_CHAIN, FORMATS, default_compute  # noqa: E402
from core.evidence.predictor import with_predictor
from core.model.allocator import keep_freed_memory  # noqa: E402
from core.model.ceilings import ceiling, evaluate  # noqa: E402
from core.model.scenario import Scenario  # noqa: E402
from core.model.sweep import scenario_grid, sweep  # noqa: E402
from core.store import Store  # noqa: E402

#: The single scenarios timed: (label, scenario).
SINGLE = (
    ("Llama 3.1 70B on 2 x H100, batch 32", Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=32, context=1024)),
    ("DeepSeek-V3 fp8 on 8 x H200, batch 64", Scenario(gpu="h200-sxm", model="deepseek-v3", weights="fp8", num_gpus=8, batch=64)),
    (
        "Llama 3.1 8B + 1B draft (k = 4) on 1 x L40S",
        Scenario(gpu="l40s", model="llama-3.1-8b", batch=8, spec_draft_len=4, spec_draft_model="llama-3.2-1b"),
    ),
)


def median_time(fn: Any, runs: int) -> float:
    """Median seconds of `runs` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def loop_step(
    s: dict[str, Any], ops: list[dict[str, Any]], gpu: dict[str, Any], model: Any, b: int, q: int, cached: int, prefill: bool
) -> dict[str, float]:
    """One step, operation by operation, in plain Python (the formulas of core.model.engine).

    Returns the step time (s) with its FLOPs, bytes, weight and KV-read bytes
    and the time of its memory- and compute-bound operations.
    """
    compute = default_compute(s["weights"])
    used = next(c for c in FALLBACK_CHAIN[compute] if gpu[f"peak_{c}"])
    peak, bw = gpu[f"peak_{used}"], gpu["bandwidth_bytes_per_s"]
    wb, kvb, ab = FORMATS[s["weights"]].bytes, FORMATS[s["kv"]].bytes, ACTIVATION_BYTES[used]
    n, t = s["num_gpus"], b * q
    out = dict.fromkeys(("time", "flops", "bytes", "weight", "kv_read", "mem_bound", "comp_bound", "comm"), 0.0)
    for op in ops:
        kind, layers = op["kind"], op["layers"]
        flops = weight = act = kv = kv_read = 0.0
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
            kv_read = b * seen * op["kv_elems"] * kvb
            kv = kv_read + t * op["kv_elems"] * kvb
        shard = 1 if kind != "attn" or op["kv_replicated"] == 1 else min(n, op["kv_heads"])
        mem_t = ((weight + act) / n + kv / shard) * layers / bw
        comp_t = flops * layers / n / peak
        out["time"] += max(mem_t, comp_t)
        out["mem_bound" if mem_t >= comp_t else "comp_bound"] += max(mem_t, comp_t)
        out["flops"] += flops * layers
        out["bytes"] += (weight + act + kv) * layers
        out["weight"] += weight * layers
        out["kv_read"] += kv_read * layers
    if n > 1:
        out["comm"] = 2 * model.num_layers * 2 * (n - 1) / n * t * model.hidden_size * ab / (gpu["scaleup_bytes_per_s"] / 2)
        out["time"] += out["comm"]
    out["peak"], out["bw"], out["used"] = peak, bw, used
    return out


def _pairs(cached: int, q: int, w: float | None) -> float:
    """Closed form of sum(min(cached + i, w)) for i = 1..q (w falsy: no window)."""
    a, c = cached + 1, cached + q
    if not w or c <= w:
        return (a + c) * q / 2
    if a > w:
        return q * w
    return (a + w) * (w - a + 1) / 2 + (c - w) * w


def loop_scenario(
    s: dict[str, Any], ops: list[dict[str, Any]], gpu: dict[str, Any], model: Any, total_params: float, rent: float | None
) -> dict[str, Any]:
    """Every figure the sweep returns for one scenario, one scenario at a time (core.model.ceilings' rules).

    Sweep scenarios have no speculative decoding, default efficiencies and
    no price of their own, as scenario_grid makes them: their cost uses
    `rent`, the catalogue's rent price per GPU-hour (core.catalogue.prices; None: none).
    """
    n, batch, context = s["num_gpus"], s["batch"], s["context"]
    decode = loop_step(s, ops, gpu, model, batch, 1, context, False)
    prefill = loop_step(s, ops, gpu, model, 1, s["prompt"], 0, True)
    attn = [op for op in ops if op["kind"] == "attn"]
    kv_elems_seq = sum(op["layers"] * op["kv_elems"] * (min(context, op["window"]) if op["window"] else context) for op in attn)
    replicated = max(op["kv_replicated"] for op in attn) == 1
    shard = 1 if replicated else min(n, min(op["kv_heads"] for op in attn))
    wbytes, kvbytes = FORMATS[s["weights"]].bytes, FORMATS[s["kv"]].bytes
    weight_mem = total_params * wbytes
    kv_seq_all = kv_elems_seq * kvbytes * n / shard
    capacity = n * gpu["memory_bytes"]
    reserve = 0.1 * capacity
    usable = capacity - reserve
    fits = weight_mem + batch * kv_seq_all <= usable
    max_batch = max(0, math.floor((usable - weight_mem) / kv_seq_all)) if kv_seq_all > 0 else None
    per_gpu = gpu["memory_bytes"] * 0.9
    kv_one = kv_elems_seq * kvbytes
    if replicated:
        min_gpus = math.ceil(weight_mem / (per_gpu - kv_one)) if per_gpu - kv_one > 0 else None
    else:
        min_gpus = math.ceil((weight_mem + kv_one) / per_gpu)
    per_user = 1.0 / decode["time"] if fits else None
    total = per_user * batch if per_user is not None else None
    agg_bw = n * decode["bw"]
    compute = default_compute(s["weights"])
    flags = []
    if decode["used"] != compute:
        flags.append(f"{compute} compute not native on this accelerator: computed at the {decode['used']} peak")
    if not fits:
        flags.append("does not fit in memory: weights + KV exceed the usable memory")
    comm, mem_b, comp_b = decode["comm"], decode["mem_bound"], decode["comp_bound"]
    bound = "communication" if comm > mem_b and comm > comp_b else "memory" if mem_b >= comp_b else "compute"
    return {
        "step_time_s": decode["time"],
        "time_per_output_token_s": decode["time"] if fits else None,
        "tokens_per_s_per_user": per_user,
        "tokens_per_s_total": total,
        "ttft_s": prefill["time"],
        "intensity": decode["flops"] / decode["bytes"],
        "ridge": decode["peak"] / decode["bw"],
        "bound": bound,
        "bandwidth_ceiling_tokens_per_s": agg_bw / decode["weight"],
        "bandwidth_ceiling_with_kv_tokens_per_s": agg_bw / (decode["weight"] + decode["kv_read"] * n / shard),
        "weight_memory_bytes": weight_mem,
        "kv_memory_bytes": kv_seq_all * batch,
        "memory_required_bytes": weight_mem + kv_seq_all * batch + reserve,
        "capacity_bytes": capacity,
        "fits": fits,
        "max_batch": max_batch,
        "min_gpus": min_gpus,
        "usd_per_million_tokens": rent * n / (total * 3600.0) * 1e6 if rent is not None and total else None,
        "tokens_per_s_per_watt": total / (n * gpu["power_w"]) if total is not None and gpu["power_w"] else None,
        "flags": flags,
    }


def _differs(a: Any, b: Any) -> float:
    """Relative difference of two figures (0 when equal, 1 when one is missing or they are unequal non-numbers)."""
    if a is None or b is None:
        return 0.0 if a is None and b is None else 1.0
    if isinstance(a, bool | str | list) or isinstance(b, bool | str | list):
        return 0.0 if a == b else 1.0
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=2000, help="scenarios the Python loop evaluates")
    parser.add_argument("--repeat", type=int, default=5, help="vectorised runs (best is reported)")
    parser.add_argument("--single-runs", type=int, default=300, help="calls per single scenario (median is reported)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        cat: Catalogue = load_catalogue(Store(Path(tmp) / "bench.duckdb"))
        predicting = with_predictor(cat)  # the same catalogue with the shipped predicted model
        for label, sc in SINGLE:
            one = median_time(lambda sc=sc: ceiling(cat, sc), args.single_runs)
            frame = median_time(lambda sc=sc: evaluate(cat, [sc]), args.single_runs)
            both = median_time(lambda sc=sc: ceiling(predicting, sc), args.single_runs)
            print(
                f"one scenario: {label:48s} ceiling() {one * 1e3:6.2f} ms   evaluate() {frame * 1e3:6.2f} ms   "
                f"ceiling() with its prediction {both * 1e3:6.2f} ms (median of {args.single_runs})"
            )
        grid = scenario_grid(cat.gpus["id"].to_list(), list(cat.records))
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6

        def timed_sweeps() -> tuple[list[float], pl.DataFrame]:
            times, result = [], pl.DataFrame()
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                result = sweep(cat, grid)
                times.append(time.perf_counter() - t0)
            return times, result

        default_times, _ = timed_sweeps()  # glibc's own thresholds
        kept = keep_freed_memory()  # as serve.py and the CLI run (core/model/allocator.py)
        times, result = timed_sweeps()
        best = min(times)
        peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        plain_pairs, predicted_pairs = [], []
        for _ in range(args.repeat):  # alternated: the sweep with the predicted columns beside the plain one, same run
            t0 = time.perf_counter()
            sweep(cat, grid)
            plain_pairs.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            sweep(predicting, grid)
            predicted_pairs.append(time.perf_counter() - t0)

        rng = random.Random(7)
        sample_idx = rng.sample(range(grid.height), args.sample)
        ops_by_model = {m: cat.ops.filter(pl.col("model_id") == m).to_dicts() for m in cat.records}
        gpus = {g["id"]: g for g in cat.gpus.to_dicts()}
        rows = grid[sample_idx].to_dicts()
        params = dict(zip(cat.models["id"], cat.models["total_params"], strict=True))
        # each accelerator's rent as the catalogue prices it (core.catalogue.prices: one vote per seller, on-demand rates):
        # an input of the loop, not part of the computation it checks
        rent = {g: cat.price(g, "rent").usd for g in cat.gpus["id"].to_list()}
        loop_times = []
        loop_out: list[dict[str, Any]] = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            loop_out = [
                loop_scenario(r, ops_by_model[r["model"]], gpus[r["gpu"]], cat.records[r["model"]], params[r["model"]], rent.get(r["gpu"]))
                for r in rows
            ]
            loop_times.append(time.perf_counter() - t0)
        loop_s = min(loop_times)
        vec = result[sample_idx].to_dicts()
        compared = list(loop_out[0])
        worst = {k: max(_differs(lo[k], v[k]) for lo, v in zip(loop_out, vec, strict=True)) for k in compared}

    n = grid.height
    loop_rate = args.sample / loop_s
    vec_rate = n / best
    print(f"scenarios                 {n:,}")
    print(
        f"vectorised sweep, glibc defaults  {min(default_times):.3f} s (best of {args.repeat}: {', '.join(f'{t:.3f}' for t in default_times)})"
        f" -> {n / min(default_times):,.0f} scenarios/s"
    )
    print(
        f"vectorised sweep          {best:.3f} s (best of {args.repeat}: {', '.join(f'{t:.3f}' for t in times)})"
        f"{', freed memory kept' if kept else ', keep_freed_memory unavailable here'}"
    )
    print(f"vectorised rate           {vec_rate:,.0f} scenarios/s")
    print(
        f"with predicted columns    {min(predicted_pairs):.3f} s -> {n / min(predicted_pairs):,.0f} scenarios/s, "
        f"{min(predicted_pairs) / min(plain_pairs):.2f}x the plain sweep alternated beside it ({min(plain_pairs):.3f} s)"
    )
    print(
        f"python loop ({args.sample} sample)  {loop_s:.3f} s -> {loop_rate:,.0f} scenarios/s "
        f"(best of {args.repeat}: {', '.join(f'{t:.3f}' for t in loop_times)})"
    )
    print(f"speed-up                  {vec_rate / loop_rate:.1f}x (best against best)")
    print(f"loop vs vectorised        max relative difference {max(worst.values()):.2e} over {len(worst)} figures on the sample")
    print(f"peak memory (max RSS)     {peak_gb:.2f} GB (after loading: {rss_before:.2f} GB)")
    print(f"rows that fit             {result['fits'].sum():,}")
    bad = {k: v for k, v in worst.items() if not math.isfinite(v) or v > 1e-9}
    if bad:
        raise SystemExit(f"the loop and the vectorised sweep disagree on {bad}: the baseline is not the same computation")


if __name__ == "__main__":
    main()
