"""Ceilings of scenarios: step times, tokens/s, TTFT, memory fit, cost; one evaluation for any number of them.

`evaluate(cat, scenarios)` takes Scenario records or a frame with a column
per Scenario field (missing columns take the field's default) and returns
one row per scenario with the columns of core.model.result.RESULT_SCHEMA;
`ceiling(cat, scenario)` returns one scenario's row as a typed `Ceiling`.
Every figure is computed for all scenarios at once, as arrays; the steps'
operation times come from the one engine (core.model.engine).

Rules stated once:
- the steps of a scenario (`scenario_steps`): the decode step (batch
  sequences, one new token each, or k + 1 under speculative decoding,
  attending to `context` cached tokens), the prefill of one prompt (the time
  to first token; the lm_head on the last token only) and, with speculative
  decoding, the draft model's decode step;
- a step's time: its operations (the engine) + two tensor-parallel
  all-reduces per layer of batch x q x hidden activations, each costing the
  accelerator's published small-message all-reduce latency plus moving
  2 (n - 1) / n of the message over the scale-up link in one direction (half
  the bidirectional figure vendors quote) + the stated overhead;
- tensor parallelism spans at most the accelerator's scale-up domain (8 on
  an HGX board, 72 in an NVL72 rack, 1 for parts not ganged in practice): a
  wider group is still computed but flagged, since it is not built;
- cost: the scenario's price per GPU-hour, or where it is 0 the median
  published on-demand price (core.catalogue.prices), over the tokens of an
  hour: output tokens at the decode ceiling, input tokens at the prefill's;
- memory fit: weights (+ draft weights) + KV(batch, context) must fit in
  num_gpus x memory x (1 - reserve_fraction); a scenario that does not fit
  gets no throughput (None) and the flag "does not fit";
- speculative decoding: draft length k, acceptance a: expected tokens per
  verify step (1 - a^(k+1)) / (1 - a); one cycle = k draft decode steps + one
  target step over k + 1 tokens per sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from core.catalogue.catalogue import Catalogue, UnknownIdError
from core.catalogue.precisions import ACTIVATION_BYTES, COMPUTE_FORMATS, FORMATS, PEAK_PRECISIONS, UnknownPrecisionError, default_compute
from core.model import predicted as pm
from core.model import workload as wl
from core.model.engine import SortedWork, Steps, StepSums, distinct_rows, operation_costs, sort_work, time_steps
from core.model.result import FIGURES, RESULT_SCHEMA, Ceiling, ceiling_of_row, plain
from core.model.scenario import FIELDS, SCENARIO_SCHEMA, Scenario, ScenarioError, check_frame, default

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.intp]

_FORMAT_INDEX = {name: i for i, name in enumerate(FORMATS)}
_FORMAT_BYTES_BY_CODE = np.array([f.bytes for f in FORMATS.values()])
_COMPUTE_INDEX = {c: i for i, c in enumerate(COMPUTE_FORMATS)}
_AUTO = {w: default_compute(w) for w in FORMATS}
_TEXT = frozenset(n for n in FIELDS if SCENARIO_SCHEMA[n] == pl.String)
_ACT_BYTES = np.array([ACTIVATION_BYTES[p] for p in PEAK_PRECISIONS])
_REQUESTED_ACT_BYTES = np.array([ACTIVATION_BYTES[c] for c in COMPUTE_FORMATS])
_FRAMEWORK_INDEX = {f: i for i, f in enumerate(pm.FRAMEWORKS)}
_FORMAT_NAMES = list(FORMATS)
_NUMBERS = tuple(n for n in FIELDS if n not in _TEXT)
_OPTIONAL = frozenset(n for n in _NUMBERS if default(n) is None)


def _floats(values: list[Any]) -> Array:
    """Numbers, None as NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


