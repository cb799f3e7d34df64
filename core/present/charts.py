"""Altair chart builders (pure: frames in, `alt.Chart` out) and their PNG/SVG export.

The page, the export and the tests use the same chart. Colours carry one
meaning everywhere: memory-bound is blue, compute-bound is orange.
Values <= 0 are filtered before they reach a log scale (one would blank it).
"""

from __future__ import annotations

import json
import math
from typing import Any

import altair as alt
import polars as pl

from core.model.roofline import roof_lines

# Charts become Vega-Lite specs here (memoised by the pages, exported as PNG/SVG), not
# through st.altair_chart, so Altair's notebook guard of 5,000 rows per dataset would
# refuse an imported benchmark's points (Streamlit's own path has no such limit). Set once,
# process-wide, at import: toggling it per call would race between sessions' threads.
alt.data_transformers.disable_max_rows()

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


def export_chart(chart: alt.TopLevelMixin | dict[str, Any], fmt: str, *, scale: float = 2.0) -> bytes:
    """The chart (an Altair chart or its Vega-Lite spec dict) as PNG or SVG bytes, rendered offline by vl-convert."""
    import vl_convert as vlc

    spec = json.dumps(chart) if isinstance(chart, dict) else chart.to_json()
    if fmt == "png":
        return bytes(vlc.vegalite_to_png(spec, scale=scale))
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec).encode("utf-8")
    raise ValueError(f"format: expected png or svg, got {fmt!r}")


POINT_SHAPES = alt.Scale(
    domain=["decode matmul", "decode attention", "decode step", "prefill matmul", "prefill step"],
    range=["circle", "triangle-up", "diamond", "square", "cross"],
)


#: Roof kinds on the roofline and their dashes: the datasheet solid, the derated and the probe-measured dashed.
ROOF_DASHES = {"datasheet": [1, 0], "derated": [6, 4], "measured": [2, 3]}


def roofline_chart(
    roofs: pl.DataFrame,
    points: pl.DataFrame,
    paths: pl.DataFrame | None = None,
    *,
    title: str = "",
    width: int = 760,
    height: int = 440,
    products: pl.DataFrame | None = None,
) -> alt.LayerChart:
    """Log-log roofline: roofs per accelerator and precision, ridges labelled, operating points.

    `roofs` comes from core.model.roofline.roof_lines, `points` and `paths` from
    core.model.roofline.operating_points (points: one batch; paths: every batch);
    `products`, the probe's timed matmuls (core.present.figures.probe_products),
    are drawn as hollow squares where they reached.
    """
    layout, datasets = _roofline_parts(roofs, points, paths)
    chart = _roofline_layers(*layout, width=width, height=height)
    if products is not None and products.height:
        datasets["products"] = positive(products, "intensity", "attainable_flops").to_dicts()
        x_dom, y_dom = layout[0], layout[1]
        x = alt.X("intensity", type="quantitative", scale=alt.Scale(type="log", domain=list(x_dom)))
        y = alt.Y("attainable_flops", type="quantitative", scale=alt.Scale(type="log", domain=list(y_dom)))
        chart.layer.append(
            alt.Chart(alt.NamedData(name="products"))
            .mark_point(shape="square", filled=False, size=70, strokeWidth=1.5, color="#333333", clip=True)
            .encode(
                x=x,
                y=y,
                tooltip=[
                    alt.Tooltip("series", type="nominal", title="Probe"),
                    alt.Tooltip("shape", type="nominal", title="Product"),
                    alt.Tooltip("m", type="quantitative", title="m (rows)"),
                    alt.Tooltip("n", type="quantitative", title="n"),
                    alt.Tooltip("k", type="quantitative", title="k"),
                    alt.Tooltip("intensity", type="quantitative", format=",.1f", title="Intensity (FLOP/byte)"),
                    alt.Tooltip("attainable_flops", type="quantitative", format=".3s", title="Reached (FLOP/s)"),
                ],
            )
        )
    return chart.properties(title=title, datasets=datasets)


ROOF_POINT_COLUMNS = ("point", "batch", "intensity", "attainable_flops", "share_of_peak", "bound", "ridge_batch")


