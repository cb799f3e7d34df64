"""The roofline of one inference step, per operation, for a frame of scenarios.

Everything here is a Polars expression chain over frames: a frame of steps
(one row per scenario and step kind) is joined to the models' operation tables
(`core.model_costs`) and the accelerators' figures, each operation gets its
FLOPs, HBM bytes and time bound max(bytes / B, FLOPs / P), and the step is the
sum over operations (kernels run one after another) plus tensor-parallel
communication. No Python loop runs per scenario.

Units: FLOPs and bytes are per step over all GPUs; times in seconds; the
per-GPU time bound divides FLOPs and weight/activation bytes by the GPU count
and KV bytes by how far tensor parallelism can shard the cache.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import polars as pl

from core.precisions import ACTIVATION_BYTES, FALLBACK_CHAIN, FORMATS, PEAK_PRECISIONS

#: Columns a step frame needs (one row per step to evaluate).
STEP_COLUMNS = (
    "step_id",  # unique per row
    "gpu_id",
    "model_id",
    "num_gpus",
    "weights",  # storage format of weights
    "compute",  # requested compute format (peak column)
    "kv",  # storage format of the KV cache
    "batch",  # sequences in the step
    "q",  # new tokens per sequence this step (1 decode, prompt for prefill, k+1 verify)
    "cached",  # tokens already in each sequence's cache
    "prefill",  # bool: prefill kernels (decompressed MLA) and lm_head on the last token
    "eff_bandwidth",
    "eff_compute",
    "flash",  # bool: fused attention (no score matrix in HBM)
)


#: Up to this many rows a query runs on the in-memory engine. Measured on the full
#: catalogue sweep (299,376 scenarios): the streaming engine took about 3x the
#: in-memory engine's time for these plans of many joins and columns, at a peak
#: memory well under 1 GB either way; beyond this size streaming bounds memory.
IN_MEMORY_ROWS = 2_000_000


def collect(lf: pl.LazyFrame, rows: int) -> pl.DataFrame:
    """Collect a plan of `rows` scenarios or steps on the engine that suits its size."""
    return lf.collect(engine="in-memory" if rows <= IN_MEMORY_ROWS else "auto")


def row_hash(exprs: Sequence[pl.Expr | str]) -> pl.Expr:
    """A 64-bit key for the row's values of `exprs`: each hashed with its own seed, XOR-combined.

    Used to deduplicate steps and work (a collision needs two distinct rows to
    agree on 64 random bits). Hashing columns one by one is several times
    quicker than hashing a struct of them (Polars 2: ~8 ms against ~50 ms for
    300k rows of 11 fields).
    """
    out: pl.Expr | None = None
    for seed, e in enumerate(exprs):
        h = (pl.col(e) if isinstance(e, str) else e).hash(seed=seed)
        out = h if out is None else out ^ h
    return out if out is not None else pl.lit(0, dtype=pl.UInt64)


def with_precision_columns(steps: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Bytes per element of weights and KV from the format names (activations: see with_effective_peak)."""
    lf = steps.lazy()
    wb = {k: f.bytes for k, f in FORMATS.items()}
    return lf.with_columns(
        pl.col("weights").replace_strict(wb, return_dtype=pl.Float64).alias("w_bytes"),
        pl.col("kv").replace_strict(wb, return_dtype=pl.Float64).alias("kv_bytes_el"),
    )


