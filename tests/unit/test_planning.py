"""The ceiling calculator's computations: step breakdown, memory use, frontier, what-ifs (core.plan.planning).

Expected values are derived by hand from the model shapes and the datasheets,
not read back from the code under test: Llama 3.1 70B has 80 layers, 8 KV
heads of 128 dims (KV = 2 x 8 x 128 x 2 bytes = 4,096 B per token per layer
in bf16, 327,680 B per token); Llama 3.1 8B has 32 such layers (131,072 B per
token); H100 SXM: 3.35 TB/s, 80 GB, 989.4 TFLOP/s bf16, NVLink 900 GB/s.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.plan.planning import (
    COMPONENTS,
    default_draft_model,
    frontier,
    memory_use,
    more_bandwidth_accelerator,
    ridge_batch,
    step_breakdown,
    what_ifs,
)
from core.present.readings import frontier_reading

KV_70B = 2 * 8 * 128 * 2 * 80  # bytes per token, bf16
KV_8B = 2 * 8 * 128 * 2 * 32
SEED_70B = Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=1, context=1024)


def _parts(frame: pl.DataFrame) -> dict[str, float]:
    return dict(zip(frame["component"], frame["time_s"], strict=True))


def test_breakdown_of_70b_on_two_h100_at_batch_1(cat):
    """Weights: ~139 GB read over 2 x 3.35 TB/s = 20.7 ms; KV: 1,025 tokens read + 1 written, halved per GPU; no compute-bound time."""
    parts = _parts(step_breakdown(cat, SEED_70B))
    rec = cat.model("llama-3.1-70b")
    params = cat.models.filter(pl.col("id") == "llama-3.1-70b")["total_params"][0]
    # every weight but the embedding table (one row gathered) is read once: 2 bytes each
    weights_read = (params - rec.vocab_size * rec.hidden_size + rec.hidden_size) * 2
    assert parts["weights"] == pytest.approx(weights_read / (2 * 3.35e12), rel=1e-4)
    assert parts["weights"] == pytest.approx(0.0207, abs=0.0001)
    assert parts["KV cache"] == pytest.approx(KV_70B * 1026 / 2 / 3.35e12, rel=1e-9)
    assert parts["compute"] == 0.0
    # two all-reduces per layer of 8,192 bf16 activations: each the published 6 µs small all-reduce on HGX H100
    # (NVIDIA/nccl issue 1259) plus 2 (n-1)/n of the message over 450 GB/s one way
    assert parts["communication"] == pytest.approx(2 * 80 * (6e-6 + 2 * 0.5 * 8192 * 2 / 450e9), rel=1e-9)
    assert parts["draft model"] == parts["overhead"] == 0.0


def test_breakdown_adds_up_to_the_cycle_time(cat):
    """The components sum to the cycle time the ceilings report, with speculation and overhead too."""
    for sc in (
        SEED_70B,
        Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=512, context=8192, overhead_s=0.002),
        Scenario(gpu="a100-80gb-sxm", model="llama-3.1-8b", batch=8, spec_draft_len=4, spec_draft_model="llama-3.2-1b"),
    ):
        r = ceiling(cat, sc)
        frame = step_breakdown(cat, sc, r)
        assert frame["component"].to_list() == list(COMPONENTS)
        assert frame["time_s"].sum() == pytest.approx(r["cycle_time_s"], rel=1e-12)
        assert frame["share"].sum() == pytest.approx(1.0, rel=1e-12)


def test_breakdown_counts_draft_steps_and_compute_at_large_batch(cat):
    """k = 4 draft steps appear as 4 x the draft's step time; at batch 1,024 the matmuls are compute-bound."""
    sc = Scenario(gpu="a100-80gb-sxm", model="llama-3.1-8b", batch=8, spec_draft_len=4, spec_draft_model="llama-3.2-1b")
    r = ceiling(cat, sc)
    assert _parts(step_breakdown(cat, sc, r))["draft model"] == pytest.approx(4 * r["draft_step_time_s"], rel=1e-12)
    big = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1024, context=128)
    assert _parts(step_breakdown(cat, big))["compute"] > 0


