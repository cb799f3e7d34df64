"""MLPerf Inference `summary_results.json`: the results table of a round as JSON, one record per result.

The file is written by mlcommons/inference `tools/submission/generate_final_report.py`
(`main`: `output = args.input[:-4]`, `open(f"{output}_results.json", "w")`), run on the
submission checker's `summary.csv`, so `--input summary.csv` writes `summary_results.json`
(at the root of a round's results repository: mlcommons/inference_results_v4.1, _v5.1). Each record is
a row of that table with the report's names (`Submitter`, `Category`, `System`, `UsedModel`
= the submitter's model, `Model` = the MLPerf benchmark, `Nodes`, `Accelerator`, `a#` =
accelerators per node, since 2026 `Total Accelerators`), `ID` first, and `Result`/`Units`
replaced by `Performance_Result`/`Performance_Units` (plus `Power_Result`/`Power_Units` where
a power run was merged into it).

v5.0 and v5.1 write the same keys; they differ in what the records hold: v5.0 runs the
interactive Llama 2 70B as its own benchmark (`llama2-70b-interactive-99`, scenario Server),
v5.1 as the Interactive scenario of `llama2-70b-99`, and v5.1 labels Llama 3.1 8B's
Interactive token rate "Queries/s" (the checker's unit table lacks that entry; the value is
the token rate). The file holds no concurrency and no prompt length: they come from the
context. Where the field names come from: tests/fixtures/README.md.
"""

from __future__ import annotations

import math
import re
from typing import Any

from core.evidence.formats import CONTEXT_WORDS, Extract, Format, FormatError, Getter, Input, ask, from_records, number
from core.evidence.formats.logs import MLPERF_WEIGHTS, TOKEN_RESULTS_UNLABELLED, mlperf_benchmark_model

FMT = "mlperf-summary-results"

#: (version, scenario) whose LLM token rate the checker labelled Samples/s or Queries/s: the CSV reader's v4.x
#: cases, and v5.1's Interactive (submission_checker.py at e20506b2: `special_unit_dict["llama3.1-8b"]` has no
#: "Interactive", so `unit_dict["Interactive"]` = "Queries/s", while the result is read from
#: `RESULT_FIELD_BENCHMARK_OVERWRITE["v5.1"]["llama3.1-8b"]["Server"]` = result_completed_tokens_per_second).
_UNLABELLED = frozenset({*TOKEN_RESULTS_UNLABELLED, ("v5.1", "Interactive")})
_POWER_UNITS = ("watts", "millijoules", "joules")
_NO_ACCELERATOR = ("", "n/a", "none", "-")
#: the 99th-percentile limits a Server or Interactive run was held to, seconds (TTFT, TPOT), by benchmark less its
#: accuracy suffix: submission_checker.py `LLM_LATENCY_LIMITS` at 5e903956 (v5.0) and e20506b2 (v5.1)
_LIMITS: dict[tuple[str, str], tuple[float, float]] = {
    ("llama2-70b", "Server"): (2.0, 0.2),
    ("llama2-70b", "Interactive"): (0.45, 0.04),
    ("llama2-70b-interactive", "Server"): (0.45, 0.04),
    ("mixtral-8x7b", "Server"): (2.0, 0.2),
    ("llama3.1-405b", "Server"): (6.0, 0.175),
    ("llama3.1-405b", "Interactive"): (4.5, 0.08),
    ("llama3.1-8b", "Server"): (2.0, 0.1),
    ("llama3.1-8b", "Interactive"): (0.5, 0.03),
    ("deepseek-r1", "Server"): (2.0, 0.08),
}
_TOKENS_PER_SAMPLE = re.compile(r"TOKENS_PER_SAMPLE:\s*([0-9]+(?:\.[0-9]+)?)")


def is_mlperf_summary_results(record: dict[str, Any]) -> bool:
    """A record of generate_final_report.py's JSON: the report's own names (`UsedModel`, `a#`) and a result pair."""
    keys = set(record)
    return {"UsedModel", "Model", "Scenario", "Accelerator", "a#"} <= keys and ("Performance_Result" in keys or "Result" in keys)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in _NO_ACCELERATOR)


