"""Charts of the published measurements: the share of its ceiling each one reached, and the scorecard's predicted against measured."""

from __future__ import annotations

import math

import altair as alt
import polars as pl

from core.catalogue.reference import METRICS
from core.evidence.reference import unit_of
from core.present.charts import positive

FAMILY_COLOURS = alt.Scale(
    domain=["NVIDIA", "AMD", "Intel", "Google", "Apple", "AWS"],
    range=["#2f855a", "#c53030", "#2b6cb0", "#d69e2e", "#718096", "#975a16"],
)
STATUS_SHAPES = alt.Scale(domain=["ok", "above ceiling"], range=["circle", "cross"])


def ratio_chart(rows: pl.DataFrame, *, by: str = "framework", title: str = "", width: int = 760) -> alt.LayerChart | alt.FacetChart:
    """Each published measurement's share of its own ceiling (1 = the ceiling), one row of dots per `by`, coloured by vendor.

    A share is measured / ceiling for a rate, ceiling / measured for a time, so
    every dot reads the same way; a dot right of the line is above its ceiling (a finding).
    """
    data = rows.filter(pl.col("ratio").is_finite() & (pl.col("ratio") > 0)).select(
        by,
        "vendor",
        "id",
        "gpu_name",
        "num_gpus",
        "model_name",
        "weights",
        "metric",
        "batch",
        "input_tokens",
        "output_tokens",
        "value",
        "unit",
        "ratio",
        "status",
        "source_url",
    )
    data = data.with_columns((pl.col("id").hash(7) % 1000 / 1000.0).alias("jitter"))  # a fixed spread within each row of dots
    top = max(1.2, float(data["ratio"].max() or 1.0) * 1.05) if data.height else 1.2  # type: ignore[arg-type]
    groups = max(1, data[by].n_unique()) if data.height else 1
    x = alt.X(
        "ratio:Q",
        title="Share of the ceiling reached (100% = the ceiling of its own scenario)",
        scale=alt.Scale(domain=[0, math.ceil(top * 10) / 10]),
        axis=alt.Axis(format="%"),
    )
    dots = (
        alt.Chart(data)
        .mark_point(size=60, filled=True, opacity=0.75)
        .encode(
            x=x,
            y=alt.Y(f"{by}:N", title=by.capitalize(), axis=alt.Axis(labelLimit=260)),
            yOffset=alt.YOffset("jitter:Q", scale=alt.Scale(domain=[-0.2, 1.2])),
            color=alt.Color(
                "vendor:N", title="Vendor", scale=FAMILY_COLOURS, legend=alt.Legend(orient="bottom", columns=4, labelLimit=200)
            ),
            shape=alt.Shape("status:N", title="Status", scale=STATUS_SHAPES, legend=alt.Legend(orient="bottom")),
            href="source_url:N",
            tooltip=[
                alt.Tooltip("id:N", title="Row"),
                alt.Tooltip("gpu_name:N", title="Accelerator"),
                alt.Tooltip("num_gpus:Q", title="GPUs"),
                alt.Tooltip("model_name:N", title="Model"),
                alt.Tooltip("weights:N", title="Weights"),
                alt.Tooltip("metric:N", title="Metric"),
                alt.Tooltip("value:Q", title="Published value", format=",.4~g"),
                alt.Tooltip("unit:N", title="Unit"),
                alt.Tooltip("ratio:Q", title="Share of ceiling", format=".0%"),
                alt.Tooltip("source_url:N", title="Source (click the dot)"),
            ],
        )
    )
    line = alt.Chart(pl.DataFrame({"x": [1.0]})).mark_rule(color="#c53030", strokeDash=[4, 3], strokeWidth=1.5).encode(x="x:Q")
    return alt.layer(dots, line).properties(
        title=title or "Published measurements: share of their own ceiling (dashed: the ceiling)",
        width=width,
        # its width follows the column, its height the rows (a row of dots 36 px): stretched, it is fitted in width only
        height=36 * groups,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )


