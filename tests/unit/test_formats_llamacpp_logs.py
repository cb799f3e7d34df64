"""llama-batched-bench (text, jsonl), llama-server timing lines and ollama --verbose, through parse_file.

Expected values are computed by hand from the fixtures' numbers (comments say how).
"""

from __future__ import annotations

import pytest

from core.evidence.formats.llamacpp_logs import gguf_weights, go_duration
from core.evidence.importers import ImportContext, ImportFileError, parse_file
from core.store import Store
from tests.helpers import FIXTURES

H100 = {"gpu": "h100-sxm"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("llamacpp") / "llamacpp.duckdb")


def parse(store: Store, name: str, data: bytes | None = None, **context):
    body = (FIXTURES / name).read_bytes() if data is None else data
    return parse_file(store, body, name, context=ImportContext(**context))


def refused(store: Store, name: str, data: bytes, **context) -> str:
    with pytest.raises(ImportFileError) as exc:
        parse(store, name, data, **context)
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_batched_bench_table_current(store):
    p = parse(store, "llama_batched_bench.txt")
    assert p.format == "llama-batched-bench"
    rows = p.rows.to_dicts()
    assert len(rows) == 6  # 3 table rows x (prefill, decode)
    first, second = rows[0], rows[1]
    # the log names the device, the model file and its type (Q4_K - Medium -> q4_k_m), size 4.58 GiB
    assert first["gpu"] == "h100-sxm" and first["model"] == "llama-3.1-8b" and first["weights"] == "q4_k_m"
    assert first["model_bytes"] == pytest.approx(4.58 * 1024**3)
    # line 12: | 512 | 128 | 1 | 640 | 0.046 | 11130.43 | 0.865 | 147.98 | ...
    assert (first["row"], first["phase"], first["batch"], first["input_tokens"]) == (12, "prefill", 1, 512)
    assert first["tokens_per_s"] == pytest.approx(11130.43) and first["ttft_s"] == pytest.approx(0.046)
    assert (second["phase"], second["batch"], second["output_tokens"]) == ("decode", 1, 128)
    assert second["tokens_per_s"] == pytest.approx(147.98) and second["tpot_s"] == pytest.approx(0.865 / 128)
    # line 14, B = 32: prefill 32 x 512 tokens at 11661.21 t/s; decode 1772.39 t/s, T_TG 2.311 s over 128 steps
    pre, dec = rows[4], rows[5]
    assert (pre["batch"], pre["tokens_per_s"]) == (32, pytest.approx(11661.21))
    assert (dec["batch"], dec["tokens_per_s"], dec["tpot_s"]) == (32, pytest.approx(1772.39), pytest.approx(2.311 / 128))


def test_batched_bench_table_old_shared_prompt(store):
    """Oct 2023 header (`mmq = 0`), is_pp_shared = 1: the prompt is prefilled once (batch 1)."""
    p = parse(store, "llama_batched_bench_old.txt", model="llama-2-7b", **H100)
    assert p.format == "llama-batched-bench"
    rows = p.rows.to_dicts()
    # 'mostly Q8_0' -> q8_0; 6.67 GiB
    assert rows[0]["weights"] == "q8_0" and rows[0]["model_bytes"] == pytest.approx(6.67 * 1024**3)
    # line 12: | 128 | 128 | 8 | 1152 | 0.110 | 1163.64 | 7.344 | 139.43 |: prefill batch 1 (shared), decode batch 8
    pre, dec = rows[2], rows[3]
    assert (pre["row"], pre["phase"], pre["batch"], pre["tokens_per_s"]) == (12, "prefill", 1, pytest.approx(1163.64))
    assert (dec["phase"], dec["batch"], dec["tokens_per_s"]) == ("decode", 8, pytest.approx(139.43))
    assert dec["tpot_s"] == pytest.approx(7.344 / 128)
    assert any("is_pp_shared = 1" in n for n in p.notes)


def test_batched_bench_jsonl(store):
    p = parse(store, "llama_batched_bench.jsonl", model="llama-3.1-8b", weights="q4_k_m", **H100)
    assert p.format == "llama-batched-bench-jsonl"
    rows = p.rows.to_dicts()
    assert len(rows) == 4
    # record 2: pl 8, speed_pp 11636.363636, speed_tg 860.504202, t_tg 1.19 s / 128 steps
    pre, dec = rows[2], rows[3]
    assert (pre["row"], pre["phase"], pre["batch"], pre["tokens_per_s"]) == (2, "prefill", 8, pytest.approx(11636.363636))
    assert (dec["phase"], dec["batch"], dec["tokens_per_s"]) == ("decode", 8, pytest.approx(860.504202))
    assert dec["tpot_s"] == pytest.approx(1.19 / 128)