def with_effective_peak(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The dense peak that applies: the requested compute format or the nearest wider one.

    Adds `compute_used` (peak column name), `peak_flops` (FLOP/s, datasheet),
    `act_bytes` (bytes per activation element in the format used) and
    `compute_flag` (text, null when the requested format is native).
    """
    used = pl.lit(None, dtype=pl.String)
    for req, chain in FALLBACK_CHAIN.items():
        pick = pl.lit(None, dtype=pl.String)
        for cand in reversed(chain):
            pick = pl.when(pl.col(f"peak_{cand}").is_not_null()).then(pl.lit(cand)).otherwise(pick)
        used = pl.when(pl.col("compute") == req).then(pick).otherwise(used)
    peak = pl.lit(None, dtype=pl.Float64)
    for prec in PEAK_PRECISIONS:
        peak = pl.when(pl.col("compute_used") == prec).then(pl.col(f"peak_{prec}")).otherwise(peak)
    return lf.with_columns(used.alias("compute_used")).with_columns(
        peak.alias("peak_flops"),
        # activations travel in the format the kernels actually compute in
        pl.coalesce("compute_used", "compute").replace_strict(ACTIVATION_BYTES, return_dtype=pl.Float64).alias("act_bytes"),
        pl.when(pl.col("compute_used").is_null())
        .then(pl.format("{} compute unsupported and no wider format listed", pl.col("compute")))
        .when(pl.col("compute_used") != pl.col("compute"))
        .then(pl.format("{} compute not native on this accelerator: computed at the {} peak", pl.col("compute"), pl.col("compute_used")))
        .otherwise(None)
        .alias("compute_flag"),
    )


def windowed_pairs(cached: pl.Expr, q: pl.Expr, window: pl.Expr) -> pl.Expr:
    """(query, key) pairs per sequence when q new tokens follow `cached` ones, causal.

    Token i (1..q) sees min(cached + i, window) keys; window 0 means unlimited.
    Prefill from empty gives q (q + 1) / 2: half of S^2, as the causal mask does.
    """
    a = cached + 1
    c = cached + q
    full = (a + c) * q / 2
    w = window
    capped = pl.when(c <= w).then(full).when(a > w).then(q * w).otherwise((a + w) * (w - a + 1) / 2 + (c - w) * w)
    return pl.when(window > 0).then(capped).otherwise(full)


def visible(tokens: pl.Expr, window: pl.Expr) -> pl.Expr:
    """Tokens a layer holds: all of them, or at most the window."""
    return pl.when(window > 0).then(pl.min_horizontal(tokens, window)).otherwise(tokens)


@functools.cache
def op_work_exprs(only: str | None = None) -> dict[str, pl.Expr]:
    """The work of one operation as expressions: FLOPs and HBM bytes by kind, all GPUs together.

    Over a frame of (step, operation) rows: the operation's columns (kind,
    layers, params, in_dim, out_dim, experts, top_k, heads, kv_elems,
    pair_flops_*, window, kv_replicated, kv_heads) and the step's (batch, q,
    cached, prefill, flash, num_gpus, w_bytes, kv_bytes_el, act_bytes).
    Built once per `only` (expressions are immutable).
    `only="attn"` or `only="other"` says the operation is (or is not)
    attention, so the other kind's formulas are left out (same results).
    Every figure covers all the operation's layers; `kv_shard` is how many
    ways tensor parallelism splits its KV cache. Nothing here depends on the
    accelerator beyond the activation format (act_bytes).
    """
    b = pl.col("batch").cast(pl.Float64)
    q = pl.col("q").cast(pl.Float64)
    t = b * q
    kind = pl.col("kind")
    lm_tokens = pl.when(pl.col("prefill")).then(b).otherwise(t)
    tokens = pl.when(kind == "lm_head").then(lm_tokens).otherwise(t)
    e = pl.col("experts")
    k = pl.col("top_k")
    distinct = e * (1.0 - (1.0 - k / e).pow(t))
    pairs = windowed_pairs(pl.col("cached").cast(pl.Float64), q, pl.col("window"))
    pair_flops = pl.when(pl.col("prefill")).then(pl.col("pair_flops_prefill")).otherwise(pl.col("pair_flops_decode"))
    act = pl.col("act_bytes")
    wb = pl.col("w_bytes")
    in_out = pl.col("in_dim") + pl.col("out_dim")

    attn_flops = b * pairs * pair_flops
    attn_act = t * in_out * act + pl.when(pl.col("flash")).then(0.0).otherwise(4.0 * b * pl.col("heads") * pairs * act)
    kv_el = pl.col("kv_elems") * pl.col("kv_bytes_el")
    attn_kv_read = b * visible(pl.col("cached").cast(pl.Float64) + q, pl.col("window")) * kv_el
    attn_kv_write = t * kv_el
    other_flops = (
        pl.when(kind.is_in(["matmul", "lm_head"]))
        .then(2.0 * tokens * pl.col("params"))
        .when(kind == "moe")
        .then(2.0 * t * k * pl.col("params"))
        .when(kind == "norm")
        .then(4.0 * t * pl.col("in_dim"))
        .otherwise(0.0)
    )
    other_weight = (
        pl.when(kind == "embed")
        .then(pl.min_horizontal(t, pl.col("params") / pl.col("out_dim")) * pl.col("out_dim") * wb)
        .when(kind == "moe")
        .then(distinct * pl.col("params") * wb)
        .otherwise(pl.col("params") * wb)
    )
    other_act = (
        pl.when(kind == "moe")
        .then(t * k * in_out * act)
        .when(kind == "embed")
        .then(t * pl.col("out_dim") * act)
        .when(kind == "norm")
        .then(2.0 * t * pl.col("in_dim") * act)
        .otherwise(tokens * in_out * act)
    )
    n = pl.col("num_gpus").cast(pl.Float64)
    attn_shard = pl.when(pl.col("kv_replicated") == 1).then(1.0).otherwise(pl.min_horizontal(n, pl.col("kv_heads")))
    is_attn = kind == "attn"
    if only == "attn":
        flops, weight, act_total, kv_read, kv_write, shard = (
            attn_flops,
            pl.col("params") * wb,
            attn_act,
            attn_kv_read,
            attn_kv_write,
            attn_shard,
        )
    elif only == "other":
        flops, weight, act_total, kv_read, kv_write, shard = other_flops, other_weight, other_act, pl.lit(0.0), pl.lit(0.0), pl.lit(1.0)
    else:
        flops = pl.when(is_attn).then(attn_flops).otherwise(other_flops)
        weight = pl.when(is_attn).then(pl.col("params") * wb).otherwise(other_weight)
        act_total = pl.when(is_attn).then(attn_act).otherwise(other_act)
        kv_read = pl.when(is_attn).then(attn_kv_read).otherwise(0.0)
        kv_write = pl.when(is_attn).then(attn_kv_write).otherwise(0.0)
        shard = pl.when(is_attn).then(attn_shard).otherwise(1.0)
    layers = pl.col("layers").cast(pl.Float64)
    flops, weight, act_total, kv_read, kv_write = (x * layers for x in (flops, weight, act_total, kv_read, kv_write))
    return {
        "flops": flops,
        "weight_bytes": weight,
        "act_bytes_total": act_total,
        "kv_read_bytes": kv_read,
        "kv_write_bytes": kv_write,
        "kv_shard": shard,
    }


def op_cost_exprs(only: str | None = None) -> dict[str, pl.Expr]:
    """op_work_exprs plus total bytes and the per-GPU memory and compute times."""
    work = op_work_exprs(only)
    weight_act = work["weight_bytes"] + work["act_bytes_total"]
    kv = work["kv_read_bytes"] + work["kv_write_bytes"]
    n = pl.col("num_gpus").cast(pl.Float64)
    return {
        **work,
        "bytes": weight_act + kv,
        "memory_time_s": (weight_act / n + kv / work["kv_shard"]) / _bandwidth(),
        "compute_time_s": work["flops"] / n / _peak(),
    }


def _bandwidth() -> pl.Expr:
    """Bandwidth a step sees: datasheet x efficiency factor (byte/s)."""
    return pl.col("bandwidth_bytes_per_s") * pl.col("eff_bandwidth")


def _peak() -> pl.Expr:
    """Compute peak a step sees: datasheet x efficiency factor (FLOP/s)."""
    return pl.col("peak_flops") * pl.col("eff_compute")


def memory_bound(memory_time: pl.Expr, compute_time: pl.Expr) -> pl.Expr:
    """An operation is memory-bound when its bytes take at least as long as its FLOPs (or no peak times them)."""
    return compute_time.is_null() | (memory_time >= compute_time)


def operation_costs(steps: pl.LazyFrame, ops: pl.LazyFrame, *, only: str | None = None) -> pl.LazyFrame:
    """One row per (step, operation): FLOPs, bytes by kind, per-GPU times, bound side.

    `steps` carries STEP_COLUMNS plus w_bytes, kv_bytes_el, act_bytes,
    peak_flops and bandwidth_bytes_per_s (from the accelerator join);
    `only` as in op_cost_exprs.
    """
    exprs = op_cost_exprs(only)
    return (
        steps.join(ops, on="model_id", how="inner")
        .with_columns(**exprs)
        .with_columns(
            pl.max_horizontal("memory_time_s", "compute_time_s").alias("time_s"),
            pl.when(memory_bound(pl.col("memory_time_s"), pl.col("compute_time_s")))
            .then(pl.lit("memory"))
            .otherwise(pl.lit("compute"))
            .alias("bound"),
            pl.when(pl.col("bytes") > 0).then(pl.col("flops") / pl.col("bytes")).otherwise(None).alias("intensity"),
        )
    )


#: Step columns that set an operation's work (op_work_exprs); the rest of a step sets its times.
WORK_INPUTS = ("model_id", "batch", "q", "cached", "prefill", "flash", "w_bytes", "kv_bytes_el", "act_bytes")
#: Of those, the ones attention ignores leave the other operations' work unchanged too: the
#: other operations depend on neither the cache (cached, kv format) nor fusion.
OTHER_WORK_INPUTS = ("model_id", "batch", "q", "prefill", "w_bytes", "act_bytes")
#: Step columns that turn work into time.
TIMING_INPUTS = ("num_gpus", "peak_flops", "bandwidth_bytes_per_s", "eff_bandwidth", "eff_compute")

#: The sums step_sums adds to each step (the same as operation_sums).
SUM_COLUMNS = (
    "flops",
    "bytes",
    "weight_bytes",
    "activation_bytes",
    "kv_read_bytes",
    "kv_write_bytes",
    "ops_time_s",
    "memory_bound_time_s",
    "compute_bound_time_s",
    "weights_kv_time_s",
    "flops_time_s",
)


def step_sums(steps: pl.LazyFrame, attn_ops: pl.DataFrame, other_ops: pl.DataFrame) -> pl.LazyFrame:
    """operation_sums(operation_costs(steps, ops)) for many steps, without one row per (step, operation).

    The result is the same sum of max(bytes / B, FLOPs / P) over operations,
    organised around what repeats in a sweep:
    - an operation's work (FLOPs, bytes) depends on the model, formats and
      token counts only, so it is computed once per distinct work key;
    - the operations other than attention (no KV cache: the same per-GPU
      divisor for bytes and FLOPs) are memory-bound exactly when their
      intensity is at most the step's ridge P / B. Sorted by intensity with
      running sums, one as-of join at the ridge gives the bytes of the
      memory-bound ones and the FLOPs of the compute-bound ones;
    - attention (at most a few rows per model, with its own KV sharding) is
      spread into one column set per attention operation and timed per step.
    `steps` carries step_id plus the columns of op_cost_exprs; the result
    keeps their order.
    """
    n = pl.col("num_gpus").cast(pl.Float64)
    timing_key = ("_other_work", *TIMING_INPUTS)
    # evaluated once here: every branch below starts from the distinct keys of these rows
    frame = (
        steps.with_columns(
            row_hash(OTHER_WORK_INPUTS).alias("_other_work"),
            row_hash(WORK_INPUTS).alias("_attn_work"),
        )
        .with_columns(row_hash(timing_key).alias("_timing"))
        .collect(engine="in-memory")
    )
    lazy = frame.lazy()
    other = _other_op_sums(lazy.select("_timing", *timing_key).unique("_timing"), lazy, other_ops.lazy())
    attn, slots = _attn_work_slots(lazy.select("_attn_work", *WORK_INPUTS).unique("_attn_work"), attn_ops)

    mem: list[pl.Expr] = []
    comp: list[pl.Expr] = []
    for j in range(slots):
        shard = pl.when(pl.col(f"kv_replicated@{j}") == 1).then(1.0).otherwise(pl.min_horizontal(n, pl.col(f"kv_heads@{j}")))
        mem.append((pl.col(f"wa@{j}") / n + pl.col(f"kv@{j}") / shard) / _bandwidth())
        comp.append(pl.col(f"f@{j}") / n / _peak())
    stage = [x.alias(f"{name}@{j}") for j in range(slots) for name, x in (("mem", mem[j]), ("comp", comp[j]))]

    def total(name: str) -> pl.Expr:
        return pl.sum_horizontal([pl.col(f"{name}@{j}") for j in range(slots)]) if slots else pl.lit(0.0)

    def bound_total(memory: bool) -> pl.Expr:
        parts = []
        for j in range(slots):
            is_mem = memory_bound(pl.col(f"mem@{j}"), pl.col(f"comp@{j}"))
            time = pl.max_horizontal(pl.col(f"mem@{j}"), pl.col(f"comp@{j}"))
            parts.append(pl.when(is_mem).then(time).otherwise(0.0) if memory else pl.when(is_mem).then(0.0).otherwise(time))
        return pl.sum_horizontal(parts) if slots else pl.lit(0.0)

    def both(name: str) -> pl.Expr:
        return pl.col(f"a_{name}").fill_null(0.0) + pl.col(f"o_{name}").fill_null(0.0)

    return (
        frame.lazy()
        .join(attn, on="_attn_work", how="left", maintain_order="left")
        .join(other, on="_timing", how="left", maintain_order="left")
        .with_columns(stage)
        .with_columns(
            both("flops").alias("flops"),
            both("bytes").alias("bytes"),
            both("weight_bytes").alias("weight_bytes"),
            both("activation_bytes").alias("activation_bytes"),
            pl.col("a_kv_read_bytes").fill_null(0.0).alias("kv_read_bytes"),
            pl.col("a_kv_write_bytes").fill_null(0.0).alias("kv_write_bytes"),
            (bound_total(True) + bound_total(False) + pl.col("o_ops_time_s").fill_null(0.0)).alias("ops_time_s"),
            (bound_total(True) + pl.col("o_memory_bound_time_s").fill_null(0.0)).alias("memory_bound_time_s"),
            (bound_total(False) + pl.col("o_compute_bound_time_s").fill_null(0.0)).alias("compute_bound_time_s"),
            (total("mem") + pl.col("o_weights_kv_time_s").fill_null(0.0)).alias("weights_kv_time_s"),
            (total("comp") + pl.col("o_flops_time_s").fill_null(0.0)).alias("flops_time_s"),
        )
        .select(pl.exclude("^(_|a_|o_).*$", "^.*@[0-9]+$"))
    )


def _other_op_sums(timing: pl.LazyFrame, frame: pl.LazyFrame, other_ops: pl.LazyFrame) -> pl.LazyFrame:
    """Sums over the operations other than attention, per distinct `_timing` key (see step_sums)."""
    n = pl.col("num_gpus").cast(pl.Float64)
    work = op_work_exprs("other")
    per_op = (
        frame.select("_other_work", *OTHER_WORK_INPUTS)
        .unique("_other_work")
        .join(other_ops, on="model_id", how="inner")
        .select(
            "_other_work",
            work["flops"].alias("f"),
            (work["weight_bytes"] + work["act_bytes_total"]).alias("m"),
            work["weight_bytes"].alias("weight_bytes"),
            work["act_bytes_total"].alias("act_bytes_total"),
        )
        .with_columns(pl.when(pl.col("m") > 0).then(pl.col("f") / pl.col("m")).otherwise(float("inf")).alias("_intensity"))
        .sort("_other_work", "_intensity")
        .collect(engine="in-memory")  # read twice below (totals, running sums): evaluated once
        .lazy()
    )
    totals = per_op.group_by("_other_work").agg(
        pl.col("f").sum().alias("_f_total"),
        pl.col("m").sum().alias("_m_total"),
        pl.col("weight_bytes").sum().alias("_w_total"),
        pl.col("act_bytes_total").sum().alias("_a_total"),
    )
    # operation i is memory-bound when its intensity <= ridge: bytes up to i, FLOPs after i
    running = per_op.select(
        "_other_work",
        "_intensity",
        pl.col("m").cum_sum().over("_other_work").alias("_m_upto"),
        pl.col("f").cum_sum(reverse=True).shift(-1, fill_value=0.0).over("_other_work").alias("_f_after"),
    )
    timed = timing.with_columns((_peak() / _bandwidth()).alias("_ridge")).join(totals, on="_other_work", how="left")
    matched = (
        timed.filter(pl.col("_ridge").is_not_null())
        .sort("_other_work", "_ridge")
        .join_asof(running, left_on="_ridge", right_on="_intensity", by="_other_work", strategy="backward", check_sortedness=False)
        .drop("_intensity")
    )
    # no peak to time FLOPs with: every operation is timed by its bytes
    uncosted = timed.filter(pl.col("_ridge").is_null()).with_columns(pl.col("_m_total").alias("_m_upto"), pl.lit(0.0).alias("_f_after"))
    mem_bound = pl.col("_m_upto").fill_null(0.0) / n / _bandwidth()
    comp_bound = (pl.col("_f_after").fill_null(pl.col("_f_total")) / n / _peak()).fill_null(0.0)
    return pl.concat([matched, uncosted], how="diagonal_relaxed").select(
        "_timing",
        pl.col("_f_total").alias("o_flops"),
        pl.col("_m_total").alias("o_bytes"),
        pl.col("_w_total").alias("o_weight_bytes"),
        pl.col("_a_total").alias("o_activation_bytes"),
        (mem_bound + comp_bound).alias("o_ops_time_s"),
        mem_bound.alias("o_memory_bound_time_s"),
        comp_bound.alias("o_compute_bound_time_s"),
        (pl.col("_m_total") / n / _bandwidth()).alias("o_weights_kv_time_s"),
        (pl.col("_f_total") / n / _peak()).alias("o_flops_time_s"),
    )


def _attn_work_slots(keys: pl.LazyFrame, attn_ops: pl.DataFrame) -> tuple[pl.LazyFrame, int]:
    """Per distinct `_attn_work` key: attention sums, and FLOPs/bytes of attention operation j as `name@j`.

    The slot count is the most attention operations any model has; slots a
    model does not use are null.
    """
    work = op_work_exprs("attn")
    slotted = attn_ops.with_columns(pl.int_range(pl.len()).over("model_id").alias("_slot"))
    slots = int(slotted["_slot"].max() or 0) + 1 if slotted.height else 0  # type: ignore[arg-type]
    per_op = keys.join(slotted.lazy(), on="model_id", how="inner").select(
        "_attn_work",
        "_slot",
        "kv_replicated",
        "kv_heads",
        work["flops"].alias("f"),
        (work["weight_bytes"] + work["act_bytes_total"]).alias("wa"),
        (work["kv_read_bytes"] + work["kv_write_bytes"]).alias("kv"),
        *[work[c].alias(c) for c in ("weight_bytes", "act_bytes_total", "kv_read_bytes", "kv_write_bytes")],
    )
    wide = per_op.group_by("_attn_work").agg(
        pl.col("f").sum().alias("a_flops"),
        (pl.col("wa") + pl.col("kv")).sum().alias("a_bytes"),
        pl.col("weight_bytes").sum().alias("a_weight_bytes"),
        pl.col("act_bytes_total").sum().alias("a_activation_bytes"),
        pl.col("kv_read_bytes").sum().alias("a_kv_read_bytes"),
        pl.col("kv_write_bytes").sum().alias("a_kv_write_bytes"),
    )
    for j in range(slots):
        part = per_op.filter(pl.col("_slot") == j).select(
            "_attn_work", *[pl.col(c).alias(f"{c}@{j}") for c in ("f", "wa", "kv", "kv_replicated", "kv_heads")]
        )
        wide = wide.join(part, on="_attn_work", how="left")
    return wide, slots


def operation_sums(op_costs: pl.LazyFrame) -> pl.LazyFrame:
    """Per step_id: sums over its operations (FLOPs, bytes by kind, times by bound side)."""
    is_mem = pl.col("bound") == "memory"
    return op_costs.group_by("step_id").agg(
        pl.col("flops").sum(),
        pl.col("bytes").sum(),
        pl.col("weight_bytes").sum(),
        pl.col("act_bytes_total").sum().alias("activation_bytes"),
        pl.col("kv_read_bytes").sum(),
        pl.col("kv_write_bytes").sum(),
        pl.col("time_s").sum().alias("ops_time_s"),
        pl.col("time_s").filter(is_mem).sum().alias("memory_bound_time_s"),
        pl.col("time_s").filter(~is_mem).sum().alias("compute_bound_time_s"),
        # the time a pure-bandwidth (or pure-compute) view would give
        pl.col("memory_time_s").sum().alias("weights_kv_time_s"),
        pl.col("compute_time_s").sum().alias("flops_time_s"),
    )


def step_totals(steps: pl.LazyFrame) -> pl.LazyFrame:
    """Step time from the operation sums (operation_sums) plus tensor-parallel all-reduces.

    Communication: two all-reduces per layer of batch x q x hidden activations,
    each moving 2 (n - 1) / n of the message over the scale-up link in one
    direction (half the bidirectional figure vendors quote).
    """
    n = pl.col("num_gpus").cast(pl.Float64)
    msg = pl.col("batch") * pl.col("q") * pl.col("hidden_size") * pl.col("act_bytes")
    link = pl.col("scaleup_bytes_per_s") / 2.0
    comm = pl.when(n > 1).then(2.0 * pl.col("num_layers") * 2.0 * (n - 1.0) / n * msg / link).otherwise(0.0)
    return (
        steps.with_columns(comm.fill_null(0.0).alias("comm_time_s"))
        .with_columns(
            (pl.col("ops_time_s") + pl.col("comm_time_s") + pl.col("overhead_s")).alias("step_time_s"),
            (pl.col("flops") / pl.col("bytes")).alias("intensity"),
            pl.when((n > 1) & pl.col("scaleup_bytes_per_s").is_null())
            .then(pl.lit("no scale-up link figure: tensor-parallel communication not costed"))
            .otherwise(None)
            .alias("comm_flag"),
        )
        .with_columns(
            pl.when((pl.col("comm_time_s") > pl.col("memory_bound_time_s")) & (pl.col("comm_time_s") > pl.col("compute_bound_time_s")))
            .then(pl.lit("communication"))
            .when(pl.col("memory_bound_time_s") >= pl.col("compute_bound_time_s"))
            .then(pl.lit("memory"))
            .otherwise(pl.lit("compute"))
            .alias("bound")
        )
    )
