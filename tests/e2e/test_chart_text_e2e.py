"""Every page's chart, drawn for a crowded scenario at the widths a 1280 and a 1600 px screen give it, is read back from
its SVG as the browser lays it out: no title or legend text cut with an ellipsis, no two texts overlapping, each
axis's labels reaching both ends of the axis, and no two entries of a legend drawn alike.

The charts are the pages' own (core.present.figures and the builders they call), rendered by vl-convert (the app's
SVG export) and measured in Chromium (getBBox of each text as drawn in its font). A crowded scenario: three overlays
at three precisions, a mixture-of-experts model on eight accelerators, speculative decoding, eight accelerators
compared, a sweep over every batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from core.catalogue.catalogue import load_catalogue
from core.evidence.importers import parse_file
from core.model.scenario import Scenario
from core.model.sweep import scenario_grid, sweep
from core.present.charts import export_chart
from core.present.evidence_charts import ratio_chart
from core.present.figures import (
    calculator_view,
    compare_view,
    measured_charts,
    measured_view,
    overview_roofline,
    ridge_view,
    roofline_at,
    roofline_view,
    sweep_frontier,
)
from core.store import Store
from tests.helpers import FIXTURES

pytestmark = [pytest.mark.e2e]

#: The main column's width in px (the page's "wide" layout less its padding): normal mode with the 300 px sidebar
#: open, at 1280 and 1600; presentation mode (sidebar collapsed) at 1280.
WIDTHS = {"1280": 820, "1600": 1140}
PRESENT_WIDTH = 1120
MOE = Scenario(gpu="h200-sxm", model="deepseek-v3", num_gpus=8, weights="fp8", batch=64, context=4096)
EIGHT = ["h100-sxm", "h200-sxm", "b200", "mi300x", "mi325x", "l40s", "a100-80gb-sxm", "gaudi3"]


@pytest.fixture(scope="module")
def cat(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_catalogue(Store(tmp_path_factory.mktemp("charts") / "c.duckdb"))


def _roofline(cat: Any, big: bool) -> dict[str, Any]:
    view = roofline_view(cat, MOE.model_copy(update={"batch": 1}), ("b200", "mi300x", "a100-80gb-sxm"), ("bf16", "fp8", "fp4"))
    return roofline_at(cat, view, MOE, big=big, operations=False).chart


def _overview(cat: Any) -> dict[str, Any]:
    return overview_roofline(cat, roofline_view(cat, MOE.model_copy(update={"batch": 1}), (), ()), MOE, big=False).chart


def _measured(cat: Any, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    rows = parse_file(Store(tmp_path_factory.mktemp("m") / "m.duckdb"), (FIXTURES / "generic.csv").read_bytes(), "generic.csv").rows
    roof, batch = measured_charts(cat, rows, measured_view(cat, rows, True))
    assert batch is not None
    return [roof.to_dict(validate=False), batch.to_dict(validate=False)]


#: name -> (builder of the spec(s), the width the page gives it: "page" the main column, "overview" its 3:5 column)
CHARTS: dict[str, tuple[Callable[..., Any], str]] = {
    "roofline": (lambda cat, _: _roofline(cat, False), "page"),
    "overview roofline": (lambda cat, _: _overview(cat), "overview"),
    "ridges": (lambda cat, _: ridge_view(cat, "fp8", [], [], (2016, 2026), 64, "fp8", False, "h200-sxm").chart, "page"),
    "ridges by precision": (lambda cat, _: ridge_view(cat, "bf16", [], [], (2016, 2026), 64, "bf16", False, "h200-sxm").groups, "page"),
    "calculator frontier": (
        lambda cat, _: calculator_view(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", spec_draft_len=4)).frontier,
        "page",
    ),
    "compare frontier": (
        lambda cat, _: (
            compare_view(cat, EIGHT, MOE.model_copy(update={"model": "llama-3.1-70b"}), max_tpot_s=0.05, max_ttft_s=2.0, title="t").frontier
        ),
        "page",
    ),
    "sweep, any batch": (
        lambda cat, _: sweep_frontier(
            sweep(
                cat,
                scenario_grid(
                    EIGHT,
                    ["llama-3.1-8b", "llama-3.1-70b"],
                    weights=["bf16", "fp8"],
                    batches=[1, 2, 4, 8, 16, 32, 64, 128, 256],
                    num_gpus=[1, 8],
                ),
            ),
            max_tpot_s=0.05,
            title="every batch",
        ),
        "page",
    ),
    "measured": (lambda cat, tmp: _measured(cat, tmp), "page"),
    "published share of ceiling": (lambda cat, _: _published(cat), "page"),
    "tour, batching": (lambda cat, _: _tour_batching(cat), "page"),
}

#: Each text of the SVG as laid out (its box, its Vega role), each axis (its domain's box and its labels' centres) and
#: each legend's symbols (how each is drawn).
_READ = """(svg) => {
  document.body.innerHTML = svg;
  const root = document.querySelector("svg");
  const role = (e) => { const g = e.closest("g[class*='role-']"); return g ? g.getAttribute("class") : ""; };
  const shown = (e) => { for (let x = e; x && x !== root; x = x.parentElement) { if (x.getAttribute("opacity") === "0") return false; } return true; };
  const texts = [...root.querySelectorAll("text")].filter(t => t.textContent.trim() && shown(t)).map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, role: role(t), fill: t.getAttribute("fill") || "", x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
  });
  const axes = [...root.querySelectorAll("g.role-axis")].map(a => {
    const d = a.querySelector("g.role-axis-domain path, g.role-axis-domain line");
    const labels = [...a.querySelectorAll("g.role-axis-label text")].filter(t => t.textContent.trim() && shown(t)).map(t => {
      const r = t.getBoundingClientRect(); return {text: t.textContent, x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2};
    });
    const grid = a.querySelector("g.role-axis-grid");
    const box = d ? d.getBoundingClientRect() : (grid ? grid.getBoundingClientRect() : null);
    return {box: box && {x0: box.left, y0: box.top, x1: box.right, y1: box.bottom}, labels};
  });
  const legends = [...root.querySelectorAll("g.role-legend")].map(l => {
    const title = l.querySelector("g.role-legend-title text");
    const symbols = [...l.querySelectorAll("g.role-legend-symbol path")].map(p =>
      [p.getAttribute("d"), p.getAttribute("fill"), p.getAttribute("stroke"), p.getAttribute("stroke-dasharray") || ""].join(" | "));
    const labels = [...l.querySelectorAll("g.role-legend-label text")].map(t => t.textContent);
    return {title: title ? title.textContent : "", symbols, labels};
  });
  const whole = root.getBoundingClientRect();
  return {texts, axes, legends, width: whole.width, left: whole.left};
}"""


def _published(cat: Any) -> dict[str, Any]:
    from core.present.evidence import reference_view

    rows = reference_view(cat, gpus=[], models=[], frameworks=[], publishers=[]).rows
    return ratio_chart(rows, by="framework", title=f"Published measurements: share of their own ceiling ({rows.height:,} rows)").to_dict(
        validate=False
    )


def _tour_batching(cat: Any) -> dict[str, Any]:
    from core.model.roofline import SWEEP_BATCHES, operating_points, roof_lines
    from core.present.charts import roofline_chart

    sweep_points = operating_points(cat, MOE.model_copy(update={"batch": 1}), SWEEP_BATCHES)
    prec = sweep_points["compute_used"][0] or "bf16"
    roofs = roof_lines(cat.gpus.filter(pl.col("id") == MOE.gpu), [prec])
    matmuls = sweep_points.filter(pl.col("point") == "decode matmul")
    return roofline_chart(roofs, matmuls, matmuls, title="Decode matmuls from batch 1 to 1024").to_dict(validate=False)


def _at_width(spec: dict[str, Any], width: int) -> dict[str, Any]:
    """The spec as Streamlit draws it stretched to a column `width` px wide (fitted in width, padding included); a
    chart sized by its own padding ("pad", a square plot) keeps its size, as on the page."""
    if spec.get("autosize") == {"type": "pad"} or not isinstance(spec.get("width"), int | float):
        return spec
    return {**spec, "width": width, "autosize": {"type": "fit-x", "contains": "padding"}}


def _overlaps(texts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap by more than a pixel each way."""
    out = []
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            if min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > 1 and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > 1:
                out.append((f"{a['text']} ({a['role']})", f"{b['text']} ({b['role']})"))
    return out


