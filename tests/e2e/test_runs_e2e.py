"""Browser: two runs imported through the measured page, compared, and the comparison's link opened in a new browser
context on the same server: the same runs, figures and table; its report holds them."""

from __future__ import annotations

import html
import re
import urllib.parse
from typing import Any

import pytest

from tests.helpers import FIXTURES, download_report, metrics, opened, rerun

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
TALL = {"width": 1400, "height": 2600}


def _import(page: Any, path: str, name: str) -> None:
    with rerun(page):
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(path)
    with rerun(page):
        page.get_by_role("textbox", name="Dataset name").fill(name)
        page.get_by_role("textbox", name="Dataset name").press("Enter")
    with rerun(page):
        page.get_by_role("button", name="Import").click()
    page.get_by_text(f"as {name}").first.wait_for()


def test_a_comparison_of_runs_opens_from_its_link_in_a_new_browser_context(fresh_server, browser, page, tmp_path):
    # vllm_serve_append.jsonl names its accelerator in --metadata (gpu=h100-sxm, tp=2); the same runs written on H200
    h100 = FIXTURES / "vllm_serve_append.jsonl"
    h200 = tmp_path / "h200_runs.jsonl"
    h200.write_text(h100.read_text().replace('"gpu": "h100-sxm"', '"gpu": "h200-sxm"'))
    page.set_viewport_size(TALL)
    opened(page, fresh_server.url("measured?ms_view=Your+datasets"))
    _import(page, str(h100), "before")
    _import(page, str(h200), "after")
    query = urllib.parse.urlencode({"ms_view": "Compare runs", "ms_runs": ["before (#1)", "after (#2)"]}, doseq=True)
    other = browser.new_context(viewport=TALL, accept_downloads=True)
    try:
        fresh = other.new_page()
        opened(fresh, fresh_server.url(f"measured?{query}"))
        assert metrics(fresh) == {"Runs": "2", "Scenarios every run holds": "2", "Unmatched rows": "0"}
        body = fresh.locator("[data-testid='stMain']").inner_text()
        assert "after (#2): 1.00× the tokens/s of before (#1)" in body
        assert "The runs differ in accelerator" in body
        chips = fresh.locator("[data-testid='stMultiSelect']").filter(has_text="Runs to compare").first.locator("[data-tag] span[title]")
        assert [t.strip() for t in chips.all_inner_texts()] == ["before (#1)", "after (#2)"]
        assert fresh.locator("[data-testid='stVegaLiteChart']").count() == 1
        name, text = download_report(fresh, tmp_path)
        own = html.unescape(text)  # table cells to 4 significant figures (core.present.report._cell): 2625.6 is 2,626
        assert re.search(r"<h1>Roofline report: Runs compared: before \(#1\) vs after \(#2\)</h1>", own)
        assert re.search(r"<td>Scenarios every run holds</td><td>2</td>", own)
        for value in ("849.8", "2,626", "NVIDIA H200 SXM 141GB", "NVIDIA H100 SXM5 80GB"):
            assert value in own, value
    finally:
        other.close()
