"""The catalogue's forms in a browser: errors in the form's words and units, the model form never using a stale upload,
and a custom accelerator added without a year shown on the ridge page whatever its year filter."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from playwright.sync_api import expect

from core.store import SEED
from tests.helpers import opened, rerun, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MAIN = "[data-testid='stMain']"


def _open_forms(server, page):  # type: ignore[no-untyped-def]
    opened(page, server.url("catalogue"))
    with rerun(page):  # a tab is bound to the link: choosing one reruns the page
        page.locator(MAIN).get_by_role("tab", name="Add your own").click()
    forms = page.locator(MAIN).locator("[data-testid='stForm']")
    expect(forms.nth(0).get_by_role("button", name="Add accelerator")).to_be_visible()
    expect(forms.nth(1).get_by_role("button", name="Add model")).to_be_visible()
    return forms.nth(0), forms.nth(1)


def _config(name: str) -> dict:
    return json.loads((SEED / "models" / f"{name}.json").read_text(encoding="utf-8"))


def test_accelerator_form_errors_name_the_field_in_its_unit(server, page):
    """No name, 0.0005 TB/s and 1 W: three sentences in the form's words, none with a code name or an SI figure."""
    gpu_form, _ = _open_forms(server, page)
    gpu_form.get_by_role("spinbutton", name="Bandwidth (TB/s)").fill("0.0005")
    gpu_form.get_by_role("spinbutton", name="Power (W)").fill("1")
    with rerun(page):
        gpu_form.get_by_role("button", name="Add accelerator").click()
    alert = page.locator(MAIN).locator("[data-testid='stAlert']").filter(has_text="Not added")
    expect(alert).to_contain_text("Name is empty: give the accelerator a name")
    expect(alert).to_contain_text("Bandwidth must be at least 0.001 TB/s (got 0.0005 TB/s)")  # BANDWIDTH_RANGE[0] = 1e9 B/s
    expect(alert).to_contain_text("Power must be at least 5 W (got 1 W)")
    text = alert.inner_text()
    for internal in ("bandwidth_bytes_per_s", "power_w", "Input should", "String should", "'custom'"):
        assert internal not in text
    alert.scroll_into_view_if_needed()
    screenshot(page, "catalogue-accelerator-form-errors")


def test_invalid_pasted_json_names_the_place_once(server, page):
    """Pasted text with a missing comma: 'the pasted config.json is not valid JSON: line 3, column 5', said once."""
    _, model_form = _open_forms(server, page)
    model_form.get_by_role("textbox", name="Name").fill("Broken paste")
    model_form.get_by_role("textbox", name="…or paste config.json").fill('{\n  "a": 1\n    "b": 2\n}')
    with rerun(page):
        model_form.get_by_role("button", name="Add model").click()
    alert = page.locator(MAIN).locator("[data-testid='stAlert']").filter(has_text="Not added")
    expect(alert).to_contain_text("Not added: the pasted config.json is not valid JSON: line 3, column 5: Expecting ',' delimiter")
    assert alert.inner_text().count("config.json") == 1
    screenshot(page, "catalogue-model-form-error")


def test_the_model_form_uses_the_pasted_text_over_a_stale_upload_and_never_a_removed_one(fresh_server, page, tmp_path):
    """Upload Llama 3.2 1B (16 layers) and add it; then paste Qwen3 8B's config with the file still there: the pasted
    text is used (36 layers) and the note says the upload was not; remove the file and paste bad JSON: the text's error."""
    small, other = _config("llama-3.2-1b"), _config("qwen3-8b")
    assert small["num_hidden_layers"] != other["num_hidden_layers"]
    path = tmp_path / "small.json"
    path.write_text(json.dumps(small), encoding="utf-8")
    _, model_form = _open_forms(fresh_server, page)
    model_form.get_by_role("textbox", name="Name").fill("Uploaded small")
    model_form.locator("input[type='file']").set_input_files(str(path))
    model_form.get_by_text("small.json").wait_for()
    with rerun(page):
        model_form.get_by_role("button", name="Add model").click()
    main = page.locator(MAIN)
    expect(main.locator("[data-testid='stAlert']").filter(has_text="Added Uploaded small")).to_contain_text(
        f"from the uploaded small.json ({small['num_hidden_layers']} layers"
    )
    # the file stays in the uploader; the user pastes another config and a new name
    model_form.get_by_role("textbox", name="Name").fill("Pasted other")
    model_form.get_by_role("textbox", name="…or paste config.json").fill(json.dumps(other))
    with rerun(page):
        model_form.get_by_role("button", name="Add model").click()
    expect(main.locator("[data-testid='stAlert']").filter(has_text="Used the pasted text")).to_contain_text(
        "the uploaded small.json, from an earlier try, was not used"
    )
    expect(main.locator("[data-testid='stAlert']").filter(has_text="Added Pasted other")).to_contain_text(
        f"from the pasted text ({other['num_hidden_layers']} layers"
    )
    # remove the file (×), paste bad JSON: the error is the text's, the removed file is not used
    model_form.get_by_role("button", name="Remove small.json").click()
    model_form.get_by_role("textbox", name="Name").fill("After removal")
    model_form.get_by_role("textbox", name="…or paste config.json").fill("{ nope")
    with rerun(page):
        model_form.get_by_role("button", name="Add model").click()
    expect(main.locator("[data-testid='stAlert']").filter(has_text="Not added")).to_contain_text(
        "the pasted config.json is not valid JSON: line 1, column 3"
    )


def test_a_custom_accelerator_added_without_a_year_is_on_the_ridge_page(fresh_server, page):
    """Add 'Yearless chip' (500 TFLOP/s bf16, 2 TB/s: ridge 250) with the year emptied; the ridge page, its year filter
    narrowed to 2024, still draws it and says it is shown for having no year."""
    gpu_form, _ = _open_forms(fresh_server, page)
    year = gpu_form.get_by_role("textbox", name="Year")
    expect(year).to_have_value(str(dt.date.today().year))  # the default: this year
    gpu_form.get_by_role("textbox", name="Name").fill("Yearless chip")
    gpu_form.get_by_role("spinbutton", name="Bandwidth (TB/s)").fill("2")
    gpu_form.get_by_role("spinbutton", name="bf16 dense (TFLOP/s)").fill("500")
    year.fill("")
    with rerun(page):
        gpu_form.get_by_role("button", name="Add accelerator").click()
    expect(page.locator(MAIN).locator("[data-testid='stAlert']").filter(has_text="Added")).to_contain_text(
        "Added Yearless chip as yearless-chip, no year."
    )
    opened(page, fresh_server.url("ridges?rd_year=2024&rd_year=2024"))
    chart = page.locator(MAIN).locator("[data-testid='stVegaLiteChart']").first
    expect(chart.locator("svg text").filter(has_text="Yearless chip")).to_have_count(1)
    expect(page.locator(MAIN).get_by_text("1 accelerator without a year is shown whatever the year filter.")).to_be_visible()
    expect(chart.locator("svg text").filter(has_text="NVIDIA H100 SXM5 80GB")).to_have_count(0)  # 2022: filtered out
    screenshot(page, "ridges-custom-yearless")