def _count(value: Any) -> float | None:
    """A JSON number or a numeric string (pandas writes `a#` as 8, 8.0 or "8"); None for anything else."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    return number(value)


def _name(record: dict[str, Any], key: str, i: int) -> str:
    value = record[key]
    if not isinstance(value, str):
        raise FormatError(f"field {key} is {str(value)[:40]!r}, not a name", row=i, column=key)
    return value.strip()


def _gpus(record: dict[str, Any], i: int, context: dict[str, Any]) -> tuple[Any, str | None]:
    """The system's accelerator count (Total Accelerators, else Nodes x a#), or why the record is skipped."""
    total = record.get("Total Accelerators")
    if not _blank(total):
        n = _count(total)
        return (total if n is None else n), ("systems without accelerators" if n == 0 else None)
    if "a#" not in record:
        if context.get("num_gpus") is None:
            raise FormatError(ask("the record has no a# (accelerators per node)", "num_gpus"), row=i, column="a#")
        return None, None
    per, nodes = record["a#"], record.get("Nodes", 1)
    if _blank(per) or _count(per) == 0:  # the report writes a# 0 as "" (a CPU-only system)
        return None, "systems without accelerators"
    p, n = _count(per), _count(nodes)
    if p is None:
        return per, None  # validation names the bad value
    if n is None:
        return nodes, None
    return p * n, None


def _output_tokens(accuracy: Any) -> int | None:
    """The accuracy run's mean generated tokens per sample (`TOKENS_PER_SAMPLE`), rounded; None where not printed."""
    m = _TOKENS_PER_SAMPLE.search(accuracy) if isinstance(accuracy, str) else None
    if not m:
        return None
    value = float(m.group(1))
    return round(value) if math.isfinite(value) and value >= 1 else None


