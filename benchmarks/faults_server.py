"""Fault injection: the Streamlit server killed with SIGKILL in the middle of a large import made through the app, N times.

Everything goes through the app as a browser would (benchmarks/stclient.py:
websocket, file_urls_request, HTTP PUT with the XSRF token, widget states):

1. A `serve.py` server on a fresh store; two small files (tests/fixtures)
   are imported on the measured page: the earlier datasets.
2. One large generic CSV (1,000,000 rows, ~90 MB) is imported whole through
   the app on a scratch store, to measure its write transaction: from its
   first change to the store file until the page says it committed (the
   progress bar says "writing ..." when it begins and "done" after the commit).
3. N times: a server on the store, the large CSV (a distinct file each time)
   uploaded, named, Import pressed; the server process is killed with SIGKILL,
   odd runs as soon as the import's write touches the file (the file or its
   WAL changes), even runs 10-80 % of the way from that first change to the
   commit as measured in step 2 (DuckDB writes a large insert's blocks into
   the file before the commit), so part of the dataset is on disk, uncommitted.
4. After every kill: the store opens (`benchmarks/faults.py`'s check: earlier
   datasets intact, every dataset holds exactly its row_count measurements,
   no measurement without its dataset); then a new server opens it and the
   measured page lists the datasets without an exception or error alert and
   without the killed one (unless the import finished before the kill, when
   it must be whole).

    .venv/bin/python benchmarks/faults_server.py [--runs 10] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.faults import check  # noqa: E402
from benchmarks.ingest import make_csv  # noqa: E402
from benchmarks.stclient import Run, StClient  # noqa: E402
from core.evidence.importers import delete_dataset, list_datasets  # noqa: E402
from core.store import Store  # noqa: E402
from tests.helpers import Server  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


async def import_through_app(client: StClient, file_name: str, data: bytes, name: str) -> Run:
    """Upload, name and import one file on the measured page; the Import run (raises when it is not confirmed)."""
    await client.goto("measured")
    await client.upload("ms_upload", file_name, data)
    await client.set("ms_name", name)
    run = await client.click("ms_import")
    if not any(text.endswith(f"as {name}.") for text in run.success_texts()) or run.problems:
        raise RuntimeError(f"import of {name!r} not confirmed: {run.alerts[:3]} {run.problems[:3]}")
    return run


async def press_import(client: StClient, file_name: str, data: bytes, name: str) -> asyncio.Task[Run]:
    """Upload and name a file on the measured page, then press Import; the Import run as a task (it is not awaited)."""
    await client.goto("measured")
    await client.upload("ms_upload", file_name, data)
    await client.set("ms_name", name)
    return asyncio.create_task(client.click("ms_import"))


def committed(client: StClient, name: str, run: Run | None = None) -> bool:
    """Whether the page has said the import of `name` succeeded (in `run`, else in the run in flight)."""
    run = run if run is not None else client.current
    return run is not None and any(text.endswith(f"as {name}.") for text in run.success_texts())


def file_state(db: Path) -> tuple[int, int, int]:
    """(mtime, size, WAL size) of the store file: it changes when a write touches it."""
    st = db.stat()
    wal = Path(f"{db}.wal")
    return st.st_mtime_ns, st.st_size, wal.stat().st_size if wal.exists() else -1


def kill(server: Server) -> None:
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait()
    server.log.close()


async def app_lists(server: Server) -> tuple[list[str], list[str]]:
    """The dataset choices the measured page offers, and any problem the page showed."""
    client = StClient(server.url(""))
    try:
        await client.open()
        run = await client.goto("measured")
        choices = list(run.widgets["ms_dataset"][1].options) if "ms_dataset" in run.widgets else []
        return choices, client.problems
    finally:
        await client.close()


async def main_async(runs: int, rows: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "faults.duckdb"
        wal = Path(f"{db}.wal")
        server = Server(db)
        client = StClient(server.url(""))
        try:
            await client.open()
            await import_through_app(client, "generic.csv", (FIXTURES / "generic.csv").read_bytes(), "earlier 1")
            await import_through_app(client, "llama_bench.csv", (FIXTURES / "llama_bench.csv").read_bytes(), "earlier 2")
        finally:
            await client.close()
            server.stop()
        earlier = check(db, {})
        print(f"earlier datasets (imported through the app): {earlier}")

        data = make_csv(rows)
        # how long the import takes through the app: Import pressed until the page reports it committed ("done")
        scratch = Server(Path(tmp) / "scratch.duckdb")
        client = StClient(scratch.url(""), timeout=600)
        pressed: asyncio.Task[Run] | None = None
        try:
            await client.open()
            pressed = await press_import(client, "big-0.csv", data, "timing")
            t0, state0 = time.monotonic(), file_state(scratch.db)
            first_write = None
            while not pressed.done() and not committed(client, "timing") and time.monotonic() < t0 + 600:
                if first_write is None and file_state(scratch.db) != state0:
                    first_write = time.monotonic() - t0
                await asyncio.sleep(0.001)
            commit_seen = time.monotonic() - t0
            run0 = pressed.result() if pressed.done() else client.current
            if run0 is None or not committed(client, "timing", run0):
                raise RuntimeError(f"the timing import was not confirmed: {run0}")
            writing = next(t for t, text in run0.progress if text.startswith("writing"))
            duration = next(t for t, text in run0.progress if text == "done")
            if first_write is None:
                raise RuntimeError("the timing import committed without the store file changing first")
            window = commit_seen - first_write  # from the first block written to the commit
        finally:
            await client.close()
            scratch.stop()  # the page would go on drawing the 1,000,000-row dataset for a long time
            if pressed is not None:
                with contextlib.suppress(BaseException):
                    await pressed  # ended by the stop
        print(
            f"{rows:,}-row CSV ({len(data) / 1e6:.0f} MB) through the app: Import pressed to committed ('done') {duration:.1f} s, "
            f"the write transaction ('writing ...' to 'done') {duration - writing:.1f} s, of which {window:.2f} s from its first change "
            "to the store file until the page said it committed"
        )

        outcomes = {"killed, nothing stored": 0, "import committed before the kill, stored whole": 0}
        kill_at: list[float] = []
        reopen: list[float] = []
        failures: list[str] = []
        first_row = data.split(b"\n", 2)[1] + b"\n"
        for run in range(1, runs + 1):
            name = f"big {run}"
            big = data + first_row * run  # a distinct file per run, so none is refused as a duplicate
            server = Server(db)
            client = StClient(server.url(""), timeout=600)
            try:
                await client.open()
                pressed = await press_import(client, f"big-{run}.csv", big, name)
                before = file_state(db)
                started = time.monotonic()
                # every run waits for the import's first change to the file; even runs then let it write on for
                # 10-80 % of the measured first-change-to-commit time, so part of the dataset is in the file, uncommitted
                share = 0.0 if run % 2 else 0.1 + 0.7 * (run / 2 - 1) / max(1, runs // 2 - 1)
                how = "at the first write" if run % 2 else f"{share:.0%} of the way from the first write to the commit"
                while not pressed.done() and file_state(db) == before:
                    await asyncio.sleep(0.001)
                deadline = time.monotonic() + share * window
                while not pressed.done() and time.monotonic() < deadline and not committed(client, name):
                    await asyncio.sleep(0.001)
                at = time.monotonic() - started
                finished = committed(client, name, pressed.result() if pressed.done() and not pressed.exception() else None)
                stage = client.current.progress[-1][1] if client.current is not None and client.current.progress else "-"
                wal_bytes = wal.stat().st_size if wal.exists() else 0
                grown = db.stat().st_size - before[1]
                kill(server)
                kill_at.append(at)
                if pressed.done() and not finished:
                    failures.append(f"run {run}: the Import run ended before the kill without importing: {pressed}")
                with contextlib.suppress(Exception):
                    await pressed  # the connection is lost with the server
                t1 = time.monotonic()
                try:
                    found = check(db, earlier)
                except AssertionError as exc:
                    failures.append(f"run {run}: {exc}")
                    print(f"run {run:2d}: CHECK FAILED: {exc}")
                    continue
                reopen.append(time.monotonic() - t1)
                stored = name in found
                if finished and not stored:
                    failures.append(f"run {run}: the page confirmed {name!r} before the kill, but it is not in the store")
                if stored:
                    if found[name] != rows + run:
                        failures.append(f"run {run}: {name} has {found[name]} rows, expected {rows + run}")
                    outcomes["import committed before the kill, stored whole"] += 1
                else:
                    outcomes["killed, nothing stored"] += 1
                state = "server SIGKILLed after the import committed" if finished else "server SIGKILLed"
                if stored:  # keep the store small between runs (and the measured page quick to draw)
                    store = Store(db)
                    ds = list_datasets(store)
                    delete_dataset(store, int(ds.filter(ds["name"] == name)["id"][0]))
                    store.close()
                    del found[name]
                print(
                    f"run {run:2d}: {state} {how} (t={at:.2f} s after Import, page at {stage!r}, file +{grown / 1e6:.0f} MB, WAL {wal_bytes / 1e6:.1f} MB); "
                    f"store opens, earlier intact; {name}: {'whole' if stored else 'absent'}"
                )
            finally:
                await client.close()
                if server.proc.poll() is None:
                    server.stop()
            # the app opens the store again and shows what is there, nothing more
            server = Server(db)
            try:
                choices, problems = await app_lists(server)
            finally:
                server.stop()
            names = {c.rsplit(" (#", 1)[0] for c in choices}
            expected = set(found)
            if problems or names != expected:
                failures.append(
                    f"run {run}: the app after restart lists {sorted(names)}, expected {sorted(expected)}; problems {problems[:3]}"
                )
        print(f"{runs} server kills: " + ", ".join(f"{k}: {v}" for k, v in outcomes.items()))
        if kill_at:
            print(f"kill times after pressing Import: {min(kill_at):.2f}-{max(kill_at):.2f} s")
        if reopen:
            print(f"store opens afterwards: {len(reopen)} of {runs}; reopen + check after a kill: max {max(reopen) * 1e3:.0f} ms")
        print(
            f"failures: {len(failures)}" + ("" if failures else " (earlier datasets intact and no half dataset visible after every kill)")
        )
        for f in failures:
            print(f"  {f}")
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    return asyncio.run(main_async(args.runs, args.rows))


if __name__ == "__main__":
    sys.exit(main())
