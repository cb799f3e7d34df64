"""Ridge-point charts (pure: frames in, `alt.LayerChart` out): where each accelerator's ridge lies on one log axis.

A ridge is a position, not a quantity from zero: on a log axis a bar's length
depends on where the axis starts, so both charts draw dots on a common log
axis (FLOP/byte), one row per accelerator, with the decode matmul's intensity
as a dashed rule. The scenario's accelerator is ringed and its name bold, and
the legend says so. Colours keep one meaning: in the chart at one precision,
memory-bound blue and compute-bound orange (as everywhere); in the chart by
precision, one fixed hue per precision (`PRECISION_COLOURS`), never blue or orange.

The charts fit their width only (autosize fit-x, padding included): a page
draws them at the width of its column (Streamlit sets the width to the
column's and the whole chart, labels and legends, fits it), an export at
`width` pixels in all; the height is a fixed row height per accelerator.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import altair as alt
import polars as pl

from core.present.charts import BOUND_SCALE, positive

#: One hue per precision, the same in every chart; none of them the memory blue or the compute orange.
PRECISION_COLOURS: dict[str, str] = {
    "bf16": "#2f855a",  # green
    "fp8": "#6b46c1",  # purple
    "fp4": "#b7791f",  # ochre
    "fp16": "#0d9488",  # teal
    "int8": "#b83280",  # magenta
    "fp6": "#718096",  # grey
    "tf32": "#1a202c",  # near black
    "fp32": "#975a16",  # brown
    "int4": "#c53030",  # red
}
#: And one marker shape each, so the precisions differ without colour too.
PRECISION_SHAPES: dict[str, str] = {
    "bf16": "circle",
    "fp8": "square",
    "fp4": "triangle-up",
    "fp16": "diamond",
    "int8": "cross",
    "fp6": "triangle-down",
    "tf32": "triangle-right",
    "fp32": "triangle-left",
    "int4": "wedge",
}
#: The rule's colour and its label's: dark grey on the white above the plot, never on a mark.
RULE_COLOUR = "#222222"
#: The legend entry of the ring around the scenario's accelerator.
YOURS = "your accelerator (sidebar)"
AXIS_TITLE = "Ridge point (FLOP/byte, log scale)"
#: Pixels per accelerator row: every name readable, none hidden for overlap.
ROW = 22
FIT_WIDTH = alt.AutoSizeParams(type="fit-x", contains="padding")


def decade_ticks(values: list[float], pad: float = 1.5) -> list[float]:
    """Whole powers of ten from just below the smallest value to just above the largest (at least two)."""
    finite = [v for v in values if v > 0 and math.isfinite(v)] or [1.0, 10.0]
    lo = math.floor(math.log10(min(finite) / pad))
    hi = math.ceil(math.log10(max(finite) * pad))
    return [10.0**k for k in range(lo, max(hi, lo + 1) + 1)]


def number_label(value: float) -> str:
    """A tick value as people write it: 0.01, 0.1, 1, 10, 1,000, 10,000 (never 10m or 1k)."""
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:.{max(0, -math.floor(math.log10(value)))}f}"


def intensity_text(value: float) -> str:
    """An intensity in FLOP/byte as the page's sentences write it: 1, 4, 2,048; 0.5 below one."""
    return f"{value:,.0f}" if value >= 100 or float(value).is_integer() else f"{value:.3g}"


def _x_axis(ticks: list[float]) -> alt.X:
    labels = " : ".join(f"datum.value == {t!r} ? {number_label(t)!r}" for t in ticks)
    return alt.X(
        "ridge",
        type="quantitative",
        scale=alt.Scale(type="log", domain=[ticks[0], ticks[-1]]),
        axis=alt.Axis(values=ticks, labelExpr=f"{labels} : ''", title=AXIS_TITLE, grid=True, orient="bottom"),
    )


def _rows(order: list[str], fit: int | None) -> tuple[int, float, Literal["bottom", "right"]]:
    """The plot's height (px), its labels' font size and where the legends go: ROW px a row, or, with `fit` (the
    height presentation mode has for the plot), the rows share `fit` px, their labels' font a row's height over
    1.25 at most, the height of a text's box (so no two overlap), and the legends beside the plot."""
    if fit is None:
        return max(200, ROW * len(order)), 11.0, "bottom"
    row = max(9.0, min(float(ROW), fit / max(1, len(order))))
    return int(row * len(order)), min(11.0, row / 1.25), "right"  # a text's box is about 1.25 times its font size


def _y_axis(order: list[str], yours: str | None, font: float = 11.0) -> alt.Y:
    bold: Any = "normal"
    if yours is not None:
        bold = {"condition": {"test": f"datum.value === {_js(yours)}", "value": "bold"}, "value": "normal"}
    return alt.Y(
        "name",
        type="nominal",
        sort=order,
        title=None,
        # every name is drawn (Vega would drop one that touches its neighbour: _rows keeps the font under the row)
        axis=alt.Axis(
            labelLimit=340,
            labelFontSize=font,
            labelOverlap=False,
            labelFontWeight=bold,
            grid=True,
            gridDash=[1, 3],
            gridColor="#e2e8f0",
            domain=False,
            ticks=False,
        ),
    )


