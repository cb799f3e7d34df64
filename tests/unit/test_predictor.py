"""The predicted model: each term against a hand computation, the fit recovering known coefficients, no campaign
predicting itself, the shipped fit reproducible, and the scorecard's figures recomputable from its rows."""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np
import polars as pl
import pytest

from core.catalogue.catalogue import load_catalogue
from core.evidence import predictor as pr
from core.evidence.reference import reference_compare
from core.evidence.scorecard import scorecard
from core.model import predicted as pm
from core.model import workload as wl
from core.model.ceilings import ScenarioArrays, achieved_step_times, ceiling, evaluate, operation_table, scenario_steps
from core.model.engine import Steps
from core.model.scenario import Scenario
from core.plan.purchase import compare_accelerators
from core.store import Store


@pytest.fixture(scope="module")
def cat(tmp_path_factory: pytest.TempPathFactory):
    return load_catalogue(Store(tmp_path_factory.mktemp("pred") / "pred.duckdb"))


def _params(**values: float) -> np.ndarray:
    """One row of parameters: every efficiency 1 and every overhead 0 unless given."""
    row = pm.ideal(1)
    for name, v in values.items():
        row[0, pm.P[name]] = v
    return row


def _decode(cat, sc: Scenario):
    s = ScenarioArrays.of(cat, [sc])
    st = scenario_steps(cat, s)
    peak = np.where(st.compute_used >= 0, cat.hardware.peaks[s.gpu, np.maximum(st.compute_used, 0)], np.nan)
    return s, st, peak


# -- each term, by hand ----------------------------------------------------------------------------------------


def test_at_ideal_parameters_the_prediction_is_the_ceiling(cat):
    """Efficiencies 1 and no overheads: the predicted step is the ceiling's step, communication included."""
    for sc in (
        Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=32, context=2048),
        Scenario(gpu="h200-sxm", model="deepseek-v3", num_gpus=8, weights="fp8", batch=64),
        Scenario(gpu="mi300x", model="mixtral-8x7b", batch=256, context=1024),
    ):
        s, st, peak = _decode(cat, sc)
        t, _ = achieved_step_times(cat, st.decode, s.gpu, peak, pm.ideal(1))
        assert t[0] == pytest.approx(ceiling(cat, sc).step_time_s, rel=1e-12)


def test_each_class_efficiency_times_its_own_operations(cat):
    """Operation by operation (the per-operation table, the engine's oracle): max(bytes / (B eta_mem), FLOPs / (P eta_compute))
    with each operation's class's efficiencies, summed."""
    sc = Scenario(gpu="h100-sxm", model="qwen3-30b-a3b", batch=512, context=1024)
    eff = {"elementwise": (0.9, 0.8), "gemm": (0.7, 0.5), "moe": (0.55, 0.4), "attention": (0.6, 0.45)}
    values = {f"eta_mem_{c}": m for c, (m, _) in eff.items()} | {f"eta_compute_{c}": p for c, (_, p) in eff.items()}
    s, st, peak = _decode(cat, sc)
    t, _ = achieved_step_times(cat, st.decode, s.gpu, peak, _params(**values))
    table = operation_table(cat, sc)
    b, p = cat.gpu("h100-sxm").bandwidth_bytes_per_s, float(peak[0])
    by_hand = 0.0
    for row in table.iter_rows(named=True):
        m, c = eff[pm.CLASSES[pm.CLASS_OF_KIND[row["kind"]]]]
        by_hand += max(row["bytes"] / (b * m), row["flops"] / (p * c))  # one GPU: bytes and FLOPs are the step's
    assert t[0] == pytest.approx(by_hand, rel=1e-9)


