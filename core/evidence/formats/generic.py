"""The documented generic CSV: one row per measurement, units in the column names.

| column | unit | required | meaning |
| --- | --- | --- | --- |
| `gpu` | - | unless given as context | accelerator: a catalogue id or a name like "NVIDIA H100 80GB HBM3" |
| `num_gpus` | count | no (1) | accelerators the model is split over (tensor parallel) |
| `model` | - | unless given as context | a catalogue id or a name like "meta-llama/Llama-3.1-8B-Instruct" |
| `weights`, `kv`, `compute` | precision | no (bf16, bf16, from weights) | bf16, fp8, int4, nvfp4 ... |
| `phase` | - | no (decode) | decode (generation only), prefill (prompt only) or mixed (a serving run) |
| `batch` | sequences | yes | sequences decoded together (or the concurrency of a serving run) |
| `input_tokens` | tokens | yes | prompt length per sequence (the context already cached for decode) |
| `output_tokens` | tokens | yes | tokens generated per sequence |
| `tokens_per_s` | tokens/s | yes | measured throughput, all sequences together (prefill: prompt tokens/s) |
| `ttft_ms` or `ttft_s` | ms or s | no | mean time to first token |
| `tpot_ms` or `tpot_s` | ms or s | no | mean time per output token (per sequence) |

Headers that differ are mapped with `mapping` (canonical column -> header); a
time column's unit comes from its suffix (`_ms`, `_s`, `_us`) or a unit in
parentheses ("TTFT (ms)").
"""

from __future__ import annotations

import csv
import difflib
import io
import re

import polars as pl

from core.evidence.formats import CANONICAL, Extract, FormatError

REQUIRED: tuple[str, ...] = ("batch", "input_tokens", "output_tokens", "tokens_per_s")
ALIASES: dict[str, tuple[str, ...]] = {
    "gpu": ("gpu", "accelerator", "gpu_id"),
    "num_gpus": ("num_gpus", "gpus", "tp", "tp_size"),
    "model": ("model", "model_id"),
    "weights": ("weights", "weight_precision"),
    "kv": ("kv", "kv_precision", "kv_cache"),
    "compute": ("compute", "compute_precision"),
    "phase": ("phase",),
    "batch": ("batch", "batch_size", "concurrency"),
    "input_tokens": ("input_tokens", "prompt_tokens", "input_len"),
    "output_tokens": ("output_tokens", "output_len", "generated_tokens"),
    "tokens_per_s": ("tokens_per_s", "output_tokens_per_s", "throughput_tokens_per_s"),
    "ttft_s": ("ttft_s", "ttft_ms", "ttft_us"),
    "tpot_s": ("tpot_s", "tpot_ms", "tpot_us", "itl_ms", "itl_s"),
}
_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


class MissingColumnsError(FormatError):
    """Required columns absent: `missing`, the file's `headers` and a `suggested` mapping."""

    def __init__(self, missing: list[str], headers: list[str]) -> None:
        self.missing = missing
        self.headers = headers
        self.suggested = {m: (difflib.get_close_matches(m, headers, n=1, cutoff=0.4) or [""])[0] for m in missing}
        hints = ", ".join(f"{m} (closest header: {self.suggested[m]!r})" if self.suggested[m] else m for m in missing)
        super().__init__(f"missing column(s) {hints}; map them to the file's headers", column=", ".join(missing))


def header_of(data: bytes) -> list[str]:
    """The header row of CSV bytes, each name stripped."""
    end = data.find(b"\n")
    first = (data if end < 0 else data[:end]).decode("utf-8").rstrip("\r")
    return [h.strip() for h in next(csv.reader([first]), [])]


def auto_mapping(headers: list[str]) -> dict[str, str]:
    """canonical column -> header for the headers that are the documented names (or aliases)."""
    lower = {h.lower(): h for h in headers}
    out: dict[str, str] = {}
    for col, names in ALIASES.items():
        hit = next((lower[n] for n in names if n in lower), None)
        if hit is not None:
            out[col] = hit
    return out


def time_scale(header: str) -> float:
    """Seconds per unit of a time column, from its suffix or a unit in parentheses."""
    m = re.search(r"\(([µu]?m?s)\)\s*$", header) or re.search(r"_([µu]?m?s)$", header.strip().lower())
    if not m:
        raise FormatError(f"column {header!r}: give the unit in the name (_ms, _s, _us)", column=header)
    return _UNITS[m.group(1).replace("µ", "u")]


def read_generic(data: bytes, mapping: dict[str, str] | None = None) -> Extract:
    """The generic CSV as an Extract; MissingColumnsError when required columns cannot be found."""
    headers = header_of(data)
    seen: dict[str, int] = {}
    for i, h in enumerate(headers, 1):
        if not h:
            raise FormatError(f"column {i} has an empty header", column=f"#{i}")
        if h in seen:
            raise FormatError(f"column {h!r} appears twice (columns {seen[h]} and {i})", column=h)
        seen[h] = i
    cols = {**auto_mapping(headers), **{k: v for k, v in (mapping or {}).items() if v}}
    for col, h in cols.items():
        if col not in CANONICAL:
            raise FormatError(f"unknown column {col!r} in the mapping; known: {', '.join(CANONICAL)}", column=col)
        if h not in seen:
            raise FormatError(f"mapped header {h!r} (for {col}) is not in the file", column=h)
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise MissingColumnsError(missing, headers)
    try:
        raw = pl.read_csv(io.BytesIO(data), infer_schema_length=0, columns=sorted(set(cols.values())), raise_if_empty=False)
    except (pl.exceptions.ComputeError, pl.exceptions.ShapeError) as exc:
        raise FormatError(f"not a well-formed CSV: {str(exc).splitlines()[0]}") from exc
    frame = raw.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("row"),
        *[(pl.col(cols[c]) if c in cols else pl.lit(None, dtype=pl.String)).alias(c) for c in CANONICAL],
    )
    scale: dict[str, float] = {c: time_scale(cols[c]) for c in ("ttft_s", "tpot_s") if c in cols}
    return Extract("generic-csv", frame, {c: cols[c] for c in cols}, scale, "row")
