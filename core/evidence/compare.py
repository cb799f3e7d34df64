"""Measured against predicted: each measurement beside the ceiling of the same scenario.

The scenario of a measurement (`scenarios_of`) is evaluated by the model
(core.model.ceilings.evaluate) once per distinct scenario of a dataset
(`distinct_scenarios`: a per-request log of a million rows holds some
thousands) and joined back; `compare` adds measured / predicted, MBU and
MFU, and flags a measurement above its ceiling with its likely causes, never
plotting it as a normal point. A row's flags are a code of its causes
(`flag_code`, one bit per entry of FLAG_CAUSES) whose text is built once per
distinct code. `summary` reduces a comparison to what the CLI prints.
`batch_curves` draws the predicted ceiling against batch for each measured
setup.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from core.catalogue.catalogue import Catalogue
from core.model import workload as wl
from core.model.ceilings import evaluate
from core.model.scenario import ScenarioError

#: A measurement this far above its predicted ceiling is flagged (2% for rounding in the files).
ABOVE_CEILING = 1.02
WELL_TUNED_MBU = (0.70, 0.90)  # seed 000: a well-tuned memory-bound decode
SUSPICIOUS_DECODE_MFU = 0.40  # seed 000: 40% of peak FLOP/s on decode is suspicious
#: The columns that make a measurement's scenario: rows alike in all of them share one prediction.
SCENARIO_KEYS = ("gpu", "num_gpus", "model", "weights", "kv", "compute", "phase", "batch", "input_tokens", "output_tokens")
#: Optional scenario columns, used where the rows have them: the model file's own size (llama-bench model_size), whose
#: bits per weight (bytes x 8 / parameters) the ceiling then uses instead of the weight format's.
OPTIONAL_KEYS = ("model_bytes", "depth", "kv_window")


def decode_context(rows: pl.DataFrame) -> pl.Expr:
    """A decode or end-to-end figure's context: depth + input + output / 2 tokens, but at most the rolling window of KV cache
    the run kept per sequence (`kv_window`, where the rows have one): attention then reads, and the cache holds, that many."""
    depth = pl.col("depth").fill_null(0) if "depth" in rows.columns else pl.lit(0, dtype=pl.Int64)
    context = depth + pl.col("input_tokens") + pl.col("output_tokens").fill_null(0) // 2
    if "kv_window" in rows.columns:
        context = pl.min_horizontal(context, pl.col("kv_window").fill_null(context))
    return context


def scenario_keys(rows: pl.DataFrame) -> tuple[str, ...]:
    """The columns that make the rows' scenarios: SCENARIO_KEYS and the OPTIONAL_KEYS the rows have."""
    return (*SCENARIO_KEYS, *(c for c in OPTIONAL_KEYS if c in rows.columns))


#: The model's figures a comparison takes per scenario (`ttft_s` becomes `predicted_ttft_s` beside the measured one).
PREDICT_COLUMNS = [
    "scenario_id",
    "step_time_s",
    "ttft_s",
    "flops",
    "bytes",
    "intensity",
    "prefill_flops",
    "prefill_bytes",
    "prefill_intensity",
    "prefill_step_time_s",
    "prefill_bound",
    "memory_bound_time_s",
    "compute_bound_time_s",
    "comm_time_s",
    "peak_flops",
    "bandwidth_bytes_per_s",
    "compute_used",
    "fits",
]