def test_the_overheads_add_per_kernel_per_step_and_per_sequence(cat):
    """kernels x overhead_kernel + overhead_step + batch x overhead_sequence, kernels = the operation rows' layers summed."""
    sc = Scenario(gpu="l40s", model="llama-3.1-8b", batch=16, context=512)
    s, st, peak = _decode(cat, sc)
    bare, _ = achieved_step_times(cat, st.decode, s.gpu, peak, pm.ideal(1))
    with_over, _ = achieved_step_times(
        cat, st.decode, s.gpu, peak, _params(overhead_kernel_s=10e-6, overhead_step_s=2e-3, overhead_sequence_s=5e-6)
    )
    kernels = float(cat.ops.filter(pl.col("model_id") == "llama-3.1-8b")["layers"].sum())
    # Llama 3.1 8B's operation rows: the embedding, 32 layers of (q, k and v projections, attention, o projection, the
    # layer's norms, gate+up, down), the final norm and the lm_head: 1 + 32 x 8 + 1 + 1 = 259 kernels
    assert kernels == 259
    assert with_over[0] - bare[0] == pytest.approx(259 * 10e-6 + 2e-3 + 16 * 5e-6, rel=1e-9)


def test_the_all_reduce_runs_at_its_share_of_the_link_within_and_beyond_the_domain(cat):
    """Within the scale-up domain the all-reduces take comm / eta_comm; wider than it, comm / eta_comm_out."""
    for n, name in ((4, "eta_comm"), (16, "eta_comm_out")):
        sc = Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=n, batch=8, context=1024)
        s, st, peak = _decode(cat, sc)
        bare, _ = achieved_step_times(cat, st.decode, s.gpu, peak, pm.ideal(1))
        slow, _ = achieved_step_times(cat, st.decode, s.gpu, peak, _params(**{name: 0.25}))
        comm = ceiling(cat, sc).comm_time_s
        assert comm > 0 and slow[0] - bare[0] == pytest.approx(comm * (1 / 0.25 - 1), rel=1e-9)


def test_a_chunked_prefill_reads_the_weights_once_per_chunk(cat):
    """Two prompts of 8,192 tokens in chunks of 8,192: two repetitions, each reading all the weights and doing half the work."""
    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", prompt=8192)
    s, st, peak = _decode(cat, sc)
    p = st.prefill
    wave = Steps(p.model, p.num_gpus, p.weight_bytes, p.kv_bytes, p.act_bytes, np.array([2.0]), p.q, p.cached, p.prefill, p.flash)
    eta = _params(eta_mem_gemm=0.5, eta_compute_gemm=0.5)
    t2, _ = achieved_step_times(cat, wave, s.gpu, peak, eta, reps=np.array([2.0]))
    table = operation_table(cat, sc.at(batch=1), phase="prefill")  # one prompt = one chunk's work, except the weights
    b, pk = cat.gpu("h100-sxm").bandwidth_bytes_per_s, float(peak[0])
    by_hand = 0.0
    for row in table.iter_rows(named=True):
        cls = pm.CLASS_OF_KIND[row["kind"]]
        m = c = 0.5 if cls == 1 else 1.0
        chunk_bytes = row["weight_bytes"] + (row["bytes"] - row["weight_bytes"])  # a chunk is one prompt's tokens
        by_hand += max(chunk_bytes / (b * m), row["flops"] / (pk * c))
    assert t2[0] == pytest.approx(2 * by_hand, rel=1e-9)


def test_a_served_token_carries_the_prefills_of_the_requests_arriving_meanwhile():
    """At concurrency 8 with 100 output tokens, 7 other prompts arrive while a request decodes: a 10 ms step plus 7/8 of
    a 1.6 s wave's prefill spread over 100 tokens = 24 ms; alone (concurrency 1) it is the step."""
    got = wl.served_tpot(np.array([8.0, 1.0]), np.array([100.0, 100.0]), np.array([0.010, 0.010]), np.array([1.6, 0.2]))
    assert got.tolist() == pytest.approx([0.010 + 1.6 * 7 / 800, 0.010])


