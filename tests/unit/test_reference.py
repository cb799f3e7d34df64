"""The published reference measurements: the shipped set's coverage, the row rules, ceilings checked by hand, the scorecard."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from core.catalogue.catalogue import load_catalogue
from core.catalogue.precisions import storage_format
from core.catalogue.reference import CSV_COLUMNS, ReferenceError, reference_seed_frame, source_key
from core.cli import main as cli_main
from core.evidence.reference import CAUSES, as_measurements, evidence_for, reference_compare
from core.model.ceilings import ceiling, operation_table
from core.model.scenario import Scenario
from core.store import Store
from core.store.paths import SEED

ROWS = list(csv.DictReader((SEED / "reference_measurements.csv").open(encoding="utf-8")))


@pytest.fixture(scope="module")
def cat(tmp_path_factory: pytest.TempPathFactory):
    return load_catalogue(Store(tmp_path_factory.mktemp("ref") / "ref.duckdb"))


# -- the shipped set -------------------------------------------------------------------


def test_the_shipped_set_has_150_sourced_rows_on_10_accelerators_and_5_frameworks():
    assert len(ROWS) >= 150
    gpus = {r["gpu"] for r in ROWS}
    frameworks = {r["framework"] for r in ROWS}
    assert len(gpus) >= 10
    # NVIDIA datacenter and GeForce, AMD Instinct, Apple, at least one of Gaudi / TPU
    assert {"h100-sxm", "rtx-4090", "mi300x", "m2-ultra"} <= gpus and gpus & {"gaudi2", "gaudi3", "tpu-v5e", "tpu-v6e"}
    assert {"TensorRT-LLM", "vLLM", "SGLang", "llama.cpp", "MLPerf"} <= frameworks
    for r in ROWS:
        assert r["source_url"].startswith("https://"), r["id"]
        assert r["read_on"] >= "2026-12-01" and r["publisher"] and r["campaign"], r["id"]
    metrics = {r["metric"] for r in ROWS}
    assert {"output_tokens_per_s", "tpot", "itl", "ttft", "prefill_tokens_per_s"} <= metrics


def test_the_store_holds_every_row_read_only_beside_no_dataset(cat):
    assert cat.reference.height == len(ROWS)
    assert cat.reference["id"].n_unique() == len(ROWS)


# -- the rules of a row -----------------------------------------------------------------


def _seed_with(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    seed = tmp_path / "seed"
    shutil.copytree(SEED, seed)
    with (seed / "reference_measurements.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, CSV_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return seed


BASE = {
    "id": "t-001",
    "source_url": "https://example.org/post",
    "publisher": "Example",
    "campaign": "example-post",
    "framework": "vLLM",
    "framework_version": "0.9",
    "gpu": "h100-sxm",
    "num_gpus": "2",
    "tp": "2",
    "ep": "",
    "model": "llama-3.1-8b",
    "weights": "Q4_K_M",
    "kv": "f16",
    "compute": "",
    "batch": "8",
    "batch_kind": "fixed batch",
    "input_tokens": "128",
    "output_tokens": "128",
    "scope": "end-to-end",
    "metric": "output_tokens_per_s",
    "value": "2500",
    "unit": "tokens/s/gpu",
    "model_bytes": "",
    "source_date": "2025-06",
    "read_on": "2026-12-01",
    "note": "",
}


def test_values_are_kept_as_printed_and_converted_to_si(tmp_path):
    rows = [BASE, {**BASE, "id": "t-002", "metric": "tpot", "value": "12.5", "unit": "ms"}]
    frame = reference_seed_frame(_seed_with(tmp_path, rows), {"h100-sxm"}, {"llama-3.1-8b"})
    first, second = frame.row(0, named=True), frame.row(1, named=True)
    assert (first["value"], first["value_si"]) == (2500.0, 5000.0)  # per GPU x 2 GPUs
    assert (second["value"], second["value_si"]) == (12.5, 0.0125)  # ms -> s
    assert (first["weights"], first["kv"]) == ("q4_k_m", "fp16")  # one spelling per format


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gpu": "h900"}, "unknown accelerator 'h900'"),
        ({"model": "llama-9"}, "unknown model 'llama-9'"),
        ({"unit": "ms"}, "unit 'ms' does not fit metric output_tokens_per_s"),
        ({"batch": ""}, "a fixed batch measurement needs its batch or concurrency"),
        ({"metric": "prefill_tokens_per_s"}, "a prefill throughput has scope prefill"),
        ({"weights": "q9_z"}, "unknown precision 'q9_z'"),
        ({"source_url": "example.org"}, "source_url"),
        ({"value": "-3"}, "value"),
        ({"campaign": ""}, "campaign: Field required"),
        ({"campaign": "Example Post"}, "campaign: String should match pattern"),
        ({"statistic": "mean"}, "statistic: output_tokens_per_s is a rate"),
        (
            {"note": "test 'pp2048 @ d4096'", "scope": "prefill", "metric": "prefill_tokens_per_s", "unit": "tokens/s"},
            "depth: the note's test runs at '@ d4096' but depth is empty",
        ),
        ({"requests": "0"}, "requests"),
    ],
)
def test_a_bad_row_is_refused_with_its_row_and_field(tmp_path, change, message):
    with pytest.raises(ReferenceError) as err:
        reference_seed_frame(_seed_with(tmp_path, [{**BASE, **change}]), {"h100-sxm"}, {"llama-3.1-8b"})
    assert "reference_measurements.csv row 2" in str(err.value) and message in str(err.value)


def test_an_id_used_twice_is_refused(tmp_path):
    with pytest.raises(ReferenceError, match="id 't-001' is used twice"):
        reference_seed_frame(_seed_with(tmp_path, [BASE, BASE]), {"h100-sxm"}, {"llama-3.1-8b"})


def test_versions_of_one_document_are_one_source():
    a = "https://github.com/NVIDIA/TensorRT-LLM/blob/250d9c29/docs/source/performance.md#x"
    b = "https://github.com/NVIDIA/TensorRT-LLM/blob/258c7540/docs/source/performance.md"
    assert source_key(a) == source_key(b) == "https://github.com/NVIDIA/TensorRT-LLM/blob/*/docs/source/performance.md"
    assert source_key("https://example.org/a?x=1") != source_key("https://example.org/b")


# -- ceilings checked by hand -------------------------------------------------------------


def _row(cat, rid: str) -> dict:
    return reference_compare(cat).filter(pl.col("id") == rid).row(0, named=True)


def test_a_llama_bench_row_uses_the_files_own_bytes(cat):
    """apple-008: Llama 70B F16 on an M2 Ultra, tg512, file 141.1 GB (printed 131.42 GiB).

    By hand: 800 GB/s over the file's bytes plus the KV cache read at the mean context of
    256 tokens (80 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 327,680 bytes a token):
    800e9 / (141,111,150,510 + 256 x 327,680) = 5.666 tokens/s; measured 4.76, 84% of it.
    """
    r = _row(cat, "apple-008")
    assert r["model_bytes"] == 141_111_150_510 and r["value"] == 4.76
    by_hand = 800e9 / (141_111_150_510 + 256 * 327_680)
    assert r["ceiling"] == pytest.approx(by_hand, rel=0.02)  # the model also counts activations and the embedding read
    assert r["ratio"] == pytest.approx(4.76 / by_hand, rel=0.02)


def test_the_files_bits_per_weight_replace_the_formats(cat):
    """A Q4_K_M file read at its own 4.8944 bits reads 4.8944 / 4.125 of int4's weight bytes."""
    q4km = ceiling(cat, Scenario(gpu="rtx-4090", model="llama-2-7b", weights="q4_k_m"))
    own = ceiling(cat, Scenario(gpu="rtx-4090", model="llama-2-7b", weights="q4_k_m", weight_bits=8.0))
    assert storage_format("q4_k_m").bits == 4.8944 and storage_format("Q4_K_M").name == "q4_k_m"
    assert q4km.weight_memory_bytes == pytest.approx(6_738_415_616 * 4.8944 / 8)
    assert own.weight_memory_bytes == pytest.approx(6_738_415_616)  # 8 bits x the parameters
    assert q4km.compute_used == "fp16"  # llama.cpp dequantises


