"""Every page's link reproduces what is on screen: each control changed through the UI, the share link (and the address
bar) opened in a new browser context on another server that never saw them, every headline figure, heading, chart
export and table download compared."""

from __future__ import annotations

import html.parser
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.helpers import WAIT_MS, Server, rerun, screenshot, settle, share_link
from tests.helpers import opened as _opened

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

VIEW = {"width": 1600, "height": 2400}


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Where the controls are changed."""
    srv = Server(tmp_path_factory.mktemp("origin") / "store.duckdb")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Where the links are opened: its own store, and no request before the first link."""
    srv = Server(tmp_path_factory.mktemp("replay") / "store.duckdb")
    yield srv
    srv.stop()


# -- driving the controls as a user would: each action waits for the rerun it asks for (tests/helpers.py) ----------


def _main(page: Any) -> Any:
    return page.locator("[data-testid='stMain']")


def opened(page: Any, link: str) -> None:
    """Go to a page and wait until its first run has drawn it."""
    _opened(page, link)
    _main(page).locator("h1").first.wait_for()


def pick(page: Any, label: str, option: str) -> None:
    """Choose an option of a selectbox or add one to a multiselect, by its text."""
    box = _main(page).get_by_role("combobox", name=label, exact=True)
    with rerun(page):
        box.click()
        page.keyboard.type(option)  # the list is filtered to it (a long one shows only its first options)
        page.get_by_role("option", name=option, exact=True).click()
        page.keyboard.press("Escape")


def unpick(page: Any, label: str, option: str) -> None:
    """Remove a chosen option of a multiselect (its chip's cross)."""
    field = _main(page).locator("[data-testid='stMultiSelect']").filter(has_text=label).first
    with rerun(page):
        field.locator(f"button[aria-label='Remove {option}']").click()


def number(page: Any, label: str, value: float | int) -> None:
    box = _main(page).get_by_role("spinbutton", name=label, exact=True)
    with rerun(page):
        box.fill(str(value))
        box.press("Enter")


def slide(page: Any, label: str, key: str, times: int = 1) -> None:
    """Move a slider's thumb with the keyboard, one step a press (Home and End to its ends). Each press commits its
    value, a rerun each: the next press waits for it (a press while the run draws the slider may be lost)."""
    thumb = _main(page).get_by_role("slider", name=label).first
    thumb.focus()
    for _ in range(times):
        with rerun(page):
            thumb.press(key)


def choose(page: Any, group: str, option: str) -> None:
    """A radio button of the group labelled `group`."""
    with rerun(page):
        _main(page).locator("[data-testid='stRadio']").filter(has_text=group).get_by_text(option, exact=True).click()


def switch(page: Any, label: str) -> None:
    """A toggle, clicked on its label (the switch itself is drawn over its hidden input)."""
    with rerun(page):
        _main(page).get_by_text(label, exact=True).click()


def sidebar_number(page: Any, label: str, value: int) -> None:
    box = page.locator("[data-testid='stSidebar']").get_by_role("spinbutton", name=label, exact=True)
    with rerun(page):
        box.fill(str(value))
        box.press("Enter")


def sidebar_pick(page: Any, label: str, option: str) -> None:
    with rerun(page):
        page.locator("[data-testid='stSidebar']").get_by_role("combobox", name=label, exact=True).click()
        page.keyboard.type(option)
        page.get_by_role("option", name=option, exact=True).click()


def _as_number(text: str) -> float | str:
    """A link value as a number where it is one: Streamlit writes a whole float as 4 or 4.0 (the same value)."""
    try:
        return float(text)
    except ValueError:
        return text


def _missing(url: str, wanted: dict[str, list[str]]) -> dict[str, list[str]]:
    query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    return {k: v for k, v in wanted.items() if sorted(map(_as_number, query.get(k, []))) != sorted(map(_as_number, v))}


def link_has(page: Any, wanted: dict[str, list[str]]) -> dict[str, list[str]]:
    """Wait until the address bar carries every wanted parameter value; returns its query."""
    try:
        page.wait_for_url(lambda url: not _missing(url, wanted), timeout=WAIT_MS)
    except PlaywrightTimeout:
        raise AssertionError(f"the link lacks {_missing(page.url, wanted)}; it is {page.url}") from None
    return urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)


# -- what a page shows ----------------------------------------------------------------------------


def _svg_text(svg: str) -> str:
    return " ".join(html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg))