def test_batched_bench_jsonl_asks_for_the_model(store):
    message = refused(store, "llama_batched_bench.jsonl", (FIXTURES / "llama_batched_bench.jsonl").read_bytes(), **H100)
    assert "give it as context: model" in message


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("llama_server.log", (10, 11, 14, 15)),  # one prefixed line each (2025)
        ("llama_server_2024.log", (11, 12, 15, 16)),  # 'slot print_timing: ... |' then the lines (late 2024)
    ],
)
def test_llama_server_log(store, name, lines):
    p = parse(store, name, **H100)
    assert p.format == "llama-server-log"
    rows = p.rows.to_dicts()
    assert [r["row"] for r in rows] == list(lines)
    assert {r["model"] for r in rows} == {"llama-3.1-8b"} and {r["weights"] for r in rows} == {"q4_k_m"}
    # request 1: prompt 45.12 ms / 512 tokens, 11347.52 t/s; eval 880.35 ms / 128 tokens, 6.88 ms per token, 145.40 t/s
    pre, dec = rows[0], rows[1]
    assert (pre["phase"], pre["batch"], pre["input_tokens"], pre["tokens_per_s"]) == ("prefill", 1, 512, pytest.approx(11347.52))
    assert pre["ttft_s"] == pytest.approx(0.04512)
    assert (dec["phase"], dec["input_tokens"], dec["output_tokens"], dec["tokens_per_s"]) == ("decode", 512, 128, pytest.approx(145.40))
    assert dec["tpot_s"] == pytest.approx(0.00688)
    # request 2: 1024 prompt tokens, 256 generated at 142.97 t/s
    assert (rows[3]["input_tokens"], rows[3]["output_tokens"], rows[3]["tokens_per_s"]) == (1024, 256, pytest.approx(142.97))


def test_llama_server_log_2023(store):
    """`print_timings: prompt eval time` / `eval time = ... runs` (LOG_TEE, 2023)."""
    p = parse(store, "llama_server_old.log", model="llama-2-7b", **H100)
    assert p.format == "llama-server-log"
    pre, dec = p.rows.to_dicts()
    # 61.35 ms / 256 tokens, 4172.78 t/s; 1401.90 ms / 128 runs, 10.95 ms per token, 91.30 t/s; 'mostly Q4_0' -> q4_0
    assert (pre["row"], pre["input_tokens"], pre["tokens_per_s"], pre["weights"]) == (9, 256, pytest.approx(4172.78), "q4_0")
    assert (dec["row"], dec["output_tokens"], dec["tokens_per_s"], dec["tpot_s"]) == (10, 128, pytest.approx(91.30), pytest.approx(0.01095))


def test_llama_server_log_skips_library_totals_and_needs_timings(store):
    body = (FIXTURES / "llama_server.log").read_text().split("slot print_timing")[0]
    body += (
        "llama_perf_context_print: prompt eval time =      45.12 ms /   512 tokens (    0.09 ms per token, 11347.52 tokens per second)\n"
    )
    message = refused(store, "x.log", body.encode(), **H100)
    assert "no llama-server timing lines" in message


def test_llama_server_log_bad_number(store):
    body = (FIXTURES / "llama_server.log").read_text().replace("145.40 tokens per second", "nan tokens per second")
    message = refused(store, "x.log", body.encode(), **H100)
    assert "line 11" in message and "nan" in message


@pytest.mark.parametrize("name", ["ollama_verbose.txt", "ollama_verbose_peak_memory.txt"])
def test_ollama_verbose(store, name):
    p = parse(store, name, model="llama-3.1-8b", weights="q4_k_m", **H100)
    assert p.format == "ollama-verbose"
    rows = p.rows.to_dicts()
    pre, dec = rows[0], rows[1]
    # 15 prompt tokens in 12.345678 ms -> 1215.00 t/s; 256 tokens in 1.698765432 s -> 150.70 t/s, tpot 1.698765432 / 256
    assert (pre["phase"], pre["batch"], pre["input_tokens"], pre["tokens_per_s"]) == ("prefill", 1, 15, pytest.approx(1215.0))
    assert pre["ttft_s"] == pytest.approx(0.012345678)
    assert (dec["phase"], dec["input_tokens"], dec["output_tokens"], dec["tokens_per_s"]) == ("decode", 15, 256, pytest.approx(150.70))
    assert dec["tpot_s"] == pytest.approx(1.698765432 / 256)


