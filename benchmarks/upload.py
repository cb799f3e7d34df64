"""Benchmark: a hostile upload (millions of empty JSON objects) is refused fast and in bounded memory.

Each size is imported through `core.evidence.importers.import_file` in a fresh child process (so its peak memory is its
own), alternated with a child that loads the app, opens a store, builds the same bytes and counts its commas once (the
floor: one pass over the file). Prints, per size, the refusal's seconds per 10 MB, its ratio to the floor's, and the child's peak memory above the
floor child's, as a multiple of the file size.

    .venv/bin/python benchmarks/upload.py [--sizes-mb 10 50 198] [--repeat 3]

Targets (issue 32): refused within 2 s per 10 MB; memory under 3 x the file size + 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
n, mode = int(sys.argv[1]), sys.argv[2]
data = b"[" + b"{}," * n + b"{}]"
from core.evidence.importers import ImportFileError, import_file  # both children load the app and open a store
from core.store import Store
store = Store(Path(tempfile.mkdtemp()) / "s.duckdb")
t = time.perf_counter()
if mode == "import":
    try:
        import_file(store, data, "big.json")
        refused = ""
    except ImportFileError as exc:
        refused = str(exc)
else:
    data.count(b",")
    refused = ""
print(json.dumps({"s": time.perf_counter() - t, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "bytes": len(data),
                  "refused": refused}))
"""


def _child(n: int, mode: str) -> dict[str, float | str]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), mode], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes-mb", type=float, nargs="+", default=[10.0, 50.0, 198.0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    for mb in args.sizes_mb:
        n = int(mb * 1e6 / 3)
        runs, floors = [], []
        for _ in range(args.repeat):  # alternated pairs
            runs.append(_child(n, "import"))
            floors.append(_child(n, "floor"))
        size = float(runs[0]["bytes"])
        secs = statistics.median(float(r["s"]) for r in runs)
        floor = statistics.median(float(r["s"]) for r in floors)
        extra = statistics.median(float(r["rss"]) for r in runs) - statistics.median(float(r["rss"]) for r in floors)
        print(
            f"{size / 1e6:6.0f} MB: refused in {secs / size * 1e7:.3f} s per 10 MB ({secs / floor:.1f}x one pass over the bytes); "
            f"memory above the floor {extra / 1e6:,.0f} MB (target under 3 x the file + 300 MB = {(3 * size + 300e6) / 1e6:,.0f} MB); "
            f"{str(runs[0]['refused'])[:70]}"
        )


if __name__ == "__main__":
    main()
