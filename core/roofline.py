"""The roofline itself: ridge points, attainable FLOP/s, a model's operating points.

attainable(I) = min(P, B x I); the ridge I* = P / B (FLOP/byte). Operating
points come from the model's real operation table: the decode matmuls (every
weight matmul of a decode step), the prefill matmuls, decode attention, and
the whole decode and prefill steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from core.catalogue import Catalogue
from core.ceilings import _steps_with_hardware, scenario_frame
from core.perfmodel import collect, operation_costs
from core.precisions import PEAK_PRECISIONS, storage_format
from core.specs import Scenario

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
    Prefill points do not depend on the decode batch and are repeated for each.
    """
    s = scenario_frame([scenario]).row(0, named=True)
    batch_list = sorted(set(batches or [s["batch"]]))
    base = {
        "gpu_id": s["gpu"],
        "model_id": s["model"],
        "num_gpus": s["num_gpus"],
        "weights": s["weights"],
        "compute": s["compute"],
        "kv": s["kv"],
        "eff_bandwidth": s["eff_bandwidth"],
        "eff_compute": s["eff_compute"],
        "flash": s["flash_attention"],
        "overhead_s": s["overhead_s"],
    }
    rows = [{**base, "batch": b, "q": 1, "cached": s["context"], "prefill": False} for b in batch_list]
    rows.append({**base, "batch": 1, "q": s["prompt"], "cached": 0, "prefill": True})
    steps = pl.DataFrame(rows).with_row_index("step_id")
    from core.ceilings import _check_ids

    _check_ids(cat, steps)
    costs = collect(operation_costs(_steps_with_hardware(cat, steps), cat.ops.lazy()), steps.height)
    frames = []
    for point, (phase, kinds) in POINTS.items():
        sub = costs.filter((pl.col("prefill") == (phase == "prefill")) & pl.col("kind").is_in(list(kinds)))
        agg = sub.group_by("step_id", "batch").agg(
            pl.col("flops").sum(),
            pl.col("bytes").sum(),
            pl.col("time_s").sum(),
            pl.col("peak_flops").first(),
            pl.col("bandwidth_bytes_per_s").first(),
            pl.col("eff_compute").first(),
            pl.col("eff_bandwidth").first(),
            pl.col("compute_used").first(),
        )
        if phase == "prefill":
            agg = agg.drop("batch").join(pl.DataFrame({"batch": batch_list}), how="cross")
        frames.append(agg.with_columns(pl.lit(point).alias("point"), pl.lit(phase).alias("phase")))
    w_bytes = storage_format(s["weights"]).bytes
    out = pl.concat(frames, how="diagonal_relaxed")
    P = pl.col("peak_flops") * pl.col("eff_compute")
    B = pl.col("bandwidth_bytes_per_s") * pl.col("eff_bandwidth")
    return (
        out.with_columns((pl.col("flops") / pl.col("bytes")).alias("intensity"))
        .filter(pl.col("intensity") > 0)
        .with_columns(
            pl.min_horizontal(P, B * pl.col("intensity")).alias("attainable_flops"),
            (P / B).alias("ridge"),
        )
        .with_columns(
            (pl.col("attainable_flops") / P).alias("share_of_peak"),
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


def plain_reading(points: pl.DataFrame, result: dict[str, object]) -> str:
    """A short reading of the view, computed from the numbers shown.

    `points` are the operating points at one batch; `result` is the
    scenario's ceilings record (core.ceilings.ceiling).
    """
    by_point = {r["point"]: r for r in points.iter_rows(named=True)}
    step = by_point.get("decode step")
    mm = by_point.get("decode matmul")
    attn = by_point.get("decode attention")
    pre = by_point.get("prefill step")
    if step is None or mm is None:
        return "No operating points for this scenario."
    lines = []
    share = float(step["share_of_peak"])
    if step["bound"] == "memory":
        lines.append(
            f"Decode is **memory-bound**: the whole step runs at {step['intensity']:.1f} FLOP/byte against a ridge of "
            f"{step['ridge']:.0f}, so at most {share:.1%} of peak compute is usable. The levers that help are fewer bytes "
            "(quantised weights or KV cache, GQA/MLA) and more reuse per byte (a larger batch, speculative decoding); "
            "more FLOP/s would not."
        )
    else:
        lines.append(
            f"Decode is **compute-bound** at this batch: {step['intensity']:.1f} FLOP/byte is past the ridge of {step['ridge']:.0f}. "
            "Adding sequences now adds queueing delay; lower-precision math or more GPUs raise the roof."
        )
    if mm["bound"] == "memory":
        lines.append(f"The decode matmuls need a batch of about **{mm['ridge_batch']:,}** to reach the ridge (now {mm['batch']}).")
    if attn is not None:
        lines.append(
            f"Decode attention sits at {attn['intensity']:.1f} FLOP/byte whatever the batch: every sequence reads its own KV cache."
        )
    if pre is not None:
        lines.append(f"Prefill runs at {pre['intensity']:,.0f} FLOP/byte, **{pre['bound']}-bound**.")
    flags = result.get("flags") or []
    if isinstance(flags, list) and flags:
        lines.append("Note: " + "; ".join(str(f) for f in flags) + ".")
    return " ".join(lines)