def distinct_scenarios(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """The distinct scenarios of the rows (their SCENARIO_KEYS, in order of first appearance, with `first`: the index
    of the first row of each) and, per row, the index of its scenario among them (`scenario_id`, UInt32).

    Rows are grouped by a 64-bit hash of their keys; every row's keys are then
    checked against its scenario's, so a hash collision cannot merge two
    scenarios (it falls back to an exact join).
    """
    names = scenario_keys(rows)
    keys = rows.select(names)
    index = pl.DataFrame({"h": keys.hash_rows()}).with_row_index("i")
    first = index.group_by("h").agg(pl.col("i").first().alias("first")).sort("first").with_row_index("scenario_id")
    sid = index.join(first.select("h", "scenario_id"), on="h", how="left", maintain_order="left")["scenario_id"]
    distinct = keys[first["first"]].with_columns(first["first"])
    back = distinct.drop("first")[sid]
    if not back.select(pl.all_horizontal(back[c].eq_missing(keys[c]) for c in names)).to_series().all():
        distinct = keys.with_row_index("first").unique(names, keep="first", maintain_order=True)  # a collision: exact
        distinct = distinct.select(*names, pl.col("first").cast(pl.UInt32))
        ids = distinct.with_row_index("scenario_id").drop("first")
        sid = keys.join(ids, on=list(names), how="left", maintain_order="left", nulls_equal=True)["scenario_id"]
    return distinct, sid.alias("scenario_id")


def scenarios_of(rows: pl.DataFrame, params: dict[str, float] | None = None) -> pl.DataFrame:
    """The Scenario columns of each measurement: decode context = depth + input + output / 2 (`decode_context`), prefill
    prompt = input over `depth` tokens already cached (0 where the rows have no depth: llama-bench's '@ dN').

    Where a row states its model file's size (`model_bytes`) and `params` (model id -> parameters) is given,
    its weight_bits = bytes x 8 / parameters: the file's own bits per weight.
    """
    depth = pl.col("depth").fill_null(0) if "depth" in rows.columns else pl.lit(0, dtype=pl.Int64)
    scen = rows.select(
        "gpu",
        "model",
        "num_gpus",
        "weights",
        "compute",
        "kv",
        "batch",
        pl.when(pl.col("phase") == "prefill").then(depth + pl.col("input_tokens")).otherwise(decode_context(rows)).alias("context"),
        pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).alias("prompt"),
        depth.cast(pl.Int64).alias("depth"),
    )
    if params is not None and "model_bytes" in rows.columns:
        total = rows["model"].replace_strict(params, default=None, return_dtype=pl.Float64)
        scen = scen.with_columns((rows["model_bytes"].cast(pl.Float64) * 8.0 / total).alias("weight_bits"))
    return scen


def _evaluate(cat: Catalogue, distinct: pl.DataFrame) -> pl.DataFrame:
    """The model's figures of each distinct scenario; a scenario out of bounds is named by its first row in the dataset."""
    try:
        params = dict(zip(cat.models["id"], cat.models["total_params"], strict=True))
        res = evaluate(cat, scenarios_of(distinct, params), columns=PREDICT_COLUMNS)
    except ScenarioError as exc:
        if exc.row is None or "first" not in distinct.columns:
            raise
        raise ScenarioError(exc.field, exc.problem, row=int(distinct["first"][exc.row])) from None
    return res.drop("scenario_id").rename({"ttft_s": "predicted_ttft_s"})


def _ceiling_rate(frame: pl.DataFrame) -> pl.Series:
    """The ceiling's tokens/s of each row's phase (core.model.workload): a decode step, one prompt's prefill, or a wave of
    `batch` requests whose every prompt is prefilled once (the ceiling's TTFT each) and every output token is one step."""
    phase = wl.phase_codes(frame["phase"].to_list())
    b = frame["batch"].cast(pl.Float64).to_numpy()
    out = frame["output_tokens"].cast(pl.Float64).to_numpy()
    prompt = np.maximum(frame["input_tokens"].cast(pl.Float64).to_numpy(), 1.0)
    step, ttft = frame["step_time_s"].to_numpy(), frame["predicted_ttft_s"].to_numpy()
    prefill = np.where(phase == wl.PREFILL, ttft, b * ttft)  # a prefill row counts one prompt (batch 1); a wave, batch of them
    counted_batch = np.where(phase == wl.PREFILL, 1.0, b)
    secs = wl.seconds(phase, out, step, prefill, np.zeros(len(b)))
    return pl.Series("predicted_tokens_per_s", wl.rate(phase, counted_batch, prompt, out, secs), nan_to_null=True)


