"""Planning one deployment: step-time breakdown, memory use, the throughput-latency frontier, what-ifs.

Every function takes the catalogue and a `Scenario` (and, where the caller
has it, the scenario's `Ceiling` from core.model.ceilings.ceiling) and
returns plain values or a Polars frame; the ceiling calculator only renders
them. Scenarios that differ in one value (the frontier's batches, the
what-if levers) are evaluated together as one frame by
core.model.ceilings.evaluate.

Units: seconds, bytes, tokens/s; `change_*` columns are ratios new / current.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.precisions import storage_format
from core.model.ceilings import ceiling, evaluate, operation_table
from core.model.result import Ceiling
from core.model.scenario import Scenario

#: Decode batches of the frontier (the current batch, the ridge batch and the memory cut are added).
FRONTIER_BATCHES = tuple(2**i for i in range(11))  # 1 .. 1024

#: Step-time components in stacking order.
COMPONENTS = ("weights", "KV cache", "activations", "compute", "communication", "draft model", "overhead")

#: Memory segments in stacking order.
MEMORY_SEGMENTS = ("weights", "KV cache", "reserve", "free")

#: Headline figures compared by the what-if panel: column -> True when larger is better.
HEADLINES: dict[str, bool] = {
    "tokens_per_s_per_user": True,
    "tokens_per_s_total": True,
    "time_per_output_token_s": False,
    "ttft_s": False,
}

#: Speculative decoding defaults for the what-if lever (draft length, acceptance).
SPEC_LEVER = (4, 0.7)


def step_breakdown(cat: Catalogue, scenario: Scenario, result: Ceiling | None = None) -> pl.DataFrame:
    """The time of one decode cycle split by what it waits for.

    Each operation of the target's decode step (k + 1 tokens per sequence
    when speculative) is bounded by memory or compute: a memory-bound
    operation's time is split into reading weights, KV cache and activations
    in proportion to the bytes each GPU moves; a compute-bound one counts as
    compute. Tensor-parallel communication, the k draft steps and the stated
    overhead are added. Rows: component, time_s, share; the times sum to the
    cycle time (`cycle_time_s` of the result).
    """
    r = result if result is not None else ceiling(cat, scenario)
    n = float(scenario.num_gpus)
    bw = r.bandwidth_bytes_per_s * scenario.eff_bandwidth
    mem = pl.col("bound") == "memory"
    sums = operation_table(cat, scenario).select(
        pl.when(mem).then(pl.col("weight_bytes") / n / bw).otherwise(0.0).sum().alias("weights"),
        pl.when(mem).then(pl.col("kv_bytes") / pl.col("kv_shard") / bw).otherwise(0.0).sum().alias("KV cache"),
        pl.when(mem).then(pl.col("act_bytes") / n / bw).otherwise(0.0).sum().alias("activations"),
        pl.when(mem).then(0.0).otherwise(pl.col("time_s")).sum().alias("compute"),
    )
    draft = scenario.spec_draft_len * (r.draft_step_time_s or 0.0) if scenario.uses_speculation else 0.0
    times = {**sums.row(0, named=True), "communication": r.comm_time_s, "draft model": draft, "overhead": scenario.overhead_s}
    total = sum(times.values())
    return pl.DataFrame(
        {
            "component": list(COMPONENTS),
            "time_s": [float(times[c]) for c in COMPONENTS],
            "share": [float(times[c]) / total if total > 0 else 0.0 for c in COMPONENTS],
        }
    )


def memory_use(result: Ceiling) -> pl.DataFrame:
    """Memory held across all GPUs: weights (draft included), KV cache, reserve, and what is left free.

    Rows: segment, bytes; plus capacity_bytes on every row. When the scenario
    does not fit, `free` is 0 and the other segments add up past capacity.
    """
    r = result
    free = max(0.0, r.capacity_bytes - r.weight_memory_bytes - r.kv_memory_bytes - r.reserve_bytes)
    return pl.DataFrame(
        {
            "segment": list(MEMORY_SEGMENTS),
            "bytes": [r.weight_memory_bytes, r.kv_memory_bytes, r.reserve_bytes, free],
            "capacity_bytes": [r.capacity_bytes] * len(MEMORY_SEGMENTS),
        }
    )


def ridge_batch(scenario: Scenario, result: Ceiling) -> int | None:
    """The decode batch at which the weight matmuls reach the (derated) ridge.

    Decode matmul intensity ~ 2 x batch x tokens per sequence per step / bytes
    per weight, so the batch is ceil(ridge x bytes / (2 q)); None when the
    accelerator has no usable peak.
    """
    if result.ridge is None:
        return None
    derated = result.ridge * scenario.eff_compute / scenario.eff_bandwidth
    q = scenario.spec_draft_len + 1 if scenario.uses_speculation else 1
    return max(1, math.ceil(derated * storage_format(scenario.weights).bytes / (2.0 * q)))


def frontier(cat: Catalogue, scenario: Scenario, batches: Sequence[int] = FRONTIER_BATCHES, result: Ceiling | None = None) -> pl.DataFrame:
    """Tokens/s per user against tokens/s in total over decode batches, one evaluation.

    The batches are `batches` plus the current batch, the ridge batch and the
    largest batch that fits (when inside the range). One row per batch with
    fits, bound, is_current, is_ridge and is_cut (the largest batch that
    fits); rows that do not fit carry null throughput (the chart cuts them).
    """
    base = result if result is not None else ceiling(cat, scenario)
    rb = ridge_batch(scenario, base)
    lo, hi = min(batches), max(batches)
    extra = [scenario.batch] + [b for b in (rb, base.max_batch) if b is not None and lo <= b <= hi]
    all_batches = sorted({int(b) for b in (*batches, *extra)})
    columns = ["batch", "tokens_per_s_per_user", "tokens_per_s_total", "time_per_output_token_s", "bound", "fits"]
    out = evaluate(cat, [scenario.model_copy(update={"batch": b}) for b in all_batches], columns=columns)
    return out.with_columns(
        (pl.col("batch") == scenario.batch).alias("is_current"),
        (pl.col("batch") == (rb if rb is not None else -1)).alias("is_ridge"),
        (pl.col("batch") == (base.max_batch if base.max_batch is not None else -1)).alias("is_cut"),
    )


def default_draft_model(cat: Catalogue, model_id: str) -> str | None:
    """A draft model for speculative decoding: the smallest catalogue model of the same family
    and vocabulary (same tokenizer size) with at most a third of the target's parameters."""
    target = cat.model(model_id)
    params = dict(zip(cat.models["id"], cat.models["total_params"], strict=True))
    family = dict(zip(cat.models["id"], cat.models["family"], strict=True))
    candidates = [
        m
        for m, rec in cat.records.items()
        if m != model_id
        and rec.vocab_size == target.vocab_size
        and family.get(m) == family.get(model_id)
        and params[m] <= params[model_id] / 3.0
    ]
    return min(candidates, key=lambda m: params[m]) if candidates else None


