"""Benchmark: the speed a reviewer feels on the roofline page, in Chromium.

Starts `serve.py` on a free port with a store in a temporary folder, drives
Debian's Chromium (/usr/bin/chromium) with Playwright and prints:

- cold start: from the server's start to the first roofline chart drawn (the
  page's Vega chart in the DOM with its marks) in a browser tab opened before
  the server started (a fresh browser context: nothing cached); a restart, as a
  returning user meets it (the server started again on the store and port of
  a start before, in the same browser context, whose cache holds Streamlit's
  bundles); and a new browser tab on the warm server;
- key press to updated chart: the sidebar's "Batch (sequences)" number input
  is focused and ArrowUp pressed, `--presses` times; each press is timed in
  the page's own clock from the keydown event to the first animation frame
  where the chart's title names the new batch, the batch line under it says
  "Batch N ·" and the app's script state is back to notRunning. Beside it, from
  the websocket: the press to the browser's rerun request, that request to the
  first message back, the press to the last message of the rerun received (the
  server's rerun and the transfer), the bytes the rerun sent to the browser, and the server process's CPU time
  per press (from /proc: the server's work, which other load on the machine does not inflate).

Then the same figures for the floor: benchmarks/bare_page.py, a Streamlit page with only the same batch
input, one small roofline chart and the batch line, served with the app's settings in the same run (skip it
with --no-floor), and the roofline's figures as a ratio of the floor's: what Streamlit and the browser cost
on this machine before the app adds anything.

Figures are printed, never asserted. Targets (issue 14): a median under 150 ms
from key press to chart, first chart under 3 s.

    .venv/bin/python benchmarks/browser.py [--presses 30] [--colds 3] [--restarts 3] [--start-batch 1] [--app-root DIR] [--no-floor]

The served app's modules are compiled first (`python -m compileall core pages`), as scripts/start does.
`--app-root` serves another copy of the app (e.g. `git archive HEAD | tar -x -C /tmp/before`) with this
Python, so a change is measured before and after under the same conditions.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"

#: True once the roofline chart is drawn with marks (its SVG has points and the roof line).
CHART_DRAWN = """() => {
  const svg = document.querySelector("[data-testid='stMain'] [data-testid='stVegaLiteChart'] svg");
  return !!svg && svg.querySelectorAll("g.mark-symbol path, g.mark-line path").length > 2;
}"""

#: Arms the page for one press: on keydown note the time, then each animation frame check for the chart at `target`.
ARM = """(target) => {
  window.__done = undefined;
  window.__t0 = undefined;
  document.addEventListener("keydown", () => { window.__t0 = performance.now(); }, { capture: true, once: true });
  const re = new RegExp("batch " + target + "$");
  const label = "Batch " + target + " ·";
  const check = () => {
    const app = document.querySelector("[data-testid='stApp']");
    const main = document.querySelector("[data-testid='stMain']");
    const svg = main && main.querySelector("[data-testid='stVegaLiteChart'] svg");
    const titled = !!svg && Array.from(svg.querySelectorAll("text")).some((t) => re.test(t.textContent.trim()));
    const ok = window.__t0 !== undefined && titled && main.innerText.includes(label)
      && app.getAttribute("data-test-script-state") === "notRunning";
    if (ok) { window.__done = performance.now() - window.__t0; } else { requestAnimationFrame(check); }
  };
  requestAnimationFrame(check);
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, db: Path, root: Path = ROOT, script: Path | None = None) -> subprocess.Popen[bytes]:
    """The app (`serve.py` of `root`) or, with `script`, that one page under `streamlit run`; from `root`, so
    the app's settings (.streamlit/config.toml) apply to both."""
    env = {**os.environ, "ROOFLINE_DB": str(db)}
    head = [sys.executable, str(root / "serve.py")] if script is None else [sys.executable, "-m", "streamlit", "run", str(script)]
    cmd = [*head, "--server.port", str(port), "--server.headless", "true"]
    cmd += ["--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    log = db.with_suffix(".log").open("w")
    return subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server not healthy")


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) a process has used, in ms: the server's work, whatever else loads the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def stats(name: str, values_ms: list[float], unit: str = "ms") -> None:
    v = sorted(values_ms)
    p90 = v[min(len(v) - 1, round(0.9 * (len(v) - 1)))]
    print(f"{name:48s} median {statistics.median(v):8.1f} {unit}   p90 {p90:8.1f} {unit}   max {v[-1]:8.1f} {unit}   (n={len(v)})")