def mlperf_summary_results(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """One measurement per LLM result record (phase mixed: output tokens/s of the whole system, prefill included).

    Other benchmarks, power results, latencies, CPU-only systems and open-division runs of a model the benchmark
    name does not say are skipped (a note counts them). The accelerator and its count come from `Accelerator`
    and `Total Accelerators` (or `Nodes` x `a#`); output tokens per request from the accuracy run's
    `TOKENS_PER_SAMPLE` where the record prints it; concurrency and prompt length from the context.
    """
    kept: list[dict[str, Any]] = []
    numbers: list[int] = []
    skipped: dict[str, int] = {}
    limits: dict[str, tuple[float, float]] = {}
    unlabelled = open_models = repeats = power = 0
    seen: set[tuple[Any, ...]] = set()

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for i, r in enumerate(records, 1):
        for key in ("Model", "Scenario"):
            if key not in r:
                raise FormatError(f"field {key} is missing: not an MLPerf summary_results.json record?", row=i, column=key)
        # the writer leaves Result/Units in a record whose Result is falsy (`if result.get("Result")`)
        result_key, units_key = (
            ("Result", "Units") if "Result" in r and "Performance_Result" not in r else ("Performance_Result", "Performance_Units")
        )
        for key in (result_key, units_key):
            if key not in r:
                raise FormatError(f"field {key} is missing: not an MLPerf summary_results.json record?", row=i, column=key)
        bench, scenario, units = _name(r, "Model", i), _name(r, "Scenario", i), _name(r, units_key, i)
        model = mlperf_benchmark_model(bench)
        used = r.get("UsedModel")
        # the open division may run another model against the benchmark: the one that ran is UsedModel
        is_open = str(r.get("Category", "")).strip().lower() == "open"
        if model is not None and is_open and isinstance(used, str) and used.strip().replace("_", ".").lower() != bench.lower():
            model = mlperf_benchmark_model(used.replace("_", "."))
            if model is None:
                skip("open-division runs of another model")
                continue
            open_models += 1
        if model is None:
            skip(f"benchmark {bench or '(none)'}")
            continue
        if any(p in units.lower() for p in _POWER_UNITS):
            skip("power rows")
            continue
        version = str(r.get("version", "")).strip().lower()
        if units != "Tokens/s":
            if units not in ("Samples/s", "Queries/s") or (version, scenario) not in _UNLABELLED:
                skip(f"{bench} {scenario} in {units or 'no unit'}")
                continue
            unlabelled += 1
        if "Accelerator" in r and _blank(r["Accelerator"]):
            skip("systems without accelerators")
            continue
        gpus, why = _gpus(r, i, context)
        if why:
            skip(why)
            continue
        base = re.sub(r"(-99\.9|-99)$", "", bench.lower())
        if (base, scenario) in _LIMITS:
            limits[f"{base} {scenario}"] = _LIMITS[(base, scenario)]
        if "Power_Result" in r:
            power += 1
        same = (str(r.get("Unique ID (e.g. for Audit)")), str(r.get("Platform")), str(model), str(scenario), str(r[result_key]))
        repeats += same in seen
        seen.add(same)
        weights = r.get("weight_data_types")
        weights = weights.strip().lower() if isinstance(weights, str) else None
        kept.append(
            {
                "gpu": r.get("Accelerator"),
                "num_gpus": int(gpus) if isinstance(gpus, float) and gpus.is_integer() else gpus,
                "model": model,
                "weights": weights if weights in MLPERF_WEIGHTS else None,
                "output_tokens": _output_tokens(r.get("Accuracy")),
                "tps": r[result_key],
            }
        )
        numbers.append(i)
    if not kept:
        seen_text = ", ".join(f"{n} {why}" for why, n in skipped.items()) or "no records"
        raise FormatError(f"no LLM result in tokens/s in this MLPerf summary_results.json ({seen_text})", column="Model")
    spec: dict[str, tuple[str, Getter]] = {
        "gpu": ("Accelerator", lambda x: x["gpu"]),
        "num_gpus": ("Total Accelerators (Nodes x a#)", lambda x: x["num_gpus"]),
        "model": ("Model (UsedModel in the open division)", lambda x: x["model"]),
        "weights": ("weight_data_types", lambda x: x["weights"]),
        "phase": ("Scenario", lambda x: "mixed"),
        "output_tokens": ("Accuracy (TOKENS_PER_SAMPLE)", lambda x: x["output_tokens"]),
        "tokens_per_s": ("Performance_Result", lambda x: x["tps"]),
    }
    lacking = ["batch", "input_tokens"] + (["output_tokens"] if any(x["output_tokens"] is None for x in kept) else [])
    words = [CONTEXT_WORDS[c] for c in lacking]
    notes = [
        "MLPerf summary_results.json: tokens/s of the whole system per benchmark and scenario (Offline, Server, "
        "Interactive); benchmark names mapped to catalogue models (llama2-70b-99 -> llama-2-70b, deepseek-r1 -> "
        "deepseek-v3: same architecture); output tokens per request from the accuracy run's TOKENS_PER_SAMPLE where "
        f"printed; the file holds no concurrency or prompt length: give them as context: {', '.join(words)}"
    ]
    if limits:
        held = "; ".join(f"{k} TTFT {t:g} s, TPOT {p * 1e3:g} ms" for k, (t, p) in limits.items())
        notes.append(f"Server and Interactive results were held to the 99th-percentile limits of the rules: {held}")
    if unlabelled:
        notes.append(
            f"{unlabelled} token rates labelled 'Samples/s' or 'Queries/s' by the checker (v4.x, v5.1 Interactive) read as tokens/s"
        )
    if open_models:
        notes.append(f"{open_models} open-division results name their model in UsedModel (read instead of the benchmark's)")
    if repeats:
        notes.append(f"{repeats} results repeat another of the same system (one run submitted for both the -99 and -99.9 targets)")
    if power:
        notes.append(f"{power} results also hold a power figure (Power_Result), not read")
    if skipped:
        notes.append(f"skipped {sum(skipped.values())} records: " + ", ".join(f"{n} {why}" for why, n in skipped.items()))
    extract = from_records(FMT, kept, spec, notes=notes, rows=numbers)
    extract.leave_out_unknown = True  # every submitter's systems: one the catalogue lacks is left out, not the file
    return extract


def _records(inp: Input) -> list[dict[str, Any]]:
    if inp.records is None:
        raise FormatError("an MLPerf summary_results.json is JSON, not CSV or text")
    return inp.records


#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = (
    Format(
        FMT,
        "MLPerf Inference summary_results.json (tools/submission/generate_final_report.py; v4.1, v5.0, v5.1: LLM results)",
        lambda i: mlperf_summary_results(_records(i), i.context),
        json=is_mlperf_summary_results,
    ),
)
