"""What the tests share, in one place: the checkout's folders, the command line run in this process, the app's server
for browser tests, and how a browser test waits for the app and reads it.

Waiting, in a browser: every page gets `RUNS_JS` before the app's own code. It watches the app's websocket (the
same frames the app reads) and counts the reruns the page asks for and the script runs the server finishes. After
an action, `settle` waits until the page has asked for its rerun, the server has finished a run started after the
last request, the browser has drawn two frames since, Streamlit's own state says the script is not running and no
element is still loading its code.
Nothing waits a fixed time: `WAIT_MS` is only how long a wait may take before the test fails.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SEED = ROOT / "data" / "seed"
APP = ROOT / "streamlit_app.py"

# -- the command line, in this process ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    """What a command did: its exit status and what it wrote (as subprocess.CompletedProcess names them)."""

    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout as JSON, the command having succeeded."""
        assert self.returncode == 0, self.stderr
        return json.loads(self.stdout)


def roofline(capsys: Any, *args: str) -> Ran:
    """`roofline ARGS` run in this process (core.cli.main, as the installed command calls it): the exit status (an
    argparse error's too) and stdout and stderr as captured by pytest's `capsys`."""
    from core.cli import main

    capsys.readouterr()  # what came before is not the command's
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse refuses an option with sys.exit(2)
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return Ran(code, out, err)


# -- a server and a browser -------------------------------------------------------------------------------------------

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
#: The longest any wait of a browser test may take before it fails (a loaded machine runs the app many times slower:
#: this bounds a wait, it is never waited out when the app is ready).
WAIT_MS = 180_000
#: How often a wait in the page looks at its condition (Playwright's default, every frame, keeps the browser drawing).
POLL_MS = 50
#: How long a server may take to answer its health check.
SERVER_START_S = 180


def custom_gpu_row(**changes: Any) -> dict[str, Any]:
    """A custom accelerator's row as the catalogue form gives it (64 GB, 2 TB/s, 500 TFLOP/s bf16), with `changes`."""
    return {
        "id": "my-chip",
        "name": "My chip",
        "vendor": "Me",
        "form_factor": "custom",
        "memory_bytes": 64e9,
        "bandwidth_bytes_per_s": 2e12,
        "peak_bf16": 500e12,
        "sources": "https://example.com/sheet",
    } | changes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A running app server (`serve.py`) on a free port and its own store; `url(path)` builds links to it."""

    def __init__(self, db: Path, **env_vars: str) -> None:
        self.db = db
        env = {**os.environ, "ROOFLINE_DB": str(db), **env_vars}
        for _ in range(3):  # a free port may be taken by another test's server before this one binds it: take another
            self.port = free_port()
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
            if self._healthy():
                return
            self.log.close()
            if "already in use" not in db.with_suffix(".log").read_text():
                break
        raise RuntimeError(
            f"server did not become healthy in {SERVER_START_S} s (exit status {self.proc.poll()}); log: {db.with_suffix('.log')}"
        )

    def _healthy(self) -> bool:
        """Whether the server answers its health check within SERVER_START_S (False, and stopped, if it does not)."""
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url("_stcore/health"), timeout=5) as r:
                    if r.status == 200:
                        return True
            except OSError:
                time.sleep(0.3)  # a poll of the health check: the server is not listening yet
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        return False

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


#: Before the app's code, in every page: counts what the app's websocket carries (top-level protobuf fields of
#: Streamlit's BackMsg and ForwardMsg: BackMsg.rerun_script = 11; ForwardMsg.new_session = 4, script_finished = 6 with
#: FINISHED_SUCCESSFULLY = 0 and FINISHED_FRAGMENT_RUN_SUCCESSFULLY = 3), and the animation frames drawn.
#: requested: reruns the page asked for; runs: script runs the server started; started: `requested` when the latest
#: run started; done: `started` of the latest run that finished successfully (-1: none yet); drawn: whether the browser
#: has drawn two frames since that finish arrived (asked for then: no frames are asked for while nothing waits).
RUNS_JS = """(() => {
  if (window.__runs) return;
  const runs = (window.__runs = {requested: 0, runs: 0, started: 0, done: -1, drawn: false, finishes: 0});
  const varint = (b, i) => {
    let v = 0, scale = 1;
    for (;;) { const x = b[i++]; v += (x & 0x7f) * scale; scale *= 128; if (x < 0x80) return [v, i]; }
  };
  const fields = (b) => {  // [[number, varint value or null], ...] of one message's top level
    const out = [];
    for (let i = 0; i < b.length; ) {
      let key, v = null, n;
      [key, i] = varint(b, i);
      const type = key % 8;
      if (type === 0) [v, i] = varint(b, i);
      else if (type === 1) i += 8;
      else if (type === 2) { [n, i] = varint(b, i); i += n; }
      else if (type === 5) i += 4;
      else break;
      out.push([Math.floor(key / 8), v]);
    }
    return out;
  };
  const bytes = (d) => d instanceof ArrayBuffer ? new Uint8Array(d) : ArrayBuffer.isView(d) ? new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : null;
  const Native = window.WebSocket;
  class Watched extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (e) => {
        const b = bytes(e.data);
        if (!b) return;
        for (const [number, value] of fields(b)) {
          if (number === 4) { runs.runs += 1; runs.started = runs.requested; }
          if (number === 6 && (value === 0 || value === 3)) {
            const finish = (runs.finishes += 1);
            runs.done = runs.started;
            runs.drawn = false;
            requestAnimationFrame(() => requestAnimationFrame(() => { if (runs.finishes === finish) runs.drawn = true; }));
          }
        }
      });
    }
    send(data) {
      const b = bytes(data);
      if (b && fields(b).some(([number]) => number === 11)) runs.requested += 1;
      return super.send(data);
    }
  }
  window.WebSocket = Watched;
})();"""

#: An element whose code the browser is still loading (Streamlit loads most elements' code on first use) is a skeleton.
LOADING = "[data-testid='stElementContainer'] [data-testid='stSkeleton']"
_SETTLED = """([wanted, ready, loading]) => {
  const r = window.__runs;
  return !!r && r.requested >= wanted && r.done >= r.requested && r.drawn
    && document.querySelector(ready) !== null && document.querySelector(loading) === null;
}"""


class Browser:
    """Playwright's browser, whose every new context waits up to WAIT_MS and counts the app's runs (RUNS_JS)."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def new_context(self, **options: Any) -> Any:
        context = self._browser.new_context(**options)
        context.set_default_timeout(WAIT_MS)
        context.add_init_script(RUNS_JS)
        return context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


