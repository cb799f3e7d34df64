"""Every benchmark file a user holds: what each file says is read (metadata, units, phases), per-request files aggregate
to one measurement with its p50/p90/p99, and plain-text files are routed to their own reader.

Expected values are computed by hand from the fixtures' numbers (tests/fixtures/README.md says where each file's
field names come from).
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.evidence.formats import CANONICAL, DISTRIBUTION, percentile
from core.evidence.formats.registry import BY_NAME, FORMATS, UPLOAD_TYPES, detect_text, format_help
from core.evidence.importers import ImportContext, ImportFileError, dataset_rows, import_file, parse_file
from core.evidence.measurements import Measurement
from core.store import Store
from tests.helpers import FIXTURES

H100 = {"gpu": "h100-sxm"}
LLAMA = {"gpu": "h100-sxm", "model": "llama-3.1-8b"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("files") / "files.duckdb")


def parsed(store, name, as_name=None, **ctx):
    return parse_file(store, (FIXTURES / name).read_bytes(), as_name or name, context=ImportContext(**ctx))


def refused(store, name, **ctx) -> str:
    with pytest.raises(ImportFileError) as info:
        parsed(store, name, **ctx)
    return str(info.value)


# -- vLLM: what the file says ----------------------------------------------------------------


def test_vllm_serve_metadata_gives_the_accelerator_and_tp_and_appended_runs_are_each_a_measurement(store):
    """--metadata gpu=h100-sxm tp=2 (strings at the top level) need no context; --append-result lines are two runs."""
    p = parsed(store, "vllm_serve_append.jsonl")
    rows = p.rows
    assert p.format == "vllm-serve"
    assert rows["row"].to_list() == [1, 2]
    assert rows["gpu"].to_list() == ["h100-sxm", "h100-sxm"]
    assert rows["num_gpus"].to_list() == [2, 2]
    assert rows["model"].to_list() == ["llama-3.1-8b", "llama-3.1-8b"]
    assert rows["batch"].to_list() == [16, 64]
    assert rows["input_tokens"].to_list() == [655360 // 640] * 2 and rows["output_tokens"].to_list() == [81920 // 640] * 2
    assert rows["tokens_per_s"].to_list() == [849.8, 2625.6]
    first = rows.row(0, named=True)
    # median_ttft_ms 88.5 (p50), p99_ttft_ms 171.4; no p90 in the file (--metric-percentiles default "99")
    assert first["ttft_p50_s"] == pytest.approx(0.0885) and first["ttft_p99_s"] == pytest.approx(0.1714)
    assert first["ttft_p90_s"] is None
    assert first["tpot_p50_s"] == pytest.approx(0.01725) and first["tpot_p99_s"] == pytest.approx(0.02288)
    assert first["requests"] == 640


def test_vllm_throughput_num_requests_is_not_the_batch(store):
    """num_requests (1000 prompts) is not the batch: asked for in words, else taken from the context or max_num_seqs."""
    msg = refused(store, "vllm_throughput.json", **LLAMA, input_tokens=1024, output_tokens=128)
    assert msg == (
        "vllm_throughput.json: column num_requests: vllm bench throughput JSON holds no batch "
        "(num_requests is the prompt count, not the batch): give it as context: batch (sequences)"
    )
    assert "--" not in msg
    row = parsed(store, "vllm_throughput.json", **LLAMA, batch=256, input_tokens=1024, output_tokens=128).rows.row(0, named=True)
    assert row["batch"] == 256 and row["requests"] == 1000
    assert row["tokens_per_s"] == pytest.approx(12467.5 * 128 / 1152)
    both = refused(store, "vllm_throughput.json", **LLAMA)
    assert both.endswith("give them as context: batch (sequences), input tokens per request and output tokens per request")


def test_vllm_pytorch_records_carry_their_scenario_in_the_args(store):
    """SAVE_TO_PYTORCH_BENCHMARK_FORMAT files: the latency run's batch_size/lengths/tp and the throughput run's max_num_seqs."""
    lat = parsed(store, "vllm_latency.pytorch.json", **H100)
    assert lat.format == "vllm-pytorch"
    row = lat.rows.row(0, named=True)
    assert (row["batch"], row["input_tokens"], row["output_tokens"], row["num_gpus"]) == (8, 1024, 128, 2)
    assert row["model"] == "llama-3.1-8b"
    assert row["tokens_per_s"] == pytest.approx(8 * 128 / 1.53)
    thr = parsed(store, "vllm_throughput.pytorch.json", **H100).rows
    assert thr.height == 1  # requests_per_second and tokens_per_second records are one run
    row = thr.row(0, named=True)
    assert row["batch"] == 256 and row["requests"] == 1000
    assert row["tokens_per_s"] == pytest.approx(12467.532467532468 * 128 / (1024 + 128))


def test_vllm_latency_json_asks_for_batch_and_lengths_in_words(store):
    """The plain --output-json holds only times: tokens/s = batch x output / avg_latency once they are given."""
    msg = refused(store, "vllm_latency.json", **LLAMA)
    assert msg == (
        "vllm_latency.json: column avg_latency: vllm bench latency JSON holds only latencies (no batch, no lengths): "
        "give them as context: batch (sequences), input tokens per request and output tokens per request"
    )
    row = parsed(store, "vllm_latency.json", **LLAMA, batch=8, input_tokens=1024, output_tokens=128).rows.row(0, named=True)
    assert row["tokens_per_s"] == pytest.approx(8 * 128 / 1.53) and row["phase"] == "mixed"


# -- text routing and the vLLM engine log ------------------------------------------------------


def test_a_txt_log_is_accepted_and_routed_to_its_text_reader(store):
    """txt/log/md/sql are upload types; a vLLM log named .txt is read by the vllm-log reader, not as a CSV."""
    assert {"csv", "json", "jsonl", "yaml", "yml", "txt", "md", "log", "sql"} == set(UPLOAD_TYPES)
    p = parsed(store, "vllm_engine_v0.log", "server.txt", **H100, input_tokens=1024, output_tokens=256)
    assert p.format == "vllm-log"
    rows = p.rows
    # line 7 is idle (0.0 tokens/s generation) and left out; line 8 also had prompt throughput 6553.4: mixed
    assert rows["row"].to_list() == [8, 9, 10]
    assert rows["phase"].to_list() == ["mixed", "decode", "decode"]
    assert rows["batch"].to_list() == [32, 32, 32]
    assert rows["tokens_per_s"].to_list() == [412.8, 1543.2, 1538.6]
    assert rows["model"].to_list() == ["llama-3.1-8b"] * 3 and rows["num_gpus"].to_list() == [1, 1, 1]
    assert any("mixed" in n and "line 8" in n for n in p.notes)


def test_the_v1_engine_log_wording_reads_alike(store):
    """vLLM V1 ("(APIServer pid=..) INFO .. [loggers.py:..] Engine 000: ... Running: N reqs, Waiting: ...") and its config line."""
    rows = parsed(store, "vllm_engine_v1.log", **H100, input_tokens=2048, output_tokens=512).rows
    assert rows["row"].to_list() == [5, 6]
    assert rows["phase"].to_list() == ["mixed", "decode"]
    assert rows["batch"].to_list() == [64, 64] and rows["tokens_per_s"].to_list() == [96.0, 2240.5]
    assert rows["model"].to_list() == ["llama-3.1-70b"] * 2 and rows["num_gpus"].to_list() == [4, 4]


def test_a_log_without_lengths_names_the_line_and_asks_in_words(store):
    msg = refused(store, "vllm_engine_v1.log", **H100)
    assert msg == (
        "vllm_engine_v1.log: line 5, column Avg generation throughput: a vLLM log holds no request lengths: "
        "give them as context: input tokens per request and output tokens per request"
    )


def test_csv_files_are_not_claimed_by_a_text_detector():
    """Text detection runs before CSV detection, so it must leave every CSV fixture to the CSV formats."""
    for name in ("generic.csv", "genai_perf.csv", "aiperf.csv", "llama_bench.csv"):
        assert detect_text((FIXTURES / name).read_text()) is None, name
    assert detect_text((FIXTURES / "vllm_engine_v0.log").read_text()) is BY_NAME["vllm-log"]


def test_format_help_lists_every_registered_format():
    help_text = format_help()
    lines = help_text.splitlines()
    assert len(lines) == len(FORMATS)
    for line, f in zip(lines, FORMATS, strict=True):
        assert line.startswith(f"- **{f.name}**: ")
    assert "\\*.pytorch.json" in help_text  # a markdown asterisk is escaped


# -- AIPerf ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["aiperf_phases.json", "aiperf_loadgen.json"])
def test_aiperf_concurrency_from_phases_or_loadgen(store, name):
    """2026 exports: the profiling phase's concurrency (64, not the warmup's 8); Oct 2025: loadgen.concurrency."""
    p = parsed(store, name, **H100)
    assert p.format == "aiperf-json"
    row = p.rows.row(0, named=True)
    assert row["batch"] == 64 and row["model"] == "llama-3.1-8b"
    assert (row["input_tokens"], row["output_tokens"]) == (2048, 256)
    assert row["tokens_per_s"] == (5031.2 if name == "aiperf_phases.json" else 5120.6)


def test_aiperf_per_request_records_aggregate_to_one_measurement(store):
    """3 profiling requests count (a warmup and a cancelled one do not); tokens/s = 768 tokens / 10 s."""
    p = parsed(store, "aiperf_profile_export.jsonl", **LLAMA, batch=4)
    assert p.format == "aiperf-records"
    assert p.rows.height == 1
    row = p.rows.row(0, named=True)
    assert row["requests"] == 3 and row["batch"] == 4
    assert (row["input_tokens"], row["output_tokens"]) == (1024, 256)  # means of 1000/1024/1048 and 200/256/312
    assert row["tokens_per_s"] == pytest.approx(768 / 10.0)
    assert row["ttft_s"] == pytest.approx(0.14) and row["tpot_s"] == pytest.approx(0.012)
    # linear interpolation on (0.100, 0.120, 0.200) s: p50 = 0.120, p90 = 0.12 + 0.8 x 0.08, p99 = 0.12 + 0.98 x 0.08
    assert row["ttft_p50_s"] == pytest.approx(0.120)
    assert row["ttft_p90_s"] == pytest.approx(0.184)
    assert row["ttft_p99_s"] == pytest.approx(0.1984)
    assert (row["tpot_p50_s"], row["tpot_p90_s"], row["tpot_p99_s"]) == pytest.approx((0.012, 0.0136, 0.01396))
    assert "batch (sequences)" in refused(store, "aiperf_profile_export.jsonl", **LLAMA)


def test_the_distribution_is_stored_and_read_back(tmp_path):
    """Migration 007's columns hold what the import computed; a format without them stores nulls."""
    s = Store(tmp_path / "dist.duckdb")
    ctx = ImportContext(**LLAMA, batch=4)
    res = import_file(s, (FIXTURES / "aiperf_profile_export.jsonl").read_bytes(), "records.jsonl", context=ctx)
    back = dataset_rows(s, res.dataset_id).row(0, named=True)
    assert back["requests"] == 3 and back["ttft_p90_s"] == pytest.approx(0.184) and back["tpot_p99_s"] == pytest.approx(0.01396)
    other = import_file(s, (FIXTURES / "trtllm_report.json").read_bytes(), "trt.json", context=ImportContext(**LLAMA))
    plain = dataset_rows(s, other.dataset_id).row(0, named=True)
    assert all(plain[c] is None for c in DISTRIBUTION)
    assert set(CANONICAL) | set(DISTRIBUTION) <= set(plain)


