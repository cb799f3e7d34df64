"""Serving and engine benchmarks: vLLM, SGLang, TensorRT-LLM, llmperf.

Field names are those the tools' own writing code uses (see
tests/fixtures/README.md for the file and function each comes from).
"""

from __future__ import annotations

from typing import Any

from core.evidence.bench_commands import read_tag
from core.evidence.formats import Extract, FormatError, Getter, dig, from_records, ratio, require, rounded

MS = 1e-3


def vllm_serve(records: list[dict[str, Any]], fmt: str = "vllm-serve") -> Extract:
    """`vllm bench serve --save-result` / benchmark_serving.py: one object per run, serving throughput."""
    notes = []
    for i, r in enumerate(records, 1):
        require(r, fmt, ("output_throughput",), ("completed",), ("total_input_tokens",), ("total_output_tokens",), row=i)
        if r.get("max_concurrency") is None:
            notes.append(f"record {i}: no max_concurrency (request rate {r.get('request_rate')}): batch taken as num_prompts")
    spec = {
        # `--metadata KEY=VALUE` lands as top-level keys (vllm/benchmarks/serve.py); the bench command writes these
        "gpu": ("gpu (--metadata)", lambda r: r.get("gpu")),
        "num_gpus": ("num_gpus (--metadata)", lambda r: r.get("num_gpus")),
        "weights": ("weights (--metadata)", lambda r: r.get("weights")),
        "kv": ("kv (--metadata)", lambda r: r.get("kv")),
        "model": ("model (--metadata) or model_id", lambda r: r.get("model") or r.get("model_id")),
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": ("max_concurrency", lambda r: r["max_concurrency"] if r.get("max_concurrency") is not None else r.get("num_prompts")),
        "input_tokens": ("total_input_tokens / completed", lambda r: rounded(ratio(r["total_input_tokens"], r["completed"]))),
        "output_tokens": ("total_output_tokens / completed", lambda r: rounded(ratio(r["total_output_tokens"], r["completed"]))),
        "tokens_per_s": ("output_throughput", lambda r: r["output_throughput"]),
        "ttft_s": ("mean_ttft_ms", lambda r: r.get("mean_ttft_ms")),
        "tpot_s": ("mean_tpot_ms", lambda r: r.get("mean_tpot_ms")),
    }
    return from_records(fmt, records, spec, scale={"ttft_s": MS, "tpot_s": MS}, notes=notes)


def vllm_throughput(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """`vllm bench throughput --output-json`: total (prompt + output) tokens/s of an offline run.

    The file holds no lengths: the output share of tokens_per_second needs the
    input and output lengths from the context (output / (input + output)).
    """
    fmt = "vllm-throughput"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("tokens_per_second",), ("num_requests",), ("elapsed_time",), row=i)
    lin, lout = context.get("input_tokens"), context.get("output_tokens")
    if lin is None or lout is None:
        raise FormatError(
            "vllm bench throughput JSON has no input/output lengths: give them (--input-tokens and --output-tokens)",
            column="tokens_per_second",
        )
    share = lout / (lin + lout) if lin + lout else 0.0

    def out_tps(r: dict[str, Any]) -> Any:
        v = r["tokens_per_second"]
        return v * share if isinstance(v, int | float) and not isinstance(v, bool) else v

    spec = {
        "phase": ("(offline run)", lambda r: "mixed"),
        "batch": ("num_requests", lambda r: r["num_requests"]),
        "tokens_per_s": ("tokens_per_second", out_tps),
    }
    note = f"output tokens/s = tokens_per_second x {lout} / ({lin} + {lout}); batch = num_requests unless given"
    return from_records(fmt, records, spec, notes=[note])


def sglang_serving(records: list[dict[str, Any]]) -> Extract:
    """`python -m sglang.bench_serving --output-file`: one JSON line per run."""
    fmt = "sglang-serving"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("output_throughput",), ("completed",), ("total_input_tokens",), ("total_output_tokens",), row=i)

    def batch(r: dict[str, Any]) -> Any:
        if r.get("max_concurrency") is not None:
            return r["max_concurrency"]
        c = r.get("concurrency")
        return round(c) if isinstance(c, int | float) and not isinstance(c, bool) and c >= 0.5 else c

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
    }
    return from_records(fmt, records, spec, scale={"ttft_s": MS, "tpot_s": MS})


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
        return max(1, round(c)) if isinstance(c, int | float) and not isinstance(c, bool) and c > 0 else c

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
