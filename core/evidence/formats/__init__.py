"""Benchmark output formats: detection from content and extraction by field name.

Every reader turns one tool's output into an `Extract`: a frame of the
canonical measurement columns (`CANONICAL`, every value still the text the
file holds, so validation can name the bad cell), which field of the file each
column came from, and the factor that turns the file's unit into SI (a
`mean_ttft_ms` field has scale 1e-3). Readers look fields up by name, never by
position. Where each format's field names come from: tests/fixtures/README.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

#: The measurement columns every reader produces (units: see core.evidence.measurements.RULES).
CANONICAL: tuple[str, ...] = (
    "gpu",
    "num_gpus",
    "model",
    "weights",
    "kv",
    "compute",
    "phase",
    "batch",
    "input_tokens",
    "output_tokens",
    "tokens_per_s",
    "ttft_s",
    "tpot_s",
)
#: Optional columns: the per-request distribution behind a measurement (null where a file holds only means).
DISTRIBUTION: tuple[str, ...] = (
    "requests",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p90_s",
    "tpot_p99_s",
)
#: Optional facts a file states about what ran: the model file's size in bytes (llama-bench `model_size`), which the
#: ceiling uses instead of the weight format's nominal bits (a K-quant file mixes types per tensor), and the tokens
#: already in the KV cache before the measured ones (llama-bench `n_depth`), which the prompt's attention reads.
FILE_FACTS: tuple[str, ...] = ("model_bytes", "depth")
#: Every optional column a reader may fill.
EXTRA: tuple[str, ...] = (*DISTRIBUTION, *FILE_FACTS)
#: A context value in words, for messages that ask for it (the page's field and the CLI's flag both say the same).
CONTEXT_WORDS: dict[str, str] = {
    "gpu": "accelerator",
    "num_gpus": "accelerator count",
    "model": "model",
    "batch": "batch (sequences)",
    "input_tokens": "input tokens per request",
    "output_tokens": "output tokens per request",
}


class FormatError(ValueError):
    """The content is not the format it claims or seems to be; `row` and `column` when known."""

    def __init__(self, problem: str, *, row: int | None = None, column: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.row = row
        self.column = column


@dataclass
class Extract:
    """One file read into canonical columns (text values), with provenance per column."""

    format: str
    frame: pl.DataFrame  # "row" (Int64, 1-based) + CANONICAL columns (+ any DISTRIBUTION columns) as String
    sources: dict[str, str]  # canonical column -> the file's field (for messages)
    scale: dict[str, float] = field(default_factory=dict)  # canonical column -> factor to SI
    row_label: str = "record"  # "row" for CSV data rows, "record" for JSON objects, "line" for text lines
    notes: list[str] = field(default_factory=list)
    #: a results table of many systems (MLPerf's): rows on accelerators or models the catalogue lacks are left out and
    #: named in the notes, not a refusal of the whole file
    leave_out_unknown: bool = False


Getter = Callable[[Any], Any]  # a record (dict) -> the raw value


def value_of(name: str) -> Getter:
    """A getter of one top-level field (None where absent)."""
    return lambda r: r.get(name)


def text(value: Any) -> str | None:
    """A JSON value as the text validation casts: numbers as repr, None as null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return value
    return json.dumps(value)[:200]


def dig(record: dict[str, Any], *path: str) -> Any:
    """record[path[0]][path[1]]...; None where a level is missing or not an object."""
    cur: Any = record
    for key in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


def ratio(num: Any, den: Any) -> Any:
    """num / den when both are numbers and den != 0; otherwise the offending raw value."""
    if isinstance(num, int | float) and not isinstance(num, bool) and isinstance(den, int | float) and not isinstance(den, bool):
        if den == 0 or not math.isfinite(float(den)):
            return f"{num} / {den}"
        return float(num) / float(den)
    return num if not isinstance(num, int | float) else den