def requested(page: Any) -> int:
    """The reruns this page has asked the server for so far."""
    return int(page.evaluate("() => window.__runs ? window.__runs.requested : 0"))


def runs_started(page: Any) -> int:
    """The script runs (whole page or fragment) the server has started for this page so far."""
    return int(page.evaluate("() => window.__runs ? window.__runs.runs : 0"))


def settle(page: Any, at_least: int = 0) -> None:
    """Wait until the page has asked for `at_least` reruns in all, the server has finished a run started after the
    last of them, the browser has drawn two frames since, the app's script state is notRunning and no element is
    still loading its code."""
    page.wait_for_function(_SETTLED, arg=[at_least, APP_READY, LOADING], polling=POLL_MS, timeout=WAIT_MS)


@contextmanager
def rerun(page: Any, requests: int = 1) -> Iterator[None]:
    """`with rerun(page): <an action>`: the action asks for `requests` reruns (0: maybe none); afterwards the app has
    run and drawn every rerun asked for."""
    before = requested(page)
    yield
    settle(page, before + requests)


def opened(page: Any, url: str) -> None:
    """Go to a page and wait until its first run (and any rerun it asked for) is finished and drawn."""
    page.goto(url)
    settle(page, 1)


_STILL = """(e) => new Promise((done) => {
  const a = e.getBoundingClientRect();
  requestAnimationFrame(() => requestAnimationFrame(() => {
    const b = e.getBoundingClientRect();
    done(a.top === b.top && a.left === b.left && a.width === b.width && a.height === b.height);
  }));
})"""


def still(locator: Any) -> None:
    """Wait until an element stands still: the same box across two drawn frames (an expander slides its content open,
    and a dropdown opened on a moving element is drawn where the element was)."""
    locator.wait_for()
    locator.page.wait_for_function(_STILL, arg=locator.element_handle(), polling=POLL_MS, timeout=WAIT_MS)


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot under artifacts/screenshots for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def download_report(page: Any, folder: Path) -> tuple[str, str]:
    """(file name, HTML) of the report the sidebar's button downloads, saved under `folder`."""
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("Report")).click()
    name = info.value.suggested_filename
    info.value.save_as(folder / name)
    return name, (folder / name).read_text(encoding="utf-8")


