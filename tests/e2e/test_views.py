"""Browser tests of the roofline and ridge pages: charts render and read (labels apart, axes in numbers, full width),
Play sweeps the batch and leaves the scenario's, exports download."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.helpers import opened, rerun, runs_started, screenshot, settle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
FRAME_S = 0.35  # how long Play shows each batch (pages/roofline/page.py)


def test_roofline_page_renders_its_chart_and_table(server, page):
    """The roofline page draws a Vega chart and, once its expander is opened, the per-operation table."""
    opened(page, server.url("roofline?gpu=h100-sxm&model=llama-3.1-8b&batch=32&compare=a100-80gb-sxm"))
    page.get_by_text("Batch 32 · decode matmul at").wait_for()
    page.locator("[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg").first.wait_for()
    page.get_by_text("memory-bound").first.wait_for()
    with rerun(page):
        page.get_by_text("Decode step, operation by operation (").click()  # folded until opened
    page.locator("[data-testid='stMain'] [data-testid='stDataFrame'] table[role='grid']").wait_for(state="attached")
    screenshot(page, "roofline")


#: Records, at every frame the browser draws, the (batch line, headline) pair of the main area when it changes, until
#: Play's frame bar is gone and the batch line reads `until` again after at least three pairs (a frame of the sweep may
#: show `until` itself, the headline a moment blank); resolves to the pairs seen.
FRAMES = """(until) => new Promise((done) => {
  const main = document.querySelector("[data-testid='stMain']");
  const seen = [];
  const look = () => {
    const text = main.innerText;
    const line = text.match(/Batch ([\\d,]+) · decode matmul/), head = text.match(/Decode at batch ([\\d,]+):/);
    const now = [line ? line[1] : "", head ? head[1] : ""];
    const last = seen[seen.length - 1];
    if (!last || last[0] !== now[0] || last[1] !== now[1]) seen.push(now);
    if (seen.length > 2 && now[0] === until && !text.includes("Play: batch")) done(seen);
    else requestAnimationFrame(look);
  };
  look();
})"""


def _frames(page, until: str) -> list[tuple[str, str]]:
    """(batch line, headline) pairs as they change in the main area, drawn frame by frame, until Play's frame bar is
    gone and the batch line reads `until` again."""
    return [tuple(pair) for pair in page.evaluate(FRAMES, until)]  # type: ignore[misc]


def test_play_sweeps_the_batch_to_1024_and_leaves_the_scenario_as_it_was(fresh_server, page):
    """Play shows the batches of the sweep one by one, 1 to 1,024: the frame bar, the batch line and the headline move
    with the frames; afterwards the page shows the scenario's own batch again, the sidebar and the link still hold it,
    and the server logged no conflict between the batch widget's default and the session state."""
    opened(page, fresh_server.url("roofline?batch=2"))
    main = page.locator("[data-testid='stMain']")
    main.get_by_text("Batch 2 · decode matmul").wait_for()
    main.get_by_role("button", name="Play").click()
    main.get_by_text(re.compile(r"^Play: batch [\d,]+ · frame")).wait_for()  # the frame bar, while it plays
    seen = _frames(page, "2")
    batches = [int(b.replace(",", "")) for b, _ in seen[1:-1] if b]
    # frames pass in order (a loaded machine may skip some between two polls), the headline with them, up to 1,024
    assert len(set(batches)) >= 4 and batches == sorted(batches) and batches[-1] == 1024, seen
    assert set(batches) <= {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
    assert sum(1 for b, h in seen if b and b == h) >= 4, seen
    settle(page)
    expect(main.get_by_text(re.compile(r"^Play: batch [\d,]+ · frame"))).to_have_count(0)
    expect(page.get_by_role("spinbutton", name="Batch (sequences)")).to_have_value("2")
    expect(page).to_have_url(re.compile(r"batch=2(&|$)"))
    expect(main.get_by_text("Decode at batch 2:")).to_be_visible()
    log = fresh_server.db.with_suffix(".log").read_text()
    assert 'The widget with key "batch"' not in log and "Traceback" not in log, log[-2000:]


def test_play_stopped_on_a_frame_makes_it_the_scenarios_batch(server, page):
    """ "Use this batch" during Play stops it there: the sidebar's batch, the link and the page take that frame's batch."""
    opened(page, server.url("roofline?batch=3"))  # not a batch of the sweep: any frame kept differs
    main = page.locator("[data-testid='stMain']")
    main.get_by_text("Batch 3 · decode matmul").wait_for()
    main.get_by_role("button", name="Play").click()
    main.get_by_role("button", name="Use this batch").wait_for()
    with rerun(page):
        main.get_by_role("button", name="Use this batch").click()
    expect(main.get_by_text(re.compile(r"^Play: batch [\d,]+ · frame"))).to_have_count(0)
    box = page.get_by_role("spinbutton", name="Batch (sequences)")
    expect(box).not_to_have_value("3")  # the whole page's rerun that follows the stop
    settle(page)
    kept = box.input_value()
    assert int(kept) in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)  # the frame on screen when the click arrived
    # the link carries the batch kept; a frame at batch 1, the sidebar's default, is left out of it as every default is
    expect(page).to_have_url(re.compile(rf"[?&]batch={kept}(&|$)" if kept != "1" else r"^[^?]*(\?(?!(.*&)?batch=).*)?$"))
    expect(main.get_by_text(f"Batch {int(kept):,} · decode matmul")).to_be_visible()
    # no frame comes after the stop: no run starts in two frames' time and a second (a window to watch, not a wait)
    runs = runs_started(page)
    page.wait_for_timeout((2 * FRAME_S + 1) * 1000)
    assert runs_started(page) == runs
    expect(main.get_by_text(f"Batch {int(kept):,} · decode matmul")).to_be_visible()