def _js(text: str) -> str:
    """A string literal for a Vega expression."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _rule_layers(intensity: float, ticks: list[float], label: str) -> list[alt.Chart]:
    """The dashed rule at the decode intensity and its label above the plot (off the marks), aligned to stay inside."""
    frame = pl.DataFrame({"ridge": [float(intensity)], "label": [label]})
    at = (math.log10(intensity) - math.log10(ticks[0])) / (math.log10(ticks[-1]) - math.log10(ticks[0]))
    right = at > 0.5
    align: Literal["left", "right"] = "right" if right else "left"
    dx = -4 if right else 4
    rule = alt.Chart(frame).mark_rule(color=RULE_COLOUR, strokeWidth=2, strokeDash=[5, 3]).encode(x=alt.X("ridge", type="quantitative"))
    text = (
        alt.Chart(frame)
        .mark_text(align=align, dx=dx, baseline="bottom", dy=-4, color=RULE_COLOUR, fontWeight="bold", fontSize=12)
        .encode(x=alt.X("ridge", type="quantitative"), y=alt.value(0), text=alt.Text("label", type="nominal"))
    )
    return [rule, text]


def _ring(
    data: pl.DataFrame, yours_id: str | None, size: int, order: list[str], legend: Literal["bottom", "right"] = "bottom"
) -> list[alt.Chart]:
    """A black ring around the scenario's accelerator's dots, with its own legend entry."""
    mine = data.filter(pl.col("id") == yours_id) if yours_id is not None else data.clear()
    if mine.is_empty():
        return []
    mine = mine.with_columns(pl.lit(YOURS).alias("marked"))
    return [
        alt.Chart(mine)
        .mark_point(filled=False, size=size, strokeWidth=2.5, opacity=1)
        .encode(
            x=alt.X("ridge", type="quantitative"),
            y=alt.Y("name", type="nominal", sort=order),
            stroke=alt.Stroke(
                "marked", type="nominal", scale=alt.Scale(domain=[YOURS], range=["black"]), legend=alt.Legend(title=None, orient=legend)
            ),
        )
    ]


def _tooltips(*extra: alt.Tooltip) -> list[alt.Tooltip]:
    return [
        alt.Tooltip("name", type="nominal", title="Accelerator"),
        alt.Tooltip("precision", type="nominal", title="Precision"),
        alt.Tooltip("ridge", type="quantitative", format=",.0f", title="Ridge (FLOP/byte)"),
        *extra,
        alt.Tooltip("peak_tflops", type="quantitative", format=",.4~g", title="Dense peak (TFLOP/s)"),
        alt.Tooltip("bandwidth_tb_s", type="quantitative", format=",.4~g", title="Bandwidth (TB/s)"),
    ]


def _readable(data: pl.DataFrame) -> pl.DataFrame:
    """The tooltip's figures in the units the catalogue prints (TFLOP/s, TB/s)."""
    return data.with_columns(
        (pl.col("peak_flops") / 1e12).alias("peak_tflops"), (pl.col("bandwidth_bytes_per_s") / 1e12).alias("bandwidth_tb_s")
    )


def ridge_chart(
    ridges: pl.DataFrame,
    decode_intensity: float,
    *,
    highlight: str | None = None,
    title: str = "",
    batch: int | None = None,
    width: int = 640,
    fit: int | None = None,
) -> alt.LayerChart:
    """One dot per accelerator at its ridge (log x), coloured by what bounds the decode matmul; a rule at its intensity.

    `ridges` comes from core.model.roofline.ridge_table (columns id, name, precision, ridge, bound, ridge_batch,
    peak_flops, bandwidth_bytes_per_s). Dots left of the rule are compute-bound at this batch. `highlight`, an
    accelerator id (the scenario's), is ringed and its name bold. `fit`: the plot's height in px, the rows sharing it
    (presentation mode, _rows); None: a fixed height a row.
    """
    data = _readable(positive(ridges, "ridge"))
    order = data.sort("ridge", "name")["name"].to_list()
    height, font, legend = _rows(order, fit)
    ticks = decade_ticks([*data["ridge"].to_list(), float(decode_intensity)])
    yours = data.filter(pl.col("id") == highlight)["name"].to_list() if highlight else []
    at_batch = f" at batch {batch:,}" if batch is not None else ""
    dots = (
        alt.Chart(data)
        .mark_circle(size=110 if fit is None else 70, opacity=1)
        .encode(
            x=_x_axis(ticks),
            y=_y_axis(order, yours[0] if yours else None, font),
            color=alt.Color(
                "bound", type="nominal", scale=BOUND_SCALE, title=f"Decode matmul{at_batch} is", legend=alt.Legend(orient=legend)
            ),
            tooltip=_tooltips(alt.Tooltip("ridge_batch", type="quantitative", format=",", title="Batch to become compute-bound")),
        )
    )
    label = f"decode matmul{at_batch}: {intensity_text(decode_intensity)} FLOP/byte"
    layers = [*_rule_layers(decode_intensity, ticks, label), dots, *_ring(data, highlight, 300 if fit is None else 180, order, legend)]
    return alt.LayerChart(
        layer=layers,
        title=_title(title, yours),
        width=width,
        height=height,
        autosize=FIT_WIDTH,
        resolve=alt.Resolve(scale=alt.ScaleResolveMap(color="independent", stroke="independent")),
    )


