"""TGI's text-generation-benchmark tables and inference-benchmarker results JSON, read through parse_file.

Every expected value is computed by hand from the fixture's numbers (the comments say how); broken variants of
each fixture are refused with one line naming the problem.
"""

from __future__ import annotations

import json

import pytest

from core.evidence.formats.registry import detect_json, detect_text
from core.evidence.importers import ImportContext, ImportFileError, parse_file
from core.store import Store
from tests.helpers import FIXTURES

H100 = ImportContext(gpu="h100-sxm")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("hf") / "hf.duckdb")


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def rows_of(store, name, data=None, ctx=H100):
    p = parse_file(store, read(name) if data is None else data, name, context=ctx)
    return p, p.rows.to_dicts()


def refused(store, name, data, ctx=H100) -> str:
    with pytest.raises(ImportFileError) as exc:
        parse_file(store, data, name, context=ctx)
    message = str(exc.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# -- text-generation-benchmark ------------------------------------------------------------------


def test_tgi_current_tables_give_prefill_and_decode_per_batch(store):
    p, rows = rows_of(store, "tgi_benchmark.txt")
    assert p.format == "tgi-benchmark"
    assert [r["batch"] for r in rows] == [1, 2, 4, 8, 16, 32] * 2
    assert [r["phase"] for r in rows] == ["prefill"] * 6 + ["decode"] * 6
    assert {r["model"] for r in rows} == {"llama-3.1-8b"}  # parameters Model: meta-llama/Llama-3.1-8B-Instruct
    assert {(r["input_tokens"], r["output_tokens"]) for r in rows} == {(512, 128)}  # Sequence Length 512, Decode Length 128
    prefill8, decode32 = rows[3], rows[11]
    # throughput table: "| Prefill | 8 | 32912.54 tokens/secs |"; latency table: "| | 8 | 124.46 ms |"
    assert prefill8["tokens_per_s"] == pytest.approx(32912.54)
    assert prefill8["ttft_s"] == pytest.approx(0.12446)
    assert prefill8["tpot_s"] is None
    # 8 x 512 / 0.12446 s = 32910: the printed value is prompt tokens/s already (TGI >= 2.4.1): not multiplied
    assert prefill8["tokens_per_s"] == pytest.approx(8 * 512 / 0.12446, rel=0.01)
    # "| Decode | 32 | 3239.89 tokens/secs |" and "Decode (token) | 32 | 9.88 ms"; 32 / 0.00988 = 3238.9 (consistent)
    assert decode32["tokens_per_s"] == pytest.approx(3239.89)
    assert decode32["tpot_s"] == pytest.approx(0.00988)
    assert decode32["ttft_s"] is None
    assert rows[0]["row"] == 44  # the throughput table's first data row is line 44 of the file
    assert all(r["ttft_p50_s"] is None and r["tpot_p90_s"] is None for r in rows)  # px() of unsorted runs: not kept


def test_tgi_v1_prefill_in_sequences_per_second_and_merged_cells(store):
    """TGI 1.x: no Top N Tokens / Frequency Penalty rows, one batch (its cell merged: blank under the first), and
    the Prefill throughput printed as batch / latency."""
    p, rows = rows_of(store, "tgi_benchmark_v1.txt", ctx=ImportContext(gpu="a100-80gb-sxm"))
    assert p.format == "tgi-benchmark"
    prefill, decode = rows
    assert (prefill["phase"], prefill["batch"], decode["phase"], decode["batch"]) == ("prefill", 16, "decode", 16)
    assert prefill["model"] == "llama-2-7b" and (prefill["input_tokens"], prefill["output_tokens"]) == (256, 64)
    # printed 134.38 "tokens/secs" = 16 / 0.11908 s (134.4 sequences/s): x Sequence Length 256 = 34401.28 prompt tokens/s
    assert prefill["tokens_per_s"] == pytest.approx(134.38 * 256)
    assert prefill["ttft_s"] == pytest.approx(0.11908)
    assert any("before TGI 2.4.1" in n and "256" in n for n in p.notes)
    # Decode row's Batch Size cell is blank (Merge::vertical): 16 from the row above; 1093.35 tokens/secs, 14.63 ms
    assert decode["tokens_per_s"] == pytest.approx(1093.35) and decode["tpot_s"] == pytest.approx(0.01463)


def test_tgi_current_file_is_not_rescaled(store):
    """The same test fails if the unit guess is wrong: the current file's prefill is kept as printed."""
    p, _ = rows_of(store, "tgi_benchmark.txt")
    assert not any("before TGI 2.4.1" in n for n in p.notes)


def test_tgi_nan_batch_is_left_out(store):
    """A batch that never finished prints NaN everywhere (avg of no runs): left out, said in the notes."""
    text = read("tgi_benchmark.txt").decode()
    text = text.replace("| 32         | 34333.31 tokens/secs | 33769.19 tokens/secs | 34888.45 tokens/secs |",
                        "| 32         | NaN tokens/secs      | NaN tokens/secs      | NaN tokens/secs      |")  # fmt: skip
    p, rows = rows_of(store, "tgi_benchmark.txt", text.encode())
    assert len(rows) == 11 and [r["batch"] for r in rows if r["phase"] == "prefill"] == [1, 2, 4, 8, 16]
    assert any("NaN" in n and "batch 32" in n for n in p.notes)


def test_tgi_lengths_come_from_context_without_the_parameters_table(store):
    text = read("tgi_benchmark.txt").decode()
    body = text[text.index("| Step           |") :]  # the latency and throughput tables only
    message = refused(store, "tgi.txt", body.encode())
    assert "input tokens per request and output tokens per request" in message and "Sequence Length" in message
    ctx = ImportContext(gpu="h100-sxm", model="llama-3.1-8b", input_tokens=512, output_tokens=128)
    _, rows = rows_of(store, "tgi.txt", body.encode(), ctx)
    assert rows[0]["input_tokens"] == 512 and rows[0]["tokens_per_s"] == pytest.approx(20856.91)


def test_tgi_needs_the_accelerator(store):
    message = refused(store, "tgi_benchmark.txt", read("tgi_benchmark.txt"), ImportContext())
    assert "accelerator" in message


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("| 8          | 1059.89 tokens/secs  |", "| 8          | lots tokens/secs     |", "not a number: 'lots"),
        ("| 8          | 1059.89 tokens/secs  |", "| 8          | inf tokens/secs      |", "not a finite number"),
        ("| 8          | 1059.89 tokens/secs  |", "| 8          | 1e400 tokens/secs    |", "not a finite number"),
        ("| 16         | 8.39 ms    |", "| 16         | -8.39 ms   |", "-8.39"),
        ("| Decode Length      | 128 ", "| Decode Length      | x12 ", "not a number: 'x12'"),
        ("| 16         | 1908.18 tokens/secs  |", "| 16         | 1908.18 tokens/secs  | 9 |", "cells"),
    ],
)
def test_tgi_broken_cells_are_refused_naming_the_line(store, old, new, words):
    text = read("tgi_benchmark.txt").decode()
    assert old in text
    message = refused(store, "tgi_benchmark.txt", text.replace(old, new, 1).encode())
    assert words in message and "line" in message


