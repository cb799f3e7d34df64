"""Altair charts of the planning pages (pure: frames in, `alt.Chart` out).

Colours keep the app's meaning: blues are memory traffic (memory-bound),
orange is compute. Log scales only ever see values > 0 (core.present.charts.positive).
"""

from __future__ import annotations

from typing import Any

import altair as alt
import polars as pl

from core.plan.planning import COMPONENTS, MEMORY_SEGMENTS
from core.present.charts import ACCELERATOR_COLOURS, BOUND_SCALE, COMPUTE_COLOUR, MEMORY_COLOUR, SI_FORMAT, log_ticks, positive
from core.present.label_layout import Box, Label, Plot, box_at, place, text_size

COMPONENT_SCALE = alt.Scale(
    domain=list(COMPONENTS), range=[MEMORY_COLOUR, "#6baed6", "#c6dbef", COMPUTE_COLOUR, "#6b46c1", "#0d9488", "#a0aec0"]
)
SEGMENT_SCALE = alt.Scale(domain=list(MEMORY_SEGMENTS), range=["#08519c", "#6baed6", "#a0aec0", "#e2e8f0"])

#: width and height are the plot's own (Streamlit's default "fit" would squeeze axes and legends into them)
PAD = alt.AutoSizeParams(type="pad")
#: the one-bar charts fit the width of their column, axis and legend included (a page draws them at width="stretch")
FIT_WIDTH = alt.AutoSizeParams(type="fit-x", contains="padding")

#: Bar charts of the comparison: column -> axis title.
COMPARISON_METRICS = {
    "tokens_per_s_per_user": "tokens/s per user",
    "tokens_per_s_total": "tokens/s total",
    "usd_per_million_tokens": "$ per million output tokens",
    "tokens_per_s_per_watt": "tokens/s per W",
}


def step_breakdown_chart(breakdown: pl.DataFrame, *, title: str = "", width: int = 560) -> alt.Chart:
    """One stacked bar: the decode cycle's time in ms by component (core.plan.planning.step_breakdown)."""
    data = breakdown.filter(pl.col("time_s") > 0).with_columns(
        (pl.col("time_s") * 1e3).alias("time_ms"),
        pl.col("component").replace_strict({c: i for i, c in enumerate(COMPONENTS)}, return_dtype=pl.Int64).alias("order"),
        pl.lit("decode cycle").alias("bar"),
    )
    chart: alt.Chart = (
        alt.Chart(data)
        .mark_bar(height=44)
        .encode(
            x=alt.X("sum(time_ms):Q", title="time (ms)", stack="zero"),
            y=alt.Y("bar:N", title=None, axis=None),
            color=alt.Color("component:N", scale=COMPONENT_SCALE, title="Waiting on", legend=alt.Legend(orient="bottom", columns=4)),
            order=alt.Order("order:Q"),
            tooltip=[
                alt.Tooltip("component:N", title="Component"),
                alt.Tooltip("time_ms:Q", format=",.3f", title="Time (ms)"),
                alt.Tooltip("share:Q", format=".1%", title="Share of the cycle"),
            ],
        )
        .properties(title=title, width=width, height=80, autosize=FIT_WIDTH)
    )
    return chart


def memory_chart(memory: pl.DataFrame, *, title: str = "", width: int = 560) -> alt.LayerChart | alt.FacetChart:
    """One stacked bar of memory in GB (weights, KV cache, reserve, free) with a rule at the capacity."""
    data = memory.filter(pl.col("bytes") > 0).with_columns(
        (pl.col("bytes") / 1e9).alias("GB"),
        pl.col("segment").replace_strict({c: i for i, c in enumerate(MEMORY_SEGMENTS)}, return_dtype=pl.Int64).alias("order"),
        pl.lit("memory").alias("bar"),
    )
    capacity = float(memory["capacity_bytes"][0]) / 1e9 if memory.height else 0.0
    bars = (
        alt.Chart(data)
        .mark_bar(height=44)
        .encode(
            x=alt.X("sum(GB):Q", title="memory across all GPUs (GB)", stack="zero"),
            y=alt.Y("bar:N", title=None, axis=None),
            color=alt.Color("segment:N", scale=SEGMENT_SCALE, title="Held by", legend=alt.Legend(orient="bottom", columns=4)),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("segment:N", title="Segment"), alt.Tooltip("GB:Q", format=",.2f", title="GB")],
        )
    )
    rule_df = pl.DataFrame({"GB": [capacity], "label": [f"capacity {capacity:,.0f} GB"]})
    rule = alt.Chart(rule_df).mark_rule(color="#c53030", strokeWidth=2).encode(x="GB:Q")
    text = alt.Chart(rule_df).mark_text(align="right", dx=-4, dy=-30, color="#c53030", fontWeight="bold").encode(x="GB:Q", text="label:N")
    chart: alt.LayerChart | alt.FacetChart = alt.layer(bars, rule, text).properties(title=title, width=width, height=80, autosize=FIT_WIDTH)
    return chart


