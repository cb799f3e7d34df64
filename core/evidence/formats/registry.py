"""Every benchmark format the importer reads: one entry each, in the order content is detected.

An entry names the format, says what it is, which files it reads (JSON
records, CSV, plain text), how its content is recognised and which reader
turns it into an Extract. A new format is one reader function in its module
and one entry here; detection, `--format`, the page's format list, its
uploader's file types and help, and the error naming the known formats all
come from this table.

Routing (core.evidence.importers): a file starting with `{` or `[` is JSON
(detected from its first record); any other file is offered to the `text`
detectors (its first ~8 KB, `TEXT_HEAD`) before CSV detection, so a log or a
summary text is read by its own reader; what no text detector claims is CSV.
"""

from __future__ import annotations

import io
from typing import Any

import polars as pl

from core.evidence.formats import (
    TEXT_HEAD,
    Extract,
    Format,
    FormatError,
    Input,
    guidellm,
    hf_bench,
    llamacpp_logs,
    lmdeploy,
    mlperf_json,
    sglang_offline,
)
from core.evidence.formats.exports import aiperf_records, llama_bench, optimum_benchmark, profile_csv, profile_json
from core.evidence.formats.generic import read_generic
from core.evidence.formats.logs import (
    inferencex,
    is_inferencex,
    is_llama_bench_md,
    is_llama_bench_sql,
    is_mlperf_results_csv,
    is_mlperf_summary,
    is_optimum_benchmark_csv,
    llama_bench_md,
    llama_bench_sql,
    mlperf_results_csv,
    mlperf_summary,
    optimum_benchmark_csv,
)
from core.evidence.formats.serving import (
    llmperf,
    llmperf_requests,
    looks_like_vllm_log,
    sglang_one_batch,
    sglang_serving,
    trtllm_bench,
    vllm_engine_log,
    vllm_latency,
    vllm_pytorch,
    vllm_serve,
    vllm_throughput,
)


def _keys(r: dict[str, Any]) -> set[str]:
    return set(r)


def _llama_bench(inp: Input) -> Extract:
    if inp.records is not None:
        return llama_bench(inp.records)
    extract = llama_bench(pl.read_csv(io.BytesIO(inp.data), infer_schema_length=0).to_dicts())
    extract.row_label = "row"
    return extract


def _records(inp: Input) -> list[dict[str, Any]]:
    assert inp.records is not None, "a JSON format reads records"
    return inp.records