@dataclass(frozen=True)
class ScenarioArrays:
    """Scenarios as columns: each Scenario field (numbers as arrays, text as lists or Series) and what they name.

    `gpu`, `model` and `draft` index the catalogue (-1: no draft model),
    `compute` indexes COMPUTE_FORMATS (auto resolved to the weights' default),
    `weights` FORMATS, `framework` core.model.predicted.FRAMEWORKS;
    `weight_bytes` and `kv_bytes` are bytes per element of the formats.
    """

    size: int
    values: dict[str, Any]
    gpu: Index
    model: Index
    draft: Index
    compute: Index
    weights: Index
    framework: Index
    weight_bytes: Array
    kv_bytes: Array

    def number(self, name: str) -> Array:
        """A numeric field as float64."""
        return self.values[name].astype(np.float64, copy=False)  # type: ignore[no-any-return]

    @classmethod
    def of(cls, cat: Catalogue, scenarios: Sequence[Scenario] | pl.DataFrame) -> ScenarioArrays:
        """Scenario records, or a frame with a column per field (defaults fill the missing ones), checked against the catalogue."""
        tables = {
            "gpu": ("accelerator", cat.gpu_index),
            "model": ("model", cat.model_index),
            "spec_draft_model": ("model", cat.model_index),
            "compute": ("compute precision", _COMPUTE_INDEX),
            "weights": ("precision", _FORMAT_INDEX),
            "kv": ("precision", _FORMAT_INDEX),
            "framework": ("framework", _FRAMEWORK_INDEX),
        }
        if isinstance(scenarios, pl.DataFrame):
            frame = scenarios.with_columns(
                pl.lit(default(n), dtype=SCENARIO_SCHEMA[n]).alias(n) for n in FIELDS if n not in scenarios.columns
            )
            check_frame(frame)
            frame = frame.with_columns(
                pl.coalesce(
                    pl.col("compute").cast(pl.String), pl.col("weights").replace_strict(_AUTO, default=None, return_dtype=pl.String)
                )
            )
            values: dict[str, Any] = {n: frame[n] if n in _TEXT else frame[n].to_numpy() for n in FIELDS}
            found = frame.select(
                pl.col(n).replace_strict(index, default=-1, return_dtype=pl.Int64).fill_null(-1) for n, (_, index) in tables.items()
            )
            codes = {n: found[n].to_numpy().astype(np.intp) for n in tables}
            for name, (kind, index) in tables.items():
                unknown = (codes[name] < 0) & (frame[name].is_not_null().to_numpy() if name == "spec_draft_model" else True)
                if unknown.any():
                    raise _unknown(kind, frame[name][int(np.argmax(unknown))], index)
        else:
            values = {n: [getattr(s, n) for s in scenarios] for n in FIELDS}
            values["compute"] = [c or default_compute(w) for c, w in zip(values["compute"], values["weights"], strict=True)]
            codes = {}
            for name, (kind, index) in tables.items():
                for value in values[name]:
                    if value not in index and not (value is None and name == "spec_draft_model"):
                        raise _unknown(kind, value, index)
                codes[name] = np.array([-1 if v is None else index[v] for v in values[name]], dtype=np.intp)
            # an optional number left empty is NaN, as a frame's null reads (an array of None and floats is of objects)
            values.update({n: np.asarray(values[n]) if n not in _OPTIONAL else _floats(values[n]) for n in _NUMBERS})
        return cls(
            size=len(codes["gpu"]),
            values=values,
            gpu=codes["gpu"],
            model=codes["model"],
            draft=codes["spec_draft_model"],
            compute=codes["compute"],
            weights=codes["weights"],
            framework=codes["framework"],
            weight_bytes=_weight_bytes(_FORMAT_BYTES_BY_CODE[codes["weights"]], values["weight_bits"]),
            kv_bytes=_FORMAT_BYTES_BY_CODE[codes["kv"]],
        )


def _weight_bytes(format_bytes: Array, weight_bits: Any) -> Array:
    """Bytes per weight: the file's own bits per weight / 8 where a scenario gives them, else its format's."""
    bits = weight_bits.astype(np.float64, copy=False)
    return np.where(np.isfinite(bits), bits / 8.0, format_bytes)  # type: ignore[no-any-return]


def _unknown(kind: str, value: Any, index: dict[str, int]) -> Exception:
    if kind == "framework":
        return ScenarioError("framework", f"unknown framework {value!r}; known: {', '.join(index)}")
    if kind == "precision":
        return UnknownPrecisionError(f"unknown precision {value!r}; known: {', '.join(index)}")
    return UnknownIdError(kind, str(value), sorted(index))


@dataclass(frozen=True)
class ScenarioSteps:
    """The steps of each scenario and the accelerator figures they run at (arrays of one entry per scenario)."""

    decode: Steps
    prefill: Steps
    draft: Steps  # only the scenarios that decode speculatively (`speculative`)
    speculative: npt.NDArray[np.bool_]
    bandwidth: Array  # byte/s per GPU, derated
    peak: Array  # FLOP/s per GPU at the compute format used, derated (NaN: none supported)
    compute_used: Index  # index into PEAK_PRECISIONS, -1 when none


def scenario_steps(cat: Catalogue, s: ScenarioArrays) -> ScenarioSteps:
    """The decode, prefill and draft steps of every scenario, with the bandwidth and peak they see."""
    hw = cat.hardware
    used = hw.compute_used[s.gpu, s.compute]
    peak = np.where(used >= 0, hw.peaks[s.gpu, np.maximum(used, 0)], np.nan)
    # activations travel in the format the kernels compute in
    act = np.where(used >= 0, _ACT_BYTES[np.maximum(used, 0)], _REQUESTED_ACT_BYTES[s.compute])
    speculative = (s.number("spec_draft_len") > 0) & (s.draft >= 0)
    n, batch, context = s.number("num_gpus"), s.number("batch"), s.number("context")
    wb, kvb = s.weight_bytes, s.kv_bytes
    flash = np.asarray(s.values["flash_attention"], dtype=bool)
    ones, no = np.ones(s.size), np.zeros(s.size, dtype=bool)
    q = np.where(speculative, s.number("spec_draft_len") + 1.0, 1.0)
    decode = Steps(s.model, n, wb, kvb, act, batch, q, context, no, flash)
    prefill = Steps(s.model, n, wb, kvb, act, ones, s.number("prompt"), s.number("depth"), ~no, flash)
    drafted = np.flatnonzero(speculative) if speculative.any() else slice(0)  # (a slice: no copies of nothing)
    draft = Steps(s.draft, n, wb, kvb, act, batch, ones, context, no, flash).take(drafted)
    bandwidth = hw.bandwidth_bytes_per_s[s.gpu] * s.number("eff_bandwidth")
    return ScenarioSteps(decode, prefill, draft, speculative, bandwidth, peak * s.number("eff_compute"), used)


