"""How well the model predicts published measurements: ratios to the ceiling, and the calibrated model's held-out error.

For every reference row (core.evidence.reference) the ceiling of its own
scenario is known; `ratio` is the share of it the measurement reached
(measured / ceiling for a rate, ceiling / measured for a time).

The calibrated model is scored by leaving one source out: the rows of one
source (a document, core.catalogue.reference.source_key) are held out, the
calibration is fitted on the rows of every other source that lie under their
ceilings, and the held-out rows are predicted. So a source never predicts
itself. The fit is the app's own calibration (core.evidence.calibration:
bandwidth and compute efficiencies and a per-step overhead), fitted per
accelerator and framework where the other sources' rows give an accepted
fit, else per framework (pooled over accelerators), else per accelerator
(FIT_LEVELS); failing all three, the ceiling scaled by the median ratio of
the most specific group of training rows of the same metric (LEVELS). Each
row's `basis` says which.

Figures per metric: n, median ratio (and its spread), MAPE of the calibrated
prediction = mean(|prediction - measured| / measured), and the share of rows
whose calibrated prediction is within 10% and 25% of the measurement. Every
summary figure is recomputable from `rows`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.reference import TIME_METRICS
from core.evidence.calibration import MIN_FIT_POINTS, MIN_FIT_R2, calibrate, design_of
from core.evidence.compare import ABOVE_CEILING
from core.evidence.reference import reference_compare

#: the headline group: decode throughput and time per output token
HEADLINE = "decode throughput and TPOT"


@dataclass(frozen=True)
class Scorecard:
    """The scorecard of a reference set."""

    rows: (
        pl.DataFrame
    )  # one row per reference measurement: id, metric, measured, ceiling, ratio, calibrated_prediction, held_out_fold, basis, ...
    metrics: pl.DataFrame  # one row per metric: n, median_ratio, p25_ratio, p75_ratio, mape_calibrated, within_10pct, within_25pct
    by_group: pl.DataFrame  # metric x (framework | family): n, median_ratio, p25_ratio, p75_ratio
    headline: dict[str, Any]  # the decode throughput + TPOT rows taken together

    def as_json(self) -> dict[str, Any]:
        """The scorecard as the CLI prints it (`roofline scorecard --json`)."""
        metrics = {r.pop("metric"): r for r in self.metrics.to_dicts()}
        cols = [
            "id",
            "metric",
            "measured",
            "ceiling",
            "ratio",
            "calibrated_prediction",
            "held_out_fold",
            "basis",
            "gpu",
            "model",
            "framework",
        ]
        above = self.rows.filter(pl.col("ratio") > ABOVE_CEILING).select(
            "id", "metric", "measured", "ceiling", "ratio", "cause", "note", "source_url"
        )
        return {
            "metrics": metrics,
            "headline": {HEADLINE: self.headline},
            "rows": self.rows.select(cols).to_dicts(),
            "above_ceiling": above.to_dicts(),
            "by_group": self.by_group.to_dicts(),
            "method": (
                "ratio = measured / ceiling (rates) or ceiling / measured (times); calibrated_prediction: leave one source out, the "
                "app's calibration (efficiencies and a per-step overhead) fitted on the other sources' rows under their ceilings, per "
                "accelerator and framework, else per framework, else per accelerator (a fit needs "
                f"{MIN_FIT_POINTS} points and R^2 >= {MIN_FIT_R2}), else the ceiling x the median training ratio of the metric; "
                "mape_calibrated = mean |prediction - measured| / measured; within_Npct = share with |prediction - measured| / measured <= N%"
            ),
        }


_CACHE: dict[tuple[str, int], Scorecard] = {}
_LOCK = threading.Lock()


def scorecard(cat: Catalogue) -> Scorecard:
    """The scorecard of the catalogue's reference set (cached per catalogue)."""
    key = (cat.key, id(cat.reference))
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    table = reference_compare(cat)
    rows = _held_out(cat, table) if table.height else table
    card = Scorecard(rows, _metric_figures(rows), _group_figures(rows), _summary(rows.filter(_headline_rows())) if rows.height else {})
    with _LOCK:
        _CACHE.clear()
        _CACHE[key] = card
    return card