def test_a_time_metric_reads_as_the_share_of_its_ceiling(cat):
    """A TPOT row: ratio = ceiling time / measured time, and the ceiling time is batch / ceiling tokens/s."""
    row = reference_compare(cat).filter(pl.col("metric") == "tpot").row(0, named=True)
    assert row["ratio"] == pytest.approx(row["ceiling"] / row["measured"])
    assert row["ceiling"] == pytest.approx(row["batch"] / row["predicted_tokens_per_s"])


def test_the_gaudi_3_peak_is_the_2025_papers():
    gaudi = next(r for r in csv.DictReader((SEED / "accelerators.csv").open(encoding="utf-8")) if r["id"] == "gaudi3")
    assert gaudi["bf16_tflops"] == gaudi["fp8_tflops"] == "1678"
    assert "July 2025" in gaudi["notes"] and "1835" in gaudi["notes"]


def test_every_row_above_its_ceiling_names_a_cause(cat):
    table = reference_compare(cat)
    above = table.filter(pl.col("ratio") > 1.02)
    assert above.height and above["cause"].null_count() == 0
    assert set(above["cause"]) <= set(CAUSES.values())
    assert table.filter(pl.col("ratio") <= 1.02)["cause"].null_count() == table.height - above.height
    # the 72-GPU MLPerf systems ran data-parallel replicas, not one tensor-parallel group over 72
    mlperf = table.filter((pl.col("framework") == "MLPerf") & (pl.col("num_gpus") == 72) & (pl.col("ratio") > 1.02))
    assert mlperf.height and set(mlperf["cause"]) == {CAUSES["replicas"]}