def test_percentiles_out_of_order_are_refused_by_record_and_bulk_check_alike(store):
    good = parsed(store, "aiperf_profile_export.jsonl", **LLAMA, batch=4).rows
    record = good.drop("row", "source_gpu", "source_model").row(0, named=True)
    Measurement(**record)
    with pytest.raises(ValidationError, match="ttft_p90_s: p90 0.1 s is below p50 0.12 s"):
        Measurement(**(record | {"ttft_p90_s": 0.1}))


def test_percentile_matches_linear_interpolation():
    assert percentile([1.0], 99) == 1.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5  # sorted 1,2,3,4: position 1.5
    assert percentile([0.0, 10.0], 90) == pytest.approx(9.0)


# -- llmperf, genai-perf, optimum-benchmark ---------------------------------------------------


def test_llmperf_individual_responses_aggregate_without_the_failed_request(store):
    """3 of 4 requests (one has error_code 500); tokens/s = 2 x 480 / (3 + 4 + 5) s."""
    p = parsed(store, "llmperf_individual_responses.json", **LLAMA, batch=2)
    assert p.format == "llmperf-requests"
    row = p.rows.row(0, named=True)
    assert row["requests"] == 3
    assert (row["input_tokens"], row["output_tokens"]) == (550, 160)
    assert row["tokens_per_s"] == pytest.approx(2 * 480 / 12)
    assert (row["ttft_p50_s"], row["ttft_p90_s"], row["ttft_p99_s"]) == pytest.approx((0.07, 0.086, 0.0896))
    assert (row["tpot_p50_s"], row["tpot_p90_s"], row["tpot_p99_s"]) == pytest.approx((0.025, 0.029, 0.0299))
    assert "batch (sequences)" in refused(store, "llmperf_individual_responses.json", **LLAMA)