def metric(page: Any, label: str) -> str:
    """The value of the main area's one st.metric labelled `label`, once it is drawn."""
    box = page.locator("[data-testid='stMain'] [data-testid='stMetric']").filter(has=page.get_by_text(label, exact=True))
    return str(box.locator("[data-testid='stMetricValue']").inner_text()).strip()


SHARE_CODE = "[data-testid='stPopoverBody'] [data-testid='stCode']"


def open_sidebar(page: Any) -> None:
    """Open the sidebar as a user does where it is collapsed (presentation mode starts it so): its chevron, then wait
    until it has slid into view."""
    side = page.locator("[data-testid='stSidebar']")
    if side.bounding_box() and side.bounding_box()["x"] + side.bounding_box()["width"] > 1:
        return
    page.locator("[data-testid='stExpandSidebarButton']").click()
    page.wait_for_function(
        "() => { const r = document.querySelector(\"[data-testid='stSidebar']\").getBoundingClientRect(); return r.left >= 0 && r.width > 100; }"
    )
    still(side)


def share_link(page: Any, *, containing: str = "?") -> str:
    """The sidebar's share link as a user copies it: the "Share this view" popover opened (the browser draws the
    link only then), the link read once it holds `containing`, the popover closed again."""
    from playwright.sync_api import expect

    open_sidebar(page)
    # by role: the visible button (Streamlit also keeps a hidden copy of a stretched popover's button)
    page.locator("[data-testid='stSidebar']").get_by_role("button", name="Share this view").click()
    code = page.locator(SHARE_CODE)
    expect(code).to_contain_text(containing)
    link = str(code.inner_text()).strip()
    page.keyboard.press("Escape")
    expect(code).to_be_hidden()
    return link


#: Read a chart's SVG as the browser lays it out (an SVG document as text, or a drawn chart's svg element): each text (its box, its Vega role), each axis (its domain's box and its labels' centres) and
#: each legend's symbols (how each is drawn), and the box it is seen in (its chart's frame on a page).
CHART_READ = """(svg) => {
  if (typeof svg === "string") document.body.innerHTML = svg;
  const root = typeof svg === "string" ? document.querySelector("svg") : svg;
  const frame = root.closest("[data-testid='stVegaLiteChart']") || root;
  const role = (e) => { const g = e.closest("g[class*='role-']"); return g ? g.getAttribute("class") : ""; };
  const shown = (e) => { for (let x = e; x && x !== root; x = x.parentElement) { if (x.getAttribute("opacity") === "0") return false; } return true; };
  const texts = [...root.querySelectorAll("text")].filter(t => t.textContent.trim() && shown(t)).map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, role: role(t), fill: t.getAttribute("fill") || "", x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
  });
  const axes = [...root.querySelectorAll("g.role-axis")].map(a => {
    const d = a.querySelector("g.role-axis-domain path, g.role-axis-domain line");
    const labels = [...a.querySelectorAll("g.role-axis-label text")].filter(t => t.textContent.trim() && shown(t)).map(t => {
      const r = t.getBoundingClientRect(); return {text: t.textContent, x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2};
    });
    const grid = a.querySelector("g.role-axis-grid");
    const box = d ? d.getBoundingClientRect() : (grid ? grid.getBoundingClientRect() : null);
    return {box: box && {x0: box.left, y0: box.top, x1: box.right, y1: box.bottom}, labels};
  });
  const legends = [...root.querySelectorAll("g.role-legend")].map(l => {
    const title = l.querySelector("g.role-legend-title text");
    const symbols = [...l.querySelectorAll("g.role-legend-symbol path")].map(p =>
      [p.getAttribute("d"), p.getAttribute("fill"), p.getAttribute("stroke"), p.getAttribute("stroke-dasharray") || ""].join(" | "));
    const labels = [...l.querySelectorAll("g.role-legend-label text")].map(t => t.textContent);
    return {title: title ? title.textContent : "", symbols, labels};
  });
  const symbols = [...root.querySelectorAll("g.mark-symbol path")].filter(shown).map(p => {
    const r = p.getBoundingClientRect(); return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
  });
  const whole = frame.getBoundingClientRect();
  return {texts, axes, legends, symbols, width: whole.width, left: whole.left, top: whole.top, height: whole.height};
}"""


