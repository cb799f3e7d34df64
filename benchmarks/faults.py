"""Fault injection: a large CLI import killed with SIGKILL mid-way, N times; the store must stay whole.

Two small datasets go in first. Then, N times, `python -m core.cli import BIG.csv`
runs in a subprocess and is killed with SIGKILL: odd runs as soon as the
write transaction touches the file (its WAL appears or the file grows), even
runs at a point spread over the import's measured duration. After every kill
the store is opened again and checked: it opens, the earlier datasets are
intact (same names, same measurements), every dataset holds exactly its
row_count measurements, no measurement belongs to a missing dataset. A run
that finished before the kill landed must have stored its dataset whole.

    .venv/bin/python benchmarks/faults.py [--runs 10] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.ingest import make_csv  # noqa: E402
from core.evidence.importers import delete_dataset, import_file, list_datasets  # noqa: E402
from core.store import Store  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def check(db: Path, earlier: dict[str, int]) -> dict[str, int]:
    """Open the store and check it; the name -> rows of every dataset in it. Raises AssertionError."""
    store = Store(db)
    try:
        ds = list_datasets(store)
        with store.connect() as con:
            counts = dict(con.sql("SELECT dataset_id, count(*) FROM measurements GROUP BY dataset_id").fetchall())
            orphans = con.sql("SELECT count(*) FROM measurements WHERE dataset_id NOT IN (SELECT id FROM datasets)").fetchall()[0][0]
        assert orphans == 0, f"{orphans} measurements without a dataset"
        found = {}
        for row in ds.iter_rows(named=True):
            assert counts.get(row["id"], 0) == row["row_count"], (
                f"dataset {row['name']!r}: {counts.get(row['id'], 0)} of {row['row_count']} rows"
            )
            found[row["name"]] = row["row_count"]
        for name, rows in earlier.items():
            assert found.get(name) == rows, f"earlier dataset {name!r} changed: {found.get(name)} rows, expected {rows}"
        assert store.query("accelerators").height > 40
        return found
    finally:
        store.close()


def cli(db: Path, csv: Path, name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "core.cli", "import", str(csv), "--name", name, "--db", str(db), "--json"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "faults.duckdb"
        store = Store(db)
        import_file(store, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name="earlier 1")
        import_file(store, (FIXTURES / "llama_bench.csv").read_bytes(), "llama_bench.csv", name="earlier 2")
        store.close()
        earlier = check(db, {})
        print(f"earlier datasets: {earlier}")
        data = make_csv(args.rows)
        # measure one whole import (on a copy), to spread the kill times over it
        scratch = Path(tmp) / "scratch.duckdb"
        Store(scratch).close()
        csv0 = Path(tmp) / "big-0.csv"
        csv0.write_bytes(data)
        t0 = time.monotonic()
        rc = cli(scratch, csv0, "timing").wait()
        duration = time.monotonic() - t0
        assert rc == 0, "the timing import failed"
        print(f"{args.rows:,}-row CSV ({len(data) / 1e6:.0f} MB); one whole CLI import takes {duration:.1f} s")
        outcomes = {"killed, nothing stored": 0, "finished before the kill, stored whole": 0}
        reopen: list[float] = []
        for run in range(1, args.runs + 1):
            csv = Path(tmp) / f"big-{run}.csv"
            first_row = data.split(b"\n", 2)[1] + b"\n"
            csv.write_bytes(data + first_row * run)  # a distinct file per run, so none is refused as a duplicate
            before = (db.stat().st_size, db.stat().st_mtime_ns)
            wal = Path(f"{db}.wal")
            proc = cli(db, csv, f"big {run}")
            started = time.monotonic()
            if run % 2:
                how = "at the first write"
                while proc.poll() is None and not wal.exists() and (db.stat().st_size, db.stat().st_mtime_ns) == before:
                    time.sleep(0.002)
            else:
                how = f"at {0.3 + 0.65 * (run / args.runs):.0%} of the duration"
                deadline = started + duration * (0.3 + 0.65 * (run / args.runs))
                while proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.005)
            at = time.monotonic() - started
            finished = proc.poll() is not None
            if not finished:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            t1 = time.monotonic()
            found = check(db, earlier)
            reopen.append(time.monotonic() - t1)
            stored = f"big {run}" in found
            if stored:
                assert found[f"big {run}"] == args.rows + run
                outcomes["finished before the kill, stored whole"] += 1
            else:
                outcomes["killed, nothing stored"] += 1
            state = "exited before the kill" if finished else "SIGKILL"
            print(f"run {run:2d}: {state} {how} (t={at:.2f} s); store opens, earlier intact; big {run}: {'whole' if stored else 'absent'}")
            if stored:  # keep the store small between runs
                s = Store(db)
                ds = list_datasets(s)
                delete_dataset(s, int(ds.filter(ds["name"] == f"big {run}")["id"][0]))
                s.close()
        print(f"{args.runs} kills: " + ", ".join(f"{k}: {v}" for k, v in outcomes.items()))
        print(f"reopen + check after a kill: max {max(reopen) * 1e3:.0f} ms; no half dataset visible in any run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
