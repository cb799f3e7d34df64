"""Querying a sweep (core.model.sweep): chunked evaluation, filters by result, the answer sentence, Parquet."""

from __future__ import annotations

import io

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from core.model.sweep import filter_results, scenario_grid, sweep, sweep_chunks
from core.present.readings import sweep_answer as answer
from core.present.tables import parquet_bytes, sweep_display

GPUS = ["a100-80gb-sxm", "h100-sxm", "h200-sxm", "b200", "mi300x", "l40s"]


@pytest.fixture(scope="module")
def grid():
    return scenario_grid(GPUS, ["llama-3.1-70b"], weights=["fp8", "bf16"], batches=[1, 64], contexts=[4096], num_gpus=[1, 2, 4, 8])


def test_chunks_add_up_to_the_whole_sweep(cat, grid):
    """Evaluating in chunks of 10 rows reports rising progress and ends with exactly the one-shot sweep."""
    steps = list(sweep_chunks(cat, grid, chunk_rows=10))
    fractions = [f for f, _ in steps]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(steps) == -(-grid.height // 10)
    assert_frame_equal(steps[-1][1], sweep(cat, grid))


def test_which_accelerators_meet_20_ms_at_batch_64_in_fp8(cat, grid):
    """The filter keeps exactly the fitting fp8 rows at batch 64 with time per output token <= 20 ms."""
    result = sweep(cat, grid)
    fp8 = result.filter(pl.col("weights") == "fp8")
    hits = filter_results(fp8, max_tpot_s=0.020, batch=64)
    by_hand = [r for r in fp8.iter_rows(named=True) if r["fits"] and r["batch"] == 64 and r["time_per_output_token_s"] <= 0.020]
    assert hits.height == len(by_hand) > 0
    # one GPU reads 70.5 GB of fp8 weights + 64 x 4,097 x 327,680 B = 85.9 GB of bf16 KV per step:
    # 156 GB in 20 ms needs 7.8 TB/s and 156 GB of memory (after a 10% reserve): only the B200 (8 TB/s, 180 GB)
    assert (70.5e9 + 64 * 4097 * 327680) / 0.020 < 8e12
    assert set(hits.filter(pl.col("num_gpus") == 1)["gpu"]) == {"b200"}
    text = answer(fp8, hits)
    assert text.startswith(f"{hits.height} of {fp8.height} scenarios meet these limits")


def test_limits_combine_and_empty_results_are_explained(cat, grid):
    """An impossible limit leaves nothing and the answer says so; an empty sweep says it is empty."""
    result = sweep(cat, grid)
    none = filter_results(result, max_tpot_s=1e-5)
    assert none.is_empty()
    assert answer(result, none).startswith("Nothing meets these limits: 0 of")
    assert answer(sweep(cat, pl.DataFrame()), pl.DataFrame()) == "The sweep is empty."
    compute = filter_results(result, bound="compute", fits_only=False)
    assert set(compute["bound"]) <= {"compute"}


def test_display_units_and_parquet_round_trip(cat, grid):
    """The display shows ms and GB; the Parquet file holds the same rows in SI units."""
    result = sweep(cat, grid)
    shown = sweep_display(result)
    assert shown["time per output token (ms)"].to_list() == [None if v is None else v * 1e3 for v in result["time_per_output_token_s"]]
    back = pl.read_parquet(io.BytesIO(parquet_bytes(result)))
    assert_frame_equal(back, result)
