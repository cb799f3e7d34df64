"""The published measurements as the measured page and the other pages show them: filtered rows, findings, tables, the scorecard's view."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.evidence.compare import ABOVE_CEILING
from core.evidence.reference import reference_compare
from core.evidence.scorecard import HEADLINE, Scorecard

#: the filters of the published view: widget -> column
FILTERS = {"gpu": "gpu", "model": "model", "framework": "framework", "publisher": "publisher"}


@dataclass(frozen=True)
class ReferenceView:
    """The published measurements after the page's filters."""

    rows: pl.DataFrame  # reference_compare rows kept
    total: int  # rows before the filters
    findings: pl.DataFrame  # rows above their ceilings, with their causes
    sources: int  # distinct source documents among `rows`


def reference_view(
    cat: Catalogue,
    *,
    gpus: Sequence[str] = (),
    models: Sequence[str] = (),
    frameworks: Sequence[str] = (),
    publishers: Sequence[str] = (),
) -> ReferenceView:
    """The reference rows that pass the filters (an empty filter keeps every row)."""
    table = reference_compare(cat)
    rows = table
    for column, wanted in (("gpu", gpus), ("model", models), ("framework", frameworks), ("publisher", publishers)):
        if wanted:
            rows = rows.filter(pl.col(column).is_in(list(wanted)))
    findings = rows.filter(pl.col("ratio") > ABOVE_CEILING)
    return ReferenceView(rows, table.height, findings, rows["source"].n_unique() if rows.height else 0)


def options(cat: Catalogue) -> dict[str, list[str]]:
    """The values each filter can take (those the reference set holds), sorted."""
    table = cat.reference
    return {k: sorted(set(table[c].to_list())) if table.height else [] for k, c in FILTERS.items()}


def reference_display(rows: pl.DataFrame) -> pl.DataFrame:
    """The published rows as the page's table: what was measured, the published value as printed, its ceiling, the share reached."""
    if not rows.height:
        return pl.DataFrame()
    return rows.select(
        pl.col("id").alias("Row"),
        pl.col("gpu_name").alias("Accelerator"),
        pl.col("num_gpus").alias("GPUs"),
        pl.col("model_name").alias("Model"),
        pl.col("weights").alias("Weights"),
        pl.col("kv").alias("KV cache"),
        pl.col("framework").alias("Framework"),
        pl.col("framework_version").alias("Version"),
        pl.when(pl.col("batch_printed").is_null())
        .then(pl.lit("not printed (max load)"))
        .otherwise(pl.col("batch_printed").cast(pl.String))
        .alias("Batch / concurrency"),
        pl.col("batch_kind").alias("Batch kind"),
        (pl.col("requests") if "requests" in rows.columns else pl.lit(None, dtype=pl.Int64)).alias("Requests sent"),
        (pl.col("depth") if "depth" in rows.columns else pl.lit(None, dtype=pl.Int64)).alias("Cached depth (tokens)"),
        (pl.col("kv_window") if "kv_window" in rows.columns else pl.lit(None, dtype=pl.Int64)).alias("KV window (tokens)"),
        _limits(rows).alias("Latency limits"),
        pl.col("input_tokens").alias("Input (tokens)"),
        pl.col("output_tokens").alias("Output (tokens)"),
        pl.col("metric").alias("Metric"),
        (pl.col("statistic") if "statistic" in rows.columns else pl.lit(None, dtype=pl.String)).alias("Statistic"),
        pl.col("value").alias("Published value"),
        pl.col("unit").alias("Unit"),
        _in_printed_unit(pl.col("ceiling")).alias("Ceiling (same unit)"),
        pl.col("ratio").alias("Share of ceiling"),
        pl.col("cause").alias("Above its ceiling because"),
        (pl.col("unscored") if "unscored" in rows.columns else pl.lit(None, dtype=pl.String)).alias("Not scored because"),
        pl.col("publisher").alias("Publisher"),
        pl.col("source_url").alias("Source"),
        pl.col("source_date").alias("Source date"),
        pl.col("note").alias("Note"),
    )


