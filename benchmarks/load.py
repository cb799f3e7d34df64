"""Load: N browser sessions using every page at once against one server, half of them uploading files.

One Chromium (Playwright, async), N browser contexts (each its own Streamlit
session) against one `serve.py` server on 127.0.0.1 with a fresh store.
Each session cycles through every page by the sidebar navigation; the
uploading sessions import a different generated CSV on the measured page
each round. A rerun is timed from the action (click, upload) until the
app's script state is back to notRunning (counted by a MutationObserver,
so no sleeps and no race). Afterwards: every uploaded file is a dataset
holding exactly its rows, and no session saw an exception or error alert.

    .venv/bin/python benchmarks/load.py                      # 6 sessions (3 uploading), 30 s: sized for a 2-core machine
    .venv/bin/python benchmarks/load.py --full               # the issue's 16 sessions (8 uploading), 60 s
    .venv/bin/python benchmarks/load.py --sessions 4 --seconds 10

Exit status 1 when a check fails. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, Server  # noqa: E402

PAGES = {
    "overview": "Overview",
    "roofline": "Roofline",
    "ridges": "Ridge points",
    "tour": "Guided tour",
    "calculator": "Ceiling calculator",
    "compare": "Compare accelerators",
    "sweep": "Sweep explorer",
    "catalogue": "Catalogue",
    "measured": "Measured vs predicted",
}
ERRORS = "[data-testid='stException'], [data-testid='stAlertContentError']"
COUNT_RUNS = """
window.__runs = 0;
new MutationObserver((records) => {
  for (const r of records) {
    if (r.attributeName === 'data-test-script-state' && r.target.getAttribute('data-test-script-state') === 'notRunning') window.__runs++;
  }
}).observe(document, {attributes: true, subtree: true, attributeFilter: ['data-test-script-state']});
"""
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"


def make_csv(session: int, round_: int, rows: int) -> bytes:
    """A generic CSV unique to (session, round): decode rows on an H100 for Llama 3.1 8B."""
    lines = ["gpu,num_gpus,model,weights,kv,phase,batch,input_tokens,output_tokens,tokens_per_s,tpot_ms"]
    for i in range(rows):
        batch = 2 ** (i % 8)
        tps = batch * (100.0 + session + round_ / 100 + i / 1000)
        lines.append(f"h100-sxm,1,llama-3.1-8b,bf16,bf16,decode,{batch},{512 + 64 * (i % 5)},128,{tps:.3f},{batch / tps * 1e3:.4f}")
    return ("\n".join(lines) + "\n").encode()


async def timed(page: Any, action: Any) -> float:
    """Run an action and wait until the script has finished a run started after it; the seconds taken."""
    before = await page.evaluate("window.__runs")
    t0 = time.perf_counter()
    await action()
    await page.wait_for_function(f"window.__runs > {before}", timeout=120_000)
    await page.wait_for_selector(READY, timeout=120_000)
    return time.perf_counter() - t0


async def session(browser: Any, server: Server, n: int, uploads: bool, until: float, rows: int, out: dict[str, Any], tmp: Path) -> None:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    await ctx.add_init_script(COUNT_RUNS)
    page = await ctx.new_page()
    try:
        await page.goto(server.url(""))
        await page.wait_for_selector(READY, timeout=120_000)
        round_ = 0
        while time.monotonic() < until:
            names = list(PAGES)
            # never the overview first (clicking the page already shown starts no run); uploaders start on the measured page
            k = names.index("measured") if uploads else n % (len(names) - 1) + 1
            for name in names[k:] + names[:k]:
                if time.monotonic() >= until:
                    break
                link = page.locator(f"a[data-testid='stSidebarNavLink'][href$='/{'' if name == 'overview' else name}']")
                out["times"].append(await timed(page, lambda link=link: link.click()))
                out["actions"] += 1
                if name == "measured" and uploads:
                    round_ += 1
                    label = f"load s{n} r{round_}"
                    path = tmp / f"load-s{n}-r{round_}.csv"
                    path.write_bytes(make_csv(n, round_, rows))
                    uploader = page.locator("[data-testid='stFileUploaderDropzoneInput']")
                    out["times"].append(await timed(page, lambda u=uploader, p=path: u.set_input_files(str(p))))
                    box = page.get_by_role("textbox", name="Dataset name")
                    await box.fill(label)
                    out["times"].append(await timed(page, lambda b=box: b.press("Enter")))
                    button = page.get_by_role("button", name="Import")
                    t = await timed(page, lambda b=button: b.click())
                    await page.get_by_text(f"as {label}").first.wait_for(timeout=120_000)
                    out["times"].append(t)
                    out["upload_times"].append(t)
                    out["uploaded"][label] = rows
                    out["actions"] += 3
                errors = await page.locator(ERRORS).all_inner_texts()
                if errors:
                    out["errors"].append(f"session {n} on {name}: {errors[0][:300]}")
    except Exception as exc:  # a timeout or a crash of the page counts as an error the session saw
        out["errors"].append(f"session {n}: {type(exc).__name__}: {str(exc)[:800]}")
    finally:
        await ctx.close()


async def run(sessions: int, uploaders: int, seconds: float, rows: int) -> int:
    from playwright.async_api import async_playwright

    from core.importers import list_datasets
    from core.store import Store

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = Server(tmp / "load.duckdb")
        out: dict[str, Any] = {"times": [], "upload_times": [], "errors": [], "uploaded": {}, "actions": 0}
        try:
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                until = time.monotonic() + seconds
                t0 = time.monotonic()
                await asyncio.gather(*(session(browser, server, n, n < uploaders, until, rows, out, tmp) for n in range(sessions)))
                wall = time.monotonic() - t0
                await browser.close()
        finally:
            server.stop()
        store = Store(tmp / "load.duckdb")
        ds = list_datasets(store)
        stored = {}
        for row in ds.iter_rows(named=True):
            got = store.query("dataset_measurements", dataset_id=row["id"]).height
            stored[row["name"]] = got
            if got != row["row_count"]:
                out["errors"].append(f"dataset {row['name']!r}: {got} of {row['row_count']} rows")
        missing = [k for k, v in out["uploaded"].items() if stored.get(k) != v]
        store.close()

    for e in out["errors"][:5]:
        print(f"  {e}")
    times = sorted(out["times"]) or [float("nan")]
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))] if times else float("nan")
    print(f"{sessions} sessions ({uploaders} uploading) for {seconds:.0f} s (wall {wall:.0f} s) against one server on 127.0.0.1")
    print(
        f"reruns timed: {len(times)}  median {statistics.median(times) * 1e3:.0f} ms  p95 {p95 * 1e3:.0f} ms  max {times[-1] * 1e3:.0f} ms"
    )
    if out["upload_times"]:
        up = sorted(out["upload_times"])
        print(f"imports: {len(up)}  median {statistics.median(up) * 1e3:.0f} ms  max {up[-1] * 1e3:.0f} ms")
    print(f"datasets stored whole: {len(out['uploaded']) - len(missing)} of {len(out['uploaded'])} uploaded ({len(stored)} in the store)")
    print(f"errors seen by sessions: {len(out['errors'])}")
    for e in out["errors"][:10]:
        print(f"  {e}")
    for m in missing[:10]:
        print(f"  missing or partial: {m}")
    return 0 if not out["errors"] and not missing and times else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--uploaders", type=int, help="sessions that upload (default: half)")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rows", type=int, default=200, help="rows per uploaded CSV")
    parser.add_argument("--full", action="store_true", help="the issue's size: 16 sessions, 8 uploading, 60 s")
    args = parser.parse_args()
    if args.full:
        args.sessions, args.seconds = 16, 60
    uploaders = args.uploaders if args.uploaders is not None else args.sessions // 2
    return asyncio.run(run(args.sessions, uploaders, args.seconds, args.rows))


if __name__ == "__main__":
    sys.exit(main())