def test_the_jacobian_is_the_derivative(cat):
    """Each column of the jacobian against a finite difference, for a step with every term at work."""
    sc = Scenario(gpu="h100-sxm", model="mixtral-8x7b", num_gpus=4, batch=64, context=2048)
    s, st, peak = _decode(cat, sc)
    par = pm.parameters(pm.PRIOR[None, :])
    t0, jac = achieved_step_times(cat, st.decode, s.gpu, peak, par, jacobian=True)
    assert jac is not None
    for p in range(pm.NP):
        if p == pm.P["overhead_request_s"]:
            continue  # per request, not per step: added by the workload rule
        up = par.copy()
        up[0, p] *= 1 + 1e-6
        t1, _ = achieved_step_times(cat, st.decode, s.gpu, peak, up)
        assert jac[0, p] == pytest.approx((t1[0] - t0[0]) / (par[0, p] * 1e-6), rel=1e-4, abs=1e-12), pm.NAMES[p]


def test_a_burst_s_median_first_token_waits_for_half_its_prompts():
    """TTFT of a burst of 8 = the wave's prefill x 9 / 16 + the request overhead; at 1 it is one prompt. A server in its
    steady state gives its arrival's own steps instead."""
    got = wl.burst_ttft(np.array([8.0, 1.0]), np.array([1.6, 0.2]), np.array([0.05, 0.05]))
    assert got.tolist() == pytest.approx([1.6 * 9 / 16 + 0.05, 0.25])
    mixed = wl.expected_ttft(
        np.array([True, False]), np.array([8.0, 8.0]), np.array([1.6, 1.6]), np.array([0.3, 0.3]), np.array([0.05, 0.0])
    )
    assert mixed.tolist() == pytest.approx([0.3 + 0.05, 1.6 * 9 / 16])
    rate = wl.rate(np.array([wl.MIXED]), np.array([8.0]), np.array([1000.0]), np.array([100.0]), np.array([4.0]))
    assert rate[0] == pytest.approx(8 * 100 / 4.0)


def test_a_served_run_s_first_token_is_the_one_the_pages_show(cat):
    """A TTFT measured at concurrency 8 (online, a closed loop) is fitted and scored as a request arriving into the running
    batch, the figure the pages show; the same run as a fixed batch as a burst, the CLI's burst figure. 20,000-token
    prompts on an H100 run in vLLM's 8,192-token chunks: 3 chunks; at batch 1 both are one prompt. The TTFT's jacobian
    is the derivative."""
    predictor = pr.shipped(cat).predictor
    rows = pl.DataFrame(
        {
            "gpu": ["h100-sxm"] * 3,
            "model": ["llama-3.1-8b"] * 3,
            "num_gpus": [1] * 3,
            "weights": ["bf16"] * 3,
            "kv": ["bf16"] * 3,
            "compute": ["bf16"] * 3,
            "phase": ["mixed"] * 3,
            "batch": [8, 8, 1],
            "input_tokens": [20000] * 3,
            "output_tokens": [2000] * 3,
            "tokens_per_s": [1000.0] * 3,
            "ttft_s": [0.7] * 3,
            "framework": ["vLLM"] * 3,
            "online": [True, False, True],
        }
    )
    des = pr.design(cat, rows)
    assert des.arrival[2].tolist() == [3.0, 3.0, 3.0]
    got = pr.predict(des, predictor)[des.obs_kind == pr.TTFT]
    page = {
        b: ceiling(
            cat,
            Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=b, context=21000, prompt=20000, framework="vLLM"),
            predictor=predictor,
        )
        for b in (8, 1)
    }
    assert got[0] == pytest.approx(page[8].predicted_ttft_s, rel=1e-9)
    assert page[8].predicted_burst_ttft_s is not None
    assert got[1] == pytest.approx(
        page[8].predicted_burst_ttft_s - predictor.parameters_of(des.keys[:1])[0, pm.P["overhead_request_s"]], rel=1e-9
    )
    assert got[2] == pytest.approx(page[1].predicted_ttft_s, rel=1e-9) and got[0] < got[1]
    par = predictor.parameters_of(des.keys)
    t0, jac = des.seconds(par, jacobian=True)
    assert jac is not None
    ttft = np.flatnonzero(des.obs_kind == pr.TTFT)
    for p in range(pm.NP):
        up = par.copy()
        up[:, p] *= 1 + 1e-6
        t1, _ = des.seconds(up)
        fd = (t1[ttft] - t0[ttft]) / (par[des.obs_row[ttft], p] * 1e-6)
        assert jac[ttft, p].tolist() == pytest.approx(fd.tolist(), rel=1e-4, abs=1e-12), pm.NAMES[p]


