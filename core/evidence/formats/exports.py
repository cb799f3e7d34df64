"""Profile exports (genai-perf, AIPerf, AIPerf's per-request records), llama.cpp llama-bench and optimum-benchmark reports."""

from __future__ import annotations

import csv
import io
import re
from pathlib import PurePath
from typing import Any

from core.evidence.formats import (
    Extract,
    FormatError,
    Getter,
    ask,
    dig,
    from_records,
    number,
    request_summary,
    request_summary_spec,
    require,
    rounded,
)

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
    model: tuple[str, Getter]
    batch: tuple[str, Getter]
    if fmt == "aiperf-json":
        model = ("input_config.models.items[].name or endpoint.model_names", _aiperf_model)
        batch = ("input_config.phases[type concurrency].concurrency or loadgen.concurrency", _aiperf_concurrency)
    else:
        model = ("input_config.model", lambda r: _first(dig(r, "input_config", "model")))
        batch = ("input_config.concurrency", lambda r: dig(r, "input_config", "concurrency"))
    spec: dict[str, tuple[str, Getter]] = {
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


def _aiperf_phases(cfg: Any) -> list[dict[str, Any]]:
    """The phases of AIPerf's v2 config (`BenchmarkConfig.phases`): a list of phase objects, or a dict name -> phase."""
    phases = cfg.get("phases") if isinstance(cfg, dict) else None
    if isinstance(phases, dict):
        phases = [p | {"name": p.get("name", name)} for name, p in phases.items() if isinstance(p, dict)]
    return [p for p in phases if isinstance(p, dict)] if isinstance(phases, list) else []


def _aiperf_concurrency(r: dict[str, Any]) -> Any:
    """Newer AIPerf: the profiling phase's `concurrency` (warmup phases left out); older: `loadgen.concurrency`."""
    cfg = r.get("input_config")
    measured = [p for p in _aiperf_phases(cfg) if p.get("kind") != "warmup" and not p.get("exclude_from_results")]
    with_c = [p for p in measured if p.get("concurrency") is not None]
    pick = next((p for p in with_c if p.get("type") == "concurrency"), with_c[0] if with_c else None)
    if pick is not None:
        return pick["concurrency"]
    return dig(r, "input_config", "loadgen", "concurrency")


def _aiperf_model(r: dict[str, Any]) -> Any:
    """Newer AIPerf: `models.items[0].name` (ModelsAdvanced) or `models` as names; older: `endpoint.model_names`."""
    models = dig(r, "input_config", "models")
    items = models.get("items") if isinstance(models, dict) else models
    if isinstance(items, list) and items:
        first = items[0]
        return first.get("name") if isinstance(first, dict) else first
    return _first(dig(r, "input_config", "endpoint", "model_names"))


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
        if col in ("input_tokens", "output_tokens"):  # an average length (253.80): rounded as the JSON path does
            values[col] = rounded(_float_or_text(values[col]))
        sources[col] = f"{row[0]} ({stat})"
        if col in ("ttft_s", "tpot_s"):
            scale[col] = _unit_scale(unit, row[0])
    if "tokens_per_s" not in values:
        raise FormatError("no 'Output Token Throughput' metric: not a genai-perf/AIPerf CSV export?", column="Metric")
    rec = {**values, "phase": "mixed"}
    spec: dict[str, tuple[str, Getter]] = {c: (sources.get(c, "(serving run)"), _getter(c)) for c in [*values, "phase"]}
    return from_records(fmt, [rec], spec, scale=scale, notes=["the CSV export holds no model or concurrency: give them as context"])


def _float_or_text(value: str) -> Any:
    try:
        return float(value)
    except ValueError:
        return value


def _getter(column: str) -> Getter:
    return lambda r: r.get(column)


# -- llama.cpp llama-bench ----------------------------------------------------------

#: llama.cpp's file types as llama-bench's model_type prints them ("llama 7B Q4_K - Medium", "IQ4_XS - 4.25 bpw", "MXFP4 MoE")
#: -> the storage formats of core.catalogue.precisions; a type not listed reads as the nearest family (q4 -> int4, q8 -> int8)
GGUF_TYPES = (
    (r"q8_0", "q8_0"),
    (r"q6_k", "q6_k"),
    (r"q5_k\s*-\s*medium|q5_k_m", "q5_k_m"),
    (r"q5_k\s*-\s*small|q5_k_s", "q5_k_s"),
    (r"q4_k\s*-\s*medium|q4_k_m", "q4_k_m"),
    (r"q4_k\s*-\s*small|q4_k_s", "q4_k_s"),
    (r"q4_0", "q4_0"),
    (r"q3_k\s*-\s*medium|q3_k_m", "q3_k_m"),
    (r"q2_k", "q2_k"),
    (r"iq4_xs", "iq4_xs"),
    (r"mxfp4", "mxfp4"),
)
GGML_WEIGHTS = (("bf16", "bf16"), ("f16", "fp16"), ("f32", "fp32"), ("q8", "int8"), ("q4", "int4"), ("mxfp4", "mxfp4"))
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
        exact = next((w for key, w in GGUF_TYPES if re.search(rf"\b(?:{key})\b", t)), None)
        return exact or next((w for key, w in GGML_WEIGHTS if re.search(rf"\b{key}", t)), None)

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
        "input_tokens": ("n_prompt", lambda r: r["n_prompt"]),
        "output_tokens": ("n_gen", lambda r: r["n_gen"]),
        "model_bytes": ("model_size", lambda r: r.get("model_size")),
        # the KV cache filled before the test (`-d`, written as n_depth): a prompt prefilled over it,
        # generation at that depth
        "depth": ("n_depth", lambda r: r.get("n_depth")),
        "tokens_per_s": ("avg_ts", lambda r: r["avg_ts"]),
        "ttft_s": ("avg_ns", lambda r: seconds(r) if phase(r) == "prefill" else None),
        "tpot_s": (
            "avg_ns / n_gen",
            lambda r: seconds(r) / num(r["n_gen"]) if phase(r) == "decode" and seconds(r) and num(r["n_gen"]) else None,
        ),
    }
    notes = [
        "llama-bench runs one sequence (batch 1) on one device unless told; weights read from model_type (Q4_K - Medium -> q4_k_m, "
        "Q8_0 -> q8_0 ...); the ceiling uses the file's own size (model_size) where the file gives it"
    ]
    return from_records(fmt, records, spec, notes=notes, rows=rows)


