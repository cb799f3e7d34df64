"""Calibration: per accelerator, the bandwidth and compute efficiencies and per-step overhead that fit measurements.

`calibrate` fits, by least squares on relative error over the measurements
at or under their ceiling, time = overhead x steps + memory-bound time /
eff_bandwidth + compute-bound time / eff_compute (the datasheet model's
times). A fit is offered only where it is good enough: at least
MIN_FIT_POINTS measurements under their ceiling and an R² of the step times of
at least MIN_FIT_R2 (`refusal` says why not, in the fit's `note`; `accepted`
says which). `calibration_fits` turns the accepted fits into Scenario fields,
each for the accelerator it was fitted on; `compare_calibrated` compares a
dataset once and fits it once.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from core.catalogue.catalogue import Catalogue
from core.evidence.compare import compare, compare_scenarios, with_calibration

#: A fit rests on at least this many measurements under their ceiling (a fit of 3 factors needs 4 to be judged at all) ...
MIN_FIT_POINTS = 4
#: ... and explains at least this share of the variance of their step times (R²); below either it is refused.
MIN_FIT_R2 = 0.5


def refusal(points: float | None, r2: float | None) -> str | None:
    """Why a fit of `points` measurements with this R² is refused (MIN_FIT_POINTS, MIN_FIT_R2), or None when it is accepted."""
    n = 0 if points is None or not math.isfinite(points) else int(points)
    if n < MIN_FIT_POINTS:
        return f"refused: {n} point{'s' if n != 1 else ''} under the ceiling, a fit needs at least {MIN_FIT_POINTS}"
    if r2 is None or not math.isfinite(r2):
        return "refused: R² undefined (the step times of these points do not vary)"
    if r2 < MIN_FIT_R2:
        return f"refused: R² {r2:.2f} is below {MIN_FIT_R2:g}, the fit explains too little of the step times"
    return None


def calibrate(cat: Catalogue, rows: pl.DataFrame, *, compared: pl.DataFrame | None = None, by: str = "gpu") -> pl.DataFrame:
    """Per accelerator, fit time = overhead x steps + memory time / eff_bandwidth + compute time / eff_compute.

    Least squares on relative error over the measurements at or under their
    ceiling (rows above it would pull the roof up). Times are the datasheet
    model's memory-bound and compute-bound operation times; a compute
    efficiency is reported only when some point has compute-bound time.
    Returns gpu, points, eff_bandwidth, eff_compute, overhead_s, r2,
    rel_rmse (relative RMS error of the fitted times), accepted (the
    quality rule, `refusal`) and note (a refusal first). `compared`: the
    datasheet comparison of the same rows (`compare(cat, rows)`), when the caller has it already.
    `by`: the column whose groups are fitted apart (an accelerator by default; the scorecard also fits by
    framework); its values are in the result's `gpu` column.
    """
    if not rows.height:
        return pl.DataFrame(schema=_SCHEMA)
    cmp = compared if compared is not None else compare(cat, rows)
    used = [
        *dict.fromkeys(["gpu", by]),
        "phase",
        "batch",
        "output_tokens",
        "input_tokens",
        "tokens_per_s",
        "prefill_bound",
        "prefill_step_time_s",
    ]
    used += ["memory_bound_time_s", "compute_bound_time_s", "comm_time_s"]
    used += ["scenario_id"] if "scenario_id" in cmp.columns else []
    cmp = cmp.select(*used, "status").filter(pl.col("status") == "ok")
    design = design_of(cmp).with_columns(cmp[by].cast(pl.String).alias("gpu"))
    # rows of one scenario share their design (steps, mem, cmp, comm): the weighted least squares of the rows is the
    # least squares of one row per scenario, scaled by the root of its summed weights (w = 1 / y), exactly
    keyed = by == "gpu" and "scenario_id" in cmp.columns
    group = ["scenario_id"] if keyed else ["gpu", "steps", "mem", "cmp", "comm"]
    y = pl.col("y")
    groups = (
        design.with_columns(cmp["scenario_id"] if keyed else [])
        .group_by(group, maintain_order=True)
        .agg(
            *(pl.col(c).first() for c in ("gpu", "steps", "mem", "cmp", "comm") if c not in group),
            pl.len().alias("n"),
            y.sum().alias("sy"),
            (y * y).sum().alias("syy"),
            (1.0 / y).sum().alias("s1"),
            (1.0 / (y * y)).sum().alias("s2"),
        )
    )
    out = []
    for (gpu,), g in groups.group_by("gpu", maintain_order=True):
        out.append(_fit(str(gpu), g))
    return pl.DataFrame(out, schema=_SCHEMA)


def design_of(cmp: pl.DataFrame) -> pl.DataFrame:
    """Per compared row, the fit's terms: y (measured time of what the row counts), steps, mem, cmp and comm (the datasheet
    model's memory-bound, compute-bound and communication times of the same work). The fitted time is
    overhead x steps + mem / eff_bandwidth + cmp / eff_compute + comm."""
    b, o = pl.col("batch").cast(pl.Float64), pl.col("output_tokens").cast(pl.Float64)
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    pre_mem = pl.when(pl.col("prefill_bound") == "memory").then(pl.col("prefill_step_time_s")).otherwise(0.0)
    pre_cmp = pl.col("prefill_step_time_s") - pre_mem
    ph = pl.col("phase")
    return cmp.select(
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


def _fit(gpu: str, g: pl.DataFrame) -> dict[str, Any]:
    """One accelerator's fit from its scenarios' sums (n, sy, syy, s1 = sum 1/y, s2 = sum 1/y², per design row)."""
    n, sy, syy, s1, s2 = (g[c].to_numpy().astype(np.float64) for c in ("n", "sy", "syy", "s1", "s2"))
    comm = g["comm"].to_numpy()
    points = int(n.sum())
    names = ["steps", "mem"] + (["cmp"] if float(g["cmp"].sum()) > 0 else [])
    need = len(names) + 1
    if points < need or g.height < need:
        why = f"has {points}" if points < need else f"has {points} but only {g.height} distinct scenario{'s' if g.height != 1 else ''}"
        return {
            "gpu": gpu,
            "points": points,
            "accepted": False,
            "note": f"refused: a fit of {len(names)} factors needs at least {max(need, MIN_FIT_POINTS)} points under the ceiling "
            f"in {need} distinct scenarios, {why}",
        }
    x = np.column_stack([g[c].to_numpy() for c in names])
    scale = np.sqrt(s2)
    target = (s1 - comm * s2) / scale  # sum over a scenario's rows of w² (y - comm), over the root of its summed w²
    coef, *_ = np.linalg.lstsq(x * scale[:, None], target, rcond=None)
    note = []
    if coef[0] < 0:  # no negative overhead: refit without it
        coef = np.concatenate([[0.0], np.linalg.lstsq(x[:, 1:] * scale[:, None], target, rcond=None)[0]])
        note.append("overhead fitted below 0, fixed at 0")
    fit = x @ coef + comm  # the fitted time of each scenario
    residual = float(np.sum(syy - 2 * fit * sy + n * fit**2))
    spread = float(syy.sum() - sy.sum() ** 2 / points)
    r2 = 1.0 - residual / spread if points > 1 and spread > 1e-12 * float(syy.sum()) else float("nan")
    rel = float(np.sum(fit**2 * s2 - 2 * fit * s1 + n)) / points  # mean of ((fit - y) / y)²
    effs = [1.0 / c if c > 0 else float("nan") for c in coef[1:]]
    if any(e > 1.0 for e in effs):
        note.append("an efficiency above 1: the datasheet roof is beaten, check the precisions")
    if "cmp" not in names:
        note.append("no compute-bound time in these points: compute efficiency not identified")
    eff_bandwidth = min(effs[0], 1.0)
    refused = refusal(points, r2) or (None if math.isfinite(eff_bandwidth) else "refused: no bandwidth efficiency fitted")
    return {
        "gpu": gpu,
        "points": points,
        "eff_bandwidth": eff_bandwidth,
        "eff_compute": min(effs[1], 1.0) if len(effs) > 1 else None,
        "overhead_s": float(coef[0]),
        "r2": r2,
        "rel_rmse": math.sqrt(max(rel, 0.0)),
        "accepted": refused is None,
        "note": "; ".join(([refused] if refused else []) + note),
    }


_SCHEMA = {
    **{c: pl.Float64 for c in ("points", "eff_bandwidth", "eff_compute", "overhead_s", "r2", "rel_rmse")},
    "gpu": pl.String,
    "accepted": pl.Boolean,
    "note": pl.String,
}
_SCHEMA = {c: _SCHEMA[c] for c in ("gpu", "points", "eff_bandwidth", "eff_compute", "overhead_s", "r2", "rel_rmse", "accepted", "note")}


def compare_calibrated(
    cat: Catalogue, rows: pl.DataFrame, calibrated: bool, *, flag_text: bool = True
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """A dataset against the model, compared once and (when `calibrated`) fitted once from that comparison:
    the comparison (with the calibrated columns of the accepted fits) and the fit (None when not asked for).
    `flag_text`: as in core.evidence.compare.compare."""
    if not rows.height:
        return rows, calibrate(cat, rows) if calibrated else None
    cmp, distinct = compare_scenarios(cat, rows, flag_text=flag_text)
    if not calibrated:
        return cmp, None
    cal = calibrate(cat, rows, compared=cmp)
    return with_calibration(cat, cmp, cal, distinct=distinct), cal


def calibration_fits(cal: pl.DataFrame | None) -> dict[str, dict[str, float]]:
    """Per accelerator id, the accepted fits' factors as Scenario fields (eff_* clipped to (0, 1]; a factor not fitted is 1).

    A fit is accepted by its `accepted` column (`calibrate`), else, where the
    frame has `points` and `r2`, by the quality rule (`refusal`); a frame of
    factors alone is taken as given.
    """
    if cal is None or cal.is_empty():
        return {}
    out: dict[str, dict[str, float]] = {}
    for row in cal.iter_rows(named=True):
        if "accepted" in row:
            if not row["accepted"]:
                continue
        elif "points" in row and "r2" in row and refusal(row["points"], row["r2"]) is not None:
            continue
        bw = row.get("eff_bandwidth")
        if bw is None or not math.isfinite(bw) or bw <= 0:
            continue
        comp = row.get("eff_compute")
        comp = 1.0 if comp is None or not math.isfinite(comp) or comp <= 0 else comp
        over = row.get("overhead_s")
        over = 0.0 if over is None or not math.isfinite(over) or over < 0 else over
        out[str(row["gpu"])] = {"eff_bandwidth": min(bw, 1.0), "eff_compute": min(comp, 1.0), "overhead_s": min(over, 10.0)}
    return out
