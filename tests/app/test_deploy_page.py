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