def _predict_distinct(cat: Catalogue, distinct: pl.DataFrame) -> pl.DataFrame:
    """Per distinct scenario: the model's figures and predicted_tokens_per_s (the keys not repeated)."""
    res = _evaluate(cat, distinct)
    keys = distinct.select("phase", "batch", "input_tokens", "output_tokens")
    both = pl.concat([keys, res], how="horizontal")
    return both.with_columns(_ceiling_rate(both)).drop(keys.columns)


def predicted(cat: Catalogue, rows: pl.DataFrame) -> pl.DataFrame:
    """Per measurement: the ceiling's tokens/s for its phase and the step figures behind it.

    decode: batch / step time; prefill: prompt / time to first token; mixed (a
    serving run): batch x output / (batch x TTFT + output x step time), every
    prompt prefilled once and every output token one decode step
    (core.model.workload). Each distinct scenario is evaluated once.
    """
    distinct, sid = distinct_scenarios(rows)
    return pl.concat([rows, _predict_distinct(cat, distinct)[sid]], how="horizontal")


def compare(cat: Catalogue, rows: pl.DataFrame, *, flag_text: bool = True) -> pl.DataFrame:
    """Measured against the ceiling, one row per measurement, in the rows' order.

    Adds predicted_tokens_per_s (datasheet roofs), ratio = measured / predicted,
    MBU = achieved bytes/s / (num_gpus x peak bandwidth) and MFU = achieved
    FLOP/s / (num_gpus x dense peak), the operating point (intensity and the
    achieved and predicted FLOP/s per GPU), `status` ("above ceiling" or "ok"),
    `scenario_id` (the row's distinct scenario, core.evidence.compare.distinct_scenarios),
    `flag_code` (its causes, a bit per FLAG_CAUSES) and `flags` (their text,
    the seed's hints). `flag_text=False` leaves `flags` out (a summary counts causes by `flag_code`).
    What a framework is expected to reach (the predicted model) is core.evidence.refit's.
    """
    if not rows.height:
        return rows
    cmp, _ = compare_scenarios(cat, rows, flag_text=flag_text)
    return cmp