@dataclass(frozen=True)
class StepTotals:
    """A step's operation sums (the engine) with its communication, total time and bound side."""

    sums: StepSums
    comm_time_s: Array
    step_time_s: Array
    bound: Index  # 0 memory, 1 compute, 2 communication

    @property
    def intensity(self) -> Array:
        return self.sums.flops / self.sums.bytes

    def take(self, rows: Index | slice) -> StepTotals:
        """The totals of the given steps."""
        sums = StepSums(**{f.name: getattr(self.sums, f.name)[rows] for f in _STEP_SUMS})
        return StepTotals(sums, self.comm_time_s[rows], self.step_time_s[rows], self.bound[rows])


_STEP_SUMS = fields(StepSums)

BOUNDS = ("memory", "compute", "communication")


def _nan_to_zero(values: Array) -> Array:
    """np.nan_to_num(values, nan=0.0) (infinities to the largest floats too), without its fixed cost of a few µs."""
    big = np.finfo(np.float64).max
    return np.where(np.isnan(values), 0.0, np.minimum(np.maximum(values, -big), big))  # type: ignore[no-any-return]


def comm_seconds(cat: Catalogue, steps: Steps, gpu: Index, reps: Array | None = None) -> Array:
    """Tensor-parallel communication of each step: two all-reduces per layer of batch x q x hidden activations, each the
    published small-message latency plus 2 (n - 1) / n of the message over the scale-up link one way; `reps`: the step
    runs in that many repetitions (prefill chunks), each with its share of the message and its own latencies."""
    n = steps.num_gpus
    shape = cat.model_arrays
    message = steps.batch * steps.q * shape["hidden_size"][steps.model] * steps.act_bytes
    one_way = cat.hardware.scaleup_bytes_per_s[gpu] / 2.0
    calls = 2.0 * shape["num_layers"][steps.model]
    with np.errstate(invalid="ignore", divide="ignore"):
        ring = np.where(n > 1, calls * 2.0 * (n - 1.0) / n * message / one_way, 0.0)
    latency = np.where(n > 1, calls * _nan_to_zero(cat.hardware.allreduce_latency_s[gpu]), 0.0)
    if reps is not None:
        ring = ring / reps
    return _nan_to_zero(ring) + latency  # no link or latency figure: not costed (flagged)


def step_totals(cat: Catalogue, steps: Steps, gpu: Index, bandwidth: Array, peak: Array, overhead_s: Array) -> StepTotals:
    """The engine's operation time of each step plus tensor-parallel communication and the stated overhead."""
    sums = time_steps(cat.ops_matrix, steps, bandwidth, peak)
    comm = comm_seconds(cat, steps, gpu)
    mem, comp = sums.memory_bound_time_s, sums.compute_bound_time_s
    bound = np.where((comm > mem) & (comm > comp), 2, np.where(mem >= comp, 0, 1))
    return StepTotals(sums, comm, sums.ops_time_s + comm + overhead_s, bound)


def achieved_work(cat: Catalogue, steps: Steps, reps: Array | None = None) -> SortedWork:
    """The steps' work sorted by operation class, for `achieved_step_times`."""
    return sort_work(cat.ops_matrix, steps, reps=reps, class_of_kind=pm.CLASS_BY_CODE)


def achieved_step_times(
    cat: Catalogue,
    steps: Steps,
    gpu: Index,
    peak: Array,
    params: Array,
    *,
    reps: Array | None = None,
    jacobian: bool = False,
    work: SortedWork | None = None,
) -> tuple[Array, Array | None]:
    """Each step's predicted time (s): its operations at the achieved roofs of their class (datasheet bandwidth and `peak`
    x the step's efficiencies, by the one engine), plus the kernel, step and per-sequence overheads and the tensor-parallel
    communication at its achieved share of the link (core.model.predicted). `params`: steps x NP in their own units;
    `reps`: repetitions (prefill chunks). With `jacobian`: d time / d parameter (steps x NP) too. `work`: the steps' work
    from `achieved_work` when the caller times the same steps at many parameters (a fit)."""
    count = len(steps)
    reps = np.ones(count) if reps is None else reps
    work = achieved_work(cat, steps, reps) if work is None else work
    c = len(pm.CLASSES)
    eta_mem, eta_cmp = params[:, :c], params[:, c : 2 * c]
    bandwidth = cat.hardware.bandwidth_bytes_per_s[gpu]
    memory, compute = work.times(bandwidth[:, None] * eta_mem, peak[:, None] * eta_cmp)
    comm = comm_seconds(cat, steps, gpu, reps)
    beyond = steps.num_gpus > np.nan_to_num(cat.hardware.scaleup_domain[gpu], nan=np.inf)
    comm_in, comm_out = np.where(beyond, 0.0, comm), np.where(beyond, comm, 0.0)
    P = pm.P
    k, s, q = params[:, P["overhead_kernel_s"]], params[:, P["overhead_step_s"]], params[:, P["overhead_sequence_s"]]
    e_in, e_out = params[:, P["eta_comm"]], params[:, P["eta_comm_out"]]
    sequences = steps.batch / reps
    with np.errstate(divide="ignore", invalid="ignore"):
        link = np.where(comm_in > 0, comm_in / e_in, 0.0) + np.where(comm_out > 0, comm_out / e_out, 0.0)
    times = reps * (memory.sum(axis=1) + compute.sum(axis=1) + work.kernels * k + s + sequences * q + link)
    if not jacobian:
        return times, None
    jac = np.zeros((count, pm.NP))
    r = reps[:, None]
    jac[:, :c] = -r * memory / eta_mem
    jac[:, c : 2 * c] = -r * compute / eta_cmp
    jac[:, P["overhead_kernel_s"]] = reps * work.kernels
    jac[:, P["overhead_step_s"]] = reps
    jac[:, P["overhead_sequence_s"]] = reps * sequences
    with np.errstate(divide="ignore", invalid="ignore"):
        jac[:, P["eta_comm"]] = -reps * np.where(comm_in > 0, comm_in / e_in**2, 0.0)
        jac[:, P["eta_comm_out"]] = -reps * np.where(comm_out > 0, comm_out / e_out**2, 0.0)
    return times, jac