def _roofline_parts(
    roofs: pl.DataFrame, points: pl.DataFrame, paths: pl.DataFrame | None
) -> tuple[tuple[tuple[float, float], tuple[float, float], tuple[str, ...], bool], dict[str, list[dict[str, Any]]]]:
    """(domains, roof kinds, has paths) and the named datasets of a roofline chart."""
    # only the columns the encodings read travel into the spec
    roofs = positive(roofs, "intensity", "attainable_flops").select(
        "series", "roof", "point", "intensity", "attainable_flops", "ridge", "peak_flops", "bandwidth_bytes_per_s"
    )
    points = positive(points, "intensity", "attainable_flops").select(ROOF_POINT_COLUMNS)
    x_dom = _decades([roofs["intensity"], points["intensity"]], pad=3.0)
    y_dom = _decades([roofs["attainable_flops"], points["attainable_flops"]], pad=3.0)
    kinds = tuple(k for k in ROOF_DASHES if k in set(roofs["roof"].to_list()))
    ridges = roofs.filter(pl.col("point") == "ridge").with_columns(
        pl.format(
            "{}ridge {}",
            pl.when(pl.col("roof") == "datasheet").then(pl.lit("")).otherwise(pl.col("roof") + pl.lit(" ")),
            pl.col("ridge").round(0).cast(pl.Int64),
        ).alias("label")
    )
    labelled = points.filter(pl.col("point").is_in(["decode matmul", "decode attention", "prefill matmul"]))
    # named datasets as plain rows: Altair neither converts nor hashes them (a rerun stays quick)
    datasets = {"roofs": roofs.to_dicts(), "ridges": ridges.to_dicts(), "points": points.to_dicts(), "labels": labelled.to_dicts()}
    has_paths = paths is not None and paths.height > 0
    if paths is not None and has_paths:
        datasets["paths"] = positive(paths, "intensity", "attainable_flops").select(ROOF_POINT_COLUMNS).to_dicts()
    return (x_dom, y_dom, kinds, has_paths), datasets


def _roofline_layers(
    x_dom: tuple[float, float], y_dom: tuple[float, float], kinds: tuple[str, ...], has_paths: bool, *, width: int, height: int
) -> alt.LayerChart:
    x = alt.X(
        "intensity",
        type="quantitative",
        scale=alt.Scale(type="log", domain=list(x_dom)),
        axis=alt.Axis(format=SI_FORMAT, title="Arithmetic intensity (FLOP/byte)"),
    )
    y = alt.Y(
        "attainable_flops",
        type="quantitative",
        scale=alt.Scale(type="log", domain=list(y_dom)),
        axis=alt.Axis(format=SI_FORMAT, title="Attainable performance (FLOP/s)"),
    )
    series = alt.Color(
        "series",
        type="nominal",
        title="Roof",
        scale=alt.Scale(range=ROOF_COLOURS),
        legend=alt.Legend(orient="bottom", columns=2, labelLimit=320),
    )
    dash = alt.StrokeDash(
        "roof",
        type="nominal",
        title="Roof kind",
        scale=alt.Scale(domain=list(kinds), range=[ROOF_DASHES[k] for k in kinds]),
        legend=alt.Legend() if len(kinds) > 1 else None,
    )
    roof_layer = (
        alt.Chart(alt.NamedData(name="roofs"))
        .mark_line(strokeWidth=2.5, clip=True)
        .encode(
            x=x,
            y=y,
            color=series,
            strokeDash=dash,
            detail=alt.Detail("series", type="nominal"),
            tooltip=[
                alt.Tooltip("series", type="nominal", title="Roof"),
                alt.Tooltip("ridge", type="quantitative", format=",.0f", title="Ridge (FLOP/byte)"),
                alt.Tooltip("peak_flops", type="quantitative", format=".3s", title="Peak (FLOP/s)"),
                alt.Tooltip("bandwidth_bytes_per_s", type="quantitative", format=".3s", title="Bandwidth (B/s)"),
            ],
        )
    )
    ridge_dots = (
        alt.Chart(alt.NamedData(name="ridges"))
        .mark_point(filled=True, size=60, color="black")
        .encode(
            x=x,
            y=y,
            tooltip=[
                alt.Tooltip("series", type="nominal"),
                alt.Tooltip("ridge", type="quantitative", format=",.0f", title="Ridge (FLOP/byte)"),
            ],
        )
    )
    ridge_text = (
        alt.Chart(alt.NamedData(name="ridges"))
        .transform_filter(alt.datum.roof == "datasheet")
        .mark_text(align="left", dx=6, dy=12, fontSize=12, fontWeight="bold")
        .encode(x=x, y=y, text=alt.Text("label", type="nominal"))
    )
    # a derated or measured ridge sits at or near the datasheet's: its label goes one line lower, naming its kind
    other_ridge_text = (
        alt.Chart(alt.NamedData(name="ridges"))
        .transform_filter(alt.datum.roof != "datasheet")
        .mark_text(align="left", dx=6, dy=27, fontSize=11, fontStyle="italic")
        .encode(x=x, y=y, text=alt.Text("label", type="nominal"))
    )
    tips = [
        alt.Tooltip("point", type="nominal", title="Operating point"),
        alt.Tooltip("batch", type="quantitative", title="Batch"),
        alt.Tooltip("intensity", type="quantitative", format=",.1f", title="Intensity (FLOP/byte)"),
        alt.Tooltip("attainable_flops", type="quantitative", format=".3s", title="Attainable (FLOP/s)"),
        alt.Tooltip("share_of_peak", type="quantitative", format=".1%", title="Share of the compute roof"),
        alt.Tooltip("bound", type="nominal", title="Bound"),
        alt.Tooltip("ridge_batch", type="quantitative", title="Decode batch to reach the ridge"),
    ]
    layers: list[alt.Chart] = [roof_layer]
    if has_paths:
        layers.append(
            alt.Chart(alt.NamedData(name="paths"))
            .mark_line(strokeWidth=1, opacity=0.45, color="grey", point=alt.OverlayMarkDef(size=12, color="grey"))
            .encode(x=x, y=y, detail=alt.Detail("point", type="nominal"), order=alt.Order("batch", type="quantitative"), tooltip=tips)
        )
    layers += [ridge_dots, ridge_text, other_ridge_text]
    layers.append(
        alt.Chart(alt.NamedData(name="points"))
        .mark_point(filled=True, size=180, stroke="black", strokeWidth=1)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape("point", type="nominal", scale=POINT_SHAPES, title="Operating point"),
            fill=alt.Fill("bound", type="nominal", scale=BOUND_SCALE, title="Bound"),
            tooltip=tips,
        )
    )
    layers.append(
        alt.Chart(alt.NamedData(name="labels"))
        .mark_text(align="right", dx=-10, dy=-8, fontSize=11)
        .encode(x=x, y=y, text=alt.Text("point", type="nominal"))
    )
    return alt.LayerChart(
        layer=layers,
        resolve=alt.Resolve(scale=alt.ScaleResolveMap(color="independent")),
        width=width,
        height=height,
    )


