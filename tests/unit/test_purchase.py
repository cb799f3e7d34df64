"""Comparing accelerators for one workload (core.purchase), including seed 004's L40S against A100 80GB."""

from __future__ import annotations

import polars as pl
import pytest

from core.model.ceilings import evaluate
from core.model.scenario import Scenario
from core.plan.purchase import TARGET_BATCHES, compare_accelerators, price_table
from core.present.readings import comparison_reading
from core.present.tables import comparison_display

BATCH_1_8B = Scenario(gpu="l40s", model="llama-3.1-8b", batch=1)


def _row(table: pl.DataFrame, gpu: str) -> dict:
    return table.filter(pl.col("gpu") == gpu).row(0, named=True)


def test_l40s_vs_a100_at_batch_1_decode(cat):
    """Seed 004: the L40S has the higher bf16 peak, the A100 80GB 2.36x the bandwidth; batch-1 decode is ~2.4x faster on the A100."""
    table = compare_accelerators(cat, ["l40s", "a100-80gb-sxm"], BATCH_1_8B)
    assert table["gpu"].to_list() == ["a100-80gb-sxm", "l40s"]  # sorted by tokens/s, best first
    a100, l40s = _row(table, "a100-80gb-sxm"), _row(table, "l40s")
    assert l40s["peak_flops"] > a100["peak_flops"]
    assert a100["num_gpus"] == l40s["num_gpus"] == 1 and a100["batch"] == l40s["batch"] == 1
    ratio = a100["tokens_per_s_per_user"] / l40s["tokens_per_s_per_user"]
    assert 2.3 <= ratio <= 2.45
    assert ratio == pytest.approx(2.039 / 0.864, rel=0.01)  # memory-bound: the bandwidth ratio
    text = comparison_reading(table)
    assert "2.4× faster per user than NVIDIA L40S" in text
    assert "despite a lower bf16 peak" in text


def test_cost_per_million_tokens_and_per_watt(cat):
    """$2 per GPU-hour at T tokens/s on n GPUs costs 2 n / (3,600 T) x 1e6 $ per million; tokens/s per W = T / (n x 400 W)."""
    table = compare_accelerators(cat, ["a100-80gb-sxm", "l40s"], BATCH_1_8B, prices={"a100-80gb-sxm": 2.0})
    a100, l40s = _row(table, "a100-80gb-sxm"), _row(table, "l40s")
    t = a100["tokens_per_s_total"]
    assert a100["usd_per_million_tokens"] == pytest.approx(2.0 / (3600 * t) * 1e6, rel=1e-12)
    assert a100["tokens_per_s_per_watt"] == pytest.approx(t / 400.0, rel=1e-12)
    assert l40s["usd_per_million_tokens"] is None  # no price entered


def test_service_target_picks_fewest_gpus_then_the_largest_batch(cat):
    """70B in fp8 on H100: one GPU reads 70.6 GB per token (21 ms > 20 ms), so two are needed; the batch is the largest meeting 20 ms."""
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-70b", weights="fp8", kv="fp8")
    assert 70.5e9 / 3.35e12 > 0.020
    row = _row(compare_accelerators(cat, ["h100-sxm"], sc, max_tpot_s=0.020, max_ttft_s=1.0), "h100-sxm")
    assert row["status"] == "ok" and row["num_gpus"] == 2
    assert row["time_per_output_token_s"] <= 0.020 and row["ttft_s"] <= 1.0
    nxt = TARGET_BATCHES[TARGET_BATCHES.index(row["batch"]) + 1]
    after = evaluate(cat, [Scenario(**{**sc.model_dump(), "num_gpus": 2, "batch": nxt})]).row(0, named=True)
    assert not after["fits"] or after["time_per_output_token_s"] > 0.020


def test_impossible_targets_and_models_that_never_fit_are_named(cat):
    """A 10 µs target misses everywhere (even 64 GPUs need ~75 µs to read 16 GB); Kimi K2 in bf16 (2 TB) does not fit on 64 L4s (1.5 TB); figures stay empty."""
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b")
    missed = compare_accelerators(cat, ["h100-sxm", "b200"], sc, max_tpot_s=1e-5)
    assert set(missed["status"]) == {"misses the target"}
    assert missed["tokens_per_s_total"].null_count() == 2
    huge = compare_accelerators(cat, ["l4"], Scenario(gpu="l4", model="kimi-k2"))
    assert huge["status"].to_list() == ["does not fit on 64 GPUs"]


def test_no_accelerator_gives_an_empty_table(cat):
    """No accelerator chosen: an empty table with the documented columns, and no reading."""
    table = compare_accelerators(cat, [], BATCH_1_8B)
    assert table.is_empty()
    assert comparison_display(table).is_empty()
    assert comparison_reading(table) == ""


def test_price_table_defaults_to_enter_your_price(cat):
    """No reviewed prices ship: every default is 0 with the source 'enter your price'; entered prices are kept."""
    prices = price_table(cat, ["l40s", "h100-sxm"], {"h100-sxm": 2.5})
    assert prices["usd_per_gpu_hour"].to_list() == [0.0, 2.5]
    assert prices["source"].to_list() == ["enter your price", "your price"]