def test_ollama_second_reply(store):
    rows = parse(store, "ollama_verbose.txt", model="llama-3.1-8b", **H100).rows.to_dicts()
    assert len(rows) == 4
    # 96 tokens in 641.234567 ms -> 149.71 t/s
    assert (rows[3]["row"], rows[3]["output_tokens"], rows[3]["tokens_per_s"]) == (23, 96, pytest.approx(149.71))
    assert rows[3]["tpot_s"] == pytest.approx(0.641234567 / 96)


def test_ollama_asks_for_the_model_and_accelerator(store):
    message = refused(store, "ollama_verbose.txt", (FIXTURES / "ollama_verbose.txt").read_bytes())
    assert "give it as context" in message


def test_ollama_bad_rate(store):
    body = (FIXTURES / "ollama_verbose.txt").read_text().replace("150.70 tokens/s", "+Inf tokens/s")
    message = refused(store, "x.txt", body.encode(), model="llama-3.1-8b", **H100)
    assert "line 11" in message and "Inf" in message


def test_batched_bench_broken_rows(store):
    good = (FIXTURES / "llama_batched_bench.txt").read_text()
    short = good.replace("|   512 |    128 |    8 |   5120 |    0.352 | 11636.36 |", "|   512 |    128 |    8 |   5120 |    0.352 |")
    assert "cells" in refused(store, "x.txt", short.encode())
    bad = good.replace("11636.36", "inf")
    assert "line 13" in refused(store, "x.txt", bad.encode())
    assert "empty" in refused(store, "x.txt", b"  \n")


def test_batched_bench_jsonl_missing_key_and_wrong_type(store):
    lines = (FIXTURES / "llama_batched_bench.jsonl").read_text().splitlines()
    missing = "\n".join([lines[0], lines[1].replace('"speed_tg": 860.504202, ', "")])
    assert "speed_tg" in refused(store, "x.jsonl", missing.encode(), model="llama-3.1-8b", **H100)
    wrong = "\n".join([lines[0], lines[1].replace('"speed_tg": 860.504202', '"speed_tg": "fast"')])
    assert "fast" in refused(store, "x.jsonl", wrong.encode(), model="llama-3.1-8b", **H100)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("vllm_engine_v0.log", "vllm-log"),
        ("vllm_engine_v1.log", "vllm-log"),
        ("mlperf_log_summary_server.txt", "mlperf-summary"),
        ("llama_bench_md.md", "llama-bench-md"),
        ("llama_bench_sql.sql", "llama-bench-sql"),
        ("llama_bench.jsonl", "llama-bench"),
    ],
)
def test_other_formats_are_not_claimed(name, fmt):
    from core.evidence.formats.llamacpp_logs import FORMATS
    from core.evidence.formats.registry import detect_json, detect_text

    body = (FIXTURES / name).read_text()
    if body.lstrip().startswith("{"):
        import json

        assert detect_json(json.loads(body.splitlines()[0])).name == fmt
    else:
        mine = {f.name for f in FORMATS}
        hit = detect_text(body)
        assert hit is not None and hit.name == fmt and hit.name not in mine


def test_helpers():
    assert gguf_weights("Q4_K - Medium") == "q4_k_m" and gguf_weights("Meta-Llama-3.1-8B-Instruct-Q8_0.gguf") == "q8_0"
    assert go_duration("1m2.5s") == pytest.approx(62.5) and go_duration("212.508µs") == pytest.approx(212.508e-6)
    assert go_duration("soon") is None


# -- llama-server JSON log (2024 default) ------------------------------------------------------------

JSONL = "llama_server_2024.jsonl"
Q4 = {"model": "llama-3.1-8b", "weights": "q4_k_m", **H100}


def _records() -> list[dict]:
    import json

    return [json.loads(line) for line in (FIXTURES / JSONL).read_text().splitlines()]


def _lines(records) -> bytes:
    import json

    return ("\n".join(json.dumps(r, separators=(",", ":")) for r in records) + "\n").encode()