def test_memory_use_of_the_seed_scenario(cat):
    """Weights 2 bytes x params, KV 327,680 B x 1,024 tokens, reserve 10% of 160 GB; the rest is free."""
    r = ceiling(cat, SEED_70B)
    params = cat.models.filter(pl.col("id") == "llama-3.1-70b")["total_params"][0]
    mem = dict(zip(*memory_use(r).select("segment", "bytes").to_dict(as_series=False).values(), strict=True))
    assert mem["weights"] == pytest.approx(2 * params, rel=1e-12)
    assert mem["KV cache"] == pytest.approx(KV_70B * 1024, rel=1e-12)
    assert mem["reserve"] == pytest.approx(16e9, rel=1e-12)
    assert mem["free"] == pytest.approx(160e9 - 2 * params - KV_70B * 1024 - 16e9, rel=1e-9)
    # largest batch: (144 GB usable - weights) / KV per sequence
    assert r["max_batch"] == math.floor((144e9 - 2 * params) / (KV_70B * 1024)) == 8


def test_frontier_is_cut_where_memory_runs_out(cat):
    """70B on 2 x H100 at context 1,024 holds 8 sequences: larger batches carry no throughput; the ridge batch 296 lies beyond."""
    front = frontier(cat, SEED_70B)
    fitting = front.filter(pl.col("fits"))
    assert fitting["batch"].to_list() == [1, 2, 4, 8]
    assert front.filter(~pl.col("fits"))["tokens_per_s_total"].null_count() == front.filter(~pl.col("fits")).height
    assert front.filter(pl.col("is_cut"))["batch"].to_list() == [8]
    assert front.filter(pl.col("is_ridge"))["batch"].to_list() == [296]  # ceil(295.34 x 2 bytes / 2)
    assert front.filter(pl.col("is_current"))["batch"].to_list() == [1]
    # batch 1 is the scenario's own ceiling; total = batch x per user; per user falls as the batch grows
    assert fitting["tokens_per_s_per_user"][0] == pytest.approx(ceiling(cat, SEED_70B)["tokens_per_s_per_user"], rel=1e-12)
    assert (fitting["tokens_per_s_total"] - fitting["batch"] * fitting["tokens_per_s_per_user"]).abs().max() < 1e-6
    assert fitting["tokens_per_s_per_user"].diff().drop_nulls().max() <= 0
    assert "beyond the memory cut" in frontier_reading(cat, SEED_70B, front)


def test_frontier_marks_a_ridge_batch_that_fits(cat):
    """Llama 3.1 8B on one H100 at context 1,024 fits ~416 sequences, so batch 296 (the bf16 ridge) is on the frontier."""
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=32, context=1024)
    assert ridge_batch(cat, sc, ceiling(cat, sc)) == 296
    front = frontier(cat, sc)
    assert front.filter(pl.col("is_ridge") & pl.col("fits")).height == 1
    assert "reach the ridge at batch 296" in frontier_reading(cat, sc, front)
    # fp8 weights: 1 byte per weight halves the batch the ridge needs at the fp8 ridge (590.7 / 2 -> 296)
    fp8 = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=32, context=1024, weights="fp8")
    assert ridge_batch(cat, fp8, ceiling(cat, fp8)) == 296


def test_frontier_of_a_model_that_never_fits_is_empty(cat):
    """405B in bf16 on one L4 fits at no batch: no fitting row, and the reading says so."""
    sc = Scenario(gpu="l4", model="llama-3.1-405b")
    front = frontier(cat, sc)
    assert front.filter(pl.col("fits")).is_empty()
    assert frontier_reading(cat, sc, front).startswith("Nothing fits")


def _lever(table: pl.DataFrame, name: str) -> dict:
    return table.filter(pl.col("lever") == name).row(0, named=True)


