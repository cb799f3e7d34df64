"""Ceilings of a scenario: step time, tokens/s, TTFT, memory fit, cost.

`evaluate(catalogue, scenarios)` takes a frame of scenarios (or a list of
`Scenario` records) and returns one row per scenario; every figure is computed
by one Polars chain over all of them (see `core.perfmodel`). The steps a
scenario needs (decode or speculative verify, the draft model's decode, one
prompt's prefill) are deduplicated first, so a sweep evaluates each distinct
step once.

Rules stated once:
- decode step: batch sequences, one new token each (k + 1 under speculative
  decoding), attending to `context` cached tokens.
- time to first token: the prefill of one prompt of `prompt` tokens on the
  same GPUs (the lm_head runs on the last token only).
- memory fit: weights (+ draft weights) + KV(batch, context) must fit in
  num_gpus x memory x (1 - reserve_fraction). A scenario that does not fit
  gets no throughput (null) and the flag "does not fit".
- speculative decoding: draft length k, acceptance a: expected tokens per
  verify step (1 - a^(k+1)) / (1 - a); one cycle = k draft decode steps +
  one target step over k + 1 tokens per sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from core.catalogue import Catalogue, UnknownIdError
from core.perfmodel import TIMING_INPUTS, WORK_INPUTS, collect, operation_costs, row_hash, step_sums, step_totals, with_precision_columns
from core.precisions import FORMATS, default_compute
from core.specs import Scenario

SCENARIO_DEFAULTS: dict[str, Any] = {
    name: field.default for name, field in Scenario.model_fields.items() if field.default is not None or name == "compute"
}


def scenario_frame(scenarios: Sequence[Scenario] | pl.DataFrame) -> pl.DataFrame:
    """Normalise scenarios into a frame with every Scenario column and a scenario_id."""
    if not isinstance(scenarios, pl.DataFrame):
        # records: every field is present; resolve the compute default in Python (one query less)
        rows = [{**s.model_dump(), "compute": s.compute or default_compute(s.weights)} for s in scenarios]
        schema = {"spec_draft_model": pl.String, "compute": pl.String}
        return pl.DataFrame(rows, schema_overrides=schema).with_row_index("scenario_id")
    frame = scenarios
    missing = [pl.lit(v).alias(n) for n, v in SCENARIO_DEFAULTS.items() if n not in frame.columns]
    if "spec_draft_model" not in frame.columns:
        missing.append(pl.lit(None, dtype=pl.String).alias("spec_draft_model"))
    defaults = {w: default_compute(w) for w in FORMATS}
    frame = frame.with_columns(*missing).with_columns(
        pl.coalesce(pl.col("compute").cast(pl.String), pl.col("weights").replace_strict(defaults, return_dtype=pl.String)).alias("compute"),
        pl.col("spec_draft_model").cast(pl.String),
    )
    if "scenario_id" not in frame.columns:
        frame = frame.with_row_index("scenario_id")
    return frame


def evaluate(cat: Catalogue, scenarios: Sequence[Scenario] | pl.DataFrame, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """One row per scenario: step time, tokens/s, TTFT, bytes, intensity, fit, cost, flags.

    One lazy plan: `columns` (default all) lets Polars skip what is not asked for.
    """
    scen = scenario_frame(scenarios)
    _check_ids(cat, scen)
    rows = scen.height
    spec = (pl.col("spec_draft_len") > 0) & pl.col("spec_draft_model").is_not_null()
    roles = {
        "decode": _step_fields(
            pl.col("model"), pl.col("batch"), pl.when(spec).then(pl.col("spec_draft_len") + 1).otherwise(1), pl.col("context"), False
        ),
        "prefill": _step_fields(pl.col("model"), pl.lit(1), pl.col("prompt"), pl.lit(0), True),
        "draft": _step_fields(pl.col("spec_draft_model"), pl.col("batch"), pl.lit(1), pl.col("context"), False),
    }
    # decode steps are one per scenario, in scenario order; prefill and draft steps repeat
    # across a sweep, so each distinct one is evaluated once (keyed by a hash of its key)
    drafts = bool(scen.select(spec.any()).item())
    keyed = scen.with_columns(
        row_hash(roles["prefill"]).alias("prefill_step_id"),
        (row_hash(roles["draft"]) if drafts else pl.lit(None, dtype=pl.UInt64)).alias("draft_step_id"),
    )
    decode_steps = scen.select(pl.col("scenario_id").cast(pl.UInt64).alias("step_id"), *roles["decode"])
    shared_steps = pl.concat(
        [
            keyed.filter(spec if role == "draft" else pl.lit(True)).select(pl.col(f"{role}_step_id").alias("step_id"), *roles[role])
            for role in (("prefill", "draft") if drafts else ("prefill",))
        ]
    ).unique("step_id", maintain_order=True)
    step_cols = [
        "step_time_s",
        "flops",
        "bytes",
        "weight_bytes",
        "kv_read_bytes",
        "kv_write_bytes",
        "activation_bytes",
        "comm_time_s",
        "memory_bound_time_s",
        "compute_bound_time_s",
        "intensity",
        "bound",
        "peak_flops",
        "comm_flag",
        "bandwidth_bytes_per_s",
    ]
    # one evaluation for every step: decode steps first (in scenario order), then the shared ones
    steps = pl.concat([decode_steps, shared_steps])
    results = collect(step_results(cat, steps), steps.height)
    if not results["step_id"].equals(steps["step_id"]):  # step_results keeps the order; never trust it silently
        results = steps.select("step_id").join(results, on="step_id", how="left", maintain_order="left")
    decode, shared = results.head(rows), results.tail(shared_steps.height).lazy()
    lf = pl.concat([keyed, decode.select([pl.col(c).alias(f"decode_{c}") for c in step_cols])], how="horizontal").lazy()
    for role, cols in {"prefill": ["step_time_s", "flops", "bytes", "intensity", "bound"], "draft": ["step_time_s"]}.items():
        if role == "draft" and not drafts:
            lf = lf.with_columns(pl.lit(None, dtype=pl.Float64).alias("draft_step_time_s"))
            continue
        lf = lf.join(
            shared.select(pl.col("step_id").alias(f"{role}_step_id"), *[pl.col(c).alias(f"{role}_{c}") for c in cols]),
            on=f"{role}_step_id",
            how="left",
            maintain_order="left",
        )
    # what the accelerator and the compute format decide, joined once on a hash of the pair
    gpu_side = cat.compute_pairs.join(
        cat.gpus.select(pl.col("id").alias("gpu_id"), "memory_bytes", "power_w", pl.col("name").alias("gpu_name"), "list_price_usd"),
        on="gpu_id",
        how="left",
    ).select(
        row_hash(["gpu_id", "compute"]).alias("_gpu_compute"),
        pl.col("compute_used").alias("decode_compute_used"),
        pl.col("compute_flag").alias("decode_compute_flag"),
        "memory_bytes",
        "power_w",
        "gpu_name",
        "list_price_usd",
    )
    lf = lf.with_columns(row_hash(["gpu", "compute"]).alias("_gpu_compute")).join(
        gpu_side.lazy(), on="_gpu_compute", how="left", maintain_order="left"
    )
    out = _finish(_with_memory(cat, lf, drafts=drafts))
    wanted = set(columns) if columns else None
    if wanted is None or "flags" in wanted:
        out = _with_flags(out)
    return collect(out.select(columns) if columns else out.select(pl.exclude("^_.*$")), rows)


def _step_fields(model: pl.Expr, batch: pl.Expr, q: pl.Expr, cached: pl.Expr, prefill: bool) -> list[pl.Expr]:
    """The columns that identify one step of a scenario (STEP_COLUMNS less step_id), as expressions on the scenario frame."""
    return [
        pl.col("gpu").alias("gpu_id"),
        model.cast(pl.String).alias("model_id"),
        pl.col("num_gpus").cast(pl.Int64),
        pl.col("weights"),
        pl.col("compute"),
        pl.col("kv"),
        batch.cast(pl.Int64).alias("batch"),
        q.cast(pl.Int64).alias("q"),
        cached.cast(pl.Int64).alias("cached"),
        pl.lit(prefill).alias("prefill"),
        pl.col("eff_bandwidth").cast(pl.Float64),
        pl.col("eff_compute").cast(pl.Float64),
        pl.col("flash_attention").alias("flash"),
        pl.col("overhead_s").cast(pl.Float64),
    ]


def step_results(cat: Catalogue, steps: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Per distinct step: totals over operations (see core.perfmodel.step_totals).

    Work shared between steps is computed once (see core.perfmodel.step_sums).
    The result keeps step_id and the figures, not the step's text columns
    (accelerator, formats), which a caller already has.
    """
    lf = _steps_with_hardware(cat, steps, labels=False).select(_TOTAL_INPUTS)
    return step_totals(step_sums(lf, cat.attn_ops, cat.other_ops))