# -- optimum-benchmark -----------------------------------------------------------------


def _prefill_tokens_per_s(report: dict[str, Any], base: dict[str, Any], row: int) -> Any:
    """Prompt tokens/s of the prefill target: its throughput in tokens/s, or in samples/s (prompts) x sequence_length.

    optimum-benchmark wrote the prefill throughput in tokens/s until late 2024
    and in samples/s since (`PREFILL_THROUGHPUT_UNIT`, the prefill volume is
    `input_shapes.batch_size` prompts); `throughput.unit` says which.
    """
    value, unit = dig(report, "prefill", "throughput", "value"), dig(report, "prefill", "throughput", "unit")
    key = str(unit or "tokens/s").strip().lower()
    if key == "tokens/s":
        return value
    if key != "samples/s":
        raise FormatError(
            f"unknown prefill throughput unit {unit!r} (tokens/s or samples/s)", row=row, column="report.prefill.throughput.unit"
        )
    length = number(base["input_tokens"])
    if length is None:
        raise FormatError(
            "prefill throughput is in samples/s and the config holds no sequence_length to turn it into tokens/s",
            row=row,
            column="config.scenario.input_shapes.sequence_length",
        )
    v = number(value)
    return v * length if v is not None else value


def optimum_benchmark(records: list[dict[str, Any]], context: dict[str, Any] | None = None) -> Extract:
    """optimum-benchmark `benchmark.json` ({config, report}) or `benchmark_report.json` (the report alone).

    The report has a prefill and a decode target, each with `throughput`
    ({unit, value}) and `latency` ({unit: "s", mean, ...}). The report alone
    holds no config: the scenario (accelerator, model, batch, lengths) comes
    from the context, and a prefill throughput in samples/s is turned into
    tokens/s with the context's input tokens (the context's value, where
    given, replaces the config's as it does in validation). A CSV row
    (`optimum_benchmark_csv`) holds its numbers as text: they are read as
    numbers here.
    """
    fmt = "optimum-benchmark"
    ctx = context or {}
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
        length = ctx.get("input_tokens") if ctx.get("input_tokens") is not None else _as_number(base["input_tokens"])
        volume = {**base, "input_tokens": length}  # what turns samples/s into tokens/s
        prefill = dig(report, "prefill", "throughput")
        prefill = prefill if isinstance(prefill, dict) and prefill else None
        per_sample = prefill is not None and str(prefill.get("unit")).strip().lower() == "samples/s"
        if prefill is not None and per_sample and number(length) is None and prefill.get("value") is not None:
            raise FormatError(
                ask("prefill throughput is in samples/s and the file holds no sequence_length to turn it into tokens/s", "input_tokens"),
                row=i,
                column="config.scenario.input_shapes.sequence_length",
            )
        if prefill is not None:  # a CSV cell holds the value as text
            report = {**report, "prefill": {**report["prefill"], "throughput": {**prefill, "value": _as_number(prefill.get("value"))}}}
        if dig(report, "prefill", "throughput", "value") is not None:
            rows.append(
                {
                    **base,
                    "phase": "prefill",
                    "tps": _prefill_tokens_per_s(report, volume, i),
                    "ttft": dig(report, "prefill", "latency", "mean"),
                }
            )
            numbers.append(i)
        tpot = dig(report, "per_token", "latency", "mean")
        rows.append({**base, "phase": "decode", "tps": dig(report, "decode", "throughput", "value"), "tpot": tpot})
        numbers.append(i)
    spec: dict[str, tuple[str, Getter]] = {
        "gpu": ("config.environment.gpu", lambda r: r["gpu"]),
        "model": ("config.backend.model", lambda r: r["model"]),
        "weights": ("config.backend.torch_dtype", lambda r: r["weights"]),
        "phase": ("report.prefill / report.decode", lambda r: r["phase"]),
        "batch": ("config.scenario.input_shapes.batch_size", lambda r: r["batch"]),
        "input_tokens": ("config.scenario.input_shapes.sequence_length", lambda r: r["input_tokens"]),
        "output_tokens": ("config.scenario.generate_kwargs.max_new_tokens", lambda r: r["output_tokens"]),
        "tokens_per_s": ("report.<target>.throughput.value (prefill samples/s x sequence_length)", lambda r: r["tps"]),
        "ttft_s": ("report.prefill.latency.mean", lambda r: r.get("ttft")),
        "tpot_s": ("report.per_token.latency.mean", lambda r: r.get("tpot")),
    }
    return from_records(fmt, rows, spec, rows=numbers)


