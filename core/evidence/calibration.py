"""Calibration: per accelerator, the bandwidth and compute efficiencies and per-step overhead that fit measurements.

`calibrate` fits, by least squares on relative error over the measurements
at or under their ceiling, time = overhead x steps + memory-bound time /
eff_bandwidth + compute-bound time / eff_compute (the datasheet model's
times); `calibration_fits` turns a fit into Scenario fields.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from core.catalogue.catalogue import Catalogue
from core.evidence.compare import compare


def calibrate(cat: Catalogue, rows: pl.DataFrame) -> pl.DataFrame:
    """Per accelerator, fit time = overhead x steps + memory time / eff_bandwidth + compute time / eff_compute.

    Least squares on relative error over the measurements at or under their
    ceiling (rows above it would pull the roof up). Times are the datasheet
    model's memory-bound and compute-bound operation times; a compute
    efficiency is reported only when some point has compute-bound time.
    Returns gpu, points, eff_bandwidth, eff_compute, overhead_s, r2,
    rel_rmse (relative RMS error of the fitted times) and note.
    """
    cols = ["gpu", "points", "eff_bandwidth", "eff_compute", "overhead_s", "r2", "rel_rmse", "note"]
    if not rows.height:
        return pl.DataFrame(schema={c: pl.String if c in ("gpu", "note") else pl.Float64 for c in cols})
    cmp = compare(cat, rows).filter(pl.col("status") == "ok")
    b, o = pl.col("batch").cast(pl.Float64), pl.col("output_tokens").cast(pl.Float64)
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    pre_mem = pl.when(pl.col("prefill_bound") == "memory").then(pl.col("prefill_step_time_s")).otherwise(0.0)
    pre_cmp = pl.col("prefill_step_time_s") - pre_mem
    ph = pl.col("phase")
    design = cmp.select(
        "gpu",
        pl.when(ph == "decode")
        .then(b / pl.col("tokens_per_s"))
        .when(ph == "prefill")
        .then(prompt / pl.col("tokens_per_s"))
        .otherwise(b * o / pl.col("tokens_per_s"))
        .alias("y"),
        pl.when(ph == "mixed").then(b + o).otherwise(1.0).alias("steps"),
        pl.when(ph == "decode")
        .then(pl.col("memory_bound_time_s"))
        .when(ph == "prefill")
        .then(pre_mem)
        .otherwise(b * pre_mem + o * pl.col("memory_bound_time_s"))
        .alias("mem"),
        pl.when(ph == "decode")
        .then(pl.col("compute_bound_time_s"))
        .when(ph == "prefill")
        .then(pre_cmp)
        .otherwise(b * pre_cmp + o * pl.col("compute_bound_time_s"))
        .alias("cmp"),
        pl.when(ph == "decode")
        .then(pl.col("comm_time_s"))
        .when(ph == "prefill")
        .then(0.0)
        .otherwise(o * pl.col("comm_time_s"))
        .alias("comm"),
    )
    out = []
    for (gpu,), g in design.group_by("gpu", maintain_order=True):
        y = g["y"].to_numpy() - g["comm"].to_numpy()
        names = ["steps", "mem"] + (["cmp"] if float(g["cmp"].sum()) > 0 else [])
        x = np.column_stack([g[c].to_numpy() for c in names])
        if g.height < len(names) + 1:
            out.append(
                {"gpu": gpu, "points": g.height, "note": f"needs at least {len(names) + 1} points under the ceiling, has {g.height}"}
            )
            continue
        w = 1.0 / g["y"].to_numpy()
        coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
        note = []
        if coef[0] < 0:  # no negative overhead: refit without it
            coef = np.concatenate([[0.0], np.linalg.lstsq(x[:, 1:] * w[:, None], y * w, rcond=None)[0]])
            note.append("overhead fitted below 0, fixed at 0")
        fit = x @ coef + g["comm"].to_numpy()
        ys = g["y"].to_numpy()
        r2 = (
            1.0 - float(np.sum((ys - fit) ** 2)) / float(np.sum((ys - ys.mean()) ** 2)) if g.height > 1 and np.ptp(ys) > 0 else float("nan")
        )
        effs = [1.0 / c if c > 0 else float("nan") for c in coef[1:]]
        if any(e > 1.0 for e in effs):
            note.append("an efficiency above 1: the datasheet roof is beaten, check the precisions")
        if "cmp" not in names:
            note.append("no compute-bound time in these points: compute efficiency not identified")
        out.append(
            {
                "gpu": gpu,
                "points": g.height,
                "eff_bandwidth": min(effs[0], 1.0),
                "eff_compute": min(effs[1], 1.0) if len(effs) > 1 else None,
                "overhead_s": float(coef[0]),
                "r2": r2,
                "rel_rmse": float(np.sqrt(np.mean(((fit - ys) / ys) ** 2))),
                "note": "; ".join(note),
            }
        )
    return pl.DataFrame(out, schema={c: pl.String if c in ("gpu", "note") else pl.Float64 for c in cols})


def calibration_fits(cal: pl.DataFrame | None) -> dict[str, dict[str, float]]:
    """Per accelerator id, the fitted factors as Scenario fields (eff_* clipped to (0, 1]; a factor not fitted is 1)."""
    if cal is None or cal.is_empty():
        return {}
    out: dict[str, dict[str, float]] = {}
    for row in cal.iter_rows(named=True):
        bw = row.get("eff_bandwidth")
        if bw is None or not math.isfinite(bw) or bw <= 0:
            continue
        comp = row.get("eff_compute")
        comp = 1.0 if comp is None or not math.isfinite(comp) or comp <= 0 else comp
        over = row.get("overhead_s")
        over = 0.0 if over is None or not math.isfinite(over) or over < 0 else over
        out[str(row["gpu"])] = {"eff_bandwidth": min(bw, 1.0), "eff_compute": min(comp, 1.0), "overhead_s": min(over, 10.0)}
    return out
