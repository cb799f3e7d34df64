"""Browser tests of the foundation: a fresh server on a deep link, the catalogue, a custom model."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.helpers import SEED, opened, rerun, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_fresh_server_deep_link_opens_the_linked_page_with_its_scenario(fresh_server, page):
    """The first request to a fresh server is a deep link: no 'Page not found', the right page, the link's scenario."""
    opened(page, fresh_server.url("ridges?gpu=b200&model=llama-3.1-70b&batch=64"))
    page.get_by_text("Batch 64, weights bf16").wait_for()
    assert page.get_by_text("Page not found").count() == 0
    assert page.locator("h1").first.inner_text() == "Ridge points"
    assert page.get_by_role("combobox", name="Accelerator", exact=True).input_value().startswith("NVIDIA B200")
    assert page.get_by_role("combobox", name="Model", exact=True).input_value() == "Llama 3.1 70B"
    screenshot(page, "deep-link-ridges")


def test_catalogue_lists_accelerators_and_models_with_sources(server, page):
    """The catalogue page shows the seeded accelerators and models (as many as the seed's tables hold), searchable: "h100"
    finds the seed's three H100s (SXM, PCIe, NVL)."""
    import csv

    from tests.helpers import SEED

    accelerators = list(csv.DictReader((SEED / "accelerators.csv").open(encoding="utf-8")))
    models = list(csv.DictReader((SEED / "models.csv").open(encoding="utf-8")))
    h100 = [a for a in accelerators if "h100" in (a["id"] + a["name"]).lower()]
    assert len(h100) == 3
    opened(page, server.url("catalogue"))
    page.get_by_text(f"of {len(accelerators)} accelerators").wait_for()
    page.get_by_role("textbox", name="Search accelerators").fill("h100")
    page.get_by_role("textbox", name="Search accelerators").press("Enter")
    page.get_by_text(f"3 of {len(accelerators)} accelerators").wait_for()
    screenshot(page, "catalogue-accelerators")
    with rerun(page):  # a tab is bound to the link: choosing one reruns the page
        page.get_by_role("tab", name="Models").click()
    page.get_by_text(f"of {len(models)} models").wait_for()
    screenshot(page, "catalogue-models")


def test_adding_a_custom_model_from_config_json(server, page, tmp_path):
    """Uploading a config.json adds a model that the scenario sidebar then offers."""
    cfg = json.loads((SEED / "models" / "llama-3.2-1b.json").read_text())
    cfg["num_hidden_layers"] = 20
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    opened(page, server.url("catalogue"))
    with rerun(page):  # a tab is bound to the link: choosing one reruns the page
        page.get_by_role("tab", name="Add your own").click()
    page.get_by_role("textbox", name="Name").nth(1).fill("Tiny Llama E2E")
    page.get_by_role("tabpanel", name="Add your own").locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.get_by_role("button", name="Add model").click()
    page.get_by_text("Added Tiny Llama E2E as").wait_for()
    expect(page.locator("[data-testid='stAlertContentSuccess']")).to_contain_text("20 layers")
    screenshot(page, "catalogue-custom-model")


def test_a_config_missing_a_field_is_refused_naming_it(server, page, tmp_path):
    """A config.json without hidden_size is refused with a message that names the field."""
    cfg = json.loads((SEED / "models" / "llama-3.2-1b.json").read_text())
    del cfg["hidden_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    opened(page, server.url("catalogue"))
    with rerun(page):  # a tab is bound to the link: choosing one reruns the page
        page.get_by_role("tab", name="Add your own").click()
    page.get_by_role("textbox", name="Name").nth(1).fill("Broken")
    page.get_by_role("tabpanel", name="Add your own").locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.get_by_role("button", name="Add model").click()
    page.get_by_text("hidden_size: missing").wait_for()
