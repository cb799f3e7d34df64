"""Evidence, in a browser: the published measurements the page opens on, a filtered link in a new browser, files a user holds.

Every figure checked is read off the screen and compared with the shipped CSV or the fixture, counted here.
"""

from __future__ import annotations

import csv
import re

import pytest
from playwright.sync_api import expect

from tests.helpers import FIXTURES, SEED, metric, opened, rerun, screenshot, still

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
SHIPPED = list(csv.DictReader((SEED / "reference_measurements.csv").open(encoding="utf-8")))


def test_the_measured_page_opens_on_the_published_set_and_a_filtered_link_reproduces_it(fresh_server, browser, page):
    opened(page, fresh_server.url("measured"))
    assert metric(page, "Published measurements") == f"{len(SHIPPED):,}"
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for()
    screenshot(page, "measured-published")
    # filter to one accelerator and one framework through the page's own controls
    main = page.locator("[data-testid='stMain']")
    with rerun(page):
        main.get_by_role("combobox", name="Accelerator").click()
        page.keyboard.type("M2 Ultra")
        page.get_by_role("option", name="Apple M2 Ultra").first.click()
        page.keyboard.press("Escape")
    # the framework's option, chosen again where a loaded machine lost the choice: in two full runs of six the filter
    # never took (once the rerun count never arrived, once the page settled on the accelerator's 71 rows, the option's
    # click landing on a dropdown the accelerator's rerun redrew); a choice the page never takes still fails, and the
    # figure it must show is waited for, not a count of reruns
    expected = sum(1 for r in SHIPPED if r["gpu"] == "m2-ultra" and r["framework"] == "llama.cpp")
    figure = page.locator("[data-testid='stMetric']").filter(has=page.get_by_text("Published measurements", exact=True))
    chosen = main.locator("[data-testid='stMultiSelect']").filter(has_text="Framework").locator("[data-tag] span[title='llama.cpp']")
    for attempt in range(3):
        if chosen.count():  # the last choice did take, late: its figure is what is left to wait for
            expect(figure).to_contain_text(f"{expected:,}")
            break
        with rerun(page, 0):
            main.get_by_role("combobox", name="Framework").click()
            page.get_by_role("option", name="llama.cpp", exact=True).click()
            page.keyboard.press("Escape")
        try:
            expect(figure).to_contain_text(f"{expected:,}", timeout=30_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    assert chosen.count() == 1  # the chip the loop looks for is the one chosen
    expect(page).to_have_url(re.compile(r"ms_ref_frameworks=llama\.cpp"))
    link = page.url
    assert "ms_ref_gpus=" in link
    screenshot(page, "measured-published-filtered")
    other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()  # type: ignore[attr-defined]
    opened(other, link)
    assert metric(other, "Published measurements") == f"{expected:,}"
    other.context.close()


def test_the_scorecard_and_the_evidence_beside_a_scenario(fresh_server, page):
    opened(page, fresh_server.url("measured"))
    page.get_by_text("Accuracy scorecard").scroll_into_view_if_needed()
    expect(page.get_by_text("Fitted on the other publishers' campaigns, the predicted model is off by")).to_be_visible()
    # the predicted-against-measured chart is square: its y = x line, which runs corner to corner of the plot, as wide
    # as it is high and at least 400 px (a title wider than the chart once shrank the plot to about 110 px wide of 520)
    chart = page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart']").last
    chart.scroll_into_view_if_needed()
    chart.locator("svg g.mark-symbol path").first.wait_for()
    box = chart.locator("svg g.mark-line path").first.bounding_box()
    assert box and abs(box["width"] - box["height"]) <= 0.05 * box["height"] and box["width"] >= 400, box
    screenshot(page, "measured-scorecard")
    n = sum(1 for r in SHIPPED if r["gpu"] == "h100-sxm" and r["model"] == "llama-3.1-8b")
    opened(page, fresh_server.url("calculator"))
    expect(page.get_by_text(f"published: {n} measurements of Llama 3.1 8B on NVIDIA H100 SXM5 80GB")).to_be_visible()
    with rerun(page, requests=0):
        page.get_by_text("The published measurements").first.click()
    screenshot(page, "calculator-evidence")


def test_a_vllm_log_uploaded_as_txt_imports_with_the_lengths_typed(fresh_server, page, tmp_path):
    """The V1 engine log names the model and tp; the lengths are typed in the page's fields."""
    log = tmp_path / "server.txt"
    log.write_bytes((FIXTURES / "vllm_engine_v1.log").read_bytes())
    opened(page, fresh_server.url("measured?ms_view=Your+datasets"))
    with rerun(page):
        page.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(log))
    form = page.locator("[data-testid='stExpander']").first  # the import form (the typed measurement's form is below)
    with rerun(page):
        form.get_by_role("combobox", name="Accelerator").click()
        page.keyboard.type("h100-sxm")
        page.get_by_role("option", name="h100-sxm", exact=True).click()
    with rerun(page):
        page.get_by_role("spinbutton", name="Input tokens per request").first.fill("1024")
        page.get_by_role("spinbutton", name="Input tokens per request").first.press("Tab")
    with rerun(page):
        page.get_by_role("spinbutton", name="Output tokens per request").first.fill("256")
        page.get_by_role("spinbutton", name="Output tokens per request").first.press("Tab")
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("measurements (vllm-log) as server.txt").wait_for()
    screenshot(page, "measured-vllm-log")


