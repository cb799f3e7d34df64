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
from core.plan.compare_request import CompareRequest
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
from tests.helpers import CHART_READ, FIXTURES, chart_problems

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
    sc = MOE.model_copy(update={"eff_bandwidth": 0.8, "eff_compute": 0.7})  # derated roofs beside the datasheet's
    view = roofline_view(cat, sc.model_copy(update={"batch": 1}), ("b200", "mi300x", "a100-80gb-sxm"), ("bf16", "fp8", "fp4"))
    return roofline_at(cat, view, sc, big=big, operations=False).chart


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
            compare_view(cat, EIGHT, MOE.model_copy(update={"model": "llama-3.1-70b"}), CompareRequest(mode="service target")).frontier
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
    return roofline_chart(roofs, matmuls, matmuls, title="Decode matmuls from batch 1 to 1,024").to_dict(validate=False)


def _at_width(spec: dict[str, Any], width: int) -> dict[str, Any]:
    """The spec as Streamlit draws it stretched to a column `width` px wide (fitted in width, padding included); a
    chart sized by its own padding ("pad", a square plot) keeps its size, as on the page."""
    if spec.get("autosize") == {"type": "pad"} or not isinstance(spec.get("width"), int | float):
        return spec
    return {**spec, "width": width, "autosize": {"type": "fit-x", "contains": "padding"}}


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
        read = page.evaluate(CHART_READ, export_chart(_at_width(spec, width), "svg").decode("utf-8"))
        problems += chart_problems(read)
    context.close()
    assert not problems, f"{name} at {width} px:\n" + "\n".join(problems)


#: Pages as a room sees them, crowded: (link, how many charts at least are drawn on it).
PAGE_LINKS = {
    "overview": "?model=deepseek-v3&gpu=h200-sxm&num_gpus=8&weights=fp8",
    "roofline": "roofline?rf_compare=b200,mi300x,a100-80gb-sxm&rf_precisions=bf16,fp8,fp4&model=deepseek-v3&gpu=h200-sxm&num_gpus=8&weights=fp8",
    "ridges": "ridges?rd_precision=fp8",
    "calculator": "calculator?spec_draft_len=4",
    "compare": "compare?cmp_gpus=" + ",".join(EIGHT),
    "sweep": "sweep",
    "measured": "measured",
    "measured, a dataset": "measured?ms_view=Your+datasets",
    "tour": "tour?tour_step=5.+Batching+is+free+until+the+ridge&model=deepseek-v3&gpu=h200-sxm&num_gpus=8&weights=fp8",
}
#: (viewport, presentation mode)
SCREENS = {"1280": ((1280, 900), False), "1600": ((1600, 1000), False), "1280x800 presenting": ((1280, 800), True)}


@pytest.fixture(scope="module")
def svg_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An app server that draws every chart as SVG (ROOFLINE_SVG_CHARTS=1), in Streamlit's theme, as the page shows it;
    its store holds one dataset imported by the CLI (the generic CSV fixture: decode rows over several batches)."""
    import subprocess
    import sys

    from tests.helpers import ROOT, Server

    db = tmp_path_factory.mktemp("svg") / "store.duckdb"
    subprocess.run(
        [sys.executable, "-m", "core.cli", "import", str(FIXTURES / "generic.csv"), "--db", str(db)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    srv = Server(db, ROOFLINE_SVG_CHARTS="1")
    yield srv
    srv.stop()


@pytest.mark.slow
@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("name", list(PAGE_LINKS))
def test_every_chart_on_a_crowded_page_reads_cleanly_as_drawn(svg_server, browser, name, screen):
    """The same reading of every chart the page draws, in the browser, in Streamlit's theme and fonts, at the page's own
    width: normal mode at 1280 and 1600 px (the sidebar open), presentation mode at 1280 x 800."""
    from playwright.sync_api import expect

    from tests.helpers import opened

    (w, h), presenting = SCREENS[screen]
    context = browser.new_context(viewport={"width": w, "height": h})
    page = context.new_page()
    link = PAGE_LINKS[name]
    opened(page, svg_server.url(link + ("&" if "?" in link else "?") + "present=true" if presenting else link))
    main = page.locator("[data-testid='stMain']")
    main.locator("[data-testid='stVegaLiteChart'] svg.marks").first.wait_for()
    expect(main.locator("[data-testid='stSkeleton']")).to_have_count(0)
    page.wait_for_timeout(500)  # Vega sizes a stretched chart to its column once drawn
    charts = [c for c in main.locator("[data-testid='stVegaLiteChart'] svg.marks").all() if c.is_visible()]
    assert charts, name
    problems = []
    for i, chart in enumerate(charts):
        problems += [f"chart {i + 1}: {p}" for p in chart_problems(chart.evaluate(CHART_READ))]
    context.close()
    assert not problems, f"{name} at {screen}:\n" + "\n".join(problems)
