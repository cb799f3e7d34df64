"""Importers: each format read by field name into the values its file holds; names matched; datasets managed; rules shared."""

from __future__ import annotations

import json

import polars as pl
import pytest
from pydantic import ValidationError

from core.cli import main
from core.evidence.compare import compare
from core.evidence.importers import ImportContext, dataset_rows, delete_dataset, import_file, list_datasets, parse_file, rename_dataset
from core.evidence.matching import NoMatchError, match_accelerator, match_model
from core.evidence.measurements import Measurement
from core.evidence.predictor import with_predictor
from core.evidence.refit import refit
from core.store import Store
from tests.helpers import FIXTURES

CTX = ImportContext(gpu="h100-sxm", model="llama-3.1-8b")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("imp") / "imp.duckdb")


def parsed(store, name, ctx=CTX):
    return parse_file(store, (FIXTURES / name).read_bytes(), name, context=ctx)


# (fixture, format, row checked, expected values computed by hand from the file)
CASES = [
    (
        "vllm_serve.json",
        "vllm-serve",
        {"phase": "mixed", "batch": 32, "input_tokens": 1024, "output_tokens": 128, "tokens_per_s": 1060.5, "ttft_s": 0.4127},
    ),
    ("vllm_benchmark_serving.json", "vllm-benchmark-serving", {"batch": 8, "input_tokens": 512, "output_tokens": 128, "tpot_s": 0.0119}),
    ("sglang_serving.jsonl", "sglang-serving", {"batch": 16, "input_tokens": 1024, "output_tokens": 256, "tokens_per_s": 2333.9}),
    ("sglang_one_batch.jsonl", "sglang-one-batch", {"phase": "prefill", "batch": 1, "tokens_per_s": 34019.9, "ttft_s": 0.0301}),
    ("trtllm_report.json", "trtllm-bench", {"weights": "fp8", "kv": "fp8", "batch": 128, "tokens_per_s": 13452.1, "tpot_s": 0.0092}),
    (
        "genai_perf.json",
        "genai-perf-json",
        {"batch": 16, "input_tokens": 512, "output_tokens": 256, "tokens_per_s": 1003.5, "ttft_s": 0.1528},
    ),
    ("aiperf.json", "aiperf-json", {"batch": 32, "input_tokens": 1024, "output_tokens": 512, "tokens_per_s": 3998.4, "tpot_s": 0.0079}),
    ("llmperf_summary.json", "llmperf", {"batch": 10, "input_tokens": 548, "output_tokens": 153, "tokens_per_s": 761.4, "ttft_s": 0.078}),
    (
        "llama_bench.json",
        "llama-bench",
        {"phase": "prefill", "weights": "q8_0", "kv": "fp16", "batch": 1, "input_tokens": 512, "tokens_per_s": 8322.5},
    ),
    (
        "optimum_benchmark.json",
        "optimum-benchmark",
        {"phase": "prefill", "batch": 4, "input_tokens": 512, "tokens_per_s": 37236.4, "ttft_s": 0.055},
    ),
]


@pytest.mark.parametrize(("name", "fmt", "expected"), CASES)
def test_each_format_is_detected_and_read_by_field_name(store, name, fmt, expected):
    """The first measurement of each fixture holds the values its file says."""
    p = parsed(store, name)
    assert p.format == fmt
    row = p.rows.row(0, named=True)
    for key, value in expected.items():
        assert row[key] == (pytest.approx(value) if isinstance(value, float) else value), key


def test_csv_exports_need_context_and_read_the_avg_column(store):
    """genai-perf and AIPerf CSV: thousands separators stripped, ms converted, batch from the context."""
    for name, fmt in (("genai_perf.csv", "genai-perf-csv"), ("aiperf.csv", "aiperf-csv")):
        p = parsed(store, name, ImportContext(gpu="h100-sxm", model="llama-3.1-8b", batch=16))
        assert p.format == fmt
        row = p.rows.row(0, named=True)
        assert row["tokens_per_s"] == pytest.approx(1003.5 if fmt == "genai-perf-csv" else 3998.4)
        assert row["ttft_s"] == pytest.approx(0.1528 if fmt == "genai-perf-csv" else 0.0986)
        assert row["batch"] == 16


def test_vllm_throughput_takes_the_output_share_from_the_context(store):
    """tokens_per_second counts prompt and output tokens: x 128 / (1024 + 128) leaves output tokens/s."""
    ctx = ImportContext(gpu="h100-sxm", model="llama-3.1-8b", input_tokens=1024, output_tokens=128, batch=256)
    row = parsed(store, "vllm_throughput.json", ctx).rows.row(0, named=True)
    assert row["tokens_per_s"] == pytest.approx(12467.5 * 128 / 1152)
    assert row["batch"] == 256  # the batch given, never num_requests (1000): the file does not hold the batch


