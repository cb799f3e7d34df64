"""Browser test: upload a benchmark file on the measured page, see the table, the flag and the charts."""

from __future__ import annotations

import pytest

from tests.helpers import FIXTURES, Server, opened, rerun, screenshot, settle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_upload_generic_csv_shows_the_table_and_flags_the_impossible_row(fresh_server, page):
    """generic.csv: 11 measurements, one above its ceiling (warned, flagged), the refit's table, two charts."""
    opened(page, fresh_server.url("measured?ms_view=Your+datasets"))
    page.get_by_text("No datasets of yours yet").wait_for()
    screenshot(page, "measured-empty")
    with rerun(page):
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(FIXTURES / "generic.csv"))
    with rerun(page):
        page.get_by_role("textbox", name="Dataset name").fill("H100 and A100 decode")
        page.get_by_role("textbox", name="Dataset name").press("Enter")
    with rerun(page):
        page.get_by_role("button", name="Import").click()
    page.get_by_text("Imported 11 measurements (generic-csv) as H100 and A100 decode").wait_for()
    page.get_by_text("Rows above their ceiling: 1 measurement, drawn as red crosses").wait_for()
    page.locator("[data-testid='stDataFrame']").nth(1).wait_for()  # comparison and refit tables
    page.locator("[data-testid='stVegaLiteChart']").nth(1).wait_for()  # roofline and tokens/s against batch
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 2
    metrics = page.locator("[data-testid='stMetricValue']").all_inner_texts()
    assert metrics[:2] == ["11", "1"]
    screenshot(page, "measured-generic-csv")
    page.get_by_text("Rows above their ceiling: 1 measurement, drawn as red crosses").scroll_into_view_if_needed()
    screenshot(page, "measured-table")
    page.locator("[data-testid='stVegaLiteChart']").first.scroll_into_view_if_needed()
    screenshot(page, "measured-roofline")
    page.locator("[data-testid='stVegaLiteChart']").nth(1).scroll_into_view_if_needed()
    screenshot(page, "measured-batch-curves")
    page.get_by_text("Refit of the predicted model", exact=True).scroll_into_view_if_needed()
    screenshot(page, "measured-refit")


def test_a_bad_file_is_refused_with_file_row_column_and_problem(fresh_server, page, tmp_path):
    """A CSV with text in tokens_per_s gets one message naming all four, and no dataset appears."""
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu,model,batch,input_tokens,output_tokens,tokens_per_s\nh100-sxm,llama-3.1-8b,1,1024,128,fast\n")
    opened(page, fresh_server.url("measured?ms_view=Your+datasets"))
    with rerun(page):
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(bad))
    with rerun(page):
        page.get_by_role("button", name="Import").click()
    page.get_by_text("bad.csv: row 1, column tokens_per_s: not a number: 'fast'").wait_for()
    assert page.get_by_text("No datasets of yours yet").count() == 1
    screenshot(page, "measured-bad-file")


def test_read_only_mode_keeps_an_upload_in_its_browser_session_only(browser, page, tmp_path):
    """ROOFLINE_READ_ONLY=1: one browser session imports generic.csv and sees it; another, or the same tab reloaded, sees none; the file is unchanged."""
    from core.store import Store

    db = tmp_path / "demo.duckdb"
    Store(db).close()
    before = db.read_bytes()
    srv = Server(db, ROOFLINE_READ_ONLY="1")
    try:
        opened(page, srv.url("measured?ms_view=Your+datasets"))
        page.get_by_text("kept in this browser session only").wait_for()
        with rerun(page):
            page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(FIXTURES / "generic.csv"))
        with rerun(page):
            page.get_by_role("button", name="Import").click()
        page.get_by_text("Imported 11 measurements (generic-csv) as generic.csv (kept in this session only)").wait_for()
        page.get_by_text("Rows above their ceiling: 1 measurement, drawn as red crosses").wait_for()
        page.locator("[data-testid='stVegaLiteChart']").nth(1).wait_for()
        assert page.locator("[data-testid='stMetricValue']").all_inner_texts()[:2] == ["11", "1"]
        screenshot(page, "measured-read-only-session")

        other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        opened(other, srv.url("measured?ms_view=Your+datasets"))
        other.get_by_text("No datasets of yours yet").wait_for()
        assert other.get_by_text("generic.csv").count() == 0
        other.context.close()
        page.reload()  # a reload is a new session: the upload is gone, as the note says
        settle(page, 1)
        page.get_by_text("No datasets of yours yet").wait_for()
    finally:
        srv.stop()
    assert db.read_bytes() == before