# -- beside a scenario ------------------------------------------------------------------


def test_the_evidence_beside_a_scenario_counts_its_rows(cat):
    table = reference_compare(cat)
    mine = table.filter((pl.col("gpu") == "m2-ultra") & (pl.col("model") == "llama-3.1-8b"))
    ev = evidence_for(cat, "m2-ultra", "llama-3.1-8b")
    assert ev.exact and ev.rows.height == mine.height
    assert ev.sentence.startswith(f"published: {mine.height} measurements of Llama 3.1 8B on Apple M2 Ultra")
    lo, hi = mine["ratio"].min(), mine["ratio"].max()
    assert f"{lo:.0%}-{hi:.0%}" in ev.sentence


def test_no_match_says_so_and_shows_the_nearest(cat):
    ev = evidence_for(cat, "rtx-4090", "qwen3-8b")
    assert not ev.exact and ev.sentence.startswith("No published measurement of Qwen3 8B on NVIDIA GeForce RTX 4090.")
    assert "Nearest published:" in ev.sentence and set(ev.rows["gpu"]) == {"rtx-4090"}
    none = evidence_for(cat, "t4", "phi-4")
    assert none.rows.height == 0 and "No published measurement" in none.sentence


def test_a_max_load_run_is_taken_at_most_at_the_requests_it_sent(cat):
    """trt-090 (TensorRT-LLM's online-serving table: Llama 3.1 8B on one H100 at QPS=INF, 'with 500 requests', no batch
    printed): more than 500 sequences of 467 + 256 / 2 tokens fit, but 500 requests cannot make a larger batch. Without
    the count, the row is taken at the batch that fits."""
    ref = cat.reference.filter(pl.col("id") == "trt-090")
    assert ref["requests"].to_list() == [500] and ref["batch"].to_list() == [None]
    assert (ref["weights"][0], ref["kv"][0], ref["num_gpus"][0], ref["input_tokens"][0], ref["output_tokens"][0]) == (
        "bf16",
        "bf16",
        1,
        467,
        256,
    )
    fits = ceiling(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1, context=467 + 128, prompt=467)).max_batch
    assert fits is not None and fits > 500
    uncounted = ref.with_columns(pl.lit("trt-090-uncounted").alias("id"), pl.lit(None, dtype=pl.Int64).alias("requests"))
    rows = as_measurements(cat, pl.concat([ref, uncounted]))
    assert rows["batch"].to_list() == [500, fits]