def _headline_rows() -> pl.Expr:
    return ((pl.col("metric") == "output_tokens_per_s") & (pl.col("phase") == "decode")) | (pl.col("metric") == "tpot")


#: the groups a calibration is fitted over, most specific first: the first with an accepted fit on other sources predicts
#: (tried against fitting per accelerator only: 34% held-out MAPE on decode throughput and TPOT, against 24% with these levels)
FIT_LEVELS: tuple[tuple[str, ...], ...] = (("gpu", "framework"), ("framework",), ("gpu",))


def _held_out(cat: Catalogue, table: pl.DataFrame) -> pl.DataFrame:
    """Each row's calibrated prediction from the rows of every other source."""
    keyed = table.with_columns(
        pl.concat_str([pl.col(c).cast(pl.String) for c in level], separator=" · ").alias(_key(level)) for level in FIT_LEVELS
    )
    terms = design_of(keyed)
    keyed = pl.concat([keyed, terms.select(pl.all().name.prefix("x_"))], how="horizontal")
    parts = []
    for (source,), held in keyed.group_by("source", maintain_order=True):
        train = keyed.filter((pl.col("source") != source) & (pl.col("status") == "ok"))
        parts.append(_predict(cat, held, train, str(source)))
    pred = pl.concat(parts, how="diagonal_relaxed")
    out = table.join(pred, on="id", how="left", maintain_order="left")
    err = (pl.col("calibrated_prediction") - pl.col("measured")).abs() / pl.col("measured")
    return out.with_columns(err.alias("abs_pct_error"))


def _key(level: tuple[str, ...]) -> str:
    return "k_" + "_".join(level)


def _predict(cat: Catalogue, held: pl.DataFrame, train: pl.DataFrame, fold: str) -> pl.DataFrame:
    """Calibrated predictions of the held-out rows (in each metric's unit) and what they rest on."""
    fits: list[tuple[tuple[str, ...], dict[str, dict[str, Any]]]] = []
    for level in FIT_LEVELS:
        key = _key(level)
        wanted = train.filter(pl.col(key).is_in(held[key].unique().implode()))
        cal = calibrate(cat, wanted, compared=wanted, by=key) if wanted.height else None
        ok = {} if cal is None else {r["gpu"]: r for r in cal.filter(pl.col("accepted")).iter_rows(named=True)}
        fits.append((level, ok))
    medians = _median_ratios(train)
    out = []
    for row in held.iter_rows(named=True):
        pred, basis = None, "no training rows of this metric"
        for level, ok in fits:
            fit = ok.get(row[_key(level)])
            if fit is None:
                continue
            seconds = _fitted_time(row, fit)
            if seconds is not None and seconds > 0:
                what = " and ".join(f"{c} {row[c]}" for c in level)
                pred = _rate_in_unit(row, seconds)
                basis = f"calibration fitted on {int(fit['points'])} rows of {what} from other sources (R² {fit['r2']:.2f})"
                break
        if pred is None:
            factor, basis = _median_factor(medians, row)
            ceiling = row["ceiling"]
            if factor is not None and ceiling is not None:
                pred = ceiling / factor if row["metric"] in TIME_METRICS else ceiling * factor
        out.append({"id": row["id"], "calibrated_prediction": pred, "held_out_fold": fold, "basis": basis})
    return pl.DataFrame(out, schema={"id": pl.String, "calibrated_prediction": pl.Float64, "held_out_fold": pl.String, "basis": pl.String})


def _fitted_time(row: dict[str, Any], fit: dict[str, Any]) -> float | None:
    """overhead x steps + mem / eff_bandwidth + cmp / eff_compute + comm (core.evidence.calibration.design_of's terms)."""
    eff_c = fit["eff_compute"] if fit["eff_compute"] is not None and math.isfinite(fit["eff_compute"]) else 1.0
    parts = (row["x_steps"], row["x_mem"], row["x_cmp"], row["x_comm"])
    if any(p is None or not math.isfinite(p) for p in parts):
        return None
    return float(fit["overhead_s"] * row["x_steps"] + row["x_mem"] / fit["eff_bandwidth"] + row["x_cmp"] / eff_c + row["x_comm"])


