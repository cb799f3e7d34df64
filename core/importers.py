"""Import benchmark results: decode, detect the format, read, validate, write one dataset.

    result = import_file(store, data, "run.json", context=ImportContext(gpu="h100-sxm"))

The same function serves the app's upload and the CLI's `import`. Nothing is
written unless every row is valid; a dataset (name, file hash, format,
imported at, context) and its measurements go in in one transaction. A file
whose sha256 is already stored is refused, naming the dataset it became.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from core.catalogue import load_catalogue
from core.formats import Extract, FormatError
from core.formats.exports import llama_bench, optimum_benchmark, profile_csv, profile_json
from core.formats.generic import MissingColumnsError, header_of, read_generic
from core.formats.serving import llmperf, sglang_one_batch, sglang_serving, trtllm_bench, vllm_serve, vllm_throughput
from core.measurements import MeasurementError, error_text, validate
from core.store import ReadOnlyError, read_sql

#: Format name -> what it is (the `--format` choices, in detection order).
FORMATS: dict[str, str] = {
    "generic-csv": "documented CSV, one row per measurement (see core/formats/generic.py)",
    "vllm-serve": "vllm bench serve --save-result JSON",
    "vllm-benchmark-serving": "benchmarks/benchmark_serving.py --save-result JSON (older vLLM)",
    "vllm-throughput": "vllm bench throughput --output-json",
    "sglang-serving": "python -m sglang.bench_serving --output-file JSONL",
    "sglang-one-batch": "python -m sglang.bench_one_batch --result-filename JSONL",
    "trtllm-bench": "trtllm-bench ... --report_json",
    "genai-perf-json": "genai-perf profile_export_genai_perf.json",
    "genai-perf-csv": "genai-perf profile_export_genai_perf.csv",
    "aiperf-json": "AIPerf profile_export_aiperf.json",
    "aiperf-csv": "AIPerf profile_export_aiperf.csv",
    "llmperf": "ray-project/llmperf *_summary.json",
    "llama-bench": "llama.cpp llama-bench -o csv, json or jsonl",
    "optimum-benchmark": "optimum-benchmark benchmark.json or benchmark_report.json",
}
MAX_LINE_BYTES = 1_000_000  # a CSV line longer than this is not a benchmark row
MAX_FILE_BYTES = 200_000_000  # the app's upload limit (.streamlit/config.toml)


class ImportFileError(ValueError):
    """A file that cannot be imported; str() is one line naming file, row, column and problem."""

    def __init__(self, message: str, *, missing: MissingColumnsError | None = None) -> None:
        super().__init__(message)
        self.missing = missing  # set when a column-mapping step can fix it


class ImportContext(BaseModel):
    """What most formats lack; a value given here replaces the file's column for every row."""

    model_config = ConfigDict(extra="forbid")

    gpu: str | None = None
    num_gpus: Annotated[int, Field(ge=1, le=1024)] | None = None
    model: str | None = None
    weights: str | None = None
    kv: str | None = None
    compute: str | None = None
    batch: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    input_tokens: Annotated[int, Field(ge=0, le=10_000_000)] | None = None
    output_tokens: Annotated[int, Field(ge=0, le=10_000_000)] | None = None


@dataclass
class Parsed:
    """A file read and validated, not yet written."""

    format: str
    rows: pl.DataFrame  # the typed measurement frame (core.measurements.validate)
    sha256: str
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    """A dataset written to the store."""

    dataset_id: int
    name: str
    format: str
    rows: int
    notes: list[str]


Progress = Callable[[float, str], None]


