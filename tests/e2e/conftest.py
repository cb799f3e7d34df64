"""Playwright fixtures: Debian's Chromium driving a real `serve.py` server on a free port (tests/helpers.py).

In CI (CI=true) a missing browser is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, Browser, Server


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium under Playwright; fails in CI when missing, skips only locally."""
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        message = f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)  # an expectation waits as long as any other wait (tests/helpers.py)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield Browser(b)
        b.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One app server for the session (for each xdist worker), on its own store."""
    srv = Server(tmp_path_factory.mktemp("e2e") / "store.duckdb")
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Server]:
    """A server started for one test (its first request is the test's)."""
    srv = Server(tmp_path / "store.duckdb")
    yield srv
    srv.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[object]:
    """A new browser page (1400 x 1000) with downloads enabled."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    yield pg
    context.close()
