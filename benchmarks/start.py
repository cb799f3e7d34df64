"""Benchmark: a repeat `bash scripts/start` to a healthy server, against a bare Streamlit start in the same run.

A repeat start is one whose requirements and package metadata have not changed since the last: it installs nothing
(scripts/start checks its stamp), compiles what changed and starts the app. Its floor is Streamlit's own start: the
same streamlit serving benchmarks/bare_page.py (one small page) with the app's settings. Each start is timed from the
command to the first `ok` of /_stcore/health, the two alternated, --runs each; the server is stopped after each.

    .venv/bin/python benchmarks/start.py [--runs 5]

Target (issue 30): a repeat start under 3 s plus Streamlit's own start.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy_after(cmd: list[str], env: dict[str, str], port: int, timeout: float = 120.0) -> float:
    """Seconds from starting `cmd` to its server answering /_stcore/health with ok; the server is stopped after."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while time.perf_counter() - start < timeout:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
                    if r.read().strip() == b"ok":
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.02)
            if proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} exited with {proc.returncode} before it was healthy")
        raise RuntimeError(f"not healthy within {timeout:.0f} s")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="starts of each, alternated")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    store = Path(tempfile.mkdtemp()) / "start.duckdb"
    env = {**os.environ, "ROOFLINE_DB": str(store)}
    app = ["bash", "scripts/start", "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port"]
    bare = [sys.executable, "-m", "streamlit", "run", "benchmarks/bare_page.py", "--server.headless", "true"]
    bare += ["--server.address", "127.0.0.1", "--server.fileWatcherType", "none", "--server.port"]
    healthy_after([*app, str(port := free_port())], env, port)  # the first: stamps the install, builds the store
    starts, floors = [], []
    for _ in range(args.runs):
        port = free_port()
        starts.append(healthy_after([*app, str(port)], env, port))
        port = free_port()
        floors.append(healthy_after([*bare, str(port)], env, port))
    s, f = statistics.median(starts), statistics.median(floors)
    print(f"repeat scripts/start to healthy: median {s:.2f} s (runs {', '.join(f'{x:.2f}' for x in starts)})")
    print(f"bare Streamlit start to healthy: median {f:.2f} s (runs {', '.join(f'{x:.2f}' for x in floors)})")
    print(f"ratio {s / f:.2f}x; the start's own part {s - f:.2f} s (target: under 3 s)")


if __name__ == "__main__":
    main()
