"""The result of evaluating scenarios: one declared schema, a frame of it, a typed view of one row.

`evaluate` (core.model.ceilings) returns a Polars frame with one row per
scenario and the columns of RESULT_SCHEMA: `scenario_id`, the scenario's own
fields (core.model.scenario, with `compute` resolved to the format used
when it was left on auto) and the figures declared here, each with its unit
and meaning. `Ceiling` is one row as a dataclass (`ceiling()` returns it);
`FIGURES` lists the figures for tables, the CLI and the report.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field, fields
from typing import Any

import polars as pl

from core.model.scenario import FIELDS, SCENARIO_SCHEMA, Scenario


def _figure(unit: str, doc: str) -> Any:
    return field(metadata={"unit": unit, "doc": doc})


@dataclass(frozen=True)
class Ceiling:
    """The ceilings of one scenario (one row of RESULT_SCHEMA); figures in SI units, None where there is none."""

    scenario: Scenario
    scenario_id: int
    # the accelerator
    gpu_name: str = _figure("", "the accelerator's display name")
    compute_used: str | None = _figure("", "the precision whose peak applies: the one asked for, or the nearest wider one listed")
    peak_flops: float | None = _figure("FLOP/s", "dense datasheet peak per GPU at compute_used")
    bandwidth_bytes_per_s: float = _figure("byte/s", "datasheet memory bandwidth per GPU")
    ridge: float | None = _figure("FLOP/byte", "peak_flops / bandwidth_bytes_per_s: below it an operation is memory-bound")
    power_w: float | None = _figure("W", "board power per GPU")
    # the decode step
    step_time_s: float = _figure("s", "one decode step: operations + tensor-parallel communication + overhead")
    flops: float = _figure("FLOP", "FLOPs of a decode step, all GPUs")
    bytes: float = _figure("byte", "HBM bytes a decode step moves, all GPUs")
    weight_bytes: float = _figure("byte", "weight bytes a decode step reads, all GPUs")
    kv_bytes: float = _figure("byte", "KV-cache bytes a decode step reads and writes, all GPUs")
    intensity: float = _figure("FLOP/byte", "flops / bytes of the whole decode step")
    bound: str = _figure("", "what the decode step waits on most: memory, compute or communication")
    memory_bound_time_s: float = _figure("s", "time of the decode step's memory-bound operations")
    compute_bound_time_s: float = _figure("s", "time of the decode step's compute-bound operations")
    comm_time_s: float = _figure("s", "tensor-parallel all-reduces of a decode step")
    # speculative decoding
    tokens_per_step: float = _figure("tokens", "expected tokens per sequence per decode cycle (1 without speculative decoding)")
    draft_step_time_s: float | None = _figure("s", "one decode step of the draft model")
    cycle_time_s: float = _figure("s", "one decode cycle: the target's step and the draft model's steps")
    # throughput (None when the scenario does not fit or no peak applies)
    tokens_per_s_per_user: float | None = _figure("tokens/s", "output tokens per second each sequence sees")
    tokens_per_s_total: float | None = _figure("tokens/s", "output tokens per second of the whole batch")
    time_per_output_token_s: float | None = _figure("s", "decode cycle time / tokens per cycle")
    # prefill
    ttft_s: float | None = _figure("s", "time to first token: the prefill of one prompt on these GPUs")
    prefill_tokens_per_s: float | None = _figure("tokens/s", "prompt tokens per second of that prefill")
    prefill_step_time_s: float = _figure("s", "the prefill step, whether or not a peak applies")
    prefill_flops: float = _figure("FLOP", "FLOPs of the prefill, all GPUs")
    prefill_bytes: float = _figure("byte", "HBM bytes of the prefill, all GPUs")
    prefill_intensity: float = _figure("FLOP/byte", "prefill_flops / prefill_bytes")
    prefill_bound: str = _figure("", "what the prefill waits on most: memory, compute or communication")
    # the seeds' bandwidth-only ceilings (aggregate bandwidth / bytes read per step)
    bandwidth_ceiling_tokens_per_s: float = _figure("tokens/s", "per user: aggregate bandwidth / weight bytes per step")
    bandwidth_ceiling_tokens_per_s_total: float = _figure("tokens/s", "the same times the batch")
    bandwidth_ceiling_with_kv_tokens_per_s: float = _figure("tokens/s", "per user: aggregate bandwidth / (weight + KV bytes read)")
    bandwidth_ceiling_with_kv_tokens_per_s_total: float = _figure("tokens/s", "the same times the batch")
    # memory
    weight_memory_bytes: float = _figure("byte", "weights held (a draft model's included), all GPUs")
    kv_bytes_per_seq_all_gpus: float = _figure("byte", "KV cache of one sequence at this context, all GPUs")
    kv_memory_bytes: float = _figure("byte", "KV cache of the whole batch, all GPUs")
    reserve_bytes: float = _figure("byte", "memory held back (reserve fraction of every GPU)")
    capacity_bytes: float = _figure("byte", "memory of all GPUs")
    memory_required_bytes: float = _figure("byte", "weights + KV cache + reserve")
    fits: bool = _figure("", "weights + KV cache fit in the memory less the reserve")
    max_batch: int | None = _figure("sequences", "the largest batch that fits at this context (None: no KV cache to hold)")
    min_gpus: int | None = _figure("GPUs", "the fewest GPUs holding the weights and one sequence at this context")
    within_scaleup_domain: bool = _figure(
        "", "the GPUs fit in one scale-up domain of the accelerator (tensor parallelism that is built); true where no source gives it"
    )
    # cost and efficiency
    usd_per_gpu_hour_used: float | None = _figure(
        "USD", "the price per GPU-hour applied: the scenario's own, else the median published on-demand price"
    )
    usd_per_million_tokens: float | None = _figure(
        "USD", "per million output tokens: price per GPU-hour x GPUs / output tokens per hour x 1e6"
    )
    usd_per_million_input_tokens: float | None = _figure(
        "USD", "per million input tokens: price per GPU-hour x GPUs / prompt tokens per hour of prefill x 1e6"
    )
    tokens_per_s_per_watt: float | None = _figure("tokens/s/W", "tokens_per_s_total / (GPUs x board power)")
    # the prediction: what the scenario's framework reaches (core.model.predicted), None without a fit
    predicted_step_time_s: float | None = _figure("s", "predicted decode step at the framework's fitted efficiencies and overheads")
    predicted_tokens_per_s_per_user: float | None = _figure("tokens/s", "predicted output tokens per second each sequence sees")
    predicted_tokens_per_s_total: float | None = _figure("tokens/s", "predicted output tokens per second of the whole batch")
    predicted_tpot_s: float | None = _figure("s", "predicted time per output token (decode cycle / tokens per cycle)")
    predicted_ttft_s: float | None = _figure(
        "s",
        "predicted time to first token of a request arriving into the running batch: its prompt in the framework's chunks, each "
        "chunk a step that also carries the other sequences' tokens, plus the request overhead",
    )
    predicted_burst_ttft_s: float | None = _figure(
        "s",
        "predicted median time to first token when the batch's prompts arrive together (a fixed batch, or every request sent "
        "at once): half the wave's chunked prefill before its own, plus the request overhead",
    )
    predicted_prefill_tokens_per_s: float | None = _figure("tokens/s", "predicted prompt tokens per second of the wave's prefill")
    predicted_usd_per_million_tokens: float | None = _figure("USD", "per million output tokens at the predicted throughput")
    predicted_error: float | None = _figure(
        "", "held-out error of predictions like these (mean |predicted - measured| / measured, one publisher's campaign held out)"
    )
    predicted_ttft_error: float | None = _figure("", "the same for times to first token and prefill rates")
    predicted_basis: str | None = _figure("", "what the held-out error rests on, in words")
    flags: list[str] = _figure("", "what the figures rest on that a reader should know")

    def __getitem__(self, name: str) -> Any:
        """A figure or a scenario field by name (for code that reads columns by name)."""
        if name in FIGURES:
            return getattr(self, name)
        return getattr(self.scenario, name)

    def record(self) -> dict[str, Any]:
        """The scenario and every figure as one flat record (the CLI's JSON)."""
        return {**self.scenario.model_dump(), **{name: getattr(self, name) for name in FIGURES}}


_PL_TYPES: dict[Any, Any] = {str: pl.String, float: pl.Float64, int: pl.Int64, bool: pl.Boolean, list[str]: pl.List(pl.String)}


def _dtype(annotation: Any) -> Any:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return _PL_TYPES[args[0] if args and typing.get_origin(annotation) is not list else annotation]


_HINTS = typing.get_type_hints(Ceiling)
#: The figures of a result, in order: name -> (unit, meaning).
FIGURES: dict[str, tuple[str, str]] = {
    f.name: (f.metadata["unit"], f.metadata["doc"]) for f in fields(Ceiling) if f.name not in ("scenario", "scenario_id")
}
#: The columns of `evaluate`'s frame.
RESULT_SCHEMA: dict[str, Any] = {
    "scenario_id": pl.Int64,
    **SCENARIO_SCHEMA,
    **{name: _dtype(_HINTS[name]) for name in FIGURES},
}


def ceiling_of_row(row: dict[str, Any]) -> Ceiling:
    """The typed view of one row of `evaluate`'s frame."""
    scenario = Scenario.model_validate({name: row[name] for name in FIELDS})
    return Ceiling(scenario=scenario, scenario_id=int(row["scenario_id"]), **{name: plain(row[name]) for name in FIGURES})


def plain(value: Any) -> Any:
    """NaN as None (a frame holds nulls; arrays hold NaN)."""
    return None if isinstance(value, float) and math.isnan(value) else value
