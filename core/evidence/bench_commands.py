"""The benchmark commands that measure a scenario, and how their output imports back with no questions.

Each tool's options are written from its own argument parser (the file and
version each spelling was read at are in `TOOLS`; tests/unit/test_bench_commands.py
holds the option names to those parsers). A command fixes the concurrency to
the scenario's batch and uses fixed-length random prompts of the scenario's
input and output lengths.

The scenario travels with the result so that `roofline import FILE` (or the
measured page) needs nothing more:

- vLLM: `--metadata gpu=... num_gpus=... model=... weights=... kv=...` (serve.py
  writes each KEY=VALUE as a top-level key of the result JSON);
- SGLang: `--tag rl+gpu=...+num_gpus=...` (written as the record's `tag`);
- every tool: the output file's name carries the same `rl+key=value` list,
  which the importer reads when the file has no such fields (genai-perf and
  aiperf name their export after `--profile-export-file`, trtllm-bench its
  `--report_json`, llama-bench prints to the file its stdout is sent to).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from core.catalogue.catalogue import Catalogue
from core.model.scenario import Scenario

#: Where each tool's options were read: repository, file, version. (See tests/fixtures/README.md for the formats.)
TOOLS: dict[str, dict[str, str]] = {
    "vllm": {
        "title": "vLLM: vllm bench serve",
        "source": "vllm-project/vllm vllm/benchmarks/serve.py add_cli_args and vllm/benchmarks/datasets/datasets.py "
        "add_dataset_parser (vLLM 0.33.0, wheel commit g4ba787ec9)",
        "url": "https://github.com/vllm-project/vllm/blob/main/vllm/benchmarks/serve.py",
    },
    "sglang": {
        "title": "SGLang: python -m sglang.bench_serving",
        "source": "sgl-project/sglang python/sglang/benchmark/serving.py cli_main (SGLang 0.5.23; sglang.bench_serving is its alias)",
        "url": "https://github.com/sgl-project/sglang/blob/main/python/sglang/benchmark/serving.py",
    },
    "trtllm": {
        "title": "TensorRT-LLM: trtllm-bench throughput",
        "source": "NVIDIA/TensorRT-LLM tensorrt_llm/commands/bench.py, tensorrt_llm/bench/benchmark/throughput.py, "
        "tensorrt_llm/bench/dataset/prepare_synthetic_data.py",
        "url": "https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/bench/benchmark/throughput.py",
    },
    "llama-bench": {
        "title": "llama.cpp: llama-bench",
        "source": "ggml-org/llama.cpp tools/llama-bench/llama-bench.cpp print_usage (commit 0c1e57098bba43ac29e6e3b677cdceebdd22334f)",
        "url": "https://github.com/ggml-org/llama.cpp/blob/0c1e57098bba43ac29e6e3b677cdceebdd22334f/tools/llama-bench/llama-bench.cpp",
    },
    "genai-perf": {
        "title": "NVIDIA genai-perf profile",
        "source": "triton-inference-server/perf_analyzer genai-perf/genai_perf/parser.py (commit 263c5f6e0c7a6c15472a54409174981f67930cfe)",
        "url": "https://github.com/triton-inference-server/perf_analyzer/blob/263c5f6e0c7a6c15472a54409174981f67930cfe/genai-perf/genai_perf/parser.py",
    },
    "aiperf": {
        "title": "NVIDIA AIPerf: aiperf profile",
        "source": "ai-dynamo/aiperf aiperf/common/config/*_config.py (commit db4f6397d11ee2d4cfbb41f70b2327315163dcf0)",
        "url": "https://github.com/ai-dynamo/aiperf/tree/db4f6397d11ee2d4cfbb41f70b2327315163dcf0/aiperf/common/config",
    },
}
#: The scenario fields the result carries (and the importer reads back).
CARRIED = ("gpu", "num_gpus", "model", "weights", "kv")
TAG = "rl"  # prefix of the key=value list in a tag or a file name
_LIST = re.compile(r"(?:^|[^a-z0-9])" + TAG + r"((?:\+[a-z_]+=[a-z0-9.\-]+)+)")


@dataclass(frozen=True)
class Lengths:
    input_tokens: int
    output_tokens: int
    note: str


def lengths_for(prompt: int, context: int) -> Lengths:
    """Request lengths that measure a scenario: the prompt as input, and twice (context - prompt) as output, so the
    decode context averaged over a request is the scenario's context."""
    if context > prompt:
        out = 2 * (context - prompt)
        return Lengths(prompt, out, f"output = 2 x (context {context:,} - prompt {prompt:,}): decode sees {context:,} tokens on average")
    return Lengths(prompt, 128, f"context {context:,} <= prompt {prompt:,}: 128 output tokens (decode context about the prompt)")