#: In detection order: the first whose test accepts the content reads it (the generic CSV accepts any CSV).
FORMATS: tuple[Format, ...] = (
    *guidellm.FORMATS,
    *hf_bench.FORMATS,
    *lmdeploy.FORMATS,
    *sglang_offline.FORMATS,
    *llamacpp_logs.FORMATS,
    *mlperf_json.FORMATS,
    Format(
        "inferencex",
        "InferenceX (SemiAnalysis) result rows (agg_*.json)",
        lambda i: inferencex(_records(i), i.context),
        json=is_inferencex,
    ),
    Format(
        "aiperf-records",
        "AIPerf profile_export.jsonl (one record per request; aggregated to one measurement with p50/p90/p99)",
        lambda i: aiperf_records(_records(i), i.context),
        json=lambda r: isinstance(r.get("metadata"), dict) and "request_start_ns" in r["metadata"] and isinstance(r.get("metrics"), dict),
    ),
    Format(
        "vllm-pytorch",
        "vLLM *.pytorch.json (SAVE_TO_PYTORCH_BENCHMARK_FORMAT=1: latency, throughput or serve)",
        lambda i: vllm_pytorch(_records(i), i.context),
        json=lambda r: isinstance(r.get("metric"), dict) and "benchmark_values" in r["metric"] and isinstance(r.get("benchmark"), dict),
    ),
    Format(
        "trtllm-bench",
        "trtllm-bench ... --report_json",
        lambda i: trtllm_bench(_records(i)),
        json=lambda r: "performance" in r and ("request_info" in r or "engine" in r),
    ),
    Format(
        "optimum-benchmark",
        "optimum-benchmark benchmark.json or benchmark_report.json",
        lambda i: optimum_benchmark(_records(i), i.context),
        json=lambda r: ("report" in r and "config" in r) or ({"decode", "prefill"} <= _keys(r) and isinstance(r.get("decode"), dict)),
    ),
    Format(
        "llmperf-requests",
        "ray-project/llmperf *_individual_responses.json (aggregated to one measurement with p50/p90/p99)",
        lambda i: llmperf_requests(_records(i), i.context),
        json=lambda r: {"end_to_end_latency_s", "number_output_tokens", "ttft_s"} <= _keys(r),
    ),
    Format(
        "llmperf",
        "ray-project/llmperf *_summary.json",
        lambda i: llmperf(_records(i)),
        json=lambda r: "results_mean_output_throughput_token_per_s" in r,
    ),
    Format(
        "aiperf-json",
        "AIPerf profile_export_aiperf.json",
        lambda i: profile_json(_records(i), "aiperf-json"),
        json=lambda r: (
            (isinstance(r.get("records"), dict) and "output_token_throughput" in r["records"])
            or (
                isinstance(r.get("output_token_throughput"), dict)
                and isinstance(r.get("input_config"), dict)
                and "endpoint" in r["input_config"]
            )
        ),
    ),
    Format(
        "genai-perf-json",
        "genai-perf profile_export_genai_perf.json",
        lambda i: profile_json(_records(i), "genai-perf-json"),
        json=lambda r: isinstance(r.get("output_token_throughput"), dict),
    ),
    Format(
        "llama-bench",
        "llama.cpp llama-bench -o csv, json or jsonl",
        _llama_bench,
        json=lambda r: "avg_ts" in r and "n_gen" in r,
        csv=lambda headers: {"avg_ts", "n_prompt", "n_gen"} <= {h.lower() for h in headers},
    ),
    Format(
        "sglang-one-batch",
        "python -m sglang.bench_one_batch --result-filename JSONL",
        lambda i: sglang_one_batch(_records(i)),
        json=lambda r: "median_decode_throughput" in r or {"prefill_throughput", "batch_size"} <= _keys(r),
    ),
    Format(
        "sglang-serving",
        "python -m sglang.bench_serving --output-file JSONL (--output-details too)",
        lambda i: sglang_serving(_records(i)),
        # vLLM's benchmark_serving.py of Feb-Aug 2024 writes input_throughput too, and always tokenizer_id (SGLang: never)
        json=lambda r: "output_throughput" in r and ("mean_e2e_latency_ms" in r or "input_throughput" in r) and "tokenizer_id" not in r,
    ),
    Format(
        "vllm-serve",
        "vllm bench serve --save-result JSON",
        lambda i: vllm_serve(_records(i), "vllm-serve", i.context),
        json=lambda r: "output_throughput" in r and ("endpoint_type" in r or "label" in r),
    ),
    Format(
        "vllm-benchmark-serving",
        "benchmarks/benchmark_serving.py --save-result JSON (older vLLM)",
        lambda i: vllm_serve(_records(i), "vllm-benchmark-serving", i.context),
        json=lambda r: "output_throughput" in r,
    ),
    Format(
        "vllm-throughput",
        "vllm bench throughput --output-json",
        lambda i: vllm_throughput(_records(i), i.context),
        json=lambda r: {"tokens_per_second", "requests_per_second", "elapsed_time"} <= _keys(r),
    ),
    Format(
        "vllm-latency",
        "vllm bench latency --output-json",
        lambda i: vllm_latency(_records(i), i.context),
        json=lambda r: {"avg_latency", "latencies"} <= _keys(r),
    ),
    Format(
        "vllm-log",
        "vLLM server log (the periodic 'Avg prompt throughput ... Running: N reqs' lines)",
        lambda i: vllm_engine_log(i.text(), i.context),
        text=looks_like_vllm_log,
    ),
    Format(
        "mlperf-summary",
        "MLPerf Inference loadgen mlperf_log_summary.txt (v4.0+, LLM benchmarks)",
        lambda i: mlperf_summary(i.text(), i.context),
        text=is_mlperf_summary,
    ),
    Format(
        "llama-bench-md",
        "llama.cpp llama-bench markdown table (its default output, -o md)",
        lambda i: llama_bench_md(i.text(), i.context),
        text=is_llama_bench_md,
    ),
    Format(
        "llama-bench-sql",
        "llama.cpp llama-bench -o sql",
        lambda i: llama_bench_sql(i.text(), i.context),
        text=is_llama_bench_sql,
    ),
    Format(
        "mlperf-results",
        "MLPerf Inference results summary.csv (the submission checker's table; LLM rows)",
        lambda i: mlperf_results_csv(i.data, i.context),
        csv=is_mlperf_results_csv,
    ),
    Format(
        "optimum-benchmark-csv",
        "optimum-benchmark CSV / LLM-Perf leaderboard CSV (dot-flattened names)",
        lambda i: optimum_benchmark_csv(i.data, i.context),
        csv=is_optimum_benchmark_csv,
    ),
    Format(
        "aiperf-csv",
        "AIPerf profile_export_aiperf.csv",
        lambda i: profile_csv(i.text(), "aiperf-csv"),
        csv=lambda headers: headers[:1] == ["Metric"] and "std" in {h.lower() for h in headers},
    ),
    Format(
        "genai-perf-csv",
        "genai-perf profile_export_genai_perf.csv",
        lambda i: profile_csv(i.text(), "genai-perf-csv"),
        csv=lambda headers: headers[:1] == ["Metric"],
    ),
    Format(
        "generic-csv",
        "documented CSV, one row per measurement (see core/evidence/formats/generic.py)",
        lambda i: read_generic(i.data, i.mapping, frozenset(k for k, v in i.context.items() if v is not None)),
        csv=lambda headers: True,
    ),
)

