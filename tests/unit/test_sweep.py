"""Sweeps: a grid evaluated as one frame gives, row by row, what each scenario gives alone."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import polars as pl
import pytest

from core.model.ceilings import ScenarioArrays, evaluate, scenario_steps
from core.model.engine import Steps, StepSums, count_at_most, distinct_rows, operation_costs, time_steps
from core.model.sweep import SWEEP_COLUMNS, scenario_grid, sweep


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


def test_engine_equals_the_per_operation_table_summed(cat):
    """The engine (work per distinct step, operations sorted by intensity, each step read at its
    ridge) gives what summing the plain per-operation table gives, step by step.

    Steps span TP degrees, precisions a GPU lacks (fp8 on A100, fp4 on H100: nearest wider
    peak), windows (Gemma 3), MoE, MLA prefill and decode, unfused attention, derating,
    prefills on top of a cache, a step repeated on several accelerators, and no peak at all.
    """
    grid = scenario_grid(
        ["h100-sxm", "a100-80gb-sxm", "mi300x", "l4", "tpu-v4"],
        ["llama-3.1-8b", "gemma-3-27b", "mixtral-8x7b", "deepseek-v3"],
        weights=["bf16", "fp8", "fp4", "fp32"],
        batches=[1, 37, 1024],
        contexts=[1, 5000, 131072],
        num_gpus=[1, 8],
    ).with_columns(
        pl.when(pl.col("num_gpus") == 8).then(0.8).otherwise(1.0).alias("eff_bandwidth"),
        pl.lit(0.7).alias("eff_compute"),
        (pl.col("context") != 5000).alias("flash_attention"),
    )
    st = scenario_steps(cat, ScenarioArrays.of(cat, grid))
    # every other step is a prefill of `batch` x 300-token prompts on top of the cache
    odd = st.decode.batch % 2 == 1
    d = st.decode
    steps = Steps(d.model, d.num_gpus, d.weight_bytes, d.kv_bytes, d.act_bytes, d.batch, np.where(odd, 300.0, 1.0), d.cached, odd, d.flash)
    assert np.isnan(st.peak).any() and (~np.isnan(st.peak)).any()  # fp32 on TPU v4: no peak
    fast = time_steps(cat.ops_matrix, steps, st.bandwidth, st.peak)
    table = operation_costs(cat.ops_matrix, steps, st.bandwidth, st.peak)
    memory = pl.col("bound") == "memory"
    slow = (
        table.group_by("step")
        .agg(
            pl.col("flops").sum(),
            pl.col("bytes").sum(),
            pl.col("weight_bytes").sum(),
            pl.col("kv_read_bytes").sum(),
            pl.col("kv_write_bytes").sum(),
            pl.col("time_s").sum().alias("ops_time_s"),
            pl.col("time_s").filter(memory).sum().alias("memory_bound_time_s"),
            pl.col("time_s").filter(~memory).sum().alias("compute_bound_time_s"),
        )
        .sort("step")
    )
    assert slow["step"].to_list() == list(range(len(steps)))
    for name in (f.name for f in fields(StepSums)):
        assert getattr(fast, name) == pytest.approx(slow[name].to_numpy(), rel=1e-12, abs=1e-300), name
    # both sides of the ridge occur, so the split at the ridge is exercised
    assert 0 < (slow["compute_bound_time_s"] > 0).sum() < len(steps)


@pytest.mark.parametrize("size", [2, 7, 256, 257, 3000])
def test_distinct_rows_groups_like_a_sort_by_rows(size):
    """Both of distinct_rows' paths (plain Python up to 256 rows, Polars above) find the same groups
    as numpy's row-wise unique: first occurrences first, every row mapped to its own values."""
    rng = np.random.default_rng(size)
    columns = {
        "a": rng.integers(0, 3, size),
        "b": rng.choice([0.5, 1.0, np.inf], size),
        "constant": np.full(size, 9),
        "c": rng.integers(0, 2, size).astype(np.int8),
    }
    first, of = distinct_rows(columns)
    table = np.column_stack([columns[n].astype(float) for n in ("a", "b", "constant", "c")])
    _, first_seen, expected_of = np.unique(table, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first_seen)  # numpy numbers groups by value; distinct_rows by first occurrence
    renumber = np.empty_like(order)
    renumber[order] = np.arange(len(order))
    assert first.tolist() == sorted(first_seen.tolist())
    assert of.tolist() == renumber[expected_of.ravel()].tolist()
    assert (table[first][of] == table).all()


def test_count_at_most_is_a_searchsorted_in_each_row():
    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice([0.0, 1.0, 2.5, 7.0, np.inf], (40, 13)), axis=1)
    row_of = rng.integers(0, 40, 500)
    limit = rng.choice([-1.0, 0.0, 1.0, 3.0, 7.0, 1e9, np.inf], 500)
    expected = [int(np.searchsorted(rows[r], x, side="right")) for r, x in zip(row_of, limit, strict=True)]
    assert count_at_most(rows, row_of, limit).tolist() == expected


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        ("batch", [1, 0, 8], "batch: row 1: must be >= 1 and <= 1,000,000, got 0"),
        ("spec_acceptance", [0.5, 0.7, 1.0], "spec_acceptance: row 2: must be >= 0 and < 1, got 1.0"),
        ("context", [4096, -5, 8], "context: row 1: must be >= 0 and <= 10,000,000, got -5"),
        ("num_gpus", [1, None, 2], "num_gpus: row 1: must be >= 1"),
    ],
)
def test_a_frame_value_out_of_its_fields_bounds_is_named_with_its_row(cat, column, values, message):
    """evaluate() on a frame checks every value against the Scenario's own bounds (the same ones pydantic applies to one
    Scenario) and names the first bad one: field, row, bound and value; nothing is evaluated."""
    from core.model.scenario import ScenarioError

    frame = pl.DataFrame({"gpu": ["h100-sxm"] * 3, "model": ["llama-3.1-8b"] * 3}).with_columns(pl.Series(column, values))
    with pytest.raises(ScenarioError) as err:
        evaluate(cat, frame)
    assert str(err.value).startswith(message)
    assert err.value.field == column and err.value.row == 1 + (column == "spec_acceptance")


def test_an_unknown_id_in_a_frame_is_named_with_the_closest_ones(cat):
    from core.catalogue.catalogue import UnknownIdError

    frame = pl.DataFrame({"gpu": ["h100-sxm", "h100"], "model": ["llama-3.1-8b", "llama-3.1-8b"]})
    with pytest.raises(UnknownIdError, match="unknown accelerator 'h100'; did you mean h100-sxm"):
        evaluate(cat, frame)


def test_keep_freed_memory_sets_both_glibc_thresholds_on_linux():
    """serve.py, the CLI and the benchmarks call it; on Linux with glibc (the app's platform) mallopt takes both values."""
    import platform

    from core.model.allocator import keep_freed_memory

    assert keep_freed_memory() is (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")