def _rate_in_unit(row: dict[str, Any], seconds: float) -> float:
    """A fitted time (of what the row's y counts: a decode step, a prompt, a whole serving run) as the row's metric."""
    b, out, prompt = float(row["batch"]), float(row["output_tokens"]), float(max(row["input_tokens"], 1))
    tokens_per_s = b / seconds if row["phase"] == "decode" else prompt / seconds if row["phase"] == "prefill" else b * out / seconds
    metric = row["metric"]
    if metric == "output_tokens_per_s_per_user":
        return tokens_per_s / b
    if metric in ("tpot", "itl"):
        return b / tokens_per_s
    if metric == "ttft":
        return prompt / tokens_per_s
    return tokens_per_s


#: the groups a median ratio is taken over, most specific first (each within one metric): the first with training rows predicts
LEVELS: tuple[tuple[str, ...], ...] = (
    ("gpu", "framework"),
    ("family", "framework"),
    ("framework",),
    ("gpu",),
    ("family",),
    (),
)


def _median_ratios(train: pl.DataFrame) -> dict[tuple[str, ...], tuple[float, int]]:
    """(level columns..., their values..., metric) -> (median ratio, rows) of the training rows."""
    out: dict[tuple[str, ...], tuple[float, int]] = {}
    if not train.height:
        return out
    for level in LEVELS:
        for row in train.group_by(*level, "metric").agg(pl.col("ratio").median().alias("m"), pl.len().alias("n")).iter_rows(named=True):
            out[(*level, *(str(row[c]) for c in level), str(row["metric"]))] = (float(row["m"]), int(row["n"]))
    return out


def _median_factor(medians: dict[tuple[str, ...], tuple[float, int]], row: dict[str, Any]) -> tuple[float | None, str]:
    for level in LEVELS:
        hit = medians.get((*level, *(str(row[c]) for c in level), str(row["metric"])))
        if hit is not None and hit[0] > 0:
            what = ", ".join(f"{c} {row[c]}" for c in level) or "every accelerator and framework"
            return hit[0], f"ceiling x {hit[0]:.2f}, the median ratio of {hit[1]} {row['metric']} rows ({what}) from other sources"
    return None, "no training rows of this metric"


def _figures(frame: pl.DataFrame) -> list[pl.Expr]:
    err = pl.col("abs_pct_error")
    return [
        pl.len().alias("n"),
        pl.col("ratio").median().alias("median_ratio"),
        pl.col("ratio").quantile(0.25, "linear").alias("p25_ratio"),
        pl.col("ratio").quantile(0.75, "linear").alias("p75_ratio"),
        err.mean().alias("mape_calibrated"),
        (err <= 0.10).mean().alias("within_10pct"),
        (err <= 0.25).mean().alias("within_25pct"),
        err.is_not_null().sum().alias("n_predicted"),
    ]


def _metric_figures(rows: pl.DataFrame) -> pl.DataFrame:
    if not rows.height:
        return pl.DataFrame(schema={"metric": pl.String, "n": pl.UInt32})
    return rows.group_by("metric").agg(_figures(rows)).sort("n", "metric", descending=[True, False])


def _group_figures(rows: pl.DataFrame) -> pl.DataFrame:
    if not rows.height:
        return pl.DataFrame(schema={"metric": pl.String, "by": pl.String, "group": pl.String, "n": pl.UInt32})
    parts = []
    for by in ("framework", "family"):
        g = rows.group_by("metric", by).agg(
            pl.len().alias("n"),
            pl.col("ratio").median().alias("median_ratio"),
            pl.col("ratio").quantile(0.25, "linear").alias("p25_ratio"),
            pl.col("ratio").quantile(0.75, "linear").alias("p75_ratio"),
        )
        parts.append(g.rename({by: "group"}).with_columns(pl.lit(by).alias("by")))
    return (
        pl.concat(parts, how="diagonal_relaxed")
        .select("metric", "by", "group", "n", "median_ratio", "p25_ratio", "p75_ratio")
        .sort("metric", "by", "n", descending=[False, False, True])
    )


def _summary(rows: pl.DataFrame) -> dict[str, Any]:
    if not rows.height:
        return {"n": 0}
    return rows.select(_figures(rows)).to_dicts()[0]
