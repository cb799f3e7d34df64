"""Hugging Face TGI `text-generation-benchmark` output and `inference-benchmarker` JSON results.

`text-generation-benchmark` (huggingface/text-generation-inference, `benchmark/`) writes no file: at the end of a run
it prints three markdown tables (`benchmark/src/table.rs`, printed by `run` in `benchmark/src/lib.rs`): the
parameters (`Model` = the tokenizer name, `Sequence Length`, `Decode Length`, ...), the latencies per step and batch
size (`Prefill`, `Decode (token)`, `Decode (total)`: Average, Lowest, Highest, p50, p90, p99, "%.2f ms") and the
throughputs (`Prefill`, `Decode`: Average, Lowest, Highest, "%.2f tokens/secs"). The tables are built with tabled's
`Merge::vertical`, so a cell equal to the one above it is printed blank: a blank cell repeats the value above.

`inference-benchmarker` (huggingface/inference-benchmarker) writes `results/<tokenizer>_<date>.json`
(`BenchmarkReportWriter` in `src/writers.rs`): the run's `config` and one entry of `results` per benchmark step
(`warmup`, `throughput` at `max_vus` virtual users, `constant@<rate>req/s` at a constant arrival rate).
"""

from __future__ import annotations

import math
from typing import Any

from core.evidence.formats import (
    TEXT_HEAD,
    Extract,
    Format,
    FormatError,
    Getter,
    Input,
    ask,
    dig,
    from_records,
    number,
    ratio,
    require,
    rounded,
)

MS = 1e-3

# -- text-generation-benchmark -------------------------------------------------------------

TGI = "tgi-benchmark"
_PARAMS = ["Parameter", "Value"]
_LATENCY = ["Step", "Batch Size", "Average", "Lowest", "Highest", "p50", "p90", "p99"]
_THROUGHPUT = ["Step", "Batch Size", "Average", "Lowest", "Highest"]


def _cells(line: str) -> list[str] | None:
    """The cells of a markdown table row (`| a | b |`), stripped; None for a line that is not one."""
    s = line.strip()
    if len(s) < 2 or not (s.startswith("|") and s.endswith("|")):
        return None
    return [c.strip() for c in s[1:-1].split("|")]


def _is_rule(cells: list[str]) -> bool:
    return all(c and set(c) <= set("-:") for c in cells)


def is_tgi_benchmark(head: str) -> bool:
    """text-generation-benchmark's end-of-run tables: the throughput or latency table's header, or its parameters table."""
    lines = head[:TEXT_HEAD].splitlines()
    for i, line in enumerate(lines):
        cells = _cells(line)
        if cells is None:
            continue
        if cells in (_THROUGHPUT, _LATENCY):
            return True
        if cells == _PARAMS:
            names = {(_cells(x) or [""])[0] for x in lines[i : i + 20]}
            if {"Sequence Length", "Decode Length"} <= names:
                return True
    return False


def _tables(body: str) -> list[tuple[list[str], list[tuple[int, list[str]]]]]:
    """Every markdown table: (header, [(line number, cells)]) with a blank cell filled from the row above (Merge::vertical)."""
    out: list[tuple[list[str], list[tuple[int, list[str]]]]] = []
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    for n, line in enumerate(body.splitlines(), 1):
        cells = _cells(line)
        if cells is None:
            if header is not None:
                out.append((header, rows))
            header, rows = None, []
            continue
        if header is None:
            header, rows = cells, []
            continue
        if _is_rule(cells):
            continue
        if rows and len(cells) == len(rows[-1][1]):
            above = rows[-1][1]
            cells = [c if c else above[j] for j, c in enumerate(cells)]
        rows.append((n, cells))
    if header is not None:
        out.append((header, rows))
    return out


def _value(cell: str, unit: str) -> str:
    """'20856.91 tokens/secs' -> '20856.91' (any other text is kept whole, for validation to name)."""
    return cell[: -len(unit)].strip() if cell.endswith(" " + unit) else cell


def _param(params: dict[str, str], name: str) -> str | None:
    v = params.get(name)
    return v if v not in (None, "", "None") else None


