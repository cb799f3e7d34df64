"""Import benchmark results: decode, detect the format, read, validate, write one dataset.

    result = import_file(store, data, "run.json", context=ImportContext(gpu="h100-sxm"))

The same function serves the app's upload and the CLI's `import`. Nothing is
written unless every row is valid; a dataset (name, file hash, format,
imported at, context) and its measurements go in in one transaction. A file
whose sha256 is already stored is refused, naming the dataset it became.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from core.catalogue.catalogue import load_catalogue
from core.evidence.bench_commands import read_tag
from core.evidence.formats import TEXT_HEAD, Extract, Format, FormatError, Input
from core.evidence.formats.generic import MissingColumnsError, header_of, missing_columns
from core.evidence.formats.registry import BY_NAME, closest, detect_csv, detect_json, detect_text, unknown_csv, unknown_json
from core.evidence.measurements import MeasurementError, error_text, validate
from core.store.paths import ReadOnlyError, read_sql

MAX_LINE_BYTES = 1_000_000  # a CSV line longer than this is not a benchmark row
MAX_FILE_BYTES = 200_000_000  # the app's upload limit (.streamlit/config.toml)


class ImportFileError(ValueError):
    """A file that cannot be imported; str() is one line naming file, row, column and problem."""

    def __init__(self, message: str, *, missing: MissingColumnsError | None = None, duplicate_of: int | None = None) -> None:
        super().__init__(message)
        self.missing = missing  # set when a column-mapping step can fix it
        self.duplicate_of = duplicate_of  # the id of the dataset the same file was imported as


class ImportContext(BaseModel):
    """What most formats lack; a value given here replaces the file's column for every row."""

    model_config = ConfigDict(extra="forbid")

    gpu: str | None = Field(None, description="accelerator id or name (replaces the file's)")
    num_gpus: Annotated[int, Field(ge=1, le=1024)] | None = Field(None, description="accelerators the model ran on")
    model: str | None = Field(None, description="model id or name (replaces the file's)")
    weights: str | None = Field(None, description="weight format (bf16, fp8, int4 ...)")
    kv: str | None = Field(None, description="KV-cache format")
    compute: str | None = Field(None, description="compute format (default: from the weights)")
    batch: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        None, description="sequences per step / concurrency, where the file lacks it"
    )
    input_tokens: Annotated[int, Field(ge=0, le=10_000_000)] | None = Field(
        None, description="prompt length per request, where the file lacks it"
    )
    output_tokens: Annotated[int, Field(ge=0, le=10_000_000)] | None = Field(
        None, description="output length per request, where the file lacks it"
    )
    phase: Literal["decode", "prefill", "mixed"] | None = Field(
        None,
        description="what tokens/s counts: decode (generation only), prefill (prompt tokens) or mixed (a serving run, prefill "
        "included); replaces the file's (a CSV with no phase column: inferred from its columns)",
    )


