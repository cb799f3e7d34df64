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
    frame: pl.DataFrame  # "row" (Int64, 1-based) + CANONICAL columns as String
    sources: dict[str, str]  # canonical column -> the file's field (for messages)
    scale: dict[str, float] = field(default_factory=dict)  # canonical column -> factor to SI
    row_label: str = "record"  # "row" for CSV data rows, "record" for JSON objects
    notes: list[str] = field(default_factory=list)


Getter = Callable[[dict[str, Any]], Any]


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
    data: dict[str, list[str | None]] = {c: [] for c in CANONICAL}
    for rec in records:
        for col in CANONICAL:
            data[col].append(text(spec[col][1](rec)) if col in spec else None)
    frame = pl.DataFrame(
        {"row": rows or list(range(1, len(records) + 1)), **data}, schema={"row": pl.Int64, **dict.fromkeys(CANONICAL, pl.String)}
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
