"""Profile exports (genai-perf, AIPerf), llama.cpp llama-bench and optimum-benchmark reports."""

from __future__ import annotations

import csv
import io
import re
from pathlib import PurePath
from typing import Any

from core.evidence.formats import Extract, FormatError, Getter, dig, from_records, require, rounded

_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}


def _unit_scale(unit: Any, column: str) -> float:
    key = str(unit or "ms").strip().lower()
    if key not in _TIME_UNITS:
        raise FormatError(f"unknown time unit {unit!r}", column=column)
    return _TIME_UNITS[key]


def profile_json(records: list[dict[str, Any]], fmt: str) -> Extract:
    """genai-perf `*_genai_perf.json` and AIPerf `profile_export_aiperf.json`: one metric object per name.

    genai-perf writes the metrics at the top level next to `input_config`;
    AIPerf writes them under `records`. Each metric has `unit` and `avg`.
    """
    metrics = [r.get("records", r) if isinstance(r.get("records"), dict) else r for r in records]
    for i, m in enumerate(metrics, 1):
        require(m, fmt, ("output_token_throughput", "avg"), row=i)
    m0 = metrics[0]
    scale = {
        "ttft_s": _unit_scale(dig(m0, "time_to_first_token", "unit"), "time_to_first_token.unit"),
        "tpot_s": _unit_scale(dig(m0, "inter_token_latency", "unit"), "inter_token_latency.unit"),
    }
    if fmt == "aiperf-json":
        model = ("input_config.endpoint.model_names", lambda r: _first(dig(r, "input_config", "endpoint", "model_names")))
        batch = ("input_config.loadgen.concurrency", lambda r: dig(r, "input_config", "loadgen", "concurrency"))
    else:
        model = ("input_config.model", lambda r: _first(dig(r, "input_config", "model")))
        batch = ("input_config.concurrency", lambda r: dig(r, "input_config", "concurrency"))
    spec = {
        "model": model,
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": batch,
        "input_tokens": ("input_sequence_length.avg", lambda r: rounded(dig(_m(r), "input_sequence_length", "avg"))),
        "output_tokens": ("output_sequence_length.avg", lambda r: rounded(dig(_m(r), "output_sequence_length", "avg"))),
        "tokens_per_s": ("output_token_throughput.avg", lambda r: dig(_m(r), "output_token_throughput", "avg")),
        "ttft_s": ("time_to_first_token.avg", lambda r: dig(_m(r), "time_to_first_token", "avg")),
        "tpot_s": ("inter_token_latency.avg", lambda r: dig(_m(r), "inter_token_latency", "avg")),
    }
    return from_records(fmt, records, spec, scale=scale)


def _m(r: dict[str, Any]) -> dict[str, Any]:
    inner = r.get("records")
    return inner if isinstance(inner, dict) else r


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


_CSV_METRICS = {
    "time to first token": "ttft_s",
    "inter token latency": "tpot_s",
    "input sequence length": "input_tokens",
    "output sequence length": "output_tokens",
    "output token throughput": "tokens_per_s",
}


