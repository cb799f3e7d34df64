"""Property tests (hypothesis) of the roofline, step times, MoE reads, memory fit and speculative decoding."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.catalogue.catalogue import Catalogue
from core.catalogue.operations import OPS_SCHEMA, OpMatrix
from core.model.ceilings import evaluate, operation_table
from core.model.engine import Steps, operation_work
from core.model.scenario import Scenario

PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

GPUS = ["h100-sxm", "a100-80gb-sxm", "l40s", "mi300x", "b200", "tpu-v5e", "l4", "gaudi2"]
MODELS = ["llama-3.2-1b", "llama-3.1-8b", "mixtral-8x7b", "gemma-2-9b", "deepseek-v3", "qwen3-30b-a3b", "gpt-oss-20b", "falcon-40b"]
WEIGHTS = ["bf16", "fp8", "int4", "nvfp4"]
MOE_MODELS = ["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b", "llama-4-scout"]

scenarios = st.builds(
    Scenario,
    gpu=st.sampled_from(GPUS),
    model=st.sampled_from(MODELS),
    num_gpus=st.sampled_from([1, 2, 4, 8, 16]),
    weights=st.sampled_from(WEIGHTS),
    kv=st.sampled_from(["bf16", "fp8"]),
    batch=st.integers(1, 1024),
    context=st.integers(1, 65536),
    prompt=st.integers(1, 8192),
    eff_bandwidth=st.floats(0.3, 1.0),
    eff_compute=st.floats(0.3, 1.0),
    flash_attention=st.booleans(),
)


@PROPS
@given(s=scenarios, phase=st.sampled_from(["decode", "prefill"]))
def test_no_operation_above_its_roof(cat: Catalogue, s: Scenario, phase: str) -> None:
    """For every op row, achieved FLOP/s per GPU (FLOPs / n / time) <= min(P, B x I) of the derated roof, I = FLOPs / bytes."""
    table = operation_table(cat, s, phase=phase)
    info = evaluate(cat, [s]).row(0, named=True)
    P = info["peak_flops"] * s.eff_compute
    B = info["bandwidth_bytes_per_s"] * s.eff_bandwidth
    assert P > 0 and B > 0
    for r in table.iter_rows(named=True):
        assert r["time_s"] >= 0
        if r["flops"] == 0:
            continue
        assert r["time_s"] > 0, r["op"]
        achieved = r["flops"] / s.num_gpus / r["time_s"]
        roof = min(P, B * r["flops"] / r["bytes"])
        assert achieved <= roof * (1 + 1e-9), f"{r['op']}: {achieved:.4g} above roof {roof:.4g}"


def _step_times(cat: Catalogue, scens: list[Scenario]) -> list[float]:
    out = evaluate(cat, scens).sort("scenario_id")
    return out["step_time_s"].to_list()


@PROPS
@given(s=scenarios, b2=st.integers(1, 2048))
def test_step_time_non_decreasing_in_batch(cat: Catalogue, s: Scenario, b2: int) -> None:
    """More sequences in a decode step never make the step faster (same context, GPUs, precisions)."""
    lo, hi = sorted((s.batch, b2))
    t_lo, t_hi = _step_times(cat, [s.model_copy(update={"batch": lo}), s.model_copy(update={"batch": hi})])
    assert t_lo <= t_hi * (1 + 1e-12)


@PROPS
@given(s=scenarios, c2=st.integers(1, 200_000))
def test_step_time_non_decreasing_in_context(cat: Catalogue, s: Scenario, c2: int) -> None:
    """A longer cached context never makes a decode step faster (windowed layers saturate, they never shrink)."""
    lo, hi = sorted((s.context, c2))
    t_lo, t_hi = _step_times(cat, [s.model_copy(update={"context": lo}), s.model_copy(update={"context": hi})])
    assert t_lo <= t_hi * (1 + 1e-12)


@PROPS
@given(s=scenarios, p2=st.integers(1, 16384))
def test_ttft_non_decreasing_in_prompt(cat: Catalogue, s: Scenario, p2: int) -> None:
    """A longer prompt never gives a shorter time to first token."""
    lo, hi = sorted((s.prompt, p2))
    out = evaluate(cat, [s.model_copy(update={"prompt": lo}), s.model_copy(update={"prompt": hi})]).sort("scenario_id")
    t_lo, t_hi = out["ttft_s"].to_list()
    assert t_lo <= t_hi * (1 + 1e-12)


# -- MoE: distinct experts between k and E -------------------------------------------------


@PROPS
@given(model=st.sampled_from(MOE_MODELS), batch=st.integers(1, 4096), b2=st.integers(1, 4096))
def test_moe_expert_reads_between_k_and_E(cat: Catalogue, model: str, batch: int, b2: int) -> None:
    """Expert weight bytes / (layers x params per expert x bytes) lies in [k, E] and grows with batch."""
    rec = cat.model(model)
    per_expert = cat.ops.filter((pl.col("model_id") == model) & (pl.col("kind") == "moe"))["params"].unique()
    assert per_expert.len() == 1

    def distinct(b: int) -> float:
        t = operation_table(cat, Scenario(gpu="h100-sxm", model=model, batch=b, context=10))
        row = t.filter(pl.col("kind") == "moe").row(0, named=True)
        return row["weight_bytes"] / (row["layers"] * per_expert[0] * 2.0)

    k, E = rec.experts_per_token, rec.num_experts
    d1, d2 = distinct(min(batch, b2)), distinct(max(batch, b2))
    for d in (d1, d2):
        assert k * (1 - 1e-9) <= d <= E * (1 + 1e-9)
    assert d1 <= d2 * (1 + 1e-12)
    if min(batch, b2) == 1:
        assert d1 == pytest.approx(k, rel=1e-9)


def _moe_ops(E: int, k: int) -> pl.DataFrame:
    row = {c: None for c in OPS_SCHEMA}
    row.update(
        model_id="x",
        group="MoE layers",
        op="experts (routed)",
        kind="moe",
        layers=1,
        params=1.0,
        in_dim=2.0,
        out_dim=3.0,
        experts=float(E),
        top_k=float(k),
    )
    return pl.DataFrame([row], schema=OPS_SCHEMA)


@settings(max_examples=40, deadline=None)
@given(E=st.integers(1, 512), data=st.data(), batch=st.integers(1, 100_000))
def test_engine_distinct_expert_formula(E: int, data: st.DataObject, batch: int) -> None:
    """core.model.engine on a one-row MoE table: distinct experts = E(1-(1-k/E)^T) in [k, E], k exactly at T = 1."""
    k = data.draw(st.integers(1, E))
    ops = OpMatrix.of(_moe_ops(E, k), ["x"])
    one = np.ones(2)
    steps = Steps(
        model=np.zeros(2, dtype=np.intp),
        num_gpus=one,
        weight_bytes=one,
        kv_bytes=one,
        act_bytes=one,
        batch=np.array([batch, 1.0]),
        q=one,
        cached=np.zeros(2),
        prefill=np.zeros(2, dtype=bool),
        flash=np.ones(2, dtype=bool),
    )
    work = operation_work(ops.take(steps.model), steps)
    d_big, d_one = work.weight_bytes[:, 0]  # params 1, 1 byte: weight bytes = distinct experts
    assert d_one == pytest.approx(k, rel=1e-9)
    assert k * (1 - 1e-9) <= d_big <= E * (1 + 1e-9)
    # independent form: the complement of "expert e missed by every one of T tokens"
    p_miss = math.exp(batch * math.log1p(-k / E)) if k < E else 0.0
    assert d_big == pytest.approx(E * (1 - p_miss), rel=1e-9, abs=1e-9)


# -- memory fit ----------------------------------------------------------------------


@PROPS
@given(batch=st.integers(1, 1024), context=st.integers(1, 131072), weights=st.sampled_from(["bf16", "fp8", "int4"]))
def test_405b_never_fits_one_l4(cat: Catalogue, batch: int, context: int, weights: str) -> None:
    """Llama 3.1 405B on one 24 GB L4 does not fit in any precision: fits False, every throughput null, a 'does not fit' flag."""
    c = evaluate(
        cat, [Scenario(gpu="l4", model="llama-3.1-405b", weights=weights, batch=batch, context=context, usd_per_gpu_hour=1.0)]
    ).row(0, named=True)
    assert c["fits"] is False
    for col in (
        "tokens_per_s_per_user",
        "tokens_per_s_total",
        "time_per_output_token_s",
        "usd_per_million_tokens",
        "tokens_per_s_per_watt",
    ):
        assert c[col] is None, col
    assert any("does not fit" in f for f in c["flags"])
    # 405.85e9 weights x bytes alone exceed 24 GB x 0.9 usable
    assert c["weight_memory_bytes"] > 24e9 * 0.9


@PROPS
@given(s=scenarios)
def test_fit_and_throughput_are_consistent(cat: Catalogue, s: Scenario) -> None:
    """fits <=> weights + KV <= n x memory x (1 - reserve); a throughput is reported exactly when the scenario fits."""
    c = evaluate(cat, [s]).row(0, named=True)
    usable = s.num_gpus * cat.gpu(s.gpu).memory_bytes * (1 - s.reserve_fraction)
    need = c["weight_memory_bytes"] + c["kv_memory_bytes"]
    assert c["fits"] == (need <= usable * (1 + 1e-12)) or math.isclose(need, usable, rel_tol=1e-9)
    if c["fits"]:
        assert c["tokens_per_s_total"] is not None and c["tokens_per_s_total"] > 0
        assert c["tokens_per_s_total"] == pytest.approx(c["tokens_per_s_per_user"] * s.batch, rel=1e-12)
    else:
        assert c["tokens_per_s_per_user"] is None and c["tokens_per_s_total"] is None


# -- speculative decoding -----------------------------------------------------------------


@PROPS
@given(a=st.floats(0.0, 0.99), k=st.integers(1, 16))
def test_speculative_tokens_per_step(cat: Catalogue, a: float, k: int) -> None:
    """Expected tokens per verify step = (1 - a^(k+1)) / (1 - a) = 1 + a + ... + a^k; per-user rate = that / (target + k draft steps)."""
    s = Scenario(
        gpu="h100-sxm", model="llama-3.1-8b", batch=4, context=2000, spec_draft_len=k, spec_acceptance=a, spec_draft_model="llama-3.2-1b"
    )
    c = evaluate(cat, [s]).row(0, named=True)
    expected = sum(a**i for i in range(k + 1))
    assert c["tokens_per_step"] == pytest.approx(expected, rel=1e-9)
    assert 1.0 <= c["tokens_per_step"] <= k + 1
    assert c["cycle_time_s"] == pytest.approx(c["step_time_s"] + k * c["draft_step_time_s"], rel=1e-12)
    assert c["tokens_per_s_per_user"] == pytest.approx(expected / c["cycle_time_s"], rel=1e-9)


def test_speculative_without_draft_model_is_ignored(cat: Catalogue) -> None:
    """A draft length without a draft model changes nothing and says so in the flags."""
    plain = evaluate(cat, [Scenario(gpu="h100-sxm", model="llama-3.1-8b")]).row(0, named=True)
    c = evaluate(cat, [Scenario(gpu="h100-sxm", model="llama-3.1-8b", spec_draft_len=4, spec_acceptance=0.8)]).row(0, named=True)
    assert c["tokens_per_step"] == 1.0
    assert c["tokens_per_s_per_user"] == pytest.approx(plain["tokens_per_s_per_user"], rel=1e-12)
    assert any("no draft model" in f for f in c["flags"])


def test_context_zero_is_evaluated(cat: Catalogue) -> None:
    """A decode step with an empty cache (context 0, valid per Scenario) is evaluated: it fits, has a
    throughput, and memory sets no batch limit (max_batch is null, not infinity)."""
    c = evaluate(cat, [Scenario(gpu="h100-sxm", model="llama-3.2-1b", context=0)]).row(0, named=True)
    assert c["fits"] is True
    assert c["tokens_per_s_per_user"] > 0
    assert c["max_batch"] is None


def test_a_compute_format_with_no_supported_peak_gets_no_throughput(cat: Catalogue) -> None:
    """fp32 compute on TPU v4 (no fp32 or wider peak listed): flagged, and no tokens/s or TTFT is reported."""
    c = evaluate(cat, [Scenario(gpu="tpu-v4", model="llama-3.2-1b", weights="fp32")]).row(0, named=True)
    assert c["tokens_per_s_per_user"] is None
    assert c["ttft_s"] is None
    assert any("unsupported" in f for f in c["flags"])
