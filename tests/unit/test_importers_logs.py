"""Readers of MLPerf logs and tables, llama-bench md/sql, the optimum-benchmark leaderboard CSV and InferenceX rows.

Each reader is called on its fixture and its Extract validated against the
catalogue the way parse_file does; the expected values are computed by hand
from the fixture's numbers (comments say how).
"""

from __future__ import annotations

import csv
import io
import json

import polars as pl
import pytest

from core.catalogue.catalogue import load_catalogue
from core.evidence.compare import compare
from core.evidence.formats import FormatError, logs
from core.evidence.importers import ImportContext
from core.evidence.measurements import validate
from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.store import Store
from tests.helpers import FIXTURES

GIB = 1024.0**3


@pytest.fixture(scope="module")
def cat(tmp_path_factory: pytest.TempPathFactory):
    return load_catalogue(Store(tmp_path_factory.mktemp("logs") / "logs.duckdb"))


def text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def rows(extract, cat, **context) -> list[dict]:
    """The validated measurements, as parse_file makes them (context values replace the file's)."""
    return validate(extract, cat, ImportContext(**context).model_dump()).to_dicts()


def headers(name: str) -> list[str]:
    return next(csv.reader(io.StringIO(text(name))))


def check(row: dict, expected: dict) -> None:
    for key, value in expected.items():
        assert row[key] == (pytest.approx(value) if isinstance(value, float) else value), key


# -- MLPerf loadgen summary --------------------------------------------------------------------

SCENARIO = {"gpu": "h200-sxm", "num_gpus": 8, "model": "llama-2-70b", "batch": 256, "input_tokens": 1024, "output_tokens": 128}


@pytest.mark.parametrize(
    ("name", "line", "expected"),
    [
        # v5.0 Offline: "Tokens per second: 30412.6" on line 8; Offline prints no token latencies
        ("mlperf_log_summary_offline.txt", 8, {"tokens_per_s": 30412.6, "ttft_s": None, "tpot_s": None}),
        # current Server: "Completed tokens per second: 29210.45"; mean TTFT 612345678 ns, mean TPOT 41234567 ns
        ("mlperf_log_summary_server.txt", 8, {"tokens_per_s": 29210.45, "ttft_s": 0.612345678, "tpot_s": 0.041234567}),
        # v4.0 Server prints the token rate in Additional Stats only (line 33); "Time to Output Token" then
        ("mlperf_log_summary_v4.0_server.txt", 33, {"tokens_per_s": 13321.5, "ttft_s": 0.731042286, "tpot_s": 0.073105522}),
    ],
)
def test_mlperf_summary_gives_one_serving_measurement(cat, name, line, expected):
    body = text(name)
    assert logs.is_mlperf_summary(body[:2000])
    extract = logs.mlperf_summary(body, {})
    assert extract.format == "mlperf-summary" and extract.row_label == "line"
    (row,) = rows(extract, cat, **SCENARIO)
    assert row["row"] == line
    check(row, {"phase": "mixed", "gpu": "h200-sxm", "num_gpus": 8, "model": "llama-2-70b", "batch": 256, **expected})


def test_mlperf_summary_leaves_the_scenario_to_the_context(cat):
    """The summary names no model, accelerator or concurrency: the import asks for them."""
    extract = logs.mlperf_summary(text("mlperf_log_summary_server.txt"), {})
    assert extract.frame.row(0, named=True)["batch"] is None
    with pytest.raises(Exception, match="no accelerator in the file"):
        rows(extract, cat, model="llama-2-70b", batch=8, input_tokens=1024, output_tokens=128)