def evaluate(
    cat: Catalogue,
    scenarios: Sequence[Scenario] | pl.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    predictor: pm.Predictor | None = None,
) -> pl.DataFrame:
    """One row per scenario, in order: the columns of RESULT_SCHEMA (or those asked for); with a `predictor` (default:
    the catalogue's), the predicted figures of each scenario's framework too (else they are empty)."""
    s = ScenarioArrays.of(cat, scenarios)
    names = list(columns) if columns else list(RESULT_SCHEMA)
    schema = {n: RESULT_SCHEMA[n] for n in names}
    if s.size == 0:
        return pl.DataFrame(schema=schema)
    fit = predictor if predictor is not None else cat.predictor
    out = _columns(cat, s, fit if fit is not None and any(n in PREDICTED for n in names) else None)
    if s.size > _FEW:
        return pl.DataFrame({n: out[n] for n in names}, schema=schema, nan_to_null=True)
    # a few rows are quicker to hand over row by row (a frame's fixed cost is per column)
    cells = [_cells(out[n], schema[n]) for n in names]
    return pl.DataFrame([dict(zip(names, row, strict=True)) for row in zip(*cells, strict=True)], schema=schema)


#: Up to this many scenarios the frame is built from rows.
_FEW = 64


def _cells(values: Any, dtype: Any) -> list[Any]:
    """A column as plain Python values: None for NaN, whole numbers for an integer column."""
    if isinstance(values, pl.Series):
        return values.to_list()
    if not isinstance(values, np.ndarray):
        return list(values)
    if values.dtype.kind != "f":
        return values.tolist()  # type: ignore[no-any-return]
    if dtype == pl.Int64:
        return [None if v != v else int(v) for v in values.tolist()]
    if np.isnan(values).any():
        return [None if v != v else v for v in values.tolist()]
    return values.tolist()  # type: ignore[no-any-return]


def ceiling(cat: Catalogue, scenario: Scenario, *, predictor: pm.Predictor | None = None) -> Ceiling:
    """The ceilings of one scenario (and, with a `predictor`, default the catalogue's, its predicted figures)."""
    s = ScenarioArrays.of(cat, [scenario])
    out = _columns(cat, s, predictor if predictor is not None else cat.predictor)
    resolved = scenario if scenario.compute is not None else scenario.model_copy(update={"compute": s.values["compute"][0]})
    return Ceiling(scenario=resolved, scenario_id=0, **_first_row(out))


def ceilings_by_batch(cat: Catalogue, scenario: Scenario, batches: Sequence[int]) -> dict[int, Ceiling]:
    """The scenario's ceilings at each of `batches` (its own batch ignored), from one evaluation."""
    frame = evaluate(cat, [scenario.model_copy(update={"batch": int(b)}) for b in sorted(set(batches))])
    return {int(row["batch"]): ceiling_of_row(row) for row in frame.iter_rows(named=True)}


#: The per-operation table's row for tensor-parallel communication (`operation_table(..., communication=True)`).
COMMUNICATION_ROW = ("tensor parallel", "all-reduce (2 per layer)")


def operation_table(cat: Catalogue, scenario: Scenario, *, phase: str = "decode", communication: bool = False) -> pl.DataFrame:
    """The per-operation roofline of one step of a scenario: decode (the verify step under speculative decoding) or prefill.

    One row per operation and layer group: FLOPs, bytes (weights, activations,
    KV), intensity, bound side, time (all layers of the group) and share of
    the step's operation time. With `communication`, tensor parallelism's
    all-reduces are one more row (kind "comm", bound "communication", their
    latency and link time) and the shares are of operations plus it.
    """
    s = ScenarioArrays.of(cat, [scenario])
    st = scenario_steps(cat, s)
    step = st.prefill if phase == "prefill" else st.decode
    costs = operation_costs(cat.ops_matrix, step, st.bandwidth, st.peak)
    labels = cat.ops.filter(pl.col("model_id") == scenario.model).select("group", "op")
    rows = pl.concat([labels, costs], how="horizontal")
    if communication and scenario.num_gpus > 1:
        comm = float(step_totals(cat, step, s.gpu, st.bandwidth, st.peak, np.zeros(1)).comm_time_s[0])
        layers = int(cat.model_arrays["num_layers"][s.model[0]])
        extra = {"group": COMMUNICATION_ROW[0], "op": COMMUNICATION_ROW[1], "kind": "comm", "layers": layers, "bound": "communication"}
        extra.update({"memory_time_s": 0.0, "compute_time_s": 0.0, "time_s": comm})
        rows = pl.concat([rows, pl.DataFrame([extra])], how="diagonal_relaxed")
    total = rows["time_s"].sum()
    return rows.select(
        "group",
        "op",
        "kind",
        "layers",
        "flops",
        "weight_bytes",
        pl.col("act_bytes_total").alias("act_bytes"),
        (pl.col("kv_read_bytes") + pl.col("kv_write_bytes")).alias("kv_bytes"),
        "kv_shard",
        "bytes",
        "intensity",
        "bound",
        "memory_time_s",
        "compute_time_s",
        "time_s",
        (pl.col("time_s") / total).alias("share"),
    )