def test_tgi_parameters_alone_are_refused(store):
    text = read("tgi_benchmark.txt").decode()
    params = text[: text.index("| Step           |")]
    message = refused(store, "tgi_benchmark.txt", params.encode())
    assert "no throughput table" in message


def test_tgi_detection():
    text = read("tgi_benchmark.txt").decode()
    fmt = detect_text(text)
    assert fmt is not None and fmt.name == "tgi-benchmark"
    throughput = text[text.rindex("| Step    |") :]
    fmt = detect_text(throughput)
    assert fmt is not None and fmt.name == "tgi-benchmark"
    assert detect_text(read("llama_bench_md.md").decode()).name == "llama-bench-md"  # type: ignore[union-attr]
    assert detect_text("| Parameter | Value |\n|---|---|\n| Model | x |\n") is None  # a two-column table is not enough


# -- inference-benchmarker --------------------------------------------------------------------


def test_inference_benchmarker_current_sweep(store):
    p, rows = rows_of(store, "inference_benchmarker.json", ctx=ImportContext())
    assert p.format == "inference-benchmarker"
    assert [r["row"] for r in rows] == [2, 3, 4, 5]  # results[0] is the warmup: left out
    assert {r["phase"] for r in rows} == {"mixed"}
    # --extra-meta device=H100,tp=1 (config.meta): the accelerator and the count
    assert {r["gpu"] for r in rows} == {"h100-sxm"} and {r["num_gpus"] for r in rows} == {1}
    assert {r["model"] for r in rows} == {"llama-3.1-8b"}  # config.model_name meta-llama/Llama-3.1-8B-Instruct
    thr = rows[0]
    assert thr["batch"] == 64  # "throughput": ConstantVUs, config.max_vus 64
    assert thr["tokens_per_s"] == pytest.approx(4970.4578040078695)
    assert thr["input_tokens"] == 1024  # total_tokens_sent 2384735 / successful_requests 2329 = 1023.9
    assert thr["output_tokens"] == 256  # total_tokens 596276 / 2329 = 256.03
    assert thr["requests"] == 2329
    assert thr["ttft_s"] == pytest.approx(0.20915) and thr["tpot_s"] == pytest.approx(0.012107)
    assert (thr["ttft_p50_s"], thr["ttft_p90_s"], thr["ttft_p99_s"]) == pytest.approx((0.210099, 0.275135, 0.28966))
    assert (thr["tpot_p50_s"], thr["tpot_p90_s"], thr["tpot_p99_s"]) == pytest.approx((0.01209, 0.012837, 0.012992))
    # "constant@7.77req/s": request_rate 7.758 x e2e avg 2177.9 ms = 16.9 requests in flight -> 17
    rate = json.loads(read("inference_benchmarker.json"))["results"][2]
    assert rate["id"] == "constant@7.77req/s"
    assert rows[1]["batch"] == round(rate["request_rate"] * rate["e2e_latency_ms"]["avg"] / 1000) == 17
    assert [r["batch"] for r in rows[2:]] == [42, 63]  # 15.53 req/s: 41.96; 23.30 req/s (capped at 64 VUs): 62.88
    assert rows[1]["tokens_per_s"] == pytest.approx(1984.758615511675)