BY_NAME: dict[str, Format] = {f.name: f for f in FORMATS}

#: The file extensions the uploader accepts (JSON, JSON lines, CSV and the text formats: logs, summaries, markdown, SQL).
UPLOAD_TYPES: tuple[str, ...] = ("csv", "json", "jsonl", "yaml", "yml", "txt", "md", "log", "sql")


def format_help() -> str:
    """A markdown list of every format the importer reads (the uploader's help), in detection order."""
    return "\n".join(f"- **{f.name}**: {f.description.replace('*', chr(92) + '*')}" for f in FORMATS)


def detect_json(record: dict[str, Any], shape: str = "object") -> Format:
    """The format of a JSON file, from its first record; FormatError saying what the file looks like otherwise.

    `shape` is how the file holds its records ("object", "list" or "jsonl"), for the message.
    """
    hit = next((f for f in FORMATS if f.json is not None and f.json(record)), None)
    if hit is None:
        raise FormatError(unknown_json(record, shape))
    return hit


def detect_text(head: str) -> Format | None:
    """The plain-text format whose detector claims a non-JSON file's first TEXT_HEAD characters; None: read it as CSV."""
    return next((f for f in FORMATS if f.text is not None and f.text(head[:TEXT_HEAD])), None)


def detect_csv(headers: list[str], first_row: list[str] | None = None) -> Format:
    """The format of a CSV file, from its header (the generic CSV when nothing else matches).

    A file that is not a table (one column whose name is no measurement column, or a first data row with another number
    of fields than the header: a log or a summary no text format claims) is refused, saying what it looks like.
    """
    hit = next(f for f in FORMATS if f.csv is not None and f.csv(headers))
    if hit.name == "generic-csv" and not _table(headers, first_row):
        raise FormatError(unknown_text(",".join(headers)))
    return hit


# -- what an unknown file looks like ----------------------------------------------------------------

#: How many of a file's fields (or columns) an unknown-file message names.
SHOWN_FIELDS = 8