#: The step columns step_sums and step_totals read (core.perfmodel).
_TOTAL_INPUTS = (
    "step_id",
    *WORK_INPUTS,
    *(c for c in TIMING_INPUTS if c not in WORK_INPUTS),
    "overhead_s",
    "scaleup_bytes_per_s",
    "num_layers",
    "hidden_size",
)


def operation_table(cat: Catalogue, scenario: Scenario, *, phase: str = "decode") -> pl.DataFrame:
    """The per-operation roofline of one step of a scenario (decode or prefill).

    One row per operation and layer group: FLOPs, bytes (weights, activations,
    KV), intensity, bound side, time (all layers of the group) and share of the
    step's operation time.
    """
    s = scenario_frame([scenario]).row(0, named=True)
    is_prefill = phase == "prefill"
    if is_prefill:
        step = single_step(s, batch=1, q=s["prompt"], cached=0, prefill=True)
    else:
        step = single_step(s, batch=s["batch"], q=1, cached=s["context"], prefill=False)
    _check_ids(cat, step)
    lf = _steps_with_hardware(cat, step)
    costs = collect(operation_costs(lf, cat.ops.lazy()), 1)
    total = costs["time_s"].sum()
    return costs.select(
        "group",
        "op",
        "kind",
        "layers",
        "flops",
        "weight_bytes",
        pl.col("act_bytes_total").alias("act_bytes"),
        (pl.col("kv_read_bytes") + pl.col("kv_write_bytes")).alias("kv_bytes"),
        "bytes",
        "intensity",
        "bound",
        "memory_time_s",
        "compute_time_s",
        "time_s",
        (pl.col("time_s") / total).alias("share"),
    )


