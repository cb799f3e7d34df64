"""The roofline chart reads at a glance: no label on another, axes in numbers with units, paths visible, ridges named,
a spec that stays the same from batch to batch, and measured points in their accelerator's colour."""

from __future__ import annotations

import itertools
import json
import math
import re

import polars as pl
import pytest

from core.model.roofline import SWEEP_BATCHES, operating_points, roof_lines
from core.model.scenario import Scenario
from core.present.charts import (
    ABOVE_COLOUR,
    ACCELERATOR_COLOURS,
    BOUND_SCALE,
    STATUS_SYMBOL,
    Y_AXIS_PX,
    export_chart,
    measured_roofline_chart,
    roofline_chart,
    roofline_spec,
    throughput_batch_chart,
)
from core.present.figures import ROOFLINE_SIZES, roofline_at, roofline_view

#: The label box, defined here from the text alone: 0.6 x font size per character (0.66 bold), 1.25 x font size high.
CHAR, BOLD_CHAR, LINE = 0.6, 0.66, 1.25

OVERLAY = ("b200", "mi300x", "a100-80gb-sxm")
NASTY = {
    "3 overlay accelerators x 2 precisions": (Scenario(), OVERLAY, ("bf16", "fp8")),
    "batch 1024": (Scenario(batch=1024), (), ()),
    "batch 1024, overlay, derated": (Scenario(batch=1024, eff_bandwidth=0.8, eff_compute=0.9), OVERLAY, ("bf16", "fp8")),
    "70B on 8 GPUs at batch 64": (Scenario(model="llama-3.1-70b", num_gpus=8, batch=64), ("h200-sxm",), ("fp8",)),
}


def _boxes(spec: dict, width: float, height: float) -> list[tuple[str, float, float, float, float]]:
    """Each text label's box in log10 units (x0, x1, y0, y1), from its centre, its text and its font."""
    (x0, x1) = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
    (y0, y1) = spec["layer"][0]["encoding"]["y"]["scale"]["domain"]
    per_px_x = (math.log10(x1) - math.log10(x0)) / width
    per_px_y = (math.log10(y1) - math.log10(y0)) / height
    out = []
    for lb in spec["datasets"]["labels"]:
        w = len(lb["text"]) * lb["size"] * (BOLD_CHAR if lb["bold"] else CHAR) * per_px_x
        h = lb["size"] * LINE * per_px_y
        cx, cy = math.log10(lb["intensity"]), math.log10(lb["attainable_flops"])
        out.append((lb["text"], cx - w / 2, cx + w / 2, cy - h / 2, cy + h / 2))
    return out


def _overlap(a: tuple[str, float, float, float, float], b: tuple[str, float, float, float, float]) -> bool:
    return a[1] < b[2] and b[1] < a[2] and a[3] < b[4] and b[3] < a[4]


@pytest.mark.parametrize("case", list(NASTY))
@pytest.mark.parametrize("big", [False, True])
def test_no_two_labels_collide_nor_sit_on_a_marker(cat, case, big):
    """From the spec's own data: no two text labels' boxes overlap, nor any label a point or ridge marker, at the chart's
    plot size or drawn twice as wide (a chart stretched to its column); every ridge is named in the roofs' legend."""
    sc, overlay, precisions = NASTY[case]
    shown = roofline_at(cat, roofline_view(cat, sc.model_copy(update={"batch": 1}), overlay, precisions), sc, big=big, operations=False)
    spec = shown.chart
    width, height = ROOFLINE_SIZES[big]
    labels = spec["datasets"]["labels"]
    assert {"decode matmul", "decode attention", "prefill matmul"} <= {lb["text"] for lb in labels}
    for stretch in (1.0, 2.0):
        boxes = _boxes(spec, (width - Y_AXIS_PX) * stretch, height)
        for a, b in itertools.combinations(boxes, 2):
            assert not _overlap(a, b), (case, stretch, a[0], b[0])
        # markers: the operating points (180 px², about 7 px across each way) and the ridge dots (60 px²)
        (x0, x1) = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
        (y0, y1) = spec["layer"][0]["encoding"]["y"]["scale"]["domain"]
        rx = (math.log10(x1) - math.log10(x0)) / ((width - Y_AXIS_PX) * stretch)
        ry = (math.log10(y1) - math.log10(y0)) / height
        for name, r in (("points", math.sqrt(180) / 2), ("ridges", math.sqrt(60) / 2)):
            for m in spec["datasets"][name]:
                mx, my = math.log10(m["intensity"]), math.log10(m["attainable_flops"])
                marker = ("marker", mx - r * rx, mx + r * rx, my - r * ry, my + r * ry)
                for box in boxes:
                    assert not _overlap(box, marker), (case, stretch, box[0], name, m)
    # every ridge, P / B from the catalogue, in the legend of its roof
    for row in spec["datasets"]["ridges"]:
        assert row["legend"] == f"{row['series']} · ridge {row['peak_flops'] / row['bandwidth_bytes_per_s']:,.0f} FLOP/byte"
    # one ridge per accelerator and supported precision, and one more per precision of the scenario's own when derated
    supported = {
        (g, p) for g in [sc.gpu, *overlay] for p in (precisions or ("bf16",)) if cat.gpus.filter(pl.col("id") == g)[f"peak_{p}"][0]
    }
    derated = {p for g, p in supported if g == sc.gpu} if sc.eff_bandwidth < 1 or sc.eff_compute < 1 else set()
    assert len(spec["datasets"]["ridges"]) == len(supported) + len(derated)