def frontier_chart(front: pl.DataFrame, *, title: str = "", width: int = 760, height: int = 380) -> alt.LayerChart | alt.FacetChart:
    """Tokens/s per user against tokens/s in total, one point per batch that fits (log-log).

    The current batch is ringed and labelled; the ridge batch is labelled
    when it fits. `front` comes from core.plan.planning.frontier. A batch's label
    that would touch another label at `width` x `height` is left to the tooltip
    (_clear_labels).
    """
    data = positive(front.filter(pl.col("fits")), "tokens_per_s_total", "tokens_per_s_per_user").with_columns(
        pl.when(pl.col("is_cut"))
        .then(pl.format("batch {} · memory full", pl.col("batch")))
        .otherwise(pl.format("batch {}", pl.col("batch")))
        .alias("label")
    )
    x_dom, y_dom = _padded(data["tokens_per_s_total"], 1.6), _padded(data["tokens_per_s_per_user"], 1.3)
    x = alt.X(
        "tokens_per_s_total:Q",
        scale=alt.Scale(type="log", domain=x_dom, nice=False),
        axis=alt.Axis(format=SI_FORMAT, title="tokens/s in total (log)", values=log_ticks(*x_dom)),
    )
    y = alt.Y(
        "tokens_per_s_per_user:Q",
        scale=alt.Scale(type="log", domain=y_dom, nice=False),
        axis=alt.Axis(format=SI_FORMAT, title="tokens/s per user (log)", values=log_ticks(*y_dom)),
    )
    tips = [
        alt.Tooltip("batch:Q", title="Batch"),
        alt.Tooltip("tokens_per_s_per_user:Q", format=",.1f", title="Tokens/s per user"),
        alt.Tooltip("tokens_per_s_total:Q", format=",.0f", title="Tokens/s total"),
        alt.Tooltip("time_per_output_token_s:Q", format=".4f", title="Time per output token (s)"),
        alt.Tooltip("bound:N", title="Bound"),
    ]
    line = alt.Chart(data).mark_line(color="grey", strokeWidth=1.5).encode(x=x, y=y, order="batch:Q")
    dots = (
        alt.Chart(data)
        .mark_point(filled=True, size=70)
        .encode(x=x, y=y, color=alt.Color("bound:N", scale=BOUND_SCALE, title="Bound"), tooltip=tips)
    )
    current = data.filter(pl.col("is_current")).with_columns(pl.format("now: batch {}", pl.col("batch")).alias("label"))
    ridge = data.filter(pl.col("is_ridge")).with_columns(pl.format("ridge batch {}", pl.col("batch")).alias("label"))
    plain = _clear_labels(data, current, ridge, x_dom, y_dom, width, height)
    labels = alt.Chart(plain).mark_text(align="left", dx=7, dy=-7, fontSize=10, color="#4a5568").encode(x=x, y=y, text="label:N")
    ring = alt.Chart(current).mark_point(size=420, strokeWidth=3, color="#c53030").encode(x=x, y=y, tooltip=tips)
    ring_text = (
        alt.Chart(current).mark_text(align="right", dx=-14, dy=14, fontWeight="bold", color="#c53030").encode(x=x, y=y, text="label:N")
    )
    ridge_mark = alt.Chart(ridge).mark_point(shape="diamond", size=300, filled=True, color="black").encode(x=x, y=y, tooltip=tips)
    ridge_text = alt.Chart(ridge).mark_text(align="right", dx=-12, dy=-12, fontWeight="bold").encode(x=x, y=y, text="label:N")
    chart: alt.LayerChart | alt.FacetChart = alt.layer(line, dots, labels, ring, ring_text, ridge_mark, ridge_text).properties(
        title=title, width=width, height=height
    )
    return chart