def test_a_prompt_prefilled_over_a_cached_depth_is_set_against_that_ceiling(cat):
    """llama-bench's 'pp2048 @ d4096' on a DGX Spark (lcpp-003) runs its prompt over 4,096 cached tokens: its ceiling is
    the scenario with depth 4,096, below the depth-0 row's (lcpp-001). By hand, for Llama 3.1 8B on an H100, the depth
    adds each prompt token's attention to the 4,096 cached ones, 4 FLOPs x 128 dims x 32 heads per pair on 32 layers
    (4.398e12 FLOPs), and reads their KV cache once: 32 layers x 4,096 tokens x 2 x 8 heads x 128 dims x 2 bytes."""
    table = reference_compare(cat).filter(pl.col("id").is_in(["lcpp-001", "lcpp-003"])).sort("id")
    assert table["depth"].to_list() == [None, 4096] and table["input_tokens"].to_list() == [2048, 2048]
    deep = Scenario(gpu="dgx-spark", model="gpt-oss-20b", weights="mxfp4", kv="fp16", prompt=2048, depth=4096, context=6144)
    fraction = table["model_bytes"][1] * 8 / cat.models.filter(pl.col("id") == "gpt-oss-20b")["total_params"][0]
    expected = 2048 / ceiling(cat, deep.model_copy(update={"weight_bits": fraction})).ttft_s
    assert table["ceiling"][1] == pytest.approx(expected, rel=1e-9) and table["ceiling"][1] < table["ceiling"][0]
    flat = operation_table(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", prompt=2048, context=2048), phase="prefill")
    over = operation_table(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", prompt=2048, depth=4096, context=6144), phase="prefill")
    assert over["flops"].sum() - flat["flops"].sum() == pytest.approx(32 * 2048 * 4096 * 4 * 128 * 32, rel=1e-12)
    assert over["kv_bytes"].sum() - flat["kv_bytes"].sum() == pytest.approx(32 * 4096 * 2 * 8 * 128 * 2, rel=1e-12)


# -- the scorecard ------------------------------------------------------------------------


def test_cli_reference_and_scorecard(cat, tmp_path, capsys):
    db = str(tmp_path / "cli.duckdb")
    assert cli_main(["reference", "--db", db, "--gpu", "m2-ultra", "--metric", "output_tokens_per_s", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    expected = [r for r in ROWS if r["gpu"] == "m2-ultra" and r["metric"] == "output_tokens_per_s"]
    assert len(rows) == len(expected) and all(r["source_url"] and r["ceiling"] > 0 and r["ratio"] > 0 for r in rows)
    assert cli_main(["scorecard", "--db", db, "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert set(card) >= {"metrics", "groups", "rows", "above_ceiling", "by_group", "folds"}
    left_out = [r["id"] for r in ROWS if r["unscored"]]  # JetStream's six rows: maximum lengths printed, not means
    assert sorted(left_out) == [f"mlp-06{i}" for i in range(6)]
    assert sorted(r["id"] for r in card["left_out"]) == sorted(left_out) and all(r["unscored"] for r in card["left_out"])
    assert len(card["rows"]) == len(ROWS) - len(left_out) and not {r["id"] for r in card["rows"]} & set(left_out)
    assert card["current"] is True
    assert set(card["metrics"]["output_tokens_per_s"]) >= {"n", "median_ratio", "mape", "within_10pct", "within_25pct", "mape_gpu_out"}
    assert {"id", "campaign", "metric", "measured", "ceiling", "predicted", "predicted_gpu_out", "predicted_model_out"} <= set(
        card["rows"][0]
    )
    assert cli_main(["reference", "--db", db, "--gpu", "h900"]) == 2
