"""How well the model predicts published measurements: ratios to the ceiling, and the predicted model's held-out error.

For every reference row (core.evidence.reference) the ceiling of its own
scenario is known; `ratio` is the share of it the measurement reached
(measured / ceiling for a rate, ceiling / measured for a time).

The predicted model (core.model.predicted, fitted by core.evidence.predictor)
is scored by leaving one publisher's campaign out at a time: the rows of one
campaign (one article, one submission, one performance page, whatever its
URLs: the reference set's `campaign`) are predicted by the fit on every
other campaign's rows under their ceilings, so no campaign predicts itself.
The same is done holding out one accelerator at a time and one model at a
time. The held-out predictions ship with the seed (data/seed/predictor.json)
and each row carries them here: `predicted` (campaign held out, in the
metric's unit), `predicted_gpu_out`, `predicted_model_out`.

Figures per metric: n, median ratio (and its spread), MAPE = mean(|predicted
- measured| / measured) held out by campaign, the share within 10% and 25%,
and the MAPE with the accelerator or the model held out; per accelerator
family and per framework the same. Every summary figure is recomputable
from `rows`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.once import Once
from core.catalogue.reference import TIME_METRICS
from core.evidence.compare import ABOVE_CEILING
from core.evidence.predictor import HOLD_OUT, reference_seconds, scored, shipped
from core.evidence.reference import reference_compare

#: the headline group: decode throughput and time per output token
HEADLINE = "decode throughput and TPOT"
#: the groups the scorecard reports besides the metrics: (name, what it selects)
GROUPS: dict[str, pl.Expr] = {
    HEADLINE: ((pl.col("metric") == "output_tokens_per_s") & (pl.col("phase") == "decode")) | (pl.col("metric") == "tpot"),
    "serving and max-load throughput": (pl.col("metric") == "output_tokens_per_s") & (pl.col("phase") == "mixed"),
    "prefill tokens/s": pl.col("metric") == "prefill_tokens_per_s",
    "TTFT": pl.col("metric") == "ttft",
}
_COLUMN_OF = {"campaign": "predicted", "gpu": "predicted_gpu_out", "model": "predicted_model_out"}


#: Each scored row as the CLI prints it and the page's CSV holds it: its measurement, ceiling and held-out predictions.
ROW_COLUMNS = (
    "id", "campaign", "metric", "measured", "ceiling", "ratio", "predicted", "predicted_gpu_out", "predicted_model_out",
    "abs_pct_error", "gpu", "family", "model", "framework",
)  # fmt: skip


@dataclass(frozen=True)
class Scorecard:
    """The scorecard of a reference set."""

    rows: pl.DataFrame  # one row per reference measurement: id, metric, measured, ceiling, ratio, predicted, ..., error columns
    metrics: pl.DataFrame  # one row per metric: n, median_ratio, p25_ratio, p75_ratio, mape, within_10pct, within_25pct, ...
    groups: pl.DataFrame  # one row per headline group (GROUPS): the same figures
    by_group: pl.DataFrame  # group (GROUPS) x (framework | family): n, median ratio, mape and the held-out-by variants
    headline: dict[str, Any]  # the decode throughput + TPOT rows taken together
    current: bool  # the shipped fit was fitted on this reference set and these figures
    left_out: pl.DataFrame  # the reference rows not scored, whose scenario as run is not known: id, campaign, metric, why

    def as_json(self) -> dict[str, Any]:
        """The scorecard as the CLI prints it (`roofline scorecard --json`)."""
        metrics = {r.pop("metric"): r for r in self.metrics.to_dicts()}
        groups = {r.pop("group"): r for r in self.groups.to_dicts()}
        above = self.rows.filter(pl.col("ratio") > ABOVE_CEILING).select(
            "id", "metric", "measured", "ceiling", "ratio", "cause", "note", "source_url"
        )
        return {
            "metrics": metrics,
            "groups": groups,
            "headline": {HEADLINE: self.headline},
            "by_group": self.by_group.to_dicts(),
            "rows": self.rows.select(ROW_COLUMNS).to_dicts(),
            "above_ceiling": above.to_dicts(),
            "left_out": self.left_out.to_dicts(),
            "folds": {
                "campaign": self.rows["campaign"].n_unique(),
                "gpu": self.rows["gpu"].n_unique(),
                "model": self.rows["model"].n_unique(),
            },
            "current": self.current,
            "method": (
                "ratio = measured / ceiling (rates) or ceiling / measured (times). predicted: the predicted model (per-class "
                "efficiencies and overheads, a hierarchy over vendor, accelerator family, accelerator, framework, weight format and "
                "model) fitted on every other publisher's campaign's rows under their ceilings; predicted_gpu_out and "
                "predicted_model_out: the same holding out the row's accelerator or model. mape = mean |predicted - measured| / "
                "measured; within_Npct = share with |predicted - measured| / measured <= N%; the _gpu_out and _model_out figures "
                "hold out the accelerator or the model instead of the campaign."
            ),
        }


_CARDS: Once[Scorecard] = Once()


def scorecard(cat: Catalogue) -> Scorecard:
    """The scorecard of the catalogue's reference set (cached per catalogue, computed once however many ask at once)."""
    return _CARDS.get((cat.key, id(cat.reference)), lambda: _scorecard(cat))