def _first(values: Any, dtype: Any) -> Any:
    """The first value of a column as a plain Python value of the schema's type (None for NaN).

    `_cells(values[:1], dtype)[0]` gives the same, at three times the cost: ceiling() reads some sixty of these.
    """
    if not isinstance(values, np.ndarray):
        return values[0]
    value = plain(values[0].item())
    return int(value) if dtype == pl.Int64 and value is not None else value


_INTEGER_FIGURES = frozenset(n for n in FIGURES if RESULT_SCHEMA[n] == pl.Int64)


def _first_row(out: dict[str, Any]) -> dict[str, Any]:
    """Every figure's first value, as `_first` reads it, the float figures read from one array (a call each is most of
    what sixty `_first` calls cost)."""
    floats = [n for n in FIGURES if isinstance(out[n], np.ndarray) and out[n].dtype == np.float64]
    values = dict(zip(floats, np.concatenate([out[n][:1] for n in floats]).tolist(), strict=True))
    row = {}
    for name in FIGURES:
        if name in values:
            v = values[name]
            row[name] = None if v != v else int(v) if name in _INTEGER_FIGURES else v
        else:
            row[name] = _first(out[name], RESULT_SCHEMA[name])
    return row


def _columns(cat: Catalogue, s: ScenarioArrays, predictor: pm.Predictor | None = None) -> dict[str, Any]:
    """Every column of RESULT_SCHEMA for the scenarios, as arrays (NaN where there is no value)."""
    hw = cat.hardware
    st = scenario_steps(cat, s)
    n, batch = s.number("num_gpus"), s.number("batch")
    overhead = s.number("overhead_s")
    # a prompt's prefill is the same at every decode batch and context: each distinct one is timed once per accelerator
    timing = {f.name: getattr(st.prefill, f.name) for f in fields(Steps)}
    first, of = distinct_rows({**timing, "gpu": s.gpu, "bandwidth": st.bandwidth, "peak": st.peak, "overhead": overhead})
    drafted = np.flatnonzero(st.speculative)
    # every step of every scenario in one evaluation: decode, the distinct prefills, the draft model's decode
    rows = np.concatenate([np.arange(s.size), first, drafted])
    totals = step_totals(
        cat, Steps.concat(st.decode, st.prefill.take(first), st.draft), s.gpu[rows], st.bandwidth[rows], st.peak[rows], overhead[rows]
    )
    decode = totals.take(slice(0, s.size))
    prefill = totals.take(s.size + of)
    draft_time = np.full(s.size, np.nan)
    draft_time[drafted] = totals.step_time_s[s.size + len(first) :]
    memory = _memory(cat, s, st.speculative)

    a, k = s.number("spec_acceptance"), s.number("spec_draft_len")
    tokens_per_step = np.ones(s.size)
    spec = st.speculative
    tokens_per_step[spec] = (1.0 - a[spec] ** (k[spec] + 1.0)) / (1.0 - a[spec])  # a < 1 (Scenario)
    cycle = decode.step_time_s + np.where(st.speculative, k * _nan_to_zero(draft_time), 0.0)
    costed = ~np.isnan(st.peak)
    served = memory["fits"] & costed
    per_user = np.where(served, tokens_per_step / cycle, np.nan)
    total = per_user * batch
    datasheet_peak = np.where(st.compute_used >= 0, hw.peaks[s.gpu, np.maximum(st.compute_used, 0)], np.nan)
    datasheet_bw = hw.bandwidth_bytes_per_s[s.gpu]
    aggregate_bw = n * st.bandwidth
    # a cache tensor parallelism cannot shard is read whole by every GPU
    kv_read_all_gpus = decode.sums.kv_read_bytes * n / memory["kv_shard"]
    given = s.number("usd_per_gpu_hour")
    price = np.where(given > 0, given, hw.rent_usd_per_hour[s.gpu])
    power = hw.power_w[s.gpu]
    prefill_tps = np.where(costed, s.number("prompt") / prefill.step_time_s, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: dict[str, Any] = {
            "scenario_id": np.arange(s.size),
            **s.values,
            "gpu_name": _names(hw.names, s.gpu),
            "compute_used": _names(PEAK_PRECISIONS, st.compute_used),
            "peak_flops": datasheet_peak,
            "bandwidth_bytes_per_s": datasheet_bw,
            "ridge": datasheet_peak / datasheet_bw,
            "power_w": power,
            "step_time_s": decode.step_time_s,
            "flops": decode.sums.flops,
            "bytes": decode.sums.bytes,
            "weight_bytes": decode.sums.weight_bytes,
            "kv_bytes": decode.sums.kv_read_bytes + decode.sums.kv_write_bytes,
            "intensity": decode.intensity,
            "bound": _names(BOUNDS, decode.bound),
            "memory_bound_time_s": decode.sums.memory_bound_time_s,
            "compute_bound_time_s": decode.sums.compute_bound_time_s,
            "comm_time_s": decode.comm_time_s,
            "tokens_per_step": tokens_per_step,
            "draft_step_time_s": draft_time,
            "cycle_time_s": cycle,
            "tokens_per_s_per_user": per_user,
            "tokens_per_s_total": total,
            "time_per_output_token_s": np.where(served, cycle / tokens_per_step, np.nan),
            "ttft_s": np.where(costed, prefill.step_time_s, np.nan),
            "prefill_tokens_per_s": prefill_tps,
            "prefill_step_time_s": prefill.step_time_s,
            "prefill_flops": prefill.sums.flops,
            "prefill_bytes": prefill.sums.bytes,
            "prefill_intensity": prefill.intensity,
            "prefill_bound": _names(BOUNDS, prefill.bound),
            "bandwidth_ceiling_tokens_per_s": aggregate_bw / decode.sums.weight_bytes,
            "bandwidth_ceiling_tokens_per_s_total": aggregate_bw / decode.sums.weight_bytes * batch,
            "bandwidth_ceiling_with_kv_tokens_per_s": aggregate_bw / (decode.sums.weight_bytes + kv_read_all_gpus),
            "bandwidth_ceiling_with_kv_tokens_per_s_total": aggregate_bw / (decode.sums.weight_bytes + kv_read_all_gpus) * batch,
            **{key: memory[key] for key in _MEMORY_FIGURES},
            "within_scaleup_domain": ~(n > hw.scaleup_domain[s.gpu]),  # no domain given (NaN): within
            "usd_per_gpu_hour_used": price,
            "usd_per_million_tokens": price * n / (total * 3600.0) * 1e6,
            "usd_per_million_input_tokens": np.where(served, price * n / (prefill_tps * 3600.0) * 1e6, np.nan),
            "tokens_per_s_per_watt": total / (n * power),
        }
    out.update(_predicted(cat, s, st, served, tokens_per_step, price, predictor))
    out["flags"] = _flags(cat, s, st, memory["fits"], out["within_scaleup_domain"])
    return out


#: The predicted figures of a result (empty without a fit).
PREDICTED = (
    "predicted_step_time_s",
    "predicted_tokens_per_s_per_user",
    "predicted_tokens_per_s_total",
    "predicted_tpot_s",
    "predicted_ttft_s",
    "predicted_burst_ttft_s",
    "predicted_prefill_tokens_per_s",
    "predicted_usd_per_million_tokens",
    "predicted_error",
    "predicted_ttft_error",
    "predicted_basis",
)


def scenario_parameters(cat: Catalogue, s: ScenarioArrays, predictor: pm.Predictor) -> Array:
    """Each scenario's predicted-model parameters: its accelerator's, framework's, weight format's and model's cell."""
    hw = cat.hardware
    first, of = distinct_rows({"gpu": s.gpu, "framework": s.framework, "weights": s.weights, "model": s.model})
    models = list(cat.records)
    keys = [
        pm.level_keys(hw.vendors[g], hw.families[g], hw.ids[g], pm.FRAMEWORKS[f], _FORMAT_NAMES[w], models[m])
        for g, f, w, m in zip(s.gpu[first], s.framework[first], s.weights[first], s.model[first], strict=True)
    ]
    return predictor.parameters_of(keys)[of]


def arrival_steps(p: Steps, batch: Array, prompt: Array, chunk: Array) -> tuple[Steps, Array]:
    """A request arriving into a running batch of `batch` - 1 others (a server at that concurrency in its steady state):
    its prompt's chunks of the engine's `chunk` tokens, each a step that also carries the other sequences' decode
    tokens. Its time to first token is these steps' time (core.model.workload.expected_ttft). Returns the steps (one
    per scenario, a chunk's work) and their repetitions (the chunks)."""
    reps = np.maximum(np.ceil(prompt / chunk), 1.0)
    steps = Steps(
        p.model,
        p.num_gpus,
        p.weight_bytes,
        p.kv_bytes,
        p.act_bytes,
        np.ones(len(p)),
        prompt + (batch - 1.0) * reps,
        p.cached,
        p.prefill,
        p.flash,
    )
    return steps, reps


def _timed_once(cat: Catalogue, steps: Steps, s: ScenarioArrays, peak: Array, par: Array, reps: Array) -> Array:
    """`achieved_step_times` of each distinct (step, accelerator, peak, repetitions, parameters' cell) once: a prompt's
    prefill is the same at every context of a sweep. The parameters are those of (accelerator, framework, weight format,
    model): `scenario_parameters`."""
    timing = {f.name: getattr(steps, f.name) for f in fields(Steps)}
    first, of = distinct_rows({**timing, "gpu": s.gpu, "peak": peak, "reps": reps, "framework": s.framework, "weights": s.weights})
    times, _ = achieved_step_times(cat, steps.take(first), s.gpu[first], peak[first], par[first], reps=reps[first])
    return times[of]  # type: ignore[no-any-return]


def _predicted(
    cat: Catalogue,
    s: ScenarioArrays,
    st: ScenarioSteps,
    served: npt.NDArray[np.bool_],
    tokens_per_step: Array,
    price: Array,
    predictor: pm.Predictor | None,
) -> dict[str, Any]:
    """The predicted figures of every scenario (core.model.predicted): the same steps as the ceiling, timed at the
    framework's fitted efficiencies and overheads; the prompts of a batch prefilled as a wave in the engine's chunks."""
    if predictor is None:
        empty = np.full(s.size, np.nan)
        return {n: (_pick([None], np.zeros(s.size, dtype=np.intp), pl.String) if n == "predicted_basis" else empty) for n in PREDICTED}
    hw = cat.hardware
    par = scenario_parameters(cat, s, predictor)
    peak = np.where(st.compute_used >= 0, hw.peaks[s.gpu, np.maximum(st.compute_used, 0)], np.nan)
    decode, _ = achieved_step_times(cat, st.decode, s.gpu, peak, par)
    drafted = np.flatnonzero(st.speculative)
    draft = np.zeros(s.size)
    if len(drafted):
        draft[drafted], _ = achieved_step_times(cat, st.draft, s.gpu[drafted], peak[drafted], par[drafted])
    batch, prompt = s.number("batch"), s.number("prompt")
    p = st.prefill
    wave = Steps(p.model, p.num_gpus, p.weight_bytes, p.kv_bytes, p.act_bytes, batch, prompt, p.cached, p.prefill, p.flash)
    first, of = distinct_rows({"gpu": s.gpu, "framework": s.framework})
    chunks = [
        pm.prefill_chunk(pm.FRAMEWORKS[f], hw.memory_bytes[g], hw.names[g]) for g, f in zip(s.gpu[first], s.framework[first], strict=True)
    ]
    chunk = np.array(chunks)[of]
    reps = np.maximum(np.ceil(batch * prompt / chunk), 1.0)
    prefill = _timed_once(cat, wave, s, peak, par, reps)
    shared, alone_reps = arrival_steps(p, batch, prompt, chunk)
    steady = _timed_once(cat, shared, s, peak, par, alone_reps)
    request = par[:, pm.P["overhead_request_s"]]
    costed = ~np.isnan(peak)
    cycle = decode + s.number("spec_draft_len") * draft * st.speculative
    per_user = np.where(served, tokens_per_step / cycle, np.nan)
    total = per_user * batch
    burst = np.where(costed, wl.burst_ttft(batch, prefill, request), np.nan)
    bands = [predictor.band(hw.families[g], pm.FRAMEWORKS[f], "tokens") for g, f in zip(s.gpu[first], s.framework[first], strict=True)]
    ttft_bands = [predictor.band(hw.families[g], pm.FRAMEWORKS[f], "ttft") for g, f in zip(s.gpu[first], s.framework[first], strict=True)]
    n = s.number("num_gpus")
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "predicted_step_time_s": np.where(costed, decode, np.nan),
            "predicted_tokens_per_s_per_user": per_user,
            "predicted_tokens_per_s_total": total,
            "predicted_tpot_s": np.where(served, cycle / tokens_per_step, np.nan),
            "predicted_ttft_s": np.where(costed, steady + request, np.nan),  # a server in its steady state (core.model.workload)
            "predicted_burst_ttft_s": burst,
            "predicted_prefill_tokens_per_s": np.where(costed, batch * prompt / prefill, np.nan),
            "predicted_usd_per_million_tokens": price * n / (total * 3600.0) * 1e6,
            "predicted_error": np.array([b.mape for b in bands])[of],
            "predicted_ttft_error": np.array([b.mape for b in ttft_bands])[of],
            "predicted_basis": _pick([b.basis for b in bands], of, pl.String),
        }


