"""SGLang `bench_offline_throughput` and `bench_one_batch_server` results.

Both append one JSON line per run to their `--result-filename`. Field names
are those the tools' own writing code uses (tests/fixtures/README.md names the
file, function and commit of each layout):

- `bench_offline_throughput` (`throughput_test_once`): every prompt handed to
  the engine at once; `successful_requests`, `total_latency`,
  `total_input_tokens`, `total_output_tokens`, `request_throughput`,
  `input_throughput`, `output_throughput`, `total_throughput` and, in later versions,
  the scheduler's `last_gen_throughput`. One `mixed` measurement per run
  (output tokens/s over the whole run, prefill included). The file says how
  many prompts ran, not how many the engine ran at once (that is its
  `--max-running-requests` and KV room): the batch comes from the context.
- `bench_one_batch_server` (`run_one_case`): one batch of `batch_size`
  prompts sent in one request, per (batch, input, output). Three layouts:
  the first wrote `latency`, `output_throughput` = batch x output_len /
  latency (prefill included: phase mixed) and `overall_throughput`; the
  streaming one (with `last_gen_throughput`) made `output_throughput` the
  rate after the last request's first token (decode); the current one adds
  `input_throughput` = prompt tokens / `last_ttft` (prefill) and, since the
  early-stop accounting, `steady_state_output_throughput` (the window in
  which every request is decoding), preferred for decode where written.
"""

from __future__ import annotations

from typing import Any

from core.evidence.formats import (
    Extract,
    Format,
    FormatError,
    Getter,
    Input,
    ask,
    from_records,
    number,
    ratio,
    require,
    rounded,
)

OFFLINE = "sglang-offline"
ONE_BATCH_SERVER = "sglang-one-batch-server"


def _records(inp: Input) -> list[dict[str, Any]]:
    assert inp.records is not None, "a JSON format reads records"
    return inp.records


def is_offline(r: dict[str, Any]) -> bool:
    """`throughput_test_once`'s dict: `successful_requests` and `total_latency` (bench_serving writes `completed`, `duration`)."""
    return {"successful_requests", "total_latency", "output_throughput"} <= set(r)


def is_one_batch_server(r: dict[str, Any]) -> bool:
    """`run_one_case`'s dict: `latency` and `overall_throughput` (bench_one_batch writes `total_latency`, `prefill_latency`)."""
    return {"run_name", "input_len", "output_len", "latency", "overall_throughput"} <= set(r)


def offline_throughput(records: list[dict[str, Any]], context: dict[str, Any]) -> Extract:
    """`python -m sglang.bench_offline_throughput --result-filename`: one mixed measurement per JSON line."""
    for i, r in enumerate(records, 1):
        require(r, OFFLINE, ("successful_requests",), ("total_input_tokens",), ("total_output_tokens",), ("output_throughput",), row=i)
    if context.get("batch") is None:
        raise FormatError(
            ask(
                "bench_offline_throughput hands every prompt to the engine at once and writes only their count "
                "(successful_requests), not how many ran at once",
                "batch",
            ),
            column="successful_requests",
        )
    spec: dict[str, tuple[str, Getter]] = {
        "phase": ("(offline run, prefill included)", lambda r: "mixed"),
        "batch": ("batch (given as context)", lambda r: context["batch"]),
        "input_tokens": (
            "total_input_tokens / successful_requests",
            lambda r: rounded(ratio(r["total_input_tokens"], r["successful_requests"])),
        ),
        "output_tokens": (
            "total_output_tokens / successful_requests",
            lambda r: rounded(ratio(r["total_output_tokens"], r["successful_requests"])),
        ),
        "tokens_per_s": ("output_throughput", lambda r: r["output_throughput"]),
        "requests": ("successful_requests", lambda r: r["successful_requests"]),
    }
    notes = [
        "output tokens/s over the whole offline run (prefill included); batch as given: the file holds the prompt count only",
    ]
    if any("last_gen_throughput" in r for r in records):
        notes.append("last_gen_throughput (the scheduler's last logged decode rate, at an unknown batch) is not read")
    return from_records(OFFLINE, records, spec, notes=notes)