@dataclass(frozen=True)
class BenchCommand:
    tool: str
    title: str
    command: str  # shell, one option per line
    result_file: str
    import_command: str
    source: str
    url: str  # the parser's source file
    notes: tuple[str, ...] = ()


def carried(gpu: str, num_gpus: int, model: str, weights: str, kv: str) -> dict[str, str]:
    return {"gpu": gpu, "num_gpus": str(num_gpus), "model": model, "weights": weights, "kv": kv}


def tag_text(values: dict[str, str]) -> str:
    """rl+gpu=h100-sxm+num_gpus=2+...: the scenario as a tag or part of a file name."""
    # "_" ends the list in a file name (rl+...+batch=64_genai_perf.json): a GGUF type's underscores are written as "-" (q4-k-m)
    return TAG + "".join(f"+{k}={str(v).replace('_', '-')}" for k, v in values.items())


def read_tag(text: str | None) -> dict[str, str]:
    """The key=value list of a tag or a file name written by `tag_text` (empty when there is none)."""
    match = _LIST.search(str(text or "").lower())
    if not match:
        return {}
    pairs = (item.split("=", 1) for item in match.group(1).strip("+").split("+"))
    return {k: v for k, v in pairs if k in CARRIED}


def _lines(words: list[str | tuple[str, Any]]) -> str:
    """A command as shell text: the program, then one option (and its value) per line."""
    parts = []
    for w in words:
        if isinstance(w, tuple):
            flag, value = w
            values = value if isinstance(value, list) else [value]
            parts.append(" ".join([flag, *(shlex.quote(str(v)) for v in values)]))
        else:
            parts.append(w)
    return " \\\n  ".join(parts)