def compare_scenarios(cat: Catalogue, rows: pl.DataFrame, *, flag_text: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`compare`, and the distinct scenarios its `scenario_id` indexes (`distinct_scenarios`)."""
    distinct, sid = distinct_scenarios(rows)
    pred = _predict_distinct(cat, distinct)
    out = pl.concat([rows, pred[sid], sid.to_frame()], how="horizontal")
    n = pl.col("num_gpus").cast(pl.Float64)
    phase = pl.col("phase")
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    # achieved steps per second: decode (and serving) steps = tokens/s / batch, prefill prompts = tokens/s / prompt
    prefill = phase == "prefill"
    steps = pl.when(prefill).then(pl.col("tokens_per_s") / prompt).otherwise(pl.col("tokens_per_s") / pl.col("batch"))
    step_flops = pl.when(prefill).then(pl.col("prefill_flops")).otherwise(pl.col("flops"))
    step_bytes = pl.when(prefill).then(pl.col("prefill_bytes")).otherwise(pl.col("bytes"))
    step_time = pl.when(prefill).then(pl.col("predicted_ttft_s")).otherwise(pl.col("step_time_s"))
    out = out.with_columns(
        (pl.col("tokens_per_s") / pl.col("predicted_tokens_per_s")).alias("ratio"),
        (step_bytes * steps / (n * pl.col("bandwidth_bytes_per_s"))).alias("mbu"),
        (step_flops * steps / (n * pl.col("peak_flops"))).alias("mfu"),
        pl.when(prefill).then(pl.col("prefill_intensity")).otherwise(pl.col("intensity")).alias("point_intensity"),
        (step_flops * steps / n).alias("achieved_flops_per_gpu"),
        (step_flops / step_time / n).alias("predicted_flops_per_gpu"),
    ).with_columns(pl.when(pl.col("ratio") > ABOVE_CEILING).then(pl.lit("above ceiling")).otherwise(pl.lit("ok")).alias("status"))
    out = out.with_columns(_flag_code().alias("flag_code"))
    if flag_text:
        out = out.with_columns(flag_texts(out["flag_code"]))
    return out, distinct


# -- flags: a code of causes per row, the text once per code ---------------------------------------------

#: Each cause a measurement is flagged for: (key, text); bit i of `flag_code` is FLAG_CAUSES[i]. The numbers a
#: text could quote (ratio, MBU, MFU) are the row's own columns.
FLAG_CAUSES = (
    ("above_ceiling", "above its ceiling: check the precision, a sparse peak, the accelerator and count, phases mixed in one figure"),
    ("wrong_precision", "wrong precision? about 2-4x a 16-bit ceiling: the weights may be fp8/int8 or 4-bit"),
    ("above_dense_peak", "above the dense compute peak: a sparse (2:4) figure or the wrong accelerator?"),
    ("mixed_phases", "a serving figure mixes prefill and decode (and may count prompt tokens)"),
    ("unit_slip", "about 1000x: a unit slip (ms read as s, or tokens/ms)?"),
    ("gpu_count", "wrong accelerator count? the run may have used more GPUs"),
    ("well_tuned_decode", "well-tuned decode: MBU within 70-90% (the mark)"),
    ("suspicious_decode_mfu", "40% MFU or more on decode is suspicious: decode should be judged by MBU"),
    ("does_not_fit", "the model predicts this does not fit in memory: check the accelerator count and precisions"),
)


def _flag_code() -> pl.Expr:
    """A row's causes as bits (FLAG_CAUSES' order): rows above their ceiling, and the seed's hints on MBU and MFU."""
    above = pl.col("status") == "above ceiling"
    r, phase, mbu, mfu = pl.col("ratio"), pl.col("phase"), pl.col("mbu"), pl.col("mfu")
    half_bytes = pl.col("weights").is_in(["bf16", "fp16", "fp32"])
    causes = [
        above,
        above & half_bytes & r.is_between(1.5, 4.5),
        above & (mfu > 1.0),
        above & (phase == "mixed"),
        above & (r > 300),
        above & (pl.col("num_gpus") == 1) & (r > 1.8),
        ~above & (phase == "decode") & mbu.is_between(*WELL_TUNED_MBU),
        ~above & (phase == "decode") & (mfu >= SUSPICIOUS_DECODE_MFU),
        ~pl.col("fits"),
    ]
    assert len(causes) == len(FLAG_CAUSES)
    return pl.sum_horizontal(c.fill_null(False).cast(pl.Int32) * (1 << i) for i, c in enumerate(causes)).cast(pl.Int32)


def flag_texts(codes: pl.Series) -> pl.Series:
    """`flags`: each code's causes as text (FLAG_CAUSES), the list built once per distinct code."""
    present = codes.unique().to_list()
    size = max(present) + 1 if present else 1
    lists: list[list[str]] = [[] for _ in range(size)]
    for code in present:
        lists[code] = [text for i, (_, text) in enumerate(FLAG_CAUSES) if code >> i & 1]
    return pl.Series("flags", lists, dtype=pl.List(pl.String)).gather(codes)


def flag_counts(cmp: pl.DataFrame) -> dict[str, int]:
    """How many rows carry each cause (FLAG_CAUSES' keys), from `flag_code`."""
    if not cmp.height:
        return {key: 0 for key, _ in FLAG_CAUSES}
    counts = cmp.select(((pl.col("flag_code") & (1 << i)) != 0).sum().alias(key) for i, (key, _) in enumerate(FLAG_CAUSES)).row(0)
    return {key: int(v) for (key, _), v in zip(FLAG_CAUSES, counts, strict=True)}