# -- the fit ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ref(cat):
    rows = reference_compare(cat).with_columns((pl.col("batch_kind") == "concurrency").alias("online"))
    return rows, pr.design(cat, rows)


def test_a_served_run_s_time_per_token_is_fitted_as_its_steady_state(cat, ref):
    """The SGLang cookbook's median TPOTs (closed loops at concurrency 16-100) are timed as served_tpot; the jacobian of
    each is its derivative. A TPOT at concurrency 1, or any other figure, is not."""
    rows, des = ref
    tpot = (rows["metric"] == "tpot").to_numpy()
    cook = (rows["campaign"] == "sglang-cookbook").to_numpy()
    assert des.served[tpot & cook & (rows["batch"] > 1).to_numpy()].all()
    assert not des.served[~tpot].any() and not des.served[(rows["batch"] == 1).to_numpy()].any()
    index = np.flatnonzero(tpot & cook & (rows["batch"] > 1).to_numpy())[:6]
    sub = pr.subset(des, np.isin(np.arange(rows.height), index))
    par = pr.shipped(cat).predictor.parameters_of(sub.keys)
    t0, jac = sub.seconds(par, jacobian=True)
    assert jac is not None
    for p in range(pm.NP):
        up = par.copy()
        up[:, p] *= 1 + 1e-6
        t1, _ = sub.seconds(up)
        fd = (t1 - t0) / (par[sub.obs_row, p] * 1e-6)
        assert jac[:, p].tolist() == pytest.approx(fd.tolist(), rel=1e-4, abs=1e-12), pm.NAMES[p]


def test_the_fit_recovers_known_coefficients_within_2_percent(ref):
    """Times made by the model itself at known parameters, on the reference set's scenarios: the fit finds them again."""
    rows, des = ref
    truth = pm.PRIOR.copy()
    for name, value in {
        "eta_mem_gemm": 0.72,
        "eta_compute_gemm": 0.55,
        "eta_mem_moe": 0.5,
        "eta_mem_attention": 0.65,
        "overhead_kernel_s": 8e-6,
        "overhead_step_s": 1.5e-3,
        "eta_comm": 0.5,
        "overhead_request_s": 0.04,
    }.items():
        p = pm.PARAMS[pm.P[name]]
        truth[pm.P[name]] = math.log(value / (1 - value)) if p.logit else math.log(value)
    made = pr.Predictor(tuple(truth.tolist()), {})
    synthetic = dataclasses.replace(des, obs_seconds=pr.predict(des, made))
    found = pr.fit(synthetic, levels=(), global_sd=100.0, iterations=80)
    got = pm.parameters(found.beta[None, :])[0]
    want = pm.parameters(truth[None, :])[0]
    for name in (
        "eta_mem_gemm",
        "eta_compute_gemm",
        "eta_mem_moe",
        "eta_mem_attention",
        "overhead_kernel_s",
        "overhead_step_s",
        "eta_comm",
    ):
        assert got[pm.P[name]] == pytest.approx(want[pm.P[name]], rel=0.02), name


def test_a_campaign_never_predicts_itself(cat, ref):
    """Scaling every value of one campaign by 10 leaves its held-out predictions unchanged, and they are the shipped ones."""
    rows, des = ref
    campaign = "intel-gaudi-model-performance"
    mine = (rows["campaign"] == campaign).to_numpy()
    ok = pr.fitted(rows, des)

    def fold(design: pr.Design) -> np.ndarray:
        train = ok & ~mine
        p = pr.predictor_of(design, pr.fit(design, train), train)
        return pr.predict(pr.subset(design, mine), p)

    before = fold(des)
    scaled = dataclasses.replace(des, obs_seconds=np.where(mine[des.obs_row], des.obs_seconds / 10.0, des.obs_seconds))
    after = fold(scaled)
    assert after.tolist() == pytest.approx(before.tolist(), rel=1e-9)
    shipped = pr.shipped(cat).held_out["campaign"]
    ids = rows.filter(pl.Series(mine))["id"].to_list()
    assert [shipped[i] for i in ids] == pytest.approx(before.tolist(), rel=1e-4)