_MEMORY_FIGURES = (
    "weight_memory_bytes",
    "kv_bytes_per_seq_all_gpus",
    "kv_memory_bytes",
    "reserve_bytes",
    "capacity_bytes",
    "memory_required_bytes",
    "fits",
    "max_batch",
    "min_gpus",
)


def kv_elements_per_sequence(cat: Catalogue, model: Index, context: Array) -> Array:
    """KV-cache elements one sequence of each model holds at `context` tokens, all layers (a sliding-window layer at most its window)."""
    full = cat.model_arrays["kv_elems_full_attention"][model] * context
    windowed = np.flatnonzero(cat.model_arrays["windowed"][model] > 0)
    if len(windowed):
        attn, m = cat.attention_matrix, model[windowed]
        held = np.where(attn.window[m] > 0, np.minimum(context[windowed, None], attn.window[m]), 0.0)
        full[windowed] += (attn.layers[m] * attn.kv_elems[m] * held).sum(axis=1)
    return full  # type: ignore[no-any-return]


def _memory(cat: Catalogue, s: ScenarioArrays, speculative: npt.NDArray[np.bool_]) -> dict[str, Any]:
    """Weights, KV cache and reserve against num_gpus x memory; the largest batch; the fewest GPUs."""
    m = s.model
    kv_elems_per_seq = kv_elements_per_sequence(cat, m, s.number("context"))
    replicated, kv_heads = cat.model_arrays["kv_replicated"][m] == 1, cat.model_arrays["kv_heads"][m]
    n, batch = s.number("num_gpus"), s.number("batch")
    kv_shard = np.where(replicated, 1.0, np.minimum(n, kv_heads))
    wb, kvb = s.weight_bytes, s.kv_bytes
    params = cat.model_arrays["total_params"]
    weights = params[s.model] * wb + np.where(speculative, params[np.maximum(s.draft, 0)] * wb, 0.0)
    kv_one = kv_elems_per_seq * kvb  # one sequence's cache, were it held once
    kv_per_seq = kv_one * n / kv_shard  # a cache tensor parallelism cannot shard is held on every GPU
    per_gpu = cat.hardware.memory_bytes[s.gpu]
    reserve_fraction = s.number("reserve_fraction")
    capacity = n * per_gpu
    reserve = reserve_fraction * capacity
    usable = capacity - reserve
    kv_memory = kv_per_seq * batch
    usable_per_gpu = per_gpu * (1.0 - reserve_fraction)
    room = usable_per_gpu - kv_one
    with np.errstate(divide="ignore", invalid="ignore"):
        # no KV to hold (context 0): memory sets no batch limit (None)
        max_batch = np.where(kv_per_seq > 0, np.floor(np.maximum((usable - weights) / kv_per_seq, 0.0)), np.nan)
        min_gpus = np.where(replicated, np.where(room > 0, np.ceil(weights / room), np.nan), np.ceil((weights + kv_one) / usable_per_gpu))
    return {
        "weight_memory_bytes": weights,
        "kv_bytes_per_seq_all_gpus": kv_per_seq,
        "kv_memory_bytes": kv_memory,
        "reserve_bytes": reserve,
        "capacity_bytes": capacity,
        "memory_required_bytes": weights + kv_memory + reserve,
        "fits": weights + kv_memory <= usable,
        "max_batch": max_batch,
        "min_gpus": min_gpus,
        "kv_shard": kv_shard,
    }