#: The main area's visible headline figures (label -> value), headings and markdown texts, read in one go (visible as
#: Playwright's is_visible() has it: drawn with a box and not hidden by a style).
READ = """() => {
  const main = document.querySelector("[data-testid='stMain']");
  const visible = (e) => {
    if (e.checkVisibility && !e.checkVisibility()) return false;
    if (getComputedStyle(e).visibility !== "visible") return false;
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const all = (id) => [...main.querySelectorAll(`[data-testid='${id}']`)].filter(visible);
  const text = (e) => e.innerText.trim();
  const metrics = {};
  for (const box of all("stMetric")) {
    metrics[text(box.querySelector("[data-testid='stMetricLabel']"))] = text(box.querySelector("[data-testid='stMetricValue']"));
  }
  return [metrics, all("stHeading").map(text), all("stMarkdownContainer").map(text)];
}"""

FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def shown(page: Any, tmp_path: Path, *, downloads: bool = True) -> dict[str, Any]:
    """The page's headline figures (metric label -> value), headings, markdown text, and every visible chart's SVG export
    and table's CSV download (file name -> text)."""
    main = _main(page)
    settle(page)  # every rerun asked for is drawn (a link in an older form reruns the page once)
    now = page.evaluate(READ)
    while True:  # read again after two more frames: the same, or read until it is
        page.evaluate(FRAMES)
        settle(page)
        again = page.evaluate(READ)
        if again == now:
            break
        now = again
    metrics, headings, text = now
    files: dict[str, str] = {}
    if downloads:
        buttons = main.locator("[data-testid='stDownloadButton'] button").filter(has_text=re.compile(r"(SVG|CSV)$"))
        for i in range(buttons.count()):
            button = buttons.nth(i)
            if not button.is_visible():
                continue
            with rerun(page, requests=0), page.expect_download() as info:  # a CSV button reruns the page
                button.click()
            path = tmp_path / f"{len(files)}-{info.value.suggested_filename}"
            info.value.save_as(path)
            # the SVG renderer numbers its clip paths across renders in a process: the numbers are no part of the chart
            files[info.value.suggested_filename] = re.sub(r"\b(clip|gradient|pattern)\d+", r"\1", path.read_text(encoding="utf-8"))
    return {"metrics": metrics, "headings": headings, "text": text, "files": files}


def on(server: Server, link: str) -> str:
    """The same link on another server."""
    parts = urllib.parse.urlparse(link)
    return server.url(parts.path.lstrip("/") + (f"?{parts.query}" if parts.query else ""))


def links_of(page: Any) -> dict[str, str]:
    """The page's share link (the sidebar's share panel) and its address bar."""
    links = {"share": share_link(page), "address": page.url}
    assert "?" in links["share"], links
    return links


def reproduced(browser: Any, replay: Server, links: dict[str, str], before: dict[str, Any], tmp_path: Path, name: str) -> Any:
    """Open the share link and the address bar's link in new browser contexts on the replay server: each shows what
    `before` holds. Returns the page of the share link (still open) for further checks."""
    kept = None
    for kind, link in links.items():
        context = browser.new_context(viewport=VIEW, accept_downloads=True)
        other = context.new_page()
        _opened(other, on(replay, link))
        after = shown(other, tmp_path / kind)
        for part in ("metrics", "headings", "text"):
            assert after[part] == before[part], (kind, part, link)
        assert after["files"].keys() == before["files"].keys(), (kind, link)
        for file, body in before["files"].items():
            assert after["files"][file] == body, (kind, file, link)
        if kind == "share":
            screenshot(other, f"link-{name}")
            kept = other
        else:
            context.close()
    return kept


# -- the pages --------------------------------------------------------------------------------------


