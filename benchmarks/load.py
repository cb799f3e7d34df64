"""Load: N sessions using every page at once against one server, some of them uploading files.

One `serve.py` server on 127.0.0.1 with a fresh store; N sessions for a
fixed time. Each session cycles through every page (as a sidebar link
click does) and changes one control on each page (a scripted value per
page: a slider, radio, selectbox, number or text box; the sidebar batch on
the overview); the uploading sessions start on the measured page and, each
round, upload a different generated CSV there, name it and press Import.
Afterwards: every uploaded file is a dataset holding exactly its rows, and
no session saw an exception or error alert.

Two ways to drive a session:

- `--mode ws` (default): one Streamlit websocket per session, speaking the
  frontend's protocol (benchmarks/stclient.py): rerun_script BackMsgs with
  the page script hash and widget states, uploads by file_urls_request +
  HTTP PUT with the XSRF token (XSRF protection stays on). A rerun is timed
  from the send until its script_finished message. Nothing is rendered, so
  the figures are the server's; 16 sessions fit on a 2-core machine.
- `--mode browser`: one Chromium (Playwright), one browser context per
  session, clicking the sidebar links and the widgets; a rerun is timed from
  the action until the page's script state is back to notRunning. Chromium's
  rendering shares the cores with the server, so these times include it.

    .venv/bin/python benchmarks/load.py                      # 6 sessions (3 uploading), 30 s
    .venv/bin/python benchmarks/load.py --full               # the issue's 32 sessions (16 uploading), 60 s
    .venv/bin/python benchmarks/load.py --sessions 4 --seconds 10 --mode browser

Prints sessions, duration, reruns, median / p95 / max rerun time (and per
kind), imports, datasets stored whole, errors. Exit status 1 when a check
fails. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.stclient import StClient, finished_run  # noqa: E402
from tests.helpers import CHROMIUM, CHROMIUM_ARGS, Server  # noqa: E402

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
# one control per page and the values a session steps through, one per visit (all valid for the app)
CONTROLS: dict[str, tuple[str, list[Any]]] = {
    "overview": ("batch", [8, 64, 1, 256]),
    "roofline": ("eff_bandwidth", [[0.8], [0.6], [1.0]]),
    "ridges": ("rd_precision", ["fp8", "fp4", "bf16"]),
    "tour": ("tour_step", ["3. The ridge", "5. Batching is free until the ridge", "1. Arithmetic intensity"]),
    "calculator": ("spec_draft_len", [4, 2, 0]),
    "compare": ("cmp_sort", ["tokens/s per user", "tokens/s per W", "tokens/s total"]),
    "sweep": ("sw_bound", ["memory", "compute", "any"]),
    "catalogue": ("cat_gpu_search", ["H100", "MI3", ""]),
    "measured": ("ms_view", ["Your datasets", "Published measurements"]),
}


def make_csv(session: int, round_: int, rows: int) -> bytes:
    """A generic CSV unique to (session, round): decode rows on an H100 for Llama 3.1 8B."""
    lines = ["gpu,num_gpus,model,weights,kv,phase,batch,input_tokens,output_tokens,tokens_per_s,tpot_ms"]
    for i in range(rows):
        batch = 2 ** (i % 8)
        tps = batch * (100.0 + session + round_ / 100 + i / 1000)
        lines.append(f"h100-sxm,1,llama-3.1-8b,bf16,bf16,decode,{batch},{512 + 64 * (i % 5)},128,{tps:.3f},{batch / tps * 1e3:.4f}")
    return ("\n".join(lines) + "\n").encode()


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank q-quantile (0 < q <= 1) of the values: the smallest value with at least q of them at or below it."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))  # ceil(n q)
    return ordered[int(rank) - 1]


def new_out() -> dict[str, Any]:
    return {"times": [], "kinds": {}, "errors": [], "uploaded": {}, "import_s": [], "put_s": [], "actions": 0, "slowest": []}


def record(out: dict[str, Any], kind: str, seconds: float, where: str = "") -> None:
    out["times"].append(seconds)
    out["slowest"] = sorted([*out["slowest"], (seconds, kind, where)], reverse=True)[:5]
    out["kinds"].setdefault(kind, []).append(seconds)
    out["actions"] += 1


# -- websocket sessions ---------------------------------------------------------------------------
async def ws_session(
    server: Server, n: int, uploads: bool, until: float, rows: int, out: dict[str, Any], timeout: float, think: float = 0.0
) -> None:
    """One websocket session: every page in turn, a control changed on each; uploaders import a new CSV each round. With
    `think`, it pauses 0.5-1.5 x that many seconds after each page and each control, as a person reading the page does."""
    client = StClient(server.url(""), timeout=timeout)
    pace = random.Random(n)

    async def pause() -> None:
        if think > 0:
            await asyncio.sleep(pace.uniform(0.5, 1.5) * think)

    where = f"session {n}"
    try:
        record(out, "first load", (await client.open()).seconds, where)
        names = list(PAGES)
        k = names.index("measured") if uploads else n % (len(names) - 1) + 1
        visit = 0
        round_ = 0
        while time.monotonic() < until:
            for name in names[k:] + names[:k]:
                if time.monotonic() >= until:
                    break
                where = f"session {n} on {name}"
                record(out, "page change", (await client.goto("" if name == "overview" else name)).seconds, where)
                await pause()
                if name == "measured" and uploads:
                    round_ += 1
                    record(out, "control", (await client.set("ms_view", "Your datasets")).seconds, where)  # the upload's view
                    label = f"load s{n} r{round_}"
                    data = make_csv(n, round_, rows)
                    t0 = time.perf_counter()
                    run = await client.upload("ms_upload", f"load-s{n}-r{round_}.csv", data)
                    out["put_s"].append(time.perf_counter() - t0 - run.seconds)
                    record(out, "upload", run.seconds, where)
                    record(out, "control", (await client.set("ms_name", label)).seconds, where)
                    run = await client.click("ms_import")
                    record(out, "import", run.seconds, where)
                    out["import_s"].append(run.seconds)
                    if not any(text.endswith(f"as {label}.") for text in run.success_texts()):
                        out["errors"].append(f"{where}: import of {label!r} not confirmed; alerts: {run.alerts[:3]}")
                    else:
                        out["uploaded"][label] = rows
                else:
                    key, values = CONTROLS[name]
                    record(out, "control", (await client.set(key, values[visit % len(values)])).seconds, where)
                    await pause()
            visit += 1
    except Exception as exc:  # a timeout, a lost connection or a refused request counts as an error the session saw
        out["errors"].append(f"{where}: {type(exc).__name__}: {str(exc)[:800]}")
    finally:
        out["errors"].extend(f"session {n}: {p[:300]}" for p in client.problems)
        await client.close()


async def ws_run(
    server: Server, sessions: int, uploaders: int, seconds: float, rows: int, out: dict[str, Any], timeout: float, think: float = 0.0
) -> float:
    until = time.monotonic() + seconds
    t0 = time.monotonic()
    await asyncio.gather(*(ws_session(server, n, n < uploaders, until, rows, out, timeout, think) for n in range(sessions)))
    return time.monotonic() - t0


# -- browser sessions -----------------------------------------------------------------------------
ERRORS = "[data-testid='stException'], [data-testid='stAlertContentError']"
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"


class RunCounter:
    """Counts the runs a page's app has finished, from the ForwardMsgs on the page's own websocket.

    (Counting changes of the app's `data-test-script-state` attribute misses
    runs: when the browser is busy, a fast run's messages are all handled
    before React renders, so the attribute goes from notRunning to
    notRunning and no mutation is seen; the wait then timed out.)
    """

    def __init__(self, page: Any) -> None:
        self.finished = 0
        self.changed = asyncio.Event()
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload: str | bytes) -> None:
        if isinstance(payload, bytes) and finished_run(payload):
            self.finished += 1
            self.changed.set()

    async def wait_beyond(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.finished <= count:
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no run finished within {timeout:.0f} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)


async def timed(page: Any, runs: RunCounter, action: Any, timeout: float) -> float:
    """Run an action and wait until a run started after it has finished and the page shows it; the seconds taken."""
    before = runs.finished
    t0 = time.perf_counter()
    await action()
    await runs.wait_beyond(before, timeout)
    await page.wait_for_selector(READY, timeout=timeout * 1000)
    return time.perf_counter() - t0


async def browser_session(
    browser: Any, server: Server, n: int, uploads: bool, until: float, rows: int, out: dict[str, Any], tmp: Path, timeout: float
) -> None:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await ctx.new_page()
    runs = RunCounter(page)
    # what the page did, for diagnosing a wait that times out: loads, websockets, console errors
    events: list[str] = []
    t_start = time.monotonic()

    def note(text: str) -> None:
        events.append(f"{time.monotonic() - t_start:.1f}s {text}")

    page.on("framenavigated", lambda f: note(f"navigated {f.url}") if f == page.main_frame else None)
    page.on("load", lambda _: note("load"))
    page.on("console", lambda m: note(f"console {m.type}: {m.text[:200]}") if m.type in ("error", "warning") else None)
    page.on("websocket", lambda ws: (note(f"websocket open {ws.url}"), ws.on("close", lambda _: note("websocket closed"))))
    where = f"session {n}, first load"
    try:
        t0 = time.perf_counter()
        await page.goto(server.url(""))
        await page.wait_for_selector(READY, timeout=timeout * 1000)
        record(out, "first load", time.perf_counter() - t0, f"session {n}")
        round_ = 0
        while time.monotonic() < until:
            names = list(PAGES)
            # never the overview first (clicking the page already shown starts no run); uploaders start on the measured page
            k = names.index("measured") if uploads else n % (len(names) - 1) + 1
            for name in names[k:] + names[:k]:
                if time.monotonic() >= until:
                    break
                where = f"session {n}, page change to {name}"
                note(f"click link to {name}")
                link = page.locator(f"a[data-testid='stSidebarNavLink'][href$='/{'' if name == 'overview' else name}']")
                record(out, "page change", await timed(page, runs, lambda link=link: link.click(), timeout), f"session {n} on {name}")
                if name == "measured" and uploads:
                    round_ += 1
                    view = page.locator("[data-testid='stRadio']").get_by_text("Your datasets", exact=True)  # the upload's view
                    record(out, "control", await timed(page, runs, lambda v=view: v.click(), timeout), f"session {n} on {name}")
                    label = f"load s{n} r{round_}"
                    path = tmp / f"load-s{n}-r{round_}.csv"
                    path.write_bytes(make_csv(n, round_, rows))
                    uploader = page.locator("[data-testid='stFileUploaderDropzoneInput']")
                    where = f"session {n}, upload on {name}"
                    note("upload")
                    record(
                        out,
                        "upload",
                        await timed(page, runs, lambda u=uploader, p=path: u.set_input_files(str(p)), timeout),
                        f"session {n} on {name}",
                    )
                    box = page.get_by_role("textbox", name="Dataset name")
                    await box.fill(label)
                    where = f"session {n}, name + Enter on {name}"
                    note("Enter")
                    record(out, "control", await timed(page, runs, lambda b=box: b.press("Enter"), timeout), f"session {n} on {name}")
                    button = page.get_by_role("button", name="Import")
                    where = f"session {n}, Import on {name}"
                    note("Import")
                    t = await timed(page, runs, lambda b=button: b.click(), timeout)
                    await page.get_by_text(f"as {label}").first.wait_for(timeout=timeout * 1000)
                    record(out, "import", t, f"session {n} on {name}")
                    out["import_s"].append(t)
                    out["uploaded"][label] = rows
                errors = await page.locator(ERRORS).all_inner_texts()
                if errors:
                    out["errors"].append(f"session {n} on {name}: {errors[0][:300]}")
    except Exception as exc:  # a timeout or a crash of the page counts as an error the session saw
        state = "?"
        with contextlib.suppress(Exception):
            state = [
                runs.finished,
                *await page.evaluate(
                    "[document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state'), location.href]"
                ),
            ]
        out["errors"].append(
            f"{where}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}; page now (runs, script state, url) {state}; "
            f"last events: {events[-8:]}"
        )
    finally:
        await ctx.close()


async def browser_run(
    server: Server, sessions: int, uploaders: int, seconds: float, rows: int, out: dict[str, Any], tmp: Path, timeout: float
) -> float:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        until = time.monotonic() + seconds
        t0 = time.monotonic()
        await asyncio.gather(*(browser_session(browser, server, n, n < uploaders, until, rows, out, tmp, timeout) for n in range(sessions)))
        wall = time.monotonic() - t0
        await browser.close()
    return wall


# -- checks and report ----------------------------------------------------------------------------
def stored_datasets(db: Path, out: dict[str, Any]) -> dict[str, int]:
    """name -> measurements of every dataset in the store; a dataset whose rows differ from its row_count is an error."""
    from core.evidence.importers import list_datasets
    from core.store import Store

    store = Store(db)
    try:
        stored = {}
        for row in list_datasets(store).iter_rows(named=True):
            got = store.query("dataset_measurements", dataset_id=row["id"]).height
            stored[row["name"]] = got
            if got != row["row_count"]:
                out["errors"].append(f"dataset {row['name']!r}: {got} of {row['row_count']} rows")
        return stored
    finally:
        store.close()


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e3:.0f} ms  p95 {percentile(values, 0.95) * 1e3:.0f} ms  max {max(values) * 1e3:.0f} ms"


async def run(
    mode: str, sessions: int, uploaders: int, seconds: float, rows: int, timeout: float, baseline_s: float = 0.0, think: float = 0.0
) -> int:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        db = tmp / "load.duckdb"
        server = Server(db)
        out = new_out()
        server_cpu0, own_cpu0 = cpu_seconds(server.proc.pid), time.process_time()
        alone = new_out()
        try:
            if baseline_s > 0:  # the same server, one session, first: the floor the load's reruns are set against
                await ws_run(server, 1, 0, baseline_s, rows, alone, timeout, think)
            if mode == "ws":
                wall = await ws_run(server, sessions, uploaders, seconds, rows, out, timeout, think)
            else:
                wall = await browser_run(server, sessions, uploaders, seconds, rows, out, tmp, timeout)
            server_cpu, own_cpu = cpu_seconds(server.proc.pid) - server_cpu0, time.process_time() - own_cpu0
        finally:
            server.stop()
        log = db.with_suffix(".log").read_text(errors="replace")
        tracebacks = log.count("Traceback (most recent call last)")
        if tracebacks:
            out["errors"].append(f"server log: {tracebacks} traceback(s); first: {log[log.index('Traceback') :][:600]}")
        stored = stored_datasets(db, out)
    missing = [k for k, v in out["uploaded"].items() if stored.get(k) != v]

    times = out["times"]
    print(
        f"mode {mode}: {sessions} sessions ({uploaders} uploading) for {seconds:.0f} s (wall {wall:.0f} s) against one server on 127.0.0.1"
        + (f", pausing about {think:g} s after each action" if think else ", without pauses")
    )
    print(f"CPU used: server {server_cpu:.0f} s, this client process {own_cpu:.0f} s ({os.cpu_count()} cores, shared)")
    if times:
        print(f"reruns timed: {len(times)}  {ms(times)}")
        for kind, values in out["kinds"].items():
            print(f"  {kind:12s} {len(values):4d}  {ms(values)}")
    else:
        print("reruns timed: 0")
    if alone["times"] and times:
        floor = statistics.median(alone["times"])
        print(
            f"one session alone first: {len(alone['times'])} reruns, median {floor * 1e3:.0f} ms; under load p95 / that median = "
            f"{percentile(times, 0.95) / floor:.1f}x (target <= 3x), median / that median = {statistics.median(times) / floor:.1f}x; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
    for seconds_, kind, where in out["slowest"]:
        print(f"  slowest: {seconds_ * 1e3:.0f} ms, {kind}, {where}")
    if out["import_s"]:
        print(f"imports: {len(out['import_s'])} of {rows} rows each  {ms(out['import_s'])}")
    if out["put_s"]:
        print(f"upload HTTP PUT + file_urls round trip: {ms(out['put_s'])}")
    print(f"datasets stored whole: {len(out['uploaded']) - len(missing)} of {len(out['uploaded'])} imported ({len(stored)} in the store)")
    print(f"errors seen by sessions: {len(out['errors'])}")
    for e in out["errors"][:20]:
        print(f"  {e}")
    for m in missing[:10]:
        print(f"  missing or partial: {m}")
    return 0 if not out["errors"] and not missing and times else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["ws", "browser"], default="ws", help="websocket clients (default) or Chromium pages")
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--uploaders", type=int, help="sessions that upload (default: half)")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rows", type=int, default=200, help="rows per uploaded CSV")
    parser.add_argument("--timeout", type=float, default=120, help="seconds one rerun may take before it counts as an error")
    parser.add_argument("--full", action="store_true", help="the issue's size: 32 sessions, 16 uploading, 60 s")
    parser.add_argument(
        "--think-seconds",
        type=float,
        default=0.0,
        help="websocket sessions pause 0.5-1.5 x this after each page and control, as people reading do (0: none, every session "
        "reruns without pause)",
    )
    parser.add_argument(
        "--baseline-seconds", type=float, default=15, help="seconds of one session alone first, the floor the ratios use (0: none)"
    )
    args = parser.parse_args()
    if args.full:
        args.sessions, args.seconds = 32, 60
    uploaders = args.uploaders if args.uploaders is not None else args.sessions // 2
    return asyncio.run(
        run(args.mode, args.sessions, uploaders, args.seconds, args.rows, args.timeout, args.baseline_seconds, args.think_seconds)
    )


if __name__ == "__main__":
    sys.exit(main())
