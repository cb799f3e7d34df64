"""Benchmark: the summary of a 1,000,000-row measured dataset with its refit, against a plain Polars read and group-by.

The dataset is made here, deterministically, from the scenarios of
tests/fixtures/generic.csv (11 decode measurements on H100 and A100, one of
them above its ceiling) repeated with noise, as a per-request log holds
them: each row takes fixture row i mod 11, a prompt length from 400 to 1,029
tokens and an output of 127 or 128 tokens (12,600 distinct scenarios), and
its measured tokens/s is the fixture's, moved by the predicted model (vLLM) from
the fixture's lengths to the row's, times log-normal noise
(sigma 5%). It is written as one Parquet file of measurement rows (the
columns core.evidence.importers.dataset_rows returns).

Each side runs in a child process of its own (timed inside it, peak memory
= the child's max RSS, libraries and, for the summary, the catalogue
included), the two alternated --repeat times; the ratio is the median of the pairs':

- baseline: `pl.read_parquet` of the file and a group-by of its scenario
  columns (gpu, count, model, precisions, phase, batch, lengths) with the
  median tokens/s and the row count of each;
- summary: read the same file, compare every row with its ceiling and with
  what vLLM is expected to reach, refit the predicted model on it
  (core.evidence.refit) and reduce it to the summary
  `roofline measured DATASET --refit` prints (core.evidence.compare.summary). The catalogue is loaded, and used once
  on the file's first 100 rows, before the clock starts, as a running app has it.

    .venv/bin/python benchmarks/measured.py [--rows 1000000] [--repeat 3]

Target (issue "Evidence", Scale): the summary under 1.5 s and 1.5 GB peak.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "generic.csv"
KEYS = ["gpu", "num_gpus", "model", "weights", "kv", "compute", "phase", "batch", "input_tokens", "output_tokens"]
#: The prompt lengths (400 .. 1,029) and output lengths (127, 128) the rows draw from: 630 x 2 x 10 fixture scenarios.
PROMPTS = (400, 1030)
OUTPUTS = (127, 129)
NOISE = 0.05


def make_rows(db: Path, rows: int, seed: int = 13) -> pl.DataFrame:
    """`rows` measurements from generic.csv's scenarios with noise (see the module's docstring)."""
    from core.catalogue.catalogue import load_catalogue
    from core.evidence.importers import parse_file
    from core.evidence.predictor import with_predictor
    from core.evidence.refit import expected
    from core.store import Store

    store = Store(db)
    cat = with_predictor(load_catalogue(store))
    base = parse_file(store, FIXTURE.read_bytes(), FIXTURE.name).rows
    rng = np.random.default_rng(seed)
    pick = np.arange(rows) % base.height
    out = base[pick].with_columns(
        pl.int_range(1, rows + 1, dtype=pl.Int32).alias("row"),
        pl.Series("input_tokens", rng.integers(*PROMPTS, rows), dtype=pl.Int64),
        pl.Series("output_tokens", rng.integers(*OUTPUTS, rows), dtype=pl.Int64),
    )
    at_fixture = expected(cat, base, "vLLM")["expected_tokens_per_s"].to_numpy()[pick]
    at_row = expected(cat, out, "vLLM")["expected_tokens_per_s"].to_numpy()
    tps = out["tokens_per_s"].to_numpy() * at_row / at_fixture * rng.lognormal(0.0, NOISE, rows)
    store.close()
    return out.with_columns(
        pl.Series("tokens_per_s", tps),
        (pl.col("batch") / pl.Series(tps)).alias("tpot_s"),
        pl.col("num_gpus", "batch").cast(pl.Int32),  # as the store returns them
    )


def child_baseline(path: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    rows = pl.read_parquet(path)
    groups = rows.group_by(KEYS).agg(pl.col("tokens_per_s").median(), pl.len())
    return {"seconds": time.perf_counter() - t0, "groups": groups.height}


def child_summary(path: str, db: str) -> dict[str, Any]:
    from core.catalogue.catalogue import load_catalogue
    from core.evidence.compare import compare, summary
    from core.evidence.predictor import with_predictor
    from core.evidence.refit import expected, refit
    from core.store import Store

    cat = with_predictor(load_catalogue(Store(Path(db))))
    expected(cat, compare(cat, pl.read_parquet(path, n_rows=100)), "vLLM")  # the catalogue's arrays built once, as in a running app
    t0 = time.perf_counter()
    rows = pl.read_parquet(path)
    cmp = expected(cat, compare(cat, rows, flag_text=False), "vLLM")
    fit = refit(cat, cmp, "vLLM")
    out = summary(cmp)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "summary": out, "refit": [c.record() for c in fit.cells]}


def run_child(*args: str) -> dict[str, Any]:
    """One child process (`--child ...`): its result and its peak RSS in MB."""
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"child {args[0]} failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def _times(runs: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['seconds']:.3f}" for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side, each in a fresh process (best is reported)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        result = child_baseline(*rest) if kind == "baseline" else child_summary(*rest)
        result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return

    with tempfile.TemporaryDirectory() as tmp:
        db, path = Path(tmp) / "bench.duckdb", Path(tmp) / "measured.parquet"
        t0 = time.perf_counter()
        rows = make_rows(db, args.rows)
        rows.write_parquet(path)
        made = time.perf_counter() - t0
        scenarios = rows.select(pl.struct(KEYS).n_unique()).item()
        print(
            f"dataset: {rows.height:,} rows, {scenarios:,} distinct scenarios, {path.stat().st_size / 1e6:.1f} MB Parquet (made in {made:.1f} s)"
        )
        del rows
        base, ours = [], []
        for _ in range(args.repeat):  # alternated, so a slow minute slows both sides of a pair
            base.append(run_child("baseline", str(path)))
            ours.append(run_child("summary", str(path), str(db)))
    b = min(r["seconds"] for r in base)
    s = min(r["seconds"] for r in ours)
    b_mb = max(r["peak_mb"] for r in base)
    s_mb = max(r["peak_mb"] for r in ours)
    last = ours[-1]
    summ = last["summary"]
    print(f"baseline: read + group-by   {b:.3f} s (best of {len(base)}: {_times(base)}), peak {b_mb:,.0f} MB")
    print(f"summary with the refit      {s:.3f} s (best of {len(ours)}: {_times(ours)}), peak {s_mb:,.0f} MB")
    pairs = sorted(o["seconds"] / x["seconds"] for o, x in zip(ours, base, strict=True))
    mem_pairs = sorted(o["peak_mb"] / x["peak_mb"] for o, x in zip(ours, base, strict=True))
    print(
        f"ratio                       {pairs[len(pairs) // 2]:.2f}x the baseline's time (median of {len(pairs)} alternated pairs: "
        f"{', '.join(f'{r:.2f}' for r in pairs)}), {mem_pairs[len(mem_pairs) // 2]:.2f}x its peak memory"
    )
    print(
        f"summary: {summ['rows']:,} rows, {summ['distinct_scenarios']:,} scenarios, {summ['above_ceiling']:,} above their ceiling, "
        f"median ratio {summ['median_ratio']:.3f}, to expected {summ.get('median_expected_ratio') or float('nan'):.3f}, "
        f"MBU {summ['median_mbu']:.3f}, MFU {summ['median_mfu']:.4f}"
    )
    print("flags:   " + ", ".join(f"{k} {v:,}" for k, v in summ["flags"].items() if v))
    for fit in last["refit"]:
        print(
            f"refit:   {fit['gpu']} with {fit['framework']}: {fit['points']:,.0f} points, error {fit['mape_before']:.1%} before, "
            f"{fit['mape_after']:.1%} after, R² {fit['r2'] or float('nan'):.3f}, {'accepted' if fit['accepted'] else 'refused'}"
        )
    verdict = "met" if s < 1.5 and s_mb < 1536 else "NOT met"
    print(f"target (under 1.5 s and 1.5 GB): {verdict}")


if __name__ == "__main__":
    main()