def test_the_calculator_s_every_option_travels_and_its_report_is_of_the_page(origin, replay, browser, tmp_path):
    """Draft length 4, acceptance, draft model, both efficiencies, overhead, memory reserve 0 %, a price: the link
    reproduces the figures (the speculative ceiling, computed here independently), the charts and the what-ifs; the
    report is the page's (its tokens/s with speculative decoding) and the exported chart says what it is of."""
    from core.catalogue.catalogue import load_catalogue
    from core.model.ceilings import ceiling
    from core.model.scenario import Scenario
    from core.present.text import si
    from core.store import Store

    context = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = context.new_page()
    opened(page, origin.url("calculator"))
    sidebar_number(page, "Batch (sequences)", 8)
    number(page, "Draft length (tokens)", 4)
    slide(page, "Acceptance rate", "ArrowRight", 2)  # 0.70 -> 0.80
    pick(page, "Draft model", "Llama 3.2 3B")
    slide(page, "Bandwidth efficiency", "ArrowLeft", 2)  # 1.00 -> 0.90
    slide(page, "Compute efficiency", "ArrowLeft", 4)  # 1.00 -> 0.80
    number(page, "Overhead per step (ms)", 0.5)
    slide(page, "Memory reserve (%)", "Home")  # 10 % -> 0 %
    number(page, "Price per GPU-hour (USD)", 2.5)
    wanted = {
        "batch": ["8"],
        "spec_draft_len": ["4"],
        "spec_acceptance": ["0.8"],
        "spec_draft_model": ["Llama 3.2 3B"],
        "eff_bandwidth": ["0.9"],
        "eff_compute": ["0.8"],
        "overhead_ms": ["0.5"],
        "reserve_pct": ["0"],
        "usd_per_gpu_hour": ["2.5"],
    }
    link_has(page, wanted)
    before = shown(page, tmp_path / "origin")

    cat = load_catalogue(Store(tmp_path / "here.duckdb"))
    sc = Scenario(
        batch=8,
        spec_draft_len=4,
        spec_acceptance=0.8,
        spec_draft_model="llama-3.2-3b",
        eff_bandwidth=0.9,
        eff_compute=0.8,
        overhead_s=0.0005,
        reserve_fraction=0.0,
        usd_per_gpu_hour=2.5,
    )
    spec, plain = ceiling(cat, sc), ceiling(cat, sc.model_copy(update={"spec_draft_len": 0, "spec_draft_model": None}))
    assert before["metrics"]["Tokens/s per user"] == si(spec.tokens_per_s_per_user) != si(plain.tokens_per_s_per_user)
    breakdown = _svg_text(before["files"]["step-breakdown.svg"])
    for part in ("Llama 3.1 8B", f"1 × {cat.gpu(sc.gpu).name}", "weights bf16", "KV bf16", "batch 8", "4 draft tokens of Llama 3.2 3B"):
        assert part in breakdown, (part, breakdown[:300])
    links = links_of(page)
    context.close()

    other = reproduced(browser, replay, links, before, tmp_path, "calculator")
    with other.expect_download() as info:
        other.locator("[data-testid='stSidebar']").get_by_role("button", name=re.compile("Report")).click()
    report = tmp_path / "report.html"
    info.value.save_as(report)
    body = " ".join(re.sub(r"<[^>]+>", " ", report.read_text(encoding="utf-8")).split())
    assert f"Tokens/s per user {before['metrics']['Tokens/s per user']}" in body
    assert "Speculative decoding draft llama-3.2-3b, 4 tokens, acceptance 0.80" in body
    assert "What if: the three moves" in body and "Ceiling calculator" in body
    other.context.close()