def test_a_served_run_s_mean_first_token_is_scored_not_fitted(cat, ref):
    """InferenceX prints the mean TTFT of closed loops at concurrency 4-64 (16 rows): the fit leaves them out, so scaling
    them by 10 leaves it unchanged, and the scorecard still predicts and scores each. Medians (the SGLang cookbook) and a
    burst's mean (TensorRT-LLM's 500 requests sent at once) are fitted."""
    rows, des = ref
    use = pr.fitted(rows, des)
    ttft = (rows["metric"] == "ttft").to_numpy()
    means = ttft & (rows["statistic"] == "mean").fill_null(False).to_numpy() & (rows["batch_kind"] == "concurrency").to_numpy()
    assert means.sum() == 16 and set(rows.filter(pl.Series(means))["campaign"]) == {"semianalysis-inferencex"}
    assert not use[means].any()
    assert use[ttft & ~means & (rows["status"] == "ok").to_numpy()].all()
    assert use[(rows["id"] == "trt-090").to_numpy()].all()  # a max-load run's mean TTFT: fitted
    before = pr.fit(des, use)
    scaled = dataclasses.replace(des, obs_seconds=np.where(means[des.obs_row], des.obs_seconds * 10.0, des.obs_seconds))
    after = pr.fit(scaled, pr.fitted(rows, scaled))
    assert after.beta.tolist() == pytest.approx(before.beta.tolist(), rel=1e-9)
    scored = scorecard(cat).rows.filter(pl.col("id").is_in(rows.filter(pl.Series(means))["id"].to_list()))
    assert scored.height == 16 and scored["predicted"].is_not_null().all() and scored["abs_pct_error"].is_not_null().all()


def test_a_row_whose_scenario_as_run_is_not_printed_is_neither_fitted_nor_scored(cat, ref):
    """JetStream's six rows print their requests' maximum lengths, not their means: left out of the fit (scaling them by
    10 leaves it unchanged) and of the scorecard, which lists them with the reason."""
    rows, des = ref
    left = rows["unscored"].is_not_null().to_numpy()
    assert set(rows.filter(pl.Series(left))["campaign"]) == {"google-jetstream-pytorch"} and left.sum() == 6
    use = pr.fitted(rows, des)
    assert not use[left].any()
    scaled = dataclasses.replace(des, obs_seconds=np.where(left[des.obs_row], des.obs_seconds * 10.0, des.obs_seconds))
    assert pr.fit(scaled, pr.fitted(rows, scaled)).beta.tolist() == pytest.approx(pr.fit(des, use).beta.tolist(), rel=1e-9)
    card = scorecard(cat)
    assert card.left_out["id"].sort().to_list() == rows.filter(pl.Series(left))["id"].sort().to_list()
    assert not set(card.rows["id"]) & set(card.left_out["id"])


def test_the_shipped_fit_is_the_fit_of_today_s_seed(cat, ref):
    """data/seed/predictor.json was fitted on this reference set and these figures, and refitting gives its theta."""
    rows, des = ref
    sh = pr.shipped(cat)
    assert sh.current, "run python -m core.evidence.predictor"
    again = pr.fit(des, pr.fitted(rows, des))
    assert again.beta.tolist() == pytest.approx(list(sh.predictor.theta), abs=1e-4)


def test_a_cell_without_held_out_evidence_gets_a_wider_band_and_says_so(cat):
    p = pr.shipped(cat).predictor
    own = p.band("Hopper", "TensorRT-LLM")
    assert not own.widened and own.n >= pm.MIN_BAND_ROWS and 0 < own.mape < 2
    lone = p.band("Turing", "vLLM")  # no published measurement of a T4 in the set
    framework = p.bands[("*", "vLLM", "tokens")]
    assert (
        lone.widened and lone.mape == pytest.approx(framework.mape * pm.WIDEN) and "no held-out measurement of vLLM on Turing" in lone.basis
    )