def ridge_bars(ridges: pl.DataFrame, decode_intensity: float, *, title: str = "", width: int = 600) -> alt.LayerChart | alt.FacetChart:
    """One bar per accelerator (its ridge), a rule at the decode matmul intensity.

    Bars whose ridge lies left of the rule (batch large enough) are compute-bound.
    `ridges` needs columns name, ridge, bound, ridge_batch, precision.
    """
    data = positive(ridges, "ridge")
    order = data.sort("ridge")["name"].to_list()
    height = max(220, 24 * len(order))
    lo, hi = _log_domain([data["ridge"], pl.Series([float(decode_intensity)])], pad=2.0)
    x = alt.X(
        "ridge",
        type="quantitative",
        scale=alt.Scale(type="log", domain=[lo, hi]),
        axis=alt.Axis(format=SI_FORMAT, title="Ridge point (FLOP/byte), log scale"),
    )
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=x,
            x2=alt.datum(lo),
            y=alt.Y("name", type="nominal", sort=order, title=None, axis=alt.Axis(labelLimit=260)),
            color=alt.Color("bound", type="nominal", scale=BOUND_SCALE, title="Decode matmul at this batch"),
            tooltip=[
                alt.Tooltip("name", type="nominal", title="Accelerator"),
                alt.Tooltip("precision", type="nominal"),
                alt.Tooltip("ridge", type="quantitative", format=",.0f", title="Ridge (FLOP/byte)"),
                alt.Tooltip("ridge_batch", type="quantitative", format=",", title="Batch needed to become compute-bound"),
                alt.Tooltip("peak_flops", type="quantitative", format=".3s", title="Peak (FLOP/s)"),
                alt.Tooltip("bandwidth_bytes_per_s", type="quantitative", format=".3s", title="Bandwidth (B/s)"),
            ],
        )
    )
    rule_df = pl.DataFrame({"ridge": [decode_intensity], "label": [f"decode matmul ≈ {decode_intensity:,.0f} FLOP/byte"]})
    rule = alt.Chart(rule_df).mark_rule(color="black", strokeWidth=2, strokeDash=[4, 3]).encode(x=alt.X("ridge", type="quantitative"))
    text = (
        alt.Chart(rule_df)
        .mark_text(align="left", dx=5, dy=8, fontWeight="bold")
        .encode(x=alt.X("ridge", type="quantitative"), y=alt.value(0), text=alt.Text("label", type="nominal"))
    )
    # autosize pad: `width` is the plot's, labels and legend come on top (Streamlit would fit the whole)
    chart: alt.LayerChart | alt.FacetChart = alt.LayerChart(
        layer=[bars, rule, text], title=title, width=width, height=height, autosize=alt.AutoSizeParams(type="pad")
    )
    return chart


