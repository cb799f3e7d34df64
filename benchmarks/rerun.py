"""Benchmark: server-side rerun time of the roofline and ridge pages after a control change.

Drives the real app with Streamlit's AppTest (the script runs as on a server,
without a browser), changes one control per rerun and prints the median and
95th percentile. Baseline in the same run: a rerun with no change.

Each change is timed twice: "warm", as a user meets it (Streamlit's
st.cache_data already holds what earlier reruns computed, e.g. a batch
visited before), and "cold", with every st.cache_data cache emptied before
every rerun, so every figure the new view needs is computed afresh (the
first visit of a scenario by anyone since the server started).

    .venv/bin/python benchmarks/rerun.py [--runs 20]

Targets: under 200 ms per control change for the default scenario (issue 4);
a cold rerun of the roofline page under 150 ms (issue 12).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def timed(at, runs: int, change, cold: bool) -> list[float]:  # type: ignore[no-untyped-def]
    import streamlit as st

    out = []
    for i in range(runs):
        change(at, i)
        if cold:
            st.cache_data.clear()
        t0 = time.perf_counter()
        at.run()
        out.append(time.perf_counter() - t0)
        assert not at.exception, [e.value for e in at.exception]
    return out


def report(name: str, times: list[float]) -> None:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    print(f"{name:50s} median {statistics.median(times) * 1e3:7.1f} ms   p95 {p95 * 1e3:7.1f} ms   (n={len(times)})")


def main() -> None:
    import streamlit.logger

    streamlit.logger.set_log_level("error")  # st.cache_data.clear() outside a script run logs "no runtime" each time
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    from core.model.allocator import keep_freed_memory

    keep_freed_memory()  # as serve.py runs the server
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ROOFLINE_DB"] = str(Path(tmp) / "bench.duckdb")
        from streamlit.testing.v1 import AppTest

        batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        for page, change_name, change in [
            ("roofline", "no change (baseline)", lambda at, i: None),
            ("roofline", "sidebar batch", lambda at, i: at.number_input(key="batch").set_value(batches[i % len(batches)])),
            (
                "roofline",
                "sidebar accelerator",
                lambda at, i: at.selectbox(key="gpu").set_value(["h100-sxm", "b200", "mi300x", "l40s"][i % 4]),
            ),
            ("ridges", "no change (baseline)", lambda at, i: None),
            ("ridges", "precision radio", lambda at, i: at.radio(key="rd_precision").set_value(["bf16", "fp8", "fp4"][i % 3])),
            ("ridges", "sidebar batch", lambda at, i: at.number_input(key="batch").set_value(batches[i % len(batches)])),
        ]:
            for cold in (False, True):
                at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
                at.run()
                at.switch_page(f"pages/{page}/page.py")
                at.run()
                at.run()  # imports done, Streamlit's own caches filled
                report(f"{page}: {change_name} ({'cold' if cold else 'warm'})", timed(at, args.runs, change, cold))


if __name__ == "__main__":
    main()