def test_genai_perf_csv_with_fractional_mean_lengths_imports_rounded(store):
    """Output Sequence Length avg 253.80 and Input 511.60 are rounded like the JSON path (254, 512)."""
    row = parsed(store, "genai_perf_fractional.csv", **LLAMA, batch=16).rows.row(0, named=True)
    assert (row["input_tokens"], row["output_tokens"]) == (512, 254)
    assert row["tokens_per_s"] == pytest.approx(1003.5)


def test_optimum_prefill_in_samples_per_s_becomes_tokens_per_s(store):
    """Newer optimum-benchmark: 72.5 samples/s (prompts) x 512 tokens = 37120 tokens/s; the tokens/s file is kept as is."""
    samples = parsed(store, "optimum_benchmark_samples.json").rows
    assert samples["phase"].to_list() == ["prefill", "decode"]
    assert samples["tokens_per_s"].to_list() == [pytest.approx(72.5 * 512), 400.0]
    tokens = parsed(store, "optimum_benchmark.json").rows
    assert tokens["tokens_per_s"].to_list() == [37236.4, 400.0]


def test_every_fixture_is_cited_in_the_fixtures_readme():
    """Each sample file says where its field names come from (tests/fixtures/README.md names it)."""
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    uncited = [p.name for p in sorted(FIXTURES.iterdir()) if p.is_file() and p.name != "README.md" and f"`{p.name}`" not in readme]
    assert not uncited


def test_the_uploader_takes_every_sample_by_its_extension():
    """Each fixture is named as its tool names its file (benchmarks.yaml, server.log, ...): the uploader lists its extension."""
    refused = [p.name for p in FIXTURES.iterdir() if p.name != "README.md" and p.suffix.lstrip(".").lower() not in UPLOAD_TYPES]
    assert not refused


def test_the_readme_format_table_lists_every_format():
    """README's table of formats names every registered format, so a new reader cannot go unlisted."""
    readme = (FIXTURES.parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| tool | files | versions read | format |") :].split("\n\n")[0]
    assert not [name for name in BY_NAME if f"`{name}`" not in table]