def signature(fmt: Format, kind: str = "json") -> frozenset[str]:
    """The field (or CSV column) names a format's detector looks for (lower case), read from its code's constants.

    Every detector tests names the file holds ("output_throughput" in r, {"avg_ts", "n_gen"} <= keys); those names are
    the constants of its code (and of the functions it is made of), so a new entry needs no table of its own.
    """
    import re
    import types

    test = fmt.json if kind == "json" else fmt.csv
    if test is None:
        return frozenset()
    name = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")

    def names(code: types.CodeType, scope: dict[str, Any], depth: int) -> set[str]:
        out: set[str] = set()
        for c in code.co_consts:
            if isinstance(c, str) and name.match(c) and c != code.co_name:
                out.add(c.lower())
            elif isinstance(c, frozenset | tuple):
                out |= {x.lower() for x in c if isinstance(x, str) and name.match(x)}
            elif isinstance(c, types.CodeType):
                out |= names(c, scope, depth)
        for called in code.co_names:  # a detector made of the format module's own helpers (is_x(r) -> _keys_of(r) ...)
            fn = scope.get(called)
            if depth and isinstance(fn, types.FunctionType) and fn.__module__.startswith("core.evidence.formats"):
                out |= names(fn.__code__, fn.__globals__, depth - 1)
        return out

    code = getattr(test, "__code__", None)
    return frozenset(names(code, getattr(test, "__globals__", {}), 2)) if code is not None else frozenset()


def closest(fields: set[str], kind: str = "json", n: int = 3) -> list[tuple[Format, frozenset[str], frozenset[str]]]:
    """The `n` formats whose detectors' field names overlap `fields` most: (format, its field names, the shared ones)."""
    have = {f.lower() for f in fields}
    scored = []
    for order, fmt in enumerate(FORMATS):
        sig = signature(fmt, kind)
        shared = frozenset(sig & have)
        if shared:
            scored.append((-len(shared), -len(shared) / len(sig), order, fmt, sig, shared))
    scored.sort(key=lambda t: t[:3])
    return [(fmt, sig, shared) for *_, fmt, sig, shared in scored[:n]]


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_FIELDS])
    return shown + (f", ... ({len(names)} in all)" if len(names) > SHOWN_FIELDS else "")


def _closest_words(fields: set[str], kind: str) -> str:
    near = closest(fields, kind)
    if not near:
        same = [f.name for f in FORMATS if (f.json if kind == "json" else f.csv) is not None]
        what = "fields" if kind == "json" else "columns"
        return f"no known format looks for any of its {what}; the {kind.upper()} formats read: {', '.join(same)}"
    said = "; ".join(
        f"{fmt.name} (looks for {', '.join(sorted(sig))}; this file has {', '.join(sorted(shared))})" for fmt, sig, shared in near
    )
    return f"closest known: {said}"


def unknown_json(record: dict[str, Any], shape: str = "object", claimed: str | None = None) -> str:
    """The message for a JSON file no format reads: what it looks like, the closest formats by their fields.

    `claimed`: what went wrong when a format's detector took the file and its reader then found a field missing.
    """
    keys = [str(k) for k in record]
    nested = {f"{k}" for k in keys} | {str(sub) for v in record.values() if isinstance(v, dict) for sub in v}
    looks = {
        "object": "a JSON object with fields",
        "list": "a JSON list of objects, the first with fields",
        "jsonl": "JSON lines, the first with fields",
    }.get(shape, "JSON with fields")
    odd = f"; {claimed}" if claimed else ""
    return f"not a known benchmark format: {looks} {_listed(sorted(keys))}{odd}; {_closest_words(nested, 'json')}"


def unknown_text(first_line: str) -> str:
    """The message for a text file that no text format claims and that is not a table (so no column mapping is offered)."""
    line = first_line.strip()
    shown = line[:80] + ("..." if len(line) > 80 else "")
    return f"not a known benchmark format: a text file whose first line is {shown!r}, not a table of measurements (CSV)"


def unknown_csv(headers: list[str]) -> str:
    """What a CSV no specific format reads looks like, and the closest CSV formats by their columns (for the mapping step's message)."""
    return f"a CSV with columns {_listed(headers)}; {_closest_words(set(headers), 'csv')}"


def _table(headers: list[str], first_row: list[str] | None) -> bool:
    """Whether a file read as CSV is a table: two or more columns (or one named as a measurement column), rows as wide as the header."""
    from core.evidence.formats.generic import auto_mapping

    if len(headers) < 2 and not auto_mapping(headers):
        return False
    return first_row is None or len(first_row) == len(headers)
