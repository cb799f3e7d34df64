"""Browser: files named as their tools name them are taken by the measured page's uploader and imported: guidellm's
benchmarks.yaml (the accelerator picked in the form) and a llama-server log (which names its own device and model)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import FIXTURES, opened, rerun

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _upload(page: Any, path: str) -> None:
    with rerun(page):
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(path)


def test_a_yaml_and_a_log_are_uploaded_by_their_own_names(fresh_server, page, tmp_path):
    page.set_viewport_size({"width": 1400, "height": 2400})
    opened(page, fresh_server.url("measured?ms_view=Your+datasets"))
    yaml = tmp_path / "benchmarks.yaml"
    yaml.write_bytes((FIXTURES / "guidellm_v0.2_benchmarks.yaml").read_bytes())
    _upload(page, str(yaml))
    main = page.locator("[data-testid='stMain']")
    with rerun(page):
        main.get_by_role("combobox", name="Accelerator").first.click()
        page.keyboard.type("h100-sxm")
        page.get_by_role("option", name="h100-sxm", exact=True).first.click()
    with rerun(page):
        page.get_by_role("button", name="Import").click()
    # the file's two benchmarks: concurrency 4 and 5 (guidellm_v0.2_benchmarks.yaml, `streams`)
    page.get_by_text("Imported 2 measurements (guidellm-yaml) as benchmarks.yaml").first.wait_for()
    log = tmp_path / "server.log"
    log.write_bytes((FIXTURES / "llama_server.log").read_bytes())
    with rerun(page):
        main.get_by_role("combobox", name="Accelerator").first.click()
        page.get_by_role("option", name="(from the file)").first.click()
    _upload(page, str(log))
    with rerun(page):
        page.get_by_role("button", name="Import").click()
    # two requests' timings (lines 10-11 and 14-15), each a prefill and a decode; the device from line 5
    page.get_by_text("Imported 4 measurements (llama-server-log) as server.log").first.wait_for()
    assert "read as NVIDIA H100 SXM5 80GB" in main.inner_text()
