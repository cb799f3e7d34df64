"""AppTest: the compare page's deployments view plans a request rate on the model's numbers (core.plan.deploy)."""

from __future__ import annotations

import pytest


def _frame(at, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


@pytest.mark.parametrize(
    ("model", "gpus", "framework"),
    [("deepseek-v3", ["h200-sxm", "mi300x"], "SGLang"), ("llama-3.1-405b", ["b200"], "vLLM")],
)
def test_deployments_are_planned_priced_and_simulated(open_page, model, gpus, framework):
    """The issue's three cases: DeepSeek-V3 on H200 and on MI300X, Llama 3.1 405B on B200, at a request rate with p90
    targets: an aggregated and a disaggregated plan for each accelerator, each with p50 <= p90 <= p99 and a price."""
    at = open_page("compare", model=model, weights="fp8", kv="fp8", framework=framework, cmp_view="Deployments at a request rate")
    at.multiselect(key="cmp_gpus").set_value(gpus).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    table = _frame(at, "Plan")
    assert sorted(set(table["Serving"])) == ["aggregated", "disaggregated"]
    for gpu in gpus:
        name = next(o for o in at.multiselect(key="cmp_gpus").value if o == gpu)
        assert name
    for _, row in table.iterrows():
        assert row["TTFT p50 (s)"] <= row["TTFT p90 (s)"] <= row["TTFT p99 (s)"]
        assert row["TPOT p50 (ms)"] <= row["TPOT p90 (ms)"] <= row["TPOT p99 (ms)"]
        assert row["$ per M output tokens"] > 0
        if row["Meets p90 targets"] == "yes":
            assert row["TTFT p90 (s)"] <= 2.0 and row["TPOT p90 (ms)"] <= 50.0
    disagg = table[table["Serving"] == "disaggregated"]
    assert disagg["Plan"].str.contains(" prefill x ").all() and disagg["Plan"].str.contains(" decode x ").all()
    assert any(s.value.replace("\\", "").startswith("Cheapest at 10 requests/s: ") for s in at.success)
    published = [d.value for d in at.dataframe if "Layout (one instance)" in d.value.columns]
    if model == "deepseek-v3":  # Moreh's nine MI300X figures (EP=8 + DP=8) and AMD's EP16 one are among the 40 shown
        rows = published[0]
        assert len(rows) == 40 and (rows["Accelerator"] == "AMD Instinct MI300X").sum() == 10
        assert set(rows["Accelerator"][:10]) == {"AMD Instinct MI300X"}  # the picked first (none scored on the H200)
        assert (rows["Layout (one instance)"] == "DP-attention 8 x EP8").any()
        above = rows[rows["Share of ceiling"] > 1.0]
        assert above["Above its ceiling because"].notna().all()
    else:  # no published deployment of Llama 3.1 405B: no table
        assert not published


def test_a_prefill_pool_on_another_accelerator_is_planned_and_its_crossing_said(open_page):
    """Prefill on B200 for a decode pool of MI300X (a link naming the accelerator by id): the disaggregated plan puts its
    prefill instances on the B200 and says the KV cache crosses vendors; the aggregated plan stays on the MI300X."""
    at = open_page(
        "compare",
        model="deepseek-v3",
        weights="fp8",
        kv="fp8",
        framework="SGLang",
        cmp_view="Deployments at a request rate",
        dp_prefill_gpu="b200",
    )
    at.multiselect(key="cmp_gpus").set_value(["mi300x"]).run()
    assert not at.exception, [e.value for e in at.exception]
    table = _frame(at, "Plan")
    disagg = table[table["Serving"] == "disaggregated"].iloc[0]
    assert " b200 (" in disagg["Plan"].split(" + ")[0] and " mi300x (" in disagg["Plan"].split(" + ")[1]
    assert "crosses vendors (NVIDIA to AMD)" in disagg["Notes"]
    assert "(prefill on NVIDIA B200" in disagg["Accelerator"]
    agg = table[table["Serving"] == "aggregated"].iloc[0]
    assert "mi300x" in agg["Plan"] and "b200" not in agg["Plan"]
