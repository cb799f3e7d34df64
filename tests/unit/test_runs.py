"""Runs side by side (core.evidence.runs): aligned on the scenario, what the runs differ in named, deltas and ratios to the
baseline computed by hand, unmatched rows kept; the CLI's compare-runs on imported fixtures."""

from __future__ import annotations

import json

import polars as pl
import pytest

from core.cli import main
from core.evidence.importers import import_file
from core.evidence.runs import RunsError, compare_runs
from tests.helpers import FIXTURES

BASE = {"num_gpus": 8, "model": "llama-3.1-70b", "weights": "fp8", "kv": "fp8", "compute": "fp8", "output_tokens": 1024}


def run(gpu: str, rows: list[tuple[str, int, int, float, float, float, float]]) -> pl.DataFrame:
    """Compared rows: (phase, batch, input tokens, tokens/s, TTFT s, TPOT s, share of ceiling)."""
    return pl.DataFrame(
        [
            {**BASE, "gpu": gpu, "phase": p, "batch": b, "input_tokens": i, "tokens_per_s": t, "ttft_s": f, "tpot_s": o, "ratio": r}
            for p, b, i, t, f, o, r in rows
        ]
    )


H100 = run(
    "h100-sxm",
    [
        ("mixed", 16, 1024, 1000.0, 0.10, 0.015, 0.50),
        ("mixed", 16, 1024, 1100.0, 0.12, 0.013, 0.54),  # a repeat: the scenario is the median, (1000 + 1100) / 2
        ("mixed", 64, 1024, 3000.0, 0.30, 0.020, 0.40),
        ("prefill", 1, 2048, 9000.0, 0.23, 0.0, 0.60),
    ],
)
MI300X = run(
    "mi300x",
    [
        ("mixed", 16, 1024, 1260.0, 0.09, 0.012, 0.45),
        ("mixed", 64, 1030, 2400.0, 0.45, 0.025, 0.30),  # 1030 is within 5% of 1024: the baseline's scenario
        ("mixed", 128, 1024, 4000.0, 0.60, 0.030, 0.28),  # the baseline has no batch 128
    ],
)


def test_runs_are_aligned_on_the_scenario_with_deltas_and_ratios_to_the_baseline():
    r = compare_runs([("H100", H100), ("MI300X", MI300X)])
    assert r.differ == ("gpu",)  # one accelerator per run, not the same one: what the runs differ in
    assert "gpu" not in r.keys and {"phase", "batch", "input_tokens", "output_tokens", "model"} <= set(r.keys)
    t = r.table
    at16 = t.filter((pl.col("batch") == 16) & (pl.col("phase") == "mixed")).sort("run_index")
    assert at16["rows"].to_list() == [2, 1]
    assert at16["tokens_per_s"].to_list() == pytest.approx([1050.0, 1260.0])
    later = at16.row(1, named=True)
    assert later["tokens_per_s_delta"] == pytest.approx(210.0)  # 1260 - 1050
    assert later["tokens_per_s_vs_baseline"] == pytest.approx(1.2)  # 1260 / 1050
    assert later["ttft_s_vs_baseline"] == pytest.approx(0.09 / 0.11)  # the baseline's TTFT median (0.10 + 0.12) / 2
    assert later["tpot_s_vs_baseline"] == pytest.approx(0.012 / 0.014)
    assert later["partner"] == "matched" and at16.row(0, named=True)["partner"] == "baseline"
    at64 = t.filter(pl.col("batch") == 64).sort("run_index")
    assert at64["input_tokens"].to_list() == [1024, 1024]  # shown at the baseline's lengths
    assert at64.row(1, named=True)["tokens_per_s_vs_baseline"] == pytest.approx(0.8)  # 2400 / 3000
    assert any("within 5%" in n for n in r.notes)
    unmatched = t.filter(pl.col("partner").str.starts_with("unmatched"))
    assert sorted(unmatched["partner"].to_list()) == ["unmatched (only in H100)", "unmatched (only in MI300X)"]  # prefill, batch 128
    assert r.matched == 2 and r.unmatched == 2
    later_summary = r.summary.filter(pl.col("run") == "MI300X").row(0, named=True)
    assert later_summary["with_baseline"] == 2
    assert later_summary["median_tokens_per_s_vs_baseline"] == pytest.approx((1.2 + 0.8) / 2)
    assert later_summary["median_ratio"] == pytest.approx(0.30)  # of 0.45, 0.30, 0.28