def test_the_comparison_s_every_control_and_a_typed_price_travel(origin, replay, browser, tmp_path):
    """Accelerators, mode, preset and a limit typed, sort, buy with years, energy, PUE, utilisation, load and a typed
    purchase price: the link reproduces the best configuration, the frontier and the table."""
    context = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = context.new_page()
    opened(page, origin.url("compare"))
    pick(page, "Accelerators", "NVIDIA H100 SXM5 80GB")
    unpick(page, "Accelerators", "NVIDIA L40S")
    choose(page, "Workload", "service target")
    pick(page, "Preset target", "MLPerf Llama-3.1-8B Server (TPOT ≤ 100 ms, TTFT ≤ 2 s)")
    # the preset sets both limits and holds them; custom limits keeps its values and lets them be typed
    expect(_main(page).get_by_role("spinbutton", name="TPOT ≤ (ms)", exact=True)).to_have_value(re.compile(r"^100(\.0+)?$"))
    expect(_main(page).get_by_role("spinbutton", name="TTFT ≤ (s)", exact=True)).to_be_disabled()
    pick(page, "Preset target", "custom limits")
    number(page, "TTFT ≤ (s)", 1.5)
    pick(page, "Sort by", "tokens/s per GPU")
    choose(page, "Pay for GPU-hours by", "buy")
    number(page, "Years", 4)
    number(page, "$ per kWh", 0.12)
    number(page, "PUE", 1.3)
    number(page, "Utilisation (%)", 80)
    number(page, "Load (requests/s)", 20)
    number(page, "Output tokens", 512)
    typed = {
        "cmp_pay": ["buy"],
        "cmp_years": ["4.0"],
        "cmp_kwh": ["0.12"],
        "cmp_pue": ["1.3"],
        "cmp_util": ["80.0"],
        "cmp_rps": ["20.0"],
        "cmp_out": ["512"],
    }
    link_has(page, typed)  # before the price is typed: the editor's rerun must keep them
    page.get_by_text("Prices used").click()
    grid = _main(page).locator("[data-testid='stDataFrame']").first
    grid.wait_for()
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 240, box["y"] + 52)  # the first row (the A100): its 'your price' cell
    page.wait_for_function("() => document.activeElement && document.activeElement.tagName === 'TD'")
    page.keyboard.press("Enter")
    page.wait_for_function("() => ['INPUT', 'TEXTAREA'].includes(document.activeElement && document.activeElement.tagName)")
    page.keyboard.type("12000", delay=50)
    with rerun(page):
        page.keyboard.press("Enter")
    link_has(
        page,
        {
            "cmp_gpus": ["NVIDIA A100 80GB SXM4", "NVIDIA H100 SXM5 80GB"],
            "cmp_mode": ["service target"],
            "cmp_tpot": ["100.0"],
            "cmp_ttft": ["1.5"],
            "cmp_sort": ["tokens/s per GPU"],
            "cmp_pay": ["buy"],
            "cmp_years": ["4.0"],
            "cmp_kwh": ["0.12"],
            "cmp_pue": ["1.3"],
            "cmp_util": ["80.0"],
            "cmp_rps": ["20.0"],
            "cmp_out": ["512"],
            "cmp_buy": ["a100-80gb-sxm:12000"],
        },
    )
    with rerun(page, requests=0):
        page.get_by_text("Prices used").click()  # folded again: the price editor's grid is no headline
    prices = _main(page).locator("[data-testid='stExpander']").filter(has_text="Prices used")
    expect(prices.locator("[data-testid='stExpanderDetails']")).to_be_hidden()  # once it has closed (it slides shut)
    before = shown(page, tmp_path / "origin")
    assert "GPUs for the load" in before["metrics"]
    table = before["files"]["accelerator-comparison.csv"]
    assert "your price" in table  # the typed price is the one used
    links = links_of(page)
    context.close()
    reproduced(browser, replay, links, before, tmp_path, "compare").context.close()


def test_the_sweep_s_axes_and_filters_travel(origin, replay, browser, tmp_path):
    context = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = context.new_page()
    opened(page, origin.url("sweep"))
    unpick(page, "Accelerators", "Intel Gaudi 3 (HL-325L OAM)")
    pick(page, "Models", "Llama 3.1 8B")
    pick(page, "Weights", "int4")
    pick(page, "Batches (sequences)", "8")
    pick(page, "Contexts (tokens)", "8192")
    unpick(page, "GPU counts", "8")
    pick(page, "At batch", "16")
    number(page, "Time per output token ≤ (ms)", 30)
    number(page, "Time to first token ≤ (s)", 1.5)
    number(page, "Tokens/s total ≥", 200)
    pick(page, "Decode is", "memory")
    switch(page, "Only scenarios that fit in memory")
    switch(page, "Only tensor parallel within one scale-up domain")
    query = link_has(
        page,
        {
            "sw_models": ["Llama 3.1 70B", "Llama 3.1 8B"],
            "sw_weights": ["fp8", "int4"],
            "sw_batches": ["1", "16", "64", "256", "8"],
            "sw_contexts": ["4096", "8192"],
            "sw_counts": ["1", "2", "4"],
            "sw_at_batch": ["16"],
            "sw_tpot": ["30"],
            "sw_ttft": ["1.5"],
            "sw_total": ["200"],
            "sw_bound": ["memory"],
            "sw_fits": ["false"],
            "sw_domain": ["false"],
        },
    )
    assert "Intel Gaudi 3 (HL-325L OAM)" not in query["sw_gpus"] and len(query["sw_gpus"]) == 7
    before = shown(page, tmp_path / "origin")
    assert "sweep-frontier.svg" in before["files"] and "sweep.csv" in before["files"]
    links = links_of(page)
    context.close()
    reproduced(browser, replay, links, before, tmp_path, "sweep").context.close()