def _clear_labels(
    data: pl.DataFrame,
    current: pl.DataFrame,
    ridge: pl.DataFrame,
    x_dom: list[float],
    y_dom: list[float],
    width: int,
    height: int,
) -> pl.DataFrame:
    """The frontier's plain batch labels that touch no other text at `width` x `height` px (a wider chart only spreads
    them): the current batch's and the ridge's labels are placed first (their batches get no plain label), then each
    batch's in order of batch, kept where its box is clear of those kept before (boxes as core.present.label_layout
    sizes them)."""
    plot = Plot(tuple(x_dom), tuple(y_dom), width, height)  # type: ignore[arg-type]

    def box(row: dict[str, Any], dx: float, dy: float, font: float, right: bool) -> Box:
        return _text_box(plot, row["tokens_per_s_total"], row["tokens_per_s_per_user"], row["label"], dx, dy, font, right)

    taken = [box(r, -14, 14, 11, True) for r in current.iter_rows(named=True)]
    taken += [box(r, -12, -12, 11, True) for r in ridge.iter_rows(named=True)]
    own = set(current["batch"].to_list()) | set(ridge["batch"].to_list())
    kept = []
    for r in data.sort("batch").iter_rows(named=True):
        b = box(r, 7, -7, 10, False)
        if r["batch"] not in own and not any(b.overlaps(t) for t in taken):
            taken.append(b)
            kept.append(r["batch"])
    return data.filter(pl.col("batch").is_in(kept))


def _text_box(plot: Plot, x: float, y: float, text: str, dx: float, dy: float, font: float, right: bool) -> Box:
    """The box of a text mark drawn at data point (x, y) with offsets dx, dy px, aligned left of that place or (`right`)
    right of it, its baseline in the middle."""
    px, py = plot.px(x, y)
    half = text_size(text, font)[0] / 2
    return box_at(px + dx - half if right else px + dx + half, py + dy, text, font)


#: The purchase frontier's marks as label_layout sees them (px): a batch's dot (size 45) and a kept configuration's
#: ring (size 380, 3 px stroke), as radii.
FRONTIER_DOT_PX, FRONTIER_RING_PX = 4.0, 11.5


def _frontier_marks(data: pl.DataFrame, y: str) -> tuple[list[tuple[float, float, float]], list[list[tuple[float, float]]]]:
    """The frontier's dots (x, y, radius px) and its curves (each a polyline over its batches), in data units, as
    core.present.label_layout keeps labels clear of them."""
    dots = [(a, b, FRONTIER_DOT_PX) for a, b in data.select("tokens_per_s_per_user", y).iter_rows()]
    curves = [
        list(part.sort("batch").select("tokens_per_s_per_user", y).iter_rows()) for part in data.partition_by("series", maintain_order=True)
    ]
    return dots, curves


def _placed_kept(
    data: pl.DataFrame, kept: pl.DataFrame, y: str, x_dom: list[float], y_dom: list[float], width: int, height: int
) -> pl.DataFrame:
    """The kept configurations' "batch N" labels, each where core.present.label_layout finds it a place near its ring clear
    of every other label, every dot and ring and every curve at `width` x `height` px (a wider chart only spreads them),
    taken from the top of the plot down: the rows of those placed, at their labels' centres. A ring without a label
    still marks its configuration (its tooltip and the table give the batch)."""
    plot = Plot(tuple(x_dom), tuple(y_dom), width, height)  # type: ignore[arg-type]
    order = kept.sort(y, descending=True)
    labels = [
        Label(r["label"], r["tokens_per_s_per_user"], r[y], font_size=11, bold=True, marker_px=FRONTIER_RING_PX, max_gap=14.0)
        for r in order.iter_rows(named=True)
    ]
    dots, curves = _frontier_marks(data, y)
    centres = place(labels, plot, markers=dots, lines=curves)
    rows = [(i, c) for i, c in enumerate(centres) if c is not None]
    return order[[i for i, _ in rows]].with_columns(
        pl.Series("tokens_per_s_per_user", [c[0] for _, c in rows], dtype=pl.Float64),
        pl.Series(y, [c[1] for _, c in rows], dtype=pl.Float64),
    )


#: The service target's label: its gap from the rule (px).
RULE_DX = 5


