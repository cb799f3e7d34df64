"""Deployment plans for a request rate (core.plan.deploy): the KV transfer by hand, the simulation against a published
serving run, the issue's three plans, energy by hand, the CLI.

By hand: DeepSeek-V3's MLA cache is one latent of 512 + 64 rope elements per token per layer, 61 layers (config.json:
kv_lora_rank 512, qk_rope_head_dim 64, num_hidden_layers 61), so 35,136 elements per token, 70,272 B in bf16.
H200 SXM: scale-out 400 Gb/s = 50 GB/s per GPU, all-reduce latency 6 us, 700 W.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.cli import main
from core.evidence.predictor import with_predictor
from core.model.scenario import Scenario
from core.plan import load as ld
from core.plan.deploy import Pool, Workload, kv_transfer_s, plan_deployments, plan_split, request_overhead_s, step_times
from core.plan.layouts import Layout, serving_power_w


@pytest.fixture(scope="module")
def pcat(cat):
    """The catalogue with the shipped predicted model."""
    return with_predictor(cat)


def test_kv_transfer_by_hand(cat):
    """A 2,000-token prompt's cache: 2,000 x 70,272 B = 140.5 MB, sent by the prefill instance's 8 GPUs at once, each
    its eighth over 50 GB/s: 0.3514 ms, plus 6 us."""
    sc = Scenario(gpu="h200-sxm", model="deepseek-v3", weights="fp8", kv="bf16")
    w = Workload(prompt=2000, output=500)
    pool = Pool("h200-sxm", Layout(tp=8), 1, 1, None)
    seconds, costed = kv_transfer_s(cat, sc, w, pool, pool)
    assert costed
    assert seconds == pytest.approx(2000 * 61 * 576 * 2 / 8 / 50e9 + 6e-6, rel=1e-9)


@pytest.mark.parametrize(
    ("concurrency", "prompt", "output", "ttft_ms", "tpot_ms"),
    [(1, 610, 421, 140.76, 9.15), (16, 496, 509, 131.71, 17.46)],
)
def test_the_simulation_of_a_published_serving_run(pcat, concurrency, prompt, output, ttft_ms, tpot_ms):
    """The SGLang cookbook's DeepSeek-R1 runs on 8 B200 (TP8, fp8, SGLang 0.5.6.post1; reference rows g2a-0002/0003 and
    g2a-0006/0007, https://github.com/sgl-project/sgl-cookbook/blob/7b5bd9c05e3d86da5161ac2be9b91c19a34bf49d/docs/
    autoregressive/DeepSeek/DeepSeek-R1.md): a closed loop at concurrency 1 and 16, medians printed. The simulation
    on the predicted SGLang step times, plus the request's online overhead before its first token, lands within 10% of
    the median TPOT and 25% of the median TTFT (without that overhead the TTFT would be 67-79% short)."""
    sc = Scenario(gpu="b200", model="deepseek-v3", weights="fp8", kv="bf16", framework="SGLang")
    steps = step_times(pcat, sc, Layout(tp=8), Workload(prompt=prompt, output=output))
    assert steps.basis == "predicted (SGLang)"
    n = concurrency * 40
    result = ld.simulate_closed_loop(ld.Requests(np.zeros(n), np.full(n, prompt), np.full(n, output)), steps, concurrency=concurrency)
    ttft = result.percentile("ttft", 50) + request_overhead_s(pcat, sc)
    assert result.percentile("tpot", 50) == pytest.approx(tpot_ms / 1e3, rel=0.10)
    assert ttft == pytest.approx(ttft_ms / 1e3, rel=0.25)
    assert result.percentile("ttft", 50) < 0.5 * ttft_ms / 1e3  # the overhead matters


@pytest.mark.parametrize(
    ("model", "gpu", "framework"),
    [("deepseek-v3", "h200-sxm", "SGLang"), ("deepseek-v3", "mi300x", "SGLang"), ("llama-3.1-405b", "b200", "vLLM")],
)
def test_the_issues_three_deployments_are_planned_both_ways(pcat, model, gpu, framework):
    """At 10 requests/s of 2,000 + 500 tokens with p90 TTFT <= 2 s and TPOT <= 50 ms: an aggregated and a
    disaggregated plan, each meeting the targets in its simulation, priced, with energy per token GPUs x W / tokens/s."""
    base = Scenario(gpu=gpu, model=model, weights="fp8", kv="fp8", framework=framework)
    w = Workload(rate_per_s=10, prompt=2000, output=500)
    plans = plan_deployments(pcat, base, w, [gpu])
    assert sorted(p.mode for p in plans) == ["aggregated", "disaggregated"]
    power, _ = serving_power_w(pcat, gpu)
    for p in plans:
        assert p.meets and p.ttft_p90_s <= 2.0 and p.tpot_p90_s <= 0.05
        assert p.ttft_p50_s <= p.ttft_p90_s <= p.ttft_p99_s
        assert p.usd_per_million_tokens is not None and p.usd_per_million_tokens > 0
        assert p.usd_per_million_tokens == pytest.approx(p.usd_per_hour / (10 * 500 * 3600) * 1e6)
        assert p.joules_per_token == pytest.approx(p.gpus * power / 5000.0)
        assert p.basis == f"predicted ({framework})"
    split = next(p for p in plans if p.mode == "disaggregated").split
    assert " prefill x " in split and " decode x " in split and gpu in split


def test_more_load_needs_more_instances(pcat):
    """Doubling the rate never makes a plan smaller, and four times the rate takes more GPUs."""
    base = Scenario(gpu="h200-sxm", model="llama-3.1-70b", weights="fp8", kv="fp8", framework="vLLM")
    sizes = []
    for rate in (5.0, 10.0, 20.0):
        plans = plan_deployments(pcat, base, Workload(rate_per_s=rate, prompt=1000, output=300), ["h200-sxm"], modes=("aggregated",))
        sizes.append(plans[0].gpus)
    assert sizes[0] <= sizes[1] <= sizes[2] and sizes[2] > sizes[0]


def test_a_kv_transfer_across_vendors_is_said(pcat):
    base = Scenario(gpu="h200-sxm", model="deepseek-v3", weights="fp8", kv="fp8", framework="SGLang")
    plan = plan_split(pcat, base, Workload(rate_per_s=5), "mi300x", "h200-sxm")
    assert plan is not None and plan.prefill is not None and plan.prefill.gpu == "mi300x"
    assert any("crosses vendors (AMD to NVIDIA)" in n for n in plan.notes)
    assert any("no scale-out figure for mi300x" in n for n in plan.notes)


def test_the_cli_plans_and_refuses_bad_input(capsys, tmp_path):
    db = str(tmp_path / "d.duckdb")
    args = ["deploy", "--db", db, "--gpu", "b200", "--model", "llama-3.1-405b", "--weights", "fp8", "--kv", "fp8", "--json"]
    assert main([*args, "--rate-per-s", "10", "--framework", "vLLM"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {p["mode"] for p in out["plans"]} == {"aggregated", "disaggregated"}
    assert all(p["ttft_p90_s"] <= 2.0 and p["tpot_p90_s"] <= 0.05 and p["meets"] for p in out["plans"])
    assert out["workload"]["rate_per_s"] == 10
    assert main([*args, "--rate-per-s", "-3"]) == 2
    assert "--rate-per-s" in capsys.readouterr().err
    assert main([*args[:4], "b2000", *args[5:]]) == 2
    assert "unknown accelerator 'b2000'" in capsys.readouterr().err


def test_a_trace_is_simulated_and_a_bad_one_named(capsys, tmp_path):
    """Six requests over 1 s (6 requests/s, mean prompt 2,000, mean output 308.3): the plans are sized for that rate and
    the simulation runs the trace itself; a file without the columns is named with what it lacks."""
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "arrival_s,prompt_tokens,output_tokens\n0,2000,300\n0.1,1500,400\n0.25,2500,200\n0.5,2000,300\n0.6,1800,350\n1.0,2200,300\n"
    )
    db = str(tmp_path / "d.duckdb")
    args = ["deploy", "--db", db, "--gpu", "h200-sxm", "--model", "llama-3.1-70b", "--weights", "fp8", "--kv", "fp8", "--json"]
    assert main([*args, "--trace", str(trace)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["workload"]["rate_per_s"] == pytest.approx(6.0)
    assert out["workload"]["prompt"] == 2000 and out["workload"]["output"] == 308
    assert out["plans"] and all(p["goodput_per_s"] is None for p in out["plans"])
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    assert main([*args, "--trace", str(bad)]) == 2
    assert "--trace: bad.csv: no column for arrival time" in capsys.readouterr().err


def test_goodput_is_the_highest_rate_that_meets_the_targets(pcat):
    """A plan sized for 10 requests/s carries at least that; at its goodput it meets both p90 targets, and 10% above
    it (past the bisection's 2%) it does not."""
    from core.plan.deploy import GOODPUT_REQUESTS, plan_goodput, simulate_plan

    base = Scenario(gpu="h200-sxm", model="llama-3.1-70b", weights="fp8", kv="fp8", framework="vLLM")
    w = Workload(rate_per_s=10, prompt=1000, output=300)
    plan = plan_deployments(pcat, base, w, ["h200-sxm"], modes=("aggregated",))[0]
    good = plan_goodput(plan, w)
    assert good is not None and good >= 10

    def meets(rate):
        result = simulate_plan(plan, ld.poisson_requests(rate, w.prompt, w.output, GOODPUT_REQUESTS, 0))
        return result.meets(w.max_ttft_p90_s - plan.steps[3], w.max_tpot_p90_s)

    assert meets(good) and not meets(good * 1.1)


def test_energy_uses_the_published_serving_power_where_there_is_one(cat):
    """H100 SXM: the ten published per-GPU serving figures (ML.ENERGY v3's one-GPU means, its 4-GPU Llama 3.1 70B sum
    over 4, InferenceX's per-GPU means) have the median 580.8 W, below the 700 W TDP; the H200 SXM has none, so its
    board power, 700 W, is the bound used and said."""
    import csv

    from core.store.paths import SEED

    rows = list(csv.DictReader((SEED / "serving_power.csv").open(encoding="utf-8")))
    mine = [
        float(r["value"]) / (1 if r["metric"] == "gpu_power_w" else int(r["num_gpus"]))
        for r in rows
        if r["gpu"] == "h100-sxm" and r["metric"] in ("gpu_power_w", "system_power_w")
    ]
    assert len(mine) == 10
    watts, basis = serving_power_w(cat, "h100-sxm")
    assert watts == pytest.approx(sorted(mine)[4] / 2 + sorted(mine)[5] / 2) and watts == pytest.approx(580.79, abs=0.01)
    assert basis.startswith("measured: the median of 10 published serving figures")
    assert serving_power_w(cat, "h200-sxm") == (700.0, "board power (TDP): the upper bound, no serving figure published")


def test_the_cli_times_one_layout_and_refuses_one_that_cannot_run(capsys, tmp_path, cat):
    from core.plan.layouts import layout_memory, layout_step

    db = str(tmp_path / "d.duckdb")
    argv = ["layout", "--db", db, "--gpu", "h200-sxm", "--model", "deepseek-v3", "--weights", "fp8", "--kv", "fp8", "--batch", "1024"]
    assert main([*argv, "--context", "2048", "--tp", "1", "--dp-attention", "16", "--expert-parallel", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    sc = Scenario(gpu="h200-sxm", model="deepseek-v3", weights="fp8", kv="fp8", batch=1024, context=2048)
    layout = Layout(tp=1, dp_attention=16, expert_parallel=True)
    assert out["layout"] == "DP-attention 16 x EP16" and out["gpus"] == 16
    assert out["ceiling"]["time_s"] == pytest.approx(layout_step(cat, sc, layout).time_s, rel=1e-12)
    assert out["memory"]["max_batch"] == layout_memory(cat, sc, layout).max_batch
    assert out["predicted"]["time_s"] > out["ceiling"]["time_s"]
    assert main([*argv, "--tp", "16"]) == 2
    assert "tensor parallel 16 is past the h200-sxm scale-up domain of 8 GPUs" in capsys.readouterr().err