def test_llama_bench_csv_json_and_jsonl_read_alike(store):
    """The three llama-bench outputs give a prefill and a decode (tg) measurement with the driver's GPU name matched."""
    csv_rows = parse_file(store, (FIXTURES / "llama_bench.csv").read_bytes(), "llama_bench.csv").rows
    assert csv_rows["gpu"].to_list() == ["rtx-4090", "rtx-4090"]
    assert csv_rows["model"].to_list() == ["qwen2.5-7b", "qwen2.5-7b"]
    assert csv_rows["phase"].to_list() == ["prefill", "decode"]
    assert csv_rows["tpot_s"][1] == pytest.approx(0.78125 / 128)
    jsonl = parse_file(
        store, (FIXTURES / "llama_bench.jsonl").read_bytes(), "llama_bench.jsonl", context=ImportContext(gpu="m2-ultra")
    ).rows
    assert jsonl["model"].to_list() == ["llama-2-7b", "llama-2-7b"] and jsonl["weights"][0] == "q4_0"
    assert jsonl["model_bytes"][0] == 3825065984  # the file's model_size: the ceiling reads these bytes, not 4.5 bits x params


def test_sglang_one_batch_gives_prefill_and_decode_per_record(store):
    """Each JSON line is two measurements sharing its record number."""
    rows = parsed(store, "sglang_one_batch.jsonl").rows
    assert rows["row"].to_list() == [1, 1, 2, 2]
    assert rows.filter(pl.col("phase") == "decode")["tokens_per_s"].to_list() == [140.4, 3535.9]


@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("AMD Instinct MI300X", "mi300x"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
    ],
)
def test_accelerator_names_match_catalogue_ids(cat, name, gpu_id):
    """Driver strings map to the catalogue entry (HBM3 is the SXM H100)."""
    assert match_accelerator(name, cat) == gpu_id