def _decode_rate(r: dict[str, Any]) -> tuple[Any, str]:
    steady = r.get("steady_state_output_throughput")
    if steady is not None:
        return steady, "steady_state_output_throughput"
    return r["output_throughput"], "output_throughput"


def _is_zero(value: Any) -> bool:
    return number(value) == 0.0


def one_batch_server(records: list[dict[str, Any]]) -> Extract:
    """`python -m sglang.bench_one_batch_server --result-filename`: per line, prefill and decode where written."""
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    notes: list[str] = []
    skipped: list[int] = []
    first_layout = no_prefill = 0
    for i, r in enumerate(records, 1):
        require(r, ONE_BATCH_SERVER, ("batch_size",), ("input_len",), ("output_len",), ("latency",), ("output_throughput",), row=i)
        # `input_throughput` / `last_ttft` (and `last_gen_throughput`) came with the streaming measurement, which also
        # made `output_throughput` the rate after the last first token; before it, prefill was inside it.
        streamed = any(k in r for k in ("last_ttft", "input_throughput", "last_gen_throughput"))
        if "input_throughput" in r:
            require(r, ONE_BATCH_SERVER, ("last_ttft",), row=i)
            rows.append({**r, "_phase": "prefill", "_tps": r["input_throughput"], "_ttft": r["last_ttft"], "_tpot": None})
            numbers.append(i)
        if not streamed:
            first_layout += 1
            rows.append({**r, "_phase": "mixed", "_tps": r["output_throughput"], "_ttft": None, "_tpot": None})
            numbers.append(i)
            continue
        if "input_throughput" not in r:
            no_prefill += 1
        rate, _ = _decode_rate(r)
        if (number(r["output_len"]) is not None and r["output_len"] <= 1) or _is_zero(rate):
            skipped.append(i)  # no decode step after the first token: no decode rate
            continue
        tpot = ratio(r["batch_size"], rate) if number(rate) is not None and number(r["batch_size"]) is not None else None
        rows.append({**r, "_phase": "decode", "_tps": rate, "_ttft": None, "_tpot": tpot})
        numbers.append(i)
    if not rows:
        raise FormatError(f"every record has output_len 1 (or no decode rate): no measurement (record {skipped[0]})", row=skipped[0])
    steady = any(r.get("steady_state_output_throughput") is not None for r in records)
    spec: dict[str, tuple[str, Getter]] = {
        "phase": ("(input_throughput: prefill / output_throughput: decode)", lambda r: r["_phase"]),
        "batch": ("batch_size", lambda r: r["batch_size"]),
        "input_tokens": ("input_len", lambda r: r["input_len"]),
        "output_tokens": ("output_len", lambda r: r["output_len"]),
        "tokens_per_s": (
            "input_throughput / " + ("steady_state_output_throughput" if steady else "output_throughput"),
            lambda r: r["_tps"],
        ),
        "ttft_s": ("last_ttft", lambda r: r["_ttft"]),
        "tpot_s": ("batch_size / decode tokens/s (the tool's ITL)", lambda r: r["_tpot"]),
    }
    if steady:
        notes.append("decode: steady_state_output_throughput (every request decoding) where written, else output_throughput")
    if first_layout:
        notes.append(
            f"{first_layout} record(s) of the first layout: output_throughput = batch x output_len / latency, prefill included (mixed)"
        )
    if no_prefill:
        notes.append(
            f"{no_prefill} record(s) write no TTFT or input_throughput (the first streaming layout): decode only, no prefill measurement"
        )
    if skipped:
        notes.append(f"no decode measurement for output_len 1 (or a decode rate of 0) at record {', '.join(map(str, skipped))}")
    return from_records(ONE_BATCH_SERVER, rows, spec, notes=notes, rows=numbers)


#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = (
    Format(
        OFFLINE,
        "python -m sglang.bench_offline_throughput --result-filename JSONL (give the batch)",
        lambda i: offline_throughput(_records(i), i.context),
        json=is_offline,
    ),
    Format(
        ONE_BATCH_SERVER,
        "python -m sglang.bench_one_batch_server --result-filename JSONL (prefill and decode per batch size)",
        lambda i: one_batch_server(_records(i)),
        json=is_one_batch_server,
    ),
)
