"""Bad input: every case gets a clear one-line message naming file, row, column and problem, and the store is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from core.evidence.importers import ImportContext, ImportFileError, import_file, list_datasets
from core.store import Store
from tests.helpers import FIXTURES

HEADER = "gpu,model,batch,input_tokens,output_tokens,tokens_per_s,tpot_ms"
GOOD = "h100-sxm,llama-3.1-8b,1,1024,128,150.0,6.6"
INJECTION = "x'); DROP TABLE datasets; --"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """A store holding one good dataset, so 'unchanged' is checked against real rows."""
    s = Store(tmp_path / "bad.duckdb")
    import_file(s, (FIXTURES / "generic.csv").read_bytes(), "generic.csv")
    return s


def snapshot(store: Store) -> dict[str, pl.DataFrame]:
    """Every user table's full contents, and the list of tables."""
    with store.connect() as cur:
        tables = cur.sql("SELECT table_name FROM information_schema.tables ORDER BY table_name").pl()
        out = {"__tables__": tables}
        for t in ("datasets", "measurements", "custom_accelerators", "custom_models"):
            out[t] = cur.sql(f"SELECT * FROM {t} ORDER BY ALL").pl()
        return out


def refused(store: Store, data: bytes, name: str = "bad.csv", **kwargs) -> str:
    """Import `data`, expect ImportFileError, check the store is unchanged; the message."""
    before = snapshot(store)
    with pytest.raises(ImportFileError) as info:
        import_file(store, data, name, **kwargs)
    after = snapshot(store)
    assert before.keys() == after.keys()
    for key in before:
        assert before[key].equals(after[key]), f"{key} changed"
    message = str(info.value)
    assert message.startswith(f"{name}:"), message
    assert "\n" not in message
    return message


def csv(*rows: str, header: str = HEADER) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def test_empty_file(store):
    """Zero bytes: says the file is empty."""
    assert "empty" in refused(store, b"")


def test_whitespace_only_file(store):
    """Only blank lines is empty too."""
    assert "empty" in refused(store, b"\n\n   \n")


def test_binary_data(store):
    """A PNG is binary data, not CSV or JSON."""
    assert "binary data" in refused(store, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))


def test_wrong_encoding_latin1(store):
    """A Latin-1 é is named with its byte and offset and the fix."""
    msg = refused(store, csv("h100-sxm,llama-3.1-8b,1,1024,128,150.0,6.6").replace(b"gpu", "gpé".encode("latin-1")))
    assert "not UTF-8" in msg and "0xe9" in msg and "save the file as UTF-8" in msg


def test_utf16_file(store):
    """UTF-16 (with its BOM) is refused with the encoding named."""
    assert "UTF-16" in refused(store, csv(GOOD).decode().encode("utf-16"))


def test_json_list_of_numbers(store):
    """A JSON list whose items are not objects names the first bad item."""
    msg = refused(store, b"[1, 2, 3]", "list.json")
    assert "record 1" in msg and "is a int, not an object" in msg


def test_json_empty_list(store):
    """An empty JSON list has no measurements."""
    assert "empty list" in refused(store, b"[]", "empty.json")


