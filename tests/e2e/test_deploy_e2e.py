"""Browser: the compare page's deployments planned through its controls, and the link the page writes opened in a new
browser context on a fresh server: the same disaggregated plan, its frontier and its report."""

from __future__ import annotations

import html
import urllib.parse

import pytest

from tests.helpers import download_report, opened, rerun

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
TALL = {"width": 1400, "height": 2600}


def _headline(page) -> str:
    text = page.locator("[data-testid='stAlertContentSuccess']").first.inner_text()
    return "Cheapest" + text.split("Cheapest", 1)[1] if "Cheapest" in text else text  # past the icon's name


def test_a_disaggregated_plan_opens_from_its_link_in_a_new_browser_context(fresh_server, browser, page, tmp_path):
    page.set_viewport_size(TALL)
    opened(page, fresh_server.url("compare?model=deepseek-v3&weights=fp8&kv=fp8&framework=SGLang&cmp_gpus=h200-sxm&cmp_gpus=mi300x"))
    with rerun(page):
        page.get_by_text("Deployments at a request rate").click()
    with rerun(page):
        box = page.get_by_role("spinbutton", name="Request rate (requests/s)")
        box.fill("20")
        box.press("Enter")
    mine = _headline(page)
    # at 20 requests/s of 2,000 + 500 tokens the cheapest plan is MI300X's prefill and decode pools
    assert mine.startswith("Cheapest at 20 requests/s: ") and " prefill x " in mine and " decode x " in mine, mine
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 1
    link = page.url
    query = urllib.parse.parse_qs(urllib.parse.urlparse(link).query)
    assert query["cmp_view"] == ["Deployments at a request rate"] and query["dp_rate"] == ["20"], query
    other = browser.new_context(viewport=TALL, accept_downloads=True)
    try:
        fresh = other.new_page()
        opened(fresh, link)
        assert _headline(fresh) == mine
        assert fresh.get_by_role("spinbutton", name="Request rate (requests/s)").input_value() == "20.00"
        assert fresh.locator("[data-testid='stVegaLiteChart']").count() == 1
        assert not fresh.locator("[data-testid='stException']").count()
        _, text = download_report(fresh, tmp_path)
        own = html.unescape(text)
        assert "<h2>Deployments</h2>" in own and " prefill x " in own and "J per output token" in own
    finally:
        other.close()