def ridge_groups(ridges: pl.DataFrame, *, title: str = "", width: int = 600) -> alt.Chart:
    """Ridge points grouped by precision for each accelerator (absent where unsupported)."""
    data = positive(ridges, "ridge")
    order = data.group_by("name").agg(pl.col("ridge").max()).sort("ridge")["name"].to_list()
    lo, hi = _log_domain([data["ridge"]], pad=2.0)
    chart: alt.Chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "ridge",
                type="quantitative",
                scale=alt.Scale(type="log", domain=[lo, hi]),
                axis=alt.Axis(format=SI_FORMAT, title="Ridge point (FLOP/byte), log scale"),
            ),
            x2=alt.datum(lo),
            y=alt.Y("name", type="nominal", sort=order, title=None, axis=alt.Axis(labelLimit=260)),
            yOffset=alt.YOffset("precision", type="nominal"),
            color=alt.Color("precision", type="nominal", title="Precision"),
            tooltip=[
                alt.Tooltip("name", type="nominal", title="Accelerator"),
                alt.Tooltip("precision", type="nominal"),
                alt.Tooltip("ridge", type="quantitative", format=",.0f", title="Ridge (FLOP/byte)"),
            ],
        )
        .properties(title=title, width=width, height=max(260, 34 * len(order)), autosize=alt.AutoSizeParams(type="pad"))
    )
    return chart


def _decades(series: list[pl.Series], pad: float) -> tuple[float, float]:
    """_log_domain widened to whole powers of ten: log axes start and end on a labelled decade,
    and the domain stays put while a batch sweep or a change of accelerator moves the data inside it."""
    lo, hi = _log_domain(series, pad)
    return 10.0 ** math.floor(math.log10(lo)), 10.0 ** math.ceil(math.log10(hi))


def _log_domain(series: list[pl.Series], pad: float) -> list[float]:
    values = pl.concat([s.cast(pl.Float64) for s in series if s.len()]) if any(s.len() for s in series) else pl.Series([1.0, 10.0])
    lo, hi = float(values.min() or 1.0), float(values.max() or 10.0)  # type: ignore[arg-type]
    return [lo / pad, hi * pad]


# -- measured against predicted (core.evidence.compare) ------------------------------------------

#: Measured points: ok ones filled, those above their ceiling drawn as red crosses, never as normal points.
STATUS_SCALE = alt.Scale(domain=["ok", "above ceiling"], range=["#2f855a", "#c53030"])
STATUS_SHAPES = alt.Scale(domain=["ok", "above ceiling"], range=["circle", "cross"])