def test_a_serving_run_is_never_set_against_a_decode_run():
    decode = H100.filter(pl.col("phase") == "mixed").with_columns(pl.lit("decode").alias("phase"))
    r = compare_runs([("serving", H100.filter(pl.col("phase") == "mixed")), ("decode", decode)])
    assert r.differ == () and r.matched == 0
    assert set(r.table["partner"].to_list()) == {"unmatched (only in serving)", "unmatched (only in decode)"}


def test_a_third_run_is_set_against_the_first():
    third = MI300X.with_columns(pl.col("tokens_per_s") * 2, pl.lit("b200").alias("gpu"))
    r = compare_runs([("H100", H100), ("MI300X", MI300X), ("B200", third)])
    at16 = r.table.filter((pl.col("batch") == 16) & (pl.col("run") == "B200")).row(0, named=True)
    assert at16["tokens_per_s_vs_baseline"] == pytest.approx(2520 / 1050)
    at128 = r.table.filter(pl.col("batch") == 128).sort("run_index")
    assert at128["partner"].to_list() == ["matched, not in the baseline (H100)"] * 2  # two runs hold it, the baseline not
    assert at128["tokens_per_s_vs_baseline"].to_list() == [None, None]


@pytest.mark.parametrize(
    ("runs", "says"),
    [
        ([("one", H100)], "at least two runs; 1 given"),
        ([("same", H100), ("same", MI300X)], "both called 'same'"),
        ([("H100", H100), ("none", H100.clear())], "run 'none' holds no measurements"),
    ],
)
def test_what_cannot_be_compared_is_named(runs, says):
    with pytest.raises(RunsError, match=says):
        compare_runs(runs)


def test_cli_compare_runs_of_two_imported_files(tmp_path, capsys):
    """The same vLLM file imported as an H100 run and (a copy) as an H200 run: the accelerator is what differs, each
    scenario matches with ratio 1, and the file's own tokens/s (849.8 and 2625.6, vllm_serve_append.jsonl) are read."""
    from core.store import Store

    db = tmp_path / "runs.duckdb"
    data = (FIXTURES / "vllm_serve_append.jsonl").read_bytes()
    store = Store(db)
    import_file(store, data, "h100.jsonl", name="before")
    from core.evidence.importers import ImportContext

    import_file(store, data + b"\n", "h200.jsonl", name="after", context=ImportContext(gpu="h200-sxm"))
    store.close()
    assert main(["compare-runs", "before", "2", "--db", str(db), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] == ["before (#1)", "after (#2)"] and out["runs_differ_in"] == ["gpu"]
    assert out["matched_scenarios"] == 2 and out["unmatched_rows"] == 0
    later = [r for r in out["rows"] if r["run"] == "after (#2)"]
    assert sorted(r["tokens_per_s"] for r in later) == [849.8, 2625.6]
    assert all(r["tokens_per_s_vs_baseline"] == pytest.approx(1.0) for r in later)
    h100, h200 = ({r["batch"]: r["ratio"] for r in out["rows"] if r["run"] == run} for run in ("before (#1)", "after (#2)"))
    assert all(h200[b] < h100[b] for b in h100)  # the same tokens/s is a smaller share of the H200's higher ceiling
    assert main(["compare-runs", "before", "--db", str(db)]) == 2
    assert "at least two runs" in capsys.readouterr().err
