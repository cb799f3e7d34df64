"""Planning one deployment: step-time breakdown, memory use, the throughput-latency frontier, what-ifs.

Every function takes the catalogue and a `Scenario` (or the scenario's
ceilings record from `core.ceilings.ceiling`) and returns plain values or a
Polars frame; the ceiling calculator page only renders them. Scenarios that
differ in one value (the frontier's batches, the what-if levers) are
evaluated together as one frame by `core.ceilings.evaluate`.

Units: seconds, bytes, tokens/s; `change_*` columns are ratios new / current.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from core.catalogue import Catalogue
from core.ceilings import _steps_with_hardware, ceiling, evaluate, scenario_frame, single_step
from core.perfmodel import operation_costs
from core.precisions import storage_format
from core.specs import Scenario

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


def uses_speculation(scenario: Scenario) -> bool:
    """True when the scenario decodes speculatively (a draft length and a draft model)."""
    return scenario.spec_draft_len > 0 and scenario.spec_draft_model is not None


def step_breakdown(cat: Catalogue, scenario: Scenario, result: dict[str, Any] | None = None) -> pl.DataFrame:
    """The time of one decode cycle split by what it waits for.

    Each operation of the target's decode step (k + 1 tokens per sequence
    when speculative) is bounded by memory or compute: a memory-bound
    operation's time is split into reading weights, KV cache and activations
    in proportion to the bytes each GPU moves; a compute-bound one counts as
    compute. Tensor-parallel communication, the k draft steps and the stated
    overhead are added. Rows: component, time_s, share; the times sum to the
    cycle time (`cycle_time_s` of the ceilings record).
    """
    r = result if result is not None else ceiling(cat, scenario)
    s = scenario_frame([scenario]).row(0, named=True)
    spec = uses_speculation(scenario)
    step = single_step(s, batch=s["batch"], q=s["spec_draft_len"] + 1 if spec else 1, cached=s["context"], prefill=False)
    costs = operation_costs(_steps_with_hardware(cat, step), cat.ops.lazy())
    n = pl.col("num_gpus").cast(pl.Float64)
    bw = pl.col("bandwidth_bytes_per_s") * pl.col("eff_bandwidth")
    mem = pl.col("bound") == "memory"
    sums = (
        costs.select(
            pl.when(mem).then(pl.col("weight_bytes") / n / bw).otherwise(0.0).sum().alias("weights"),
            pl.when(mem)
            .then((pl.col("kv_read_bytes") + pl.col("kv_write_bytes")) / pl.col("kv_shard") / bw)
            .otherwise(0.0)
            .sum()
            .alias("KV cache"),
            pl.when(mem).then(pl.col("act_bytes_total") / n / bw).otherwise(0.0).sum().alias("activations"),
            pl.when(mem).then(0.0).otherwise(pl.col("time_s")).sum().alias("compute"),
        )
        .collect()
        .row(0, named=True)
    )
    draft = scenario.spec_draft_len * (r["draft_step_time_s"] or 0.0) if spec else 0.0
    times = {**sums, "communication": r["decode_comm_time_s"] or 0.0, "draft model": draft, "overhead": scenario.overhead_s}
    total = sum(times.values())
    return pl.DataFrame(
        {
            "component": list(COMPONENTS),
            "time_s": [float(times[c]) for c in COMPONENTS],
            "share": [float(times[c]) / total if total > 0 else 0.0 for c in COMPONENTS],
        }
    )


def memory_use(result: dict[str, Any]) -> pl.DataFrame:
    """Memory held across all GPUs: weights (draft included), KV cache, reserve, and what is left free.

    Rows: segment, bytes; plus capacity_bytes on every row. When the scenario
    does not fit, `free` is 0 and the other segments add up past capacity.
    """
    weights = float(result["weight_memory_bytes"])
    kv = float(result["kv_memory_bytes"])
    reserve = float(result["reserve_bytes"])
    capacity = float(result["capacity_bytes"])
    free = max(0.0, capacity - weights - kv - reserve)
    return pl.DataFrame(
        {"segment": list(MEMORY_SEGMENTS), "bytes": [weights, kv, reserve, free], "capacity_bytes": [capacity] * len(MEMORY_SEGMENTS)}
    )


def ridge_batch(scenario: Scenario, result: dict[str, Any]) -> int | None:
    """The decode batch at which the weight matmuls reach the (derated) ridge.

    Decode matmul intensity ~ 2 x batch x tokens per sequence per step / bytes
    per weight, so the batch is ceil(ridge x bytes / (2 q)); None when the
    accelerator has no usable peak.
    """
    ridge = result.get("ridge")
    if ridge is None:
        return None
    derated = float(ridge) * scenario.eff_compute / scenario.eff_bandwidth
    q = scenario.spec_draft_len + 1 if uses_speculation(scenario) else 1
    return max(1, math.ceil(derated * storage_format(scenario.weights).bytes / (2.0 * q)))


def frontier(
    cat: Catalogue, scenario: Scenario, batches: Sequence[int] = FRONTIER_BATCHES, result: dict[str, Any] | None = None
) -> pl.DataFrame:
    """Tokens/s per user against tokens/s in total over decode batches, one evaluation.

    The batches are `batches` plus the current batch, the ridge batch and the
    largest batch that fits (when inside the range). One row per batch with
    fits, bound, is_current, is_ridge and is_cut (the largest batch that
    fits); rows that do not fit carry null throughput (the chart cuts them).
    """
    base = result if result is not None else ceiling(cat, scenario)
    rb = ridge_batch(scenario, base)
    lo, hi = min(batches), max(batches)
    extra = [scenario.batch] + [b for b in (rb, base["max_batch"]) if b is not None and lo <= b <= hi]
    all_batches = sorted({int(b) for b in (*batches, *extra)})
    frame = (
        scenario_frame([scenario])
        .drop("batch", "scenario_id")
        .join(pl.DataFrame({"batch": all_batches}, schema={"batch": pl.Int64}), how="cross")
    )
    out = evaluate(cat, frame, columns=["batch", "tokens_per_s_per_user", "tokens_per_s_total", "time_per_output_token_s", "bound", "fits"])
    return out.with_columns(
        (pl.col("batch") == scenario.batch).alias("is_current"),
        (pl.col("batch") == (rb if rb is not None else -1)).alias("is_ridge"),
        (pl.col("batch") == (base["max_batch"] if base["max_batch"] is not None else -1)).alias("is_cut"),
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
    gpus = cat.gpus
    me = cat.gpu(gpu_id)
    faster = gpus.filter(pl.col("bandwidth_bytes_per_s") >= at_least * me["bandwidth_bytes_per_s"]).sort(
        "bandwidth_bytes_per_s", "peak_bf16", "id", descending=[False, True, False], nulls_last=True
    )
    same = faster.filter(pl.col("vendor") == me["vendor"])
    pick = same if same.height else faster
    return str(pick["id"][0]) if pick.height else None


def levers(cat: Catalogue, scenario: Scenario) -> list[tuple[str, str, Scenario | None]]:
    """The seeds' moves applied one at a time: (lever, what changes, scenario or None when it cannot apply)."""
    base = scenario.model_dump()
    r = ceiling(cat, scenario)
    out: list[tuple[str, str, Scenario | None]] = []

    def add(name: str, note: str, **changes: Any) -> None:
        out.append((name, note, Scenario(**{**base, **changes}) if changes else None))

    room = r["max_batch"]
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
    if uses_speculation(scenario):
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
        ratio = cat.gpu(faster)["bandwidth_bytes_per_s"] / cat.gpu(scenario.gpu)["bandwidth_bytes_per_s"]
        add("more bandwidth", f"{cat.gpu(scenario.gpu)['name']} → {cat.gpu(faster)['name']} ({ratio:.2f}× bandwidth)", gpu=faster)
    if scenario.num_gpus * 2 <= 1024:
        add("twice the GPUs", f"{scenario.num_gpus} → {scenario.num_gpus * 2} GPUs (tensor parallel)", num_gpus=scenario.num_gpus * 2)
    return out