def profile_csv(body: str, fmt: str) -> Extract:
    """genai-perf `*_genai_perf.csv` / AIPerf `profile_export_aiperf.csv`: `Metric,avg,...` then `Metric,Value`.

    Metric names carry their unit in parentheses ("Time To First Token (ms)");
    genai-perf formats numbers with thousands separators ("1,234.56").
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    scale: dict[str, float] = {}
    header: list[str] = []
    for row in csv.reader(io.StringIO(body)):
        if not row:
            continue
        if row[0].strip() == "Metric":
            header = [h.strip().lower() for h in row]
            continue
        m = re.match(r"^(.*?)\s*(?:\((.*)\))?$", row[0].strip())
        if not m or not header:
            continue
        name, unit = m.group(1).strip().lower(), m.group(2)
        col = _CSV_METRICS.get(name)
        if col is None:
            continue
        stat = "avg" if "avg" in header else "value"
        if stat not in header or len(row) <= header.index(stat):
            raise FormatError(f"metric {row[0]!r} has no {stat} value", column=row[0])
        values[col] = row[header.index(stat)].replace(",", "").strip()
        sources[col] = f"{row[0]} ({stat})"
        if col in ("ttft_s", "tpot_s"):
            scale[col] = _unit_scale(unit, row[0])
    if "tokens_per_s" not in values:
        raise FormatError("no 'Output Token Throughput' metric: not a genai-perf/AIPerf CSV export?", column="Metric")
    rec = {**values, "phase": "mixed"}
    spec: dict[str, tuple[str, Getter]] = {c: (sources.get(c, "(serving run)"), _getter(c)) for c in [*values, "phase"]}
    return from_records(fmt, [rec], spec, scale=scale, notes=["the CSV export holds no model or concurrency: give them as context"])


def _getter(column: str) -> Getter:
    return lambda r: r.get(column)


# -- llama.cpp llama-bench ----------------------------------------------------------

_GGML_WEIGHTS = (("bf16", "bf16"), ("f16", "fp16"), ("f32", "fp32"), ("q8", "int8"), ("q4", "int4"), ("mxfp4", "mxfp4"))
_GGML_KV = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "q8_0": "int8", "q4_0": "int4", "q4_1": "int4"}


def llama_bench(records: list[dict[str, Any]], rows: list[int] | None = None) -> Extract:
    """llama-bench `-o json|jsonl|csv`: one test per object (pp = prompt processing, tg = generation)."""
    fmt = "llama-bench"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("avg_ts",), ("n_prompt",), ("n_gen",), row=i)

    def num(v: Any) -> Any:
        try:
            return float(v)
        except (TypeError, ValueError):
            return None

    def phase(r: dict[str, Any]) -> str:
        p, g = num(r["n_prompt"]) or 0, num(r["n_gen"]) or 0
        return "prefill" if g == 0 else "decode" if p == 0 else "mixed"

    def weights(r: dict[str, Any]) -> Any:
        t = str(r.get("model_type") or "").lower()
        return next((w for key, w in _GGML_WEIGHTS if re.search(rf"\b{key}", t)), None)

    def seconds(r: dict[str, Any]) -> Any:
        ns = num(r.get("avg_ns"))
        return None if ns is None else ns / 1e9

    spec = {
        "gpu": ("gpu_info", lambda r: str(r.get("gpu_info") or "").split(",")[0] or None),
        "model": ("model_filename", lambda r: PurePath(str(r.get("model_filename") or "")).name or r.get("model_type")),
        "weights": ("model_type", weights),
        "kv": ("type_k", lambda r: _GGML_KV.get(str(r.get("type_k")).lower(), r.get("type_k"))),
        "phase": ("n_prompt / n_gen", phase),
        "batch": ("(one sequence)", lambda r: 1),
        "input_tokens": (
            "n_prompt + n_depth",
            lambda r: (num(r["n_prompt"]) or 0) + (num(r.get("n_depth")) or 0) if phase(r) != "decode" else num(r.get("n_depth")) or 0,
        ),
        "output_tokens": ("n_gen", lambda r: r["n_gen"]),
        "tokens_per_s": ("avg_ts", lambda r: r["avg_ts"]),
        "ttft_s": ("avg_ns", lambda r: seconds(r) if phase(r) == "prefill" else None),
        "tpot_s": (
            "avg_ns / n_gen",
            lambda r: seconds(r) / num(r["n_gen"]) if phase(r) == "decode" and seconds(r) and num(r["n_gen"]) else None,
        ),
    }
    notes = ["llama-bench runs one sequence (batch 1) on one device unless told; weights read from model_type (Q4 -> int4, Q8 -> int8)"]
    return from_records(fmt, records, spec, notes=notes, rows=rows)


# -- optimum-benchmark -----------------------------------------------------------------


def optimum_benchmark(records: list[dict[str, Any]]) -> Extract:
    """optimum-benchmark `benchmark.json` ({config, report}) or `benchmark_report.json` (the report alone).

    The report has a prefill and a decode target, each with `throughput`
    ({unit, value}) and `latency` ({unit: "s", mean, ...}).
    """
    fmt = "optimum-benchmark"
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    for i, r in enumerate(records, 1):
        report = r.get("report", r)
        require(report, fmt, ("decode", "throughput", "value"), row=i)
        cfg = r.get("config") or {}
        base = {
            "gpu": _first(dig(cfg, "environment", "gpu")),
            "model": dig(cfg, "backend", "model"),
            "weights": {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}.get(str(dig(cfg, "backend", "torch_dtype"))),
            "batch": dig(cfg, "scenario", "input_shapes", "batch_size"),
            "input_tokens": dig(cfg, "scenario", "input_shapes", "sequence_length"),
            "output_tokens": dig(cfg, "scenario", "generate_kwargs", "max_new_tokens"),
        }
        if dig(report, "prefill", "throughput", "value") is not None:
            rows.append(
                {
                    **base,
                    "phase": "prefill",
                    "tps": dig(report, "prefill", "throughput", "value"),
                    "ttft": dig(report, "prefill", "latency", "mean"),
                }
            )
            numbers.append(i)
        tpot = dig(report, "per_token", "latency", "mean")
        rows.append({**base, "phase": "decode", "tps": dig(report, "decode", "throughput", "value"), "tpot": tpot})
        numbers.append(i)
    spec = {
        "gpu": ("config.environment.gpu", lambda r: r["gpu"]),
        "model": ("config.backend.model", lambda r: r["model"]),
        "weights": ("config.backend.torch_dtype", lambda r: r["weights"]),
        "phase": ("report.prefill / report.decode", lambda r: r["phase"]),
        "batch": ("config.scenario.input_shapes.batch_size", lambda r: r["batch"]),
        "input_tokens": ("config.scenario.input_shapes.sequence_length", lambda r: r["input_tokens"]),
        "output_tokens": ("config.scenario.generate_kwargs.max_new_tokens", lambda r: r["output_tokens"]),
        "tokens_per_s": ("report.<target>.throughput.value", lambda r: r["tps"]),
        "ttft_s": ("report.prefill.latency.mean", lambda r: r.get("ttft")),
        "tpot_s": ("report.per_token.latency.mean", lambda r: r.get("tpot")),
    }
    return from_records(fmt, rows, spec, rows=numbers)