def test_the_measured_page_s_filters_scorecard_metric_and_view_travel(origin, replay, browser, tmp_path):
    context = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = context.new_page()
    opened(page, origin.url("measured"))
    pick(page, "Accelerator", "NVIDIA H100 SXM5 80GB")
    pick(page, "Model", "Llama 3.1 8B")
    pick(page, "Framework", "vLLM")
    pick(page, "Source", "vLLM team (AWS / Red Hat AI authors)")
    pick(page, "Metric", "ttft: time to first token")
    link_has(
        page,
        {
            "ms_ref_gpus": ["NVIDIA H100 SXM5 80GB"],
            "ms_ref_models": ["Llama 3.1 8B"],
            "ms_ref_frameworks": ["vLLM"],
            "ms_ref_publishers": ["vLLM team (AWS / Red Hat AI authors)"],
            "ms_sc_metric": ["ttft: time to first token"],
        },
    )
    before = shown(page, tmp_path / "origin")
    assert before["metrics"]["Published measurements"] == "6"  # H100, Llama 3.1 8B, vLLM, that source: 6 rows shipped
    assert "scorecard-ttft.svg" in before["files"]
    reproduced(browser, replay, links_of(page), before, tmp_path, "measured-published").context.close()

    choose(page, "Show", "Your datasets")
    link_has(page, {"ms_view": ["Your datasets"]})
    before = shown(page, tmp_path / "origin-yours", downloads=False)
    assert any("No datasets of yours yet" in t for t in before["text"]) or before["metrics"]
    links = links_of(page)
    context.close()
    reproduced(browser, replay, links, before, tmp_path, "measured-yours").context.close()


def test_the_tour_step_and_the_overview_s_scenario_travel(origin, replay, browser, tmp_path):
    """The tour's step; the overview, whose controls are the sidebar's: every one of them changed."""
    context = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = context.new_page()
    opened(page, origin.url("tour"))
    choose(page, "Step", page.locator("[data-testid='stRadio'] label").nth(4).inner_text().strip())
    link_has(page, {"tour_step": [page.locator("[data-testid='stRadio'] label").nth(4).inner_text().strip()]})
    before = shown(page, tmp_path / "tour")
    reproduced(browser, replay, links_of(page), before, tmp_path, "tour").context.close()

    opened(page, origin.url("overview"))
    sidebar_pick(page, "Accelerator", "AMD Instinct MI300X")
    sidebar_number(page, "GPUs (tensor parallel)", 2)
    sidebar_pick(page, "Model", "Llama 3.1 70B")
    sidebar_pick(page, "Weights", "fp8")
    sidebar_pick(page, "KV cache", "fp8")
    sidebar_pick(page, "Compute", "bf16")
    sidebar_number(page, "Batch (sequences)", 16)
    sidebar_number(page, "Context (tokens)", 8192)
    sidebar_number(page, "Prompt (tokens)", 1024)
    link_has(
        page,
        {
            "gpu": ["AMD Instinct MI300X"],
            "num_gpus": ["2"],
            "model": ["Llama 3.1 70B"],
            "weights": ["fp8"],
            "kv": ["fp8"],
            "compute": ["bf16"],
            "batch": ["16"],
            "context": ["8192"],
            "prompt": ["1024"],
        },
    )
    before = shown(page, tmp_path / "overview")
    assert "overview-roofline.svg" in before["files"]
    assert "2 × AMD Instinct MI300X" in _svg_text(before["files"]["overview-roofline.svg"])
    links = links_of(page)
    context.close()
    reproduced(browser, replay, links, before, tmp_path, "overview").context.close()


def test_the_ridge_and_roofline_controls_travel(origin, replay, browser, tmp_path):
    context = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = context.new_page()
    opened(page, origin.url("ridges"))
    choose(page, "Precision", "fp8")
    pick(page, "Vendor", "NVIDIA")
    pick(page, "Vendor", "AMD")
    pick(page, "Form factor", "SXM")
    slide(page, "Year", "ArrowRight", 4)  # the first thumb: 2016 -> 2020
    # the slider shows 2020 at once and commits each step: slide() waited for the run of the last (CI once read the link at 2019)
    link_has(page, {"rd_precision": ["fp8"], "rd_vendor": ["NVIDIA", "AMD"], "rd_form": ["SXM"], "rd_year": ["2020", "2026"]})
    before = shown(page, tmp_path / "ridges")
    reproduced(browser, replay, links_of(page), before, tmp_path, "ridges").context.close()

    opened(page, origin.url("roofline"))
    pick(page, "Overlay accelerators", "AMD Instinct MI300X")
    pick(page, "Precisions", "fp8")
    pick(page, "Precisions", "bf16")
    slide(page, "Bandwidth efficiency", "ArrowLeft", 3)
    slide(page, "Compute efficiency", "ArrowLeft", 1)
    link_has(
        page,
        {
            "rf_compare": ["AMD Instinct MI300X"],
            "rf_precisions": ["fp8", "bf16"],
            "eff_bandwidth": ["0.85"],
            "eff_compute": ["0.95"],
        },
    )
    before = shown(page, tmp_path / "roofline")
    links = links_of(page)
    context.close()
    reproduced(browser, replay, links, before, tmp_path, "roofline").context.close()