def what_ifs(cat: Catalogue, scenario: Scenario) -> pl.DataFrame:
    """The current scenario and each lever applied, evaluated as one frame.

    Columns: lever, change (text), the headline figures (HEADLINES), fits,
    bound, and change_<figure> = lever / current (null when either is null).
    Levers that cannot apply keep their row with null figures and say why.
    """
    rows = [("current scenario", "as set", scenario), *levers(cat, scenario)]
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


def frontier_reading(cat: Catalogue, scenario: Scenario, front: pl.DataFrame, result: dict[str, Any] | None = None) -> str:
    """One sentence on where the frontier ends: the memory cut, and the ridge batch against it.

    `result` is the scenario's ceiling() when the caller has it already.
    """
    r = result if result is not None else ceiling(cat, scenario)
    rb = ridge_batch(scenario, r)
    fitting = front.filter(pl.col("fits"))
    if fitting.is_empty():
        return "Nothing fits: the weights and one sequence's KV cache exceed the usable memory at every batch. Add GPUs or quantise."
    cut = r["max_batch"]
    parts_now = [] if r["fits"] else [f"The current batch ({scenario.batch:,}) does not fit."]
    best = fitting.sort("tokens_per_s_total", descending=True).row(0, named=True)
    parts = parts_now + [
        f"The most throughput on this frontier is {best['tokens_per_s_total']:,.0f} tokens/s in total at batch {best['batch']:,}."
    ]
    if cut is not None:
        parts.append(f"Memory holds at most {cut:,} sequences at this context.")
    if rb is None:
        return " ".join(parts)
    if cut is not None and rb > cut:
        parts.append(
            f"The decode matmuls would reach the ridge at batch {rb:,}, beyond the memory cut: memory, not compute, ends the free lunch."
        )
    else:
        parts.append(f"The decode matmuls reach the ridge at batch {rb:,}; past it a larger batch mostly adds latency.")
    return " ".join(parts)


def what_if_display(table: pl.DataFrame) -> pl.DataFrame:
    """The what-if table (what_ifs) in reading units: ms, tokens/s, and × the current figure."""
    return table.select(
        "lever",
        "change",
        pl.col("tokens_per_s_per_user").alias("tokens/s per user"),
        pl.col("change_tokens_per_s_per_user").alias("× per user"),
        pl.col("tokens_per_s_total").alias("tokens/s total"),
        pl.col("change_tokens_per_s_total").alias("× total"),
        (pl.col("time_per_output_token_s") * 1e3).alias("time per output token (ms)"),
        pl.col("change_time_per_output_token_s").alias("× time per token"),
        (pl.col("ttft_s") * 1e3).alias("time to first token (ms)"),
        pl.col("change_ttft_s").alias("× TTFT"),
        "fits",
        "bound",
    )