@pytest.mark.parametrize(
    ("name", "model_id"),
    [
        ("Meta-Llama-3-8B-Instruct", "llama-3.1-8b"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"),
        ("models/Qwen2.5-7B-Instruct-Q4_K_M.gguf", "qwen2.5-7b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"),
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ],
)
def test_model_names_match_catalogue_ids(cat, name, model_id):
    """Hub names and file names map to the catalogue model with the same family, version and size."""
    assert match_model(name, cat) == model_id


def test_no_match_suggests_the_closest(cat):
    """An RTX 4080 is not in the catalogue: its neighbours are suggested."""
    with pytest.raises(NoMatchError) as info:
        match_accelerator("NVIDIA GeForce RTX 4080", cat)
    assert info.value.suggestions[0] == "rtx-4090"


def test_record_and_bulk_rules_agree(store):
    """Rows the bulk check accepts are valid Measurement records; a row it refuses the record refuses too."""
    rows = parsed(store, "sglang_one_batch.jsonl").rows
    for r in rows.drop("row", "source_gpu", "source_model").iter_rows(named=True):
        Measurement(**r)
    bad = rows.row(1, named=True) | {"tpot_s": 7.12}  # ms read as s: tokens/s ~ 1000x off batch / tpot
    with pytest.raises(ValidationError, match="wrong unit"):
        Measurement(**{k: v for k, v in bad.items() if k not in ("row", "source_gpu", "source_model")})
    with pytest.raises(ValidationError):
        Measurement(**(rows.drop("row", "source_gpu", "source_model").row(0, named=True) | {"batch": 0}))


def test_dataset_is_listed_renamed_and_deleted_in_one_transaction(tmp_path):
    """A dataset appears with its rows, takes a new name, and deleting it leaves no measurement behind."""
    s = Store(tmp_path / "d.duckdb")
    res = import_file(s, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name="first")
    assert list_datasets(s).select("name", "format", "row_count").row(0) == ("first", "generic-csv", 11)
    assert dataset_rows(s, res.dataset_id).height == 11
    rename_dataset(s, res.dataset_id, "H100 + A100")
    assert list_datasets(s)["name"].to_list() == ["H100 + A100"]
    assert json.loads(list_datasets(s)["context_json"][0]) == {}
    delete_dataset(s, res.dataset_id)
    assert list_datasets(s).is_empty() and dataset_rows(s, res.dataset_id).is_empty()


def test_a_failed_write_rolls_back(tmp_path, monkeypatch):
    """An error after the dataset row is inserted leaves neither the dataset nor any measurement."""
    import core.evidence.importers as imp

    s = Store(tmp_path / "r.duckdb")
    real = imp.read_sql
    monkeypatch.setattr(imp, "read_sql", lambda n: "SELECT * FROM no_such_table" if n == "insert_measurements" else real(n))
    with pytest.raises(Exception, match="no_such_table"):
        import_file(s, (FIXTURES / "generic.csv").read_bytes(), "generic.csv")
    assert list_datasets(s).is_empty()


def test_compare_and_refit_against_independent_numbers(store, cat):
    """The fixture was generated at 82% bandwidth and 0.4 ms per step: ratio ~ 0.8; the refit predicts its rows within 5%."""
    rows = parsed(store, "generic.csv", ImportContext()).rows
    cmp = compare(cat, rows)
    h100_b1 = cmp.filter((pl.col("gpu") == "h100-sxm") & (pl.col("row") == 1)).row(0, named=True)
    # memory-bound: ratio = step time at 100% / (step time at 82% + 0.4 ms)
    t_full = 1.0 / h100_b1["predicted_tokens_per_s"]
    assert h100_b1["ratio"] == pytest.approx(t_full / (t_full / 0.82 + 0.0004), rel=2e-3)
    assert cmp.filter(pl.col("row") == 11)["status"][0] == "above ceiling"
    fit = refit(with_predictor(cat), cmp, "vLLM")
    assert {c.gpu for c in fit.accepted} == {"h100-sxm", "a100-80gb-sxm"}
    assert all(c.points == 5 and c.mape_after < 0.05 < c.mape_before for c in fit.cells)


def test_cli_import_json_and_errors(tmp_path, capsys):
    """The CLI imports with context flags (JSON out) and refuses a second import with one line, exit 2."""
    db = str(tmp_path / "cli.duckdb")
    rc = main(["import", str(FIXTURES / "vllm_serve.json"), "--gpu", "NVIDIA H100 80GB HBM3", "--name", "vllm run", "--db", db, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["rows"] == 1 and out["format"] == "vllm-serve" and out["name"] == "vllm run"
    rc = main(["import", str(FIXTURES / "vllm_serve.json"), "--gpu", "h100-sxm", "--db", db, "--json"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: vllm_serve.json: already imported as dataset 1") and err.count("\n") == 1


def test_cli_column_mapping(tmp_path, capsys):
    """--map COLUMN=HEADER maps a generic CSV header."""
    f = tmp_path / "m.csv"
    f.write_text("gpu,model,batch,input_tokens,output_tokens,tps\nh100-sxm,llama-3.1-8b,8,512,64,1200\n")
    rc = main(["import", str(f), "--map", "tokens_per_s=tps", "--db", str(tmp_path / "m.duckdb"), "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["rows"] == 1


def test_user_text_is_made_inert_for_markdown():
    """A file or dataset name shown in a message cannot become a link, emphasis or HTML."""
    from core.present.text import escape_markdown

    shown = escape_markdown("[click](http://x) <b>*bold*</b> =cmd")
    assert "[" not in shown.replace("\\[", "") and "<" not in shown.replace("\\<", "") and "=" not in shown.replace("\\=", "")


@pytest.mark.parametrize("ending", [b"\n\n", b"\n\n\n", b"\r\n\r\n", b"\n \t\n"])
@pytest.mark.parametrize(("name", "rows"), [("generic.csv", 11), ("llama_bench.csv", 2)])
def test_a_csv_ending_in_blank_lines_reads_the_same_rows(store, name, rows, ending):
    """Blank lines after the last row (an editor's extra newline) are not rows: the same measurements as the file without them."""
    data = (FIXTURES / name).read_bytes()
    clean = parse_file(store, data, name, context=CTX if name != "generic.csv" else None).rows
    assert clean.height == rows
    padded = parse_file(store, data.rstrip(b"\r\n") + ending, name, context=CTX if name != "generic.csv" else None).rows
    assert padded.equals(clean)


def test_the_mapping_step_is_asked_for_before_any_import_and_offers_only_fitting_columns():
    from core.evidence.importers import columns_to_map

    odd = b"accelerator,model,concurrency,notes,prompt,gen_len,tok_s\nh100-sxm,llama-3.1-8b,8,first run,512,128,1000.5\n"
    missing = columns_to_map(odd)
    assert missing is not None and missing.missing == ["input_tokens", "output_tokens", "tokens_per_s"]
    # text and the accelerator's name are never offered for a count; concurrency is already read as the batch
    assert set(missing.candidates["input_tokens"]) == {"prompt", "gen_len"} and missing.suggested["tokens_per_s"] == "tok_s"
    assert columns_to_map(odd, given=frozenset({"input_tokens", "output_tokens"})).missing == ["tokens_per_s"]
    # files routed to another reader are never asked about
    assert columns_to_map((FIXTURES / "llama_bench_md.md").read_bytes()) is None
    assert columns_to_map((FIXTURES / "vllm_serve.json").read_bytes()) is None
    assert columns_to_map((FIXTURES / "generic.csv").read_bytes()) is None