def test_the_column_mapping_appears_on_upload_and_offers_only_fitting_columns(fresh_server, page, tmp_path):
    odd = tmp_path / "odd.csv"
    odd.write_text(
        "accelerator,model,concurrency,notes,prompt,gen_len,tok_s\n"
        "h100-sxm,llama-3.1-8b,8,first run,512,128,1000.5\n"
        "h100-sxm,llama-3.1-8b,16,second,512,128,1800\n"
    )
    opened(page, fresh_server.url("measured?ms_view=Your+datasets"))
    with rerun(page):
        page.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(odd))
    expect(page.get_by_text("Map the columns")).to_be_visible()  # before any Import is pressed
    page.get_by_role("combobox", name="input_tokens").click()
    offered = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    assert "prompt" in offered and "notes" not in offered and "accelerator" not in offered
    screenshot(page, "measured-mapping")
    # each missing column proposes the header whose name says what it holds (core.evidence.formats.generic._suggest)
    for column, header in (("input_tokens", "prompt"), ("output_tokens", "gen_len"), ("tokens_per_s", "tok_s")):
        assert page.get_by_role("combobox", name=column).input_value() == header, column
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported 2 measurements (generic-csv)").wait_for()


def test_one_measurement_typed_in_the_form(fresh_server, page):
    """The seed's vLLM figure typed by hand: Llama 3.1 70B on 2 H100s, batch 32, 1,530 tokens/s."""
    opened(page, fresh_server.url("measured?ms_view=Your+datasets"))
    page.get_by_text("Type one measurement").click()
    form = page.locator("[data-testid='stForm']")
    still(form)  # the expander has slid open
    form.get_by_role("spinbutton", name="Accelerator count").fill("2")
    # typed into the box whole (keys typed at once after the click that focuses it can land before the box opens its
    # list, which then closes again)
    form.get_by_role("combobox", name="Model").fill("Llama 3.1 70B")
    page.get_by_role("option", name="Llama 3.1 70B", exact=True).click()
    form.get_by_role("spinbutton", name="Batch (sequences)").fill("32")
    form.get_by_role("spinbutton", name="Tokens/s").fill("1530")
    with rerun(page):
        form.get_by_role("button", name="Add this measurement").click()
    page.get_by_text("Added as dataset Llama 3.1 70B on 2 x NVIDIA H100 SXM5 80GB, batch 32 (typed)").wait_for()
    screenshot(page, "measured-typed")