def single_step(s: dict[str, Any], *, batch: int, q: int, cached: int, prefill: bool) -> pl.DataFrame:
    """A one-row step frame (STEP_COLUMNS) for a scenario row from scenario_frame."""
    return pl.DataFrame(
        {
            "step_id": [0],
            "gpu_id": [s["gpu"]],
            "model_id": [s["model"]],
            "num_gpus": [s["num_gpus"]],
            "weights": [s["weights"]],
            "compute": [s["compute"]],
            "kv": [s["kv"]],
            "batch": [batch],
            "q": [q],
            "cached": [cached],
            "prefill": [prefill],
            "eff_bandwidth": [s["eff_bandwidth"]],
            "eff_compute": [s["eff_compute"]],
            "flash": [s["flash_attention"]],
            "overhead_s": [s["overhead_s"]],
        }
    )


def _steps_with_hardware(cat: Catalogue, steps: pl.DataFrame | pl.LazyFrame, *, labels: bool = True) -> pl.LazyFrame:
    """Steps with their accelerator's figures, the effective peak and the model's shape (rows keep their order).

    `labels=False` leaves out the text columns (compute_used, compute_flag),
    which a sweep attaches once per scenario instead of once per step.
    """
    # the effective peak depends on (accelerator, compute format) only: resolved once per catalogue,
    # with the accelerator's other figures, and joined on a hash of the pair
    pairs = cat.compute_pairs.join(cat.hardware, on="gpu_id", how="left").with_columns(
        row_hash(["gpu_id", "compute"]).alias("_gpu_compute")
    )
    pairs = pairs.drop("gpu_id", "compute", *(() if labels else ("compute_used", "compute_flag")))
    return (
        with_precision_columns(steps)
        .with_columns(row_hash(["gpu_id", "compute"]).alias("_gpu_compute"))
        .join(pairs.lazy(), on="_gpu_compute", how="left", maintain_order="left")
        .join(cat.shapes.lazy(), on="model_id", how="left", maintain_order="left")
        .drop("_gpu_compute")
    )