@pytest.mark.parametrize("width", [1280, 1600])
def test_roofline_fills_its_column_with_labels_apart_and_axes_in_numbers(server, browser, width):
    """With three overlay accelerators at two precisions the chart is as wide as its column, no two of its text labels
    overlap on screen, and its axes read 0.01 ... 1,000 FLOP/byte and 1 T ... 1 P FLOP/s, never "10m"."""
    context = browser.new_context(viewport={"width": width, "height": 1000})
    page = context.new_page()
    try:
        opened(page, server.url("roofline?rf_compare=b200&rf_compare=mi300x&rf_compare=a100-80gb-sxm&rf_precisions=bf16&rf_precisions=fp8"))
        chart = page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart']").first
        chart.locator("svg").wait_for()
        column = page.locator("[data-testid='stMain'] [data-testid='stMainBlockContainer']").first.bounding_box()
        svg = chart.locator("svg").first.bounding_box()
        assert column and svg
        pad = page.evaluate(
            "() => { const s = getComputedStyle(document.querySelector(\"[data-testid='stMainBlockContainer']\"));"
            " return parseFloat(s.paddingLeft) + parseFloat(s.paddingRight); }"
        )
        assert svg["width"] == pytest.approx(column["width"] - pad, abs=4)
        boxes = page.evaluate(
            """() => Array.from(document.querySelectorAll(
                "[data-testid='stMain'] [data-testid='stVegaLiteChart'] svg g.mark-text text"))
              .filter((t) => t.textContent.trim())
              .map((t) => { const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.top, r.right, r.bottom]; })"""
        )
        assert len(boxes) >= 6
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                apart = a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]
                assert apart, (a, b)
        axis = page.evaluate(
            """() => Array.from(document.querySelectorAll(
                "[data-testid='stMain'] [data-testid='stVegaLiteChart'] svg g.role-axis-label text")).map((t) => t.textContent)"""
        )
        assert {"0.01", "0.1", "1", "10", "100", "1,000", "1 T", "10 T", "1 P"} <= set(axis), axis
        assert not {"10m", "100m"} & set(axis)
    finally:
        context.close()


@pytest.mark.parametrize(("label", "magic"), [("PNG", b"\x89PNG"), ("SVG", b"<svg")])
def test_roofline_chart_exports(server, page, tmp_path, label, magic):
    """The PNG and SVG buttons download the chart rendered offline."""
    opened(page, server.url("roofline"))
    with page.expect_download() as info:
        page.get_by_role("button", name=f"{'image' if label == 'PNG' else 'polyline'} icon {label}").first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    data = path.read_bytes()
    assert data.startswith(magic)
    assert len(data) > 2_000


def test_ridge_page_renders_and_exports(server, page, tmp_path):
    """The ridge page draws the bars and the by-precision view; its SVG export is a chart."""
    opened(page, server.url("ridges?batch=256"))
    page.get_by_text("Batch 256, weights bf16").wait_for()
    page.locator("[data-testid='stVegaLiteChart']").nth(1).wait_for()
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 2
    screenshot(page, "ridges")
    with page.expect_download() as info:
        page.get_by_role("button", name="polyline icon SVG").first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    assert b"Ridge point" in path.read_bytes()


def test_scenario_survives_a_page_switch(server, page):
    """A batch set on the roofline page is still set after switching to the ridge page."""
    opened(page, server.url("roofline?batch=128&model=llama-3.1-70b"))
    page.get_by_text("Batch 128 · decode matmul").wait_for()
    page.get_by_role("link", name="Ridge points").click()
    page.get_by_text("Batch 128, weights bf16").wait_for()
    assert page.get_by_role("combobox", name="Model", exact=True).input_value() == "Llama 3.1 70B"