def _limits(rows: pl.DataFrame) -> pl.Expr:
    """The latency limits a run was held to, as people write them ("TTFT ≤ 6 s, TPOT ≤ 175 ms"); none: empty."""
    if "tpot_limit_s" not in rows.columns:
        return pl.lit(None, dtype=pl.String)

    def written(x: pl.Expr) -> pl.Expr:
        return x.round_sig_figs(3).cast(pl.String).str.replace(r"\.0$", "")

    ttft = pl.format("TTFT ≤ {} s", written(pl.col("ttft_limit_s")))
    tpot = pl.format("TPOT ≤ {} ms", written(pl.col("tpot_limit_s") * 1e3))
    both = pl.concat_str([ttft, tpot], separator=", ", ignore_nulls=True)
    return pl.when(pl.col("ttft_limit_s").is_not_null() | pl.col("tpot_limit_s").is_not_null()).then(both)


def _in_printed_unit(si: pl.Expr) -> pl.Expr:
    """A figure in SI (tokens/s of the system, tokens/s per user, seconds) in the row's printed unit."""
    unit = pl.col("unit")
    return pl.when(unit == "ms").then(si * 1e3).when(unit == "tokens/s/gpu").then(si / pl.col("num_gpus")).otherwise(si)


def scorecard_tables(card: Scorecard) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The scorecard's per-group and per-metric table, and its by-framework / by-family table, in words and percent."""

    def figures(frame: pl.DataFrame) -> list[pl.Expr]:
        return [
            pl.col("n").alias("Measurements"),
            pl.col("campaigns").alias("Campaigns"),
            (pl.col("median_ratio") * 100).alias("Median share of ceiling (%)"),
            (pl.col("mape") * 100).alias("Predicted: MAPE, campaign held out (%)"),
            (pl.col("within_10pct") * 100).alias("Within 10% (% of rows)"),
            (pl.col("within_25pct") * 100).alias("Within 25% (% of rows)"),
            (pl.col("mape_gpu_out") * 100).alias("MAPE, accelerator held out (%)"),
            (pl.col("mape_model_out") * 100).alias("MAPE, model held out (%)"),
        ]

    per_group = pl.concat(
        [
            card.groups.select(pl.col("group").alias("Figures"), *figures(card.groups)),
            card.metrics.select(pl.col("metric").alias("Figures"), *figures(card.metrics)),
        ]
    )
    groups = card.by_group.select(
        pl.col("group").alias("Figures"),
        pl.col("by").alias("By"),
        pl.col("value").alias("Group"),
        *figures(card.by_group),
    )
    return per_group, groups


def headline_sentence(card: Scorecard) -> str:
    """The scorecard's headline in one sentence: decode throughput and TPOT, held out by campaign."""
    h = card.headline
    if not h or not h.get("n"):
        return "No decode throughput or TPOT measurements in the reference set."
    stale = "" if card.current else " (the shipped fit was made on another version of the reference set: refit it)"
    return (
        f"{HEADLINE[0].upper() + HEADLINE[1:]}: {h['n']} published measurements from {h['campaigns']} campaigns reached a median "
        f"{h['median_ratio']:.0%} of their datasheet ceilings. Fitted on the other publishers' campaigns, the predicted model "
        f"is off by {h['mape']:.0%} on average (median {h['median_ape']:.0%}); {h['within_10pct']:.0%} within 10%, "
        f"{h['within_25pct']:.0%} within 25%; {h['mape_gpu_out']:.0%} with the accelerator held out{stale}."
    )


def evidence_display(rows: pl.DataFrame) -> pl.DataFrame:
    """The few rows shown beside a scenario: the published table's columns that say what, how much, how close, and where."""
    if not rows.height:
        return pl.DataFrame()
    return reference_display(rows).select(  # what was reached and where it is printed first: the rest reads as detail
        "Accelerator",
        "Model",
        "Metric",
        "Published value",
        "Unit",
        "Share of ceiling",
        "Source",
        "GPUs",
        "Weights",
        "Framework",
        "Batch / concurrency",
        "Input (tokens)",
        "Output (tokens)",
    )