@dataclass
class Parsed:
    """A file read and validated, not yet written."""

    format: str
    rows: pl.DataFrame  # the typed measurement frame (core.evidence.measurements.validate)
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
            f"{file_name}: already imported as dataset {d['id']} ({d['name']!r}, {d['imported_at']:%Y-%m-%d %H:%M}); {then}",
            duplicate_of=int(d["id"]),
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
    named = read_tag(file_name)  # a benchmark command's file name carries its scenario (core.evidence.bench_commands)
    for key, value in named.items():
        if ctx.get(key) is None:
            ctx[key] = int(value) if key == "num_gpus" and value.isdigit() else value
    if progress:
        progress(0.05, "reading the file")
    if fmt is not None and fmt not in BY_NAME:
        raise ImportFileError(f"{file_name}: unknown format {fmt!r}; known: {', '.join(BY_NAME)}")
    extract: Extract | None = None
    try:
        extract = _read(data, fmt, ctx, mapping)
        if progress:
            progress(0.3, f"validating {extract.frame.height:,} rows")
        rows = validate(extract, load_catalogue(store), ctx, progress)
    except MissingColumnsError as exc:
        near = closest(set(exc.headers), "csv") if fmt is None else []
        also = f" (it is {unknown_csv(exc.headers)})" if near else ""
        raise ImportFileError(error_text(file_name, exc) + also, missing=exc) from None
    except (FormatError, MeasurementError) as exc:
        label = extract.row_label if extract is not None else _row_label(data, fmt)
        raise ImportFileError(error_text(file_name, exc, label)) from None
    except pl.exceptions.PolarsError as exc:  # a table the CSV parser cannot read (a stray quote, a ragged row): its first line
        said = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise ImportFileError(f"{file_name}: the table cannot be read: {said[:300]}") from None
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
        records, shape = _json_records(text.strip())
        reader = BY_NAME[fmt] if fmt else detect_json(records[0], shape)
        if reader.json is None:
            raise FormatError(f"a JSON file cannot be read as {reader.name}")
        try:
            return reader.read(Input(records, data, [], ctx, mapping))
        except FormatError as exc:
            if fmt is None and _CLAIMED.search(exc.problem):  # a loose detector took another tool's file: say what the file is
                claimed = f"it looked like {reader.name}, but {exc.problem.split(': not a ')[0]}"
                raise FormatError(unknown_json(records[0], shape, claimed), row=exc.row) from None
            raise
    plain = _text_format(text, fmt)
    if plain is not None:  # a plain-text format (a log, a summary): its own reader, tried before CSV detection
        return plain.read(Input(None, data, [], ctx, mapping))
    del text  # a large CSV is read from the bytes: no second copy held
    data = _without_trailing_blank_lines(data)
    first_break = data.find(b"\n")
    line_len = len(data) if first_break < 0 else first_break
    if line_len > MAX_LINE_BYTES:
        raise FormatError(f"line 1 is {line_len:,} bytes long (limit {MAX_LINE_BYTES:,}): not a CSV of measurements", row=1)
    headers = header_of(data)
    reader = BY_NAME[fmt] if fmt else detect_csv(headers, _first_row(data))
    if reader.csv is None:
        raise FormatError(f"a CSV file cannot be read as {reader.name}")  # (a text format was routed above)
    if first_break < 0 or not _NON_SPACE.search(data, first_break):
        raise FormatError("the CSV has a header but no data rows")
    return reader.read(Input(None, data, headers, ctx, mapping))


_NON_SPACE = re.compile(rb"\S")
#: What `core.evidence.formats.require` says when a file lacks a field its format always writes.
_CLAIMED = re.compile(r"^field \S+ is missing: not a \S+ file\?$")


def _first_row(data: bytes) -> list[str] | None:
    """The first data row of CSV bytes, as fields (None: no second line), to tell a table from a text."""
    import csv

    lines = data.split(b"\n", 2)
    if len(lines) < 2 or not lines[1].strip() or b'"' in lines[1]:  # a quoted field may run over lines: not judged
        return None
    try:
        return next(csv.reader([lines[1].decode("utf-8", errors="replace").rstrip("\r")]), None)
    except csv.Error:
        return None


def columns_to_map(data: bytes, fmt: str | None = None, given: frozenset[str] = frozenset()) -> MissingColumnsError | None:
    """Before an import: the required columns a file read as the generic CSV lacks (those `given` as context do not
    count), with the headers whose content fits each; None when the file is routed to another format (as `_read`
    routes it) or lacks nothing. The page shows its mapping step from this, before anything is imported."""
    try:
        text = _decode(data)
    except FormatError:
        return None
    if text.lstrip()[:1] in ("{", "[") or _text_format(text, fmt) is not None:
        return None
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        reader = BY_NAME[fmt] if fmt else detect_csv(header_of(data), _first_row(data))
    except (FormatError, UnicodeDecodeError):  # not a table: nothing to map (the import says what the file looks like)
        return None
    return missing_columns(data, given) if reader.name == "generic-csv" else None


def _text_format(text: str, fmt: str | None) -> Format | None:
    """The plain-text format of a non-JSON file: the one named, or the one whose detector claims its head; None: CSV."""
    if fmt is not None:
        named = BY_NAME[fmt]
        return named if named.text is not None else None
    return detect_text(text[:TEXT_HEAD])


def _row_label(data: bytes, fmt: str | None) -> str:
    """What a file's units are called in messages when reading failed before an Extract existed."""
    if data.lstrip()[:1] in (b"{", b"["):
        return "record"
    head = data[: TEXT_HEAD * 4].decode("utf-8-sig", errors="ignore")
    return "line" if _text_format(head, fmt) is not None else "row"


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
    from core.catalogue.bounded_json import JSONLimitError, loads  # size and nesting checked before parsing

    try:
        value = loads(text, max_bytes=MAX_FILE_BYTES)
    except JSONLimitError as exc:
        raise FormatError(str(exc)) from None
    except json.JSONDecodeError as exc:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines):
            out = []
            for i, ln in enumerate(lines, 1):
                try:
                    out.append(loads(ln, max_bytes=MAX_FILE_BYTES))
                except JSONLimitError as e2:
                    raise FormatError(str(e2), row=i) from None
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