def bench_command(tool: str, cat: Catalogue, sc: Scenario, *, input_tokens: int, output_tokens: int) -> BenchCommand:
    """The command that measures a scenario (accelerator, count, model, formats, batch) with `tool` (a key of TOOLS)
    for requests of these lengths; KeyError for another tool."""
    gpu, num_gpus, model, weights, kv, batch = sc.gpu, sc.num_gpus, sc.model, sc.weights, sc.kv, sc.batch
    if tool not in TOOLS:
        raise KeyError(f"unknown benchmark tool {tool!r}; known: {', '.join(TOOLS)}")
    cat.gpu(gpu), cat.model(model)  # UnknownIdError with suggestions
    hub = _hub_id(cat, model)
    meta = carried(gpu, num_gpus, model, weights, kv)
    stem = f"{tag_text(meta)}+batch={batch}"
    prompts = max(10 * batch, 100)  # enough requests for the concurrency to hold at the batch for most of the run
    notes: list[str] = []
    before = after = ""  # what goes around the command: trtllm-bench's dataset step, llama-bench's redirection
    if tool == "vllm":
        result = f"{stem}.json"
        words: list[str | tuple[str, Any]] = [
            "vllm bench serve",
            ("--backend", "vllm"),
            ("--model", hub),
            ("--dataset-name", "random"),
            ("--random-input-len", input_tokens),
            ("--random-output-len", output_tokens),
            ("--random-range-ratio", 0),
            ("--ignore-eos", []),
            ("--max-concurrency", batch),
            ("--num-prompts", prompts),
            ("--save-result", []),
            ("--result-filename", result),
            ("--metadata", [f"{k}={v}" for k, v in meta.items()]),
        ]
        notes.append(
            "start the server first: vllm serve " + shlex.quote(hub) + (f" --tensor-parallel-size {num_gpus}" if num_gpus > 1 else "")
        )
    elif tool == "sglang":
        result = f"{stem}.jsonl"
        words = [
            "python -m sglang.bench_serving",
            ("--backend", "sglang"),
            ("--model", hub),
            ("--dataset-name", "random"),
            ("--random-input-len", input_tokens),
            ("--random-output-len", output_tokens),
            ("--random-range-ratio", 1.0),
            ("--max-concurrency", batch),
            ("--num-prompts", prompts),
            ("--output-file", result),
            ("--tag", tag_text(meta)),
        ]
        notes.append(
            "start the server first: python -m sglang.launch_server --model-path "
            + shlex.quote(hub)
            + (f" --tp {num_gpus}" if num_gpus > 1 else "")
        )
        notes.append("--random-range-ratio 1.0 fixes the lengths (SGLang samples between ratio x length and the length)")
    elif tool == "trtllm":
        result = f"{stem}.report.json"
        dataset = f"{stem}.dataset.jsonl"
        prepare = _lines(
            [
                f"trtllm-bench --model {shlex.quote(hub)} prepare-dataset",
                ("--output", dataset),
                "token-norm-dist",
                ("--num-requests", prompts),
                ("--input-mean", input_tokens),
                ("--input-stdev", 0),
                ("--output-mean", output_tokens),
                ("--output-stdev", 0),
            ]
        )
        words = [
            f"trtllm-bench --model {shlex.quote(hub)} throughput",
            ("--dataset", dataset),
            ("--backend", "pytorch"),
            ("--tp", num_gpus),
            ("--concurrency", batch),
            ("--max_batch_size", batch),
            ("--num_requests", prompts),
            ("--streaming", []),
            ("--report_json", result),
        ]
        before = prepare + "\n\n"
        notes.append(
            "older TensorRT-LLM releases prepare the dataset with benchmarks/cpp/prepare_dataset.py --tokenizer ... --stdout token-norm-dist ..."
        )
    elif tool == "llama-bench":
        result = f"{stem}.jsonl"
        words = [
            "llama-bench",
            ("-m", f"{model}-{weights}.gguf"),
            ("-p", input_tokens),
            ("-n", output_tokens),
            ("-ngl", 99),
            ("-o", "jsonl"),
        ]
        notes.append(
            "llama-bench runs one sequence (batch 1): -p times the prompt's prefill, -n the generation, whose context averages "
            "the prompt plus half the output as with the serving tools"
        )
        notes.append("point -m at your GGUF file; the output goes to stdout, so the command ends with > " + result)
        after = f" \\\n  > {shlex.quote(result)}"
    else:  # genai-perf, aiperf
        export = f"{stem}.json"
        stem_out = export.removesuffix(".json")
        result = f"artifacts/{stem_out}_genai_perf.json" if tool == "genai-perf" else f"artifacts/{stem_out}_aiperf.json"
        words = [
            f"{tool} profile",
            ("-m", hub),
            ("--endpoint-type", "chat"),
            ("--url", "localhost:8000"),
            ("--streaming", []),
            ("--concurrency", batch),
            ("--synthetic-input-tokens-mean", input_tokens),
            ("--synthetic-input-tokens-stddev", 0),
            ("--output-tokens-mean", output_tokens),
            ("--output-tokens-stddev", 0),
            ("--extra-inputs", f"max_tokens:{output_tokens}"),
            ("--extra-inputs", "ignore_eos:true"),
            ("--request-count", prompts),
            ("--artifact-dir", "artifacts"),
            ("--profile-export-file", export),
        ]
        notes.append("against any OpenAI-compatible server (vLLM, SGLang, TensorRT-LLM serve) started for this model")
    text = before + _lines(words) + after
    return BenchCommand(tool, TOOLS[tool]["title"], text, result, _import(result), TOOLS[tool]["source"], TOOLS[tool]["url"], tuple(notes))


def _hub_id(cat: Catalogue, model: str) -> str:
    rows = cat.models.filter(cat.models["id"] == model)
    repo = rows["hf_repo"][0] if rows.height and "hf_repo" in rows.columns else None
    return str(repo) if repo else model


def _import(result: str) -> str:
    return f"roofline import {shlex.quote(result)}"