def _uncovered(axes: list[dict[str, Any]]) -> list[str]:
    """Axes whose labels leave an end of the axis unlabelled: the nearest label more than a third of its length away."""
    out = []
    for axis in axes:
        box, labels = axis["box"], axis["labels"]
        if box is None or len(labels) < 1:
            continue
        across = box["x1"] - box["x0"] >= box["y1"] - box["y0"]
        lo, hi = (box["x0"], box["x1"]) if across else (box["y0"], box["y1"])
        spots = [lab["x"] if across else lab["y"] for lab in labels]
        if hi - lo < 40:
            continue
        if min(spots) - lo > (hi - lo) / 3 or hi - max(spots) > (hi - lo) / 3:
            out.append(f"{'x' if across else 'y'} axis labels {[lab['text'] for lab in labels]} over {lo:.0f}-{hi:.0f} px")
    return out


def _specs(name: str, cat: Any, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    made = CHARTS[name][0](cat, tmp_path_factory)
    return made if isinstance(made, list) else [made]


@pytest.mark.parametrize("screen", list(WIDTHS))
@pytest.mark.parametrize("name", list(CHARTS))
def test_a_crowded_chart_reads_cleanly(browser, cat, tmp_path_factory, name, screen):
    width = WIDTHS[screen] * 3 // 5 if CHARTS[name][1] == "overview" else WIDTHS[screen]
    context = browser.new_context(viewport={"width": 2400, "height": 2400})
    page = context.new_page()
    problems: list[str] = []
    for spec in _specs(name, cat, tmp_path_factory):
        assert spec is not None, name
        read = page.evaluate(_READ, export_chart(_at_width(spec, width), "svg").decode("utf-8"))
        assert read["texts"], name
        cut = [t["text"] for t in read["texts"] if t["text"].rstrip().endswith("…")]
        problems += [f"cut: {t}" for t in cut]
        edge = read["left"] + read["width"]
        problems += [f"clipped: {t['text']}" for t in read["texts"] if t["x1"] > edge + 1 or t["x0"] < read["left"] - 1]
        problems += [f"overlap: {a} / {b}" for a, b in _overlaps(read["texts"])]
        problems += [f"uncovered: {u}" for u in _uncovered(read["axes"])]
        # a label says which mark it names: two alike in one colour cannot (two curves' "batch 64" each in its colour can)
        marks = [(t["text"], t["fill"]) for t in read["texts"] if "role-mark" in t["role"]]
        problems += [f"the same label twice: {t}" for t in sorted(set(marks)) if marks.count(t) > 1]
        for legend in read["legends"]:
            drawn = legend["symbols"]
            if len(set(drawn)) < len(drawn):
                twins = [lab for lab, s in zip(legend["labels"], drawn, strict=False) if drawn.count(s) > 1]
                problems.append(f"legend {legend['title']!r}: entries drawn alike: {twins}")
    context.close()
    assert not problems, f"{name} at {width} px:\n" + "\n".join(problems)
