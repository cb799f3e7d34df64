"""Serving and engine benchmarks: vLLM, SGLang, TensorRT-LLM, llmperf.

Field names are those the tools' own writing code uses (see
tests/fixtures/README.md for the file and function each comes from).
Per-request files (llmperf's individual responses) become one measurement
per run with the requests' p50/p90/p99; vLLM's engine log becomes one
measurement per logged interval.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from core.evidence.bench_commands import read_tag
from core.evidence.formats import (
    Extract,
    FormatError,
    Getter,
    ask,
    dig,
    from_records,
    number,
    percentile,
    ratio,
    request_summary,
    request_summary_spec,
    require,
    rounded,
    value_of,
)

MS = 1e-3


def _metadata_gpus(r: dict[str, Any]) -> Any:
    """`--metadata num_gpus=N` or `tp=N` (vLLM's own help example: `--metadata version=0.3.3 tp=1`)."""
    for key in ("num_gpus", "tp", "tensor_parallel_size", "tp_size"):
        if r.get(key) is not None:
            return r[key]
    return None


def _metadata_gpu(r: dict[str, Any]) -> Any:
    return next((r[k] for k in ("gpu", "accelerator", "gpu_type") if r.get(k) is not None), None)


def _vllm_length(records: list[dict[str, Any]], fmt: str, kind: str, context: dict[str, Any]) -> tuple[str, Getter]:
    """The spec entry of the input or output length: `total_<kind>_tokens / completed`, else `random_<kind>_len`, else the context.

    Every benchmark_serving.py that saves a result writes both totals (vLLM since a4211a4d, February 2024); a file
    without one (cut down, or written by a patched copy) is still vLLM's: the refusal names this format and the
    context's field, and the file imports when the context gives the length.
    """
    total, column, drawn = f"total_{kind}_tokens", f"{kind}_tokens", f"random_{kind}_len"
    lacking = [i for i, r in enumerate(records, 1) if total not in r and r.get(drawn) is None]
    if lacking and context.get(column) is None:
        raise FormatError(ask(f"the {fmt} result holds no {total} (nor {drawn})", column), row=lacking[0], column=total)

    def length(r: dict[str, Any]) -> Any:
        if total in r:
            return rounded(ratio(r[total], r["completed"]))
        return r[drawn] if r.get(drawn) is not None else context[column]

    if all(total in r for r in records):
        return f"{total} / completed", length
    return f"{total} / completed, {drawn} or {column} (given as context)", length


def vllm_serve(records: list[dict[str, Any]], fmt: str = "vllm-serve", context: dict[str, Any] | None = None) -> Extract:
    """`vllm bench serve --save-result` / benchmark_serving.py: one object per run, serving throughput.

    `--append-result` appends each run as one more JSON line: every line is
    one measurement. `--metadata KEY=VALUE` pairs land as top-level keys
    (strings): `gpu`, `num_gpus` or `tp`, `model`, `weights`, `kv` are read.
    The median and the percentiles the run computed (`median_ttft_ms`,
    `p90_ttft_ms`, `p99_ttft_ms`, ... per `--metric-percentiles`) are kept.
    Files of February to August 2024 also write `input_throughput` (and the
    first ones `request_inthroughput`, `version`); they are told from
    SGLang's by `model_id` / `tokenizer_id` (core.evidence.formats.registry).
    """
    context = context or {}
    notes = []
    for i, r in enumerate(records, 1):
        require(r, fmt, ("output_throughput",), ("completed",), row=i)
        if r.get("max_concurrency") is None:
            notes.append(f"record {i}: no max_concurrency (request rate {r.get('request_rate')}): batch taken as num_prompts")
    lengths = {kind: _vllm_length(records, fmt, kind, context) for kind in ("input", "output")}
    spec: dict[str, tuple[str, Getter]] = {
        # `--metadata KEY=VALUE` lands as top-level keys (vllm/benchmarks/serve.py); the bench command writes these
        "gpu": ("gpu (--metadata)", _metadata_gpu),
        "num_gpus": ("num_gpus or tp (--metadata)", _metadata_gpus),
        "weights": ("weights (--metadata)", lambda r: r.get("weights")),
        "kv": ("kv (--metadata)", lambda r: r.get("kv")),
        "model": ("model (--metadata) or model_id", lambda r: r.get("model") or r.get("model_id")),
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": ("max_concurrency", lambda r: r["max_concurrency"] if r.get("max_concurrency") is not None else r.get("num_prompts")),
        "input_tokens": lengths["input"],
        "output_tokens": lengths["output"],
        "tokens_per_s": ("output_throughput", lambda r: r["output_throughput"]),
        "ttft_s": ("mean_ttft_ms", lambda r: r.get("mean_ttft_ms")),
        "tpot_s": ("mean_tpot_ms", lambda r: r.get("mean_tpot_ms")),
        "requests": ("completed", lambda r: r["completed"]),
    }
    scale = {"ttft_s": MS, "tpot_s": MS}
    for kind in ("ttft", "tpot"):
        for q, field in ((50, f"median_{kind}_ms"), (90, f"p90_{kind}_ms"), (99, f"p99_{kind}_ms")):
            if any(r.get(field) is not None for r in records):
                spec[f"{kind}_p{q}_s"] = (field, value_of(field))
                scale[f"{kind}_p{q}_s"] = MS
    return from_records(fmt, records, spec, scale=scale, notes=notes)


def vllm_throughput(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """`vllm bench throughput --output-json`: total (prompt + output) tokens/s of an offline run.

    The file holds no lengths: the output share of tokens_per_second needs the
    input and output lengths from the context (output / (input + output)).
    `num_requests` is the number of prompts (`--num-prompts`), not the batch:
    the engine runs as many at once as fit (up to its max_num_seqs), so the
    batch is read from `max_num_seqs` where the file holds it, else asked for.
    """
    fmt = "vllm-throughput"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("tokens_per_second",), ("num_requests",), ("elapsed_time",), row=i)
    lin, lout = context.get("input_tokens"), context.get("output_tokens")
    has_batch = context.get("batch") is not None or all(r.get("max_num_seqs") is not None for r in records)
    missing = [c for c, v in (("batch", True if has_batch else None), ("input_tokens", lin), ("output_tokens", lout)) if v is None]
    if missing:
        lacks = [w for c, w in (("batch", "batch (num_requests is the prompt count, not the batch)"),) if c in missing]
        if {"input_tokens", "output_tokens"} & set(missing):
            lacks.append("request lengths")
        raise FormatError(
            ask(f"vllm bench throughput JSON holds no {' and no '.join(lacks)}", *missing),
            column="num_requests" if "batch" in missing else "tokens_per_second",
        )
    assert lin is not None and lout is not None
    share = lout / (lin + lout) if lin + lout else 0.0

    def out_tps(r: dict[str, Any]) -> Any:
        v = r["tokens_per_second"]
        return v * share if isinstance(v, int | float) and not isinstance(v, bool) else v

    spec = {
        "phase": ("(offline run)", lambda r: "mixed"),
        "batch": ("max_num_seqs", lambda r: r.get("max_num_seqs")),
        "tokens_per_s": ("tokens_per_second", out_tps),
        "requests": ("num_requests", lambda r: r["num_requests"]),
    }
    note = f"output tokens/s = tokens_per_second x {lout} / ({lin} + {lout}); batch = max_num_seqs or as given"
    return from_records(fmt, records, spec, notes=[note])


def vllm_latency(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """`vllm bench latency --output-json`: `avg_latency`, `latencies`, `percentiles` (seconds) of one batch run to completion.

    The file holds only the times: the batch (`--batch-size`) and the lengths
    (`--input-len`, `--output-len`) come from the context. tokens/s = batch x
    output tokens / avg_latency, prefill included (phase mixed).
    """
    fmt = "vllm-latency"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("avg_latency",), ("latencies",), row=i)
    missing = [c for c in ("batch", "input_tokens", "output_tokens") if context.get(c) is None]
    if missing:
        raise FormatError(ask("vllm bench latency JSON holds only latencies (no batch, no lengths)", *missing), column="avg_latency")
    batch, lout = context["batch"], context["output_tokens"]
    spec = {
        "phase": ("(whole batch to completion)", lambda r: "mixed"),
        "tokens_per_s": ("batch x output tokens / avg_latency", lambda r: ratio(batch * lout, r["avg_latency"])),
    }
    return from_records(fmt, records, spec, notes=[f"tokens/s = {batch} x {lout} / avg_latency (prefill included)"])


_PT_PERCENTILES = {"ttft_p50": "median_ttft_ms", "ttft_p99": "p99_ttft_ms", "tpot_p50": "median_tpot_ms", "tpot_p99": "p99_tpot_ms"}
_PT_SERVE = ("median_ttft_ms", "mean_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms")


def vllm_pytorch(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """`*.pytorch.json` (SAVE_TO_PYTORCH_BENCHMARK_FORMAT=1): one record per metric of a latency, throughput or serve run.

    Each record is {benchmark: {name, extra_info: {args}}, model: {name},
    metric: {name, benchmark_values, extra_info}}; the run's CLI args
    (`batch_size`, `input_len`, `output_len`, `max_num_seqs`,
    `tensor_parallel_size`) say its scenario. Records of one run (same args
    and extra_info) become one measurement.
    """
    fmt = "vllm-pytorch"
    runs: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(records, 1):
        require(r, fmt, ("benchmark", "extra_info", "args"), ("metric", "name"), ("metric", "benchmark_values"), row=i)
        args = dig(r, "benchmark", "extra_info", "args") or {}
        info = dig(r, "metric", "extra_info") or {}
        for field_name, value in (("benchmark.extra_info.args", args), ("metric.extra_info", info)):
            if not isinstance(value, dict):
                raise FormatError(
                    f"{field_name} is a {type(value).__name__}, not an object of the run's settings", row=i, column=field_name
                )
        key = json.dumps([args, info], sort_keys=True, default=str)
        run = runs.setdefault(key, {"_row": i, "_args": args, "_info": info, "_model": dig(r, "model", "name"), "_metrics": {}})
        values = dig(r, "metric", "benchmark_values")
        run["_metrics"][str(dig(r, "metric", "name"))] = values[0] if isinstance(values, list) and len(values) == 1 else values
    rows = list(runs.values())
    out: list[dict[str, Any]] = []
    for run in rows:
        args, info, metrics = run["_args"], run["_info"], run["_metrics"]
        lin = args.get("input_len") if args.get("input_len") is not None else context.get("input_tokens")
        lout = args.get("output_len") if args.get("output_len") is not None else context.get("output_tokens")
        rec: dict[str, Any] = {"row": run["_row"], "model": run["_model"], "num_gpus": args.get("tensor_parallel_size")}
        if "latency" in metrics:
            batch = args.get("batch_size") if args.get("batch_size") is not None else context.get("batch")
            rec |= {"kind": "latency", "batch": batch, "input": lin, "output": lout}
            if batch is None or lout is None:
                raise FormatError(ask("the latency run's args hold no batch_size or output_len", "batch", "output_tokens"), row=run["_row"])
            n_batch, n_out = number(batch), number(lout)
            rec["tps"] = (
                ratio(n_batch * n_out, info.get("avg_latency"))
                if n_batch is not None and n_out is not None
                else (lout if n_batch is not None else batch)
            )
        elif "tokens_per_second" in metrics:
            batch = args.get("max_num_seqs") if args.get("max_num_seqs") is not None else context.get("batch")
            missing = [c for c, v in (("batch", batch), ("input_tokens", lin), ("output_tokens", lout)) if v is None]
            if missing:
                raise FormatError(
                    ask("the throughput run's args hold no max_num_seqs or lengths (num_requests is the prompt count)", *missing),
                    row=run["_row"],
                    column="metric.extra_info",
                )
            assert lin is not None and lout is not None
            total, n_in, n_out = number(metrics["tokens_per_second"]), number(lin), number(lout)
            if n_in is None or n_out is None:
                raise FormatError(f"input_len / output_len {lin!r} / {lout!r} are not numbers", row=run["_row"], column="args")
            rec |= {"kind": "throughput", "batch": batch, "input": lin, "output": lout, "requests": info.get("num_requests")}
            rec["tps"] = total * n_out / (n_in + n_out) if total is not None and n_in + n_out else metrics["tokens_per_second"]
        elif any(m in metrics for m in _PT_SERVE):
            completed = info.get("completed")
            rec |= {
                "kind": "serve",
                "gpu": _metadata_gpu(info),
                "num_gpus": _metadata_gpus(info) or args.get("tensor_parallel_size"),
                "batch": info.get("max_concurrency") if info.get("max_concurrency") is not None else info.get("num_prompts"),
                "input": rounded(ratio(info.get("total_input_tokens"), completed)),
                "output": rounded(ratio(info.get("total_output_tokens"), completed)),
                "tps": info.get("output_throughput"),
                "ttft": metrics.get("mean_ttft_ms"),
                "tpot": metrics.get("mean_tpot_ms"),
                "requests": completed,
                "ttft_p50": metrics.get("median_ttft_ms"),
                "ttft_p99": metrics.get("p99_ttft_ms"),
                "tpot_p50": metrics.get("median_tpot_ms"),
                "tpot_p99": metrics.get("p99_tpot_ms"),
            }
        else:
            raise FormatError(
                f"metric {', '.join(metrics)} is not a latency, throughput or serve metric", row=run["_row"], column="metric.name"
            )
        out.append(rec)
    ms = {r["kind"] for r in out} == {"serve"}
    spec: dict[str, tuple[str, Getter]] = {
        "gpu": ("metric.extra_info.gpu (--metadata)", lambda r: r.get("gpu")),
        "num_gpus": ("benchmark.extra_info.args.tensor_parallel_size", lambda r: r.get("num_gpus")),
        "model": ("model.name", lambda r: r.get("model")),
        "phase": ("(run)", lambda r: "mixed"),
        "batch": ("args.batch_size / args.max_num_seqs / max_concurrency", lambda r: r["batch"]),
        "input_tokens": ("args.input_len", lambda r: r["input"]),
        "output_tokens": ("args.output_len", lambda r: r["output"]),
        "tokens_per_s": ("metric latency / tokens_per_second / output_throughput", lambda r: r["tps"]),
        "ttft_s": ("mean_ttft_ms", lambda r: r.get("ttft")),
        "tpot_s": ("mean_tpot_ms", lambda r: r.get("tpot")),
        "requests": ("num_requests / completed", lambda r: r.get("requests")),
    }
    scale = {"ttft_s": MS, "tpot_s": MS}
    if ms:
        for col in _PT_PERCENTILES:
            spec[f"{col}_s"] = (_PT_PERCENTILES[col], value_of(col))
            scale[f"{col}_s"] = MS
    notes = ["latency runs: tokens/s = batch_size x output_len / avg_latency; throughput runs: the output share of tokens_per_second"]
    return from_records(fmt, out, spec, scale=scale, notes=notes, rows=[r["row"] for r in out])


def sglang_serving(records: list[dict[str, Any]]) -> Extract:
    """`python -m sglang.bench_serving --output-file`: one JSON line per run (with `--output-details`, its requests too).

    The summary's `median_*_ms` and `p99_*_ms` (TTFT, TPOT) become the p50 and
    p99 columns; `--output-details` adds per-request lists (`input_lens`,
    `output_lens`, `ttfts`, `itls`, `generated_texts`, `errors`), from which
    the TTFT p90 is taken.
    """
    fmt = "sglang-serving"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("output_throughput",), ("completed",), ("total_input_tokens",), ("total_output_tokens",), row=i)

    def batch(r: dict[str, Any]) -> Any:
        if r.get("max_concurrency") is not None:
            return r["max_concurrency"]
        c = r.get("concurrency")
        return round(c) if isinstance(c, int | float) and not isinstance(c, bool) and 0.5 <= c < math.inf else c

    def tagged(key: str) -> Getter:  # `--tag rl+gpu=...+num_gpus=...` (core.evidence.bench_commands)
        return lambda r: read_tag(r.get("tag")).get(key)

    spec = {
        "gpu": ("tag", tagged("gpu")),
        "num_gpus": ("tag", tagged("num_gpus")),
        "weights": ("tag", tagged("weights")),
        "kv": ("tag", tagged("kv")),
        "model": ("tag or model_id", lambda r: read_tag(r.get("tag")).get("model") or r.get("model_id") or r.get("model")),
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": ("max_concurrency", batch),
        "input_tokens": ("total_input_tokens / completed", lambda r: rounded(ratio(r["total_input_tokens"], r["completed"]))),
        "output_tokens": ("total_output_tokens / completed", lambda r: rounded(ratio(r["total_output_tokens"], r["completed"]))),
        "tokens_per_s": ("output_throughput", lambda r: r["output_throughput"]),
        "ttft_s": ("mean_ttft_ms", lambda r: r.get("mean_ttft_ms")),
        "tpot_s": ("mean_tpot_ms", lambda r: r.get("mean_tpot_ms")),
        "requests": ("completed", lambda r: r["completed"]),
    }
    scale = {"ttft_s": MS, "tpot_s": MS}
    notes: list[str] = []
    # the summary's median and percentiles (ms): bench_serving writes median_* and p99_* (p90_* where a version does)
    for kind in ("ttft", "tpot"):
        for q, name in ((50, f"median_{kind}_ms"), (90, f"p90_{kind}_ms"), (99, f"p99_{kind}_ms")):
            if any(r.get(name) is not None for r in records):
                spec[f"{kind}_p{q}_s"] = (name, value_of(name))
                scale[f"{kind}_p{q}_s"] = MS
    # --output-details adds the per-request `ttfts` (s) and `errors`: the TTFT p90 the summary leaves out
    if "ttft_p90_s" not in spec and any("ttfts" in r for r in records):
        p90 = {id(r): _details_ttft_p90(r, i) for i, r in enumerate(records, 1)}
        spec["ttft_p90_s"] = ("ttfts (p90 of the successful requests)", lambda r: p90[id(r)])
        notes.append("ttft p90 from the --output-details ttfts (requests whose errors entry is empty)")
    return from_records(fmt, records, spec, scale=scale, notes=notes)


def _details_ttft_p90(r: dict[str, Any], row: int) -> float | None:
    """p90 (s) of a `--output-details` record's `ttfts`, over the requests without an error; None without details."""
    ttfts = r.get("ttfts")
    if ttfts is None:
        return None
    errors = r.get("errors")
    if not isinstance(ttfts, list) or (errors is not None and (not isinstance(errors, list) or len(errors) != len(ttfts))):
        raise FormatError("ttfts (and errors) must be lists of one entry per request", row=row, column="ttfts")
    values = []
    for k, v in enumerate(ttfts):
        if errors and errors[k]:
            continue
        if number(v) is None:
            raise FormatError(f"ttfts[{k}] is not a number: {str(v)[:40]!r}", row=row, column="ttfts")
        values.append(float(v))
    return percentile(values, 90) if values else None


def sglang_one_batch(records: list[dict[str, Any]]) -> Extract:
    """`python -m sglang.bench_one_batch --result-filename`: per (batch, input, output), a prefill and a decode measurement."""
    fmt = "sglang-one-batch"
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    for i, r in enumerate(records, 1):
        require(r, fmt, ("batch_size",), ("input_len",), ("output_len",), ("prefill_throughput",), row=i)
        rows.append({**r, "_phase": "prefill", "_tps": r["prefill_throughput"], "_ttft": r.get("prefill_latency"), "_tpot": None})
        numbers.append(i)
        if "median_decode_throughput" in r:
            rows.append(
                {**r, "_phase": "decode", "_tps": r["median_decode_throughput"], "_ttft": None, "_tpot": r.get("median_decode_latency")}
            )
            numbers.append(i)
    spec = {
        "phase": ("(prefill / median decode)", lambda r: r["_phase"]),
        "batch": ("batch_size", lambda r: r["batch_size"]),
        "input_tokens": ("input_len", lambda r: r["input_len"]),
        "output_tokens": ("output_len", lambda r: r["output_len"]),
        "tokens_per_s": ("prefill_throughput / median_decode_throughput", lambda r: r["_tps"]),
        "ttft_s": ("prefill_latency", lambda r: r["_ttft"]),
        "tpot_s": ("median_decode_latency", lambda r: r["_tpot"]),
    }
    return from_records(fmt, rows, spec, rows=numbers)


_TRT_QUANT = {
    "FP8": "fp8",
    "NVFP4": "nvfp4",
    "W4A16_AWQ": "int4",
    "W4A16_GPTQ": "int4",
    "W4A16": "int4",
    "W8A16": "int8",
    "INT8": "int8",
    "MXFP4": "mxfp4",
}
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "bf16": "bf16", "fp16": "fp16", "half": "fp16"}