def rounded(value: Any) -> Any:
    """An average count (tokens per request) rounded to a whole number; other values unchanged."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(float(value)):
        return round(value)
    return value


def ask(what: str, *columns: str) -> str:
    """A message asking for context values in words: "<what>: give it as context: batch (sequences)"."""
    words = [CONTEXT_WORDS.get(c, c) for c in columns]
    listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return f"{what}: give {'it' if len(words) == 1 else 'them'} as context: {listed}"


def number(value: Any) -> float | None:
    """A JSON number as float (None for anything else, booleans included)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(float(value)):
        return float(value)
    return None


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between closest ranks (numpy's default method)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def distribution(prefix: str, values: list[float]) -> dict[str, float]:
    """p50/p90/p99 of a list of seconds, keyed `<prefix>_p50_s` ... (empty for no values)."""
    if not values:
        return {}
    return {f"{prefix}_p{q}_s": percentile(values, q) for q in (50, 90, 99)}


def request_summary(ttft: list[float], tpot: list[float], requests: int) -> dict[str, Any]:
    """What a per-request file's measurement keeps of its requests: mean TTFT and TPOT, the request count, p50/p90/p99."""
    return {
        "ttft": sum(ttft) / len(ttft) if ttft else None,
        "tpot": sum(tpot) / len(tpot) if tpot else None,
        "requests": requests,
        **distribution("ttft", ttft),
        **distribution("tpot", tpot),
    }


def request_summary_spec(ttft_field: str, tpot_field: str, requests: str) -> dict[str, tuple[str, Getter]]:
    """The spec entries of `request_summary`'s values, naming the file's per-request fields they come from."""
    return {
        "ttft_s": (f"{ttft_field} (mean)", value_of("ttft")),
        "tpot_s": (f"{tpot_field} (mean)", value_of("tpot")),
        "requests": (requests, value_of("requests")),
        **{
            f"{k}_p{q}_s": (f"{src} (p{q})", value_of(f"{k}_p{q}_s"))
            for k, src in (("ttft", ttft_field), ("tpot", tpot_field))
            for q in (50, 90, 99)
        },
    }


def from_records(
    fmt: str,
    records: list[dict[str, Any]],
    spec: dict[str, tuple[str, Getter]],
    *,
    scale: dict[str, float] | None = None,
    notes: list[str] | None = None,
    rows: list[int] | None = None,
) -> Extract:
    """An Extract from JSON objects: `spec` maps canonical column -> (field label, getter)."""
    columns = [*CANONICAL, *(c for c in EXTRA if c in spec)]
    data: dict[str, list[str | None]] = {c: [] for c in columns}
    for rec in records:
        for col in columns:
            data[col].append(text(spec[col][1](rec)) if col in spec else None)
    frame = pl.DataFrame(
        {"row": rows or list(range(1, len(records) + 1)), **data}, schema={"row": pl.Int64, **dict.fromkeys(columns, pl.String)}
    )
    return Extract(fmt, frame, {c: label for c, (label, _) in spec.items()}, scale or {}, "record", notes or [])


def require(record: dict[str, Any], fmt: str, *paths: tuple[str, ...], row: int = 1) -> None:
    """Refuse a record that lacks a field the format always writes (an explicit null is present)."""
    for path in paths:
        cur: Any = record
        for key in path:
            if not isinstance(cur, dict) or key not in cur:
                raise FormatError(f"field {'.'.join(path)} is missing: not a {fmt} file?", row=row, column=".".join(path))
            cur = cur[key]


#: How much of a non-JSON file a `text` detector sees.
TEXT_HEAD = 8192


@dataclass(frozen=True)
class Input:
    """A file as a reader gets it: JSON records (None for a CSV) or CSV bytes and header; the import's context and mapping."""

    records: list[dict[str, Any]] | None
    data: bytes
    headers: list[str]
    context: dict[str, Any]
    mapping: dict[str, str] | None

    def text(self) -> str:
        """The file as text (a CSV reader that needs it decodes it; a large CSV is read from the bytes)."""
        return self.data.decode("utf-8-sig")


@dataclass(frozen=True)
class Format:
    """One benchmark output format."""

    name: str
    description: str
    read: Callable[[Input], Extract]
    #: recognises the format from a JSON file's first record (None: not a JSON format)
    json: Callable[[dict[str, Any]], bool] | None = None
    #: recognises the format from a CSV file's header (None: not a CSV format)
    csv: Callable[[list[str]], bool] | None = None
    #: recognises a plain-text format from a non-JSON file's first TEXT_HEAD characters (tried before CSV detection)
    text: Callable[[str], bool] | None = None
