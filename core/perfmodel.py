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


#: Below this many rows a query runs on the in-memory engine: for a handful of
#: scenarios planning dominates and the streaming engine's start-up costs more.
SMALL_QUERY_ROWS = 20_000


def collect(lf: pl.LazyFrame, rows: int) -> pl.DataFrame:
    """Collect a plan, on the in-memory engine when it is small (`rows` scenarios or steps)."""
    return lf.collect(engine="in-memory" if rows < SMALL_QUERY_ROWS else "auto")


def peak_columns() -> list[str]:
    """The accelerator frame's dense-peak columns, `peak_<precision>` in FLOP/s."""
    return [f"peak_{p}" for p in PEAK_PRECISIONS]


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


def operation_costs(steps: pl.LazyFrame, ops: pl.LazyFrame, *, only: str | None = None) -> pl.LazyFrame:
    """One row per (step, operation): FLOPs, bytes by kind, per-GPU times, bound side.

    `steps` carries STEP_COLUMNS plus w_bytes, kv_bytes_el, act_bytes,
    peak_flops and bandwidth_bytes_per_s (from the accelerator join).
    `only="attn"` or `only="other"` says `ops` holds only attention rows or
    none, so the other kind's formulas are not evaluated (same results).
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

    flops = (
        pl.when(kind.is_in(["matmul", "lm_head"]))
        .then(2.0 * tokens * pl.col("params"))
        .when(kind == "moe")
        .then(2.0 * t * k * pl.col("params"))
        .when(kind == "attn")
        .then(b * pairs * pair_flops)
        .when(kind == "norm")
        .then(4.0 * t * pl.col("in_dim"))
        .otherwise(0.0)
    )
    weight_bytes = (
        pl.when(kind == "embed")
        .then(pl.min_horizontal(t, pl.col("params") / pl.col("out_dim")) * pl.col("out_dim") * pl.col("w_bytes"))
        .when(kind == "moe")
        .then(distinct * pl.col("params") * pl.col("w_bytes"))
        .otherwise(pl.col("params") * pl.col("w_bytes"))
    )
    act_bytes = (
        pl.when(kind == "moe")
        .then(t * k * (pl.col("in_dim") + pl.col("out_dim")) * act)
        .when(kind == "embed")
        .then(t * pl.col("out_dim") * act)
        .when(kind == "norm")
        .then(2.0 * t * pl.col("in_dim") * act)
        .when(kind == "attn")
        .then(
            t * (pl.col("in_dim") + pl.col("out_dim")) * act
            + pl.when(pl.col("flash")).then(0.0).otherwise(4.0 * b * pl.col("heads") * pairs * act)
        )
        .otherwise(tokens * (pl.col("in_dim") + pl.col("out_dim")) * act)
    )
    kv_el = pl.col("kv_elems") * pl.col("kv_bytes_el")
    attn_kv_read = b * visible(pl.col("cached").cast(pl.Float64) + q, pl.col("window")) * kv_el
    kv_read = pl.when(kind == "attn").then(attn_kv_read).otherwise(0.0)
    kv_write = pl.when(kind == "attn").then(t * kv_el).otherwise(0.0)
    if only == "attn":
        flops = b * pairs * pair_flops
        weight_bytes = pl.col("params") * pl.col("w_bytes")
        act_bytes = t * (pl.col("in_dim") + pl.col("out_dim")) * act + pl.when(pl.col("flash")).then(0.0).otherwise(
            4.0 * b * pl.col("heads") * pairs * act
        )
        kv_read, kv_write = attn_kv_read, t * kv_el
    elif only == "other":
        flops = (
            pl.when(kind.is_in(["matmul", "lm_head"]))
            .then(2.0 * tokens * pl.col("params"))
            .when(kind == "moe")
            .then(2.0 * t * k * pl.col("params"))
            .when(kind == "norm")
            .then(4.0 * t * pl.col("in_dim"))
            .otherwise(0.0)
        )
        kv_read = kv_write = pl.lit(0.0)

    n = pl.col("num_gpus").cast(pl.Float64)
    kv_shard = pl.when(pl.col("kv_replicated") == 1).then(1.0).otherwise(pl.min_horizontal(n, pl.col("kv_heads")))
    layers = pl.col("layers").cast(pl.Float64)
    bw = pl.col("bandwidth_bytes_per_s") * pl.col("eff_bandwidth")
    peak = pl.col("peak_flops") * pl.col("eff_compute")

    return (
        steps.join(ops, on="model_id", how="inner")
        .with_columns(
            (flops * layers).alias("flops"),
            (weight_bytes * layers).alias("weight_bytes"),
            (act_bytes * layers).alias("act_bytes_total"),
            (kv_read * layers).alias("kv_read_bytes"),
            (kv_write * layers).alias("kv_write_bytes"),
            (
                kv_shard if only == "attn" else pl.lit(1.0) if only == "other" else pl.when(kind == "attn").then(kv_shard).otherwise(1.0)
            ).alias("kv_shard"),
        )
        .with_columns(
            (pl.col("weight_bytes") + pl.col("act_bytes_total") + pl.col("kv_read_bytes") + pl.col("kv_write_bytes")).alias("bytes"),
            (
                (
                    (pl.col("weight_bytes") + pl.col("act_bytes_total")) / n
                    + (pl.col("kv_read_bytes") + pl.col("kv_write_bytes")) / pl.col("kv_shard")
                )
                / bw
            ).alias("memory_time_s"),
            (pl.col("flops") / n / peak).alias("compute_time_s"),
        )
        .with_columns(
            pl.max_horizontal("memory_time_s", "compute_time_s").alias("time_s"),
            pl.when(pl.col("memory_time_s") >= pl.col("compute_time_s")).then(pl.lit("memory")).otherwise(pl.lit("compute")).alias("bound"),
            pl.when(pl.col("bytes") > 0).then(pl.col("flops") / pl.col("bytes")).otherwise(None).alias("intensity"),
        )
    )


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