def _overlaps(texts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap by more than a pixel each way."""
    out = []
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            if min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > 1 and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > 1:
                out.append((f"{a['text']} ({a['role']})", f"{b['text']} ({b['role']})"))
    return out


def _inside(text: dict[str, Any], mark: dict[str, Any]) -> bool:
    """Whether a text's box covers more than 2 px of a marker's each way."""
    return min(text["x1"], mark["x1"]) - max(text["x0"], mark["x0"]) > 2 and min(text["y1"], mark["y1"]) - max(text["y0"], mark["y0"]) > 2


def _uncovered(axes: list[dict[str, Any]]) -> list[str]:
    """Axes whose labels leave an end of the axis unlabelled: the nearest label more than a third of its length away."""
    out = []
    for axis in axes:
        box, labels = axis["box"], axis["labels"]
        if box is None or len(labels) < 1:
            continue
        across = box["x1"] - box["x0"] >= box["y1"] - box["y0"]
        lo, hi = (box["x0"], box["x1"]) if across else (box["y0"], box["y1"])
        spots = [lab["x"] if across else lab["y"] for lab in labels]
        if hi - lo < 40:
            continue
        if min(spots) - lo > (hi - lo) / 3 or hi - max(spots) > (hi - lo) / 3:
            out.append(f"{'x' if across else 'y'} axis labels {[lab['text'] for lab in labels]} over {lo:.0f}-{hi:.0f} px")
    return out


def chart_problems(read: dict[str, Any]) -> list[str]:
    """What a reviewer would see wrong in a chart read by CHART_READ: a text cut with an ellipsis or past the chart's
    edge, two texts overlapping, an axis whose labels leave an end unlabelled, two legend entries drawn alike, and two
    labels of the same text and colour (a label names one mark)."""
    problems = [f"cut: {t['text']}" for t in read["texts"] if t["text"].rstrip().endswith("…")]
    edge = read["left"] + read["width"]
    problems += [f"clipped: {t['text']}" for t in read["texts"] if t["x1"] > edge + 1 or t["x0"] < read["left"] - 1]
    if "top" in read:  # above or below its frame: a chart fitted into a box smaller than it (its title cut off the top)
        low = read["top"] + read["height"]
        problems += [f"clipped: {t['text']}" for t in read["texts"] if t["y0"] < read["top"] - 1 or t["y1"] > low + 1]
    problems += [f"overlap: {a} / {b}" for a, b in _overlaps(read["texts"])]
    problems += [f"uncovered: {u}" for u in _uncovered(read["axes"])]
    # a mark's label over a marker (its own or another's) hides it: labels are placed clear of every marker
    labels = [t for t in read["texts"] if "role-mark" in t["role"]]
    problems += [f"over a marker: {t}" for t in sorted({t["text"] for t in labels if any(_inside(t, m) for m in read.get("symbols", []))})]
    for legend in read["legends"]:
        drawn = legend["symbols"]
        if len(set(drawn)) < len(drawn):
            twins = [lab for lab, s in zip(legend["labels"], drawn, strict=False) if drawn.count(s) > 1]
            problems.append(f"legend {legend['title']!r}: entries drawn alike: {twins}")
    # two curves' "batch 64", each in its curve's colour, name two marks; two alike in one colour cannot
    marks = [(t["text"], t["fill"]) for t in read["texts"] if "role-mark" in t["role"]]
    problems += [f"the same label twice: {t}" for t in sorted(set(marks)) if marks.count(t) > 1]
    return problems


def metrics(page: Any) -> dict[str, str]:
    """Every metric on the page: its label and its value, as shown."""
    found = page.locator("[data-testid='stMetric']")
    found.first.wait_for()
    return {
        found.nth(i).locator("[data-testid='stMetricLabel']").inner_text().strip(): found.nth(i)
        .locator("[data-testid='stMetricValue']")
        .inner_text()
        .strip()
        for i in range(found.count())
    }