def prediction_chart(rows: pl.DataFrame, metric: str, *, title: str = "", width: int = 520) -> alt.LayerChart | alt.FacetChart:
    """Predicted against measured for one metric on log axes, with the y = x line.

    Filled dots: the predicted model (held out: fitted on the other publishers' campaigns);
    hollow: the datasheet ceiling. Points on the line are predicted exactly.
    """
    unit = unit_of(metric)
    sub = rows.filter(pl.col("metric") == metric)
    if unit == "s":  # times read in milliseconds ("10 ms", not "10m")
        unit = "ms"
        sub = sub.with_columns((pl.col(c) * 1e3).alias(c) for c in ("measured", "predicted", "ceiling"))
    long = pl.concat(
        [
            sub.select(
                "id",
                "model_name",
                "gpu_name",
                "framework",
                "measured",
                pl.col("predicted"),
                pl.lit("predicted (held out)").alias("kind"),
            ),
            sub.select(
                "id",
                "model_name",
                "gpu_name",
                "framework",
                "measured",
                pl.col("ceiling").alias("predicted"),
                pl.lit("datasheet ceiling").alias("kind"),
            ),
        ]
    )
    long = positive(long, "measured", "predicted")
    values = long["measured"].to_list() + long["predicted"].to_list()
    lo = 10 ** math.floor(math.log10(min(values))) if values else 1.0
    hi = 10 ** math.ceil(math.log10(max(values))) if values else 10.0
    scale = alt.Scale(type="log", domain=[lo, hi])
    axis_format = ",~g" if unit == "ms" else "~s"
    points = (
        alt.Chart(long)
        .mark_point(size=60)
        .encode(
            x=alt.X("measured:Q", title=f"Measured ({unit})", scale=scale, axis=alt.Axis(format=axis_format)),
            y=alt.Y("predicted:Q", title=f"Predicted ({unit})", scale=scale, axis=alt.Axis(format=axis_format)),
            color=alt.Color(
                "kind:N",
                title="Prediction",
                scale=alt.Scale(domain=["predicted (held out)", "datasheet ceiling"], range=["#2b6cb0", "#a0aec0"]),
                legend=alt.Legend(orient="bottom"),
            ),
            fill=alt.Fill(
                "kind:N",
                title="Prediction",
                scale=alt.Scale(domain=["predicted (held out)", "datasheet ceiling"], range=["#2b6cb0", "transparent"]),
                legend=alt.Legend(orient="bottom"),  # one legend with the colour's (the same field, title and place): filled or hollow
            ),
            tooltip=[
                alt.Tooltip("id:N", title="Row"),
                alt.Tooltip("gpu_name:N", title="Accelerator"),
                alt.Tooltip("model_name:N", title="Model"),
                alt.Tooltip("framework:N", title="Framework"),
                alt.Tooltip("measured:Q", title=f"Measured ({unit})", format=",.4~g"),
                alt.Tooltip("predicted:Q", title=f"Predicted ({unit})", format=",.4~g"),
                alt.Tooltip("kind:N", title="Prediction"),
            ],
        )
    )
    diagonal = (
        alt.Chart(pl.DataFrame({"measured": [lo, hi], "predicted": [lo, hi]}))
        .mark_line(color="#1a202c", strokeDash=[4, 3])
        .encode(x=alt.X("measured:Q", scale=scale), y=alt.Y("predicted:Q", scale=scale))
    )
    what = METRICS[metric][0] if metric in METRICS else metric
    # a title wider than the chart would shrink its plot (the x axis was drawn about 110 px wide of 520): a short
    # title, the metric in the subtitle, neither wider than the plot
    heading = alt.TitleParams(
        text=title or "Predicted against measured (y = x dashed)", subtitle=[] if title else [what], limit=width, subtitlePadding=4
    )
    # "pad": the plot itself is width x width, its axes, title and legend around it (fitted into a width x width box, the
    # y = x line would no longer be at 45 degrees)
    # drawn as SVG whatever the number of points (Streamlit switches a chart of more than 2,000 points to a canvas): the
    # 2,337 published rows twice are 4,674 marks, which SVG draws in well under a second, and stay crisp when zoomed
    return alt.layer(diagonal, points).properties(
        title=heading, width=width, height=width, autosize=alt.AutoSizeParams(type="pad"), usermeta={"embedOptions": {"renderer": "svg"}}
    )