def test_what_ifs_for_8b_on_h100_at_batch_1(cat):
    """Each lever's per-user change matches the bytes it removes (decode at batch 1 is memory-bound).

    Bytes per step: weights P = 8.03e9 - 128,256 x 4,096 embedding = 7.50e9
    parameters read, plus KV 131,072 B x 4,097 tokens = 0.537 GB.
    """
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1, context=4096)
    table = what_ifs(cat, sc)
    assert table["lever"].to_list()[0] == "current scenario"
    params = cat.models.filter(pl.col("id") == "llama-3.1-8b")["total_params"][0]
    p = params - 128256 * 4096
    kv = KV_8B * 4097
    bf16 = 2 * p + kv
    assert _lever(table, "fp8 weights")["change_tokens_per_s_per_user"] == pytest.approx(bf16 / (p + kv), rel=0.01)
    assert _lever(table, "int4 weights")["change_tokens_per_s_per_user"] == pytest.approx(bf16 / (p * 4.125 / 8 + kv), rel=0.01)
    assert _lever(table, "fp8 KV cache")["change_tokens_per_s_per_user"] == pytest.approx(bf16 / (2 * p + kv / 2), rel=0.002)
    more = _lever(table, "more bandwidth")
    assert "H200 SXM" in more["change"]
    assert more["change_tokens_per_s_per_user"] == pytest.approx(4.8 / 3.35, rel=1e-6)
    # two GPUs halve the memory time but add 64 all-reduces, each 6 µs (HGX H100, NVIDIA/nccl issue 1259) + the ring term
    one = ceiling(cat, sc)
    comm = 2 * 32 * (6e-6 + 2 * 0.5 * 4096 * 2 / 450e9)
    assert _lever(table, "twice the GPUs")["change_tokens_per_s_per_user"] == pytest.approx(
        one.step_time_s / (one.step_time_s / 2 + comm), rel=0.01
    )
    assert _lever(table, "twice the GPUs")["change_tokens_per_s_per_user"] < 1.8
    bigger = _lever(table, "larger batch")
    assert bigger["change_tokens_per_s_total"] == pytest.approx(4 * bigger["change_tokens_per_s_per_user"], rel=1e-9)
    spec = _lever(table, "speculative decoding")
    assert "Llama 3.2 1B" in spec["change"]
    assert spec["change_tokens_per_s_per_user"] > 1.5
    # the time per output token moves inversely to tokens/s per user
    for row in table.iter_rows(named=True):
        assert row["change_time_per_output_token_s"] == pytest.approx(1 / row["change_tokens_per_s_per_user"], rel=1e-9)


def test_levers_that_cannot_apply_say_why(cat):
    """Already int4 weights and fp8 KV: those levers keep a row with no figures and a reason."""
    sc = Scenario(gpu="b300", model="deepseek-v3", weights="int4", kv="fp8", num_gpus=8, batch=1)
    table = what_ifs(cat, sc)
    for name, why in (("int4 weights", "already int4"), ("fp8 KV cache", "already fp8"), ("speculative decoding", "no smaller model")):
        row = _lever(table, name)
        assert why in row["change"]
        assert row["tokens_per_s_per_user"] is None


def test_draft_model_and_faster_accelerator_choices(cat):
    """Drafts share family and vocabulary with a third of the parameters or fewer; bandwidth steps are at least 1.25x."""
    assert default_draft_model(cat, "llama-3.1-70b") == "llama-3.2-1b"
    assert default_draft_model(cat, "qwen3-32b") == "qwen3-8b"
    assert default_draft_model(cat, "deepseek-v3") is None
    assert more_bandwidth_accelerator(cat, "h100-sxm") == "h200-sxm"  # 4.8 TB/s, same vendor; SXM over NVL on the higher peak
    assert more_bandwidth_accelerator(cat, "l40s") == "a100-40gb-sxm"  # 1.555 TB/s: the least NVIDIA bandwidth >= 1.25 x 0.864