def test_mlperf_summary_before_v4_and_accuracy_runs_are_refused():
    with pytest.raises(FormatError, match="no tokens per second") as exc:
        logs.mlperf_summary(text("mlperf_log_summary_v3.1.txt"), {})
    assert (exc.value.row, exc.value.column) == (7, "Samples per second")
    accuracy = text("mlperf_log_summary_offline.txt").replace("Mode     : PerformanceOnly", "Mode     : AccuracyOnly")
    with pytest.raises(FormatError, match="AccuracyOnly") as exc:
        logs.mlperf_summary(accuracy, {})
    assert exc.value.row == 6
    invalid = text("mlperf_log_summary_server.txt").replace("Result is : VALID", "Result is : INVALID")
    assert any("INVALID" in n for n in logs.mlperf_summary(invalid, {}).notes)


# -- MLPerf results summary.csv ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "model_id"),
    [
        ("llama2-70b-99.9", "llama-2-70b"),
        ("llama2-70b-interactive-99", "llama-2-70b"),
        ("llama3.1-8b-edge", "llama-3.1-8b"),
        ("llama3.1-405b", "llama-3.1-405b"),
        ("mixtral-8x7b", "mixtral-8x7b"),
        ("deepseek-r1", "deepseek-v3"),
        ("gptj-99", None),
        ("resnet", None),
    ],
)
def test_mlperf_benchmark_names_map_to_catalogue_models(name, model_id):
    assert logs.mlperf_benchmark_model(name) == model_id


def test_mlperf_results_csv_reads_llm_rows_of_the_current_checker(cat):
    """Rows 1, 3, 5 are LLM token rates; row 2 is its power row, row 4 retinanet."""
    assert logs.is_mlperf_results_csv(headers("mlperf_summary.csv"))
    extract = logs.mlperf_results_csv((FIXTURES / "mlperf_summary.csv").read_bytes(), {})
    out = rows(extract, cat, batch=64, input_tokens=1024, output_tokens=256)
    assert [r["row"] for r in out] == [1, 3, 5]
    check(out[0], {"gpu": "b200", "num_gpus": 8, "model": "llama-2-70b", "weights": "fp4", "phase": "mixed", "tokens_per_s": 98443.2})
    # 18 nodes x 4 GB200 = 72 accelerators (total_accelerators)
    check(out[1], {"gpu": "gb200", "num_gpus": 72, "model": "llama-3.1-405b", "tokens_per_s": 13886.4})
    check(out[2], {"gpu": "h200-sxm", "num_gpus": 8, "model": "llama-3.1-8b", "weights": "fp8", "tokens_per_s": 31022.8})
    assert extract.frame["input_tokens"].null_count() == 3  # lengths are not in the table
    assert any("1 power rows" in n and "retinanet" in n for n in extract.notes)


def test_mlperf_results_csv_v4_units_and_samples_rates(cat):
    """v4.1 labels token rates Samples/s / Queries/s; v4.0 Server results are samples/s and are skipped."""
    data = (FIXTURES / "mlperf_summary_v4.1.csv").read_bytes()
    assert logs.is_mlperf_results_csv(headers("mlperf_summary_v4.1.csv"))
    out = rows(logs.mlperf_results_csv(data, {}), cat, batch=64, input_tokens=1024, output_tokens=256)
    assert [(r["row"], r["model"], r["num_gpus"]) for r in out] == [(1, "mixtral-8x7b", 8), (2, "llama-2-70b", 8), (4, "llama-2-70b", 8)]
    assert [r["tokens_per_s"] for r in out] == pytest.approx([56102.3, 32140.6, 30275.9])
    # number_of_nodes 1 x accelerators_per_node "8" (no total_accelerators column in v4.1)
    assert {r["gpu"] for r in out} == {"h200-sxm"}
    v40 = logs.mlperf_results_csv(data.replace(b",v4.1,", b",v4.0,"), {})
    assert v40.frame["row"].to_list() == [2]  # only the Offline llama2 row is a token rate in v4.0
    assert any("Server in Queries/s" in n for n in v40.notes)


def test_mlperf_results_csv_without_llm_rows_is_refused():
    data = (FIXTURES / "mlperf_summary_v4.1.csv").read_bytes().splitlines()
    only_resnet = b"\n".join([data[0], data[3]]) + b"\n"
    with pytest.raises(FormatError, match="no LLM result in tokens/s.*benchmark resnet50"):
        logs.mlperf_results_csv(only_resnet, {})


