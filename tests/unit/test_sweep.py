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


def test_step_sums_equal_the_per_operation_table_summed(cat):
    """The sweep's shortcut (work per distinct key, an as-of join at the ridge for the operations
    other than attention) gives what summing the long per-operation table gives, step by step.

    Steps span TP degrees, precisions a GPU lacks (fp8 on A100, fp4 on H100: nearest wider
    peak), windows (Gemma 3), MoE, MLA prefill and decode, unfused attention and derating.
    """
    from core.ceilings import _steps_with_hardware
    from core.perfmodel import SUM_COLUMNS, operation_costs, operation_sums, step_sums

    grid = scenario_grid(
        ["h100-sxm", "a100-80gb-sxm", "mi300x", "l4"],
        ["llama-3.1-8b", "gemma-3-27b", "mixtral-8x7b", "deepseek-v3"],
        weights=["bf16", "fp8", "fp4"],
        batches=[1, 37, 1024],
        contexts=[1, 5000, 131072],
        num_gpus=[1, 8],
    )
    steps = grid.select(
        pl.int_range(pl.len(), dtype=pl.UInt64).alias("step_id"),
        pl.col("gpu").alias("gpu_id"),
        pl.col("model").alias("model_id"),
        "num_gpus",
        "weights",
        pl.col("weights").alias("compute"),
        pl.col("kv"),
        "batch",
        # every other step is a prefill of `batch` x 300-token prompts on top of the cache
        pl.when(pl.col("batch") % 2 == 1).then(300).otherwise(1).alias("q"),
        pl.col("context").alias("cached"),
        (pl.col("batch") % 2 == 1).alias("prefill"),
        pl.when(pl.col("num_gpus") == 8).then(0.8).otherwise(1.0).alias("eff_bandwidth"),
        pl.lit(0.7).alias("eff_compute"),
        (pl.col("context") != 5000).alias("flash"),
        pl.lit(0.0).alias("overhead_s"),
    )
    hw = _steps_with_hardware(cat, steps)
    fast = step_sums(hw, cat.attn_ops, cat.other_ops).collect()
    # the step frame comes back in the order it went in (evaluate relies on it)
    assert fast["step_id"].to_list() == list(range(steps.height))
    slow = operation_sums(operation_costs(hw, cat.ops.lazy())).collect().sort("step_id")
    assert fast.height == slow.height == steps.height
    for col in SUM_COLUMNS:
        assert fast[col].to_numpy() == pytest.approx(slow[col].to_numpy(), rel=1e-12, abs=1e-300), col
    # both sides of the ridge occur, so the as-of split is exercised
    assert 0 < (slow["compute_bound_time_s"] > 0).sum() < steps.height
