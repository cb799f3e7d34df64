"""Benchmark commands: every option is one the tool's own argument parser defines, and what the command writes imports
back with no questions (the scenario read from the file's metadata, tag or name)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from core.catalogue.catalogue import load_catalogue
from core.cli import main as cli_main
from core.evidence.bench_commands import TOOLS, bench_command, lengths_for, read_tag, tag_text
from core.evidence.importers import ImportContext, dataset_rows, delete_dataset, import_file
from core.model.scenario import Scenario
from core.store import get_store
from tests.helpers import FIXTURES

#: The options each parser defines (file and line where read; the versions are in core.evidence.bench_commands.TOOLS).
PARSER_OPTIONS: dict[str, set[str]] = {
    # vllm/benchmarks/serve.py add_cli_args (vLLM 0.33.0): --backend L1647, --model L1692, --max-concurrency L1678,
    # --request-rate L1745, --ignore-eos L1831, --save-result L1791, --result-dir L1815, --result-filename L1822,
    # --metadata L1807 (nargs="*", KEY=VALUE); vllm/benchmarks/datasets/datasets.py add_dataset_parser: --seed L1585,
    # --num-prompts L1586, --dataset-name L1592, --random-input-len L1887, --random-output-len L1893, --random-range-ratio L1899
    "vllm": {
        "--backend",
        "--base-url",
        "--host",
        "--port",
        "--endpoint",
        "--model",
        "--tokenizer",
        "--max-concurrency",
        "--request-rate",
        "--ignore-eos",
        "--save-result",
        "--result-dir",
        "--result-filename",
        "--metadata",
        "--seed",
        "--num-prompts",
        "--dataset-name",
        "--random-input-len",
        "--random-output-len",
        "--random-range-ratio",
    },
    # python/sglang/benchmark/serving.py cli_main (SGLang 0.5.23): --backend L2300, --base-url L2307, --host L2313,
    # --port L2316, --dataset-name L2327, --model L2378, --num-prompts L2393, --random-input-len L2411,
    # --random-output-len L2417, --random-range-ratio L2423, --request-rate L2465, --max-concurrency L2477,
    # --output-file L2490, --seed L2554, --disable-ignore-eos L2555, --tag L2845
    "sglang": {
        "--backend",
        "--base-url",
        "--host",
        "--port",
        "--dataset-name",
        "--model",
        "--num-prompts",
        "--random-input-len",
        "--random-output-len",
        "--random-range-ratio",
        "--request-rate",
        "--max-concurrency",
        "--output-file",
        "--seed",
        "--disable-ignore-eos",
        "--tag",
    },
    # tensorrt_llm/commands/bench.py: --model/-m L14, --model_path L21, --workspace/-w L29;
    # tensorrt_llm/bench/benchmark/throughput.py: --backend L47, --max_batch_size L58, --dataset L90, --num_requests L122,
    # --tp L152, --pp L158, --ep L164, --concurrency L179, --streaming L186, --report_json L195;
    # tensorrt_llm/bench/dataset/prepare_dataset.py: --output L54; prepare_synthetic_data.py token-norm-dist L41-48:
    # --num-requests --input-mean --input-stdev --output-mean --output-stdev
    "trtllm": {
        "--model",
        "-m",
        "--model_path",
        "--workspace",
        "-w",
        "--backend",
        "--max_batch_size",
        "--dataset",
        "--num_requests",
        "--tp",
        "--pp",
        "--ep",
        "--concurrency",
        "--streaming",
        "--report_json",
        "--output",
        "--num-requests",
        "--input-mean",
        "--input-stdev",
        "--output-mean",
        "--output-stdev",
    },
    # tools/llama-bench/llama-bench.cpp (0c1e5709): -m L560, -p L589, -n L596, -pg L603, -d L614, -b L621, -ub L628,
    # -ngl L724, -fa L865, -r L1023, -o L1041
    "llama-bench": {"-m", "-p", "-n", "-pg", "-d", "-b", "-ub", "-ngl", "-fa", "-r", "-o"},
    # genai-perf/genai_perf/parser.py (263c5f6e): -m L293, --endpoint-type L322, --streaming L340, --url L346,
    # --extra-inputs L419, --output-tokens-mean L483, --output-tokens-stddev L503, --synthetic-input-tokens-mean L526,
    # --synthetic-input-tokens-stddev L533, --artifact-dir L569, --profile-export-file L591, --concurrency L621,
    # --request-count L638
    "genai-perf": {
        "-m",
        "--endpoint-type",
        "--streaming",
        "--url",
        "--extra-inputs",
        "--output-tokens-mean",
        "--output-tokens-stddev",
        "--synthetic-input-tokens-mean",
        "--synthetic-input-tokens-stddev",
        "--artifact-dir",
        "--profile-export-file",
        "--concurrency",
        "--request-count",
    },
    # aiperf/common/config (db4f6397): endpoint_config.py -m L48, --endpoint-type L92, --streaming L106, --url L119;
    # prompt_config.py --synthetic-input-tokens-mean L35, --synthetic-input-tokens-stddev L51, --output-tokens-mean L93,
    # --output-tokens-stddev L110; loadgen_config.py --concurrency L59, --request-count L102; input_config.py
    # --extra-inputs L100; output_config.py --artifact-dir L30, --profile-export-file L43
    "aiperf": {
        "-m",
        "--endpoint-type",
        "--streaming",
        "--url",
        "--synthetic-input-tokens-mean",
        "--synthetic-input-tokens-stddev",
        "--output-tokens-mean",
        "--output-tokens-stddev",
        "--concurrency",
        "--request-count",
        "--extra-inputs",
        "--artifact-dir",
        "--profile-export-file",
    },
}
#: The fixture each tool's output is tried with (tests/fixtures/README.md), and the accelerator the file lacks.
FIXTURE = {
    "vllm": ("vllm_serve.json", "h100-sxm"),
    "sglang": ("sglang_serving.jsonl", "h100-sxm"),
    "trtllm": ("trtllm_report.json", "h100-sxm"),
    "llama-bench": ("llama_bench.jsonl", "m2-ultra"),
    "genai-perf": ("genai_perf.json", "h100-sxm"),
    "aiperf": ("aiperf.json", "h100-sxm"),
}
CARRIED = ("gpu", "num_gpus", "model", "weights", "kv")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = get_store(tmp_path_factory.mktemp("bench") / "s.duckdb")
    yield s
    s.close()


def _words(command: str) -> list[list[str]]:
    """Each command of a (possibly two-command) shell text, split as the shell would."""
    return [shlex.split(part.replace("\\\n", " ")) for part in command.split("\n\n")]


def _options(words: list[str]) -> list[str]:
    if words[:2] == ["python", "-m"]:  # the program: python -m sglang.bench_serving
        words = words[3:]
    return [w for w in words if w.startswith("-") and not w.lstrip("-").replace(".", "").isdigit()]


def _command(tool: str, store, **scenario):
    return bench_command(tool, load_catalogue(store), Scenario(batch=32, **scenario), input_tokens=2048, output_tokens=4096)


def test_every_tool_is_covered():
    assert set(TOOLS) == set(PARSER_OPTIONS) == set(FIXTURE)


@pytest.mark.parametrize("tool", list(TOOLS))
def test_every_option_is_one_the_tools_parser_defines(tool, store):
    cmd = _command(tool, store, gpu="h100-sxm", num_gpus=2, model="llama-3.1-70b", weights="fp8", kv="fp8")
    used = [o for words in _words(cmd.command) for o in _options(words)]
    assert used and set(used) <= PARSER_OPTIONS[tool], set(used) - PARSER_OPTIONS[tool]
    text = " ".join(w for words in _words(cmd.command) for w in words)
    if tool != "llama-bench":  # one sequence at a time: it has no concurrency
        assert "32" in text.split() and "2048" in text.split() and "4096" in text.split()


def _as_written(tool: str, fixture: bytes, cmd) -> bytes:
    """The fixture as the command would have made the tool write it (vLLM's --metadata, SGLang's --tag)."""
    (words, *_) = _words(cmd.command)
    if tool == "vllm":
        record = json.loads(fixture)
        items = words[words.index("--metadata") + 1 :]
        for item in items:  # vllm/benchmarks/serve.py L2315-2319: split on the first "=", both sides stripped
            key, value = item.split("=", 1)
            record[key.strip()] = value.strip()
        return json.dumps(record).encode()
    if tool == "sglang":
        tag = words[words.index("--tag") + 1]
        lines = [json.loads(line) for line in fixture.decode().splitlines() if line.strip()]
        return "".join(json.dumps({**r, "tag": tag}) + "\n" for r in lines).encode()
    return fixture


@pytest.mark.parametrize("tool", list(TOOLS))
def test_what_a_command_writes_imports_back_with_no_questions(tool, store):
    name, gpu = FIXTURE[tool]
    data = (FIXTURES / name).read_bytes()
    model = "llama-3.1-8b" if tool == "sglang" else None  # its file names no model (tests/fixtures/README.md)
    given = import_file(store, data, f"given-{name}", context=ImportContext(gpu=gpu, num_gpus=1, model=model))
    expected = dataset_rows(store, given.dataset_id).select(*CARRIED).row(0, named=True)
    delete_dataset(store, given.dataset_id)  # the same file again is refused otherwise
    cmd = _command(tool, store, **{k: expected[k] for k in CARRIED})
    written = _as_written(tool, data, cmd)
    # under the file name the command gives it, with no context at all
    back = import_file(store, written, Path(cmd.result_file).name)
    assert dataset_rows(store, back.dataset_id).select(*CARRIED).row(0, named=True) == expected
    assert cmd.import_command == f"roofline import {shlex.quote(cmd.result_file)}"
    if tool in ("vllm", "sglang"):  # and from the file's own fields, whatever it is renamed to
        renamed = import_file(store, written + b"\n", f"renamed-{name}")
        assert dataset_rows(store, renamed.dataset_id).select(*CARRIED).row(0, named=True) == expected


def test_a_tag_reads_back_and_ignores_what_it_does_not_carry():
    text = tag_text({"gpu": "h100-sxm", "num_gpus": "8", "model": "llama-3.1-70b", "weights": "fp8", "kv": "fp8"})
    assert text == "rl+gpu=h100-sxm+num_gpus=8+model=llama-3.1-70b+weights=fp8+kv=fp8"
    assert read_tag(f"artifacts/{text}+batch=64_genai_perf.json") == {
        "gpu": "h100-sxm",
        "num_gpus": "8",
        "model": "llama-3.1-70b",
        "weights": "fp8",
        "kv": "fp8",
    }
    assert read_tag("results.json") == {} and read_tag(None) == {}
    assert read_tag("curl+x=1.json") == {}  # "rl" inside another word is not the tag


def test_lengths_make_the_average_decode_context_the_scenarios():
    lens = lengths_for(prompt=2048, context=4096)
    assert (lens.input_tokens, lens.output_tokens) == (2048, 4096)
    assert lens.input_tokens + lens.output_tokens / 2 == 4096
    assert lengths_for(prompt=4096, context=1024).output_tokens == 128


def test_cli_prints_the_command(capsys, store):
    args = ["bench-command", "--tool", "sglang", "--gpu", "mi300x", "--num-gpus", "8", "--model", "llama-3.1-70b", "--batch", "64"]
    assert cli_main([*args, "--input-tokens", "1024", "--output-tokens", "512", "--db", str(store.path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert "--max-concurrency 64" in got["command"] and "--tag rl+gpu=mi300x+num_gpus=8" in got["command"]
    assert got["import_command"].startswith("roofline import")
    with pytest.raises(SystemExit) as exc:  # argparse: not one of the tools
        cli_main(["bench-command", "--tool", "nope", "--gpu", "mi300x", "--model", "x", "--batch", "1"])
    assert exc.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_cli_names_a_bad_input(capsys, store):
    base = ["bench-command", "--tool", "vllm", "--model", "llama-3.1-8b", "--batch", "8", "--input-tokens", "128", "--db", str(store.path)]
    assert cli_main([*base, "--gpu", "h100", "--output-tokens", "128"]) == 2
    assert "did you mean" in capsys.readouterr().err
    assert cli_main([*base, "--gpu", "h100-sxm", "--output-tokens", "0"]) == 2
    assert "--output-tokens" in capsys.readouterr().err
