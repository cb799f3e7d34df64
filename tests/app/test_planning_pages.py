"""AppTest: the planning pages (ceiling calculator, compare accelerators, sweep explorer) show the performance model's numbers."""

from __future__ import annotations

import polars as pl
import pytest

from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from tests.app.conftest import chart_frames

PLANNING_PAGES = ["calculator", "compare", "sweep"]


@pytest.mark.parametrize("page", PLANNING_PAGES)
def test_every_planning_page_renders_without_an_exception(open_page, page):
    """Each planning page runs to the end on the default scenario with a title and no error box."""
    at = open_page(page)
    assert at.title, f"{page} has no title"
    assert not at.error, [e.value for e in at.error]


def _frame(at, column: str):
    """The first table on the page (as pandas) that has `column`."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_calculator_headline_matches_the_performance_model(open_page):
    """70B bf16 on 2 x H100 SXM, batch 1, context 1,024: ~48 tokens/s per user (seed 004), 20.8 ms per token, fits."""
    at = open_page("calculator", gpu="h100-sxm", model="llama-3.1-70b", num_gpus="2", batch="1", context="1024")
    m = _metrics(at)
    assert 44 < float(m["Tokens/s per user"]) < 48.5
    # ~139 GB / (2 x 3.35 TB/s) = 20.7 ms + KV + 160 all-reduces of 6 µs each (HGX H100, NVIDIA/nccl issue 1259) = 0.97 ms
    assert m["Time per token"] == "21.8 ms"
    assert m["Bound by"] == "memory"
    assert m["Fits in memory"] == "yes"
    assert "Largest batch at context 1,024: **8**" in " ".join(md.value for md in at.markdown)


def test_calculator_frontier_and_what_ifs(open_page):
    """The frontier holds batches 1..8 (memory full at 8) with batch 1 current; the bandwidth lever (H200: 4.8 TB/s against
    3.35) speeds the memory-bound operations 1.43x but not the 160 all-reduces of 6 µs + 16,384 B / 450 GB/s, the same on both."""
    at = open_page("calculator", gpu="h100-sxm", model="llama-3.1-70b", num_gpus="2", batch="1", context="1024")
    front = next(f for f in chart_frames(at) if "is_current" in f.columns)
    assert sorted(front["batch"].to_list()) == [1, 2, 4, 8]
    assert front.filter(pl.col("is_current"))["batch"].to_list() == [1]
    rows = {r["lever"]: r for r in _frame(at, "lever").to_dict("records")}
    step = ceiling(_cat(), Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=1, context=1024)).step_time_s
    comm = 160 * (6e-6 + 16384 / 450e9)
    assert rows["more bandwidth"]["× per user"] == pytest.approx(step / ((step - comm) * 3.35 / 4.8 + comm), rel=1e-3)
    assert rows["current scenario"]["× per user"] == pytest.approx(1.0)


def test_calculator_speculative_decoding_changes_the_time_per_token(open_page):
    """A draft of 4 tokens at 70% acceptance gives (1 - 0.7^5) / 0.3 = 2.77 tokens per cycle; the metric is cycle / 2.77."""
    at = open_page("calculator", gpu="h100-sxm", model="llama-3.1-8b", batch="1", context="1024")
    at.number_input(key="spec_draft_len").set_value(4).run()
    assert not at.exception
    from core.present.text import duration

    sc = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1, context=1024, spec_draft_len=4, spec_draft_model="llama-3.2-1b")
    r = ceiling(_cat(), sc)
    assert r["tokens_per_step"] == pytest.approx((1 - 0.7**5) / 0.3)
    assert _metrics(at)["Time per token"] == duration(r["cycle_time_s"] / r["tokens_per_step"])


def test_calculator_says_when_nothing_fits(open_page):
    """405B in bf16 on one L4: no throughput figures, a 'does not fit' flag, a clear message instead of a frontier."""
    at = open_page("calculator", gpu="l4", model="llama-3.1-405b", num_gpus="1")
    assert _metrics(at)["Fits in memory"] == "no"
    assert any("Nothing fits at any batch" in i.value for i in at.info)
    assert not at.error


def test_compare_reproduces_l40s_vs_a100_at_batch_1(open_page):
    """Seed 004: the default comparison (A100 80GB and L40S) at batch-1 decode says the A100 is 2.4x faster despite a lower bf16 peak."""
    at = open_page("compare", model="llama-3.1-8b", batch="1", cmp_sort="tokens/s per user", cmp_basis="ceiling")
    text = " ".join(i.value for i in at.info)
    assert "2.4× faster per user than NVIDIA L40S" in text
    assert "despite a lower bf16 peak" in text
    table = _frame(at, "tokens/s per user")
    assert list(table["accelerator"]) == ["NVIDIA A100 80GB SXM4", "NVIDIA L40S"]
    ratio = table["tokens/s per user"].iloc[0] / table["tokens/s per user"].iloc[1]
    assert 2.3 <= ratio <= 2.45


def test_compare_service_target_that_nothing_meets(open_page):
    """A 1 ms time per output token for a 70B model is out of reach on both: the page says so."""
    at = open_page("compare", model="llama-3.1-70b")
    at.radio(key="cmp_mode").set_value("service target").run()
    at.number_input(key="cmp_tpot").set_value(1.0).run()
    assert any("Nothing qualifies on any selected accelerator" in w.value for w in at.warning)
    assert not at.exception


def test_compare_with_no_accelerator_says_so(open_page):
    """An empty selection shows a message, not a table or a traceback."""
    at = open_page("compare")
    at.multiselect(key="cmp_gpus").set_value([]).run()
    assert any("No accelerator selected" in i.value for i in at.info)
    assert not at.exception


def test_sweep_answers_which_accelerators_meet_20_ms_at_batch_64(open_page):
    """Default sweep: 70B in fp8; every row shown is at batch 64, fits, and meets 20 ms per output token."""
    at = open_page("sweep")
    assert any("scenarios meet these limits" in i.value for i in at.info)
    table = _frame(at, "time per output token (ms)")
    assert len(table) > 0
    assert set(table["batch"]) == {64}
    assert (table["time per output token (ms)"] <= 20.0).all()
    assert set(table["weights"]) == {"fp8"} and table["fits"].all()


def test_sweep_with_an_empty_axis_says_which(open_page):
    """No model selected: the page names the empty axis and runs no sweep."""
    at = open_page("sweep")
    at.multiselect(key="sw_models").set_value([]).run()
    assert any("No model selected" in i.value for i in at.info)
    assert not at.exception


def _cat():
    from core.catalogue.catalogue import load_catalogue
    from core.store import get_store

    return load_catalogue(get_store())


def test_calculator_shows_how_the_engine_sizes_its_kv_cache(open_page):
    """Llama 3.1 8B on one H100 with vLLM: the KV tokens the engine would hold at start-up, its terms adding up (the
    KV cache is the budget less every subtracted term), the concurrency at the scenario's context; TensorRT-LLM says it
    is not modelled."""
    from core.model.allocation import GIB, allocate

    at = open_page("calculator", gpu="h100-sxm", model="llama-3.1-8b", context="8192", framework="vLLM")
    a = allocate(_cat(), "h100-sxm", 1, "llama-3.1-8b", concurrency_tokens=8192)
    text = " ".join(md.value for md in at.markdown)
    assert f"**{a.kv_cache_tokens:,} KV-cache tokens**" in text
    assert f"**{a.max_concurrency:,.1f} sequences of 8,192 tokens**" in text
    assert a.max_concurrency == pytest.approx(a.kv_cache_tokens / 8192, rel=0.01)  # whole blocks a request of 8,192 tokens needs
    terms = {r["Term"]: r for r in _frame(at, "GiB per GPU").to_dict("records")}
    subtracted = sum(r["GiB per GPU"] for r in terms.values() if r["Subtracted"] == "yes")
    assert terms["KV cache"]["GiB per GPU"] == pytest.approx(terms["budget"]["GiB per GPU"] - subtracted, abs=0.01)
    # Llama 3.1 8B: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 131,072 bytes a token
    assert a.kv_cache_tokens <= terms["KV cache"]["GiB per GPU"] * GIB / 131072 + 64
    at = open_page("calculator", gpu="h100-sxm", model="llama-3.1-8b", framework="TensorRT-LLM")
    assert any("modelled for vLLM and SGLang" in i.value for i in at.info)
    assert not at.error


def test_an_accelerator_that_holds_no_configuration_is_named_so_not_none_times(open_page):
    """DeepSeek-V3 at fp8 compared on the H200, the MI300X and the A100, which holds it on no count within one
    scale-up domain: the comparison's line (the chart's caption in presentation mode, the report's title) read
    "None × NVIDIA A100 80GB SXM4"; it names them as holding none."""
    at = open_page(
        "compare",
        model="deepseek-v3",
        weights="fp8",
        kv="fp8",
        batch="64",
        cmp_gpus=["h200-sxm", "mi300x", "a100-80gb-sxm"],  # type: ignore[arg-type]
        present="true",
    )
    text = " ".join([c.value for c in at.caption] + [m.value for m in at.markdown]).replace("\\", "")  # markdown escapes
    assert "None ×" not in text
    assert "NVIDIA A100 80GB SXM4 (none qualifies)" in text and "8 × NVIDIA H200 SXM 141GB" in text, text[:2000]
