"""Result files that are not one tool's JSON: MLPerf logs and tables, llama-bench text, leaderboard and sweep dumps.

- MLPerf Inference `mlperf_log_summary.txt` (loadgen) and the submission
  checker's `summary.csv` (one row per system x benchmark x scenario);
- llama.cpp `llama-bench -o md` (its default table) and `-o sql`;
- the optimum-benchmark leaderboard CSV (`Benchmark.to_dataframe()` rows,
  dot-flattened names), read through the JSON reader;
- InferenceX (SemiAnalysis) `agg_*.json` rows (`utils/process_result.py`).

Each reader has a detector next to it (text head, JSON record or CSV header).
What a file does not hold stays null so the import asks for it. The llama-bench
readers also return the model file's size in bytes per row (`model_bytes`).
Where the field names come from: tests/fixtures/README.md.
"""

from __future__ import annotations

import ast
import csv
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.evidence.formats import Extract, FormatError, Getter, from_records, require
from core.evidence.formats.exports import llama_bench, optimum_benchmark


@dataclass
class SizedExtract(Extract):
    """An Extract that also knows each row's model file size (bytes; None where unknown)."""

    model_bytes: list[float | None] = field(default_factory=list)


def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _data_rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))


#: models benchmarks name that the catalogue holds under another id (same architecture)
_SAME_ARCHITECTURE = {"deepseek-r1": "deepseek-v3"}


def _same_architecture(name: str) -> str | None:
    key = name.lower()
    return next((cid for k, cid in _SAME_ARCHITECTURE.items() if k in key), None)


# -- MLPerf Inference loadgen: mlperf_log_summary.txt ---------------------------------------

_LINE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")
#: the token-rate lines loadgen prints, in the order they are preferred
_MLPERF_TOKEN_KEYS = (
    "tokens per second",  # Offline (v4.0+)
    "completed tokens per second",  # Server (v4.1+ in the results block, v4.0 in Additional Stats)
    "tps w/o loadgen overhead",  # SingleStream
    "tokens per second (inferred)",  # Offline, token_latency_scaling_factor x samples (gptj)
    "completed tokens per second (inferred)",
)


def is_mlperf_summary(head: str) -> bool:
    """An MLPerf loadgen `mlperf_log_summary.txt` (its banner and the scenario line)."""
    return "MLPerf Results Summary" in head and re.search(r"^Scenario\s*:", head, re.MULTILINE) is not None