def url_of(port: int, script: Path | None, args: argparse.Namespace) -> str:
    return f"http://127.0.0.1:{port}/" + ("" if script else "roofline") + f"?batch={args.start_batch}"


def cold_start(browser: Any, tmp: Path, args: argparse.Namespace, script: Path | None) -> tuple[dict[str, float], Any, Any, int]:
    """Start a server with a new store (built from data/seed, as on a first run) and time its first chart in a
    tab opened before the server started (a fresh browser context: nothing cached), as a user's browser is open;
    creating the tab (100-400 ms here) is the harness's time, not the app's. Returns the figures, the server
    and the tab (both left running) and the port."""
    port = free_port()
    page = browser.new_page(viewport={"width": args.width, "height": 1000})
    t_start = time.perf_counter()
    proc = start_server(port, tmp / f"bench-{port}.duckdb", args.app_root, script)
    try:
        wait_healthy(port, proc)
        t_healthy = time.perf_counter()
        page.goto(url_of(port, script, args))
        page.wait_for_function(CHART_DRAWN, timeout=120_000, polling="raf")
        t_chart = time.perf_counter()
        cpu = cpu_ms(proc.pid)
        page.wait_for_selector(READY, timeout=120_000)
    except BaseException:
        stop(proc)
        raise
    figures = {"healthy": (t_healthy - t_start) * 1e3, "chart": (t_chart - t_start) * 1e3, "cpu": cpu}
    return figures, proc, page, port


def restart(browser: Any, tmp: Path, args: argparse.Namespace, script: Path | None) -> float:
    """A later start, as a returning user meets it: the server started again on the same store (built by the start
    before) and the same port, in the same browser context (its cache holds Streamlit's bundles, which the server
    marks immutable); server start to the first chart, in ms."""
    context = browser.new_context(viewport={"width": args.width, "height": 1000})
    port = free_port()
    db = tmp / f"restart-{port}.duckdb"
    url = url_of(port, script, args)
    try:
        proc = start_server(port, db, args.app_root, script)
        try:
            wait_healthy(port, proc)
            first = context.new_page()
            first.goto(url)
            first.wait_for_function(CHART_DRAWN, timeout=120_000, polling="raf")
            first.wait_for_selector(READY, timeout=120_000)
            first.close()
        finally:
            stop(proc)
        page = context.new_page()
        t_start = time.perf_counter()
        proc = start_server(port, db, args.app_root, script)
        try:
            wait_healthy(port, proc)
            page.goto(url)
            page.wait_for_function(CHART_DRAWN, timeout=120_000, polling="raf")
            return (time.perf_counter() - t_start) * 1e3
        finally:
            stop(proc)
    finally:
        context.close()


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