def _scorecard(cat: Catalogue) -> Scorecard:
    table = reference_compare(cat)
    fit = shipped(cat)
    kept = pl.Series(scored(table)) if table.height else pl.Series([], dtype=pl.Boolean)
    rows = with_predictions(table.filter(kept), fit.held_out) if table.height else table
    return Scorecard(
        rows,
        _figures_by(rows, "metric"),
        _group_figures(rows),
        _by_group(rows),
        _figures(rows.filter(GROUPS[HEADLINE])) if rows.height else {"n": 0},
        fit.current,
        table.filter(~kept).select("id", "campaign", "metric", "unscored", "source_url") if table.height else pl.DataFrame(),
    )


def with_predictions(table: pl.DataFrame, held_out: dict[str, dict[str, float]]) -> pl.DataFrame:
    """The reference rows with their held-out predictions in each metric's unit, and each one's relative error.

    A held-out prediction is the seconds the row's figure counts (core.model.workload); a rate is then the measured
    rate x measured seconds / predicted seconds (the same tokens counted), a time the predicted seconds.
    """
    measured_s = reference_seconds(table)
    out = table.with_columns(pl.Series("_measured_s", measured_s))
    for by in HOLD_OUT:
        seconds = out["id"].replace_strict(held_out.get(by, {}), default=None, return_dtype=pl.Float64)
        value = (
            pl.when(pl.col("metric").is_in(list(TIME_METRICS)))
            .then(pl.col("_s"))
            .otherwise(pl.col("measured") * pl.col("_measured_s") / pl.col("_s"))
        )
        col = _COLUMN_OF[by]
        out = out.with_columns(seconds.alias("_s")).with_columns(value.alias(col)).drop("_s")
        out = out.with_columns(((pl.col(col) - pl.col("measured")).abs() / pl.col("measured")).alias(f"abs_pct_error{_suffix(by)}"))
    return out.drop("_measured_s")


def _suffix(by: str) -> str:
    return "" if by == "campaign" else f"_{by}_out"


def _figure_exprs() -> list[pl.Expr]:
    err = pl.col("abs_pct_error")
    return [
        pl.len().alias("n"),
        pl.col("ratio").median().alias("median_ratio"),
        pl.col("ratio").quantile(0.25, "linear").alias("p25_ratio"),
        pl.col("ratio").quantile(0.75, "linear").alias("p75_ratio"),
        err.mean().alias("mape"),
        err.median().alias("median_ape"),
        (err <= 0.10).mean().alias("within_10pct"),
        (err <= 0.25).mean().alias("within_25pct"),
        err.is_not_null().sum().alias("n_predicted"),
        pl.col("abs_pct_error_gpu_out").mean().alias("mape_gpu_out"),
        pl.col("abs_pct_error_model_out").mean().alias("mape_model_out"),
        pl.col("campaign").n_unique().alias("campaigns"),
    ]


def _figures(rows: pl.DataFrame) -> dict[str, Any]:
    if not rows.height:
        return {"n": 0}
    return rows.select(_figure_exprs()).to_dicts()[0]


def _figures_by(rows: pl.DataFrame, by: str) -> pl.DataFrame:
    if not rows.height:
        return pl.DataFrame(schema={by: pl.String, "n": pl.UInt32})
    return rows.group_by(by).agg(_figure_exprs()).sort("n", by, descending=[True, False])


def _group_figures(rows: pl.DataFrame) -> pl.DataFrame:
    if not rows.height:
        return pl.DataFrame(schema={"group": pl.String, "n": pl.UInt32})
    parts = [rows.filter(sel).select(_figure_exprs()).with_columns(pl.lit(name).alias("group")) for name, sel in GROUPS.items()]
    return pl.concat(parts, how="diagonal_relaxed").select("group", pl.exclude("group"))


def _by_group(rows: pl.DataFrame) -> pl.DataFrame:
    """Each headline group's figures per framework and per accelerator family."""
    if not rows.height:
        return pl.DataFrame(schema={"group": pl.String, "by": pl.String, "value": pl.String, "n": pl.UInt32})
    parts = []
    for name, sel in GROUPS.items():
        sub = rows.filter(sel)
        for by in ("framework", "family"):
            g = sub.group_by(by).agg(_figure_exprs()).rename({by: "value"})
            parts.append(g.with_columns(pl.lit(name).alias("group"), pl.lit(by).alias("by")))
    return (
        pl.concat(parts, how="diagonal_relaxed")
        .select("group", "by", "value", pl.exclude("group", "by", "value"))
        .sort("group", "by", "n", descending=[False, False, True])
    )