def mlperf_summary(text: str, context: dict[str, Any]) -> Extract:
    """One measurement (phase mixed): the run's output tokens/s, mean TTFT and TPOT (ns) where printed.

    The summary names no model, accelerator, concurrency or lengths: they come
    from the context. Loadgen before v4.0 prints samples per second only,
    which is not a token rate: such a file is refused.
    """
    fmt = "mlperf-summary"
    if "MLPerf Results Summary" not in text:
        raise FormatError("no 'MLPerf Results Summary' banner: not an mlperf_log_summary.txt")
    lines: dict[str, tuple[int, str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if m:
            lines.setdefault(" ".join(m.group(1).lower().split()), (n, m.group(2)))
    mode_line, mode = lines.get("mode", (None, ""))
    if mode.lower() != "performanceonly":
        raise FormatError(f"Mode is {mode or 'missing'}: only a PerformanceOnly run measures throughput", row=mode_line, column="Mode")
    scen_line, scenario = lines.get("scenario", (None, ""))
    key = next((k for k in _MLPERF_TOKEN_KEYS if k in lines), None)
    if key is None:
        at = lines.get("samples per second") or lines.get("completed samples per second") or lines.get("scheduled samples per second")
        raise FormatError(
            "no tokens per second in the summary (loadgen before v4.0, or not an LLM benchmark): samples per second is not a token rate",
            row=at[0] if at else scen_line,
            column="Samples per second",
        )
    tps_line, tps = lines[key]
    ttft = lines.get("mean first token latency (ns)")
    tpot = lines.get("mean time per output token (ns)") or lines.get("mean time to output token (ns)")
    tpot_label = "Mean Time per Output Token (ns)" if "mean time per output token (ns)" in lines else "Mean Time to Output Token (ns)"
    rec: dict[str, Any] = {
        "tps": tps,
        "ttft": ttft[1] if ttft else None,
        "tpot": tpot[1] if tpot else None,
        "batch": 1 if scenario == "SingleStream" else None,
    }
    label = {k: k for k in _MLPERF_TOKEN_KEYS} | {
        "tokens per second": "Tokens per second",
        "completed tokens per second": "Completed tokens per second",
        "tps w/o loadgen overhead": "TPS w/o loadgen overhead",
    }
    spec: dict[str, tuple[str, Getter]] = {
        "phase": (f"Scenario ({scenario})", lambda r: "mixed"),
        "batch": ("Scenario", lambda r: r["batch"]),
        "tokens_per_s": (label[key], lambda r: r["tps"]),
        "ttft_s": ("Mean First Token latency (ns)", lambda r: r["ttft"]),
        "tpot_s": (tpot_label, lambda r: r["tpot"]),
    }
    notes = [
        f"MLPerf {scenario} run: output tokens/s over the run; the summary names no model, accelerator, "
        "concurrency or lengths: give them as context: model, accelerator, accelerator count, batch (sequences), input tokens per request, output tokens per request"
    ]
    if "inferred" in key:
        notes.append("the token rate is inferred by loadgen (samples x a fixed tokens-per-sample factor), not counted")
    result = lines.get("result is", (None, ""))[1]
    if result != "VALID":
        notes.append(f"loadgen marked the run {result or 'without a result'} (a constraint was not met)")
    extract = from_records(fmt, [rec], spec, scale={"ttft_s": 1e-9, "tpot_s": 1e-9}, notes=notes, rows=[tps_line])
    extract.row_label = "line"
    return extract


# -- MLPerf submission checker: summary.csv --------------------------------------------------

#: MLPerf benchmark names (less the accuracy target and variant suffixes) -> catalogue model ids
MLPERF_MODELS = {
    "llama2-70b": "llama-2-70b",
    "llama3.1-405b": "llama-3.1-405b",
    "llama3.1-8b": "llama-3.1-8b",
    "mixtral-8x7b": "mixtral-8x7b",
    "deepseek-r1": "deepseek-v3",
    "gpt-oss-120b": "gpt-oss-120b",
}
_MLPERF_SUFFIX = re.compile(r"(-interactive|-edge|-99\.9|-99)+$")
#: v4.1 reported LLM results in tokens/s under the generic "Samples/s" / "Queries/s" unit
#: (submission_checker.py RESULT_FIELD_BENCHMARK_OVERWRITE); v4.0 only for the Offline scenario.
TOKEN_RESULTS_UNLABELLED = {("v4.1", "Offline"), ("v4.1", "Server"), ("v4.0", "Offline")}
MLPERF_WEIGHTS = {"fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "nvfp4", "mxfp4"}


def mlperf_benchmark_model(name: str) -> str | None:
    """The catalogue id of an MLPerf benchmark name (llama2-70b-99.9 -> llama-2-70b); None for other benchmarks."""
    return MLPERF_MODELS.get(_MLPERF_SUFFIX.sub("", name.strip().lower()))


def is_mlperf_results_csv(headers: list[str]) -> bool:
    """The submission checker's summary.csv (Organization, ..., MlperfModel, Scenario, Result, ..., Units)."""
    return {"Organization", "MlperfModel", "Scenario", "Result", "accelerator_model_name", "Units"} <= set(headers)


def mlperf_results_csv(data: bytes, context: dict[str, Any]) -> Extract:
    """The LLM rows of an MLPerf results table, one measurement each (phase mixed, tokens/s of the whole system).

    Other benchmarks, power rows and results that are not a token rate are
    skipped (the notes count them); lengths and concurrency are not in the
    table: they come from the context.
    """
    fmt = "mlperf-results"
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    skipped: dict[str, int] = {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    unlabelled = False
    for i, r in enumerate(_data_rows(data), 1):
        bench = (r.get("MlperfModel") or r.get("Model") or "").strip()
        model = mlperf_benchmark_model(bench)
        units = (r.get("Units") or "").strip()
        scenario = (r.get("Scenario") or "").strip()
        version = (r.get("version") or "").strip().lower()
        if model is None:
            skip(f"benchmark {bench or '(none)'}")
            continue
        if units in ("Watts", "millijoules", "joules") or "joules" in units.lower():
            skip("power rows")
            continue
        if units != "Tokens/s":
            if (version, scenario) not in TOKEN_RESULTS_UNLABELLED:
                skip(f"{bench} {scenario} in {units or 'no unit'}")
                continue
            unlabelled = True
        accel = (r.get("accelerator_model_name") or "").strip()
        total: Any = r.get("total_accelerators")
        if total in (None, ""):
            nodes, per_node = _num(r.get("number_of_nodes")), _num(r.get("accelerators_per_node"))
            total = nodes * per_node if nodes is not None and per_node is not None else r.get("accelerators_per_node")
        if accel.lower() in ("", "n/a", "none", "-") or _num(total) == 0:
            skip("systems without accelerators")
            continue
        weights = (r.get("weight_data_types") or "").strip().lower()
        records.append(
            {
                "gpu": accel,
                "num_gpus": int(t) if (t := _num(total)) is not None and math.isfinite(t) and t == int(t) else total,
                "model": model,
                "weights": weights if weights in MLPERF_WEIGHTS else None,
                "tps": r.get("Result"),
            }
        )
        numbers.append(i)
    if not records:
        seen = ", ".join(f"{n} {why}" for why, n in skipped.items()) or "no data rows"
        raise FormatError(f"no LLM result in tokens/s in this MLPerf table ({seen})", column="MlperfModel")
    spec: dict[str, tuple[str, Getter]] = {
        "gpu": ("accelerator_model_name", lambda r: r["gpu"]),
        "num_gpus": ("total_accelerators (number_of_nodes x accelerators_per_node)", lambda r: r["num_gpus"]),
        "model": ("MlperfModel", lambda r: r["model"]),
        "weights": ("weight_data_types", lambda r: r["weights"]),
        "phase": ("Scenario", lambda r: "mixed"),
        "tokens_per_s": ("Result", lambda r: r["tps"]),
    }
    notes = [
        "MLPerf results: tokens/s of the whole system per benchmark and scenario; benchmark names mapped to catalogue models "
        "(llama2-70b-99 -> llama-2-70b, deepseek-r1 -> deepseek-v3: same architecture); the table holds no lengths or "
        "concurrency: give them as context: batch (sequences), input tokens per request, output tokens per request"
    ]
    if unlabelled:
        notes.append("v4.0/v4.1 tables label LLM token rates 'Samples/s' or 'Queries/s'; the checker reported tokens/s for them")
    if skipped:
        notes.append("skipped: " + ", ".join(f"{n} {why}" for why, n in skipped.items()))
    extract = from_records(fmt, records, spec, notes=notes, rows=numbers)
    extract.row_label = "row"
    extract.leave_out_unknown = True  # every submitter's systems: one the catalogue lacks is left out, not the file
    return extract


# -- llama.cpp llama-bench: -o md and -o sql -------------------------------------------------

_TEST = re.compile(r"(?:pp\s*(?P<p>\d+))?\s*(?:\+?\s*tg\s*(?P<g>\d+))?(?:\s*@\s*d(?P<d>\d+))?")
_SIZE_UNITS = {"kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3, "tib": 1024.0**4}
_MD_SOURCES = {
    "model": "model",
    "weights": "model",
    "kv": "type_k",
    "phase": "test",
    "input_tokens": "test (pp)",
    "depth": "test (@ dN)",
    "output_tokens": "test (tg)",
    "tokens_per_s": "t/s",
}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def is_llama_bench_md(head: str) -> bool:
    """llama-bench's markdown table: a `| model | size | params | backend ...| test | t/s |` header."""
    for line in head.splitlines():
        if line.lstrip().startswith("|"):
            cells = _cells(line)
            if cells[:2] == ["model", "size"] and "test" in cells and "t/s" in cells:
                return True
    return False


def llama_bench_md(text: str, context: dict[str, Any]) -> SizedExtract:
    """`llama-bench` default output: one row per test ("pp512", "tg128", "pp512 @ d4096"; older "pp 512").

    Read through the llama-bench JSON reader: pp N is prefill of N tokens
    (after the depth), tg N is decode of N tokens after `depth` tokens of
    context; t/s is "mean ± stdev". The table holds no accelerator.
    """
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    sizes: list[float | None] = []
    header: list[str] = []
    default_kv = False
    for n, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            header = []  # a table ends at the first line that is not a table row
            continue
        cells = _cells(line)
        if cells[:1] == ["model"] and "t/s" in cells and "test" in cells:
            header = cells
            continue
        if not header or all(set(c) <= set("-:") for c in cells):
            continue
        if len(cells) != len(header):
            raise FormatError(f"the row has {len(cells)} cells, the header {len(header)}", row=n, column="|")
        row = dict(zip(header, cells, strict=True))
        m = _TEST.fullmatch(row["test"])
        if not m or not (m.group("p") or m.group("g")):
            raise FormatError(f"test {row['test']!r} is not ppN, tgN or ppN+tgM (with an optional '@ dN')", row=n, column="test")
        tps = re.match(r"\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)", row["t/s"])
        if "type_k" not in row:
            default_kv = True
        records.append(
            {
                "n_prompt": int(m.group("p") or 0),
                "n_gen": int(m.group("g") or 0),
                "n_depth": int(m.group("d") or 0),
                "avg_ts": tps.group(1) if tps else row["t/s"],
                "model_type": row.get("model"),
                "type_k": row.get("type_k", "f16"),
            }
        )
        numbers.append(n)
        size = re.fullmatch(r"([0-9.]+)\s*([KMGT]iB)", row.get("size", ""))
        sizes.append(float(size.group(1)) * _SIZE_UNITS[size.group(2).lower()] if size else None)
        records[-1]["model_size"] = sizes[-1]
    if not records:
        raise FormatError("no llama-bench table rows (a '| model | size | ... | test | t/s |' header and rows below it)")
    inner = llama_bench(records, rows=numbers)
    notes = [
        *inner.notes,
        "the markdown table holds no accelerator: give it as context: accelerator; model size from the 'size' column (2 decimals)",
    ]
    if default_kv:
        notes.append("no type_k column: llama-bench's default KV cache type f16")
    sources = {**inner.sources, **{k: v for k, v in _MD_SOURCES.items() if k in inner.sources}}
    return SizedExtract("llama-bench-md", inner.frame, sources, inner.scale, "line", notes, model_bytes=sizes)


_INSERT = re.compile(r"^\s*INSERT INTO (\w+) \((?P<fields>[^)]*)\) VALUES \((?P<values>.*)\);\s*$")
_SQL_VALUE = re.compile(r"'([^']*)'")
_SQL_VALUES = re.compile(r"'[^']*'(?:, '[^']*')*")


def is_llama_bench_sql(head: str) -> bool:
    """llama-bench `-o sql`: CREATE TABLE IF NOT EXISTS test|llama_bench (build_commit TEXT, ...) or its INSERTs."""
    return (
        re.search(r"CREATE TABLE IF NOT EXISTS (?:test|llama_bench) \(\s*build_commit TEXT", head) is not None
        or re.search(r"INSERT INTO (?:test|llama_bench) \(build_commit,", head) is not None
    )


def llama_bench_sql(text: str, context: dict[str, Any]) -> SizedExtract:
    """`llama-bench -o sql`: one INSERT per test with the JSON output's fields (read by the llama-bench reader)."""
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    for n, line in enumerate(text.splitlines(), 1):
        m = _INSERT.match(line)
        if not m:
            continue
        fields = [f.strip() for f in m.group("fields").split(",")]
        if not _SQL_VALUES.fullmatch(m.group("values")):
            raise FormatError("VALUES is not a list of quoted values (a quote inside a value?)", row=n, column="VALUES")
        values = _SQL_VALUE.findall(m.group("values"))
        if len(values) != len(fields):
            raise FormatError(f"{len(values)} values for {len(fields)} columns (a quote inside a value?)", row=n, column="VALUES")
        rec = dict(zip(fields, values, strict=True))
        for key in ("avg_ts", "n_prompt", "n_gen"):
            if key not in rec:
                raise FormatError(f"column {key} is missing: not a llama-bench INSERT?", row=n, column=key)
        records.append(rec)
        numbers.append(n)
    if not records:
        raise FormatError("no INSERT INTO test|llama_bench (...) VALUES (...); statements")
    inner = llama_bench(records, rows=numbers)
    sizes = [_num(r.get("model_size")) for r in records]
    return SizedExtract("llama-bench-sql", inner.frame, inner.sources, inner.scale, "line", inner.notes, model_bytes=sizes)


# -- optimum-benchmark leaderboard CSV ---------------------------------------------------------


def is_optimum_benchmark_csv(headers: list[str]) -> bool:
    """A Benchmark.to_dataframe() CSV (optimum-benchmark `benchmark.csv`, llm-perf leaderboard `perf-df-*.csv`)."""
    return "report.decode.throughput.value" in headers and "config.backend.model" in headers


def _cell(value: str | None) -> Any:
    if value is None or value == "":
        return None
    if value.startswith("[") and value.endswith("]"):  # lists are written as their Python repr
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def _unflatten(row: Mapping[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key is None:
            continue
        cur = out
        *parents, leaf = key.split(".")
        for p in parents:
            if not isinstance(cur.get(p), dict):
                cur[p] = {}
            cur = cur[p]
        if not isinstance(cur.get(leaf), dict):
            cur[leaf] = _cell(value)
    return out


def optimum_benchmark_csv(data: bytes, context: dict[str, Any]) -> Extract:
    """One row per benchmark with dot-joined names (config.backend.model, report.decode.throughput.value, ...).

    Each row is unflattened into the benchmark.json layout and read by the
    optimum-benchmark JSON reader (prefill and decode measurements).
    """
    rows = _data_rows(data)
    if not rows:
        raise FormatError("the CSV has a header but no data rows")
    extract = optimum_benchmark([_unflatten(r) for r in rows], context)
    extract.format = "optimum-benchmark-csv"
    extract.row_label = "row"
    return extract


# -- InferenceX (SemiAnalysis) agg_*.json ---------------------------------------------------------

#: InferenceX runner names that the accelerator matcher cannot read by their chip token
_INFERENCEX_HW = {"rtx6000pro": "rtx-pro-6000-blackwell"}


def is_inferencex(record: dict[str, Any]) -> bool:
    """An InferenceX aggregate row (utils/process_result.py): hw, conc, model and tput_per_gpu."""
    return {"hw", "conc", "model", "tput_per_gpu"} <= set(record)


def _hw(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    name = value.split(":", 1)[-1].strip().lower()  # "cluster:gb300-nv"
    chip = name.split("-", 1)[0]  # "h200-dgxc", "b200-multinode", "mi355x-disagg"
    return _INFERENCEX_HW.get(chip, chip)


def _inferencex_weights(r: dict[str, Any]) -> Any:
    p = str(r.get("precision") or "").strip().lower()
    if p != "fp4":
        return p or None
    name = f"{r.get('model')} {r.get('hw')}".lower()
    if "nvfp4" in name:
        return "nvfp4"
    if "mxfp4" in name or "gpt-oss" in name or str(r.get("hw", "")).lower().startswith("mi"):
        return "mxfp4"
    return "fp4"


def inferencex(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """One measurement per row (phase mixed): output tokens/s of the deployment, concurrency, lengths, TTFT and TPOT.

    Rows since v2 of the script hold `output_tput_per_gpu` (per GPU, or per
    decode GPU when disaggregated) and isl/osl; older rows hold only
    `tput_per_gpu` (prompt + output tokens per GPU), whose output share needs
    the lengths: osl / (isl + osl). Latencies are in seconds already.
    """
    fmt = "inferencex"
    for i, r in enumerate(records, 1):
        require(r, fmt, ("hw",), ("conc",), ("model",), ("tput_per_gpu",), row=i)

    def gpus(r: dict[str, Any]) -> Any:
        if r.get("is_multinode") or "num_prefill_gpu" in r:
            p, d = _num(r.get("num_prefill_gpu")), _num(r.get("num_decode_gpu"))
            return p + d if p is not None and d is not None else r.get("num_decode_gpu")
        tp, pp, pcp = _num(r.get("tp")), _num(r.get("pp", 1)), _num(r.get("pcp_size", 1))
        return tp * pp * pcp if tp is not None and pp is not None and pcp is not None else r.get("tp")

    def out_tps(r: dict[str, Any], i: int) -> Any:
        n = _num(gpus(r))
        if "output_tput_per_gpu" in r:
            per = _num(r["output_tput_per_gpu"])
            if r.get("is_multinode") or "num_prefill_gpu" in r:
                d = _num(r.get("num_decode_gpu"))
                n = d if d else n
            return per * n if per is not None and n is not None else r["output_tput_per_gpu"]
        lin = r.get("isl", context.get("input_tokens"))
        lout = r.get("osl", context.get("output_tokens"))
        fin, fout = _num(lin), _num(lout)
        if fin is None or fout is None or fin + fout <= 0:
            raise FormatError(
                "tput_per_gpu counts prompt and output tokens and the row has no isl/osl: give --input-tokens and --output-tokens",
                row=i,
                column="tput_per_gpu",
            )
        total, share = _num(r["tput_per_gpu"]), fout / (fin + fout)
        return total * n * share if total is not None and n is not None else r["tput_per_gpu"]

    rows = [{**r, "__tps": out_tps(r, i), "__gpus": gpus(r)} for i, r in enumerate(records, 1)]
    spec: dict[str, tuple[str, Getter]] = {
        "gpu": ("hw", lambda r: _hw(r["hw"])),
        "num_gpus": ("tp x pp x pcp_size (num_prefill_gpu + num_decode_gpu)", lambda r: r["__gpus"]),
        "model": ("model", lambda r: _same_architecture(str(r["model"])) or r["model"]),
        "weights": ("precision", _inferencex_weights),
        "phase": ("(serving run)", lambda r: "mixed"),
        "batch": ("conc", lambda r: r["conc"]),
        "input_tokens": ("isl", lambda r: r.get("isl")),
        "output_tokens": ("osl", lambda r: r.get("osl")),
        "tokens_per_s": ("output_tput_per_gpu x GPUs", lambda r: r["__tps"]),
        "ttft_s": ("mean_ttft", lambda r: r.get("mean_ttft", r.get("median_ttft"))),
        "tpot_s": ("mean_tpot", lambda r: r.get("mean_tpot", r.get("median_tpot"))),
    }
    notes = [
        "InferenceX rows: output tokens/s = output_tput_per_gpu x GPUs (x decode GPUs when disaggregated); DeepSeek-R1 read as deepseek-v3 (same architecture)"
    ]
    if any("output_tput_per_gpu" not in r for r in records):
        notes.append("rows without output_tput_per_gpu: output tokens/s = tput_per_gpu x GPUs x osl / (isl + osl)")
    spec_rows = [
        i for i, r in enumerate(records, 1) if str(r.get("spec_decoding", r.get("mtp", "none"))).lower() not in ("none", "", "false")
    ]
    if spec_rows:
        notes.append(f"speculative decoding in {len(spec_rows)} row(s) (from {spec_rows[0]}): tokens/s can exceed a plain decode ceiling")
    return from_records(fmt, rows, spec, notes=notes)