def test_the_prediction_is_under_the_ceiling_and_carries_its_band(cat):
    """Across frameworks and accelerators, the predicted throughput never beats the ceiling, and each has its error."""
    p = pr.shipped(cat).predictor
    grid = [
        Scenario(gpu=g, model=m, framework=f, batch=b, weights=w)
        for g, m, w in (("h100-sxm", "llama-3.1-8b", "bf16"), ("mi300x", "llama-3.1-70b", "fp8"), ("m2-ultra", "llama-3.1-8b", "q4_k_m"))
        for f in ("vLLM", "SGLang", "TensorRT-LLM", "llama.cpp")
        for b in (1, 64)
    ]
    res = evaluate(cat, grid, predictor=p)
    assert (res["predicted_tokens_per_s_total"] < res["tokens_per_s_total"]).all()
    assert (res["predicted_ttft_s"] > res["ttft_s"]).all()
    assert res["predicted_error"].is_not_null().all() and res["predicted_basis"].is_not_null().all()


# -- the scorecard ----------------------------------------------------------------------------------------------


def test_the_scorecards_figures_are_recomputable_from_its_rows(cat):
    out = scorecard(cat).as_json()
    rows = out["rows"]
    for metric, figures in out["metrics"].items():
        mine = [r for r in rows if r["metric"] == metric]
        assert figures["n"] == len(mine)
        assert figures["median_ratio"] == pytest.approx(statistics.median(r["ratio"] for r in mine))
        errors = [abs(r["predicted"] - r["measured"]) / r["measured"] for r in mine if r["predicted"] is not None]
        assert figures["mape"] == pytest.approx(sum(errors) / len(errors))
        assert figures["within_10pct"] == pytest.approx(sum(e <= 0.10 for e in errors) / len(errors))
        gpu_out = [abs(r["predicted_gpu_out"] - r["measured"]) / r["measured"] for r in mine if r["predicted_gpu_out"] is not None]
        assert figures["mape_gpu_out"] == pytest.approx(sum(gpu_out) / len(gpu_out))
    for r in rows:  # a rate's ratio is measured / ceiling, a time's ceiling / measured
        time = r["metric"] in ("tpot", "itl", "ttft")
        assert r["ratio"] == pytest.approx(r["ceiling"] / r["measured"] if time else r["measured"] / r["ceiling"])
    assert out["folds"]["campaign"] == len({r["campaign"] for r in rows})


def test_the_purchase_search_runs_on_the_prediction_and_can_choose_differently(cat):
    """The cheapest configuration under TPOT <= 20 ms and TTFT <= 2 s: on the ceiling's times MI300X wins; on what vLLM is
    expected to reach, B200 does (MI300X's expected decode steps fit fewer sequences under 20 ms). Every kept
    configuration meets the target on its predicted times, under its ceiling."""
    w = Scenario(model="llama-3.1-70b", weights="fp8", kv="fp8", context=2048, prompt=1024, framework="vLLM")
    gpus = ["h100-sxm", "h200-sxm", "mi300x", "b200"]
    bound = compare_accelerators(cat, gpus, w, max_tpot_s=0.02, max_ttft_s=2.0)
    expected = compare_accelerators(pr.with_predictor(cat), gpus, w, max_tpot_s=0.02, max_ttft_s=2.0)
    assert set(bound["basis"]) == {"ceiling"} and set(expected["basis"]) == {"predicted"}
    assert bound["gpu"][0] == "mi300x" and expected["gpu"][0] == "b200"
    ok = expected.filter(pl.col("status") == "ok")
    assert ok.height == len(gpus)
    assert (ok["time_per_output_token_s"] <= 0.02).all() and (ok["ttft_s"] <= 2.0).all()
    assert (ok["tokens_per_s_total"] <= ok["ceiling_tokens_per_s_total"]).all()
    assert ok["predicted_error"].is_not_null().all()