def test_llama_server_json_log(store):
    p = parse(store, JSONL, **Q4)
    assert p.format == "llama-server-json-log"
    rows = p.rows.to_dicts()
    # lines 11/12 (task 0) and 19/20 (task 130): the print_timings prompt and generation records; start-up records skipped
    assert [r["row"] for r in rows] == [11, 12, 19, 20]
    assert [r["phase"] for r in rows] == ["prefill", "decode", "prefill", "decode"] and {r["batch"] for r in rows} == {1}
    pre, dec = rows[0], rows[1]
    # line 11: t_prompt_processing 45.123 ms, n_prompt_tokens_processed 512, n_tokens_second 1e3 / 45.123 * 512 = 11346.7633
    assert (pre["input_tokens"], pre["output_tokens"]) == (512, 0)
    assert pre["tokens_per_s"] == pytest.approx(1e3 / 45.123 * 512) and pre["ttft_s"] == pytest.approx(0.045123)
    # line 12: n_decoded 128 in 880.352 ms: t_token 880.352 / 128 = 6.87775 ms, n_tokens_second 1e3 / 880.352 * 128 = 145.3964
    assert (dec["input_tokens"], dec["output_tokens"]) == (512, 128)
    assert dec["tokens_per_s"] == pytest.approx(145.39638689978554) and dec["tpot_s"] == pytest.approx(6.87775e-3)
    # task 130: 1024 prompt tokens in 92.401 ms; 256 decoded in 1790.617 ms -> 1e3 / 1790.617 * 256 = 142.9675 t/s
    assert (rows[2]["input_tokens"], rows[2]["ttft_s"]) == (1024, pytest.approx(0.092401))
    assert (rows[3]["output_tokens"], rows[3]["tokens_per_s"]) == (256, pytest.approx(1e3 / 1790.617 * 256))
    assert (
        {r["model"] for r in rows} == {"llama-3.1-8b"}
        and {r["weights"] for r in rows} == {"q4_k_m"}
        and {r["kv"] for r in rows} == {"fp16"}
    )
    assert any(n.startswith("2 requests' timings") for n in p.notes)


def test_llama_server_json_log_feb_2024_names(store):
    """Feb-Mar 2024 (930b17802 to 2002bc96b): slot_id, task_id, num_prompt_tokens_processed."""
    renamed = []
    for r in _records():
        renamed.append(
            {
                {"id_slot": "slot_id", "id_task": "task_id", "n_prompt_tokens_processed": "num_prompt_tokens_processed"}.get(k, k): v
                for k, v in r.items()
            }
        )
    rows = parse(store, "x.jsonl", _lines(renamed), **Q4).rows.to_dicts()
    assert [(r["row"], r["input_tokens"], r["output_tokens"]) for r in rows] == [
        (11, 512, 0),
        (12, 512, 128),
        (19, 1024, 0),
        (20, 1024, 256),
    ]


def test_llama_server_json_log_asks_and_refuses(store):
    good = _records()
    # the JSON log names no model and no device: the context gives them
    assert "no accelerator in the file: give it as context: accelerator" in refused(store, JSONL, (FIXTURES / JSONL).read_bytes())
    assert "give it as context: model" in refused(store, JSONL, (FIXTURES / JSONL).read_bytes(), **H100)
    missing = [dict(r) for r in good]
    del missing[11]["n_tokens_second"]  # line 12, the generation record of task 0
    message = refused(store, "x.jsonl", _lines(missing), **Q4)
    assert "record 12" in message and "lacks n_tokens_second" in message
    wrong = [dict(r) for r in good]
    wrong[10]["n_prompt_tokens_processed"] = "many"
    message = refused(store, "x.jsonl", _lines(wrong), **Q4)
    assert "record 11" in message and "many" in message
    nan = (FIXTURES / JSONL).read_text().replace('"n_tokens_second":145.39638689978554', '"n_tokens_second":NaN')
    message = refused(store, "x.jsonl", nan.encode(), **Q4)
    assert "record 12" in message and "finite" in message
    # no request finished: start-up records only
    message = refused(store, "x.jsonl", _lines(good[:8]), **Q4)
    assert "no print_timings records" in message


def test_llama_server_json_log_detection():
    from core.evidence.formats.llamacpp_logs import is_llama_server_json_log
    from core.evidence.formats.registry import detect_json

    first = _records()[0]  # "build info": a start-up record, not a timing one
    assert first["msg"] == "build info" and detect_json(first).name == "llama-server-json-log"
    assert not is_llama_server_json_log({"function": "print_timings", "msg": "prompt eval time"})  # not server_log's fields
    assert not is_llama_server_json_log({**first, "level": 3})
