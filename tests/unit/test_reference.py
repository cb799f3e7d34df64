"""The published reference measurements: the shipped set's coverage, the row rules, ceilings checked by hand, the scorecard."""

from __future__ import annotations

import csv
import json
import re
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
        (
            {"note": "Server scenario; constraints printed ttft_latency 6000000000 ns, tpot_latency 175000000 ns"},
            "ttft_limit_s, tpot_limit_s: the note prints the run's limits (6 s, 0.175 s) but the row carries none, none",
        ),
        (
            {
                "note": "constraints printed ttft_latency 4500000000 ns, tpot_latency 80000000 ns",
                "ttft_limit_s": "6",
                "tpot_limit_s": "0.175",
            },
            "the note prints the run's limits (4.5 s, 0.08 s) but the row carries 6.0, 0.175",
        ),
        ({"framework": "MLPerf", "note": "Interactive scenario (loadgen Server)"}, "an MLPerf Server or Interactive run is held to"),
        ({"note": "cache length 1280 < max input+output so rolling window attention is used"}, "kv_window: the note's run keeps a 1280"),
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
    # one page in four locales, with and without www., is one document; a two-letter GitHub owner is not a locale
    pages = [
        f"https://{w}amd.com/{loc}/developer/resources/rocm-hub/dev-ai/performance-results.html"
        for w in ("", "www.")
        for loc in ("en", "ja", "zh-cn")
    ]
    assert {source_key(u) for u in pages} == {"https://amd.com/developer/resources/rocm-hub/dev-ai/performance-results.html"}
    assert source_key("https://github.com/ko/x/blob/abc/README.md") == "https://github.com/ko/x/blob/*/README.md"


def test_one_article_is_cited_under_one_url_and_each_document_has_one_key():
    """The Oracle article was cited with and without /post/ (mlp-049..057 and mlp-058/059): now one URL. In the shipped set,
    no two source keys of one host end in the same page slug (a file name such as README.md may recur in many places)."""
    oracle = {r["source_url"] for r in ROWS if r["campaign"] == "oracle-oci-mi300x-llama-405b"}
    assert oracle == {"https://blogs.oracle.com/cloud-infrastructure/post/serving-llama-31-405b-model-with-amd-mi300x-gpus"}
    seen: dict[tuple[str, str], set[str]] = {}
    for r in ROWS:
        key = source_key(r["source_url"])
        host, slug = key.split("/")[2], key.rsplit("/", 1)[-1]
        if "." not in slug:
            seen.setdefault((host, slug), set()).add(key)
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}
    # and one campaign per document: a document's rows are never split across two folds, but for a discussion thread, where
    # each person who posts is a publisher of their own
    folds: dict[str, set[str]] = {}
    for r in ROWS:
        if not re.search(r"/(pull|issues|discussions)/\d+", r["source_url"]):
            folds.setdefault(source_key(r["source_url"]), set()).add(r["campaign"])
    assert {k: v for k, v in folds.items() if len(v) > 1} == {}


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


def test_a_max_load_run_held_to_a_tpot_limit_is_set_at_the_largest_batch_that_meets_it(cat, tmp_path):
    """Llama 3.1 8B in bf16 on one H100 at max load, 1,000 tokens in and out, held to TPOT <= 10 ms. By hand, a decode step
    is memory-bound: it reads the 2 x 8.03e9 bytes of weights and each sequence's KV cache at its mean context of
    1,000 + 500 tokens (32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 131,072 bytes a token), over 3.35 TB/s; 10 ms
    holds (0.010 x 3.35e12 - 16.06e9) / (1,500 x 131,072) = 88.7 sequences. The ceiling's own TPOT is under the limit at the
    batch chosen and over it one sequence later; without the limit the batch is the one that fits."""
    row = {**BASE, "id": "t-lim", "gpu": "h100-sxm", "num_gpus": "1", "tp": "1", "model": "llama-3.1-8b", "weights": "bf16"}
    row |= {"kv": "bf16", "batch": "", "batch_kind": "max load", "input_tokens": "1000", "output_tokens": "1000", "unit": "tokens/s"}
    free = reference_seed_frame(_seed_with(tmp_path, [row]), {"h100-sxm"}, {"llama-3.1-8b"})
    held = free.with_columns(pl.lit(6.0).alias("ttft_limit_s"), pl.lit(0.010).alias("tpot_limit_s"), pl.lit("t-lim-2").alias("id"))
    rows = as_measurements(cat, pl.concat([free, held]))
    fits, batch = rows["batch"].to_list()
    by_hand = (0.010 * 3.35e12 - 2 * cat.models.filter(pl.col("id") == "llama-3.1-8b")["total_params"][0]) / (1500 * 131_072)
    assert by_hand == pytest.approx(88.7, abs=0.1)
    assert abs(batch - by_hand) < 1.5 and fits > 2 * batch
    at = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=batch, context=1500, prompt=1000)
    assert (
        ceiling(cat, at).time_per_output_token_s <= 0.010 < ceiling(cat, at.model_copy(update={"batch": batch + 1})).time_per_output_token_s
    )