def _with_memory(cat: Catalogue, out: pl.LazyFrame, *, drafts: bool = True) -> pl.LazyFrame:
    """Weights, KV cache and reserve against num_gpus x memory; max batch; fewest GPUs.

    `out` carries the accelerator's memory_bytes; `drafts=False` says no
    scenario has a draft model (its parameters are then not looked up).
    """
    wb = {k: f.bytes for k, f in FORMATS.items()}
    attn = cat.attn_ops.lazy().select("model_id", "layers", "kv_elems", "window", "kv_replicated", "kv_heads")
    ctx = pl.col("context").cast(pl.Float64)
    held = pl.when(pl.col("window") > 0).then(pl.min_horizontal(ctx, pl.col("window"))).otherwise(ctx)
    params = cat.models.lazy().select(pl.col("id").alias("model_id"), pl.col("total_params"))
    # KV held per sequence depends on the model and the context only: once per distinct pair
    out = out.with_columns(row_hash(["model", "context"]).alias("_model_context"))
    per_model = (
        out.select("_model_context", pl.col("model").alias("model_id"), "context")
        .unique("_model_context")
        .join(attn, on="model_id", how="inner")
        .group_by("_model_context", "model_id")
        .agg(
            (pl.col("layers") * pl.col("kv_elems") * held).sum().alias("kv_elems_per_seq"),
            pl.col("kv_replicated").max().alias("kv_replicated"),
            pl.col("kv_heads").min().alias("kv_heads"),
        )
        .join(params, on="model_id", how="left")
        .drop("model_id")
    )
    n = pl.col("num_gpus").cast(pl.Float64)
    w_bytes = pl.col("weights").replace_strict(wb, return_dtype=pl.Float64)
    kv_bytes = pl.col("kv").replace_strict(wb, return_dtype=pl.Float64)
    uses_draft = (pl.col("spec_draft_len") > 0) & pl.col("spec_draft_model").is_not_null()
    shard = pl.when(pl.col("kv_replicated") == 1).then(1.0).otherwise(pl.min_horizontal(n, pl.col("kv_heads")))
    out = out.join(per_model, on="_model_context", how="left", maintain_order="left")
    if drafts:
        draft_params = cat.models.lazy().select(pl.col("id").alias("spec_draft_model"), pl.col("total_params").alias("draft_params"))
        out = out.join(draft_params, on="spec_draft_model", how="left", maintain_order="left")
    else:
        out = out.with_columns(pl.lit(None, dtype=pl.Float64).alias("draft_params"))
    return (
        out.with_columns(
            (pl.col("total_params") * w_bytes + pl.when(uses_draft).then(pl.col("draft_params") * w_bytes).otherwise(0.0)).alias(
                "weight_memory_bytes"
            ),
            # KV across all GPUs: a cache tensor parallelism cannot shard is held on every GPU
            (pl.col("kv_elems_per_seq") * kv_bytes * n / shard).alias("kv_bytes_per_seq_all_gpus"),
            (n * pl.col("memory_bytes")).alias("capacity_bytes"),
            (pl.col("reserve_fraction") * n * pl.col("memory_bytes")).alias("reserve_bytes"),
        )
        .with_columns(
            (pl.col("kv_bytes_per_seq_all_gpus") * pl.col("batch")).alias("kv_memory_bytes"),
            (pl.col("capacity_bytes") - pl.col("reserve_bytes")).alias("usable_bytes"),
        )
        .with_columns(
            (pl.col("weight_memory_bytes") + pl.col("kv_memory_bytes") + pl.col("reserve_bytes")).alias("memory_required_bytes"),
            (pl.col("weight_memory_bytes") + pl.col("kv_memory_bytes") <= pl.col("usable_bytes")).alias("fits"),
            # no KV to hold (context 0): memory sets no batch limit (null)
            pl.when(pl.col("kv_bytes_per_seq_all_gpus") > 0)
            .then(
                ((pl.col("usable_bytes") - pl.col("weight_memory_bytes")) / pl.col("kv_bytes_per_seq_all_gpus")).floor().clip(lower_bound=0)
            )
            .otherwise(None)
            .cast(pl.Int64)
            .alias("max_batch"),
            # fewest GPUs holding the weights and one sequence at this context
            _min_gpus(
                pl.col("weight_memory_bytes"),
                pl.col("kv_elems_per_seq") * kv_bytes,
                pl.col("memory_bytes") * (1.0 - pl.col("reserve_fraction")),
                pl.col("kv_replicated") == 1,
            ).alias("min_gpus"),
        )
    )


