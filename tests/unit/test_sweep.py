"""Sweeps: a grid evaluated as one frame gives, row by row, what each scenario gives alone."""

from __future__ import annotations

import polars as pl
import pytest

from core.ceilings import evaluate
from core.sweep import SWEEP_COLUMNS, scenario_grid, sweep


def test_grid_rows_match_single_scenario_evaluations_in_order(cat):
    """Row i of a multi-scenario evaluation is scenario i (joins inside must not reorder rows)."""
    grid = scenario_grid(
        ["h100-sxm", "mi300x", "l4"],
        ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3"],
        weights=["bf16", "int4"],
        batches=[1, 64],
        contexts=[1024, 131072],
        num_gpus=[1, 8],
    )
    full = evaluate(cat, grid)
    assert full["scenario_id"].to_list() == list(range(grid.height))
    for i in range(0, grid.height, 7):
        alone = evaluate(cat, grid[i : i + 1]).row(0, named=True)
        row = full.row(i, named=True)
        assert (row["gpu"], row["model"], row["batch"], row["context"]) == (alone["gpu"], alone["model"], alone["batch"], alone["context"])
        assert row["step_time_s"] == pytest.approx(alone["step_time_s"], rel=1e-12)
        assert row["ttft_s"] == pytest.approx(alone["ttft_s"], rel=1e-12)
        assert row["fits"] == alone["fits"]


def test_sweep_grid_size_and_columns(cat):
    """The grid is the full cross product, and the sweep keeps its documented columns."""
    grid = scenario_grid(["h100-sxm", "b200"], ["llama-3.1-70b"], weights=["bf16", "fp8"], batches=[1, 2, 4], contexts=[4096])
    assert grid.height == 2 * 1 * 2 * 3 * 1
    out = sweep(cat, grid)
    assert out.columns == list(SWEEP_COLUMNS)
    # fp8 weights on B200 compute at the fp8 peak; on H100 too (both have fp8)
    assert set(out.filter(pl.col("weights") == "fp8")["compute_used"]) == {"fp8"}


def test_empty_grid_gives_an_empty_frame(cat):
    """No scenario, no rows, no error."""
    assert sweep(cat, pl.DataFrame()).height == 0