def trtllm_bench(records: list[dict[str, Any]]) -> Extract:
    """`trtllm-bench ... --report_json`: engine, world_info, request_info, performance, streaming_metrics."""
    fmt = "trtllm-bench"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("performance", "system_output_throughput_tok_s"), ("request_info", "avg_input_length"), row=i)

    def weights(r: dict[str, Any]) -> Any:
        q = dig(r, "engine", "quantization")
        if q:
            return _TRT_QUANT.get(str(q).upper(), q)
        return _DTYPES.get(str(dig(r, "engine", "dtype")).lower())

    def kv(r: dict[str, Any]) -> Any:
        q = dig(r, "engine", "kv_cache_dtype")
        return _TRT_QUANT.get(str(q).upper(), q) if q else _DTYPES.get(str(dig(r, "engine", "dtype")).lower())

    def concurrency(r: dict[str, Any]) -> Any:
        c = dig(r, "request_info", "avg_num_concurrent_requests")
        return max(1, round(c)) if isinstance(c, int | float) and not isinstance(c, bool) and 0 < c < math.inf else c

    spec = {
        "gpu": ("machine.name", lambda r: dig(r, "machine", "name")),
        "model": ("engine.model", lambda r: dig(r, "engine", "model")),
        "num_gpus": ("world_info.world_size", lambda r: dig(r, "world_info", "world_size")),
        "weights": ("engine.quantization", weights),
        "kv": ("engine.kv_cache_dtype", kv),
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": ("request_info.avg_num_concurrent_requests", concurrency),
        "input_tokens": ("request_info.avg_input_length", lambda r: rounded(dig(r, "request_info", "avg_input_length"))),
        "output_tokens": ("request_info.avg_output_length", lambda r: rounded(dig(r, "request_info", "avg_output_length"))),
        "tokens_per_s": ("performance.system_output_throughput_tok_s", lambda r: dig(r, "performance", "system_output_throughput_tok_s")),
        "ttft_s": ("streaming_metrics.avg_ttft_ms", lambda r: dig(r, "streaming_metrics", "avg_ttft_ms")),
        "tpot_s": ("streaming_metrics.avg_tpot_ms", lambda r: dig(r, "streaming_metrics", "avg_tpot_ms")),
    }
    notes = ["batch = average concurrent requests, rounded; input/output = average lengths (rounded)"]
    extract = from_records(fmt, records, spec, scale={"ttft_s": MS, "tpot_s": MS}, notes=notes)
    return extract


