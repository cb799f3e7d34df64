"""Browser tests of the roofline and ridge pages: charts render, Play sweeps the batch, exports download."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot, wait_ready

pytestmark = pytest.mark.e2e


def test_roofline_page_renders_its_chart_and_table(server, page):
    """The roofline page draws a Vega chart and the per-operation table."""
    page.goto(server.url("roofline?gpu=h100-sxm&model=llama-3.1-8b&batch=32&compare=a100-80gb-sxm"))
    wait_ready(page)
    page.get_by_text("Batch 32 · decode matmul at").wait_for()
    page.locator("[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg").first.wait_for()
    page.get_by_text("memory-bound").first.wait_for()
    page.get_by_text("Decode step, operation by operation").wait_for()
    screenshot(page, "roofline")


def test_play_sweeps_the_batch_to_1024_and_leaves_the_scenario_as_it_was(server, page):
    """Pressing Play animates the batch through the powers of two up to 1024, then shows the scenario's own batch again."""
    page.goto(server.url("roofline?batch=2"))
    wait_ready(page)
    page.get_by_text("Batch 2 · decode matmul").wait_for()
    page.get_by_role("button", name="Play").click()
    # intermediate frames may pass between two polls on a loaded machine: the last frame is what counts
    page.get_by_text("Batch 1024 · decode matmul").wait_for(timeout=120_000)
    page.get_by_text("Batch 2 · decode matmul").wait_for(timeout=60_000)
    # the shared batch (sidebar, link) is still the user's
    expect(page.get_by_role("spinbutton", name="Batch (sequences)")).to_have_value("2")
    expect(page).to_have_url(re.compile(r"batch=2(&|$)"))


@pytest.mark.parametrize(("label", "magic"), [("PNG", b"\x89PNG"), ("SVG", b"<svg")])
def test_roofline_chart_exports(server, page, tmp_path, label, magic):
    """The PNG and SVG buttons download the chart rendered offline."""
    page.goto(server.url("roofline"))
    wait_ready(page)
    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name=f"{'image' if label == 'PNG' else 'polyline'} icon {label}").first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    data = path.read_bytes()
    assert data.startswith(magic)
    assert len(data) > 2_000


def test_ridge_page_renders_and_exports(server, page, tmp_path):
    """The ridge page draws the bars and the by-precision view; its SVG export is a chart."""
    page.goto(server.url("ridges?batch=256"))
    wait_ready(page)
    page.get_by_text("Batch 256, weights bf16").wait_for()
    page.locator("[data-testid='stVegaLiteChart']").nth(1).wait_for()
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 2
    screenshot(page, "ridges")
    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="polyline icon SVG").first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    assert b"Ridge point" in path.read_bytes()


def test_scenario_survives_a_page_switch(server, page):
    """A batch set on the roofline page is still set after switching to the ridge page."""
    page.goto(server.url("roofline?batch=128&model=llama-3.1-70b"))
    wait_ready(page)
    page.get_by_text("Batch 128 · decode matmul").wait_for()
    page.get_by_role("link", name="Ridge points").click()
    page.get_by_text("Batch 128, weights bf16").wait_for()
    assert page.get_by_role("combobox", name="Model", exact=True).input_value() == "Llama 3.1 70B"
