"""Benchmark: a 1,000,000-row generic CSV imported through the app's path (core.evidence.importers.import_file).

The CSV is generated in memory (accelerators and models written the way tools
write them, so name matching runs too), then decoded, detected, read,
validated by the vectorised rules and written as one dataset in one
transaction into a fresh store. Prints rows/s, the time of each stage and
peak memory (RSS of the whole process, store and catalogue included).

    .venv/bin/python benchmarks/ingest.py [--rows 1000000]

Target (issue 6): under 5 s and under 1 GB peak.
"""

from __future__ import annotations

import argparse
import io
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polars as pl  # noqa: E402

from core.catalogue.catalogue import load_catalogue  # noqa: E402
from core.evidence.importers import import_file  # noqa: E402
from core.store import Store  # noqa: E402


def make_csv(rows: int) -> bytes:
    """A generic CSV of `rows` plausible decode measurements."""
    i = pl.int_range(0, rows, eager=True)
    gpus = ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X", "h200-sxm"]
    models = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "mistralai/Mistral-7B-v0.3"]
    batch = (2 ** (i % 9)).cast(pl.Int64)
    frame = pl.DataFrame(
        {
            "gpu": pl.Series(gpus)[i % len(gpus)],
            "num_gpus": 1,
            "model": pl.Series(models)[i % len(models)],
            "weights": "bf16",
            "kv": "bf16",
            "phase": "decode",
            "batch": batch,
            "input_tokens": 512 + (i % 7) * 256,
            "output_tokens": 128,
            "tokens_per_s": batch.cast(pl.Float64) * (90.0 + (i % 50).cast(pl.Float64)),
        }
    ).with_columns((pl.col("batch") / pl.col("tokens_per_s") * 1e3).round(4).alias("tpot_ms"))
    buf = io.BytesIO()
    frame.write_csv(buf)
    return buf.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    data = make_csv(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "ingest.duckdb")
        load_catalogue(store)  # the app has its catalogue loaded before any upload
        stages: list[tuple[float, str]] = []
        t0 = time.perf_counter()
        result = import_file(store, data, "million.csv", progress=lambda f, m: stages.append((time.perf_counter() - t0, m)))
        elapsed = time.perf_counter() - t0
        stored = store.query("datasets")["row_count"][0]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"file: {len(data) / 1e6:,.1f} MB, {args.rows:,} rows; stored {stored:,} measurements as dataset {result.dataset_id}")
    for t, message in stages:
        print(f"  {t:6.2f} s  {message}")
    print(f"import: {elapsed:.2f} s = {args.rows / elapsed:,.0f} rows/s (target: under 5 s)")
    print(f"peak memory (RSS): {peak_mb:,.0f} MB (target: under 1,024 MB)")


if __name__ == "__main__":
    main()
