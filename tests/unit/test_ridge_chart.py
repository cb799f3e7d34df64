"""The ridge page's charts and view: dots on one log axis (no bar baseline), the decode rule and its label off the marks,
the scenario's accelerator ringed and bold, one fixed hue per precision, numbers on the axis as people write them,
accelerators without a year kept by the year filter."""

from __future__ import annotations

import math

import polars as pl
import pytest

from core.catalogue.catalogue import Catalogue, add_custom_accelerator, load_catalogue
from core.catalogue.seed import accelerator_from_row
from core.model.roofline import decode_matmul_intensity, ridge_points, ridge_table
from core.present.charts import COMPUTE_COLOUR, MEMORY_COLOUR, export_chart
from core.present.figures import ridge_view
from core.present.ridge_charts import (
    PRECISION_COLOURS,
    RULE_COLOUR,
    YOURS,
    decade_ticks,
    number_label,
    ridge_chart,
    ridge_precision_chart,
)
from core.store import Store


def _layers(spec: dict) -> list[dict]:
    return spec["layer"]


def _data(spec: dict, layer: dict) -> list[dict]:
    return spec["datasets"][layer["data"]["name"]]


def _mark(layer: dict) -> str:
    mark = layer["mark"]
    return mark if isinstance(mark, str) else mark["type"]


def _spec(cat: Catalogue, batch: int, precision: str = "bf16", gpu: str = "h100-sxm") -> dict:
    table = ridge_table(cat.gpus, precision, batch, "bf16")
    return ridge_chart(table, decode_matmul_intensity(batch, "bf16"), highlight=gpu, title="t", batch=batch).to_dict()


def test_ridges_are_dots_on_a_log_axis_with_no_baseline(cat):
    """Every accelerator with a bf16 peak is one dot at peak / bandwidth; nothing is drawn from a baseline (no bar, no x2)."""
    spec = _spec(cat, 1)
    dots = next(layer for layer in _layers(spec) if _mark(layer) == "circle")
    rows = _data(spec, dots)
    expected = cat.gpus.filter(pl.col("peak_bf16").is_not_null())
    assert len(rows) == expected.height
    h100 = next(r for r in rows if r["id"] == "h100-sxm")
    assert h100["ridge"] == pytest.approx(989.4e12 / 3.35e12, rel=1e-9)  # the datasheet's peak over its bandwidth
    assert all(_mark(layer) != "bar" and "x2" not in layer.get("encoding", {}) or _mark(layer) == "rule" for layer in _layers(spec))
    assert dots["encoding"]["x"]["scale"]["type"] == "log"
    assert dots["encoding"]["x"]["axis"]["title"] == "Ridge point (FLOP/byte, log scale)"


def test_the_axis_is_the_same_whatever_the_batch_except_to_hold_the_rule(cat):
    """At batch 1 the rule (1 FLOP/byte) widens the axis to 0.1; at batch 256 it starts at 10: dot positions never change."""
    low, high = _spec(cat, 1), _spec(cat, 256)
    x = {b: next(lyr for lyr in _layers(s) if _mark(lyr) == "circle")["encoding"]["x"] for b, s in ((1, low), (256, high))}
    smallest = cat.gpus.select(pl.col("peak_bf16") / pl.col("bandwidth_bytes_per_s")).min().item()  # A10G's 116.7
    biggest = cat.gpus.select(pl.col("peak_bf16") / pl.col("bandwidth_bytes_per_s")).max().item()
    top = 10.0 ** math.ceil(math.log10(biggest * 1.5))
    assert x[1]["scale"]["domain"] == [0.1, top]  # 1 / 1.5 rounded down to a decade
    assert x[256]["scale"]["domain"] == [10.0 ** math.floor(math.log10(smallest / 1.5)), top]
    assert x[1]["axis"]["values"] == [0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0][: len(x[1]["axis"]["values"])]


