"""Altair chart builders (pure: frames in, `alt.Chart` out) and their PNG/SVG export.

The page, the export and the tests use the same chart. Colours carry one
meaning everywhere: memory-bound is blue, compute-bound is orange.
Values <= 0 are filtered before they reach a log scale (one would blank it).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt
import polars as pl

from core.model.predicted import NAMES
from core.model.roofline import roof_lines
from core.present.label_layout import Label, Plot, leader, place

# Altair checks every schema object against the Vega-Lite schema as it is made (its debug mode, on by default): a third
# of what building a page's chart costs on each rerun. The specs as the browser gets them are checked whole instead
# (tests/unit/test_chart_schema.py), which also catches what the per-object checks cannot.
alt.utils.schemapi.disable_debug_mode()

# Charts become Vega-Lite specs here (memoised by the pages, exported as PNG/SVG), not
# through st.altair_chart, so Altair's notebook guard of 5,000 rows per dataset would
# refuse an imported benchmark's points (Streamlit's own path has no such limit). Set once,
# process-wide, at import: toggling it per call would race between sessions' threads.
alt.data_transformers.disable_max_rows()

MEMORY_COLOUR = "#1f77b4"
COMPUTE_COLOUR = "#ff7f0e"
BOUND_SCALE = alt.Scale(domain=["memory", "compute"], range=[MEMORY_COLOUR, COMPUTE_COLOUR])
#: Roof colours: none of them blue or orange, which mean memory- and compute-bound.
#: Fifteen, each unlike the others, the most unlike first (a chart of eight accelerators uses the first eight).
ROOF_COLOURS = [
    "#2f855a",  # green
    "#6b46c1",  # purple
    "#d69e2e",  # gold
    "#1a202c",  # near black
    "#b83280",  # magenta
    "#0891b2",  # cyan
    "#975a16",  # brown
    "#65a30d",  # lime
    "#718096",  # grey
    "#4c51bf",  # indigo
    "#ed64a6",  # pink
    "#0d9488",  # teal
    "#a21caf",  # fuchsia
    "#7c2d12",  # rust
    "#c53030",  # red
]
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
    domain=["decode matmul", "decode attention", "decode step", "prefill matmul", "prefill step", "decode step, expected"],
    range=["circle", "triangle-up", "diamond", "square", "cross", "triangle-down"],
)


def _shapes(kinds: tuple[str, ...]) -> alt.Scale:
    """The operating points' shapes for the kinds drawn (every kind when none is named): the legend lists only those
    (the tour's batching step draws decode matmuls alone; it listed six shapes)."""
    if not kinds:
        return POINT_SHAPES
    shape = dict(zip(POINT_SHAPES.domain, POINT_SHAPES.range, strict=True))  # type: ignore[arg-type]
    return alt.Scale(domain=list(kinds), range=[shape[k] for k in kinds])


#: Roof kinds on the roofline and their dashes: the datasheet solid, the derated and the probe-measured dashed.
ROOF_DASHES = {"datasheet": [1, 0], "derated": [6, 4], "measured": [2, 3]}

#: A Vega expression true on a whole power of ten (a log axis labels only those).
_DECADE = "abs(log(datum.value) / LN10 - round(log(datum.value) / LN10)) < 1e-6"


def log_axis(title: str, *, prefixed: bool = False, decades: bool = True, **options: Any) -> alt.Axis:
    """A log axis labelled as people write numbers: 0.01, 0.1, 1, 10, 100, 1k, 10k, 1M (`prefixed` False), or with
    an SI prefix after a space, 1 G, 10 G, 1 T, 1 P, the unit in `title` (e.g. "(FLOP/s)"). `decades`: label only
    whole powers of ten (False for a base-2 axis: 1, 2, 4, ... 1,024). Every log axis in this module is made here."""
    if prefixed:
        text = "replace(format(datum.value, '~s'), regexp('([kMGTPEZY])$'), ' $1')"
    else:
        text = "datum.value >= 10000 ? format(datum.value, '~s') : format(datum.value, ',~g')"
    return alt.Axis(title=title, labelExpr=f"{_DECADE} ? {text} : ''" if decades else text, **options)


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values for a log axis over [lo, hi] that label its whole range: 1-2-5 in each decade (1-2-3-5 where that
    leaves more than a factor of two bare at an end), 1-3 where that makes
    more than ten, whole decades where that still does, 1-1.5-2-3-4-5-6-7-8-9 where it makes fewer than three (so no two labelled ticks are more than about
    3x apart, and a range inside one decade still reads). lo and hi > 0."""
    if not (0 < lo < hi and math.isfinite(hi)):
        return []
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))

    def within(steps: tuple[float, ...]) -> list[float]:
        values = (float(f"{m * 10.0**d:.12g}") for d in range(first, last + 1) for m in steps)
        return [v for v in values if lo <= v <= hi]

    ticks = within((1.0, 2.0, 5.0))
    if ticks and (hi / ticks[-1] > 2.0 or ticks[0] / lo > 2.0):  # an end left bare (up to 4,900 labelled only to 2,000)
        ticks = within((1.0, 2.0, 3.0, 5.0))
    if len(ticks) > 10:
        ticks = within((1.0, 3.0))
    if len(ticks) > 10:
        ticks = within((1.0,))
    elif len(ticks) < 3:
        ticks = within((1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0))
    return ticks


#: The roofline's point labels (the points the shape legend does not name alone) and its marks' sizes (area, px²).
LABELLED_POINTS = ("decode matmul", "decode attention", "prefill matmul", "decode step, expected")
POINT_SIZE, RIDGE_SIZE, PATH_SIZE, PRODUCT_SIZE = 180, 60, 36, 70
LABEL_FONT, RIDGE_FONT = 11.0, 12.0
#: How far (px) a ridge's or a path end's label may sit from its dot; a point's may go farther, with a leader line.
NEAR = 14.0
#: The most the y axis (labels and title) takes of the chart's width, px.
Y_AXIS_PX = 72


def roofline_chart(
    roofs: pl.DataFrame,
    points: pl.DataFrame,
    paths: pl.DataFrame | None = None,
    *,
    title: str = "",
    width: int = 760,
    height: int = 440,
    products: pl.DataFrame | None = None,
    batch: int | None = None,
    legend: str = "bottom",
) -> alt.LayerChart:
    """Log-log roofline: roofs per accelerator and precision, ridges, operating points, their paths over the batch.

    `roofs` comes from core.model.roofline.roof_lines, `points` and `paths` from
    core.model.roofline.operating_points (points: one batch; paths: every batch);
    `products`, the probe's timed matmuls (core.present.figures.probe_products),
    are drawn as hollow squares where they reached. `batch`, when the points are
    of one batch, is written in the plot's corner.

    Every ridge is named in the roofs' legend ("… · ridge 295 FLOP/byte"); text
    labels on the plot (points, ridges, the paths' ends) are placed by
    core.present.label_layout so that none overlaps another, a marker or a line
    at `width` x `height` or wider; one with no clear place is left to the legend.
    The spec holds no figure of the batch: only its datasets change with it, so a
    page redrawing it for another batch updates the data of the chart in place.
    `legend`: where the legends go, "bottom" (under the plot, side by side),
    "stacked" (under the plot, one under another: a narrow column, where side by
    side they would run past its edge) or "right" (beside it: presentation mode,
    where the height is what the screen lacks).
    """
    layout, datasets = _roofline_parts(roofs, points, paths, products, width=width, height=height, batch=batch)
    chart = _roofline_layers(*layout, width=width, height=height, products="products" in datasets, batch=batch is not None, legend=legend)
    return chart.properties(title=title, datasets=datasets)


def roofline_spec(
    roofs: pl.DataFrame | RooflineBackdrop,
    points: pl.DataFrame,
    paths: pl.DataFrame | None = None,
    *,
    title: str = "",
    width: int = 760,
    height: int = 440,
    products: pl.DataFrame | None = None,
    batch: int | None = None,
    legend: str = "bottom",
) -> dict[str, Any]:
    """roofline_chart's Vega-Lite spec, the same dict as `roofline_chart(...).to_dict(validate=False)`, made quicker:
    the layers depend only on the domains, the roofs' styles and which datasets there are, so they are built once
    for each of those and only the datasets are new. `roofs` may be the backdrop made once of the roofs, paths and
    products (roofline_backdrop; `paths` and `products` are then not read): only the points and labels are new."""
    layout, datasets = _roofline_parts(roofs, points, paths, products, width=width, height=height, batch=batch)
    base = json.loads(_roofline_base(*layout, width, height, "products" in datasets, batch is not None, legend))
    return {**base, "title": title, "datasets": datasets}


@functools.lru_cache(maxsize=128)
def _roofline_base(
    x_dom: tuple[float, float],
    y_dom: tuple[float, float],
    styles: RoofStyles,
    has_paths: bool,
    kinds: tuple[str, ...],
    width: int,
    height: int,
    products: bool,
    batch: bool,
    legend: str,
) -> str:
    layers = _roofline_layers(
        x_dom, y_dom, styles, has_paths, kinds, width=width, height=height, products=products, batch=batch, legend=legend
    )
    return json.dumps(layers.to_dict(validate=False))


ROOF_POINT_COLUMNS = ("point", "batch", "intensity", "attainable_flops", "share_of_peak", "bound", "ridge_batch")

#: How each roof is drawn: (its legend text, its colour, its dash), in the legend's order.
RoofStyles = tuple[tuple[str, str, tuple[int, ...]], ...]
#: (x domain, y domain, the roofs' styles, whether there are paths, the operating points' kinds drawn)
Layout = tuple[tuple[float, float], tuple[float, float], RoofStyles, bool, tuple[str, ...]]
#: The columns of a chart's points and paths (core.model.roofline.operating_points' types), for a chart without paths.
_PATH_SCHEMA = {
    "point": pl.String,
    "batch": pl.Int64,
    "intensity": pl.Float64,
    "attainable_flops": pl.Float64,
    "share_of_peak": pl.Float64,
    "bound": pl.String,
    "ridge_batch": pl.Int64,
}


@dataclass(frozen=True)
class RooflineBackdrop:
    """What a roofline chart draws that does not depend on the batch shown: the roofs, their ridges, the batch
    paths and the probe's products, made ready once (roofline_backdrop) and kept with a page's view, so that a
    chart for another batch works out only its points and the labels' places."""

    roofs: pl.DataFrame  # positive, the encoded columns and the legend text
    ridges: pl.DataFrame  # the roofs' ridge points with their label text
    paths: pl.DataFrame  # the decode points of the sweep (prefill's are the same at every batch)
    products: pl.DataFrame | None
    styles: RoofStyles  # each roof's legend text, colour and dash (roof_styles)
    datasets: dict[str, list[dict[str, Any]]]  # the named datasets of all of the above
    labels: tuple[tuple[str, Label], ...]  # the ridges' and the paths' ends' labels, in order of priority
    markers: tuple[tuple[float, float, float], ...]  # ridges, paths and products: (x, y, radius px)
    lines: tuple[tuple[tuple[float, float], ...], ...]  # every roof and every path, as polylines


def roofline_backdrop(roofs: pl.DataFrame, paths: pl.DataFrame | None, products: pl.DataFrame | None = None) -> RooflineBackdrop:
    """The batch-independent part of a roofline chart (RooflineBackdrop)."""
    # only the columns the encodings read travel into the spec
    roofs = positive(roofs, "intensity", "attainable_flops").select(
        "series", "roof", "point", "intensity", "attainable_flops", "ridge", "peak_flops", "bandwidth_bytes_per_s"
    )
    roofs = roofs.with_columns(
        pl.format("{} · ridge {} FLOP/byte", "series", pl.col("ridge").map_elements(_count, return_dtype=pl.String)).alias("legend")
    )
    ridges = roofs.filter(pl.col("point") == "ridge").with_columns(
        pl.format(
            "{}ridge {}",
            pl.when(pl.col("roof") == "datasheet").then(pl.lit("")).otherwise(pl.col("roof") + pl.lit(" ")),
            pl.col("ridge").map_elements(_count, return_dtype=pl.String),
        ).alias("label")
    )
    # a batch path is drawn where it moves: the decode points (prefill's are the same at every batch)
    path_rows = (
        positive(paths, "intensity", "attainable_flops").filter(~pl.col("point").str.starts_with("prefill")).select(ROOF_POINT_COLUMNS)
        if paths is not None
        else pl.DataFrame(schema=_PATH_SCHEMA)
    )
    shown_products = positive(products, "intensity", "attainable_flops") if products is not None else None
    # named datasets as plain rows: Altair neither converts nor hashes them (a rerun stays quick)
    datasets = {"roofs": roofs.to_dicts(), "ridges": ridges.to_dicts()}
    if path_rows.height:
        datasets["paths"] = path_rows.to_dicts()
    if shown_products is not None and shown_products.height:
        datasets["products"] = shown_products.to_dicts()
    labels: list[tuple[str, Label]] = []
    for kind, sub in (
        ("ridge", ridges.filter(pl.col("roof") == "datasheet")),
        ("other ridge", ridges.filter(pl.col("roof") != "datasheet")),
    ):
        for row in sub.sort("ridge", "series").iter_rows(named=True):
            bold = kind == "ridge"
            font = RIDGE_FONT if bold else LABEL_FONT
            # near its dot or not at all: the legend names every ridge
            labels.append((kind, Label(row["label"], row["intensity"], row["attainable_flops"], font, bold, _radius(RIDGE_SIZE), NEAR)))
    matmul = path_rows.filter(pl.col("point") == "decode matmul").sort("batch")
    if matmul.height > 1:
        for row in (matmul.row(0, named=True), matmul.row(-1, named=True)):
            text = f"batch {_count(row['batch'])}"
            labels.append(("path", Label(text, row["intensity"], row["attainable_flops"], 10.0, False, _radius(PATH_SIZE), NEAR)))
    markers = [(x, y, _radius(RIDGE_SIZE)) for x, y in ridges.select("intensity", "attainable_flops").iter_rows()]
    markers += [(x, y, _radius(PATH_SIZE)) for x, y in path_rows.select("intensity", "attainable_flops").iter_rows()]
    if shown_products is not None:
        markers += [(x, y, _radius(PRODUCT_SIZE)) for x, y in shown_products.select("intensity", "attainable_flops").iter_rows()]
    lines = [
        tuple(g.sort("intensity").select("intensity", "attainable_flops").iter_rows())
        for _, g in roofs.group_by("series", maintain_order=True)
    ]
    lines += [
        tuple(g.sort("batch").select("intensity", "attainable_flops").iter_rows())
        for _, g in path_rows.group_by("point", maintain_order=True)
    ]
    return RooflineBackdrop(
        roofs, ridges, path_rows, shown_products, roof_styles(roofs), datasets, tuple(labels), tuple(markers), tuple(lines)
    )


def roof_styles(roofs: pl.DataFrame) -> RoofStyles:
    """Each roof's colour and dash: one colour per accelerator and precision (ROOF_COLOURS, in order of their names;
    past fifteen they come round again), shared by its derated and measured roofs, which its kind's dash tells apart
    (ROOF_DASHES). So no two roofs of a chart are drawn alike while fifteen accelerator-precisions or fewer are drawn,
    and the colours say which roofs belong together. `roofs`: the backdrop's, with their legend text."""
    rows = roofs.select("legend", "series", "roof").unique().sort("legend")
    base = rows["series"].str.replace(r" \((derated|measured)\)$", "")
    bases = sorted(set(base.to_list()))
    return tuple(
        (legend, ROOF_COLOURS[bases.index(b) % len(ROOF_COLOURS)], tuple(ROOF_DASHES[kind]))
        for legend, b, kind in zip(rows["legend"], base, rows["roof"], strict=True)
    )


def _roofline_parts(
    roofs: pl.DataFrame | RooflineBackdrop,
    points: pl.DataFrame,
    paths: pl.DataFrame | None,
    products: pl.DataFrame | None = None,
    *,
    width: int = 760,
    height: int = 440,
    batch: int | None = None,
) -> tuple[Layout, dict[str, list[dict[str, Any]]]]:
    """(domains, roof styles, has paths) and the named datasets of a roofline chart, its text labels placed; `roofs`
    may be the backdrop already made of the roofs, paths and products (roofline_backdrop)."""
    back = roofs if isinstance(roofs, RooflineBackdrop) else roofline_backdrop(roofs, paths, products)
    points = positive(points, "intensity", "attainable_flops").select(ROOF_POINT_COLUMNS)
    x_dom = _decades([back.roofs["intensity"], points["intensity"]], pad=3.0)
    y_dom = _decades([back.roofs["attainable_flops"], points["attainable_flops"]], pad=3.0)
    plot_width = width - Y_AXIS_PX  # the chart's width holds the y axis (autosize fit-x)
    labels = roofline_labels(back, points, x_dom=x_dom, y_dom=y_dom, width=plot_width, height=height, batch=batch)
    datasets = {**back.datasets, "points": points.to_dicts(), "labels": labels.to_dicts()}
    order = ("roofs", "ridges", "points", "labels", "paths", "products")  # the datasets' order in the spec, as before
    datasets = {k: datasets[k] for k in order if k in datasets}
    if batch is not None:
        datasets["batch"] = [{"text": f"batch {_count(batch)}"}]
    drawn = set(points["point"].to_list())
    kinds = tuple(k for k in POINT_SHAPES.domain if k in drawn)  # type: ignore[union-attr]
    return (x_dom, y_dom, back.styles, back.paths.height > 0, kinds), datasets


def _count(value: float) -> str:
    """A ridge or a batch as people write it: 295, 1,134."""
    return f"{value:,.0f}"


def _radius(area: float) -> float:
    """The radius in px of a point mark of `area` px² (Vega's size)."""
    return math.sqrt(area) / 2 + 1.0


def roofline_labels(
    back: RooflineBackdrop,
    points: pl.DataFrame,
    *,
    x_dom: tuple[float, float],
    y_dom: tuple[float, float],
    width: float,
    height: float,
    batch: int | None = None,
) -> pl.DataFrame:
    """The roofline's text labels placed clear of one another, of every marker and of every line (core.present.label_layout).

    In order of priority: the labelled operating points, the datasheet ridges, the other ridges, the ends of the
    decode matmul's batch path. A point drawn at several batches (the tour's decode matmuls from batch 1 to 1,024) is
    named by its batch ("batch 64"), the legend naming the operation. Columns: text, kind ("point", "ridge", "other ridge", "path"), size (font px), bold,
    intensity and attainable_flops (the label's centre), anchor_intensity and anchor_flops (what it names). Labels
    with no clear place are absent (the legend names every ridge).
    """
    wanted: list[tuple[str, Label]] = []
    labelled = points.filter(pl.col("point").is_in(LABELLED_POINTS)).sort("point", "batch")
    repeated = set(labelled.filter(pl.col("point").is_duplicated())["point"].to_list())
    for row in labelled.iter_rows(named=True):
        text = f"batch {row['batch']:,}" if row["point"] in repeated else row["point"]
        wanted.append(("point", Label(text, row["intensity"], row["attainable_flops"], LABEL_FONT, False, _radius(POINT_SIZE))))
    # a path's end is not named again where a point's label or the plot's corner ("batch 1", the `batch` shown) says it
    named = {lb.text for _, lb in wanted} | ({f"batch {batch:,}"} if batch is not None else set())
    wanted += [(kind, lb) for kind, lb in back.labels if not (kind == "path" and lb.text in named)]  # one "batch 1" only
    markers = [(x, y, _radius(POINT_SIZE)) for x, y in points.select("intensity", "attainable_flops").iter_rows()]
    markers += back.markers
    plot = Plot(x_dom, y_dom, float(width), float(height))
    spots = place([lb for _, lb in wanted], plot, markers=markers, lines=[list(line) for line in back.lines])
    rows: list[dict[str, Any]] = []
    for (kind, lb), spot in zip(wanted, spots, strict=True):
        if spot is None:
            continue
        line = leader(lb, spot, plot)
        (lx, ly), (lx2, ly2) = line if line is not None else ((None, None), (None, None))
        rows.append(
            {
                "text": lb.text,
                "kind": kind,
                "size": lb.font_size,
                "bold": lb.bold,
                "intensity": spot[0],
                "attainable_flops": spot[1],
                "anchor_intensity": lb.x,
                "anchor_flops": lb.y,
                "leader_x": lx,
                "leader_y": ly,
                "leader_x2": lx2,
                "leader_y2": ly2,
            }
        )
    schema = {"text": pl.String, "kind": pl.String, "size": pl.Float64, "bold": pl.Boolean}
    schema |= {c: pl.Float64 for c in ("intensity", "attainable_flops", "anchor_intensity", "anchor_flops")}
    schema |= {c: pl.Float64 for c in ("leader_x", "leader_y", "leader_x2", "leader_y2")}
    return pl.DataFrame(rows, schema=schema)


def _roofline_layers(
    x_dom: tuple[float, float],
    y_dom: tuple[float, float],
    styles: RoofStyles,
    has_paths: bool,
    kinds: tuple[str, ...] = (),
    *,
    width: int,
    height: int,
    products: bool = False,
    batch: bool = False,
    legend: str = "bottom",
) -> alt.LayerChart:
    orient: Any = "bottom" if legend == "stacked" else legend  # one of Vega-Lite's legend orients
    x = alt.X(
        "intensity",
        type="quantitative",
        scale=alt.Scale(type="log", domain=list(x_dom)),
        axis=log_axis("Arithmetic intensity (FLOP/byte)", labelFlush=True),  # "1M" at the plot's right edge stays inside it
    )
    y = alt.Y(
        "attainable_flops",
        type="quantitative",
        scale=alt.Scale(type="log", domain=list(y_dom)),
        axis=log_axis("Attainable performance (FLOP/s)", prefixed=True),
    )
    # one legend of the roofs, each drawn in its colour and dash (roof_styles): colour and dash of one field, one title
    legends = [s[0] for s in styles]
    roof_legend = alt.Legend(orient=orient, direction="vertical", labelLimit=420)
    series = alt.Color(
        "legend",
        type="nominal",
        title="Roof (its ridge)",
        scale=alt.Scale(domain=legends, range=[s[1] for s in styles]),
        legend=roof_legend,
    )
    below = alt.Legend(orient=orient, direction="vertical")
    if legend == "right":  # beside the plot (presentation mode): two columns of smaller symbols, so that the roofs' legend
        # under them fits beside the plot with eight roofs (3 overlays x 3 precisions); one column ran past its foot
        below = alt.Legend(orient=orient, direction="vertical", columns=2, symbolSize=LEGEND_SYMBOL)
    dash = alt.StrokeDash(
        "legend",
        type="nominal",
        title="Roof (its ridge)",
        scale=alt.Scale(domain=legends, range=[list(s[2]) for s in styles]),
        legend=roof_legend,
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
        .mark_point(filled=True, size=RIDGE_SIZE, color="black")
        .encode(
            x=x,
            y=y,
            tooltip=[
                alt.Tooltip("series", type="nominal"),
                alt.Tooltip("ridge", type="quantitative", format=",.0f", title="Ridge (FLOP/byte)"),
            ],
        )
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
    if has_paths:  # above the roof it runs along: a dark line, a white dot at each batch of the sweep
        layers.append(
            alt.Chart(alt.NamedData(name="paths"))
            .mark_line(
                strokeWidth=1.5,
                color="#334155",
                point=alt.OverlayMarkDef(size=PATH_SIZE, filled=True, fill="white", stroke="#334155", strokeWidth=1.2),
            )
            .encode(x=x, y=y, detail=alt.Detail("point", type="nominal"), order=alt.Order("batch", type="quantitative"), tooltip=tips)
        )
    layers.append(ridge_dots)
    if products:
        layers.append(
            alt.Chart(alt.NamedData(name="products"))
            .mark_point(shape="square", filled=False, size=PRODUCT_SIZE, strokeWidth=1.5, color="#333333", clip=True)
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
    layers.append(
        alt.Chart(alt.NamedData(name="points"))
        .mark_point(filled=True, size=POINT_SIZE, stroke="black", strokeWidth=1)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape("point", type="nominal", scale=_shapes(kinds), title="Operating point", legend=below),
            fill=alt.Fill("bound", type="nominal", scale=BOUND_SCALE, title="Bound", legend=below),
            tooltip=tips,
        )
    )
    # the labels, each at the place core.present.label_layout found for it; a far one with a leader line to its point
    layers.append(
        alt.Chart(alt.NamedData(name="labels"))
        .transform_filter("isValid(datum.leader_x)")
        .mark_rule(color="#64748b", strokeWidth=1)
        .encode(
            x=alt.X("leader_x", type="quantitative", scale=alt.Scale(type="log", domain=list(x_dom))),
            y=alt.Y("leader_y", type="quantitative", scale=alt.Scale(type="log", domain=list(y_dom))),
            x2=alt.X2("leader_x2"),
            y2=alt.Y2("leader_y2"),
        )
    )
    for kind, style in (
        ("point", {"fontSize": LABEL_FONT}),
        ("ridge", {"fontSize": RIDGE_FONT, "fontWeight": "bold"}),
        ("other ridge", {"fontSize": LABEL_FONT, "fontStyle": "italic"}),
        ("path", {"fontSize": 10.0, "color": "#334155"}),
    ):
        layers.append(
            alt.Chart(alt.NamedData(name="labels"))
            .transform_filter(alt.datum.kind == kind)
            .mark_text(align="center", baseline="middle", **style)  # type: ignore[arg-type]
            .encode(x=x, y=y, text=alt.Text("text", type="nominal"))
        )
    if batch:  # the batch shown, in the plot's top left corner
        layers.append(
            alt.Chart(alt.NamedData(name="batch"))
            .mark_text(align="left", baseline="top", fontSize=15, fontWeight="bold", color="#334155")
            .encode(x=alt.value(8), y=alt.value(8), text=alt.Text("text", type="nominal"))
        )
    # the plot keeps its height; stretched to its column (Streamlit's width="stretch") only its width follows,
    # the legends below it; label places hold at `width` or wider (core.present.label_layout)
    chart = alt.LayerChart(
        layer=layers,
        # the roofs' colour and dash resolved in their own layer, where one legend draws both (roof_styles)
        resolve=alt.Resolve(scale=alt.ScaleResolveMap(color="independent", strokeDash="independent")),
        width=width,
        height=height,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )
    if legend == "stacked":  # Vega lays the legends under the plot one under another, from its left edge
        chart = chart.properties(config=alt.Config(legend=alt.LegendConfig(layout=STACKED_LEGENDS)))
    if legend == "right":  # beside the plot, the three legends 8 px apart
        chart = chart.properties(config=alt.Config(legend=alt.LegendConfig(layout=RIGHT_LEGENDS)))
    return chart


#: The operating points' legend symbols beside the plot (presentation mode), px².
LEGEND_SYMBOL = 70

#: Vega's legend layout for legends under the plot one under another (Vega-Lite passes it on as an expression).
STACKED_LEGENDS = alt.ExprRef(expr="{bottom: {direction: 'vertical', anchor: 'start'}}")
#: And beside it, 8 px apart (Vega's default is 16).
RIGHT_LEGENDS = alt.ExprRef(expr="{right: {direction: 'vertical', anchor: 'start', margin: 8}}")


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
ABOVE_COLOUR = "#c53030"
#: Accelerators (or setups) on the measured charts, one colour each: neither blue nor orange (memory- and
#: compute-bound) nor the red of a point above its ceiling.
ACCELERATOR_COLOURS = [c for c in ROOF_COLOURS if c != ABOVE_COLOUR]
STATUS_SYMBOL = "#718096"
#: The measured points' shape legend: a short title that fits the legend's width, grey symbols (a point within its
#: ceiling has its accelerator's colour, not one of its own) and labels that say the red.
STATUS_LEGEND = alt.Legend(
    title="Measured point",
    symbolFillColor=STATUS_SYMBOL,
    symbolStrokeColor=STATUS_SYMBOL,
    labelExpr="datum.label == 'above ceiling' ? 'above its ceiling (red)' : 'within its ceiling'",
)


def _by_accelerator(field: str, title: str, legend: alt.Legend | None = None) -> alt.Color:
    """Colour by accelerator (or setup), a point above its ceiling red whatever its accelerator."""
    return alt.Color(field, type="nominal", title=title, scale=alt.Scale(range=ACCELERATOR_COLOURS), legend=legend)


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
    refit, "empirical"). Either `compared` is a comparison
    (core.evidence.compare.compare: point_intensity, predicted_flops_per_gpu,
    achieved_flops_per_gpu, status), one ring and one point per row, or it and
    `rings` are marks already aggregated (core.present.figures.measured_marks:
    intensity, flops, status, label, n, accelerator). `subtitle` says how marks were aggregated.

    Roofs and measured points are coloured by accelerator (one scale, legend "Accelerator": a point has its
    roof's colour); a point above its ceiling is a red cross whatever its accelerator.
    """
    roofs = positive(roofs, "intensity", "attainable_flops")
    if rings is None:
        pts = positive(compared, "point_intensity", "achieved_flops_per_gpu", "predicted_flops_per_gpu").with_columns(
            pl.format("row {} · {} · batch {}", "row", "phase", "batch").alias("label"),
            pl.lit(1).alias("n"),
            pl.col("gpu").cast(pl.String).alias("accelerator"),
        )
        rings = pts.select(
            pl.col("point_intensity").alias("intensity"), pl.col("predicted_flops_per_gpu").alias("flops"), "label", "status", "n"
        )
        measured = pts.select(
            pl.col("point_intensity").alias("intensity"),
            pl.col("achieved_flops_per_gpu").alias("flops"),
            "label",
            "status",
            "n",
            "accelerator",
        )
    else:
        rings = positive(rings, "intensity", "flops").select("intensity", "flops", "label", "status", "n")
        measured = positive(compared, "intensity", "flops")
        if "accelerator" not in measured.columns:
            measured = measured.with_columns(pl.lit("measured").alias("accelerator"))
        measured = measured.select("intensity", "flops", "label", "status", "n", pl.col("accelerator").cast(pl.String))
    x_dom = _log_domain([roofs["intensity"], rings["intensity"], measured["intensity"]], pad=3.0)
    y_dom = _log_domain([roofs["attainable_flops"], measured["flops"], rings["flops"]], pad=3.0)
    x = alt.X("intensity:Q", scale=alt.Scale(type="log", domain=x_dom), axis=log_axis("Arithmetic intensity (FLOP/byte)"))
    y = alt.Y("flops:Q", scale=alt.Scale(type="log", domain=y_dom), axis=log_axis("Performance per GPU (FLOP/s)", prefixed=True))
    kinds = [k for k in ("datasheet", "empirical") if k in set(roofs["roof"].to_list())]
    accelerator = _by_accelerator("accelerator", "Accelerator", alt.Legend(orient="bottom", columns=2, labelLimit=320))
    roof_layer = (
        alt.Chart(roofs.rename({"attainable_flops": "flops"}).with_columns(pl.col("name").alias("accelerator")))
        .mark_line(strokeWidth=2.5, clip=True)
        .encode(
            x=x,
            y=y,
            color=accelerator,
            strokeDash=alt.StrokeDash("roof:N", title="Roof kind", scale=alt.Scale(domain=kinds, range=[[1, 0], [6, 4]][: len(kinds)])),
            detail="series:N",
            tooltip=[alt.Tooltip("series:N", title="Roof"), alt.Tooltip("ridge:Q", format=",.0f", title="Ridge (FLOP/byte)")],
        )
    )
    tips = [
        alt.Tooltip("label:N", title="Measurement"),
        alt.Tooltip("accelerator:N", title="Accelerator"),
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
            color=accelerator,  # one above its ceiling is drawn red over it (_above_layer)
            shape=alt.Shape("status:N", scale=STATUS_SHAPES, legend=STATUS_LEGEND),
            tooltip=tips,
        )
    )
    above = _above_layer(measured, x, y, size=150, tips=tips)
    chart = alt.LayerChart(layer=[roof_layer, pred_layer, meas_layer, above]).properties(
        title=_title(title, subtitle), width=width, height=height
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
    """Tokens/s against batch (log-log): the ceiling per setup (solid), what the framework is expected to reach (dashed),
    measured points,
    each in its setup's colour (one scale, legend "Setup"), a point above its ceiling a red cross.

    `compared`: a comparison (core.evidence.compare.compare, one point per
    decode or serving row) or marks already aggregated
    (core.present.figures.batch_marks: series, batch, tokens_per_s, status, phase, label, n); None draws no points.
    """
    long_cols = ["predicted_tokens_per_s"] + (["expected_tokens_per_s"] if "expected_tokens_per_s" in curves.columns else [])
    lines = (
        curves.unpivot(index=["series", "batch"], on=long_cols, variable_name="kind", value_name="tokens_per_s")
        .with_columns(
            pl.col("kind").replace({"predicted_tokens_per_s": "datasheet ceiling", "expected_tokens_per_s": "expected (predicted model)"})
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
    # ticks at the powers of two the batches span (Vega would label 1.1, 1.2 ... 1.9 on a span of 1 to 2)
    batches = [float(b) for b in (*lines["batch"].to_list(), *pts["batch"].to_list()) if b and b > 0] or [1.0, 2.0]
    twos = [2**k for k in range(math.floor(math.log2(min(batches))), math.ceil(math.log2(max(batches))) + 1)]
    x = alt.X(
        "batch:Q",
        scale=alt.Scale(type="log", base=2, domain=[twos[0], twos[-1]] if len(twos) > 1 else [twos[0], twos[0] * 2]),
        axis=log_axis("Batch / concurrency (sequences)", decades=False, values=twos if len(twos) > 1 else [twos[0], twos[0] * 2]),
    )
    y = alt.Y("tokens_per_s:Q", scale=alt.Scale(type="log"), axis=log_axis("Output tokens/s (all sequences)"))
    # the legends one under another under the plot, each whole (side by side they ran past a 1280 px page's edge)
    setup = _by_accelerator("series", "Setup", alt.Legend(orient="bottom", columns=1, labelLimit=600))
    kinds = [k for k in ("datasheet ceiling", "expected (predicted model)") if k in set(lines["kind"].to_list())]
    line_layer = (
        alt.Chart(lines)
        .mark_line(strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=setup,
            strokeDash=alt.StrokeDash(
                "kind:N",
                title="Line",
                scale=alt.Scale(domain=kinds, range=[[1, 0], [6, 4]][: len(kinds)]),
                legend=alt.Legend(orient="bottom", labelLimit=400),
            ),
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
            color=setup,  # a point has its setup's line's colour; one above its ceiling is drawn red over it (_above_layer)
            shape=alt.Shape("status:N", scale=STATUS_SHAPES, legend=STATUS_LEGEND),
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
    # its width holds the axes and legends (fit-x), its height grows with them: fitted into width x height whole, the
    # stacked legends squeezed the plot to a strip and pushed the title off the top
    chart = alt.LayerChart(layer=[line_layer, point_layer, _above_layer(pts, x, y)]).properties(
        title=_title(title, subtitle),
        width=width,
        height=height,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
        config=alt.Config(legend=alt.LegendConfig(layout=STACKED_LEGENDS)),
    )
    return chart


def _above_layer(points: pl.DataFrame, x: alt.X, y: alt.Y, *, size: int = 130, tips: Sequence[alt.Tooltip] = ()) -> alt.Chart:
    """The points above their ceiling again, as red crosses over their own marks, in no legend. (A conditional red in the
    points' own colour would fill the status legend's symbols red, "within its ceiling" included.)"""
    above = points.filter(pl.col("status") == "above ceiling")
    layer: alt.Chart = (
        alt.Chart(above)
        .mark_point(size=size, filled=True, shape="cross", color=ABOVE_COLOUR)
        .encode(x=x, y=y, tooltip=list(tips) or [alt.Tooltip("label:N", title="Measurement"), alt.Tooltip("status:N")])
    )
    return layer


def empirical_roofs(gpus: pl.DataFrame, precisions: list[str], cells: Sequence[Any] = ()) -> pl.DataFrame:
    """Datasheet roofs plus, per accelerator with an accepted refit (core.evidence.refit.CellFit), its refitted
    ("empirical") roof: the GEMMs' achieved share of bandwidth and of the peak."""
    frames = [roof_lines(gpus, precisions)]
    for cell in cells:
        if not cell.accepted:  # a refused refit (core.evidence.refit.refusal) draws no roof
            continue
        p = dict(zip(NAMES, cell.parameters, strict=True))
        eb, ec = p["eta_mem_gemm"], p["eta_compute_gemm"]
        fitted = roof_lines(gpus.filter(pl.col("id") == cell.gpu), precisions, eff_bandwidth=min(eb, 0.999999), eff_compute=min(ec, 1.0))
        frames.append(
            fitted.filter(pl.col("roof") == "derated").with_columns(
                pl.lit("empirical").alias("roof"), pl.col("series").str.replace(r"\(derated\)", "(empirical)", literal=False)
            )
        )
    return pl.concat(frames)