def _rule_label_y(
    data: pl.DataFrame,
    kept: pl.DataFrame,
    named: pl.DataFrame,
    y: str,
    x_rule: float,
    frame: tuple[list[float], list[float], int, int],
    text: str,
) -> float:
    """Where (y, data units) the service target's label, right of its rule, touches no dot, ring (`kept`), ring's label
    (`named`, at their centres) or curve on the plot `frame` (x and y domains, width and height px): tried up from the
    plot's foot on the throughput view (y = tokens/s per GPU), down from its top on the cost view; the first place tried
    where none is clear."""
    x_dom, y_dom, width, height = frame
    plot = Plot(tuple(x_dom), tuple(y_dom), width, height)  # type: ignore[arg-type]
    w, h = text_size(text, 11, bold=True)
    x0 = plot.px(x_rule, y_dom[0])[0] + RULE_DX
    dots, curves = _frontier_marks(data, y)
    marks = [*dots, *((a, b, FRONTIER_RING_PX) for a, b in kept.select("tokens_per_s_per_user", y).iter_rows())]
    boxes = [Box(px - r, py - r, px + r, py + r) for a, b, r in marks for px, py in [plot.px(a, b)]]
    boxes += [box_at(*plot.px(a, b), t, 11, bold=True) for a, b, t in named.select("tokens_per_s_per_user", y, "label").iter_rows()]
    segments = [(plot.px(*a), plot.px(*b)) for line in curves for a, b in zip(line, line[1:], strict=False)]
    step = h + 2
    centres = [height - 2 - h / 2 - i * step for i in range(int(height // step))]
    if y != "tokens_per_s_per_gpu":
        centres = [height - c for c in centres]
    for cy in centres:
        box = Box(x0, cy - h / 2, x0 + w, cy + h / 2)
        if not any(box.overlaps(b) for b in boxes) and not any(box.hits_segment(a, b) for a, b in segments):
            return plot.data(x0, cy)[1]
    return plot.data(x0, centres[0])[1]


def comparison_bars(table: pl.DataFrame, *, title: str = "", width: int = 240) -> alt.ConcatChart:
    """Side-by-side bars per accelerator: tokens/s per user and total, $ per million tokens, tokens/s per W.

    Metrics nobody has a figure for (no price entered) are left out. The panels share one order of accelerators,
    so only the left column names them: two panels and one set of names fit a 1280 px window.
    """
    ok = table.filter(pl.col("status") == "ok")
    order = ok["gpu_name"].to_list()
    charts: list[alt.Chart] = []
    for col, label in COMPARISON_METRICS.items():
        names = alt.Axis(labelLimit=180) if len(charts) % 2 == 0 else None
        data = ok.filter(pl.col(col).is_not_null() & (pl.col(col) > 0)).select(
            "gpu_name", "num_gpus", "batch", "bound", pl.col(col).alias("value")
        )
        if data.is_empty():
            continue
        charts.append(
            alt.Chart(data)
            .mark_bar()
            .encode(
                x=alt.X(
                    "value:Q",
                    title=label,
                    axis=alt.Axis(format=SI_FORMAT if col.startswith("tokens_per_s_t") or col.endswith("user") else ",.3~f"),
                ),
                y=alt.Y("gpu_name:N", sort=order, title=None, axis=names),
                color=alt.Color("bound:N", scale=BOUND_SCALE, title="Decode is"),
                tooltip=[
                    alt.Tooltip("gpu_name:N", title="Accelerator"),
                    alt.Tooltip("value:Q", format=",.3~f", title=label),
                    alt.Tooltip("num_gpus:Q", title="GPUs"),
                    alt.Tooltip("batch:Q", title="Batch"),
                ],
            )
            .properties(width=width, height=max(80, 26 * len(order)))
        )
    chart: alt.ConcatChart = alt.concat(*charts, columns=2).properties(title=title, autosize=PAD)
    return chart


def _padded(values: pl.Series, pad: float) -> list[float]:
    """A log-axis domain around positive values, `pad` times wider on each side."""
    if values.is_empty():
        return [1.0, 10.0]
    lo, hi = float(values.min()), float(values.max())  # type: ignore[arg-type]
    return [lo / pad, hi * pad]


#: The purchase frontier's plot size (px), where the page does not set one.
FRONTIER_WIDTH, FRONTIER_HEIGHT = 640, 360

#: The frontier's vertical axes: column -> (title, number format).
FRONTIER_AXES = {
    "tokens_per_s_per_gpu": ("output tokens/s per GPU (log)", ",~g"),
    "usd_per_million_tokens": ("$ per million output tokens (log)", "$,~g"),
}


def purchase_frontier_chart(
    curves: pl.DataFrame,
    *,
    y: str = "tokens_per_s_per_gpu",
    max_tpot_s: float | None = None,
    title: str = "",
    width: int = FRONTIER_WIDTH,
    height: int = FRONTIER_HEIGHT,
    colour_by: str = "series",
) -> alt.LayerChart:
    """The throughput-interactivity frontier of several accelerators: one curve per accelerator over its batches,
    x = tokens/s per user, y = output tokens/s per GPU (or $ per million output tokens), both log.

    The service target is a vertical rule at 1 / TPOT tokens/s per user (points left of it miss it); the
    configuration each accelerator is kept at is a large ringed point. `curves` comes from
    core.plan.purchase.frontier_curves, or is a sweep's rows with a `series` column naming each curve (coloured
    `colour_by` another column, e.g. the accelerator).
    """
    axis_title, fmt = FRONTIER_AXES[y]
    data = positive(curves, "tokens_per_s_per_user", y)
    if "series" not in data.columns:
        data = data.with_columns(pl.format("{} × {}", pl.col("num_gpus"), pl.col("gpu_name")).alias("series"))
    if "chosen" not in data.columns:
        data = data.with_columns(pl.lit(False).alias("chosen"))
    # the target's line is inside the plot even when every point lies to one side of it
    xs = data["tokens_per_s_per_user"] if not max_tpot_s else pl.concat([data["tokens_per_s_per_user"], pl.Series([1.0 / max_tpot_s])])
    x = alt.X(
        "tokens_per_s_per_user:Q",
        scale=alt.Scale(type="log", domain=_padded(xs, 1.3), nice=False),
        axis=alt.Axis(format=",~g", title="tokens/s per user (log) → more interactive", values=log_ticks(*_padded(xs, 1.3))),
    )
    y_dom = _padded(data[y], 1.4)
    yy = alt.Y(
        f"{y}:Q",
        scale=alt.Scale(type="log", domain=y_dom, nice=False),
        axis=alt.Axis(format=fmt, title=axis_title, values=log_ticks(*y_dom)),
    )
    legend = alt.Legend(orient="bottom", columns=2 if colour_by == "series" else 4, labelLimit=320)
    # one distinct colour per curve, none blue or orange (memory- and compute-bound); Streamlit's theme would give
    # two blues to the first two
    colour = alt.Color(
        f"{colour_by}:N",
        title="Configuration" if colour_by == "series" else "Accelerator",
        scale=alt.Scale(range=ACCELERATOR_COLOURS),
        legend=legend,
    )
    tips = [
        alt.Tooltip("series:N", title="Configuration"),
        alt.Tooltip("batch:Q", title="Batch"),
        alt.Tooltip("tokens_per_s_per_user:Q", format=",.1f", title="Tokens/s per user"),
        alt.Tooltip("tokens_per_s_per_gpu:Q", format=",.0f", title="Output tokens/s per GPU"),
        alt.Tooltip("time_per_output_token_s:Q", format=",.4f", title="Time per output token (s)"),
        alt.Tooltip("usd_per_million_tokens:Q", format="$,.3f", title="$ per million output tokens"),
        alt.Tooltip("bound:N", title="Decode is"),
    ]
    line = alt.Chart(data).mark_line(strokeWidth=2).encode(x=x, y=yy, color=colour, detail="series:N", order="batch:Q")
    dots = alt.Chart(data).mark_point(filled=True, size=45).encode(x=x, y=yy, color=colour, tooltip=tips)
    layers: list[Any] = [line, dots]
    kept = data.filter(pl.col("chosen"))
    named = kept.clear().with_columns(pl.lit("").alias("label"))
    if kept.height:
        kept = kept.with_columns(pl.format("batch {}", pl.col("batch")).alias("label"))
        named = _placed_kept(data, kept, y, _padded(xs, 1.3), y_dom, width, height)
        layers.append(alt.Chart(kept).mark_point(size=380, strokeWidth=3, filled=False).encode(x=x, y=yy, color=colour, tooltip=tips))
        layers.append(
            alt.Chart(named)
            .mark_text(align="center", baseline="middle", fontSize=11, fontWeight="bold")
            .encode(x=x, y=yy, text="label:N", color=colour)
        )
    if max_tpot_s:
        text = f"target: TPOT ≤ {max_tpot_s * 1e3:g} ms"
        # the label beside the rule where no dot, ring, label or curve is: from the foot of the throughput view (its kept
        # points sit high) or the top of the cost view (they sit low)
        at = _rule_label_y(data, kept, named, y, 1.0 / max_tpot_s, (_padded(xs, 1.3), y_dom, width, height), text)
        rule = pl.DataFrame({"tokens_per_s_per_user": [1.0 / max_tpot_s], y: [at], "label": [text]})
        layers.append(alt.Chart(rule).mark_rule(color="#c53030", strokeDash=[6, 4], strokeWidth=2).encode(x="tokens_per_s_per_user:Q"))
        layers.append(
            alt.Chart(rule)
            .mark_text(align="left", baseline="middle", dx=RULE_DX, fontSize=11, color="#c53030", fontWeight="bold")
            .encode(x=x, y=yy, text="label:N")
        )
    chart: alt.LayerChart = alt.layer(*layers).properties(title=title, width=width, height=height, autosize=PAD)  # type: ignore[assignment]
    return chart