def ridge_precision_chart(
    ridges: pl.DataFrame,
    decode_intensity: float | None = None,
    *,
    highlight: str | None = None,
    title: str = "",
    width: int = 640,
    fit: int | None = None,
    ticks: list[float] | None = None,
) -> alt.LayerChart:
    """Each accelerator's ridges at several precisions on one log axis: a dot per precision (its own hue and shape),
    joined by a thin line per accelerator; absent where the precision is unsupported.

    `ridges` comes from core.model.roofline.ridge_points. `highlight`, an accelerator id, is ringed and bold. `ticks`:
    the x axis's decades (default: those the ridges and the decode intensity span).
    """
    data = _readable(positive(ridges, "ridge")).sort("name", "id", "precision")  # one order, whatever the input's
    order = data.group_by("name").agg(pl.col("ridge").max()).sort("ridge", "name")["name"].to_list()
    height, font, legend = _rows(order, fit)
    values = data["ridge"].to_list() + ([float(decode_intensity)] if decode_intensity else [])
    ticks = ticks or decade_ticks(values)
    yours = data.filter(pl.col("id") == highlight)["name"].unique().to_list() if highlight else []
    shown = [p for p in PRECISION_COLOURS if p in set(data["precision"].to_list())]
    spans = data.group_by("id", "name").agg(pl.col("ridge").min().alias("lo"), pl.col("ridge").max().alias("hi")).sort("name", "id")
    span = (
        alt.Chart(spans)
        .mark_rule(color="#a0aec0", strokeWidth=1.5)
        .encode(x=alt.X("lo", type="quantitative"), x2=alt.X2("hi"), y=alt.Y("name", type="nominal", sort=order))
    )
    dots = (
        alt.Chart(data)
        .mark_point(filled=True, size=90 if fit is None else 60, opacity=1)
        .encode(
            x=_x_axis(ticks),
            y=_y_axis(order, yours[0] if yours else None, font),
            color=alt.Color(
                "precision",
                type="nominal",
                scale=alt.Scale(domain=shown, range=[PRECISION_COLOURS[p] for p in shown]),
                title="Precision",
                legend=alt.Legend(orient=legend),
            ),
            shape=alt.Shape("precision", type="nominal", scale=alt.Scale(domain=shown, range=[PRECISION_SHAPES[p] for p in shown])),
            # each precision a little above or below the row's centre: two equal ridges (TPU v5p's bf16 and fp8) show both
            yOffset=alt.YOffset("precision", type="nominal", scale=alt.Scale(domain=shown, paddingOuter=0.6)),
            tooltip=_tooltips(),
        )
    )
    layers: list[alt.Chart] = [span, dots, *_ring(data, highlight, 260 if fit is None else 160, order, legend)]
    if decode_intensity:
        layers = [*_rule_layers(decode_intensity, ticks, f"decode matmul: {intensity_text(decode_intensity)} FLOP/byte"), *layers]
    return alt.LayerChart(
        layer=layers,
        title=_title(title, yours),
        width=width,
        height=height if fit is not None else max(220, height),
        autosize=FIT_WIDTH,
        resolve=alt.Resolve(scale=alt.ScaleResolveMap(stroke="independent")),
    )


def _title(title: str, yours: list[str]) -> alt.TitleParams:
    note = (
        f"Ringed, name in bold: {yours[0]}, the sidebar's accelerator." if yours else "The sidebar's accelerator is not in this selection."
    )
    return alt.TitleParams(title, subtitle=[note], anchor="start", subtitlePadding=4)  # apart in Streamlit's larger title font


def with_decode_rule(spec: dict[str, Any], intensity: float, ticks: list[float], label: str) -> dict[str, Any]:
    """A layered chart's spec (made without a decode intensity, on these `ticks`) with the decode rule and its label
    drawn first, as ridge_precision_chart draws them: the chart of a selection is made once, its rule at each batch."""
    rule = alt.LayerChart(layer=_rule_layers(intensity, ticks, label)).to_dict(validate=False)
    shared = rule.get("data")  # made alone, the two layers' one frame is lifted to the top: each layer takes it back
    layers = [{"data": shared, **layer} if shared is not None and "data" not in layer else layer for layer in rule["layer"]]
    return {**spec, "layer": [*layers, *spec["layer"]], "datasets": {**spec.get("datasets", {}), **rule.get("datasets", {})}}