def summary(cmp: pl.DataFrame) -> dict[str, Any]:
    """A comparison in figures: rows, distinct scenarios, rows above their ceiling, median ratio (and expected ratio),
    median MBU and MFU overall and per phase, and the rows per flag cause (FLAG_CAUSES' keys)."""
    if not cmp.height:
        return {"rows": 0, "distinct_scenarios": 0, "above_ceiling": 0, "by_phase": {}, "flags": flag_counts(cmp)}
    medians = [c for c in ("ratio", "expected_ratio", "mbu", "mfu") if c in cmp.columns]
    figures = [pl.len().alias("rows"), *(pl.col(c).filter(pl.col(c).is_finite()).median().alias(f"median_{c}") for c in medians)]
    overall = cmp.select(
        *figures,
        pl.col("scenario_id").n_unique().alias("distinct_scenarios"),
        (pl.col("status") == "above ceiling").sum().alias("above_ceiling"),
    ).row(0, named=True)
    overall = {k: int(v) if k in ("rows", "distinct_scenarios", "above_ceiling") else v for k, v in overall.items()}
    phase = cmp["phase"]
    if phase.n_unique() == 1:  # one phase: its figures are the dataset's
        by_phase = {str(phase[0]): {k: v for k, v in overall.items() if k == "rows" or k.startswith("median_")}}
    else:
        by_phase = {str(p.pop("phase")): p for p in cmp.group_by("phase", maintain_order=True).agg(figures).iter_rows(named=True)}
    return {
        **overall,
        "by_phase": by_phase,
        "flags": flag_counts(cmp),
    }


def batch_curves(cat: Catalogue, rows: pl.DataFrame, expected: Any = None, *, groups: int = 6) -> pl.DataFrame:
    """The ceiling's tokens/s against batch (powers of two and the measured batches) for each measured setup.

    One `series` per (accelerator, count, model, precisions, phase, lengths) of decode and serving measurements (at
    most `groups`); `expected(grid) -> tokens/s` (core.evidence.refit.expected_rates), where given, adds what the
    framework is expected to reach at each batch (`expected_tokens_per_s`).
    """
    keys = ["gpu", "num_gpus", "model", "weights", "kv", "compute", "phase", "input_tokens", "output_tokens"]
    sub = rows.filter(pl.col("phase") != "prefill")
    if not sub.height:
        return pl.DataFrame()
    setups = sub.group_by(keys, maintain_order=True).agg(
        pl.col("batch").max().alias("max_batch"), pl.col("batch").unique().alias("measured")
    )
    setups = setups.head(groups)
    grid_rows = []
    for setup in setups.iter_rows(named=True):
        batches = sorted({2**i for i in range(21) if 2**i <= 2 * setup["max_batch"]} | set(setup["measured"]))
        grid_rows += [{**{k: setup[k] for k in keys}, "batch": b} for b in batches]
    grid = pl.DataFrame(grid_rows, schema={**{k: rows.schema[k] for k in keys}, "batch": rows.schema["batch"]})
    grid = grid.with_columns(pl.lit(1.0).alias("tokens_per_s")).select(*keys, "batch", "tokens_per_s")
    curves = predicted(cat, grid).select(
        *keys,
        "batch",
        pl.format("{} × {} · {} · {} ({} in / {} out)", "num_gpus", "gpu", "model", "weights", "input_tokens", "output_tokens").alias(
            "series"
        ),
        "predicted_tokens_per_s",
        "fits",
    )
    if expected is not None:
        curves = curves.with_columns(pl.Series("expected_tokens_per_s", expected(grid), nan_to_null=True))
    return curves.sort("series", "batch")
