"""The roofline itself: ridge points, attainable FLOP/s, a model's operating points.

attainable(I) = min(P, B x I); the ridge I* = P / B (FLOP/byte). Operating
points come from the model's real operation table: the decode matmuls (every
weight matmul of a decode step), the prefill matmuls, decode attention, and
the whole decode and prefill steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.precisions import PEAK_PRECISIONS, storage_format
from core.model.ceilings import ScenarioArrays, scenario_steps
from core.model.engine import Steps, operation_costs
from core.model.scenario import Scenario

SWEEP_BATCHES = tuple(2**i for i in range(11))  # 1 .. 1024

#: Operating point -> (phase, which operation kinds it aggregates).
POINTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "decode matmul": ("decode", ("matmul", "moe", "lm_head")),
    "decode attention": ("decode", ("attn",)),
    "decode step": ("decode", ("embed", "matmul", "moe", "lm_head", "attn", "norm")),
    "prefill matmul": ("prefill", ("matmul", "moe", "lm_head")),
    "prefill step": ("prefill", ("embed", "matmul", "moe", "lm_head", "attn", "norm")),
}


def ridge_points(gpus: pl.DataFrame) -> pl.DataFrame:
    """One row per accelerator and supported precision: peak, bandwidth, ridge (FLOP/byte).

    Unsupported precisions (null peak) are absent, never zero.
    """
    long = gpus.select(
        "id",
        "name",
        "vendor",
        "form_factor",
        "year",
        "bandwidth_bytes_per_s",
        *[pl.col(f"peak_{p}").alias(p) for p in PEAK_PRECISIONS],
    ).unpivot(
        index=["id", "name", "vendor", "form_factor", "year", "bandwidth_bytes_per_s"],
        on=list(PEAK_PRECISIONS),
        variable_name="precision",
        value_name="peak_flops",
    )
    return long.filter(pl.col("peak_flops").is_not_null() & (pl.col("peak_flops") > 0)).with_columns(
        (pl.col("peak_flops") / pl.col("bandwidth_bytes_per_s")).alias("ridge")
    )


def attainable_flops(intensity: float, peak_flops: float, bandwidth_bytes_per_s: float) -> float:
    """min(P, B x I) in FLOP/s."""
    return min(peak_flops, bandwidth_bytes_per_s * intensity)


def roof_lines(
    gpus: pl.DataFrame,
    precisions: Sequence[str],
    *,
    eff_bandwidth: float = 1.0,
    eff_compute: float = 1.0,
    intensity_range: tuple[float, float] = (0.1, 1e5),
) -> pl.DataFrame:
    """Polyline points of each accelerator's roof: (intensity, attainable FLOP/s).

    Three points per roof (left edge, ridge, right edge) are enough on log axes.
    With efficiency factors below 1 a derated roof ("derated") is added beside
    the datasheet one.
    """
    ridges = ridge_points(gpus).filter(pl.col("precision").is_in(list(precisions)))
    kinds = [("datasheet", 1.0, 1.0)]
    if eff_bandwidth < 1.0 or eff_compute < 1.0:
        kinds.append(("derated", eff_bandwidth, eff_compute))
    frames = []
    lo, hi = intensity_range
    for kind, eb, ec in kinds:
        r = ridges.with_columns(
            (pl.col("peak_flops") * ec).alias("P"), (pl.col("bandwidth_bytes_per_s") * eb).alias("B"), pl.lit(kind).alias("roof")
        ).with_columns((pl.col("P") / pl.col("B")).alias("ridge_used"))
        for which, x in (("left", pl.lit(lo)), ("ridge", pl.col("ridge_used")), ("right", pl.lit(hi))):
            frames.append(
                r.with_columns(x.alias("intensity"), pl.lit(which).alias("point")).with_columns(
                    pl.min_horizontal(pl.col("P"), pl.col("B") * pl.col("intensity")).alias("attainable_flops")
                )
            )
    out = pl.concat(frames).with_columns(
        pl.format(
            "{} · {}{}",
            pl.col("name"),
            pl.col("precision"),
            pl.when(pl.col("roof") == "derated").then(pl.lit(" (derated)")).otherwise(pl.lit("")),
        ).alias("series")
    )
    return out.select(
        "id",
        "name",
        "precision",
        "roof",
        "series",
        "point",
        "intensity",
        "attainable_flops",
        pl.col("ridge_used").alias("ridge"),
        pl.col("P").alias("peak_flops"),
        pl.col("B").alias("bandwidth_bytes_per_s"),
    ).sort("series", "intensity")


def operating_points(cat: Catalogue, scenario: Scenario, batches: Sequence[int] | None = None) -> pl.DataFrame:
    """The model's operating points on the scenario's accelerator, for each batch.

    One row per (point, batch): FLOPs, bytes, intensity (FLOP/byte), attainable
    FLOP/s under the effective roof, share of peak, bound side, and the batch
    the decode matmuls need to reach the ridge (about ridge x bytes per weight / 2).
    Decode is the plain decode step (no speculative verify); prefill points do
    not depend on the decode batch and are repeated for each.
    """
    plain = scenario.model_copy(update={"spec_draft_len": 0})
    batch_list = sorted(set(batches or [scenario.batch]))
    st = scenario_steps(cat, ScenarioArrays.of(cat, [plain.model_copy(update={"batch": b}) for b in batch_list]))
    # every decode batch, then the one prompt's prefill (the same at every batch)
    steps = Steps.concat(st.decode, st.prefill.take(np.zeros(1, dtype=np.intp)))
    bandwidth, peak = np.append(st.bandwidth, st.bandwidth[0]), np.append(st.peak, st.peak[0])
    costs = operation_costs(cat.ops_matrix, steps, bandwidth, peak).with_columns(
        pl.col("step").replace_strict(dict(enumerate(batch_list)), default=None, return_dtype=pl.Int64).alias("batch")
    )
    decode, prefill = costs.filter(pl.col("batch").is_not_null()), costs.filter(pl.col("batch").is_null())
    frames = []
    for point, (phase, kinds) in POINTS.items():
        sub = (decode if phase == "decode" else prefill).filter(pl.col("kind").is_in(list(kinds)))
        agg = sub.group_by("step").agg(pl.col("batch").first(), pl.col("flops").sum(), pl.col("bytes").sum(), pl.col("time_s").sum())
        if phase == "prefill":
            agg = agg.drop("batch").join(pl.DataFrame({"batch": batch_list}, schema={"batch": pl.Int64}), how="cross")
        frames.append(agg.with_columns(pl.lit(point).alias("point"), pl.lit(phase).alias("phase")))
    B, used = float(st.bandwidth[0]), int(st.compute_used[0])
    P = None if np.isnan(st.peak[0]) else float(st.peak[0])  # no supported compute format: no compute roof
    w_bytes = storage_format(plain.weights).bytes
    return (
        pl.concat(frames, how="diagonal_relaxed")
        .with_columns((pl.col("flops") / pl.col("bytes")).alias("intensity"))
        .filter(pl.col("intensity") > 0)
        .with_columns(
            pl.min_horizontal(pl.lit(P, dtype=pl.Float64), B * pl.col("intensity")).alias("attainable_flops"),
            (pl.lit(P, dtype=pl.Float64) / B).alias("ridge"),
            pl.lit(PEAK_PRECISIONS[used] if used >= 0 else None, dtype=pl.String).alias("compute_used"),
        )
        .with_columns(
            (pl.col("attainable_flops") / pl.lit(P, dtype=pl.Float64)).alias("share_of_peak"),
            pl.when(pl.col("intensity") < pl.col("ridge")).then(pl.lit("memory")).otherwise(pl.lit("compute")).alias("bound"),
            (pl.col("ridge") * w_bytes / 2.0).ceil().cast(pl.Int64).alias("ridge_batch"),
        )
        .select(
            "point",
            "phase",
            "batch",
            "flops",
            "bytes",
            "intensity",
            "attainable_flops",
            "share_of_peak",
            "bound",
            "ridge",
            "ridge_batch",
            "compute_used",
            "time_s",
        )
        .sort("point", "batch")
    )


def decode_matmul_intensity(batch: int, weights: str) -> float:
    """The seeds' rule of thumb: 2 x batch / bytes per weight (FLOP/byte)."""
    return 2.0 * batch / storage_format(weights).bytes


def ridge_table(gpus: pl.DataFrame, precision: str, batch: int, weights: str) -> pl.DataFrame:
    """Ridge of each accelerator at `precision` against the decode matmul intensity.

    bound: compute when 2 x batch / bytes per weight reaches the ridge;
    ridge_batch: the batch at which it would (ceil(ridge x bytes / 2)).
    """
    intensity = decode_matmul_intensity(batch, weights)
    w_bytes = storage_format(weights).bytes
    return (
        ridge_points(gpus)
        .filter(pl.col("precision") == precision)
        .join(gpus.select("id", "peak_" + precision), on="id", how="left")
        .with_columns(
            pl.when(pl.col("ridge") <= intensity).then(pl.lit("compute")).otherwise(pl.lit("memory")).alias("bound"),
            (pl.col("ridge") * w_bytes / 2.0).ceil().cast(pl.Int64).alias("ridge_batch"),
        )
        .drop("peak_" + precision)
        .sort("ridge")
    )