def measured_roofline_chart(
    roofs: pl.DataFrame,
    compared: pl.DataFrame,
    *,
    title: str = "",
    width: int = 760,
    height: int = 420,
    rings: pl.DataFrame | None = None,
    subtitle: str = "",
) -> alt.LayerChart:
    """Log-log roofline with each measurement's predicted operating point (a ring) and its measured point.

    `roofs` comes from core.model.roofline.roof_lines (kinds "datasheet" and, from a
    calibration, "empirical"). Either `compared` is a comparison
    (core.evidence.compare.compare: point_intensity, predicted_flops_per_gpu,
    achieved_flops_per_gpu, status), one ring and one point per row, or it and
    `rings` are marks already aggregated (core.present.figures.measured_marks:
    intensity, flops, status, label, n). `subtitle` says how marks were aggregated.
    """
    roofs = positive(roofs, "intensity", "attainable_flops")
    if rings is None:
        pts = positive(compared, "point_intensity", "achieved_flops_per_gpu", "predicted_flops_per_gpu").with_columns(
            pl.format("row {} · {} · batch {}", "row", "phase", "batch").alias("label"), pl.lit(1).alias("n")
        )
        rings = pts.select(
            pl.col("point_intensity").alias("intensity"), pl.col("predicted_flops_per_gpu").alias("flops"), "label", "status", "n"
        )
        measured = pts.select(
            pl.col("point_intensity").alias("intensity"), pl.col("achieved_flops_per_gpu").alias("flops"), "label", "status", "n"
        )
    else:
        rings = positive(rings, "intensity", "flops").select("intensity", "flops", "label", "status", "n")
        measured = positive(compared, "intensity", "flops").select("intensity", "flops", "label", "status", "n")
    x_dom = _log_domain([roofs["intensity"], rings["intensity"], measured["intensity"]], pad=3.0)
    y_dom = _log_domain([roofs["attainable_flops"], measured["flops"], rings["flops"]], pad=3.0)
    x = alt.X(
        "intensity:Q", scale=alt.Scale(type="log", domain=x_dom), axis=alt.Axis(format=SI_FORMAT, title="Arithmetic intensity (FLOP/byte)")
    )
    y = alt.Y("flops:Q", scale=alt.Scale(type="log", domain=y_dom), axis=alt.Axis(format=SI_FORMAT, title="Performance per GPU (FLOP/s)"))
    kinds = [k for k in ("datasheet", "empirical") if k in set(roofs["roof"].to_list())]
    roof_layer = (
        alt.Chart(roofs.rename({"attainable_flops": "flops"}))
        .mark_line(strokeWidth=2.5, clip=True)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "series:N", title="Roof", scale=alt.Scale(range=ROOF_COLOURS), legend=alt.Legend(orient="bottom", columns=2, labelLimit=320)
            ),
            strokeDash=alt.StrokeDash("roof:N", title="Roof kind", scale=alt.Scale(domain=kinds, range=[[1, 0], [6, 4]][: len(kinds)])),
            detail="series:N",
            tooltip=[alt.Tooltip("series:N", title="Roof"), alt.Tooltip("ridge:Q", format=",.0f", title="Ridge (FLOP/byte)")],
        )
    )
    tips = [
        alt.Tooltip("label:N", title="Measurement"),
        alt.Tooltip("status:N", title="Status"),
        alt.Tooltip("n:Q", format=",", title="Measurements"),
        alt.Tooltip("intensity:Q", format=",.1f", title="Intensity (FLOP/byte)"),
        alt.Tooltip("flops:Q", format=".3s", title="FLOP/s per GPU"),
    ]
    pred_layer = alt.Chart(rings).mark_point(size=140, filled=False, color="black", strokeWidth=1.5).encode(x=x, y=y, tooltip=tips)
    meas_layer = (
        alt.Chart(measured)
        .mark_point(size=150, filled=True, opacity=0.9)
        .encode(
            x=x,
            y=y,
            color=alt.Color("status:N", scale=STATUS_SCALE, title="Measured point", legend=alt.Legend(symbolType="circle")),
            shape=alt.Shape("status:N", scale=STATUS_SHAPES, legend=None),
            tooltip=tips,
        )
    )
    chart: alt.LayerChart = (
        alt.layer(roof_layer, pred_layer, meas_layer)
        .resolve_scale(color="independent")
        .properties(title=_title(title, subtitle), width=width, height=height)
    )
    return chart


def _title(title: str, subtitle: str) -> str | alt.TitleParams:
    return alt.TitleParams(title, subtitle=subtitle) if subtitle else title