def _as_number(value: Any) -> Any:
    """A count written as text (a CSV cell "256") as a number; anything else unchanged."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    return value


# -- AIPerf per-request records ---------------------------------------------------------------

_AIPERF_MS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}


def _seconds(metric: Any, field: str, row: int) -> float | None:
    """A `{"value": x, "unit": "ms"}` MetricValue in seconds (None when absent)."""
    if not isinstance(metric, dict) or metric.get("value") is None:
        return None
    v = number(metric["value"])
    unit = str(metric.get("unit") or "ms").strip().lower()
    if v is None or unit not in _AIPERF_MS:
        raise FormatError(f"{metric.get('value')!r} {metric.get('unit')!r} is not a time", row=row, column=f"metrics.{field}")
    return v * _AIPERF_MS[unit]


def aiperf_records(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """AIPerf `profile_export.jsonl` (`--export-level records`): one `MetricRecordInfo` per request, aggregated to one measurement.

    Each line is {metadata: {request_start_ns, request_end_ns, benchmark_phase, ...},
    metrics: {input_sequence_length, output_sequence_length, time_to_first_token,
    inter_token_latency, ...: {value, unit}}, error}. Profiling requests without
    error count; tokens/s = their output tokens / (last end - first start).
    The file holds no concurrency: the batch comes from the context.
    """
    fmt = "aiperf-records"
    ok: list[tuple[int, dict[str, Any]]] = []
    for i, r in enumerate(records, 1):
        require(r, fmt, ("metadata", "request_start_ns"), ("metadata", "request_end_ns"), ("metrics",), row=i)
        if r.get("error") is None and dig(r, "metadata", "benchmark_phase") in (None, "profiling") and isinstance(r["metrics"], dict):
            ok.append((i, r))
    if not ok:
        raise FormatError(f"none of the {len(records)} records is a profiling request without error: no measurement", column="error")
    if context.get("batch") is None:
        raise FormatError(ask("AIPerf's per-request records hold no concurrency", "batch"), column="metadata")
    isl: list[float] = []
    osl: list[float] = []
    ttft: list[float] = []
    itl: list[float] = []
    start: list[float] = []
    end: list[float] = []
    for i, r in ok:
        m = r["metrics"]
        for field, into in (("input_sequence_length", isl), ("output_sequence_length", osl)):
            v = number(dig(m, field, "value"))
            if v is None:
                raise FormatError(f"not a token count: {str(dig(m, field, 'value'))[:40]!r}", row=i, column=f"metrics.{field}")
            into.append(v)
        for field, into in (("time_to_first_token", ttft), ("inter_token_latency", itl)):
            t = _seconds(m.get(field), field, i)
            if t is not None:
                into.append(t)
        for field, into in (("request_start_ns", start), ("request_end_ns", end)):
            v = number(dig(r, "metadata", field))
            if v is None:
                raise FormatError("not a timestamp in ns", row=i, column=f"metadata.{field}")
            into.append(v)
    window = (max(end) - min(start)) / 1e9
    rec: dict[str, Any] = {
        "input": rounded(sum(isl) / len(isl)),
        "output": rounded(sum(osl) / len(osl)),
        "tps": sum(osl) / window if window > 0 else f"{sum(osl)} tokens / {window} s",
        **request_summary(ttft, itl, len(ok)),
    }
    spec: dict[str, tuple[str, Getter]] = {
        "phase": ("(serving run)", lambda r: "mixed"),
        "input_tokens": ("metrics.input_sequence_length (mean)", lambda r: r["input"]),
        "output_tokens": ("metrics.output_sequence_length (mean)", lambda r: r["output"]),
        "tokens_per_s": ("sum output_sequence_length / (last request_end_ns - first request_start_ns)", lambda r: r["tps"]),
        **request_summary_spec("metrics.time_to_first_token", "metrics.inter_token_latency", "(profiling requests without error)"),
    }
    notes = [f"{len(ok)} of {len(records)} records aggregated (profiling, no error) into one measurement"]
    return from_records(fmt, [rec], spec, notes=notes)
