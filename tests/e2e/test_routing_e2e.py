"""Browser tests of the app's addresses and what it fetches: /overview on a fresh server, the root, and every page
loading nothing from outside this machine (the favicon ships with the app; the icons come from Streamlit's own font)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from core.catalogue.catalogue import load_catalogue
from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.present.text import si
from core.store import Store
from tests.helpers import ROOT, SERVER_START_S, free_port, metric, opened, screenshot, settle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
LOCAL = {"127.0.0.1", "localhost"}
ICON = "[data-testid='stSidebarNavLink'] [data-testid='stIconMaterial']"


def _outside(urls: list[str]) -> list[str]:
    """The requested URLs that leave this machine (data: and blob: URLs stay in the browser)."""
    return [u for u in urls if urlparse(u).scheme not in ("data", "blob") and urlparse(u).hostname not in LOCAL]


def test_overview_link_opens_the_overview_on_a_fresh_server(fresh_server, page):
    """The first request of a fresh server is /overview?...&batch=8: the overview, at batch 8, no 'Page not found';
    the server's warm-up (pages/shared/warmup.py) ran beside it without a warning."""
    opened(page, fresh_server.url("overview?gpu=h100-sxm&model=llama-3.1-8b&batch=8"))
    page.locator("[data-testid='stMain'] h1", has_text="Roofline Explorer").wait_for()
    url = urlparse(page.url)
    assert url.path == "/" and parse_qs(url.query)["batch"] == ["8"]  # the overview's one address, the link's scenario kept
    assert page.get_by_text("Page not found").count() == 0
    # the sidebar's input can show its default for a moment after the switch to the root, before its value arrives
    expect(page.get_by_role("spinbutton", name="Batch (sequences)")).to_have_value("8")
    settle(page)
    cat = load_catalogue(Store(fresh_server.db))
    at8 = ceiling(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=8))
    at1 = ceiling(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1))
    assert metric(page, "Tokens/s total") == si(at8.tokens_per_s_total) != si(at1.tokens_per_s_total)
    active = page.locator("a[data-testid='stSidebarNavLink'][aria-current='page']")
    assert active.count() == 1 and active.inner_text().strip().endswith("Overview")
    screenshot(page, "overview-from-overview-link")

    opened(page, fresh_server.url(""))  # the root still opens the overview, at the default scenario
    page.locator("[data-testid='stMain'] h1", has_text="Roofline Explorer").wait_for()
    assert urlparse(page.url).path == "/" and page.get_by_text("Page not found").count() == 0
    expect(page.get_by_role("spinbutton", name="Batch (sequences)")).to_have_value(str(Scenario().batch))

    log = fresh_server.db.with_suffix(".log").read_text()
    for alarming in ("Traceback", "Uncaught", "Did not auto detect", "Page not found", "WARNING", "warm-up failed", "No runtime found"):
        assert alarming not in log, log


def test_the_server_starts_without_asking_the_internet_its_address(tmp_path):
    """serve.py on all interfaces (as scripts/start runs it): the local and network URLs, no external-IP lookup, no warning."""
    port = free_port()
    log = tmp_path / "start.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "serve.py"), "--server.port", str(port), "--server.headless", "true"],
            cwd=ROOT,
            env={**os.environ, "ROOFLINE_DB": str(tmp_path / "s.duckdb")},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + SERVER_START_S
        while "Network URL" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)  # a poll of the server's log: it prints its URLs once it listens
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=SERVER_START_S) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # as Server.stop: a loaded machine may take longer to stop it
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert f"Local URL: http://localhost:{port}" in text and "Network URL: http://" in text, text
    for alarming in ("External URL", "Did not auto detect", "Traceback", "WARNING", "Warning"):
        assert alarming not in text, text


def test_no_page_fetches_anything_from_outside_this_machine(server, page):
    """Every page in the navigation (and /overview) loads with requests to 127.0.0.1 only; the favicon is inline."""
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    opened(page, server.url(""))
    page.locator(ICON).first.wait_for()
    paths = [urlparse(h).path for h in page.locator("a[data-testid='stSidebarNavLink']").evaluate_all("a => a.map(e => e.href)")]
    assert paths[0] == "/" and "/roofline" in paths and "/measured" in paths and len(paths) == len(set(paths))
    seen: dict[str, list[str]] = {}
    for path in [*paths, "/overview"]:
        requests.clear()
        opened(page, server.url(path))
        page.locator("[data-testid='stMain'] h1").first.wait_for()
        page.wait_for_load_state("networkidle")
        settle(page)
        assert page.get_by_text("Page not found").count() == 0, path
        favicon = page.locator("link[rel~='icon']").first.get_attribute("href") or ""
        assert favicon.startswith("data:image/svg+xml"), (path, favicon[:60])
        seen[path] = list(requests)
        assert _outside(requests) == [], (path, _outside(requests))
    # the navigation's icons are glyphs of the Material Symbols font Streamlit serves itself
    assert page.locator(ICON).count() == len(paths)
    fonts = {urlparse(u).path.rsplit("/", 1)[-1] for urls in seen.values() for u in urls if u.endswith(".woff2")}
    assert any(f.startswith("MaterialSymbols") for f in fonts), fonts
    assert all(len(urls) > 10 for urls in seen.values())  # the log saw each page's scripts, styles and fonts


#: Deep links a reviewer opens with the console showing: each page, the measured view (its charts), the roofline with
#: overlays, the calculator with speculative decoding.
CLEAN_LINKS = (
    "roofline?rf_compare=b200,mi300x&rf_precisions=bf16,fp8",
    "measured",
    "calculator?spec_draft_len=4",
    "ridges",
    "compare",
    "tour",
)


def test_a_deep_link_on_a_fresh_server_logs_nothing_to_the_console_and_gets_no_error_response(fresh_server, browser):
    """No console error or warning (Vega's included) and no response of 400 or more: the frontend is told where the
    server is (serve.py's script in index.html), so it no longer asks /<page>/_stcore/health and host-config first."""
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    logged: list[str] = []
    failed: list[str] = []
    for path in CLEAN_LINKS:
        page = context.new_page()
        page.on("console", lambda m: logged.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        opened(page, fresh_server.url(path))
        page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart']").first.wait_for()
        page.wait_for_timeout(300)  # a warning Vega logs as it lays the chart out
        page.close()
    context.close()
    assert not failed, failed
    assert not logged, logged
