"""The documented generic CSV: one row per measurement, units in the column names.

| column | unit | required | meaning |
| --- | --- | --- | --- |
| `gpu` | - | unless given as context | accelerator: a catalogue id or a name like "NVIDIA H100 80GB HBM3" |
| `num_gpus` | count | no (1) | accelerators the model is split over (tensor parallel) |
| `model` | - | unless given as context | a catalogue id or a name like "meta-llama/Llama-3.1-8B-Instruct" |
| `weights`, `kv`, `compute` | precision | no (bf16, bf16, from weights) | bf16, fp8, int4, nvfp4 ... |
| `phase` | - | no (from the columns) | decode (generation only), prefill (prompt only) or mixed (a serving run) |
| `batch` | sequences | yes | sequences decoded together (or the concurrency of a serving run) |
| `input_tokens` | tokens | yes | prompt length per sequence (the context already cached for decode) |
| `output_tokens` | tokens | yes | tokens generated per sequence |
| `tokens_per_s` | tokens/s | yes | measured throughput, all sequences together (prefill: prompt tokens/s) |
| `ttft_ms` or `ttft_s` | ms or s | no | mean time to first token |
| `tpot_ms` or `tpot_s` | ms or s | no | mean time per output token (per sequence) |

Headers that differ are mapped with `mapping` (canonical column -> header); a
time column's unit comes from its suffix (`_ms`, `_s`, `_us`) or a unit in
parentheses ("TTFT (ms)").

A file with no phase column (and no phase given as context) is read as one
phase, inferred from its columns (`infer_phase`) and said in the notes: a
throughput of prompt or prefill tokens is prefill; a TTFT, end-to-end,
request-rate or concurrency column that holds values makes it a serving run
(mixed: output tokens/s with prefill included); otherwise decode.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
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


#: Required columns that hold whole numbers (the rest of REQUIRED hold any positive number).
_COUNTS = frozenset({"batch", "input_tokens", "output_tokens"})
#: Data rows looked at to tell whether a column's content fits.
SAMPLE_ROWS = 200


#: Headers of a serving run (requests sent at a rate or a concurrency, timed per request).
_SERVING = re.compile(
    r"ttft|time.?to.?first|e2e|end.?to.?end|request.?rate|req(uest)?s?.?per.?s|req/s|concurrency|num.?prompts|request.?throughput",
    re.IGNORECASE,
)
#: A throughput header that counts prompt tokens.
_PROMPT_RATE = re.compile(r"prompt|prefill|input", re.IGNORECASE)
_RATE = re.compile(r"per.?s(ec)?$|/s\b|throughput|tok.?s$|tps$", re.IGNORECASE)


def infer_phase(headers: list[str], cols: dict[str, str], sample: dict[str, list[str | None]]) -> tuple[str, str]:
    """The phase of a CSV with no phase column, from its columns, and why: (phase, reason in words).

    A tokens/s column named for the prompt ("prompt_tokens_per_s", "prefill throughput") is prefill; a column of a
    serving run that holds values (TTFT, e2e latency, request rate, concurrency) with output tokens/s is mixed; else decode.
    """
    tps = cols.get("tokens_per_s")
    if tps is not None and _PROMPT_RATE.search(tps):
        return "prefill", f"its throughput column {tps!r} counts prompt tokens"
    if tps is None:
        prompt = [h for h in headers if _PROMPT_RATE.search(h) and _RATE.search(h)]
        if prompt and not any(_RATE.search(h) and not _PROMPT_RATE.search(h) for h in headers if h not in prompt):
            return "prefill", f"its throughput column {prompt[0]!r} counts prompt tokens"

    def filled(h: str) -> bool:
        return any(v is not None and v.strip() for v in sample.get(h, []))

    serving = [h for h in headers if _SERVING.search(h) and filled(h)]
    if serving:
        return "mixed", f"a serving run: it has {serving[0]}"
    return "decode", "no TTFT, request-rate or concurrency column"


def phase_note(phase: str, reason: str) -> str:
    """What the notes say about an inferred phase."""
    return f"phase: no column; read as {phase} ({reason}); give the phase as context to read it otherwise"


class MissingColumnsError(FormatError):
    """Required columns absent: `missing`, the file's `headers`, per missing column the `candidates` whose content fits, and a `suggested` mapping.

    A header is a candidate for a count (batch, input or output tokens) only if every sampled value is a whole
    number >= 0, for tokens_per_s only if every one is a number > 0; candidates are ranked by how close the
    header's name is, and the closest (if its name is near enough) is suggested.
    """

    def __init__(
        self, missing: list[str], headers: list[str], sample: dict[str, list[str | None]] | None = None, taken: frozenset[str] = frozenset()
    ) -> None:
        self.missing = missing
        self.headers = headers
        free = [h for h in headers if h not in taken]  # a header already read as another column is not offered again
        self.candidates = {m: _fitting(m, free, sample or {}) for m in missing}
        self.suggested = _suggest(missing, self.candidates)
        hints = ", ".join(f"{m} (closest fitting header: {self.suggested[m]!r})" if self.suggested[m] else m for m in missing)
        #: the phase the rows will be read as where the file has no phase column (None: it has one), and why
        self.phase: str | None = None
        self.phase_reason = ""
        if "phase" not in auto_mapping(headers):
            self.phase, self.phase_reason = infer_phase(headers, auto_mapping(headers), sample or {})
        super().__init__(f"missing column(s) {hints}; map them to the file's headers", column=", ".join(missing))


#: Words a tool's header for a required column holds (prompt_len, gen_len, output_tok_per_s, max_concurrency ...).
_HINTS: dict[str, re.Pattern[str]] = {
    "batch": re.compile(r"concurren|batch|\bbs\b|num.?seqs", re.IGNORECASE),
    "input_tokens": re.compile(r"prompt|input|\bisl\b|in.?len", re.IGNORECASE),
    "output_tokens": re.compile(r"output|\bgen|completion|\bosl\b|decode|out.?len|new.?tokens", re.IGNORECASE),
    "tokens_per_s": re.compile(r"tok.*(/|per).?s|throughput|\btps\b|tokens.?per.?sec", re.IGNORECASE),
}


def _suggest(missing: list[str], candidates: dict[str, list[str]]) -> dict[str, str]:
    """The header proposed for each missing column among those whose content fits: one whose name says what the column
    is (`_HINTS`), else the closest name; a rate is never proposed as a count or a length, and no header for two
    columns ("" where none is near enough)."""
    rate = _HINTS["tokens_per_s"]
    used: set[str] = set()
    out: dict[str, str] = dict.fromkeys(missing, "")

    def free(m: str) -> list[str]:
        return [h for h in candidates[m] if h not in used and (m == "tokens_per_s" or not rate.search(h))]

    for m in missing:  # names that say what they hold first, so a near name elsewhere cannot take them
        hint = _HINTS.get(m)
        named = [h for h in free(m) if hint is not None and hint.search(h)]
        if named:
            out[m] = named[0]
            used.add(named[0])
    for m in missing:
        if not out[m]:
            out[m] = (difflib.get_close_matches(m, free(m), n=1, cutoff=0.4) or [""])[0]
            if out[m]:
                used.add(out[m])
    return out


def _fitting(column: str, headers: list[str], sample: dict[str, list[str | None]]) -> list[str]:
    """The headers whose sampled values fit `column` (see MissingColumnsError), closest name first."""
    out = []
    for h in headers:
        values = [v.strip() for v in sample.get(h, []) if v is not None and v.strip()]
        if not values:
            continue
        try:
            numbers = [float(v) for v in values]
        except ValueError:
            continue
        if not all(math.isfinite(x) for x in numbers):  # inf or nan: no column's value
            continue
        if column in _COUNTS and not all(x >= 0 and x == int(x) for x in numbers):
            continue
        if column not in _COUNTS and not all(x > 0 for x in numbers):
            continue
        out.append(h)
    return sorted(out, key=lambda h: -difflib.SequenceMatcher(None, column, h.lower()).ratio())


def sample_columns(data: bytes, rows: int = SAMPLE_ROWS) -> dict[str, list[str | None]]:
    """The first `rows` data rows of CSV bytes, column by column (text), for telling what a column holds."""
    try:
        head = pl.read_csv(io.BytesIO(data), infer_schema_length=0, n_rows=rows, raise_if_empty=False)
    except (pl.exceptions.ComputeError, pl.exceptions.ShapeError):
        return {}
    return {c: head[c].to_list() for c in head.columns}


def missing_columns(data: bytes, given: frozenset[str] = frozenset()) -> MissingColumnsError | None:
    """Before an import: the required columns a generic CSV lacks (those `given` as context do not count), with fitting candidates."""
    headers = header_of(data)
    cols = auto_mapping(headers)
    missing = [c for c in REQUIRED if c not in cols and c not in given]
    return MissingColumnsError(missing, headers, sample_columns(data), frozenset(cols.values())) if missing else None


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


def read_generic(data: bytes, mapping: dict[str, str] | None = None, given: frozenset[str] = frozenset()) -> Extract:
    """The generic CSV as an Extract; MissingColumnsError when required columns cannot be found.

    A required column `given` as context (batch, input or output tokens typed on the page or passed on the
    command line) need not be in the file: the context fills it for every row.
    """
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
    missing = [c for c in REQUIRED if c not in cols and c not in given]
    if missing:
        raise MissingColumnsError(missing, headers, sample_columns(data), frozenset(cols.values()))
    try:
        raw = pl.read_csv(io.BytesIO(data), infer_schema_length=0, columns=sorted(set(cols.values())), raise_if_empty=False)
    except (pl.exceptions.ComputeError, pl.exceptions.ShapeError) as exc:
        raise FormatError(f"not a well-formed CSV: {str(exc).splitlines()[0]}") from exc
    notes: list[str] = []
    inferred: dict[str, str] = {}
    if "phase" not in cols and "phase" not in given:
        phase, reason = infer_phase(headers, cols, sample_columns(data))
        inferred["phase"] = phase
        notes.append(phase_note(phase, reason))
    frame = raw.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("row"),
        *[(pl.col(cols[c]) if c in cols else pl.lit(inferred.get(c), dtype=pl.String)).alias(c) for c in CANONICAL],
    )
    scale: dict[str, float] = {c: time_scale(cols[c]) for c in ("ttft_s", "tpot_s") if c in cols}
    sources = {c: cols[c] for c in cols}
    if inferred:
        sources["phase"] = "phase (no column: inferred from the columns)"
    return Extract("generic-csv", frame, sources, scale, "row", notes)


def one_row_csv(*, ttft_ms: float | None, tpot_ms: float | None, **values: object) -> bytes:
    """One measurement written as the generic CSV (the page's typed measurement goes through the same reader and checks as a file)."""
    row = {**{k: v for k, v in values.items() if k in CANONICAL}, "ttft_ms": ttft_ms, "tpot_ms": tpot_ms}
    unknown = set(values) - set(CANONICAL)
    if unknown:
        raise ValueError(f"not measurement columns: {', '.join(sorted(unknown))}")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(list(row))
    writer.writerow(["" if v is None else v for v in row.values()])
    return buf.getvalue().encode("utf-8")
