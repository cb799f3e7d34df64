"""Playwright fixtures: Debian's Chromium driving a real `serve.py` server on a free port.

In CI (CI=true) a missing browser is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
APP_READY = "[data-testid='stApp'][data-test-script-state='notRunning']"
SHOTS = ROOT / "artifacts" / "screenshots"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A running app server; `url(path)` builds links to it."""

    def __init__(self, db: Path, **env_vars: str) -> None:
        self.port = _free_port()
        self.db = db
        env = {**os.environ, "ROOFLINE_DB": str(db), **env_vars}
        self.log = db.with_suffix(".log").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "serve.py"),
                "--server.port",
                str(self.port),
                "--server.headless",
                "true",
                "--server.address",
                "127.0.0.1",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}; log: {db.with_suffix('.log')}")
            try:
                with urllib.request.urlopen(self.url("_stcore/health"), timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("server did not become healthy in 90 s")

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium under Playwright; fails in CI when missing, skips only locally."""
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        message = f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One app server for the session, on its own store."""
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
def page(browser: object) -> Iterator[object]:
    """A new browser page (1400 x 1000) with downloads enabled."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)  # type: ignore[attr-defined]
    pg = context.new_page()
    yield pg
    context.close()


def wait_ready(page: object, timeout_ms: int = 60_000) -> None:
    """Wait until the app's script has finished running (no sleeps)."""
    page.wait_for_selector(APP_READY, timeout=timeout_ms)  # type: ignore[attr-defined]


def screenshot(page: object, name: str) -> Path:
    """Save a full-page screenshot under artifacts/screenshots for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    return path


SHARE_CODE = "[data-testid='stPopoverBody'] [data-testid='stCode']"


def share_link(page: object, *, containing: str = "?") -> str:
    """The sidebar's share link as a user copies it: the "Share this view" popover opened (the browser draws the
    link only then), the link read once it holds `containing`, the popover closed again."""
    from playwright.sync_api import expect

    # by role: the visible button (Streamlit also keeps a hidden copy of a stretched popover's button)
    page.locator("[data-testid='stSidebar']").get_by_role("button", name="Share this view").click()  # type: ignore[attr-defined]
    code = page.locator(SHARE_CODE)  # type: ignore[attr-defined]
    expect(code).to_contain_text(containing)
    link = str(code.inner_text()).strip()
    page.keyboard.press("Escape")  # type: ignore[attr-defined]
    expect(code).to_be_hidden()
    return link