def measure(browser: Any, tmp: Path, args: argparse.Namespace, *, script: Path | None = None) -> dict[str, list[float]]:
    """Start a server (the app, or the page `script`), time its first chart cold (`--colds` times, each on a new
    server), in new tabs and after key presses; print each figure and return them by name."""
    out: dict[str, list[float]] = {}

    def show(name: str, values: list[float], unit: str = "ms") -> None:
        out[name] = values
        stats(name, values, unit)

    colds = []
    for _ in range(max(1, args.colds) - 1):
        figures, proc, tab, _port = cold_start(browser, tmp, args, script)
        stop(proc)
        tab.close()
        colds.append(figures)
    figures, proc, page, port = cold_start(browser, tmp, args, script)
    colds.append(figures)
    url = url_of(port, script, args)
    try:
        show("cold start: server start to healthy", [c["healthy"] for c in colds])
        show("cold start: server start to first chart", [c["chart"] for c in colds])
        show("cold start: server CPU time to first chart", [c["cpu"] for c in colds])
        out["cold start"] = out["cold start: server start to first chart"]
        if args.restarts:
            show("restart (store, port, browser cache kept)", [restart(browser, tmp, args, script) for _ in range(args.restarts)])
        warm = []
        for _ in range(3):
            tab = browser.new_page(viewport={"width": args.width, "height": 1000})
            t0 = time.perf_counter()
            tab.goto(url)
            tab.wait_for_function(CHART_DRAWN, timeout=60_000, polling="raf")
            warm.append((time.perf_counter() - t0) * 1e3)
            tab.wait_for_selector(READY)
            tab.close()
        show("warm server: new tab to first chart", warm)

        frames: list[tuple[float, int, str]] = []  # (perf_counter, payload bytes, "sent"/"received")

        def on_ws(ws: Any) -> None:
            ws.on("framesent", lambda p: frames.append((time.perf_counter(), len(p), "sent")))
            ws.on("framereceived", lambda p: frames.append((time.perf_counter(), len(p), "received")))

        page.on("websocket", on_ws)
        page.reload()  # so the websocket opens under the listener
        page.wait_for_function(CHART_DRAWN, timeout=60_000, polling="raf")
        page.wait_for_selector(READY)
        box = page.get_by_role("spinbutton", name="Batch (sequences)")
        batch = int(box.input_value())
        total, server, sizes, cpu, asked, first = [], [], [], [], [], []
        for _ in range(args.presses):
            box.focus()
            page.evaluate(ARM, batch + 1)
            frames.clear()
            cpu0 = cpu_ms(proc.pid)
            t_press = time.perf_counter()
            page.keyboard.press("ArrowUp")
            page.wait_for_function("() => window.__done !== undefined", timeout=60_000, polling="raf")
            total.append(float(page.evaluate("window.__done")))
            cpu.append(cpu_ms(proc.pid) - cpu0)
            received = [f for f in frames if f[2] == "received"]
            sent = [f for f in frames if f[2] == "sent"]
            if sent and received:
                asked.append((sent[0][0] - t_press) * 1e3)
                first.append((received[0][0] - sent[0][0]) * 1e3)
            if received:
                server.append((received[-1][0] - t_press) * 1e3)
                sizes.append(sum(f[1] for f in received) / 1024)
            batch += 1
        show("key press to updated chart (browser clock)", total)
        if asked:
            show("  key press to rerun request sent", asked)
            show("  request sent to first message back", first)
        if server:
            show("key press to last rerun message (websocket)", server)
            show("bytes sent to the browser per rerun", sizes, unit="KiB")
        show("server CPU time per rerun (load-independent)", cpu)
        page.close()
    finally:
        stop(proc)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=30, help="key presses on the batch input (default 30)")
    parser.add_argument("--colds", type=int, default=3, help="cold starts, each on a new server with a new store (default 3)")
    parser.add_argument("--restarts", type=int, default=3, help="later starts: same store, port and browser cache (default 3)")
    parser.add_argument("--start-batch", type=int, default=1, help="the batch the page opens at (default 1)")
    parser.add_argument("--width", type=int, default=1600, help="browser viewport width in px (default 1600)")
    parser.add_argument("--app-root", type=Path, default=ROOT, help="the copy of the app to serve (default: this one)")
    parser.add_argument("--no-floor", action="store_true", help="skip the bare page (benchmarks/bare_page.py) measured after the app")
    args = parser.parse_args()
    # the app as scripts/start leaves it: its modules compiled (where PYTHONDONTWRITEBYTECODE is set, as on this
    # machine, Python would otherwise compile them again on every start, about 0.1 s of CPU)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "core", "pages"], cwd=args.app_root, check=True)
    print(f"app: {args.app_root} (compiled as scripts/start does); {args.presses} presses from batch {args.start_batch}; ", end="")
    print(f"load average {os.getloadavg()[0]:.1f}")

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            print("-- the roofline page")
            app = measure(browser, Path(tmp), args)
            if not args.no_floor:
                print("-- the floor: a bare Streamlit page with the same input and one small chart (benchmarks/bare_page.py)")
                bare = measure(browser, Path(tmp), args, script=ROOT / "benchmarks" / "bare_page.py")
                print("-- the roofline page against the floor (ratio of medians)")
                for name in (
                    "cold start",
                    "restart (store, port, browser cache kept)",
                    "warm server: new tab to first chart",
                    "key press to updated chart (browser clock)",
                ):
                    if app.get(name) and bare.get(name):
                        a, b = statistics.median(app[name]), statistics.median(bare[name])
                        print(f"{name:48s} {a:8.0f} ms against {b:8.0f} ms: {a / b:5.2f}x")
            print("targets (issue 14): median under 150 ms from key press to chart; first chart under 3,000 ms")
        finally:
            browser.close()


if __name__ == "__main__":
    main()