def tgi_benchmark(body: str, context: dict[str, Any]) -> Extract:
    """`text-generation-benchmark`'s printed tables: per batch size a prefill and a decode measurement.

    Prefill: tokens/s = the throughput table's `Prefill` Average, TTFT = the latency table's `Prefill` Average
    (the whole batch's prefill). Decode: tokens/s = `Decode` Average (batch x decode steps / decode time), TPOT =
    `Decode (token)` Average. Lengths from the parameters table (`Sequence Length`, `Decode Length`), the model
    from its `Model` row (the tokenizer name). Until TGI 2.4.1 (#2741) the `Prefill` throughput was batch /
    latency (sequences/s, though labelled tokens/secs): a file whose prefill throughput matches batch / latency
    rather than batch x sequence length / latency is read as such and multiplied by the sequence length.
    p50/p90/p99 are not kept: `px` in table.rs indexes the runs without sorting them (the TUI sorts a batch's
    list only while it is shown), so they are not percentiles. A batch printed as NaN (no run finished) is left out.
    Several runs pasted into one file are read in order, each throughput table with the tables before it.
    """
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    notes: list[str] = []
    params: dict[str, str] = {}
    latency: dict[tuple[str, str], str] | None = None
    throughput_tables = 0
    for header, rows in _tables(body):
        if header == _PARAMS:
            params = {cells[0]: cells[1] for _, cells in rows if len(cells) == 2}
            latency = None
            continue
        if header[:3] != ["Step", "Batch Size", "Average"]:
            continue
        step, bs, avg = 0, 1, 2
        for n, cells in rows:
            if len(cells) != len(header):
                raise FormatError(f"{len(cells)} cells, not the {len(header)} of the header {' | '.join(header)}", row=n, column="Step")
        if "p50" in header:
            latency = {(cells[step], cells[bs]): _value(cells[avg], "ms") for _, cells in rows}
            continue
        throughput_tables += 1
        seq = _param(params, "Sequence Length") or context.get("input_tokens")
        dec = _param(params, "Decode Length") or context.get("output_tokens")
        missing = [c for c, v in (("input_tokens", seq), ("output_tokens", dec)) if v is None]
        if missing:
            raise FormatError(
                ask("no parameters table (Sequence Length, Decode Length) before the throughput table", *missing),
                row=rows[0][0] if rows else None,
                column="Sequence Length",
            )
        model = _param(params, "Model")
        table: list[dict[str, Any]] = []
        for n, cells in rows:
            name, batch, mean = cells[step], cells[bs], _value(cells[avg], "tokens/secs")
            if name not in ("Prefill", "Decode"):
                continue
            if mean.lower() == "nan":
                notes.append(f"line {n}: {name} at batch {batch} is NaN (no run finished): left out")
                continue
            base = {"line": n, "batch": batch, "input": seq, "output": dec, "model": model, "tps": mean}
            if name == "Prefill":
                if latency is None:
                    notes.append(f"line {n}: prefill at batch {batch} left out: no latency table, so its unit cannot be told")
                    continue
                table.append({**base, "phase": "prefill", "ttft": latency.get(("Prefill", batch))})
            else:
                table.append({**base, "phase": "decode", "tpot": None if latency is None else latency.get(("Decode (token)", batch))})
        _fix_old_prefill_unit(table, seq, notes)
        records += table
        lines += [r["line"] for r in table]
    if not throughput_tables:
        raise FormatError(
            "no throughput table (| Step | Batch Size | Average | Lowest | Highest |): not the end of a text-generation-benchmark run?",
            column="Step",
        )
    if not records:
        raise FormatError("every batch of the throughput table is NaN: no run finished", column="Average")
    spec: dict[str, tuple[str, Getter]] = {
        "gpu": ("accelerator (text-generation-benchmark prints none)", lambda r: None),
        "model": ("parameters Model (tokenizer name)", lambda r: r["model"]),
        "phase": ("throughput table Step (Prefill / Decode)", lambda r: r["phase"]),
        "batch": ("Batch Size", lambda r: r["batch"]),
        "input_tokens": ("parameters Sequence Length", lambda r: r["input"]),
        "output_tokens": ("parameters Decode Length", lambda r: r["output"]),
        "tokens_per_s": ("throughput table Average (tokens/secs)", lambda r: r["tps"]),
        "ttft_s": ("latency table Prefill Average (ms)", lambda r: r.get("ttft")),
        "tpot_s": ("latency table Decode (token) Average (ms)", lambda r: r.get("tpot")),
    }
    notes.insert(0, "prefill: the whole batch's prompt tokens/s and prefill latency; decode: the batch's generated tokens/s")
    extract = from_records(TGI, records, spec, scale={"ttft_s": MS, "tpot_s": MS}, notes=notes, rows=lines)
    extract.row_label = "line"
    return extract


