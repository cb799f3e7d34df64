"""Browser tests of the planning pages: calculator, compare accelerators, sweep explorer (screenshots for a person to look at)."""

from __future__ import annotations

import pytest

from tests.helpers import metric, opened, rerun, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
TALL = {"width": 1400, "height": 2400}  # the app scrolls inside its own container: a tall window shows the whole page


def test_calculator_shows_the_seed_ceiling_and_its_charts(server, page):
    """70B bf16 on 2 x H100 SXM at batch 1: ~48 tokens/s per user, memory-bound, four charts (breakdown, memory, frontier) drawn."""
    page.set_viewport_size(TALL)
    opened(page, server.url("calculator?gpu=h100-sxm&model=llama-3.1-70b&num_gpus=2&batch=1&context=1024"))
    page.get_by_text("What if: the three moves").wait_for()
    assert 44 < float(metric(page, "Tokens/s per user")) < 48.5
    assert metric(page, "Bound by") == "memory"
    assert metric(page, "Fits in memory") == "yes"
    page.locator("[data-testid='stVegaLiteChart']").nth(2).wait_for()
    screenshot(page, "calculator-70b-2xh100")


def test_calculator_says_when_nothing_fits(server, page):
    """405B in bf16 on one L4 fits at no batch: the page says so instead of drawing an empty frontier."""
    page.set_viewport_size(TALL)
    opened(page, server.url("calculator?gpu=l4&model=llama-3.1-405b&num_gpus=1&batch=1"))
    page.get_by_text("Nothing fits at any batch").wait_for()
    assert metric(page, "Fits in memory") == "no"
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "calculator-nothing-fits")


def test_compare_reproduces_l40s_vs_a100(server, page):
    """Seed 004: at batch-1 decode of Llama 3.1 8B the A100 80GB is ~2.4x faster than the L40S despite a lower bf16 peak
    (the seed compares ceilings: the link asks for them)."""
    page.set_viewport_size(TALL)
    opened(page, server.url("compare?model=llama-3.1-8b&batch=1&weights=bf16&kv=bf16&cmp_basis=ceiling"))
    page.get_by_text("2.4× faster per user than NVIDIA L40S").wait_for()
    page.get_by_text("despite a lower bf16 peak").wait_for()
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for()
    screenshot(page, "compare-l40s-a100")


def test_compare_with_no_accelerator_says_so(server, page):
    """Removing every accelerator leaves a clear message, no table and no traceback."""
    page.set_viewport_size(TALL)
    opened(page, server.url("compare"))
    ms = page.get_by_role("combobox", name="Accelerators")
    ms.click()
    with rerun(page):
        page.keyboard.press("Backspace")
    with rerun(page):
        page.keyboard.press("Backspace")
    page.get_by_text("No accelerator selected").wait_for()
    page.keyboard.press("Escape")  # close the dropdown so the screenshot shows the message
    page.get_by_role("listbox").wait_for(state="hidden")
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "compare-empty")


def test_sweep_answers_the_70b_fp8_batch_64_question(server, page):
    """The sweep's defaults ask which accelerators meet 20 ms per output token for a 70B model in fp8; the answer and table appear."""
    page.set_viewport_size(TALL)
    opened(page, server.url("sweep"))
    page.get_by_text("scenarios meet these limits").wait_for()
    page.locator("[data-testid='stDataFrame']").first.wait_for()
    screenshot(page, "sweep-70b-fp8")