def test_truncated_json(store):
    """A vLLM result cut off mid-way is called truncated, with line and column."""
    text = (FIXTURES / "vllm_serve.json").read_text()
    msg = refused(store, text[: len(text) // 2].encode(), "vllm.json", context=ImportContext(gpu="h100-sxm"))
    assert "truncated" in msg and "line 1 column" in msg


def test_json_of_an_unknown_tool(store):
    """An object with unknown fields lists the known formats."""
    msg = refused(store, json.dumps({"speed": 3, "tool": "mine"}).encode(), "mine.json")
    assert "not a known benchmark format" in msg and "vllm-serve" in msg


def test_missing_column(store):
    """No tokens_per_s column: named, with the closest header as a hint."""
    msg = refused(store, b"gpu,model,batch,input_tokens,output_tokens,tok_per_sec\nh100-sxm,llama-3.1-8b,1,1024,128,150\n")
    assert "missing column(s) tokens_per_s" in msg and "'tok_per_sec'" in msg


def test_missing_column_can_be_mapped(tmp_path):
    """The same file imports once the column is mapped (the mapping step)."""
    s = Store(tmp_path / "map.duckdb")
    res = import_file(
        s,
        b"gpu,model,batch,input_tokens,output_tokens,tok_per_sec\nh100-sxm,llama-3.1-8b,1,1024,128,150\n",
        "m.csv",
        mapping={"tokens_per_s": "tok_per_sec"},
    )
    assert res.rows == 1


def test_duplicated_column(store):
    """The same header twice is named with both positions."""
    msg = refused(store, b"gpu,model,batch,batch,input_tokens,output_tokens,tokens_per_s\nh100-sxm,llama-3.1-8b,1,1,1024,128,150\n")
    assert "'batch' appears twice (columns 3 and 4)" in msg


def test_text_in_a_number_column(store):
    """'fast' in tokens_per_s: row 2, column tokens_per_s, not a number."""
    msg = refused(store, csv(GOOD, "h100-sxm,llama-3.1-8b,1,1024,128,fast,6.6"))
    assert msg == "bad.csv: row 2, column tokens_per_s: not a number: 'fast'"


def test_negative_value(store):
    """A negative batch is refused with the bound."""
    assert "row 1, column batch: -4 is not >= 1 (sequences)" in refused(store, csv("h100-sxm,llama-3.1-8b,-4,1024,128,150.0,6.6"))


def test_zero_throughput(store):
    """Zero tokens/s measured nothing."""
    assert "column tokens_per_s: 0 is not > 0 (tokens/s)" in refused(store, csv("h100-sxm,llama-3.1-8b,1,1024,128,0,6.6"))


def test_nan_value(store):
    """NaN is not a finite number."""
    assert "column tokens_per_s: not a finite number: 'NaN'" in refused(store, csv("h100-sxm,llama-3.1-8b,1,1024,128,NaN,6.6"))


def test_infinite_value(store):
    """inf is not a finite number either."""
    assert "column tpot_ms: not a finite number: 'inf'" in refused(store, csv("h100-sxm,llama-3.1-8b,1,1024,128,150,inf"))


def test_ms_read_as_s_in_a_time_column(store):
    """tpot given in ms under a _s header: 6.6 s per token is implausible and says why."""
    header = HEADER.replace("tpot_ms", "tpot_s")
    msg = refused(store, csv("h100-sxm,llama-3.1-8b,1,1024,128,150.0,16.6", header=header))
    assert "column tpot_s: 16.6 is above 10 s" in msg and "ms read as s" in msg


def test_ms_read_as_s_against_throughput(store):
    """tokens/s 1000x batch / tpot: one of them is in the wrong unit."""
    header = HEADER.replace("tpot_ms", "tpot_s")
    msg = refused(store, csv("h100-sxm,llama-3.1-8b,1,1024,128,150000,0.0066", header=header))
    assert "tokens_per_s is 990.0 x batch / tpot_s: one of them is in the wrong unit" in msg


def test_unknown_accelerator_with_suggestions(store):
    """An accelerator the catalogue lacks: named, with the closest entries."""
    msg = refused(store, csv("NVIDIA GeForce RTX 4080,llama-3.1-8b,1,1024,128,150,6.6"))
    assert "row 1, column gpu: unknown accelerator 'NVIDIA GeForce RTX 4080'; closest: rtx-4090, rtx-3090, rtx-5090" in msg


def test_unknown_model(store):
    """A model the catalogue lacks: named, with the closest entries."""
    msg = refused(store, csv("h100-sxm,TinyLlama-1.1B-Chat,1,1024,128,150,6.6"))
    assert "column model: unknown model 'TinyLlama-1.1B-Chat'" in msg and "closest:" in msg


def test_unknown_precision(store):
    """A weight format that does not exist names the known ones."""
    msg = refused(store, csv("h100-sxm,llama-3.1-8b,1,1024,128,150,6.6,fp3", header=HEADER + ",weights"))
    assert "column weights: weights: unknown precision 'fp3'" in msg


def test_header_only_csv(store):
    """A header and no rows (blank lines after it are no rows either): says so."""
    assert "header but no data rows" in refused(store, csv())
    assert "header but no data rows" in refused(store, csv() + b"\n \r\n\n")


def test_single_line_of_10_mb(store):
    """10 MB without a line break is not a CSV of measurements."""
    msg = refused(store, b"a" * 10_000_000)
    assert "line 1 is 10,000,000 bytes long" in msg


@pytest.mark.parametrize("cell", ["=cmd|' /C calc'!A0", "+SUM(A1:A2)", "-2+3", "@SUM(1,1)"])
def test_formula_cells_in_text_and_number_columns(store, cell):
    """Cells starting with = + - @ are refused as names or numbers, never evaluated or stored."""
    as_gpu = refused(store, csv(f'"{cell}",llama-3.1-8b,1,1024,128,150,6.6'))
    assert "column gpu: unknown accelerator" in as_gpu
    as_number = refused(store, csv(f'h100-sxm,llama-3.1-8b,1,1024,128,"{cell}",6.6'))
    assert "column tokens_per_s:" in as_number


def test_sql_injection_as_a_model_name(store):
    """A model called x'); DROP TABLE datasets; -- is an unknown model, and every table is still there."""
    msg = refused(store, csv(f'h100-sxm,"{INJECTION}",1,1024,128,150,6.6'))
    assert INJECTION in msg and "unknown model" in msg


def test_sql_injection_as_a_dataset_name_is_stored_literally(store):
    """The same string as a dataset name is stored as typed; the tables survive."""
    res = import_file(store, csv(GOOD), "ok.csv", name=INJECTION)
    names = list_datasets(store)["name"].to_list()
    assert INJECTION in names and res.name == INJECTION
    assert {"datasets", "measurements"} <= set(snapshot(store)["__tables__"]["table_name"].to_list())


def test_same_file_twice_is_refused(store):
    """The fixture was imported by the store fixture: a second import names the dataset."""
    msg = refused(store, (FIXTURES / "generic.csv").read_bytes(), "generic.csv")
    assert "already imported as dataset 1 ('generic.csv'" in msg


def test_whole_number_columns(store):
    """A batch of 1.5 sequences is not a whole number."""
    assert "column batch: 1.5 is not a whole number" in refused(store, csv("h100-sxm,llama-3.1-8b,1.5,1024,128,150,6.6"))


def test_ragged_csv(store):
    """A row with more fields than the header is not a well-formed CSV."""
    assert "not a well-formed CSV" in refused(store, csv(GOOD, GOOD + ",9,9,9"))


def test_unknown_format_name(store):
    """--format with a name not on the list lists them."""
    assert "unknown format 'excel'" in refused(store, csv(GOOD), fmt="excel")


def test_vllm_result_with_no_completed_requests(store):
    """A run that completed nothing has no per-request lengths."""
    rec = json.loads((FIXTURES / "vllm_serve.json").read_text()) | {"completed": 0}
    msg = refused(store, json.dumps(rec).encode(), "zero.json", context=ImportContext(gpu="h100-sxm"))
    assert "record 1, column total_input_tokens / completed: not a number" in msg


def test_wrong_type_in_a_json_field(store):
    """output_throughput as text in a vLLM file names the field."""
    rec = json.loads((FIXTURES / "vllm_serve.json").read_text()) | {"output_throughput": "fast"}
    msg = refused(store, json.dumps(rec).encode(), "t.json", context=ImportContext(gpu="h100-sxm"))
    assert msg == "t.json: record 1, column output_throughput: not a number: 'fast'"


def test_file_without_accelerator_asks_for_context(store):
    """A vLLM file has no accelerator: the message says which flag gives it."""
    msg = refused(store, (FIXTURES / "vllm_serve.json").read_bytes(), "vllm_serve.json")
    assert "no accelerator in the file: give it as context: accelerator" in msg  # the page's field, in words


def test_many_bad_rows_report_the_first_and_count_the_rest(store):
    """Three bad rows: the first is named, two more are counted."""
    rows = [
        GOOD,
        "h100-sxm,llama-3.1-8b,0,1024,128,150,6.6",
        "h100-sxm,llama-3.1-8b,1,1024,128,-1,6.6",
        "h100-sxm,llama-3.1-8b,1,1024,128,x,6.6",
    ]
    msg = refused(store, csv(*rows))
    assert msg.startswith("bad.csv: row 2, column batch:") and msg.endswith("(2 more rows with problems)")