def test_inference_benchmarker_flat_fields_before_oct_2024(store):
    p, rows = rows_of(store, "inference_benchmarker_v0.json")
    assert p.format == "inference-benchmarker"
    assert len(rows) == 2 and rows[0]["model"] == "llama-3.1-8b"  # no model_name then: config.tokenizer
    low = rows[0]
    # constant@2.00req/s: request_rate 1.808 x e2e_latency_ms_avg 6018 ms = 10.88 -> 11
    assert low["batch"] == 11
    assert low["tokens_per_s"] == pytest.approx(1446.8644323166036)
    assert low["ttft_s"] == pytest.approx(0.039638) and low["tpot_s"] == pytest.approx(0.00748)
    assert low["ttft_p90_s"] == pytest.approx(0.05141) and low["tpot_p90_s"] == pytest.approx(0.007938)
    assert low["ttft_p50_s"] is None and low["ttft_p99_s"] is None  # the flat files print avg, p90 and p95 only
    assert (low["input_tokens"], low["output_tokens"]) == (200, 800)  # 21629 / 108 = 200.3; 86427 / 108 = 800.25
    assert rows[1]["batch"] == 54  # 8 req/s: 6.947 x 7826 ms = 54.37


def test_inference_benchmarker_without_meta_asks_for_the_accelerator(store):
    message = refused(store, "inference_benchmarker_v0.json", read("inference_benchmarker_v0.json"), ImportContext())
    assert "accelerator" in message


def _broken(change) -> bytes:
    doc = json.loads(read("inference_benchmarker.json"))
    change(doc)
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["results"][1].pop("token_throughput_secs"), "token_throughput_secs is missing"),
        (lambda d: d["results"][1]["config"].pop("max_vus"), "config.max_vus is missing"),
        (lambda d: d["results"][1].pop("time_to_first_token_ms"), "time_to_first_token_ms"),
        (lambda d: d["results"][1].update(token_throughput_secs="fast"), "not a number: 'fast'"),
        (lambda d: d["results"][1].update(token_throughput_secs=float("nan")), "not a finite number"),
        (lambda d: d["results"][1].update(token_throughput_secs=10**400), "not a finite number"),
        (lambda d: d["results"][2].update(request_rate=float("inf")), "not a finite number"),
        (lambda d: d["results"][2].update(request_rate=True), "not a number: 'true'"),
        (lambda d: d["results"][1].update(executor_type="Poisson"), "executor_type 'Poisson'"),
        (lambda d: d["results"].__setitem__(1, [1, 2]), "not a benchmark step"),
        (lambda d: d.update(results={"a": 1}), "not a list"),
        (lambda d: d.update(results=[d["results"][0]]), "no benchmark step but the warmup"),
        (lambda d: d["config"].pop("tokenizer"), "config.tokenizer is missing"),
    ],
)
def test_inference_benchmarker_broken_variants_are_refused(store, change, words):
    message = refused(store, "inference_benchmarker.json", _broken(change))
    assert words in message, message


def test_inference_benchmarker_detection_and_the_empty_file(store):
    assert detect_json(json.loads(read("inference_benchmarker.json"))).name == "inference-benchmarker"
    assert detect_json(json.loads(read("inference_benchmarker_v0.json"))).name == "inference-benchmarker"
    assert detect_json(json.loads(read("optimum_benchmark.json"))).name == "optimum-benchmark"
    assert "empty" in refused(store, "inference_benchmarker.json", b"")
    assert "empty" in refused(store, "tgi_benchmark.txt", b"  \n")


def test_tgi_runs_pasted_one_after_another_are_read_in_order(store):
    """Two runs in one file: each throughput table is read with the parameters and latency tables before it."""
    both = read("tgi_benchmark.txt") + b"\n# second run\n" + read("tgi_benchmark_v1.txt")
    p, rows = rows_of(store, "tgi_both.txt", both)
    assert len(rows) == 12 + 2
    assert [r["model"] for r in rows[-2:]] == ["llama-2-7b", "llama-2-7b"] and rows[0]["model"] == "llama-3.1-8b"
    assert rows[-1]["input_tokens"] == 256 and rows[0]["input_tokens"] == 512
    assert rows[-2]["tokens_per_s"] == pytest.approx(134.38 * 256)  # only the second run's prefill was rescaled
    assert rows[0]["tokens_per_s"] == pytest.approx(20856.91)
