"""Measure it yourself, in a browser: this machine's probe imported through the catalogue page, measured roofs on the
roofline and the Measured roofs switch carried by a link into a new browser, the calculator's benchmark commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from core.catalogue.catalogue import load_catalogue
from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.present.text import si
from core.probe.document import ProbeDocument
from core.probe.methods import run_probe
from core.store import Store
from tests.helpers import metric, opened, rerun, screenshot
from tests.probe_docs import SmallNumpyBackend, probe_document

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _upload_probe(page, path) -> None:  # type: ignore[no-untyped-def]
    with rerun(page):  # a tab is bound to the link: choosing one reruns the page
        page.get_by_role("tab", name="Measured roofs").click()
    panel = page.get_by_role("tabpanel", name="Measured roofs")
    panel.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    # the file listed with its size once uploaded: a press of the form's button before then was lost (CI, under load)
    expect(panel.get_by_role("region", name="Probe document (JSON)")).to_contain_text(
        re.compile(rf"{re.escape(Path(path).name)}\s*[\d.]+\s*[KM]?B")
    )
    button = panel.get_by_role("button", name="Import probe")
    expect(button).to_be_enabled()
    with rerun(page):
        button.click()


def test_this_machine_probed_and_imported_through_the_catalogue_page(fresh_server, page, tmp_path):
    """The README's demo: the CPU probe's file (this machine measured on small buffers, tests/probe_docs.py), uploaded on
    the catalogue page, becomes a custom accelerator."""
    out = tmp_path / "probe.json"
    out.write_text(run_probe(SmallNumpyBackend(), quick=True).to_json(), encoding="utf-8")
    opened(page, fresh_server.url("catalogue"))
    _upload_probe(page, out)
    success = page.locator("[data-testid='stAlertContentSuccess']")
    expect(success).to_contain_text("as a new custom accelerator,")
    gpu_id = re.search(r"`?([a-z0-9.\-]+-probed)`?", success.inner_text()).group(1)  # type: ignore[union-attr]
    expect(page.get_by_role("tabpanel", name="Measured roofs").locator("[data-testid='stDataFrame']")).to_be_visible()
    screenshot(page, "catalogue-probe-imported")
    # the probed CPU is now a scenario's accelerator like any other (bf16 computes at its measured fp32 roof)
    opened(page, fresh_server.url(f"calculator?gpu={gpu_id}&model=llama-3.2-1b"))
    page.get_by_text("What if: the three moves").wait_for()
    assert metric(page, "Tokens/s per user") not in ("—", "")


def _h100_probe(tmp_path, share: float) -> tuple[str, ProbeDocument]:
    """A probe document of an H100 that measured `share` of its datasheet bandwidth and bf16 peak (figures chosen here)."""
    acc = load_catalogue(Store(tmp_path / "here.duckdb")).gpu("h100-sxm")
    doc = probe_document("NVIDIA H100 80GB HBM3", acc.bandwidth_bytes_per_s * share, {"bf16": (acc.peak_bf16 or 0) * share})
    path = tmp_path / "h100-probe.json"
    path.write_text(doc.to_json())
    return str(path), doc


def test_measured_roofs_on_the_roofline_and_through_a_link_in_a_new_browser(fresh_server, browser, tmp_path):
    """An H100 probe at 90%: the roofline says so under dashed roofs; a calculator link with measured=true, opened in
    a new browser context, shows the measured ceiling (read off the screen, computed here from the same catalogue)."""
    path, _ = _h100_probe(tmp_path, 0.9)
    first = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = first.new_page()
    opened(page, fresh_server.url("catalogue"))
    _upload_probe(page, path)
    expect(page.locator("[data-testid='stAlertContentSuccess']")).to_contain_text(
        "as a measured profile of h100-sxm: measured (2026-12-01): 90% of datasheet bandwidth"
    )
    opened(page, fresh_server.url("roofline?gpu=h100-sxm&model=llama-3.1-8b&batch=64"))
    expect(page.get_by_text("measured (2026-12-01): 90% of datasheet bandwidth, 90% of bf16 peak")).to_be_visible()
    expect(page.get_by_text("(measured)").first).to_be_attached()  # the dashed roof's legend entry
    screenshot(page, "roofline-measured-roofs")
    first.close()

    cat = load_catalogue(Store(fresh_server.db))
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=64)
    measured, datasheet = ceiling(cat.measured(), sc), ceiling(cat, sc)
    second = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = second.new_page()
    opened(page, fresh_server.url("calculator?gpu=h100-sxm&model=llama-3.1-8b&batch=64&measured=true"))
    page.get_by_text("What if: the three moves").wait_for()
    assert page.get_by_role("switch", name="Measured roofs").is_checked()
    assert metric(page, "Tokens/s total") == si(measured.tokens_per_s_total) != si(datasheet.tokens_per_s_total)
    code = page.locator("[data-testid='stCode']").filter(has_text="vllm bench serve").first
    expect(code).to_contain_text("--max-concurrency 64")
    screenshot(page, "calculator-measured-and-commands")
    second.close()
