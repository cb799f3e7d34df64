"""Benchmark: a served rerun after the sidebar's batch changes, against a rerun of the same page unchanged.

One `serve.py` on 127.0.0.1 with a fresh store, one session over the websocket as a browser tab holds it
(benchmarks/stclient.py: nothing rendered, so the times are the server's, from the rerun sent to its
script_finished). On the roofline and the ridge pages, in turn: a rerun with nothing changed, then the batch set to a
value not seen before (what a person typing a new batch meets), --runs pairs; medians and the ratio of the medians.
Unlike benchmarks/rerun.py (AppTest, which compiles the page scripts again on every run), this is the served path.

    .venv/bin/python benchmarks/served_rerun.py [--runs 20]

Target (issue 30): a batch change at most 1.3x the unchanged-page rerun.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.stclient import StClient  # noqa: E402
from tests.helpers import Server  # noqa: E402

PAGES = ("roofline", "ridges")


async def measure(url: str, runs: int) -> dict[str, tuple[list[float], list[float]]]:
    client = StClient(url)
    out: dict[str, tuple[list[float], list[float]]] = {}
    try:
        await client.open()
        batch = 3
        for page in PAGES:
            await client.goto(page)
            for _ in range(3):  # warm: the page's own modules and caches once
                await client._send_rerun(page_hash=client.page_hash)
            same, changed = [], []
            for _ in range(runs):
                same.append((await client._send_rerun(page_hash=client.page_hash)).seconds)
                batch += 2  # a batch no run has seen: its figures are computed afresh
                changed.append((await client.set("batch", batch)).seconds)
            out[page] = (same, changed)
    finally:
        await client.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="pairs per page (an unchanged rerun, then a batch change)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    server = Server(Path(tempfile.mkdtemp()) / "served.duckdb")
    try:
        results = asyncio.run(measure(server.url(""), args.runs))
    finally:
        server.stop()
    for page, (same, changed) in results.items():
        s, c = statistics.median(same), statistics.median(changed)
        print(f"{page}: unchanged rerun {s * 1e3:.0f} ms, batch change {c * 1e3:.0f} ms (medians of {len(same)}): {c / s:.2f}x")


if __name__ == "__main__":
    main()