# -- llama-bench markdown and sql ---------------------------------------------------------------


def test_llama_bench_md_reads_tests_depths_and_sizes(cat):
    body = text("llama_bench_md.md")
    assert logs.is_llama_bench_md(body)
    extract = logs.llama_bench_md(body, {})
    out = rows(extract, cat, gpu="h100-sxm")
    assert [r["row"] for r in out] == [3, 4, 5, 6]
    common = {"gpu": "h100-sxm", "model": "llama-3.1-8b", "weights": "q4_k_m", "kv": "fp16", "batch": 1}  # "Q4_K - Medium"
    check(out[0], {**common, "phase": "prefill", "input_tokens": 512, "output_tokens": 0, "tokens_per_s": 11843.27})
    check(out[1], {**common, "phase": "decode", "input_tokens": 0, "output_tokens": 128, "tokens_per_s": 178.42})
    # "pp512 @ d4096": a 512-token prompt over 4096 cached tokens; "tg128 @ d4096": decode after 4096 tokens
    check(out[2], {"phase": "prefill", "input_tokens": 512, "depth": 4096, "output_tokens": 0, "tokens_per_s": 9051.66})
    check(out[3], {"phase": "decode", "input_tokens": 0, "depth": 4096, "output_tokens": 128, "tokens_per_s": 161.09})
    assert [r["depth"] for r in out[:2]] == [0, 0]
    assert extract.model_bytes == pytest.approx([4.58 * GIB] * 4)


def test_an_imported_prompt_over_a_cached_depth_meets_that_ceiling(cat):
    """The imported 'pp512 @ d4096' is set against the ceiling of a 512-token prompt over 4,096 cached tokens (the
    prompt's attention reads them), below the depth-0 row's; its 'tg128 @ d4096' decodes at context 4,096 + 64."""
    out = pl.DataFrame(rows(logs.llama_bench_md(text("llama_bench_md.md"), {}), cat, gpu="h100-sxm"))
    table = compare(cat, out)
    bits = 4.58 * GIB * 8 / cat.models.filter(pl.col("id") == "llama-3.1-8b")["total_params"][0]
    base = Scenario(gpu="h100-sxm", model="llama-3.1-8b", weights="q4_k_m", kv="fp16", weight_bits=bits, prompt=512)
    flat = ceiling(cat, base.model_copy(update={"context": 512}))
    deep = ceiling(cat, base.model_copy(update={"context": 4608, "depth": 4096}))
    ceilings = (table["tokens_per_s"] / table["ratio"]).to_list()  # ratio = measured / the row's own ceiling
    assert ceilings[0] == pytest.approx(512 / flat.ttft_s, rel=1e-9)
    assert ceilings[2] == pytest.approx(512 / deep.ttft_s, rel=1e-9) and ceilings[2] < ceilings[0]
    at_depth = ceiling(cat, base.model_copy(update={"context": 4096 + 64}))
    assert ceilings[3] == pytest.approx(at_depth.tokens_per_s_total, rel=1e-9)


def test_llama_bench_md_old_layout_with_spaced_test_names(cat):
    """Older builds print "pp 512" / "tg 128" in a narrower table."""
    body = text("llama_bench_md_old.md")
    assert logs.is_llama_bench_md(body)
    extract = logs.llama_bench_md(body, {})
    out = rows(extract, cat, gpu="rtx-4090", model="llama-2-7b")
    check(out[0], {"row": 3, "phase": "prefill", "input_tokens": 512, "tokens_per_s": 8921.37, "weights": "q4_0"})
    check(out[1], {"row": 4, "phase": "decode", "output_tokens": 128, "tokens_per_s": 151.84})
    assert extract.model_bytes == pytest.approx([3.56 * GIB, 3.56 * GIB])