def throughput_batch_chart(
    curves: pl.DataFrame,
    compared: pl.DataFrame | None,
    *,
    title: str = "",
    width: int = 760,
    height: int = 380,
    subtitle: str = "",
) -> alt.LayerChart:
    """Tokens/s against batch (log-log): the predicted ceiling per setup (solid), calibrated (dashed), measured points.

    `compared`: a comparison (core.evidence.compare.compare, one point per
    decode or serving row) or marks already aggregated
    (core.present.figures.batch_marks: series, batch, tokens_per_s, status, phase, label, n); None draws no points.
    """
    long_cols = ["predicted_tokens_per_s"] + (["calibrated_tokens_per_s"] if "calibrated_tokens_per_s" in curves.columns else [])
    lines = (
        curves.unpivot(index=["series", "batch"], on=long_cols, variable_name="kind", value_name="tokens_per_s")
        .with_columns(
            pl.col("kind").replace({"predicted_tokens_per_s": "datasheet ceiling", "calibrated_tokens_per_s": "calibrated model"})
        )
        .pipe(positive, "batch", "tokens_per_s")
    )
    marks = ["series", "batch", "tokens_per_s", "status", "phase", "label", "n"]
    if compared is None:
        pts = pl.DataFrame(
            schema={"series": pl.String, "batch": pl.Int64, "tokens_per_s": pl.Float64, **{c: pl.String for c in marks[3:6]}, "n": pl.Int64}
        )
    elif "label" in compared.columns:
        pts = positive(compared, "batch", "tokens_per_s").select(marks)
    else:
        pts = positive(compared.filter(pl.col("phase") != "prefill"), "batch", "tokens_per_s").select(
            pl.format("{} × {} · {} · {} ({} in / {} out)", "num_gpus", "gpu", "model", "weights", "input_tokens", "output_tokens").alias(
                "series"
            ),
            "batch",
            "tokens_per_s",
            "status",
            "phase",
            pl.format("row {}", "row").alias("label"),
            pl.lit(1).alias("n"),
        )
    x = alt.X("batch:Q", scale=alt.Scale(type="log", base=2), axis=alt.Axis(title="Batch / concurrency (sequences)"))
    y = alt.Y("tokens_per_s:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format=SI_FORMAT, title="Output tokens/s (all sequences)"))
    kinds = [k for k in ("datasheet ceiling", "calibrated model") if k in set(lines["kind"].to_list())]
    line_layer = (
        alt.Chart(lines)
        .mark_line(strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "series:N",
                title="Setup",
                scale=alt.Scale(range=ROOF_COLOURS),
                legend=alt.Legend(orient="bottom", columns=2, labelLimit=400),
            ),
            strokeDash=alt.StrokeDash("kind:N", title="Line", scale=alt.Scale(domain=kinds, range=[[1, 0], [6, 4]][: len(kinds)])),
            detail="kind:N",
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("kind:N"),
                alt.Tooltip("batch:Q"),
                alt.Tooltip("tokens_per_s:Q", format=",.0f", title="tokens/s"),
            ],
        )
    )
    point_layer = (
        alt.Chart(pts)
        .mark_point(size=130, filled=True)
        .encode(
            x=x,
            y=y,
            color=alt.Color("status:N", scale=STATUS_SCALE, title="Measured point"),
            shape=alt.Shape("status:N", scale=STATUS_SHAPES, legend=None),
            tooltip=[
                alt.Tooltip("label:N", title="Measurement"),
                alt.Tooltip("n:Q", format=",", title="Measurements"),
                alt.Tooltip("series:N"),
                alt.Tooltip("phase:N"),
                alt.Tooltip("batch:Q"),
                alt.Tooltip("tokens_per_s:Q", format=",.0f", title="Measured tokens/s"),
                alt.Tooltip("status:N"),
            ],
        )
    )
    chart: alt.LayerChart = (
        alt.layer(line_layer, point_layer)
        .resolve_scale(color="independent")
        .properties(title=_title(title, subtitle), width=width, height=height)
    )
    return chart


def empirical_roofs(gpus: pl.DataFrame, precisions: list[str], calibration: pl.DataFrame) -> pl.DataFrame:
    """Datasheet roofs plus, per accelerator with an accepted fit, the fitted ("empirical") roof."""
    frames = [roof_lines(gpus, precisions)]
    for cal in calibration.iter_rows(named=True):
        if cal.get("accepted") is False:  # a refused fit (core.evidence.calibration.refusal) draws no roof
            continue
        eb, ec = cal.get("eff_bandwidth"), cal.get("eff_compute") or 1.0
        if eb is None or math.isnan(eb) or eb <= 0:
            continue
        fitted = roof_lines(gpus.filter(pl.col("id") == cal["gpu"]), precisions, eff_bandwidth=min(eb, 0.999999), eff_compute=min(ec, 1.0))
        frames.append(
            fitted.filter(pl.col("roof") == "derated").with_columns(
                pl.lit("empirical").alias("roof"), pl.col("series").str.replace(r"\(derated\)", "(empirical)", literal=False)
            )
        )
    return pl.concat(frames)