def llmperf(records: list[dict[str, Any]]) -> Extract:
    """ray-project/llmperf `*_summary.json`: the flattened `results_*` summary of one load test."""
    fmt = "llmperf"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("results_mean_output_throughput_token_per_s",), ("num_concurrent_requests",), row=i)
    spec = {
        "model": ("model", lambda r: r.get("model")),
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": ("num_concurrent_requests", lambda r: r["num_concurrent_requests"]),
        "input_tokens": (
            "results_number_input_tokens_mean",
            lambda r: rounded(r.get("results_number_input_tokens_mean", r.get("mean_input_tokens"))),
        ),
        "output_tokens": (
            "results_number_output_tokens_mean",
            lambda r: rounded(r.get("results_number_output_tokens_mean", r.get("mean_output_tokens"))),
        ),
        "tokens_per_s": ("results_mean_output_throughput_token_per_s", lambda r: r["results_mean_output_throughput_token_per_s"]),
        "ttft_s": ("results_ttft_s_mean", lambda r: r.get("results_ttft_s_mean")),
        "tpot_s": ("results_inter_token_latency_s_mean", lambda r: r.get("results_inter_token_latency_s_mean")),
    }
    return from_records(fmt, records, spec)


def llmperf_requests(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """ray-project/llmperf `*_individual_responses.json`: one metrics dict per request, aggregated to one measurement.

    The file holds per-request `ttft_s`, `inter_token_latency_s` (already per
    output token), `end_to_end_latency_s`, `number_input_tokens` and
    `number_output_tokens`, but neither the concurrency nor timestamps: the
    batch (`--num-concurrent-requests`) comes from the context and tokens/s
    = batch x sum(output tokens) / sum(end-to-end latency) (Little's law
    at a held concurrency). Failed requests (`error_code` set) are left out.
    """
    fmt = "llmperf-requests"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("end_to_end_latency_s",), ("number_output_tokens",), ("number_input_tokens",), row=i)
    ok = [r for r in records if r.get("error_code") is None and not r.get("error_msg")]
    if not ok:
        raise FormatError(f"all {len(records)} requests failed (error_code set): no measurement", column="error_code")
    if context.get("batch") is None:
        raise FormatError(ask("llmperf individual responses hold no concurrency", "batch"), column="num_concurrent_requests")
    for r in ok:
        for key in ("end_to_end_latency_s", "number_output_tokens", "number_input_tokens"):
            if number(r.get(key)) is None:
                raise FormatError(f"not a number: {str(r.get(key))[:40]!r}", row=records.index(r) + 1, column=key)
    batch = context["batch"]
    out_tokens = sum(float(r["number_output_tokens"]) for r in ok)
    e2e = sum(float(r["end_to_end_latency_s"]) for r in ok)
    ttfts = [v for v in (number(r.get("ttft_s")) for r in ok) if v is not None]
    itls = [v for v in (number(r.get("inter_token_latency_s")) for r in ok) if v is not None and v > 0]
    rec: dict[str, Any] = {
        "batch": batch,
        "input": rounded(sum(float(r["number_input_tokens"]) for r in ok) / len(ok)),
        "output": rounded(out_tokens / len(ok)),
        "tps": ratio(batch * out_tokens, e2e),
        **request_summary(ttfts, itls, len(ok)),
    }
    spec: dict[str, tuple[str, Getter]] = {
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": ("batch (given as context)", lambda r: r["batch"]),
        "input_tokens": ("number_input_tokens (mean)", lambda r: r["input"]),
        "output_tokens": ("number_output_tokens (mean)", lambda r: r["output"]),
        "tokens_per_s": ("batch x number_output_tokens / end_to_end_latency_s", lambda r: r["tps"]),
        **request_summary_spec("ttft_s", "inter_token_latency_s", "(successful requests)"),
    }
    notes = [f"{len(ok)} of {len(records)} requests aggregated (failed ones left out); tokens/s = batch x output tokens / end-to-end time"]
    return from_records(fmt, [rec], spec, notes=notes)