def _min_gpus(weights: pl.Expr, kv_one: pl.Expr, usable_per_gpu: pl.Expr, replicated: pl.Expr) -> pl.Expr:
    sharded = ((weights + kv_one) / usable_per_gpu).ceil()
    room = usable_per_gpu - kv_one
    repl = pl.when(room > 0).then((weights / room).ceil()).otherwise(None)
    return pl.when(replicated).then(repl).otherwise(sharded).cast(pl.Int64)


def _finish(out: pl.LazyFrame) -> pl.LazyFrame:
    a = pl.col("spec_acceptance")
    k = pl.col("spec_draft_len").cast(pl.Float64)
    spec = (pl.col("spec_draft_len") > 0) & pl.col("spec_draft_model").is_not_null()
    expected = pl.when(spec).then((1.0 - a.pow(k + 1.0)) / (1.0 - a)).otherwise(1.0)
    cycle = pl.col("decode_step_time_s") + pl.when(spec).then(k * pl.col("draft_step_time_s")).otherwise(0.0)
    n = pl.col("num_gpus").cast(pl.Float64)
    agg_bw = n * pl.col("decode_bandwidth_bytes_per_s") * pl.col("eff_bandwidth")
    # a cache tensor parallelism cannot shard is read whole by every GPU
    kv_shard = pl.when(pl.col("kv_replicated") == 1).then(1.0).otherwise(pl.min_horizontal(n, pl.col("kv_heads")))
    kv_read_all_gpus = pl.col("decode_kv_read_bytes") * n / kv_shard
    costed = pl.col("decode_peak_flops").is_not_null()
    fits = pl.col("fits") & costed
    per_user = pl.when(fits).then(pl.col("tokens_per_step") / pl.col("cycle_time_s")).otherwise(None)
    return (
        out.with_columns(expected.alias("tokens_per_step"), cycle.alias("cycle_time_s"))
        .with_columns(
            per_user.alias("tokens_per_s_per_user"),
            (per_user * pl.col("batch")).alias("tokens_per_s_total"),
            pl.when(fits).then(pl.col("cycle_time_s") / pl.col("tokens_per_step")).otherwise(None).alias("time_per_output_token_s"),
            pl.col("decode_step_time_s").alias("step_time_s"),
            pl.when(costed).then(pl.col("prefill_step_time_s")).otherwise(None).alias("ttft_s"),
            pl.when(costed).then(pl.col("prompt") / pl.col("prefill_step_time_s")).otherwise(None).alias("prefill_tokens_per_s"),
            pl.col("decode_flops").alias("flops"),
            pl.col("decode_bytes").alias("bytes"),
            pl.col("decode_weight_bytes").alias("weight_bytes"),
            (pl.col("decode_kv_read_bytes") + pl.col("decode_kv_write_bytes")).alias("kv_bytes"),
            pl.col("decode_intensity").alias("intensity"),
            pl.col("decode_bound").alias("bound"),
            pl.col("decode_peak_flops").alias("peak_flops"),
            pl.col("decode_compute_used").alias("compute_used"),
            pl.col("decode_bandwidth_bytes_per_s").alias("bandwidth_bytes_per_s"),
            (pl.col("decode_peak_flops") / pl.col("decode_bandwidth_bytes_per_s")).alias("ridge"),
            # the seeds' bandwidth-only ceilings: aggregate bandwidth / bytes read per step
            # (pure bounds from bytes alone, shown whether or not the scenario fits)
            (agg_bw / pl.col("decode_weight_bytes")).alias("bandwidth_ceiling_tokens_per_s"),
            (agg_bw / (pl.col("decode_weight_bytes") + kv_read_all_gpus)).alias("bandwidth_ceiling_with_kv_tokens_per_s"),
        )
        .with_columns(
            (pl.col("bandwidth_ceiling_tokens_per_s") * pl.col("batch")).alias("bandwidth_ceiling_tokens_per_s_total"),
            (pl.col("bandwidth_ceiling_with_kv_tokens_per_s") * pl.col("batch")).alias("bandwidth_ceiling_with_kv_tokens_per_s_total"),
            pl.when(pl.col("usd_per_gpu_hour") > 0)
            .then(pl.col("usd_per_gpu_hour") * n / (pl.col("tokens_per_s_total") * 3600.0) * 1e6)
            .otherwise(None)
            .alias("usd_per_million_tokens"),
            (pl.col("tokens_per_s_total") / (n * pl.col("power_w"))).alias("tokens_per_s_per_watt"),
            (pl.col("flops") / pl.col("step_time_s") / (n * pl.col("peak_flops"))).alias("compute_utilisation"),
            (pl.col("bytes") / pl.col("step_time_s") / agg_bw).alias("bandwidth_utilisation"),
        )
    )


