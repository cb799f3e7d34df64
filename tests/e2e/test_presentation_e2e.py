"""Presentation mode on every page: the controls fold away, the headline figure leads, the main chart fills the page."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.helpers import Server, opened, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: page -> what leads it in presentation mode (the first element after the title) and what fills the width
PAGES = {
    "overview": ("stMetric", "stVegaLiteChart"),
    "roofline?rf_compare=b200&rf_precisions=fp8": ("stMetric", "stVegaLiteChart"),
    "ridges": ("stMetric", "stVegaLiteChart"),
    "calculator?spec_draft_len=4": ("Llama 3.1 8B on 1 × NVIDIA H100 SXM5 80GB · batch", "stVegaLiteChart"),  # its subject
    "compare": ("Best by", "stVegaLiteChart"),  # a line of text leads, the metrics under it
    "sweep": ("stMetric", "stVegaLiteChart"),
    "measured": ("stMetric", "stVegaLiteChart"),
    "tour": ("stHeading", "stVegaLiteChart"),  # the step's title, then its text and chart
    "catalogue": ("stMetric", "stDataFrame"),
}
CONTROLS = ("combobox", "spinbutton", "slider", "textbox", "radio", "switch", "checkbox")

#: In document order, the visible elements of the main area after the page's title, a folded expander's line
#: counted as one: the test id of each (or of its first inner element) and its text.
_AFTER_TITLE = """() => {
  const main = document.querySelector("[data-testid='stMain']");
  const shown = [...main.querySelectorAll("[data-testid='stElementContainer'], [data-testid='stExpander']")]
    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().height > 0)
    .filter(e => !e.parentElement.closest("[data-testid='stExpander']"));
  const title = shown.findIndex(e => e.querySelector("h1"));
  return shown.slice(title + 1, title + 4).map(e => {
    const inner = e.getAttribute("data-testid") === "stExpander" ? e : e.querySelector("[data-testid]");
    const has = [...e.querySelectorAll("[data-testid]")].map(x => x.getAttribute("data-testid"));
    return {id: inner ? inner.getAttribute("data-testid") : "", has: has, text: e.innerText.slice(0, 120)};
  });
}"""

#: The drawn width of the first visible element with this test id (a chart's canvas or SVG), and the main block's width.
_WIDTHS = """(id) => {
  const block = document.querySelector("[data-testid='stMainBlockContainer']");
  const style = getComputedStyle(block);
  const inner = block.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const el = [...document.querySelectorAll(`[data-testid='stMain'] [data-testid='${id}']`)].find(e => e.offsetParent !== null);
  const drawn = el.querySelector("canvas, svg.marks") || el;
  return {drawn: drawn.getBoundingClientRect().width, block: inner};
}"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("present") / "store.duckdb")
    yield srv
    srv.stop()


@pytest.mark.parametrize("path", list(PAGES))
def test_presentation_mode_folds_the_controls_and_leads_with_the_figure_at_full_width(app, browser, path):
    lead, wide = PAGES[path]
    context = browser.new_context(viewport={"width": 1600, "height": 1400})
    page = context.new_page()
    sep = "&" if "?" in path else "?"
    opened(page, app.url(f"{path}{sep}present=true"))
    main = page.locator("[data-testid='stMain']")
    main.locator(f"[data-testid='{wide}']").first.wait_for()
    # an element whose code the browser is still loading shows as a skeleton: the order is read once none is left
    expect(main.locator("[data-testid='stSkeleton']")).to_have_count(0)
    assert page.get_by_role("switch", name="Presentation mode").is_checked()
    # the sidebar's scenario is one line; its controls are folded
    assert page.locator("[data-testid='stSidebar']").get_by_role("combobox", name="Accelerator", exact=True).count() == 0
    # no control of the page is in view: each is in a folded expander (or a tab not shown)
    for role in CONTROLS:
        visible = [c for c in main.get_by_role(role).all() if c.is_visible()]
        assert not visible, (path, role, [c.get_attribute("aria-label") for c in visible])
    assert main.locator("[data-testid='stExpander']").count() >= (0 if path == "overview" else 1), path
    first = page.evaluate(_AFTER_TITLE)
    if lead.startswith("st"):
        assert lead in [first[0]["id"], *first[0]["has"]], (path, first)
    else:
        assert first[0]["text"].startswith(lead) and first[1]["id"] == "stMetric", (path, first)
    widths = page.evaluate(_WIDTHS, wide)
    assert widths["drawn"] >= 0.9 * widths["block"], (path, widths)
    assert widths["drawn"] <= widths["block"] + 2, (path, widths)  # and not beyond it
    screenshot(page, f"present-{path.split('?')[0]}")
    context.close()