def more_bandwidth_accelerator(cat: Catalogue, gpu_id: str, *, at_least: float = 1.25) -> str | None:
    """The accelerator with the least bandwidth that still has `at_least` x this one's.

    The same vendor is preferred (then the higher bf16 peak on a tie); any
    vendor otherwise; None when none has that much.
    """
    me = cat.gpu(gpu_id)
    faster = cat.gpus.filter(pl.col("bandwidth_bytes_per_s") >= at_least * me.bandwidth_bytes_per_s).sort(
        "bandwidth_bytes_per_s", "peak_bf16", "id", descending=[False, True, False], nulls_last=True
    )
    same = faster.filter(pl.col("vendor") == me.vendor)
    pick = same if same.height else faster
    return str(pick["id"][0]) if pick.height else None


def levers(cat: Catalogue, scenario: Scenario, result: Ceiling | None = None) -> list[tuple[str, str, Scenario | None]]:
    """The seeds' moves applied one at a time: (lever, what changes, scenario or None when it cannot apply)."""
    r = result if result is not None else ceiling(cat, scenario)
    out: list[tuple[str, str, Scenario | None]] = []

    def add(name: str, note: str, **changes: Any) -> None:
        out.append((name, note, scenario.at(**changes) if changes else None))

    room = r.max_batch
    bigger = min(4 * scenario.batch, room if room is not None else 4 * scenario.batch, 1_000_000)
    if bigger > scenario.batch:
        add("larger batch", f"batch {scenario.batch} → {bigger} (4× or the most that fits)", batch=bigger)
    else:
        add("larger batch", "no room: memory already holds the largest batch at this context")
    w = storage_format(scenario.weights).bytes
    for fmt in ("fp8", "int4"):
        if storage_format(fmt).bytes < w:
            add(f"{fmt} weights", f"weights {scenario.weights} → {fmt} (compute at its default format)", weights=fmt, compute=None)
        else:
            add(f"{fmt} weights", f"weights already {scenario.weights}")
    if storage_format("fp8").bytes < storage_format(scenario.kv).bytes:
        add("fp8 KV cache", f"KV cache {scenario.kv} → fp8", kv="fp8")
    else:
        add("fp8 KV cache", f"KV cache already {scenario.kv}")
    draft = scenario.spec_draft_model or default_draft_model(cat, scenario.model)
    if scenario.uses_speculation:
        add("speculative decoding", "already on")
    elif draft is None:
        add("speculative decoding", "no smaller model of the same family and vocabulary in the catalogue")
    else:
        k, a = SPEC_LEVER
        note = f"draft {cat.model(draft).name}, {k} tokens, acceptance {a:.0%}"
        add("speculative decoding", note, spec_draft_len=k, spec_acceptance=a, spec_draft_model=draft)
    faster = more_bandwidth_accelerator(cat, scenario.gpu)
    if faster is None:
        add("more bandwidth", "no accelerator in the catalogue has 1.25× this bandwidth")
    else:
        mine, theirs = cat.gpu(scenario.gpu), cat.gpu(faster)
        ratio = theirs.bandwidth_bytes_per_s / mine.bandwidth_bytes_per_s
        add("more bandwidth", f"{mine.name} → {theirs.name} ({ratio:.2f}× bandwidth)", gpu=faster)
    domain = cat.gpu(scenario.gpu).scaleup_domain
    if domain is not None and scenario.num_gpus * 2 > domain:
        add("twice the GPUs", f"{scenario.num_gpus * 2} GPUs exceed one scale-up domain ({domain}): replicas add users, not speed")
    elif scenario.num_gpus * 2 <= 1024:
        add("twice the GPUs", f"{scenario.num_gpus} → {scenario.num_gpus * 2} GPUs (tensor parallel)", num_gpus=scenario.num_gpus * 2)
    return out