def test_llama_bench_md_bad_test_name_names_the_line():
    body = text("llama_bench_md.md").replace("tg128 @ d4096", "xx128 @ d4096")
    with pytest.raises(FormatError, match="xx128") as exc:
        logs.llama_bench_md(body, {})
    assert (exc.value.row, exc.value.column) == (6, "test")


@pytest.mark.parametrize(
    ("name", "lines", "gpu", "model", "kv", "size", "first", "second"),
    [
        # tools/llama-bench: table llama_bench; q8_0 KV; prefill TTFT = avg_ns 43251840 ns; TPOT = 717431210 ns / 128
        (
            "llama_bench_sql.sql",
            [44, 45, 46],
            "h100-sxm",
            "llama-3.1-8b",
            "int8",
            4920733696,
            {"phase": "prefill", "input_tokens": 512, "tokens_per_s": 11837.884519, "ttft_s": 0.04325184},
            {"phase": "decode", "output_tokens": 128, "tokens_per_s": 178.41425, "tpot_s": 717431210 / 128 / 1e9},
        ),
        # examples/llama-bench: table test, no n_depth column
        (
            "llama_bench_sql_old.sql",
            [43, 44],
            "rtx-4090",
            "llama-2-7b",
            "fp16",
            3825065984,
            {"phase": "prefill", "input_tokens": 512, "tokens_per_s": 8921.370412, "ttft_s": 0.05739027},
            {"phase": "decode", "output_tokens": 128, "tokens_per_s": 151.840117, "tpot_s": 842990630 / 128 / 1e9},
        ),
    ],
)
def test_llama_bench_sql_reads_each_insert(cat, name, lines, gpu, model, kv, size, first, second):
    body = text(name)
    assert logs.is_llama_bench_sql(body[:2000]) and not logs.is_llama_bench_md(body)
    extract = logs.llama_bench_sql(body, {})
    out = rows(extract, cat)
    assert [r["row"] for r in out] == lines
    gguf = {"llama_bench_sql.sql": "q4_k_m", "llama_bench_sql_old.sql": "q4_0"}[name]  # the files' model_type: Q4_K - Medium, Q4_0
    assert {(r["gpu"], r["model"], r["kv"], r["weights"]) for r in out} == {(gpu, model, kv, gguf)}
    check(out[0], first)
    check(out[1], second)
    assert extract.model_bytes == [float(size)] * len(lines)


def test_llama_bench_sql_depth_row_and_broken_insert():
    extract = logs.llama_bench_sql(text("llama_bench_sql.sql"), {})
    row = extract.frame.row(2, named=True)  # tg128 at n_depth 4096
    assert (row["input_tokens"], row["depth"]) == ("0", "4096")
    broken = text("llama_bench_sql.sql").replace("'layer', ", "'lay'er', ", 1)
    with pytest.raises(FormatError, match="quote inside a value") as exc:
        logs.llama_bench_sql(broken, {})
    assert (exc.value.row, exc.value.column) == (44, "VALUES")
    short = text("llama_bench_sql.sql").replace("'layer', ", "", 1)
    with pytest.raises(FormatError, match="39 values for 40 columns") as exc:
        logs.llama_bench_sql(short, {})
    assert exc.value.row == 44


# -- optimum-benchmark leaderboard CSV -----------------------------------------------------------


def test_optimum_leaderboard_csv_reads_like_the_json_report(cat):
    assert logs.is_optimum_benchmark_csv(headers("optimum_leaderboard.csv"))
    extract = logs.optimum_benchmark_csv((FIXTURES / "optimum_leaderboard.csv").read_bytes(), {})
    assert extract.format == "optimum-benchmark-csv" and extract.row_label == "row"
    out = rows(extract, cat)
    assert [(r["row"], r["phase"]) for r in out] == [(1, "prefill"), (1, "decode"), (2, "prefill"), (2, "decode")]
    common = {"gpu": "a100-80gb-sxm", "batch": 1, "input_tokens": 256, "output_tokens": 64}
    # prefill latency mean = (0.0216 + 0.0214 + 0.0215) / 3; per-token latency mean = (0.0245 + 0.0246) / 2
    check(out[0], {**common, "model": "llama-3.1-8b", "weights": "bf16", "tokens_per_s": 11907.0, "ttft_s": 0.0215})
    check(out[1], {**common, "tokens_per_s": 40.73, "tpot_s": 0.02455})
    check(out[3], {**common, "model": "mistral-7b", "weights": "fp16", "tokens_per_s": 44.03, "tpot_s": 0.02275})


