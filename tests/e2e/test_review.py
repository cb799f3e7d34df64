"""Design-review mode in a browser: links that reproduce a view, presentation mode, the HTML report, the tour."""

from __future__ import annotations

import html.parser
import re
import urllib.parse

import pytest
from playwright.sync_api import expect

from tests.helpers import metric, open_sidebar, opened, screenshot, share_link

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LINK = "roofline?gpu=b200&model=llama-3.1-70b&num_gpus=2&batch=64&context=8192&rf_precisions=bf16,fp8&rf_eff_b=0.8"


def test_a_link_on_a_fresh_server_reproduces_the_view(fresh_server, page):
    """Opening a shared link in a new browser on a new server restores the scenario, the page's controls and its figures."""
    opened(page, fresh_server.url(LINK))
    page.get_by_text("Batch 64 · decode matmul").wait_for()
    assert page.get_by_role("combobox", name="Accelerator", exact=True).input_value().startswith("NVIDIA B200")
    assert page.get_by_role("combobox", name="Model", exact=True).input_value() == "Llama 3.1 70B"
    expect(page.get_by_role("spinbutton", name="GPUs (tensor parallel)")).to_have_value("2")
    expect(page.get_by_role("spinbutton", name="Context (tokens)")).to_have_value("8192")
    # the page's own controls: two precisions and a derated bandwidth
    expect(page.locator("[data-testid='stMultiSelect']").filter(has_text="Precisions").get_by_text("fp8")).to_have_count(1)
    expect(page.locator("[data-testid='stSlider']").filter(has_text="Bandwidth efficiency")).to_contain_text("0.80")
    # the share link carries all of it (the link above was in an older form: a comma list, the old name of the bandwidth control)
    link = share_link(page, containing="eff_bandwidth=0.8")
    parts = ("gpu=b200", "model=llama-3.1-70b", "num_gpus=2", "batch=64", "context=8192", "rf_precisions=bf16", "rf_precisions=fp8")
    for part in (*parts, "eff_bandwidth=0.8"):
        assert part in link
    expect(page.locator("[data-testid='stMetric']").first).to_contain_text("Decode at batch 64: memory-bound")
    screenshot(page, "review-link-roofline")


def test_presentation_mode_hides_the_controls_and_leads_with_the_figure(server, page):
    """With present=1 the sidebar's scenario widgets fold into one line, the page controls fold away, the headline metric leads
    (out of the seed's accelerators with a dense bf16 peak)."""
    import csv

    from tests.helpers import SEED

    with_bf16 = sum(1 for a in csv.DictReader((SEED / "accelerators.csv").open(encoding="utf-8")) if a["bf16_tflops"])
    opened(page, server.url("ridges?batch=256&present=1"))
    page.get_by_text("Compute-bound at batch 256").wait_for()
    assert page.get_by_role("combobox", name="Accelerator", exact=True).count() == 0
    assert page.get_by_role("switch", name="Presentation mode").is_checked()
    expect(page.locator("[data-testid='stMetricValue']").first).to_contain_text(f"of {with_bf16} accelerators")
    page.locator("[data-testid='stVegaLiteChart']").nth(1).wait_for()
    screenshot(page, "review-presentation-ridges")
    open_sidebar(page)  # presentation mode starts with the sidebar collapsed
    page.locator("[data-testid='stSidebar']").get_by_text("Presentation mode").click()
    page.get_by_role("combobox", name="Accelerator", exact=True).wait_for()
    expect(page.get_by_role("spinbutton", name="Batch (sequences)")).to_have_value("256")


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        self.tags.append(tag)

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        self.chunks.append(data)


def test_the_report_parses_as_html_and_holds_the_figures_on_screen(server, page, tmp_path):
    """The sidebar's report is one HTML document with the overview's headline figures, charts as SVG and sources."""
    opened(page, server.url("?gpu=h100-sxm&model=llama-3.1-70b&num_gpus=2&batch=8&context=1024"))
    # the figures read below must be the linked scenario's, not a run from before the link applied
    expect(page.get_by_role("heading", name=re.compile(r"Llama 3\.1 70B on 2 ×"))).to_be_visible()
    expect(page.get_by_role("spinbutton", name="Batch (sequences)")).to_have_value("8")
    metrics = page.locator("[data-testid='stMetric']")
    metrics.first.wait_for()
    on_screen = {}
    for i in range(metrics.count()):
        label = metrics.nth(i).locator("[data-testid='stMetricLabel']").inner_text().strip()
        on_screen[label] = metrics.nth(i).locator("[data-testid='stMetricValue']").inner_text().strip()
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("Report")).click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    text = path.read_text(encoding="utf-8")
    parser = _Text()
    parser.feed(text)
    body = " ".join(parser.chunks)
    assert text.startswith("<!DOCTYPE html>")
    assert parser.tags.count("svg") >= 2
    assert "script" not in parser.tags
    assert on_screen["Tokens/s per user"] in body
    assert on_screen["Tokens/s total"] in body
    assert on_screen["Time to first token"] in body
    assert "https://" in body and "Assumptions" in body
    page.goto(path.as_uri())
    screenshot(page, "review-report")