def import_file(
    store: Any,
    data: bytes,
    file_name: str,
    *,
    fmt: str | None = None,
    context: ImportContext | None = None,
    name: str | None = None,
    mapping: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> ImportResult:
    """Parse, validate and write one file as a dataset (one transaction); ImportFileError otherwise."""
    ctx = context or ImportContext()
    parsed = parse_file(store, data, file_name, fmt=fmt, context=ctx, mapping=mapping, progress=progress)
    dup = store.query("dataset_by_hash", file_sha256=parsed.sha256)
    if dup.height:
        d = dup.row(0, named=True)
        then = "delete it first" if store.dataset_writable(int(d["id"])) else "it is in the read-only store"
        raise ImportFileError(
            f"{file_name}: already imported as dataset {d['id']} ({d['name']!r}, {d['imported_at']:%Y-%m-%d %H:%M}); {then}"
        )
    if progress:
        progress(0.8, f"writing {parsed.rows.height:,} measurements")
    label = (name or "").strip() or file_name
    with store.transaction() as cur:
        row = cur.execute(
            read_sql("insert_dataset"),
            {
                "name": label,
                "file_name": file_name,
                "file_sha256": parsed.sha256,
                "format": parsed.format,
                "row_count": parsed.rows.height,
                "context_json": ctx.model_dump_json(exclude_none=True),
                "notes": "; ".join(parsed.notes),
            },
        ).fetchone()
        dataset_id = int(row[0])
        cur.register("import_rows", parsed.rows)
        cur.execute(read_sql("insert_measurements"), {"dataset_id": dataset_id})
        cur.unregister("import_rows")
    if progress:
        progress(1.0, "done")
    return ImportResult(dataset_id, label, parsed.format, parsed.rows.height, parsed.notes)


def parse_file(
    store: Any,
    data: bytes,
    file_name: str,
    *,
    fmt: str | None = None,
    context: ImportContext | None = None,
    mapping: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> Parsed:
    """Decode, detect, read and validate a file (nothing written)."""
    ctx = (context or ImportContext()).model_dump()
    if progress:
        progress(0.05, "reading the file")
    if fmt is not None and fmt not in FORMATS:
        raise ImportFileError(f"{file_name}: unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    extract: Extract | None = None
    try:
        extract = _read(data, fmt, ctx, mapping)
        if progress:
            progress(0.3, f"validating {extract.frame.height:,} rows")
        rows = validate(extract, load_catalogue(store), ctx, progress)
    except MissingColumnsError as exc:
        raise ImportFileError(error_text(file_name, exc), missing=exc) from None
    except (FormatError, MeasurementError) as exc:
        label = extract.row_label if extract is not None else "record" if data.lstrip()[:1] in (b"{", b"[") else "row"
        raise ImportFileError(error_text(file_name, exc, label)) from None
    assert extract is not None
    return Parsed(extract.format, rows, hashlib.sha256(data).hexdigest(), extract.notes)


# -- decoding and detection -------------------------------------------------------------


def _decode(data: bytes) -> str:
    if not data.strip():
        raise FormatError("the file is empty")
    if len(data) > MAX_FILE_BYTES:
        raise FormatError(f"the file is {len(data) / 1e6:,.0f} MB; the limit is {MAX_FILE_BYTES / 1e6:,.0f} MB")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise FormatError("the file is UTF-16 text; save it as UTF-8")
    if b"\x00" in data[:4096]:
        raise FormatError("binary data (NUL bytes), not CSV or JSON text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start:,}); save the file as UTF-8") from None


def _read(data: bytes, fmt: str | None, ctx: dict[str, Any], mapping: dict[str, str] | None) -> Extract:
    text = _decode(data)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    head = text.lstrip()[:1]
    if head in ("{", "["):
        records, kind = _json_records(text.strip())
        return _read_records(records, fmt or _detect_json(records, kind), ctx)
    data = _without_trailing_blank_lines(data)
    first_break = data.find(b"\n")
    line_len = len(data) if first_break < 0 else first_break
    if line_len > MAX_LINE_BYTES:
        raise FormatError(f"line 1 is {line_len:,} bytes long (limit {MAX_LINE_BYTES:,}): not a CSV of measurements", row=1)
    headers = header_of(data)
    detected = fmt or _detect_csv(headers)
    if detected in ("genai-perf-csv", "aiperf-csv"):
        return profile_csv(text, detected)
    del text  # a large CSV is read from the bytes: no second copy held
    if first_break < 0 or not _NON_SPACE.search(data, first_break):
        raise FormatError("the CSV has a header but no data rows")
    if detected == "llama-bench":
        raw = pl.read_csv(io.BytesIO(data), infer_schema_length=0)
        extract = llama_bench(raw.to_dicts())
        extract.row_label = "row"
        return extract
    if detected != "generic-csv":
        raise FormatError(f"a CSV file cannot be read as {detected}")
    return read_generic(data, mapping)


_NON_SPACE = re.compile(rb"\S")


def _without_trailing_blank_lines(data: bytes) -> bytes:
    """CSV bytes cut after the last line that holds something (blank lines at the end are not rows).

    Copies the file only when it has such lines; the last line keeps its own line break.
    """
    end = len(data)
    while end:  # the trailing white space, 64 KiB at a time (a file may end in megabytes of it)
        start = max(0, end - 65536)
        kept = len(data[start:end].rstrip())
        end = start + kept
        if kept:
            break
    cut = data.find(b"\n", end)
    return data if cut < 0 or cut + 1 == len(data) else data[: cut + 1]


def _json_records(text: str) -> tuple[list[Any], str]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines):
            out = []
            for i, ln in enumerate(lines, 1):
                try:
                    out.append(json.loads(ln))
                except json.JSONDecodeError as e2:
                    raise FormatError(f"JSON line is truncated or malformed ({e2.msg} at column {e2.colno})", row=i) from None
            return out, "jsonl"
        at_end = exc.pos >= len(text.rstrip()) - 1
        what = "truncated (it ends before the JSON closes)" if at_end else "malformed"
        raise FormatError(f"the JSON is {what}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if isinstance(value, list):
        if not value:
            raise FormatError("the JSON is an empty list: no measurements")
        bad = next((i for i, v in enumerate(value, 1) if not isinstance(v, dict)), None)
        if bad is not None:
            raise FormatError(
                f"the JSON is a list whose item {bad} is a {type(value[bad - 1]).__name__}, not an object of results", row=bad
            )
        return value, "list"
    if not isinstance(value, dict):
        raise FormatError(f"the JSON is a single {type(value).__name__}, not an object of results")
    return [value], "object"


def _detect_json(records: list[dict[str, Any]], kind: str) -> str:
    r = records[0]
    keys = set(r)
    if "performance" in keys and ("request_info" in keys or "engine" in keys):
        return "trtllm-bench"
    if "report" in keys and "config" in keys or {"decode", "prefill"} <= keys and isinstance(r.get("decode"), dict):
        return "optimum-benchmark"
    if "results_mean_output_throughput_token_per_s" in keys:
        return "llmperf"
    if isinstance(r.get("records"), dict) and "output_token_throughput" in r["records"]:
        return "aiperf-json"
    if isinstance(r.get("output_token_throughput"), dict):
        return "aiperf-json" if "endpoint" in (r.get("input_config") or {}) else "genai-perf-json"
    if "avg_ts" in keys and "n_gen" in keys:
        return "llama-bench"
    if "median_decode_throughput" in keys or {"prefill_throughput", "batch_size"} <= keys:
        return "sglang-one-batch"
    if "output_throughput" in keys and ("mean_e2e_latency_ms" in keys or "input_throughput" in keys):
        return "sglang-serving"
    if "output_throughput" in keys:
        return "vllm-serve" if "endpoint_type" in keys or "label" in keys else "vllm-benchmark-serving"
    if {"tokens_per_second", "requests_per_second", "elapsed_time"} <= keys:
        return "vllm-throughput"
    shown = ", ".join(sorted(keys)[:8])
    raise FormatError(f"not a known benchmark format (fields: {shown}{', ...' if len(keys) > 8 else ''}); known: {', '.join(FORMATS)}")


def _detect_csv(headers: list[str]) -> str:
    lower = {h.lower() for h in headers}
    if {"avg_ts", "n_prompt", "n_gen"} <= lower:
        return "llama-bench"
    if headers[:1] == ["Metric"]:
        return "aiperf-csv" if "std" in lower else "genai-perf-csv"
    return "generic-csv"


def _read_records(records: list[dict[str, Any]], fmt: str, ctx: dict[str, Any]) -> Extract:
    readers: dict[str, Callable[[], Extract]] = {
        "vllm-serve": lambda: vllm_serve(records, "vllm-serve"),
        "vllm-benchmark-serving": lambda: vllm_serve(records, "vllm-benchmark-serving"),
        "vllm-throughput": lambda: vllm_throughput(records, ctx),
        "sglang-serving": lambda: sglang_serving(records),
        "sglang-one-batch": lambda: sglang_one_batch(records),
        "trtllm-bench": lambda: trtllm_bench(records),
        "genai-perf-json": lambda: profile_json(records, "genai-perf-json"),
        "aiperf-json": lambda: profile_json(records, "aiperf-json"),
        "llmperf": lambda: llmperf(records),
        "llama-bench": lambda: llama_bench(records),
        "optimum-benchmark": lambda: optimum_benchmark(records),
    }
    if fmt not in readers:
        raise FormatError(f"a JSON file cannot be read as {fmt}")
    return readers[fmt]()


# -- datasets -------------------------------------------------------------------------------


def list_datasets(store: Any) -> pl.DataFrame:
    """Every dataset: id, name, file, format, imported at, rows, context."""
    frame: pl.DataFrame = store.query("datasets")
    return frame


def dataset_rows(store: Any, dataset_id: int) -> pl.DataFrame:
    """The measurements of one dataset."""
    frame: pl.DataFrame = store.query("dataset_measurements", dataset_id=dataset_id)
    return frame


def _check_writable(store: Any, dataset_id: int) -> None:
    if not store.dataset_writable(dataset_id):
        raise ReadOnlyError(f"dataset {dataset_id} is in the read-only store (ROOFLINE_READ_ONLY=1): it cannot be renamed or deleted")


def rename_dataset(store: Any, dataset_id: int, name: str) -> None:
    """Give a dataset a new name (stored as typed, bound as a parameter)."""
    if not name.strip():
        raise ImportFileError("name: a dataset needs a non-empty name")
    _check_writable(store, dataset_id)
    store.execute("rename_dataset", id=dataset_id, name=name.strip())


def delete_dataset(store: Any, dataset_id: int) -> None:
    """Delete a dataset and its measurements in one transaction."""
    _check_writable(store, dataset_id)
    with store.transaction() as cur:
        cur.execute(read_sql("delete_dataset_measurements"), {"id": dataset_id})
        cur.execute(read_sql("delete_dataset"), {"id": dataset_id})