def _with_flags(out: pl.LazyFrame) -> pl.LazyFrame:
    """The flags list of each scenario, built once per distinct combination of its causes."""
    causes = ["decode_compute_flag", "decode_comm_flag", "fits", "spec_draft_len", "spec_draft_model"]
    flags = pl.concat_list(
        pl.col("decode_compute_flag"),
        pl.col("decode_comm_flag"),
        # the figures are in weight_memory_bytes, kv_memory_bytes and usable_bytes
        pl.when(~pl.col("fits")).then(pl.lit("does not fit in memory: weights + KV exceed the usable memory")).otherwise(None),
        pl.when((pl.col("spec_draft_len") > 0) & pl.col("spec_draft_model").is_null())
        .then(pl.lit("speculative decoding ignored: no draft model"))
        .otherwise(None),
    ).list.drop_nulls()
    key = row_hash(["decode_compute_flag", "decode_comm_flag", "fits", pl.col("spec_draft_len") > 0, pl.col("spec_draft_model").is_null()])
    keyed = out.with_columns(key.alias("_flags_key"))
    table = keyed.select("_flags_key", *causes).unique("_flags_key").select("_flags_key", flags.alias("flags"))
    return keyed.join(table, on="_flags_key", how="left", maintain_order="left").drop("_flags_key")


def _check_ids(cat: Catalogue, scen: pl.DataFrame) -> None:
    gpu_col = "gpu" if "gpu" in scen.columns else "gpu_id"
    model_col = "model" if "model" in scen.columns else "model_id"
    known_gpus = cat.gpu_ids
    for gid in scen[gpu_col].unique().to_list():
        if gid not in known_gpus:
            raise UnknownIdError("accelerator", gid, sorted(known_gpus))
    models = set(scen[model_col].unique().to_list())
    if "spec_draft_model" in scen.columns:
        models |= {m for m in scen["spec_draft_model"].unique().to_list() if m is not None}
    for mid in sorted(models):
        if mid not in cat.records:
            raise UnknownIdError("model", mid, sorted(cat.records))


def ceilings_by_batch(cat: Catalogue, scenario: Scenario, batches: Sequence[int]) -> dict[int, dict[str, Any]]:
    """ceiling() of the scenario at each of `batches` (its own batch ignored), from one evaluation.

    For pages that move along the batch axis: one evaluation of a dozen
    scenarios costs about what one does.
    """
    frame = evaluate(cat, [scenario.model_copy(update={"batch": int(b)}) for b in sorted(set(batches))])
    return {int(row["batch"]): row for row in frame.iter_rows(named=True)}


def ceiling(cat: Catalogue, scenario: Scenario) -> dict[str, Any]:
    """The results of one scenario as a dict (the CLI's `ceiling` record)."""
    return evaluate(cat, [scenario]).row(0, named=True)