# -- vLLM engine log ---------------------------------------------------------------------------

#: vllm/engine/metrics.py LoggingStatLogger (V0: "... Running: N reqs, Swapped: ...") and
#: vllm/v1/metrics/loggers.py LoggingStatLogger (V1: "Engine 000: ... Running: N reqs, Waiting: ...").
_VLLM_STATS = re.compile(
    r"Avg prompt throughput: (?P<prompt>[-+\d.eE]+|nan|inf) tokens/s, "
    r"Avg generation throughput: (?P<gen>[-+\d.eE]+|nan|inf) tokens/s, "
    r"Running: (?P<running>\d+) reqs"
)
_VLLM_LOG_LINE = re.compile(
    r"^(?:\(\w+ pid=\d+\) )?(?:INFO|WARNING|DEBUG|ERROR) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.]+\.py:\d+\]", re.M
)
_VLLM_MODEL = re.compile(r"with config: model='(?P<model>[^']+)'")
_VLLM_TP = re.compile(r"tensor_parallel_size=(?P<tp>\d+)")


def looks_like_vllm_log(head: str) -> bool:
    """The first ~8 KB of a text file: a vLLM stats line, or vLLM's log line format with 'vllm' named."""
    return bool(_VLLM_STATS.search(head)) or (bool(_VLLM_LOG_LINE.search(head)) and "vllm" in head.lower())


