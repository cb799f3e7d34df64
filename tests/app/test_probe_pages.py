"""A probe's measured profile on the pages: dashed roofs and a caption on the roofline, the sidebar's Measured roofs
switch (in the link) on the calculator, the profile listed on the catalogue page, and the benchmark commands."""

from __future__ import annotations

import polars as pl
import pytest

from core.catalogue.catalogue import load_catalogue
from core.evidence.probes import import_probe
from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.present.text import si
from core.store import get_store
from tests.app.conftest import chart_frames
from tests.probe_docs import probe_document

GPU = "l40"  # no other AppTest uses it: its profile changes nothing they read


@pytest.fixture(scope="module")
def profiled(private_store):
    """An L40 probed at 80% of its datasheet bandwidth and 70% of its bf16 peak (made-up runs, the figures the test sets)."""
    store = get_store(private_store)
    cat = load_catalogue(store)
    acc = cat.gpu(GPU)
    if cat.profile(GPU) is None:
        doc = probe_document("NVIDIA L40", acc.bandwidth_bytes_per_s * 0.8, {"bf16": acc.peak_bf16 * 0.7}, memory_bytes=48e9)
        assert import_probe(store, doc.to_json().encode(), "l40.json").accelerator_id == GPU
    return load_catalogue(store)


def test_the_roofline_draws_the_measured_roofs_and_says_how_far_they_are(open_page, profiled):
    at = open_page("roofline", gpu=GPU, model="llama-3.1-8b")
    roofs = next(f for f in chart_frames(at) if "roof" in f.columns)
    assert set(roofs["roof"]) == {"datasheet", "measured"}
    measured = roofs.filter((pl.col("roof") == "measured") & (pl.col("point") == "ridge"))
    assert measured["ridge"][0] == pytest.approx(0.7 / 0.8 * 181.05e12 / 864e9, rel=1e-3)  # L40: bf16 181.05 TFLOP/s dense, 864 GB/s
    assert any("measured (2026-12-01): 80% of datasheet bandwidth, 70% of bf16 peak" in c.value for c in at.caption)


def test_measured_roofs_in_the_link_change_the_calculators_ceiling(open_page, profiled):
    sc = Scenario(gpu=GPU, model="llama-3.1-8b", batch=8)
    at = open_page("calculator", gpu=GPU, model="llama-3.1-8b", batch="8", measured="true")
    assert at.toggle(key="measured").value is True
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Tokens/s total"] == si(ceiling(profiled.measured(), sc).tokens_per_s_total)
    assert metrics["Tokens/s total"] != si(ceiling(profiled, sc).tokens_per_s_total)
    (link,) = [c.value for c in at.code if "?" in c.value]
    assert "measured=true" in link
    at.toggle(key="measured").set_value(False).run()
    assert {m.label: m.value for m in at.metric}["Tokens/s total"] == si(ceiling(profiled, sc).tokens_per_s_total)


def test_the_calculator_shows_the_benchmark_commands_of_its_scenario(open_page):
    at = open_page("calculator", gpu="h100-sxm", model="llama-3.1-70b", num_gpus="2", batch="16")
    code = "\n".join(c.value for c in at.code)
    assert "vllm bench serve" in code and "--max-concurrency 16" in code and "--metadata gpu=h100-sxm num_gpus=2" in code
    assert "trtllm-bench --model meta-llama/Llama-3.1-70B-Instruct throughput" in code and "--tp 2" in code
    assert "roofline import" in code


def test_the_catalogue_lists_the_profile(open_page, profiled):
    at = open_page("catalogue")
    frames = [df.value for df in at.dataframe]
    table = next(f for f in frames if "device" in getattr(f, "columns", []))
    assert "NVIDIA L40" in list(table["device"])


def test_the_ridge_page_uses_the_measured_roofs_when_switched_on(open_page, profiled):
    def l40_ridge(at) -> float:  # type: ignore[no-untyped-def]
        table = next(df.value for df in at.dataframe if "ridge (FLOP/B)" in getattr(df.value, "columns", []))
        return float(table[table["name"] == "NVIDIA L40"]["ridge (FLOP/B)"].iloc[0])

    datasheet = l40_ridge(open_page("ridges", rd_precision="bf16"))
    assert datasheet == pytest.approx(181.05e12 / 864e9, rel=1e-6)
    at = open_page("ridges", rd_precision="bf16", measured="true")
    assert l40_ridge(at) == pytest.approx(datasheet * 0.7 / 0.8, rel=1e-9)
    assert any("Measured roofs on (sidebar): NVIDIA L40" in c.value for c in at.caption)
