"""How imported values are resolved, whatever the format: accelerator strings with a count, a model id's weight suffix, the
context filling what a file lacks (optimum-benchmark's report alone, the LLM-Perf CSV), a hand-mapped CSV's phase, and the
one message for a file no format reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.evidence import matching
from core.evidence.importers import ImportContext, ImportFileError, columns_to_map, parse_file
from core.store import Store
from tests.helpers import FIXTURES, roofline

GENERIC = "gpu,model,batch,input_tokens,output_tokens,tokens_per_s\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("resolve") / "resolve.duckdb")


def parse(store, data: bytes | str, name: str = "run.csv", **ctx):
    raw = data.encode() if isinstance(data, str) else data
    return parse_file(store, raw, name, context=ImportContext(**ctx))


def refused(store, data: bytes | str, name: str = "run.csv", **ctx) -> ImportFileError:
    with pytest.raises(ImportFileError) as info:
        parse(store, data, name, **ctx)
    assert "\n" not in str(info.value), "one line"
    return info.value


def rows(parsed) -> list[dict]:
    return parsed.rows.to_dicts()


# -- 1. accelerator strings as tools write them ---------------------------------------------------


@pytest.mark.parametrize(
    ("written", "gpu", "count", "name"),
    [
        ("8xH200", "h200-sxm", 8, "NVIDIA H200 SXM 141GB"),
        ("H100x4", "h100-sxm", 4, "NVIDIA H100 SXM5 80GB"),
        ("2 x MI300X", "mi300x", 2, "AMD Instinct MI300X"),
        ("4x NVIDIA H100 80GB HBM3", "h100-sxm", 4, "NVIDIA H100 SXM5 80GB"),
        ("H200 x 8", "h200-sxm", 8, "NVIDIA H200 SXM 141GB"),
        ("8×B200", "b200", 8, "NVIDIA B200 (HGX/DGX SXM)"),
    ],
)
def test_an_accelerator_string_with_a_count_gives_the_accelerator_and_num_gpus(store, written, gpu, count, name):
    p = parse(store, GENERIC + f'"{written}",llama-3.1-8b,8,512,128,1000\n')
    assert [(r["gpu"], r["num_gpus"], r["source_gpu"]) for r in rows(p)] == [(gpu, count, written)]
    assert f"accelerator {written!r} read as {count} × {name}" in p.notes
    assert matching.resolve_accelerator(written, p_cat(store)) == (gpu, count)


def p_cat(store):
    from core.catalogue.catalogue import load_catalogue

    return load_catalogue(store)


@pytest.mark.parametrize(
    ("written", "gpu"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # nvidia-smi's SXM H100: no count in "80GB" or "HBM3"
        ("AMD Instinct MI300X", "mi300x"),
        ("MI300X", "mi300x"),  # the X ends the chip's name: not a count
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("h100-sxm", "h100-sxm"),
    ],
)
def test_a_plain_vendor_name_keeps_matching_with_no_count(store, written, gpu):
    assert matching.resolve_accelerator(written, p_cat(store)) == (gpu, None)
    assert matching.match_accelerator(written, p_cat(store)) == gpu
    p = parse(store, GENERIC + f'"{written}",llama-3.1-8b,8,512,128,1000\n')
    assert [(r["gpu"], r["num_gpus"]) for r in rows(p)] == [(gpu, 1)]
    assert not any("×" in n for n in p.notes)


def test_a_count_that_contradicts_num_gpus_is_refused_naming_both(store):
    err = refused(store, "gpu,num_gpus,model,batch,input_tokens,output_tokens,tokens_per_s\n8xH200,4,llama-3.1-8b,8,512,128,1000\n")
    assert "'8xH200' says 8 accelerators but num_gpus is 4" in str(err) and "row 1" in str(err)
    # the context's count is as explicit as the file's
    err = refused(store, GENERIC + "H100x4,llama-3.1-8b,8,512,128,1000\n", num_gpus=2)
    assert "'H100x4' says 4 accelerators but num_gpus is 2" in str(err)
    # an agreeing count is fine
    p = parse(store, GENERIC + "H100x4,llama-3.1-8b,8,512,128,1000\n", num_gpus=4)
    assert rows(p)[0]["num_gpus"] == 4


def test_the_count_works_for_every_format_and_from_the_context(store):
    """vllm bench serve's JSON holds no accelerator: the context's "8xH200" fills gpu and num_gpus."""
    data = (FIXTURES / "vllm_serve.json").read_bytes()
    p = parse(store, data, "vllm_serve.json", gpu="8xH200", model="llama-3.1-8b")
    assert p.format == "vllm-serve"
    assert [(r["gpu"], r["num_gpus"]) for r in rows(p)] == [("h200-sxm", 8)]
    assert "accelerator '8xH200' read as 8 × NVIDIA H200 SXM 141GB" in p.notes


# -- 2. a model id's suffix implies the weight format ---------------------------------------------


@pytest.mark.parametrize(
    ("model", "weights", "base"),
    [
        ("Llama-3.3-70B-Instruct-FP8", "fp8", "llama-3.3-70b"),
        ("meta-llama/Llama-3.3-70B-Instruct-FP8", "fp8", "llama-3.3-70b"),
        ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "fp8", "llama-3.3-70b"),
        ("Qwen/Qwen2.5-7B-Instruct-AWQ", "int4", "qwen2.5-7b"),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "int4", "qwen2.5-7b"),
        ("nvidia/Llama-3.3-70B-Instruct-NVFP4", "nvfp4", "llama-3.3-70b"),
        ("RedHatAI/Llama-3.1-8B-Instruct-W4A16", "int4", "llama-3.1-8b"),
        ("llama-3.1-8b-instruct-int4", "int4", "llama-3.1-8b"),
        ("openai/gpt-oss-120b-MXFP4", "mxfp4", "gpt-oss-120b"),
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", "int4", "llama-3.1-8b"),
    ],
)
def test_a_quantised_model_id_gives_the_weight_format(store, model, weights, base):
    p = parse(store, GENERIC + f"h100-sxm,{model},8,512,128,1000\n")
    r = rows(p)[0]
    assert (r["model"], r["weights"], r["source_model"]) == (base, weights, model)
    assert any(n.startswith(f"weights: {weights}, from the model name {model!r}") for n in p.notes)


def test_the_context_or_the_files_weight_field_wins_over_the_name(store):
    fp8 = "meta-llama/Llama-3.3-70B-Instruct-FP8"
    assert rows(parse(store, GENERIC + f"h100-sxm,{fp8},8,512,128,1000\n", weights="int4"))[0]["weights"] == "int4"
    p = parse(store, "gpu,model,weights,batch,input_tokens,output_tokens,tokens_per_s\n" + f"h100-sxm,{fp8},bf16,8,512,128,1000\n")
    assert rows(p)[0]["weights"] == "bf16" and not any(n.startswith("weights:") for n in p.notes)
    # no suffix: bf16 as before, nothing said
    p = parse(store, GENERIC + "h100-sxm,meta-llama/Llama-3.1-8B-Instruct,8,512,128,1000\n")
    assert rows(p)[0]["weights"] == "bf16" and not any(n.startswith("weights:") for n in p.notes)
    assert matching.weights_in_model_name("mixtral-8x7b") is None and matching.weights_in_model_name("Qwen2.5-7B-Instruct-GPTQ-Int8") == (
        "int8",
        "GPTQ-Int8",
    )


def test_the_suffix_works_for_a_json_format(store):
    """vllm bench serve writes model_id: an FP8 checkpoint there is stored as fp8 (it was bf16)."""
    record = json.loads((FIXTURES / "vllm_serve.json").read_text())
    record["model_id"] = "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
    p = parse(store, json.dumps(record), "fp8_serve.json", gpu="h100-sxm", num_gpus=2)
    assert p.format == "vllm-serve"
    assert [(r["model"], r["weights"]) for r in rows(p)] == [("llama-3.3-70b", "fp8")]


# -- 3. the context fills what the file lacks: optimum-benchmark ------------------------------------

REPORT = "optimum_benchmark_report.json"
SCENARIO = {"gpu": "h100-sxm", "model": "llama-3.1-8b", "batch": 4, "output_tokens": 100}


def test_optimum_report_alone_is_read_with_the_contexts_input_tokens(store):
    data = (FIXTURES / REPORT).read_bytes()
    err = refused(store, data, REPORT, **SCENARIO)
    assert "holds no sequence_length" in str(err) and "give it as context: input tokens per request" in str(err)
    p = parse(store, data, REPORT, **SCENARIO, input_tokens=256)
    assert p.format == "optimum-benchmark"
    prefill, decode = rows(p)
    assert (prefill["phase"], decode["phase"]) == ("prefill", "decode")
    # prefill: 128.75536480686694 samples/s (4 prompts / 0.0310667 s, the mean of 0.0312, 0.0309, 0.0311) x 256 tokens
    assert prefill["tokens_per_s"] == pytest.approx(128.75536480686694 * 256) == pytest.approx(32961.37339)
    assert prefill["ttft_s"] == pytest.approx((0.0312 + 0.0309 + 0.0311) / 3)
    # decode: 4 x (100 - 1) tokens / (0.7422 - 0.0310667 s) = 556.8576 tokens/s, as the report says
    assert decode["tokens_per_s"] == pytest.approx(4 * 99 / ((0.7421 + 0.7415 + 0.7430) / 3 - (0.0312 + 0.0309 + 0.0311) / 3))
    assert {(r["batch"], r["input_tokens"], r["output_tokens"]) for r in (prefill, decode)} == {(4, 256, 100)}


def test_optimum_leaderboard_csv_in_samples_per_s_uses_its_sequence_length_column(store):
    """The CSV's cells are text: "256" is a sequence length (it was read as none). Newer optimum-benchmark writes the prefill
    throughput in samples/s; the same rows in that unit: 46.5 and 49.3 prompts/s."""
    text = (FIXTURES / "optimum_leaderboard.csv").read_text()
    assert text.count("tokens/s,11907.0") == 1 and text.count("tokens/s,12610.4") == 1
    samples = text.replace("tokens/s,11907.0", "samples/s,46.5").replace("tokens/s,12610.4", "samples/s,49.3")
    p = parse(store, samples, "perf-df-samples.csv")
    assert p.format == "optimum-benchmark-csv"
    prefill = [r for r in rows(p) if r["phase"] == "prefill"]
    # 46.5 x 256 = 11904.0; 49.3 x 256 = 12620.8 (config.scenario.input_shapes.sequence_length = 256)
    assert [r["tokens_per_s"] for r in prefill] == pytest.approx([11904.0, 12620.8])
    assert [r["input_tokens"] for r in prefill] == [256, 256]


def test_optimum_samples_per_s_with_the_contexts_input_tokens(store):
    """A context's input tokens replace the config's for every row, and so turn samples/s into tokens/s: 72.5 x 1024."""
    p = parse(store, (FIXTURES / "optimum_benchmark_samples.json").read_bytes(), "samples.json", input_tokens=1024)
    prefill = next(r for r in rows(p) if r["phase"] == "prefill")
    assert (prefill["input_tokens"], prefill["tokens_per_s"]) == (1024, pytest.approx(72.5 * 1024))


# -- 4. a hand-mapped CSV's phase ------------------------------------------------------------------

SERVING = "accelerator,model,users,prompt,gen,out_tok_s,TTFT (ms),e2e_ms\nh100-sxm,llama-3.1-8b,32,1024,128,1060.5,412.7,4200\n"
SERVING_MAP = {"gpu": "accelerator", "batch": "users", "input_tokens": "prompt", "output_tokens": "gen", "tokens_per_s": "out_tok_s"}


def test_a_hand_mapped_serving_csv_is_read_as_mixed_and_says_so(store):
    missing = columns_to_map(SERVING.encode())
    assert missing is not None and missing.phase == "mixed" and missing.phase_reason == "a serving run: it has TTFT (ms)"
    p = parse_file(store, SERVING.encode(), "serving.csv", mapping=SERVING_MAP)
    assert [r["phase"] for r in rows(p)] == ["mixed"]
    assert any(n.startswith("phase: no column; read as mixed (a serving run: it has TTFT (ms))") for n in p.notes)
    # the context (the page's choice, --phase) says otherwise
    p = parse_file(store, SERVING.encode(), "serving.csv", mapping=SERVING_MAP, context=ImportContext(phase="decode"))
    assert [r["phase"] for r in rows(p)] == ["decode"] and not any(n.startswith("phase:") for n in p.notes)


def test_a_concurrency_column_is_a_serving_run_and_a_prompt_rate_is_prefill(store):
    conc = "gpu,model,concurrency,input_tokens,output_tokens,tokens_per_s\nh100-sxm,llama-3.1-8b,32,1024,128,1060.5\n"
    p = parse(store, conc)
    assert [r["phase"] for r in rows(p)] == ["mixed"] and any("it has concurrency" in n for n in p.notes)
    prompt = "gpu,model,batch,input_tokens,output_tokens,prompt_tokens_per_s\nh100-sxm,llama-3.1-8b,1,2048,1,30000\n"
    assert columns_to_map(prompt.encode()).phase == "prefill"  # type: ignore[union-attr]
    p = parse_file(store, prompt.encode(), "prefill.csv", mapping={"tokens_per_s": "prompt_tokens_per_s"})
    assert [r["phase"] for r in rows(p)] == ["prefill"]
    assert any("read as prefill (its throughput column 'prompt_tokens_per_s' counts prompt tokens)" in n for n in p.notes)
    p = parse(store, GENERIC + "h100-sxm,llama-3.1-8b,8,512,128,1000\n")
    assert [r["phase"] for r in rows(p)] == ["decode"] and any(n.startswith("phase: no column; read as decode") for n in p.notes)
    # a phase column is read as before, nothing said
    p = parse_file(store, (FIXTURES / "generic.csv").read_bytes(), "generic.csv")
    assert set(p.rows["phase"]) <= {"decode", "prefill", "mixed"} and not any(n.startswith("phase:") for n in p.notes)


def test_the_cli_takes_the_phase(tmp_path, capsys):
    path = tmp_path / "serving.csv"
    path.write_text("gpu,model,concurrency,input_tokens,output_tokens,tokens_per_s\nh100-sxm,llama-3.1-8b,32,1024,128,1060.5\n")
    db = str(tmp_path / "cli.duckdb")
    ran = roofline(capsys, "import", str(path), "--phase", "decode", "--db", db, "--json")
    assert ran.returncode == 0, ran.stderr
    assert not any(n.startswith("phase:") for n in ran.json()["notes"])
    bad = roofline(capsys, "import", str(path), "--phase", "serving", "--db", db, "--json")
    assert bad.returncode == 2 and "--phase" in bad.stderr and "mixed" in bad.stderr
    with pytest.raises(ValueError):
        ImportContext(phase="serving")  # type: ignore[arg-type]


# -- 5. one message for an unknown file -----------------------------------------------------------


def test_an_unknown_json_names_its_fields_and_the_closest_formats(store):
    data = json.dumps({"mean_e2e_latency_ms": 5200.1, "median_ttft_ms": 88.0, "input_throughput": 9001.2, "backend": "x"})
    msg = str(refused(store, data, "mine.json", gpu="h100-sxm", model="llama-3.1-8b"))
    assert msg.startswith("mine.json: not a known benchmark format: a JSON object with fields backend, input_throughput, ")
    assert "closest known: sglang-serving (looks for input_throughput, mean_e2e_latency_ms, output_throughput" in msg
    assert "this file has input_throughput, mean_e2e_latency_ms)" in msg
    assert "known: inferencex, aiperf-records" not in msg  # not the list of every format


def test_json_lines_and_a_claimed_file_get_the_same_message(store):
    lines = "\n".join(json.dumps({"speed_tok_s": i, "tool": "mine"}) for i in (1, 2)) + "\n"
    msg = str(refused(store, lines, "mine.jsonl"))
    assert "not a known benchmark format: JSON lines, the first with fields speed_tok_s, tool" in msg
    # trtllm-bench's detector takes any object with performance and engine; a file without its fields is not one
    other = json.dumps({"performance": {"tokens_per_s": 10.0}, "engine": "tgi", "model": "x"})
    msg = str(refused(store, other, "other.json", gpu="h100-sxm"))
    assert msg.startswith("other.json: record 1: not a known benchmark format: a JSON object with fields engine, model, performance")
    assert "it looked like trtllm-bench, but field performance.system_output_throughput_tok_s is missing" in msg
    assert "closest known: trtllm-bench" in msg


def test_a_text_file_is_not_offered_a_column_mapping(store):
    text = "Starting my benchmark tool v1\nthroughput 1000 tok/s\n"
    err = refused(store, text, "run.txt", gpu="h100-sxm", model="llama-3.1-8b")
    assert err.missing is None
    assert "not a known benchmark format: a text file whose first line is 'Starting my benchmark tool v1'" in str(err)
    assert columns_to_map(text.encode()) is None
    # a log line with commas is no table either (its first row is not as wide as its header)
    log = "INFO 12-03 10:00:01 server.py:12] started, model=x, tp=1\nINFO 12-03 10:00:02 step done\n"
    assert columns_to_map(log.encode()) is None and "a text file whose first line" in str(refused(store, log, "server.txt"))


def test_a_csv_names_its_columns_and_the_closest_csv_format(store):
    near = "avg_ts,n_prompt,model_type\n100.5,512,llama 8B\n"  # llama-bench's CSV without n_gen
    err = refused(store, near, "bench.csv", gpu="h100-sxm", model="llama-3.1-8b")
    assert err.missing is not None  # a table: the mapping step is offered
    assert "(it is a CSV with columns avg_ts, n_prompt, model_type; closest known: llama-bench" in str(err)
    # a CSV no format resembles keeps the mapping message alone
    err = refused(store, SERVING, "serving.csv")
    assert err.missing is not None and "closest known" not in str(err)


def test_the_report_fixture_is_the_writers_layout():
    """benchmark_report.json = asdict(BenchmarkReport) with json.dump(indent=4): the inference targets, each a
    TargetMeasurements (memory, latency, throughput, energy, efficiency)."""
    report = json.loads(Path(FIXTURES / REPORT).read_text())
    assert list(report) == ["load_model", "first_generate", "generate", "prefill", "decode"]
    assert all(list(t) == ["memory", "latency", "throughput", "energy", "efficiency"] for t in report.values())
    assert report["prefill"]["throughput"]["unit"] == "samples/s" and report["decode"]["throughput"]["unit"] == "tokens/s"


def test_the_pages_mapping_step_offers_the_inferred_phase(tmp_path, monkeypatch):
    """The measured page's mapping step: a phase choice, the inferred one first (mixed: the file has a TTFT column); the choice
    made there is the import's phase."""
    from streamlit.testing.v1 import AppTest

    from core.evidence.importers import dataset_rows, list_datasets
    from core.store import get_store
    from pages.shared import data
    from tests.helpers import APP

    db = tmp_path / "page.duckdb"
    monkeypatch.setenv("ROOFLINE_DB", str(db))
    data.store.clear()
    try:
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.query_params["ms_view"] = "Your datasets"  # the import form's view
        at.run()
        at.switch_page("pages/measured/page.py")
        at.run()
        at.file_uploader(key="ms_upload").set_value(("serving.csv", SERVING.encode(), "text/csv"))
        at.run()
        phase = at.selectbox(key="ms_map_phase")
        assert phase.value == "mixed" and phase.options[0] == "a serving run (prefill included)"
        assert "a serving run: it has TTFT (ms)" in phase.help
        for column, header in SERVING_MAP.items():
            if column != "gpu":
                at.selectbox(key=f"ms_map_{column}").set_value(header)
        at.selectbox(key="ms_gpu").set_value("h100-sxm")
        at.selectbox(key="ms_map_phase").set_value("decode")
        at.run()
        at.button(key="ms_import").click().run()
        assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
        store = get_store(db)
        last = int(list_datasets(store)["id"].max())  # type: ignore[arg-type]
        assert dataset_rows(store, last)["phase"].to_list() == ["decode"]
    finally:
        get_store(db).close()
        data.store.clear()


def test_the_mapping_step_proposes_headers_by_what_their_names_say():
    """A serving CSV's prompt_len / gen_len / output_tok_per_s are proposed for input, output and tokens/s (one header
    per column, a rate never as a length); a file with no length column gets no length proposed."""
    from core.evidence.importers import columns_to_map

    data = b"gpu,model,concurrency,prompt_len,gen_len,output_tok_per_s,ttft_ms\nh100-sxm,llama-3.1-8b,8,1024,256,1180.5,61.2\n"
    asked = columns_to_map(data)
    assert asked is not None
    assert asked.suggested == {"input_tokens": "prompt_len", "output_tokens": "gen_len", "tokens_per_s": "output_tok_per_s"}
    asked = columns_to_map(b"model,tokens_per_second,ttft_ms,concurrency\nllama-3.1-8b,1000,50,8\n")
    assert asked is not None
    assert asked.suggested == {"input_tokens": "", "output_tokens": "", "tokens_per_s": "tokens_per_second"}