def test_the_mlperf_server_and_interactive_rows_carry_their_rules_limits(cat):
    """Every MLPerf Server or Interactive row carries the limits its log prints, which are the rules' for Llama 3.1 405B
    (core.plan.targets, from mlcommons/inference_policies): TTFT 6 s and TPOT 175 ms, Interactive 4.5 s and 80 ms. Each is
    set at a batch whose ceiling meets them (the ceiling's TPOT at the largest batch that fits is well under them, so the
    limits do not lower these rows' batch)."""
    from core.plan.targets import BY_KEY as TARGETS

    table = reference_compare(cat).filter(pl.col("framework") == "MLPerf")
    for r in table.iter_rows(named=True):
        scenario = "Interactive" if "/Interactive/" in r["source_url"] else "Server" if "/Server/" in r["source_url"] else "Offline"
        if scenario == "Offline":
            assert r["tpot_limit_s"] is None and r["ttft_limit_s"] is None, r["id"]
            continue
        rule = TARGETS[f"mlperf-llama3.1-405b-{scenario.lower()}"]
        assert (r["ttft_limit_s"], r["tpot_limit_s"]) == pytest.approx((rule.ttft_s, rule.tpot_s)), r["id"]
        at = Scenario(gpu=r["gpu"], num_gpus=r["num_gpus"], model=r["model"], weights=r["weights"], kv=r["kv"], batch=r["batch"],
                      context=r["input_tokens"] + r["output_tokens"] // 2, prompt=r["input_tokens"])  # fmt: skip
        result = ceiling(cat, at)
        assert result.time_per_output_token_s <= rule.tpot_s and result.ttft_s <= rule.ttft_s, r["id"]
    assert table.filter(pl.col("tpot_limit_s").is_not_null()).height == 15


def test_a_rolling_window_cache_caps_the_context_its_ceiling_reads(cat):
    """JetStream's mlp-063 and mlp-065 both serve Llama 2 13B in int8 with 96 slots; mlp-065 keeps a 1,280-token rolling
    window, mlp-063 a 2,048-token cache. mlp-063's mean context (1,024 + 512 = 1,536) fits its cache; mlp-065 reads 1,280:
    by hand 96 x 256 fewer tokens of 40 layers x 40 KV heads x 128 x 2 x 1 byte each decode step, so a higher ceiling."""
    table = reference_compare(cat).filter(pl.col("id").is_in(["mlp-063", "mlp-065"])).sort("id")
    assert table["kv_window"].to_list() == [None, 1280] and table["batch"].to_list() == [96, 96]
    assert table["ceiling"][1] > table["ceiling"][0]
    long = operation_table(cat, Scenario(gpu="tpu-v5e", num_gpus=8, model="llama-2-13b", weights="int8", kv="int8", batch=96, context=1536))
    short = operation_table(
        cat, Scenario(gpu="tpu-v5e", num_gpus=8, model="llama-2-13b", weights="int8", kv="int8", batch=96, context=1280)
    )
    assert long["kv_bytes"].sum() - short["kv_bytes"].sum() == pytest.approx(96 * 256 * 40 * 40 * 128 * 2 * 1, rel=1e-12)
    same = reference_compare(
        cat, cat.reference.filter(pl.col("id") == "mlp-063").with_columns(pl.lit(1280, dtype=pl.Int64).alias("kv_window"))
    )
    assert same["ceiling"][0] == pytest.approx(table["ceiling"][1], rel=1e-12)


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


def test_a_llama_cpp_layer_split_is_set_against_a_pipelines_ceiling(cat):
    """llama-bench on 2 x RTX 4090 with no tensor parallelism printed (g2b-0005 tg512, g2b-0001 pp512) runs its layer
    split: a token passes both GPUs one after the other, so the decode ceiling is the whole model at one GPU's rates
    (1 / one GPU's step at the row's context, 256: half the 512 output), not one tensor-parallel group's; a 512-token
    prompt is one micro-batch (n_ubatch 512), so it too passes the stages one after the other: (1 + 2 - 1) / (1 x 2) of
    two stages' time, the one GPU's prefill."""
    from core.evidence.reference import reference_compare

    rows = {r["id"]: r for r in reference_compare(cat).filter(pl.col("id").is_in(["g2b-0001", "g2b-0005"])).iter_rows(named=True)}
    # llama-bench prints the file's size: its bits per weight are the file's (model_bytes x 8 / parameters)
    bits = rows["g2b-0005"]["model_bytes"] * 8 / cat.models.filter(pl.col("id") == "llama-3.1-8b")["total_params"][0]
    one = Scenario(gpu="rtx-4090", num_gpus=1, model="llama-3.1-8b", weights="q4_k_m", kv="fp16", batch=1, weight_bits=bits)
    decode = ceiling(cat, one.at(context=256))
    prefill = ceiling(cat, one.at(prompt=512))
    assert rows["g2b-0005"]["ceiling"] == pytest.approx(1.0 / decode.step_time_s, rel=1e-9)
    assert rows["g2b-0001"]["ceiling"] == pytest.approx(512 / prefill.ttft_s, rel=1e-9)
