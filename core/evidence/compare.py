"""Measured against predicted: each measurement beside the ceiling of the same scenario.

The scenario of a measurement (`scenarios_of`) is evaluated by the model
(core.model.ceilings.evaluate); `compare` adds measured / predicted, MBU and
MFU, and flags a measurement above its ceiling with its likely causes, never
plotting it as a normal point. `batch_curves` draws the predicted ceiling
against batch for each measured setup.
"""

from __future__ import annotations

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.model.ceilings import evaluate

#: A measurement this far above its predicted ceiling is flagged (2% for rounding in the files).
ABOVE_CEILING = 1.02
WELL_TUNED_MBU = (0.70, 0.90)  # seed 000: a well-tuned memory-bound decode
SUSPICIOUS_DECODE_MFU = 0.40  # seed 000: 40% of peak FLOP/s on decode is suspicious
_PREDICT_COLUMNS = [
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


def scenarios_of(rows: pl.DataFrame, calibration: pl.DataFrame | None = None) -> pl.DataFrame:
    """The Scenario columns of each measurement: decode context = input + output / 2, prefill prompt = input.

    With a calibration (core.evidence.calibration.calibrate) its efficiencies and
    per-step overhead apply per accelerator.
    """
    scen = rows.select(
        "gpu",
        "model",
        "num_gpus",
        "weights",
        "compute",
        "kv",
        "batch",
        pl.when(pl.col("phase") == "prefill")
        .then(pl.col("input_tokens"))
        .otherwise(pl.col("input_tokens") + pl.col("output_tokens") // 2)
        .alias("context"),
        pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).alias("prompt"),
    )
    if calibration is None or not calibration.height:
        return scen.with_columns(pl.lit(1.0).alias("eff_bandwidth"), pl.lit(1.0).alias("eff_compute"), pl.lit(0.0).alias("overhead_s"))
    cal = calibration.select("gpu", "eff_bandwidth", pl.col("eff_compute").fill_null(1.0), "overhead_s")
    return scen.join(cal, on="gpu", how="left", maintain_order="left").with_columns(
        pl.col("eff_bandwidth").fill_null(1.0), pl.col("eff_compute").fill_null(1.0), pl.col("overhead_s").fill_null(0.0)
    )


def predicted(cat: Catalogue, rows: pl.DataFrame, calibration: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per measurement: the predicted tokens/s for its phase and the step figures behind it.

    decode: batch / step time; prefill: prompt / time to first token; mixed (a
    serving run): batch x output / (batch x TTFT + output x step time), every
    prompt prefilled once and every output token one decode step.
    """
    res = (
        evaluate(cat, scenarios_of(rows, calibration), columns=_PREDICT_COLUMNS).drop("scenario_id").rename({"ttft_s": "predicted_ttft_s"})
    )
    b = pl.col("batch").cast(pl.Float64)
    out = pl.col("output_tokens").cast(pl.Float64)
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    phase = pl.col("phase")
    return pl.concat([rows, res], how="horizontal").with_columns(
        pl.when(phase == "decode")
        .then(b / pl.col("step_time_s"))
        .when(phase == "prefill")
        .then(prompt / pl.col("predicted_ttft_s"))
        .otherwise(b * out / (b * pl.col("predicted_ttft_s") + out * pl.col("step_time_s")))
        .alias("predicted_tokens_per_s")
    )


def compare(cat: Catalogue, rows: pl.DataFrame, calibration: pl.DataFrame | None = None) -> pl.DataFrame:
    """Measured against predicted, one row per measurement.

    Adds predicted_tokens_per_s (datasheet roofs), ratio = measured / predicted,
    MBU = achieved bytes/s / (num_gpus x peak bandwidth) and MFU = achieved
    FLOP/s / (num_gpus x dense peak), the operating point (intensity and the
    achieved and predicted FLOP/s per GPU), `status` ("above ceiling" or "ok")
    and `flags` (likely causes, the seed's hints). With a calibration,
    calibrated_tokens_per_s and calibrated_ratio too.
    """
    if not rows.height:
        return rows
    pred = predicted(cat, rows)
    n = pl.col("num_gpus").cast(pl.Float64)
    phase = pl.col("phase")
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    # achieved steps per second: decode (and serving) steps = tokens/s / batch, prefill prompts = tokens/s / prompt
    steps = pl.when(phase == "prefill").then(pl.col("tokens_per_s") / prompt).otherwise(pl.col("tokens_per_s") / pl.col("batch"))
    step_flops = pl.when(phase == "prefill").then(pl.col("prefill_flops")).otherwise(pl.col("flops"))
    step_bytes = pl.when(phase == "prefill").then(pl.col("prefill_bytes")).otherwise(pl.col("bytes"))
    step_time = pl.when(phase == "prefill").then(pl.col("predicted_ttft_s")).otherwise(pl.col("step_time_s"))
    out = pred.with_columns(
        (pl.col("tokens_per_s") / pl.col("predicted_tokens_per_s")).alias("ratio"),
        (step_bytes * steps / (n * pl.col("bandwidth_bytes_per_s"))).alias("mbu"),
        (step_flops * steps / (n * pl.col("peak_flops"))).alias("mfu"),
        pl.when(phase == "prefill").then(pl.col("prefill_intensity")).otherwise(pl.col("intensity")).alias("point_intensity"),
        (step_flops * steps / n).alias("achieved_flops_per_gpu"),
        (step_flops / step_time / n).alias("predicted_flops_per_gpu"),
    ).with_columns(pl.when(pl.col("ratio") > ABOVE_CEILING).then(pl.lit("above ceiling")).otherwise(pl.lit("ok")).alias("status"))
    out = out.with_columns(_flags().alias("flags"))
    if calibration is not None and calibration.height:
        cal = predicted(cat, rows, calibration)["predicted_tokens_per_s"]
        out = out.with_columns(cal.alias("calibrated_tokens_per_s")).with_columns(
            (pl.col("tokens_per_s") / pl.col("calibrated_tokens_per_s")).alias("calibrated_ratio")
        )
    return out


def _flags() -> pl.Expr:
    """Likely causes for rows above their ceiling, and the seed's hints on MBU and MFU."""
    above = pl.col("status") == "above ceiling"
    r, phase = pl.col("ratio"), pl.col("phase")
    half_bytes = pl.col("weights").is_in(["bf16", "fp16", "fp32"])
    return pl.concat_list(
        pl.when(above).then(
            pl.format(
                "above its ceiling ({}x the prediction): check the precision, a sparse peak, the accelerator and count, phases mixed in one figure",
                r.round_sig_figs(3),
            )
        ),
        pl.when(above & half_bytes & r.is_between(1.5, 4.5)).then(
            pl.lit("wrong precision? about 2-4x a 16-bit ceiling: the weights may be fp8/int8 or 4-bit")
        ),
        pl.when(above & (pl.col("mfu") > 1.0)).then(
            pl.lit("above the dense compute peak: a sparse (2:4) figure or the wrong accelerator?")
        ),
        pl.when(above & (phase == "mixed")).then(pl.lit("a serving figure mixes prefill and decode (and may count prompt tokens)")),
        pl.when(above & (r > 300)).then(pl.lit("about 1000x: a unit slip (ms read as s, or tokens/ms)?")),
        pl.when(above & (pl.col("num_gpus") == 1) & (r > 1.8)).then(pl.lit("wrong accelerator count? the run may have used more GPUs")),
        pl.when(~above & (phase == "decode") & pl.col("mbu").is_between(*WELL_TUNED_MBU)).then(
            pl.format("well-tuned decode: {}% MBU (70-90% is the mark)", (pl.col("mbu") * 100).round(0).cast(pl.Int64))
        ),
        pl.when(~above & (phase == "decode") & (pl.col("mfu") >= SUSPICIOUS_DECODE_MFU)).then(
            pl.format("{}% MFU on decode is suspicious: decode should be judged by MBU", (pl.col("mfu") * 100).round(0).cast(pl.Int64))
        ),
        pl.when(~pl.col("fits")).then(pl.lit("the model predicts this does not fit in memory: check the accelerator count and precisions")),
    ).list.drop_nulls()


def batch_curves(cat: Catalogue, rows: pl.DataFrame, calibration: pl.DataFrame | None = None, *, groups: int = 6) -> pl.DataFrame:
    """Predicted tokens/s against batch (powers of two and the measured batches) for each measured setup.

    One `series` per (accelerator, count, model, precisions, phase, lengths)
    of decode and serving measurements (at most `groups`); with a calibration,
    calibrated_tokens_per_s beside the datasheet ceiling.
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
    grid = grid.with_columns(pl.lit(1.0).alias("tokens_per_s"))
    curves = predicted(cat, grid.select(*keys, "batch", "tokens_per_s")).select(
        *keys,
        "batch",
        pl.format("{} × {} · {} · {} ({} in / {} out)", "num_gpus", "gpu", "model", "weights", "input_tokens", "output_tokens").alias(
            "series"
        ),
        "predicted_tokens_per_s",
        "fits",
    )
    if calibration is not None and calibration.height:
        curves = curves.with_columns(
            predicted(cat, grid.select(*keys, "batch", "tokens_per_s"), calibration)["predicted_tokens_per_s"].alias(
                "calibrated_tokens_per_s"
            )
        )
    return curves.sort("series", "batch")