def test_the_guided_tour_walks_every_step(server, page):
    """Each tour step renders with its check-yourself questions; answers open on demand."""
    opened(page, server.url("tour?gpu=h100-sxm&model=llama-3.1-8b"))
    page.get_by_text("Check yourself").wait_for()
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for()
    screenshot(page, "tour-step-1")
    page.get_by_text("6. Attention does not batch").click()
    page.get_by_text("whatever the batch").or_(page.get_by_text("at any batch")).first.wait_for()
    page.get_by_text("Why does batching not raise attention").click()
    page.get_by_text("the ratio stays at about 2g").wait_for()
    screenshot(page, "tour-step-6")


def test_a_refit_link_on_another_accelerator_opens_refitted_in_a_new_browser(fresh_server, browser, tmp_path):
    """An older-form link (id, present=1) carrying a refit of the predicted model for an MI300X with SGLang, opened as the
    first request of a fresh server in a new browser context: the refit is on, the expected figure is the refitted one, the
    ceiling does not move, and the share link carries the refit."""
    import numpy as np

    from core.catalogue.catalogue import load_catalogue
    from core.evidence.predictor import with_predictor
    from core.evidence.refit import with_shift_text
    from core.model import predicted as pm
    from core.model.ceilings import ceiling
    from core.model.scenario import Scenario
    from core.present.text import si
    from core.store import Store

    shift = np.zeros(pm.NP)
    shift[pm.P["eta_mem_gemm"]] = -1.0
    text = "mi300x|SGLang|" + ",".join(f"{x:g}" for x in shift)
    cat = with_predictor(load_catalogue(Store(tmp_path / "here.duckdb")))
    sc = Scenario(gpu="mi300x", model="llama-3.1-70b", batch=4, framework="SGLang")
    refitted = ceiling(cat, sc, predictor=with_shift_text(cat.predictor, text)[0])
    shipped = ceiling(cat, sc)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    query = urllib.parse.urlencode({"gpu": "mi300x", "model": "llama-3.1-70b", "batch": 4, "framework": "SGLang", "refit": text})
    opened(page, fresh_server.url(f"calculator?{query}&present=1"))
    page.get_by_text("What if: the three moves").wait_for()
    assert page.get_by_role("switch", name="Presentation mode").is_checked()
    assert page.get_by_role("switch", name="Refit on your data").is_checked()
    assert metric(page, "Expected tokens/s total") == si(refitted.predicted_tokens_per_s_total)
    assert si(refitted.predicted_tokens_per_s_total) != si(shipped.predicted_tokens_per_s_total)
    assert metric(page, "Tokens/s per user") == si(shipped.tokens_per_s_per_user)  # the ceiling is the datasheet's
    link = share_link(page)
    for part in ("gpu=mi300x", "model=llama-3.1-70b", "batch=4", "framework=SGLang", "refit=mi300x%7CSGLang%7C", "present=true"):
        assert part in link, link
    screenshot(page, "review-refit-link-mi300x")
    context.close()


def test_a_link_value_a_control_cannot_take_is_named_and_a_default_one_is_not(fresh_server, browser):
    """A labelled option at its default (cmp_sort=$ per million output tokens, compute=auto) opens quietly; cmp_sort=cheapest
    opens with a message naming it."""
    compare = "compare?cmp_gpus=h100-sxm&cmp_gpus=mi300x&cmp_mode=service+target"
    for path, message in (
        (f"{compare}&cmp_sort=%24 per million output tokens", None),
        (f"{compare}&compute=auto", None),
        (f"{compare}&cmp_sort=cheapest", "link parameter cmp_sort='cheapest' is not a value this control takes"),
    ):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        opened(page, fresh_server.url(path))
        page.locator(
            "[data-testid='stDataFrame']:visible"
        ).last.wait_for()  # the comparison (the price editor above it and the published measurements below are folded)
        expect(page.get_by_role("radio", name="service target")).to_be_checked()
        warnings = page.locator("[data-testid='stAlertContentWarning']").all_inner_texts()
        if message is None:
            assert not [w for w in warnings if "link parameter" in w], warnings
        else:
            assert any(message in w for w in warnings), warnings
        context.close()