def what_ifs(cat: Catalogue, scenario: Scenario, result: Ceiling | None = None) -> pl.DataFrame:
    """The current scenario and each lever applied, evaluated as one frame.

    Columns: lever, change (text), the headline figures (HEADLINES), fits,
    bound, and change_<figure> = lever / current (null when either is null).
    Levers that cannot apply keep their row with null figures and say why.
    """
    rows = [("current scenario", "as set", scenario), *levers(cat, scenario, result)]
    applied = [(i, s) for i, (_, _, s) in enumerate(rows) if s is not None]
    results = evaluate(cat, [s for _, s in applied], columns=["scenario_id", *HEADLINES, "fits", "bound"])
    results = results.with_columns(pl.Series("row", [i for i, _ in applied], dtype=pl.Int64)).drop("scenario_id")
    table = pl.DataFrame({"row": list(range(len(rows))), "lever": [r[0] for r in rows], "change": [r[1] for r in rows]}).join(
        results, on="row", how="left"
    )
    base = table.row(0, named=True)
    ratios = [
        (pl.col(c) / base[c]).alias(f"change_{c}") if base[c] else pl.lit(None, dtype=pl.Float64).alias(f"change_{c}") for c in HEADLINES
    ]
    return table.with_columns(ratios).sort("row").drop("row")