def test_labels_are_near_what_they_name(cat):
    """A ridge label sits within a few label heights of its ridge dot; a point label far from its point has a leader line
    from the point to it."""
    sc, overlay, precisions = NASTY["3 overlay accelerators x 2 precisions"]
    spec = roofline_at(cat, roofline_view(cat, sc, overlay, precisions), sc, operations=False).chart
    width, height = ROOFLINE_SIZES[False]
    (x0, x1) = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
    px = (width - Y_AXIS_PX) / (math.log10(x1) - math.log10(x0))
    for lb in spec["datasets"]["labels"]:
        dx = abs(math.log10(lb["intensity"]) - math.log10(lb["anchor_intensity"])) * px
        half = len(lb["text"]) * lb["size"] * (BOLD_CHAR if lb["bold"] else CHAR) / 2
        if lb["kind"] in ("ridge", "other ridge"):
            assert dx - half < 14 + 6 + 2, lb  # the nearest places only (its marker's radius, the gap, the padding)
        if lb["leader_x"] is not None:  # it starts at the edge of the marker it names, 2 px clear
            (y0, y1) = spec["layer"][0]["encoding"]["y"]["scale"]["domain"]
            py = height / (math.log10(y1) - math.log10(y0))
            start = math.hypot(
                (math.log10(lb["leader_x"]) - math.log10(lb["anchor_intensity"])) * px,
                (math.log10(lb["leader_y"]) - math.log10(lb["anchor_flops"])) * py,
            )
            area = 180 if lb["kind"] == "point" else 60 if "ridge" in lb["kind"] else 36
            assert start == pytest.approx(math.sqrt(area) / 2 + 1 + 2, abs=0.5), lb


def _svg_texts(spec: dict) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", export_chart(spec, "svg").decode("utf-8"))