def _fix_old_prefill_unit(rows: list[dict[str, Any]], seq: Any, notes: list[str]) -> None:
    """Prefill throughput printed as batch / latency (TGI before 2.4.1): multiplied by the sequence length, said in a note."""
    s = _float(seq)
    far_tokens = far_sequences = 0.0
    checked = [r for r in rows if r["phase"] == "prefill"]
    for r in checked:
        t, lat, b = _float(r["tps"]), _float(r.get("ttft")), _float(r["batch"])
        if s is None or s <= 1 or t is None or lat is None or b is None or min(t, lat, b) <= 0:
            return
        per_sequence = b / (lat * MS)
        far_tokens += abs(math.log(t / (per_sequence * s)))
        far_sequences += abs(math.log(t / per_sequence))
    if not checked or far_sequences >= far_tokens:
        return
    assert s is not None
    for r in checked:
        value = _float(r["tps"])
        assert value is not None
        r["tps"] = value * s
    notes.append(
        f"prefill throughput is batch / latency (sequences/s: text-generation-benchmark before TGI 2.4.1): "
        f"multiplied by the sequence length {seq} to give prompt tokens/s"
    )


def _float(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# -- inference-benchmarker -----------------------------------------------------------------

IB = "inference-benchmarker"


def is_inference_benchmarker(r: dict[str, Any]) -> bool:
    """A BenchmarkReportWriter JSON: `config` with `benchmark_kind`, and `results` (the reader checks it is a list)."""
    return isinstance(r.get("config"), dict) and "benchmark_kind" in r["config"] and "results" in r


def _stat(r: dict[str, Any], name: str, key: str) -> Any:
    """`name.key` (since Oct 2024: {p50 ... p99, avg}) or the older flat `name_key` (`_avg`, `_p90`, `_p95`)."""
    nested = r.get(name)
    return nested.get(key) if isinstance(nested, dict) else r.get(f"{name}_{key}")


def _stat_of(name: str, key: str) -> Getter:
    return lambda x: _stat(x["r"], name, key)


def _concurrency(r: dict[str, Any]) -> Any:
    """Virtual users of a ConstantVUs step; a constant-rate step's mean requests in flight (request_rate x mean e2e)."""
    if r.get("executor_type") == "ConstantVUs":
        return dig(r, "config", "max_vus")
    rate, e2e = number(r.get("request_rate")), number(_stat(r, "e2e_latency_ms", "avg"))
    if rate is None or e2e is None:
        return r.get("request_rate") if rate is None else _stat(r, "e2e_latency_ms", "avg")
    mean = rate * e2e * MS
    return max(1, round(mean)) if 0 < mean < math.inf else mean


def _meta(config: dict[str, Any], *keys: str) -> Any:
    meta = config.get("meta")
    if not isinstance(meta, dict):
        return None
    return next((meta[k] for k in keys if meta.get(k) not in (None, "")), None)


def inference_benchmarker(records: list[dict[str, Any]]) -> Extract:
    """`inference-benchmarker` results JSON: one measurement per benchmark step (the warmup step left out).

    Phase mixed; tokens/s = `token_throughput_secs` (generated tokens / step duration); batch = the step's
    `config.max_vus` for a constant-VUs step (`throughput`), and for a constant-arrival-rate step (whose max_vus
    is only a cap) the mean number of requests in flight, request_rate x `e2e_latency_ms` avg (Little's law:
    the successful requests' summed latency over the step's duration); lengths = `total_tokens_sent` and
    `total_tokens` per successful request; TTFT and TPOT = `time_to_first_token_ms` and `inter_token_latency_ms`
    (avg, p50, p90, p99; files before Oct 2024 hold flat `_avg`, `_p90`, `_p95` fields). The model is
    `config.model_name` (since Mar 2025) or `config.tokenizer`; `--extra-meta device=...,tp=...` (the keys its
    dashboard reads) give the accelerator and count, which the file otherwise lacks.
    """
    out: list[dict[str, Any]] = []
    rows: list[int] = []
    warmups = rated = 0
    for i, report in enumerate(records, 1):
        require(report, IB, ("config", "tokenizer"), ("results",), row=i)
        config, results = report["config"], report["results"]
        if not isinstance(results, list):
            raise FormatError(f"results is a {type(results).__name__}, not a list of benchmark steps", row=i, column="results")
        for j, r in enumerate(results, 1):
            if not isinstance(r, dict):
                raise FormatError(f"results[{j - 1}] is a {type(r).__name__}, not a benchmark step", row=j, column="results")
            require(
                r,
                IB,
                ("id",),
                ("executor_type",),
                ("config", "max_vus"),
                ("token_throughput_secs",),
                ("successful_requests",),
                ("total_tokens",),
                ("total_tokens_sent",),
                row=j,
            )
            if r["id"] == "warmup":
                warmups += 1
                continue
            if r["executor_type"] not in ("ConstantVUs", "ConstantArrivalRate"):
                raise FormatError(
                    f"executor_type {str(r['executor_type'])[:40]!r} is not ConstantVUs or ConstantArrivalRate",
                    row=j,
                    column="executor_type",
                )
            if _stat(r, "time_to_first_token_ms", "avg") is None:
                raise FormatError(
                    "field time_to_first_token_ms.avg is missing: not an inference-benchmarker file?",
                    row=j,
                    column="time_to_first_token_ms",
                )
            rated += r["executor_type"] == "ConstantArrivalRate"
            out.append({"r": r, "config": config})
            rows.append(j)
    if not out:
        raise FormatError("results hold no benchmark step but the warmup", column="results")

    def completed(x: dict[str, Any]) -> Any:
        return x["r"]["successful_requests"]

    spec: dict[str, tuple[str, Getter]] = {
        "gpu": ("config.meta.device (--extra-meta)", lambda x: _meta(x["config"], "device", "gpu")),
        "num_gpus": ("config.meta.tp (--extra-meta)", lambda x: _meta(x["config"], "tp", "num_gpus")),
        "model": ("config.model_name or config.tokenizer", lambda x: x["config"].get("model_name") or x["config"].get("tokenizer")),
        "phase": ("(serving run)", lambda x: "mixed"),
        "batch": ("config.max_vus / request_rate x e2e_latency_ms.avg", lambda x: _concurrency(x["r"])),
        "input_tokens": ("total_tokens_sent / successful_requests", lambda x: rounded(ratio(x["r"]["total_tokens_sent"], completed(x)))),
        "output_tokens": ("total_tokens / successful_requests", lambda x: rounded(ratio(x["r"]["total_tokens"], completed(x)))),
        "tokens_per_s": ("token_throughput_secs", lambda x: x["r"]["token_throughput_secs"]),
        "ttft_s": ("time_to_first_token_ms.avg", lambda x: _stat(x["r"], "time_to_first_token_ms", "avg")),
        "tpot_s": ("inter_token_latency_ms.avg", lambda x: _stat(x["r"], "inter_token_latency_ms", "avg")),
        "requests": ("successful_requests", completed),
    }
    scale = {"ttft_s": MS, "tpot_s": MS}
    for kind, name in (("ttft", "time_to_first_token_ms"), ("tpot", "inter_token_latency_ms")):
        for q in (50, 90, 99):
            if any(_stat(x["r"], name, f"p{q}") is not None for x in out):
                spec[f"{kind}_p{q}_s"] = (f"{name}.p{q}", _stat_of(name, f"p{q}"))
                scale[f"{kind}_p{q}_s"] = MS
    notes = [f"records are the benchmark steps by their place in results; {warmups} warmup step(s) left out"]
    if rated:
        notes.append(
            f"{rated} constant-rate step(s): batch = request_rate x e2e_latency_ms.avg, the mean requests in flight "
            "(their max_vus is only a cap)"
        )
    return from_records(IB, out, spec, scale=scale, notes=notes, rows=rows)


#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = (
    Format(
        IB,
        "huggingface/inference-benchmarker results/*.json (one measurement per benchmark step, with p50/p90/p99)",
        lambda i: inference_benchmarker(_records(i)),
        json=is_inference_benchmarker,
    ),
    Format(
        TGI,
        "TGI text-generation-benchmark's printed tables (parameters, latency, throughput: prefill and decode per batch size)",
        lambda i: tgi_benchmark(i.text(), i.context),
        text=is_tgi_benchmark,
    ),
)


def _records(inp: Input) -> list[dict[str, Any]]:
    assert inp.records is not None, "a JSON format reads records"
    return inp.records
