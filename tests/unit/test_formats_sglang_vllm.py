"""SGLang bench_offline_throughput / bench_one_batch_server, bench_serving's percentiles, early-2024 vLLM serving files.

Every expected value is worked out by hand from the fixture (tests/fixtures/README.md says which tool's code wrote
each layout); the arithmetic is in the comments.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from core.evidence.importers import ImportContext, ImportFileError, parse_file
from core.store import Store
from tests.helpers import FIXTURES

CTX = ImportContext(gpu="h100-sxm", model="llama-3.1-8b")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("sgv") / "sgv.duckdb")


def parsed(store, name, ctx=CTX, data=None):
    return parse_file(store, data if data is not None else (FIXTURES / name).read_bytes(), name, context=ctx)


def refused(store, name, data, ctx=CTX) -> str:
    with pytest.raises(ImportFileError) as exc:
        parse_file(store, data, name, context=ctx)
    message = str(exc.value)
    assert "\n" not in message
    return message


def lines(name: str) -> list[dict]:
    return [json.loads(ln) for ln in (FIXTURES / name).read_text().splitlines() if ln.strip()]


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def approx(value: float) -> object:
    return pytest.approx(value, rel=1e-9)


# -- 1. bench_offline_throughput ------------------------------------------------------------------


def test_offline_throughput_is_one_mixed_measurement_per_run_with_the_batch_from_context(store):
    p = parsed(store, "sglang_offline.jsonl", CTX.model_copy(update={"batch": 256}))
    assert p.format == "sglang-offline"
    rows = p.rows.to_dicts()
    assert len(rows) == 2
    a, b = rows
    # line 1: output_throughput 10961.453745492516; 1024000 / 1000 = 1024 input and 1024 output tokens per request
    assert (a["phase"], a["batch"], a["input_tokens"], a["output_tokens"]) == ("mixed", 256, 1024, 1024)
    assert a["tokens_per_s"] == approx(10961.453745492516)
    assert a["requests"] == 1000
    # line 2: 1024000 / 500 = 2048 input, 128000 / 500 = 256 output tokens, output_throughput 4119.132884864263
    assert (b["input_tokens"], b["output_tokens"], b["requests"]) == (2048, 256, 500)
    assert b["tokens_per_s"] == approx(4119.132884864263)
    assert a["ttft_s"] is None and a["tpot_s"] is None


def test_offline_throughput_older_layout_rounds_the_mean_lengths(store):
    """The layout before `last_gen_throughput` (ShareGPT prompts, lengths vary)."""
    p = parsed(store, "sglang_offline_old.jsonl", CTX.model_copy(update={"batch": 128}))
    assert p.format == "sglang-offline"
    row = p.rows.row(0, named=True)
    # 215196 / 1000 = 215.196 -> 215; 198343 / 1000 = 198.343 -> 198
    assert (row["input_tokens"], row["output_tokens"], row["batch"]) == (215, 198, 128)
    assert row["tokens_per_s"] == approx(7196.483918454848)


def test_offline_throughput_asks_for_the_batch(store):
    """The file holds the prompt count, not how many ran at once: the batch is asked for by name."""
    message = refused(store, "run.jsonl", (FIXTURES / "sglang_offline.jsonl").read_bytes())
    assert "batch (sequences)" in message and "successful_requests" in message


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda r: r.pop("total_output_tokens"), "total_output_tokens is missing"),
        (lambda r: r.update(output_throughput="fast"), "output_throughput"),
        (lambda r: r.update(output_throughput=float("nan")), "output_throughput"),
        (lambda r: r.update(output_throughput=float("inf")), "output_throughput"),
        (lambda r: r.update(successful_requests=0), "successful_requests"),
    ],
)
def test_offline_throughput_refuses_broken_records(store, change, words):
    recs = lines("sglang_offline.jsonl")
    change(recs[1])
    message = refused(store, "run.jsonl", jsonl(recs), CTX.model_copy(update={"batch": 256}))
    assert words in message
    assert "record 2" in message


# -- 2. bench_one_batch_server ---------------------------------------------------------------------


def test_one_batch_server_gives_prefill_and_decode_per_batch_size(store):
    p = parsed(store, "sglang_one_batch_server.jsonl")
    assert p.format == "sglang-one-batch-server"
    rows = p.rows
    assert rows["row"].to_list() == [1, 1, 2, 2, 3, 3]
    pre = rows.filter(pl.col("phase") == "prefill").to_dicts()
    dec = rows.filter(pl.col("phase") == "decode").to_dicts()
    assert [r["batch"] for r in pre] == [1, 16, 64] == [r["batch"] for r in dec]
    assert {(r["input_tokens"], r["output_tokens"]) for r in pre + dec} == {(1024, 256)}
    # prefill: input_throughput (prompt tokens / last_ttft) and last_ttft as the first-token time
    assert [r["tokens_per_s"] for r in pre] == [22635.29, 37137.56, 37272.32]
    assert [r["ttft_s"] for r in pre] == [0.0452, 0.4412, 1.7583]
    # decode: steady_state_output_throughput (the full-batch window); TPOT = batch / that, the tool's own ITL
    assert [r["tokens_per_s"] for r in dec] == [196.09, 2319.23, 6988.43]
    assert dec[1]["tpot_s"] == approx(16 / 2319.23)  # 6.899 ms
    assert dec[0]["ttft_s"] is None and pre[0]["tpot_s"] is None


def test_one_batch_server_without_steady_state_reads_output_throughput(store):
    recs = lines("sglang_one_batch_server.jsonl")
    for r in recs:
        r["steady_state_output_throughput"] = None
    dec = parsed(store, "obs.jsonl", data=jsonl(recs)).rows.filter(pl.col("phase") == "decode")
    assert dec["tokens_per_s"].to_list() == [196.85, 2327.28, 7060.42]


def test_one_batch_server_first_streaming_layout_is_decode_only(store):
    """`output_throughput` after the last first token, no TTFT written: one decode measurement per line."""
    p = parsed(store, "sglang_one_batch_server_v2.jsonl")
    assert p.format == "sglang-one-batch-server"
    rows = p.rows.to_dicts()
    assert [(r["phase"], r["batch"], r["output_tokens"]) for r in rows] == [("decode", 1, 16), ("decode", 16, 16)]
    assert [r["tokens_per_s"] for r in rows] == [209.07, 2320.51]
    assert rows[1]["tpot_s"] == approx(16 / 2320.51)


def test_one_batch_server_first_layout_is_the_whole_batch_mixed(store):
    """`output_throughput` = batch x output_len / latency (prefill included): phase mixed."""
    p = parsed(store, "sglang_one_batch_server_old.jsonl")
    assert p.format == "sglang-one-batch-server"
    rows = p.rows.to_dicts()
    assert [(r["phase"], r["batch"], r["input_tokens"], r["output_tokens"]) for r in rows] == [
        ("mixed", 1, 1024, 8),
        ("mixed", 16, 1024, 8),
        ("mixed", 64, 1024, 8),
    ]
    assert [r["tokens_per_s"] for r in rows] == [89.62, 262.03, 280.98]
    assert rows[0]["tpot_s"] is None


def test_one_batch_server_skips_decode_of_one_token_runs(store):
    recs = lines("sglang_one_batch_server.jsonl")[:1]
    recs[0].update(output_len=1, output_throughput=0.0, steady_state_output_throughput=None)
    p = parsed(store, "obs.jsonl", data=jsonl(recs))
    assert p.rows["phase"].to_list() == ["prefill"]
    assert any("output_len 1" in n for n in p.notes)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda r: r.pop("batch_size"), "batch_size is missing"),
        (lambda r: r.update(input_throughput="n/a"), "input_throughput"),
        (lambda r: r.update(last_ttft=float("nan")), "last_ttft"),
        (lambda r: r.update(steady_state_output_throughput=float("inf")), "steady_state_output_throughput"),
        (lambda r: r.update(batch_size=10**30), "batch"),
    ],
)
def test_one_batch_server_refuses_broken_records(store, change, words):
    recs = lines("sglang_one_batch_server.jsonl")
    change(recs[2])
    message = refused(store, "obs.jsonl", jsonl(recs))
    assert words in message
    assert "record 3" in message


def test_empty_and_hollow_files_are_refused(store):
    assert "empty" in refused(store, "obs.jsonl", b"\n\n")
    assert "not a known benchmark format" in refused(store, "obs.jsonl", b'{"run_name": "x"}\n')


# -- 3. bench_serving percentiles --------------------------------------------------------------------


def test_serving_details_file_keeps_its_median_and_p99_and_the_requests_p90(store):
    p = parsed(store, "sglang_serving_details.jsonl")
    assert p.format == "sglang-serving"
    row = p.rows.row(0, named=True)
    assert (row["batch"], row["input_tokens"], row["output_tokens"], row["requests"]) == (4, 512, 4, 8)
    assert row["tokens_per_s"] == approx(111.69284467713788)  # output_throughput
    assert row["ttft_s"] == approx(0.0968625)  # mean_ttft_ms 96.8625
    assert row["ttft_p50_s"] == approx(0.09655)  # median_ttft_ms 96.55
    assert row["ttft_p99_s"] == approx(0.13391699999999997)  # p99_ttft_ms
    assert row["tpot_p50_s"] == approx(0.007264166666666665)  # median_tpot_ms
    assert row["tpot_p99_s"] == approx(0.007576063333333337)  # p99_tpot_ms
    # p90 of the 8 ttfts (s): sorted, position 7 x 0.9 = 6.3 -> 0.1275 + 0.3 x (0.1344 - 0.1275) = 0.12957
    assert row["ttft_p90_s"] == approx(0.12957)
    assert row["tpot_p90_s"] is None  # neither printed nor in the details


def test_plain_serving_file_keeps_its_median_and_p99_too(store):
    row = parsed(store, "sglang_serving.jsonl").rows.row(0, named=True)
    # median_ttft_ms 90.4, p99_ttft_ms 160.2, median_tpot_ms 6.5, p99_tpot_ms 7.2; completed 320
    assert (row["ttft_p50_s"], row["ttft_p99_s"]) == (approx(0.0904), approx(0.1602))
    assert (row["tpot_p50_s"], row["tpot_p99_s"]) == (approx(0.0065), approx(0.0072))
    assert row["ttft_p90_s"] is None and row["requests"] == 320


def test_serving_details_refuse_bad_ttfts(store):
    rec = lines("sglang_serving_details.jsonl")[0]
    rec["ttfts"][3] = "slow"
    message = refused(store, "d.jsonl", jsonl([rec]))
    assert "ttfts" in message and "record 1" in message


# -- 4. vLLM benchmark_serving.py, early 2024 --------------------------------------------------------


def test_vllm_benchmark_serving_of_february_2024_is_read_as_vllm(store):
    """It has `input_throughput` (as SGLang's file does) but `model_id`/`tokenizer_id`: vLLM's."""
    p = parsed(store, "vllm_benchmark_serving_2024.json", ImportContext(gpu="h100-sxm"))
    assert p.format == "vllm-benchmark-serving"
    row = p.rows.row(0, named=True)
    assert row["model"] == "llama-2-7b"
    # no max_concurrency: batch = num_prompts 1000 (request rate inf, all sent at once)
    assert row["batch"] == 1000
    # 217393 / 1000 = 217.393 -> 217; 201722 / 1000 = 201.722 -> 202
    assert (row["input_tokens"], row["output_tokens"], row["requests"]) == (217, 202, 1000)
    assert row["tokens_per_s"] == approx(4183.422020486298)
    assert row["ttft_p50_s"] == approx(11.20418359801988)
    assert row["tpot_p99_s"] == approx(0.8067731286612945)


def test_vllm_serving_file_without_total_input_tokens_names_vllm_and_takes_the_length_from_context(store):
    rec = json.loads((FIXTURES / "vllm_benchmark_serving_2024.json").read_text())
    del rec["total_input_tokens"]
    data = json.dumps(rec).encode()
    message = refused(store, "v.json", data, ImportContext(gpu="h100-sxm"))
    assert "vllm-benchmark-serving" in message and "sglang" not in message
    assert "input tokens per request" in message
    row = parsed(store, "v.json", ImportContext(gpu="h100-sxm", input_tokens=217), data=data).rows.row(0, named=True)
    assert (row["input_tokens"], row["output_tokens"]) == (217, 202)
