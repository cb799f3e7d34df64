"""Nothing cut at 1280 x 800: on every page, in Chromium.

For each page (with the sweep's eight default accelerators, the comparison's two and three
overlaid roofs on the roofline, so multiselects hold chips) this checks, in [data-testid='stMain']:

- every dataframe, chart and multiselect ends within its parent block and within the main area
  (getBoundingClientRect right edges; a chart's drawing, its canvas or svg, not only its box);
- every multiselect chip, and its clear and open buttons, lie inside its box (Streamlit 1.6x
  scrolls chips sideways out of sight unless pages.shared.streamlit_private.CHIP_ROWS_CSS wraps them);
- every visible dataframe's last column header is in view, or reachable: its grid scrolls
  sideways to a header whose aria-colindex is the grid's aria-colcount, and the page says so
  under the table ("scroll the table sideways", pages.shared.ui.data_table).

A failure names the page, the element and the pixels by which it is cut.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import WAIT_MS, opened, rerun

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PAGES = {
    "overview": "/",
    "roofline": "roofline?rf_compare=NVIDIA+H200+SXM+141GB&rf_compare=NVIDIA+B200+%28HGX%2FDGX+SXM%29&rf_compare=AMD+Instinct+MI300X",
    "ridges": "ridges",
    "tour": "tour",
    "calculator": "calculator",
    "compare": "compare",
    "sweep": "sweep",
    "catalogue": "catalogue",
    "measured": "measured",
}

#: Pages whose first view holds at least one table.
TABLED = ("roofline", "ridges", "calculator", "compare", "sweep", "catalogue")

#: Right edges (px, rounded) of every checked element against its parent block and the main area; chips outside their box.
OVERFLOWS = """() => {
  const main = document.querySelector("[data-testid='stMain'] [data-testid='stMainBlockContainer']") ||
               document.querySelector("[data-testid='stMain']");
  const mainRight = main.getBoundingClientRect().right;
  const out = [];
  const visible = (e) => e.offsetParent !== null && e.getBoundingClientRect().width > 0;
  for (const kind of ["stDataFrame", "stVegaLiteChart", "stMultiSelect"]) {
    document.querySelectorAll(`[data-testid='stMain'] [data-testid='${kind}']`).forEach((el, i) => {
      if (!visible(el)) return;
      const holder = el.closest("[data-testid='stElementContainer']") || el;
      const parent = holder.parentElement.getBoundingClientRect();
      let right = el.getBoundingClientRect().right;
      if (kind === "stVegaLiteChart") {
        el.querySelectorAll("canvas, svg.marks").forEach((d) => { right = Math.max(right, d.getBoundingClientRect().right); });
      }
      const limit = Math.min(parent.right, mainRight);
      const label = kind + "#" + i + " " + (el.innerText || "").split("\\n")[0].slice(0, 40);
      if (right > limit + 1) out.push({what: label, by: Math.round(right - limit)});
      if (kind === "stMultiSelect") {
        const group = el.querySelector(".react-aria-ComboBox > [role='group']");
        if (group) {
          const g = group.getBoundingClientRect();
          group.querySelectorAll("button").forEach((btn) => {
            const r = btn.getBoundingClientRect();
            if (r.width > 0 && r.right > g.right + 1) out.push({what: label + " button " + (btn.getAttribute("aria-label") || ""), by: Math.round(r.right - g.right)});
          });
        }
        const box = el.querySelector(".react-aria-ComboBox [data-testid='stMultiSelectTagsContainer']");
        if (!box) return;
        const b = box.getBoundingClientRect();
        box.querySelectorAll("[data-tag]").forEach((chip) => {
          const c = chip.getBoundingClientRect();
          if (c.right > b.right + 1 || c.left < b.left - 1 || c.bottom > b.bottom + 1)
            out.push({what: label + " chip " + chip.getAttribute("aria-label"), by: Math.round(Math.max(c.right - b.right, c.bottom - b.bottom))});
        });
      }
    });
  }
  return out;
}"""

#: Each visible dataframe: its column count, whether it fits, its last header after scrolling to the far right, the text after it.
GRIDS = """async (waitMs) => {
  const grids = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stDataFrame']")].filter((e) => e.offsetParent !== null);
  const out = [];
  for (const el of grids) {
    const scroller = el.querySelector(".dvn-scroller");
    const table = el.querySelector("table[role='grid']");
    if (!scroller || !table) continue;
    const cols = Number(table.getAttribute("aria-colcount"));
    const fits = scroller.scrollWidth <= scroller.clientWidth + 1;
    let heads = [], last = null;
    for (const until = performance.now() + waitMs; performance.now() < until; ) {  // the grid redraws its columns a moment after it scrolls
      scroller.scrollLeft = scroller.scrollWidth;
      await new Promise((r) => requestAnimationFrame(r));
      heads = [...table.querySelectorAll("thead th")];
      last = heads[heads.length - 1];
      if (last && Number(last.getAttribute("aria-colindex")) === cols) break;
    }
    const box = el.getBoundingClientRect();
    const lastBox = last ? last.getBoundingClientRect() : null;
    const holder = el.closest("[data-testid='stElementContainer']");
    let after = "";
    for (let n = holder && holder.nextElementSibling, k = 0; n && k < 2; n = n.nextElementSibling, k++) after += " " + n.innerText;
    out.push({
      first: heads.length ? heads[0].innerText : "", cols, fits,
      lastIndex: last ? Number(last.getAttribute("aria-colindex")) : 0,
      lastInside: lastBox ? lastBox.right <= box.right + 1 : false,
      hint: after.includes("scroll the table sideways"),
    });
    scroller.scrollLeft = 0;
  }
  return out;
}"""


#: Resolves once every visible chart has drawn (its canvas or svg) and the boxes of the charts, tables and multiselects
#: of the main area have kept their place and size for five frames in a row (charts and grids lay out after the run).
LAID_OUT = """() => new Promise((done) => {
  let last = "", same = 0;
  const look = () => {
    const shown = [...document.querySelectorAll(
      "[data-testid='stMain'] :is([data-testid='stVegaLiteChart'], [data-testid='stDataFrame'], [data-testid='stMultiSelect'])")]
      .filter((e) => e.offsetParent !== null);
    const drawn = shown.every((e) => e.getAttribute("data-testid") !== "stVegaLiteChart" || e.querySelector("canvas, svg.marks"));
    const now = JSON.stringify(shown.map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }));
    same = drawn && now === last ? same + 1 : 0;
    last = now;
    if (same >= 5) done(); else requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
})"""


@pytest.fixture(scope="module")
def narrow(browser: Any) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    yield context
    context.close()


@pytest.mark.parametrize("name", list(PAGES))
def test_nothing_is_cut_at_1280(server: Any, narrow: Any, name: str) -> None:
    page = narrow.new_page()
    try:
        opened(page, server.url(PAGES[name]))
        if name == "roofline":  # its table of operations is folded until opened
            with rerun(page):
                page.get_by_text("Decode step, operation by operation (").click()
        if name in TABLED:  # a grid's component loads after the script's run
            page.wait_for_selector("[data-testid='stMain'] [data-testid='stDataFrame'] table[role='grid']", state="attached")
        page.evaluate(LAID_OUT)
        cut = page.evaluate(OVERFLOWS)
        grids = page.evaluate(GRIDS, WAIT_MS)
    finally:
        page.close()
    assert not cut, f"{name}: cut at 1280 px: {cut}"
    if name in TABLED:
        assert grids, f"{name}: its table was not found"
    for grid in grids:
        where = f"{name}: table starting '{grid['first']}' ({grid['cols']} columns)"
        assert grid["lastIndex"] == grid["cols"] and grid["lastInside"], f"{where}: its last column cannot be reached: {grid}"
        assert grid["fits"] or grid["hint"], f"{where}: wider than the page at 1280 px and nothing says it scrolls sideways"


#: Each element of a metric's label that cuts its text with an ellipsis, where its text is wider than it.
_CUT_LABELS = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stMetricLabel'] *")]
  .filter(e => e.offsetParent !== null && getComputedStyle(e).textOverflow === "ellipsis" && e.scrollWidth > e.clientWidth + 1)
  .map(e => e.innerText)"""


@pytest.mark.parametrize("name", list(PAGES))
def test_no_metric_label_is_cut_at_1280(server, browser, name):
    """A headline figure's label reads whole at 1280 x 800 (issue 31: "Median share of ceiling (de…" on the measured page)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    opened(page, server.url(PAGES[name]))  # the run finished and drawn: every metric it has is on the page
    cut = page.evaluate(_CUT_LABELS)
    context.close()
    assert not cut, (name, cut)