def test_axis_labels_are_numbers_as_people_write_them():
    """0.01 is "0.01", not "10m"; 1,000 has its comma; and the chart's label expression writes exactly those."""
    assert [number_label(v) for v in (0.01, 0.1, 1.0, 10.0, 1000.0, 10000.0)] == ["0.01", "0.1", "1", "10", "1,000", "10,000"]
    assert decade_ticks([0.02, 300.0]) == [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    table = pl.DataFrame(
        {
            "id": ["a"],
            "name": ["A"],
            "precision": ["bf16"],
            "ridge": [0.02],
            "bound": ["memory"],
            "ridge_batch": [1],
            "peak_flops": [2e10],
            "bandwidth_bytes_per_s": [1e12],
        }
    )
    expr = ridge_chart(table, 2.0).to_dict()["layer"][2]["encoding"]["x"]["axis"]["labelExpr"]
    assert "'0.01'" in expr and "'1'" in expr and "m'" not in expr


def test_the_decode_rule_sits_at_two_x_batch_over_bytes_and_its_label_is_dark_above_the_plot(cat):
    """Batch 256, bf16 weights (2 bytes): 2 x 256 / 2 = 256 FLOP/byte; the label is dark grey, placed above the plot (y 0,
    baseline bottom), never on a dot; the dots left of the rule are exactly the compute-bound ones."""
    spec = _spec(cat, 256)
    rule = next(lyr for lyr in _layers(spec) if _mark(lyr) == "rule")
    text = next(lyr for lyr in _layers(spec) if _mark(lyr) == "text")
    assert _data(spec, rule)[0]["ridge"] == 256.0
    assert _data(spec, text)[0]["label"] == "decode matmul at batch 256: 256 FLOP/byte"
    assert text["mark"]["color"] == RULE_COLOUR == rule["mark"]["color"]
    assert text["mark"]["baseline"] == "bottom" and text["encoding"]["y"] == {"value": 0}
    dots = next(lyr for lyr in _layers(spec) if _mark(lyr) == "circle")
    rows = _data(spec, dots)
    assert {r["id"] for r in rows if r["bound"] == "compute"} == {r["id"] for r in rows if r["ridge"] <= 256}
    assert dots["encoding"]["color"]["scale"]["range"] == [MEMORY_COLOUR, COMPUTE_COLOUR]
    assert dots["encoding"]["color"]["legend"]["orient"] == "bottom"


def test_the_scenarios_accelerator_is_ringed_bold_and_named_in_the_legend_and_subtitle(cat):
    """The ring layer holds the H100 SXM alone; the y axis bolds its name only; the legend and the subtitle say so."""
    spec = _spec(cat, 1, gpu="h100-sxm")
    ring = next(lyr for lyr in _layers(spec) if _mark(lyr) == "point")
    assert [r["id"] for r in _data(spec, ring)] == ["h100-sxm"]
    assert ring["encoding"]["stroke"]["scale"] == {"domain": [YOURS], "range": ["black"]}
    dots = next(lyr for lyr in _layers(spec) if _mark(lyr) == "circle")
    weight = dots["encoding"]["y"]["axis"]["labelFontWeight"]
    assert weight["condition"] == {"test": "datum.value === 'NVIDIA H100 SXM5 80GB'", "value": "bold"}
    assert "NVIDIA H100 SXM5 80GB, the sidebar's accelerator" in spec["title"]["subtitle"][0]
    # an accelerator without fp4 (H100) is not ringed at fp4, and the subtitle says it is not in the selection
    fp4 = _spec(cat, 1, precision="fp4", gpu="h100-sxm")
    assert not any(_mark(lyr) == "point" for lyr in _layers(fp4))
    assert "not in this selection" in fp4["title"]["subtitle"][0]


def test_precisions_have_distinct_fixed_hues_none_blue_or_orange(cat):
    """bf16, fp8 and fp4 get their own colour and shape, the same in any selection; no hue is the memory blue or compute orange."""
    hues = list(PRECISION_COLOURS.values())
    assert len(set(hues)) == len(hues) and not {MEMORY_COLOUR, COMPUTE_COLOUR} & set(hues)
    ridges = ridge_points(cat.gpus).filter(pl.col("precision").is_in(["bf16", "fp8", "fp4"]))
    spec = ridge_precision_chart(ridges, 2.0, highlight="b200").to_dict()
    dots = next(lyr for lyr in _layers(spec) if _mark(lyr) == "point" and "shape" in lyr["encoding"])
    colour = dots["encoding"]["color"]["scale"]
    assert dict(zip(colour["domain"], colour["range"], strict=True)) == {p: PRECISION_COLOURS[p] for p in ("bf16", "fp8", "fp4")}
    only_fp8 = ridge_precision_chart(ridges.filter(pl.col("precision") == "fp8")).to_dict()
    dots8 = next(lyr for lyr in _layers(only_fp8) if _mark(lyr) == "point" and "shape" in lyr["encoding"])
    assert dots8["encoding"]["color"]["scale"]["range"] == [PRECISION_COLOURS["fp8"]]  # fp8 keeps its hue alone
    ring = next(lyr for lyr in _layers(spec) if _mark(lyr) == "point" and "stroke" in lyr["encoding"])
    b200 = ridges.filter(pl.col("id") == "b200")
    assert sorted(r["ridge"] for r in _data(spec, ring)) == sorted(b200["ridge"].to_list())  # every precision of the B200 ringed


def test_the_charts_fit_their_width_and_render(cat):
    """Both charts fit their width (fit-x, padding included), keep a row per accelerator, and export as SVG."""
    spec = _spec(cat, 64)
    assert spec["autosize"] == {"type": "fit-x", "contains": "padding"}
    n = cat.gpus.filter(pl.col("peak_bf16").is_not_null()).height
    assert spec["height"] == 22 * n
    svg = export_chart(spec, "svg").decode()
    assert "NVIDIA H100 SXM5 80GB" in svg and "decode matmul at batch 64: 64 FLOP/byte" in svg


def test_the_year_filter_keeps_accelerators_without_a_year(cat, tmp_path):
    """A custom accelerator stored with no year stays in a year-filtered view (counted as undated); dated ones outside go."""
    store = Store(tmp_path / "years.duckdb")
    row = {**cat.gpu("h100-sxm").store_row(), "id": "undated-chip", "name": "Undated chip", "year": None, "custom": True}
    add_custom_accelerator(store, accelerator_from_row(row))
    view = ridge_view(load_catalogue(store), "bf16", [], [], (2024, 2024), 1, "bf16", False, "h100-sxm")
    names = view.table["name"].to_list()
    assert "Undated chip" in names and view.undated == 1
    assert all(y is None or y == 2024 for y in view.table["year"].to_list())
    assert "NVIDIA H100 SXM5 80GB" not in names  # 2022, outside
    assert view.table.filter(pl.col("id") == "undated-chip")["ridge"].item() == pytest.approx(989.4 / 3.35, rel=1e-9)


def test_the_precision_chart_is_the_same_whatever_the_order_of_its_rows(cat):
    """A shared link must redraw the same chart: the spec (every dataset's rows in order) does not depend on the order
    the ridge rows arrive in (a group-by without a sort gave the joining lines in a random order)."""
    ridges = ridge_points(cat.gpus).filter(pl.col("precision").is_in(["bf16", "fp8"]))
    first = export_chart(ridge_precision_chart(ridges, 64.0, highlight="h100-sxm"), "svg")
    for seed in (1, 2, 3):
        shuffled = ridges.sample(fraction=1.0, shuffle=True, seed=seed)
        assert export_chart(ridge_precision_chart(shuffled, 64.0, highlight="h100-sxm"), "svg") == first


def _resolved(spec: dict) -> list:
    """A layered spec's layers with each named dataset replaced by its rows (names are content hashes)."""
    import json

    data = spec.get("datasets", {})
    out = []
    for layer in spec["layer"]:
        layer = json.loads(json.dumps(layer))
        if "data" in layer and "name" in layer["data"]:
            layer["data"] = data[layer["data"]["name"]]
        out.append(layer)
    return out


def test_the_precision_chart_made_once_per_selection_draws_each_batch_as_made_whole(cat):
    """ridge_view makes a selection's ridges-by-precision chart once and adds the batch's rule to it (with_decode_rule):
    the spec is the one ridge_precision_chart makes whole at that batch, layer for layer, at batches 1, 64 and 4,096."""
    from core.present.ridge_charts import decade_ticks, intensity_text, with_decode_rule

    grouped = ridge_points(cat.gpus).filter(pl.col("precision").is_in(["bf16", "fp8", "int8", "fp4"]))
    for batch in (1, 64, 4096):
        x = decode_matmul_intensity(batch, "bf16")
        whole = ridge_precision_chart(grouped, x, highlight="h100-sxm", title="t", width=640).to_dict(validate=False)
        ticks = decade_ticks([*grouped.filter(pl.col("ridge") > 0)["ridge"].to_list(), x])
        base = ridge_precision_chart(grouped, None, highlight="h100-sxm", title="t", width=640, ticks=ticks).to_dict(validate=False)
        made = with_decode_rule(base, x, ticks, f"decode matmul: {intensity_text(x)} FLOP/byte")
        assert _resolved(made) == _resolved(whole), batch
        assert {k: v for k, v in made.items() if k not in ("layer", "datasets")} == {
            k: v for k, v in whole.items() if k not in ("layer", "datasets")
        }
