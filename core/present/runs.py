"""Runs side by side, for reading: the aligned table in reading units and the per-user against per-GPU chart."""

from __future__ import annotations

import altair as alt
import polars as pl

from core.catalogue.catalogue import Catalogue
from core.evidence.runs import RunsComparison
from core.present.charts import ACCELERATOR_COLOURS, STACKED_LEGENDS, log_axis, positive

#: Scenario columns in reading words (the table's headers).
_SCENARIO_WORDS = {
    "gpu": "accelerator",
    "num_gpus": "GPUs",
    "model": "model",
    "weights": "weights",
    "kv": "KV",
    "compute": "compute",
    "phase": "phase",
    "batch": "batch (sequences)",
    "input_tokens": "input (tokens)",
    "output_tokens": "output (tokens)",
}


def runs_table(cat: Catalogue, result: RunsComparison) -> pl.DataFrame:
    """One row per scenario and run: the scenario (what the runs differ in beside the run's name), the run's medians,
    their difference from and ratio to the baseline's, its shares of the ceiling and of the expected figure, its partner."""
    t = result.table
    names = dict(cat.gpus.select("id", "name").iter_rows())
    models = dict(cat.models.select("id", "name").iter_rows())
    scenario = [c for c in _SCENARIO_WORDS if c in t.columns and c != "compute" and (c in result.keys or c in result.differ)]
    cols: list[pl.Expr] = [pl.col("run")]
    for c in scenario:
        e = pl.col(c)
        if c == "gpu":
            e = e.replace(names)
        elif c == "model":
            e = e.replace(models)
        cols.append(e.alias(_SCENARIO_WORDS[c]))
    cols += [
        pl.col("rows").alias("measurements"),
        pl.col("tokens_per_s").alias("tokens/s"),
        pl.col("tokens_per_s_delta").alias("Δ tokens/s"),
        pl.col("tokens_per_s_vs_baseline").alias("tokens/s ÷ baseline"),
        (pl.col("ttft_s") * 1e3).alias("TTFT (ms)"),
        pl.col("ttft_s_vs_baseline").alias("TTFT ÷ baseline"),
        (pl.col("tpot_s") * 1e3).alias("TPOT (ms)"),
        pl.col("tpot_s_vs_baseline").alias("TPOT ÷ baseline"),
        (pl.col("ratio") * 100).alias("measured / ceiling (%)"),
        (pl.col("expected_ratio") * 100).alias("measured / expected (%)"),
        pl.col("partner"),
    ]
    return t.select(cols)


def runs_chart(cat: Catalogue, result: RunsComparison, *, title: str = "", width: int = 760, height: int = 380) -> alt.LayerChart | None:
    """Output tokens/s per GPU against tokens/s per user (tokens/s / batch), one colour per run, each run's points joined
    in batch order; decode and serving rows only (None when no run has one)."""
    t = result.table.filter(pl.col("phase") != "prefill")
    pts = positive(
        t.with_columns(
            (pl.col("tokens_per_s") / pl.col("batch")).alias("per_user"),
            (pl.col("tokens_per_s") / pl.col("num_gpus")).alias("per_gpu"),
        ),
        "per_user",
        "per_gpu",
    )
    if pts.is_empty():
        return None
    models = dict(cat.models.select("id", "name").iter_rows())
    pts = pts.with_columns(
        pl.format("{} · {} · {} in / {} out", pl.col("model").replace(models), "phase", "input_tokens", "output_tokens").alias("setup")
    ).sort("run_index", "setup", "batch")
    run_scale = alt.Scale(domain=list(result.labels), range=ACCELERATOR_COLOURS[: max(len(result.labels), 1)])
    colour = alt.Color("run:N", title="Run", scale=run_scale, legend=alt.Legend(orient="bottom", columns=1, labelLimit=600))
    x = alt.X("per_user:Q", scale=alt.Scale(type="log"), axis=log_axis("Tokens/s per user (output tokens/s ÷ batch)"))
    y = alt.Y("per_gpu:Q", scale=alt.Scale(type="log"), axis=log_axis("Output tokens/s per GPU"))
    tips = [
        alt.Tooltip("run:N", title="Run"),
        alt.Tooltip("setup:N", title="Setup"),
        alt.Tooltip("batch:Q", title="Batch (sequences)"),
        alt.Tooltip("tokens_per_s:Q", format=",.0f", title="Output tokens/s"),
        alt.Tooltip("per_gpu:Q", format=",.0f", title="Tokens/s per GPU"),
        alt.Tooltip("per_user:Q", format=",.1f", title="Tokens/s per user"),
        alt.Tooltip("tokens_per_s_vs_baseline:Q", format=".2f", title="Tokens/s ÷ baseline"),
        alt.Tooltip("partner:N", title="Partner"),
    ]
    line = alt.Chart(pts).mark_line(strokeWidth=2, opacity=0.6).encode(x=x, y=y, color=colour, detail="setup:N", order="batch:Q")
    dots = (
        alt.Chart(pts)
        .mark_point(size=110, filled=True)
        .encode(x=x, y=y, color=colour, shape=alt.Shape("run:N", scale=alt.Scale(domain=list(result.labels)), legend=None), tooltip=tips)
    )
    return alt.LayerChart(layer=[line, dots]).properties(
        title=title or "Throughput per GPU against per-user speed, each run",
        width=width,
        height=height,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
        config=alt.Config(legend=alt.LegendConfig(layout=STACKED_LEGENDS)),
    )


def runs_headline(cat: Catalogue, result: RunsComparison) -> list[str]:
    """One sentence per later run: its median ratio to the baseline over the scenarios both hold, and what is unmatched."""
    lines = []
    s = result.summary.filter(pl.col("run_index") > 0)
    for row in s.iter_rows(named=True):
        r = row["median_tokens_per_s_vs_baseline"]
        shared = row["with_baseline"] or 0
        if not shared:
            lines.append(f"{row['run']}: no scenario in common with {result.labels[0]}.")
            continue
        parts = [f"{row['run']}: {r:.2f}× the tokens/s of {result.labels[0]}" if r is not None else f"{row['run']}: no tokens/s to set"]
        for key, word in (("median_ttft_s_vs_baseline", "TTFT"), ("median_tpot_s_vs_baseline", "TPOT")):
            if row[key] is not None:
                parts.append(f"{row[key]:.2f}× its {word}")
        lines.append(f"{', '.join(parts)} (medians over {shared:,} shared scenario{'s' if shared != 1 else ''}).")
    return lines