#: Above this many scenarios text columns are built by Polars (a fixed cost of ~0.1 ms, quicker per row than Python objects).
_MANY = 2048


def _names(labels: Sequence[str], codes: Index) -> Any:
    """Text labels of codes (-1: None)."""
    return _pick([*labels, None], np.where(codes >= 0, codes, len(labels)), pl.String)


def _pick(values: list[Any], positions: Index, dtype: Any) -> Any:
    """values[positions] as a Series (many positions) or a list (few)."""
    if len(positions) > _MANY:
        return pl.Series(values, dtype=dtype).gather(positions)
    return [values[i] for i in positions]


def _flags(cat: Catalogue, s: ScenarioArrays, st: ScenarioSteps, fits: npt.NDArray[np.bool_], within_domain: npt.NDArray[np.bool_]) -> Any:
    """Each scenario's flags: a list built once per distinct combination of its causes."""
    n, hw = s.number("num_gpus"), cat.hardware
    no_link = (n > 1) & np.isnan(hw.scaleup_bytes_per_s[s.gpu])
    no_latency = (n > 1) & np.isnan(hw.allreduce_latency_s[s.gpu]) & ~no_link
    too_wide = ~within_domain
    ignored = (s.number("spec_draft_len") > 0) & (s.draft < 0)
    n_used = len(PEAK_PRECISIONS) + 1
    # one code per distinct combination of causes; a group too wide also carries its accelerator, so the domain can be named
    code = (((s.compute * n_used + st.compute_used + 1) * 2 + no_link) * 2 + ~fits) * 2 + ignored
    code = ((code * 2 + no_latency) * 2 + too_wide) * len(hw.ids) + np.where(too_wide, s.gpu, 0)
    # the codes run into the millions: count them by value, not by a table as long as the largest
    present, position = np.unique(code, return_inverse=True)
    lists = []
    for c in present:
        rest, g = divmod(int(c), len(hw.ids))
        rest, wide = divmod(rest, 2)
        rest, latency_unknown = divmod(rest, 2)
        rest, why_ignored = divmod(rest, 2)
        rest, not_fitting = divmod(rest, 2)
        rest, unlinked = divmod(rest, 2)
        requested, used = divmod(rest, n_used)
        asked, flags = COMPUTE_FORMATS[requested], []
        if used == 0:
            flags.append(f"{asked} compute unsupported and no wider format listed")
        elif PEAK_PRECISIONS[used - 1] != asked:
            flags.append(f"{asked} compute not native on this accelerator: computed at the {PEAK_PRECISIONS[used - 1]} peak")
        if unlinked:
            flags.append("no scale-up link figure: tensor-parallel communication not costed")
        if latency_unknown:
            flags.append("no published all-reduce latency: only the bytes of tensor-parallel communication are costed")
        if wide:
            size = int(hw.scaleup_domain[g])
            flags.append(
                f"{hw.names[g]} is one device: it is not ganged in tensor parallel in practice"
                if size == 1
                else f"tensor parallel wider than the scale-up domain ({size} devices): not built in practice; use replicas beyond it"
            )
        if not_fitting:
            flags.append("does not fit in memory: weights + KV exceed the usable memory")
        if why_ignored:
            flags.append("speculative decoding ignored: no draft model")
        lists.append(flags)
    return _pick(lists, position.reshape(-1), pl.List(pl.String))