# -- InferenceX -----------------------------------------------------------------------------------


def test_inferencex_rows_give_deployment_output_rates(cat):
    records = json.loads(text("inferencex_agg_bmk.json"))
    assert all(logs.is_inferencex(r) for r in records)
    assert not logs.is_inferencex(json.loads(text("vllm_serve.json")))
    extract = logs.inferencex(records, {})
    out = rows(extract, cat)
    # mi355x tp8: 626.2 output tok/s per GPU x 8; DeepSeek-R1 read as deepseek-v3
    check(
        out[0],
        {"gpu": "mi355x", "num_gpus": 8, "model": "deepseek-v3", "weights": "fp8", "phase": "mixed", "batch": 32}
        | {"input_tokens": 1024, "output_tokens": 1024, "tokens_per_s": 5009.6, "ttft_s": 0.4122, "tpot_s": 0.0471},
    )
    # h200 tp2 gpt-oss (fp4 = MXFP4 weights): 2414.9 x 2
    check(out[1], {"gpu": "h200-sxm", "num_gpus": 2, "model": "gpt-oss-120b", "weights": "mxfp4", "tokens_per_s": 4829.8})
    # disaggregated gb200: 4 prefill + 8 decode GPUs; output rate per decode GPU 938.9 x 8
    check(out[2], {"gpu": "gb200", "num_gpus": 12, "batch": 90, "input_tokens": 8192, "output_tokens": 1024, "tokens_per_s": 7511.2})
    assert any("speculative decoding in 1 row(s) (from 3)" in n for n in extract.notes)


def test_inferencex_v1_rows_need_lengths_for_the_output_share(cat):
    records = json.loads(text("inferencex_agg_v1.json"))
    assert logs.is_inferencex(records[0])
    with pytest.raises(FormatError, match="no isl/osl") as exc:
        logs.inferencex(records, {})
    assert (exc.value.row, exc.value.column) == (1, "tput_per_gpu")
    lengths = {"input_tokens": 1024, "output_tokens": 1024}
    out = rows(logs.inferencex(records, lengths), cat, **lengths)
    # tput_per_gpu counts prompt + output tokens: 1603.3 x 8 x 1024 / 2048; 3902.5 x 4 x 1/2
    assert [r["tokens_per_s"] for r in out] == pytest.approx([6413.2, 7805.0])
    assert [(r["gpu"], r["num_gpus"], r["batch"]) for r in out] == [("h200-sxm", 8, 64), ("b200", 4, 16)]


# -- detectors ------------------------------------------------------------------------------------


def test_detectors_reject_the_other_formats():
    md, sql, summary = text("llama_bench_md.md"), text("llama_bench_sql.sql"), text("mlperf_log_summary_offline.txt")
    assert not logs.is_mlperf_summary(md) and not logs.is_mlperf_summary(sql)
    assert not logs.is_llama_bench_md(summary) and not logs.is_llama_bench_md(text("genai_perf.csv"))
    assert not logs.is_llama_bench_sql(md) and not logs.is_llama_bench_sql(summary)
    for name in ("generic.csv", "llama_bench.csv", "optimum_leaderboard.csv"):
        assert not logs.is_mlperf_results_csv(headers(name))
    for name in ("generic.csv", "mlperf_summary.csv"):
        assert not logs.is_optimum_benchmark_csv(headers(name))