def test_axes_read_as_numbers_with_units(cat):
    """The roofline's x axis reads 0.01, 0.1, 1, 10, 100, 1,000, 10k ...; its y axis 1 T, 10 T, 1 P with FLOP/s in its
    title; never d3's "10m" for 0.01 FLOP/byte."""
    sc = Scenario()
    spec = roofline_at(cat, roofline_view(cat, sc, (), ()), sc, operations=False).chart
    texts = _svg_texts(spec)
    (x0, x1) = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
    (y0, y1) = spec["layer"][0]["encoding"]["y"]["scale"]["domain"]
    written = {0.01: "0.01", 0.1: "0.1", 1: "1", 10: "10", 100: "100", 1e3: "1,000", 1e4: "10k", 1e5: "100k", 1e6: "1M"}
    decades = [10.0**e for e in range(round(math.log10(x0)), round(math.log10(x1)) + 1)]
    assert x0 == 0.01
    for d in decades:
        assert written[d] in texts, (d, texts)
    prefixes = {1e9: "G", 1e12: "T", 1e15: "P"}
    for e in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        base = 10 ** (3 * (e // 3))
        assert f"{10 ** (e - 3 * (e // 3))} {prefixes[base]}" in texts, (e, texts)
    assert not {"10m", "100m", "1T", "1P"} & set(texts)
    assert "Attainable performance (FLOP/s)" in texts and "Arithmetic intensity (FLOP/byte)" in texts


def test_the_batch_paths_are_drawn_above_the_roofs_as_a_line_with_points(cat):
    """The decode points' paths over the sweep (every batch 1 .. 1,024) come after the roof layer, as a dark line of
    1.5 px with a white dot at each batch; prefill, the same at every batch, has no path."""
    sc = Scenario(batch=64)
    spec = roofline_at(cat, roofline_view(cat, sc, (), ()), sc, operations=False).chart
    names = [layer.get("data", {}).get("name") for layer in spec["layer"]]
    assert names.index("paths") > names.index("roofs")
    mark = spec["layer"][names.index("paths")]["mark"]
    assert mark["type"] == "line" and mark["strokeWidth"] >= 1.5 and mark.get("opacity", 1) == 1
    assert mark["point"]["fill"] == "white" and mark["point"]["size"] >= 30
    paths = pl.DataFrame(spec["datasets"]["paths"])
    assert set(paths["point"]) == {"decode matmul", "decode attention", "decode step"}
    assert sorted(paths.filter(pl.col("point") == "decode matmul")["batch"]) == list(SWEEP_BATCHES)


def test_the_spec_stays_the_same_from_batch_to_batch_only_its_data_change(cat):
    """Two batches' charts differ in their datasets only (Streamlit then updates the chart's data in place); the batch
    is written in the plot's corner from the data; the quick spec is the Altair chart's."""
    sc = Scenario(model="llama-3.1-70b", num_gpus=2)
    view = roofline_view(cat, sc, ("h200-sxm",), ())
    a, b = (roofline_at(cat, view, sc.model_copy(update={"batch": n}), operations=False).chart for n in (2, 48))
    assert {k: v for k, v in a.items() if k != "datasets"} == {k: v for k, v in b.items() if k != "datasets"}
    assert a["datasets"]["batch"] == [{"text": "batch 2"}] and b["datasets"]["batch"] == [{"text": "batch 48"}]
    assert "batch" not in json.dumps(a["title"])
    points = operating_points(cat, sc.model_copy(update={"batch": 48}))
    fast = roofline_spec(view.roofs, points, view.paths, title="t", batch=48, products=view.products)
    slow = roofline_chart(view.roofs, points, view.paths, title="t", batch=48, products=view.products).to_dict(validate=False)
    assert json.loads(json.dumps(fast)) == json.loads(json.dumps(slow))
    # the view's backdrop (its roofs, paths and products made ready once) gives that same chart
    assert view.backdrop is not None
    backdrop = roofline_spec(view.backdrop, points, None, title="t", batch=48)
    assert json.loads(json.dumps(backdrop)) == json.loads(json.dumps(slow))


def test_the_chart_fills_its_column_and_keeps_its_height(cat):
    """Stretched to its column, only the width follows (autosize fit-x); the legends go below the plot."""
    sc = Scenario()
    spec = roofline_at(cat, roofline_view(cat, sc, (), ()), sc, operations=False).chart
    assert spec["autosize"] == {"type": "fit-x", "contains": "padding"}
    legends = [
        enc["legend"]["orient"]
        for layer in spec["layer"]
        for enc in layer.get("encoding", {}).values()
        if isinstance(enc, dict) and enc.get("legend")
    ]
    assert legends and set(legends) == {"bottom"}


# -- measured points by accelerator -------------------------------------------------------------------------------


def _marks(rows: list[tuple[str, float, float, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "intensity": [r[1] for r in rows],
            "flops": [r[2] for r in rows],
            "status": [r[3] for r in rows],
            "label": [f"row {i}" for i in range(len(rows))],
            "n": [1] * len(rows),
            "accelerator": [r[0] for r in rows],
        }
    )


def test_measured_points_are_coloured_by_their_accelerator(cat):
    """On the measured roofline each accelerator has its own colour, shared by its roof and its points (one legend,
    "Accelerator", none of the colours blue, orange or the red that marks a point above its ceiling); a point above
    its ceiling is red whatever its accelerator."""
    gpus = cat.gpus.filter(pl.col("id").is_in(["h100-sxm", "mi300x"]))
    roofs = roof_lines(gpus, ["bf16"])
    h100, mi300x = cat.gpu("h100-sxm").name, cat.gpu("mi300x").name
    marks = _marks([(h100, 5.0, 1e14, "ok"), (mi300x, 50.0, 5e14, "ok"), (mi300x, 8.0, 9e15, "above ceiling")])
    spec = measured_roofline_chart(roofs, marks, rings=marks, title="t").to_dict(validate=False)
    roof_layer, _, meas_layer, above_layer = spec["layer"]
    assert roof_layer["encoding"]["color"]["field"] == "accelerator" == meas_layer["encoding"]["color"]["field"]
    assert meas_layer["encoding"]["color"]["title"] == "Accelerator"
    assert meas_layer["encoding"]["color"]["scale"]["range"] == ACCELERATOR_COLOURS
    assert above_layer["mark"]["color"] == ABOVE_COLOUR and above_layer["mark"]["shape"] == "cross"
    assert meas_layer["encoding"]["shape"]["field"] == "status"
    assert not set(ACCELERATOR_COLOURS) & {*BOUND_SCALE.range, ABOVE_COLOUR}  # type: ignore[arg-type]
    assert len(set(ACCELERATOR_COLOURS)) == len(ACCELERATOR_COLOURS)
    # the roofs' accelerators and the points' are the same names, so they share the colours
    roof_data = next(v for k, v in spec["datasets"].items() if any("series" in r for r in v))
    assert {r["accelerator"] for r in roof_data} == {h100, mi300x}
    # drawn: the two accelerators' points in two different colours, the one above its ceiling in red
    svg = export_chart(spec, "svg").decode("utf-8")
    fills = re.findall(r'<path[^>]*aria-label="[^"]*Measurement: row (\d)[^"]*"[^>]*fill="(#[0-9a-f]{6})"', svg)
    colour = dict(fills)
    assert set(colour) == {"0", "1", "2"}, fills
    assert colour["0"] != colour["1"] and colour["2"] == ABOVE_COLOUR  # the red cross drawn over its own mark
    _status_legend_is_grey(svg)
    assert {colour["0"], colour["1"]} <= set(ACCELERATOR_COLOURS)
    # the shape legend reads whole (its old title was cut to "Measured point (red: above i…") and says the red
    texts = [t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert {"Measured point", "within its ceiling", "above its ceiling (red)"} <= set(texts), texts
    assert not [t for t in texts if t.endswith("…")], texts


def test_measured_page_marks_carry_the_accelerator_name(cat, tmp_path):
    """The measured page's points name the accelerator each was measured on (the catalogue's name, as its roof)."""
    from core.evidence.importers import parse_file
    from core.present.figures import measured_charts, measured_view
    from core.store import Store
    from tests.helpers import FIXTURES

    rows = parse_file(Store(tmp_path / "m.duckdb"), (FIXTURES / "generic.csv").read_bytes(), "generic.csv").rows
    view = measured_view(cat, rows, False)
    roof, _ = measured_charts(cat, rows, view)
    spec = roof.to_dict(validate=False)
    data = spec["datasets"][spec["layer"][2]["data"]["name"]]
    names = {cat.gpu(g).name for g in rows["gpu"].unique().to_list()}
    assert len(names) == 2 and {r["accelerator"] for r in data} == names
    roofs = spec["datasets"][spec["layer"][0]["data"]["name"]]
    assert {r["accelerator"] for r in roofs} == names


def _status_legend_is_grey(svg: str) -> None:
    """The status legend's two symbols, as drawn, are grey: "within its ceiling" was filled red like "above" (issue 31),
    the points' conditional red taken into the legend."""
    legend = svg[svg.index("Measured point") :]
    end = legend.find('<g class="mark-group role-legend"', 1)
    symbols = "".join(re.findall(r'<g class="mark-symbol role-legend-symbol"[^>]*>(.*?)</g>', legend[: end if end > 0 else None]))
    fills = re.findall(r'fill="(#[0-9a-f]{6})"', symbols)
    assert len(fills) == 2 and set(fills) == {STATUS_SYMBOL}, fills


def test_throughput_points_have_their_setups_colour(cat):
    """On the tokens/s-against-batch chart a measured point shares its setup's line colour; above its ceiling, red."""
    curves = pl.DataFrame({"series": ["a", "a", "b", "b"], "batch": [1, 64, 1, 64], "predicted_tokens_per_s": [50.0, 2e3, 80.0, 3e3]})
    pts = pl.DataFrame(
        {
            "series": ["a", "b"],
            "batch": [8, 8],
            "tokens_per_s": [300.0, 900.0],
            "status": ["ok", "above ceiling"],
            "phase": ["decode", "decode"],
            "label": ["row 0", "row 1"],
            "n": [1, 1],
        }
    )
    spec = throughput_batch_chart(curves, pts, title="t").to_dict(validate=False)
    line, point, above = spec["layer"]
    assert line["encoding"]["color"]["field"] == point["encoding"]["color"]["field"] == "series"
    assert above["mark"]["color"] == ABOVE_COLOUR
    svg = export_chart(spec, "svg").decode("utf-8")
    fills = dict(re.findall(r'<path[^>]*aria-label="[^"]*Measurement: row (\d)[^"]*"[^>]*fill="(#[0-9a-f]{6})"', svg))
    assert fills["1"] == ABOVE_COLOUR and fills["0"] != ABOVE_COLOUR
    _status_legend_is_grey(svg)
    texts = _svg_texts(spec)
    assert "1,024" not in texts and {"1", "2", "4", "8", "16", "32", "64"} <= set(texts)


def test_label_layout_keeps_labels_apart_and_leaves_out_one_with_no_room():
    """Two labels naming the same point get two places whose boxes, by text length and font, do not overlap; a label
    wider than the plot finds none."""
    from core.present.label_layout import Label, Plot, place

    plot = Plot((0.01, 1e6), (1e9, 1e16), 600.0, 400.0)
    first, second = Label("decode matmul", 10.0, 1e12), Label("prefill matmul", 10.0, 1e12)
    too_wide = Label("x" * 200, 10.0, 1e12)
    a, b, c = place([first, second, too_wide], plot)
    assert a is not None and b is not None and c is None
    # the boxes in pixels, from the log positions: 0.6 x 11 px a character wide, 1.25 x 11 px high
    (ax, ay), (bx, by) = plot.px(*a), plot.px(*b)
    wa, wb, h = 13 * 0.6 * 11, 14 * 0.6 * 11, 1.25 * 11
    assert abs(ax - bx) >= (wa + wb) / 2 or abs(ay - by) >= h


def test_every_roof_of_a_crowded_chart_is_drawn_unlike_the_others(cat):
    """Four accelerators at three precisions with derated roofs (issue 31: MI300X bf16 and H100 fp8 derated shared a
    colour): each roof a distinct (colour, dash); a derated roof takes its datasheet roof's colour and a dash."""
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1, eff_bandwidth=0.8, eff_compute=0.7)
    view = roofline_view(cat, sc, ("b200", "mi300x", "a100-80gb-sxm"), ("bf16", "fp8", "fp4"))
    spec = roofline_at(cat, view, sc, operations=False).chart
    roof = next(layer for layer in spec["layer"] if layer.get("data", {}).get("name") == "roofs")
    colour, dash = roof["encoding"]["color"]["scale"], roof["encoding"]["strokeDash"]["scale"]
    assert colour["domain"] == dash["domain"]
    drawn = list(zip(colour["range"], map(tuple, dash["range"]), strict=True))
    assert len(set(drawn)) == len(drawn) >= 9, drawn  # B200 x 3, H100 x 2, MI300X x 2, A100 x 1, and H100 derated
    legend = dict(zip(colour["domain"], drawn, strict=True))
    for name, (c, d) in legend.items():
        if "(derated)" in name:
            base = next(k for k in legend if k.startswith(name.split(" (derated)")[0] + " ·"))
            assert legend[base][0] == c and legend[base][1] != d, (name, base)
    assert sum("(derated)" in k for k in legend) >= 1


def test_the_point_legend_lists_only_the_kinds_drawn(cat):
    """The tour's batching step draws decode matmuls alone; its legend listed all six point shapes (issue 31). A
    roofline of decode matmuls names only them, in their shape; one of every kind names all six."""
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b")
    roofs = roof_lines(cat.gpus.filter(pl.col("id") == "h100-sxm"), ["bf16"])
    every = operating_points(cat, sc)
    matmuls = every.filter(pl.col("point") == "decode matmul")
    spec = roofline_chart(roofs, matmuls).to_dict(validate=False)
    shapes = [layer["encoding"]["shape"] for layer in spec["layer"] if "shape" in layer.get("encoding", {})]
    assert shapes and all(s["scale"] == {"domain": ["decode matmul"], "range": ["circle"]} for s in shapes)
    texts = _svg_texts(spec)
    assert "decode matmul" in texts and not {"decode attention", "prefill step", "prefill matmul"} & set(texts)
    kinds = set(every["point"].to_list())
    assert len(kinds) >= 4
    full = roofline_spec(roofs, every)
    shown = [layer["encoding"]["shape"]["scale"]["domain"] for layer in full["layer"] if "shape" in layer.get("encoding", {})]
    assert set(shown[0]) == kinds