#: The chart pages, each with a scenario a room is shown (overlays and precisions, a MoE model, speculative decoding,
#: several accelerators), and the subject its sidebar line names in presentation mode (None: the sidebar's scenario).
SCREEN_PAGES = {
    "overview?model=deepseek-v3&gpu=h200-sxm&num_gpus=8&weights=fp8": None,
    "roofline?rf_compare=b200,mi300x,a100-80gb-sxm&rf_precisions=bf16,fp8,fp4": None,
    "ridges?rd_precision=fp8": "Ridge points at fp8",
    "calculator?spec_draft_len=4&model=qwen3-235b-a22b&num_gpus=8&weights=fp8": None,
    "compare?cmp_gpus=h100-sxm,b200,mi300x,l40s": "Llama 3.1 8B",
    "sweep": "Sweep:",
    "measured": "Published measurements:",
    "tour?tour_step=5.+Batching+is+free+until+the+ridge&model=deepseek-v3&gpu=h200-sxm&num_gpus=8&weights=fp8": None,
}
#: Where a rectangle's box lies: the first visible chart of the main area (its canvas or SVG), the page's headline (its
#: first metric, or the tour's step title), the sidebar, and the sidebar's one line.
_SCREEN = """() => {
  const main = document.querySelector("[data-testid='stMain']");
  const seen = (sel) => [...main.querySelectorAll(sel)].find(e => e.offsetParent !== null);
  const box = (e) => { if (!e) return null; const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const chart = seen("[data-testid='stVegaLiteChart']");
  const head = seen("[data-testid='stMetric']") || seen("h3") || seen("h5");
  const side = document.querySelector("[data-testid='stSidebar']");
  const line = side.querySelector("[data-testid='stMarkdownContainer'] strong");
  return {chart: box(chart && (chart.querySelector("canvas, svg.marks") || chart)), head: box(head),
          side: box(side), line: line ? line.textContent : ""};
}"""


@pytest.mark.parametrize("path", list(SCREEN_PAGES))
def test_presentation_mode_fits_the_headline_and_lead_chart_on_one_1280_by_800_screen(app, browser, path):
    """A projector's screen: the headline and the whole lead chart lie inside the 1280 x 800 viewport with nothing
    scrolled; the sidebar starts collapsed; on a page whose subject is not the sidebar's scenario, its line names it."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    opened(page, app.url(f"{path}&present=true" if "?" in path else f"{path}?present=true"))
    main = page.locator("[data-testid='stMain']")
    main.locator("[data-testid='stVegaLiteChart']").first.wait_for()
    expect(main.locator("[data-testid='stSkeleton']")).to_have_count(0)
    page.wait_for_timeout(500)  # the chart's own layout (Vega sizes it to its column once drawn)
    at = page.evaluate(_SCREEN)
    assert at["chart"] and at["head"], (path, at)
    assert at["head"]["top"] >= 0 and at["head"]["bottom"] <= at["chart"]["top"], (path, at)  # the headline first
    assert at["chart"]["top"] >= 0 and at["chart"]["bottom"] <= 800 and at["chart"]["right"] <= 1280, (path, at)
    assert at["chart"]["bottom"] - at["chart"]["top"] >= 250, (path, at)  # a chart, not a strip
    assert at["side"]["right"] <= 1, (path, at)  # collapsed: drawn off the screen
    subject = SCREEN_PAGES[path]
    if subject is None:
        assert " × " in at["line"], (path, at["line"])  # the sidebar's scenario, "1 × NVIDIA H100 ..."
    else:
        assert at["line"].startswith(subject), (path, at["line"])
    if path.startswith("calculator"):  # its figures are the scenario's, named above them (the sidebar's line is hidden)
        heading = main.get_by_role("heading", name=re.compile(r"^Qwen3 235B.* on 8 × NVIDIA H100 SXM5 80GB · batch"))
        assert heading.bounding_box()["y"] + heading.bounding_box()["height"] <= at["head"]["top"], path  # type: ignore[index]
    screenshot(page, f"present-1280x800-{path.split('?')[0]}")
    context.close()
