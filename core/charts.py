"""Altair chart builders (pure: frames in, `alt.Chart` out) and their PNG/SVG export.

The page, the export and the tests use the same chart. Colours carry one
meaning everywhere: memory-bound is blue, compute-bound is orange.
Values <= 0 are filtered before they reach a log scale (one would blank it).
"""

from __future__ import annotations

from typing import Any

import altair as alt
import polars as pl

MEMORY_COLOUR = "#1f77b4"
COMPUTE_COLOUR = "#ff7f0e"
BOUND_SCALE = alt.Scale(domain=["memory", "compute"], range=[MEMORY_COLOUR, COMPUTE_COLOUR])
#: Roof colours: none of them blue or orange, which mean memory- and compute-bound.
ROOF_COLOURS = ["#2f855a", "#6b46c1", "#b83280", "#718096", "#975a16", "#0d9488", "#1a202c", "#c53030"]
#: Axis labels in SI (1e12 -> 1T) via d3-format's SI type.
SI_FORMAT = "~s"


def positive(frame: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Rows whose `columns` are all finite and > 0 (safe for a log scale)."""
    cond = pl.lit(True)
    for c in columns:
        cond = cond & pl.col(c).is_not_null() & pl.col(c).is_finite() & (pl.col(c) > 0)
    return frame.filter(cond)


def export_chart(chart: alt.TopLevelMixin, fmt: str, *, scale: float = 2.0) -> bytes:
    """The chart as PNG or SVG bytes, rendered offline by vl-convert."""
    import vl_convert as vlc

    spec = chart.to_json()
    if fmt == "png":
        return bytes(vlc.vegalite_to_png(spec, scale=scale))
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec).encode("utf-8")
    raise ValueError(f"format: expected png or svg, got {fmt!r}")


def chart_data(chart: alt.TopLevelMixin) -> list[dict[str, Any]]:
    """Every inline data row of a chart (for tests that check the numbers it draws)."""
    spec = chart.to_dict()
    rows: list[dict[str, Any]] = []
    for dataset in spec.get("datasets", {}).values():
        rows.extend(dataset)
    return rows


POINT_SHAPES = alt.Scale(
    domain=["decode matmul", "decode attention", "decode step", "prefill matmul", "prefill step"],
    range=["circle", "triangle-up", "diamond", "square", "cross"],
)


def roofline_chart(
    roofs: pl.DataFrame,
    points: pl.DataFrame,
    paths: pl.DataFrame | None = None,
    *,
    title: str = "",
    width: int = 760,
    height: int = 440,
) -> alt.LayerChart:
    """Log-log roofline: roofs per accelerator and precision, ridges labelled, operating points.

    `roofs` comes from core.roofline.roof_lines, `points` and `paths` from
    core.roofline.operating_points (points: one batch; paths: every batch).
    """
    roofs = positive(roofs, "intensity", "attainable_flops")
    points = positive(points, "intensity", "attainable_flops")
    x_dom = _log_domain([roofs["intensity"], points["intensity"]], pad=3.0)
    y_dom = _log_domain([roofs["attainable_flops"], points["attainable_flops"]], pad=3.0)
    x = alt.X(
        "intensity:Q", scale=alt.Scale(type="log", domain=x_dom), axis=alt.Axis(format=SI_FORMAT, title="Arithmetic intensity (FLOP/byte)")
    )
    y = alt.Y(
        "attainable_flops:Q",
        scale=alt.Scale(type="log", domain=y_dom),
        axis=alt.Axis(format=SI_FORMAT, title="Attainable performance (FLOP/s)"),
    )
    series = alt.Color(
        "series:N", title="Roof", scale=alt.Scale(range=ROOF_COLOURS), legend=alt.Legend(orient="bottom", columns=2, labelLimit=320)
    )
    kinds = [k for k in ("datasheet", "derated") if k in set(roofs["roof"].to_list())]
    dash = alt.StrokeDash(
        "roof:N",
        title="Roof kind",
        scale=alt.Scale(domain=kinds, range=[[1, 0], [6, 4]][: len(kinds)]),
        legend=alt.Legend() if len(kinds) > 1 else None,
    )
    roof_layer = (
        alt.Chart(roofs)
        .mark_line(strokeWidth=2.5, clip=True)
        .encode(
            x=x,
            y=y,
            color=series,
            strokeDash=dash,
            detail="series:N",
            tooltip=[
                alt.Tooltip("series:N", title="Roof"),
                alt.Tooltip("ridge:Q", format=",.0f", title="Ridge (FLOP/byte)"),
                alt.Tooltip("peak_flops:Q", format=".3s", title="Peak (FLOP/s)"),
                alt.Tooltip("bandwidth_bytes_per_s:Q", format=".3s", title="Bandwidth (B/s)"),
            ],
        )
    )
    ridges = roofs.filter(pl.col("point") == "ridge").with_columns(
        pl.format("ridge {}", pl.col("ridge").round(0).cast(pl.Int64)).alias("label")
    )
    ridge_dots = (
        alt.Chart(ridges)
        .mark_point(filled=True, size=60, color="black")
        .encode(x=x, y=y, tooltip=[alt.Tooltip("series:N"), alt.Tooltip("ridge:Q", format=",.0f", title="Ridge (FLOP/byte)")])
    )
    ridge_text = alt.Chart(ridges).mark_text(align="left", dx=6, dy=12, fontSize=12, fontWeight="bold").encode(x=x, y=y, text="label:N")
    tips = [
        alt.Tooltip("point:N", title="Operating point"),
        alt.Tooltip("batch:Q", title="Batch"),
        alt.Tooltip("intensity:Q", format=",.1f", title="Intensity (FLOP/byte)"),
        alt.Tooltip("attainable_flops:Q", format=".3s", title="Attainable (FLOP/s)"),
        alt.Tooltip("share_of_peak:Q", format=".1%", title="Share of the compute roof"),
        alt.Tooltip("bound:N", title="Bound"),
        alt.Tooltip("ridge_batch:Q", title="Decode batch to reach the ridge"),
    ]
    layers: list[alt.Chart] = [roof_layer]
    if paths is not None and paths.height:
        paths = positive(paths, "intensity", "attainable_flops")
        layers.append(
            alt.Chart(paths)
            .mark_line(strokeWidth=1, opacity=0.45, color="grey", point=alt.OverlayMarkDef(size=12, color="grey"))
            .encode(x=x, y=y, detail="point:N", order="batch:Q", tooltip=tips)
        )
    layers += [ridge_dots, ridge_text]
    layers.append(
        alt.Chart(points)
        .mark_point(filled=True, size=180, stroke="black", strokeWidth=1)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape("point:N", scale=POINT_SHAPES, title="Operating point"),
            fill=alt.Fill("bound:N", scale=BOUND_SCALE, title="Bound"),
            tooltip=tips,
        )
    )
    layers.append(
        alt.Chart(points.filter(pl.col("point").is_in(["decode matmul", "decode attention", "prefill matmul"])))
        .mark_text(align="right", dx=-10, dy=-8, fontSize=11)
        .encode(x=x, y=y, text="point:N")
    )
    chart: alt.LayerChart = alt.layer(*layers).resolve_scale(color="independent").properties(title=title, width=width, height=height)
    return chart


def ridge_bars(ridges: pl.DataFrame, decode_intensity: float, *, title: str = "", width: int = 760) -> alt.LayerChart | alt.FacetChart:
    """One bar per accelerator (its ridge), a rule at the decode matmul intensity.

    Bars whose ridge lies left of the rule (batch large enough) are compute-bound.
    `ridges` needs columns name, ridge, bound, ridge_batch, precision.
    """
    data = positive(ridges, "ridge")
    order = data.sort("ridge")["name"].to_list()
    height = max(220, 24 * len(order))
    lo, hi = _log_domain([data["ridge"], pl.Series([float(decode_intensity)])], pad=2.0)
    x = alt.X(
        "ridge:Q", scale=alt.Scale(type="log", domain=[lo, hi]), axis=alt.Axis(format=SI_FORMAT, title="Ridge point (FLOP/byte), log scale")
    )
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=x,
            x2=alt.datum(lo),
            y=alt.Y("name:N", sort=order, title=None, axis=alt.Axis(labelLimit=260)),
            color=alt.Color("bound:N", scale=BOUND_SCALE, title="Decode matmul at this batch"),
            tooltip=[
                alt.Tooltip("name:N", title="Accelerator"),
                alt.Tooltip("precision:N"),
                alt.Tooltip("ridge:Q", format=",.0f", title="Ridge (FLOP/byte)"),
                alt.Tooltip("ridge_batch:Q", format=",", title="Batch needed to become compute-bound"),
                alt.Tooltip("peak_flops:Q", format=".3s", title="Peak (FLOP/s)"),
                alt.Tooltip("bandwidth_bytes_per_s:Q", format=".3s", title="Bandwidth (B/s)"),
            ],
        )
    )
    rule_df = pl.DataFrame({"ridge": [decode_intensity], "label": [f"decode matmul ≈ {decode_intensity:,.0f} FLOP/byte"]})
    rule = alt.Chart(rule_df).mark_rule(color="black", strokeWidth=2, strokeDash=[4, 3]).encode(x="ridge:Q")
    text = alt.Chart(rule_df).mark_text(align="left", dx=5, dy=8, fontWeight="bold").encode(x="ridge:Q", y=alt.value(0), text="label:N")
    chart: alt.LayerChart | alt.FacetChart = alt.layer(bars, rule, text).properties(title=title, width=width, height=height)
    return chart


def ridge_groups(ridges: pl.DataFrame, *, title: str = "", width: int = 760) -> alt.Chart:
    """Ridge points grouped by precision for each accelerator (absent where unsupported)."""
    data = positive(ridges, "ridge")
    order = data.group_by("name").agg(pl.col("ridge").max()).sort("ridge")["name"].to_list()
    lo, hi = _log_domain([data["ridge"]], pad=2.0)
    chart: alt.Chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "ridge:Q",
                scale=alt.Scale(type="log", domain=[lo, hi]),
                axis=alt.Axis(format=SI_FORMAT, title="Ridge point (FLOP/byte), log scale"),
            ),
            x2=alt.datum(lo),
            y=alt.Y("name:N", sort=order, title=None, axis=alt.Axis(labelLimit=260)),
            yOffset=alt.YOffset("precision:N"),
            color=alt.Color("precision:N", title="Precision"),
            tooltip=[
                alt.Tooltip("name:N", title="Accelerator"),
                alt.Tooltip("precision:N"),
                alt.Tooltip("ridge:Q", format=",.0f", title="Ridge (FLOP/byte)"),
            ],
        )
        .properties(title=title, width=width, height=max(260, 34 * len(order)))
    )
    return chart


def _log_domain(series: list[pl.Series], pad: float) -> list[float]:
    values = pl.concat([s.cast(pl.Float64) for s in series if s.len()]) if any(s.len() for s in series) else pl.Series([1.0, 10.0])
    lo, hi = float(values.min() or 1.0), float(values.max() or 10.0)  # type: ignore[arg-type]
    return [lo / pad, hi * pad]