def vllm_engine_log(body: str, context: dict[str, Any]) -> Extract:
    """A vLLM server log: one measurement per periodic stats line whose generation throughput is > 0.

    batch = the `Running: N reqs` of that interval; phase decode, or mixed
    when the same interval also had prompt throughput (prefill ran). The log
    names the model (and tensor_parallel_size) in its engine config line;
    the lengths and accelerator come from the context.
    """
    fmt = "vllm-log"
    rows: list[dict[str, Any]] = []
    mixed: list[int] = []
    model = tp = None
    for number_, line in enumerate(body.splitlines(), 1):
        if model is None and (m := _VLLM_MODEL.search(line)):
            model = m["model"]
            tp_match = _VLLM_TP.search(line)
            tp = tp_match["tp"] if tp_match else None
        m = _VLLM_STATS.search(line)
        if not m:
            continue
        gen, prompt = float(m["gen"]), float(m["prompt"])
        if not gen > 0:
            continue
        phase = "mixed" if prompt > 0 else "decode"
        if phase == "mixed":
            mixed.append(number_)
        rows.append({"line": number_, "gen": m["gen"], "running": m["running"], "phase": phase})
    if not rows:
        raise FormatError(
            "no 'Avg generation throughput: X tokens/s' line with X > 0: not a vLLM server log, or an idle one",
            column="Avg generation throughput",
        )
    missing = [c for c in ("input_tokens", "output_tokens") if context.get(c) is None]
    if missing:
        raise FormatError(ask("a vLLM log holds no request lengths", *missing), row=rows[0]["line"], column="Avg generation throughput")
    spec = {
        "model": ("engine config model=", lambda r: model),
        "num_gpus": ("engine config tensor_parallel_size=", lambda r: tp),
        "phase": ("Avg prompt throughput (0: decode)", lambda r: r["phase"]),
        "batch": ("Running: N reqs", lambda r: r["running"]),
        "tokens_per_s": ("Avg generation throughput", lambda r: r["gen"]),
    }
    decode = len(rows) - len(mixed)
    notes = [f"{len(rows)} logged intervals with generation: {decode} decode only, {len(mixed)} mixed (prompt throughput > 0 too)"]
    if mixed:
        shown = ", ".join(map(str, mixed[:10])) + (", ..." if len(mixed) > 10 else "")
        notes.append(f"mixed (prefill in the same interval) at line {shown}")
    extract = from_records(fmt, rows, spec, notes=notes, rows=[r["line"] for r in rows])
    extract.row_label = "line"
    return extract
