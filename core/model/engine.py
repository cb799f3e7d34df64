"""The one engine: how long an inference step takes on an accelerator, and why.

A step is one pass of a model over some tokens: a decode step (a batch of
sequences, one new token each, or k + 1 under speculative decoding), the
prefill of a prompt, a draft model's decode step. It runs the model's
operations (core.catalogue.operations) one after another. Each operation
does FLOPs and moves bytes to and from HBM (`operation_work`); both depend on
the model, the formats, the step's tokens and its cache, never on the
accelerator. The accelerator brings two numbers: its bandwidth B and its
compute peak P (both derated by the scenario's efficiency factors).

On each GPU an operation takes max(bytes / B, FLOPs / P), and a step the sum
over its operations (core.model.ceilings adds tensor-parallel communication
and the stated overhead). Sorted by intensity I = FLOPs / bytes, the
operations up to the ridge R = P / B are memory-bound and the others
compute-bound, so the sum is

    step time = (bytes of the operations with I <= R) / B + (FLOPs of those with I > R) / P.

`time_steps` computes it that way: the work of each distinct step once
(`Steps.distinct`: the work function sees only the columns of `Steps`, so
two steps that share work agree on every input of it), its operations sorted
by intensity with running sums of bytes and FLOPs, and each step read at its
own ridge. `operation_costs` is the same work one row per operation with each
row's own max(bytes / B, FLOPs / P): the per-operation view on screen, and the
oracle the tests hold `time_steps` to.

Units: FLOPs and bytes of a step are over all its GPUs; times are seconds;
per GPU, FLOPs and weight/activation bytes divide by the GPU count and KV
bytes by how far tensor parallelism can shard the cache (`kv_shard`).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from core.catalogue.operations import KINDS, OpMatrix

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.intp]


def _fields(cls: type) -> tuple[Any, ...]:
    """dataclasses.fields of a class, read once (it walks the class's fields on every call)."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = fields(cls)
    return found


_FIELDS: dict[type, tuple[Any, ...]] = {}


@dataclass(frozen=True)
class Steps:
    """Steps to evaluate, one entry per step: everything that sets a step's work, and nothing else.

    `model` indexes the catalogue's models; bytes are per element (weights
    and KV in their storage format, activations in the format the kernels
    compute in); `q` is the new tokens per sequence (1 for decode, the prompt
    for prefill, k + 1 for a speculative verify), `cached` the tokens already
    in each sequence's cache; `prefill` runs prefill kernels (decompressed
    MLA) and the lm_head on the last token only.
    """

    model: Index
    num_gpus: Array
    weight_bytes: Array
    kv_bytes: Array
    act_bytes: Array
    batch: Array
    q: Array
    cached: Array
    prefill: npt.NDArray[np.bool_]
    flash: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.model)

    @classmethod
    def concat(cls, *parts: Steps) -> Steps:
        """The steps of `parts`, one after another."""
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in _fields(cls)})

    def take(self, rows: Index | npt.NDArray[np.bool_] | slice) -> Steps:
        """The steps at `rows` (indices or a mask)."""
        return Steps(**{f.name: getattr(self, f.name)[rows] for f in _fields(Steps)})

    def distinct(self) -> tuple[Steps, Index]:
        """(the distinct steps, for each step the index of its distinct one), first occurrences first."""
        first, inverse = distinct_rows({f.name: getattr(self, f.name) for f in _fields(Steps)})
        return self.take(first), inverse


#: Up to this many rows, distinct_rows groups in plain Python.
_SMALL = 256


def distinct_rows(columns: dict[str, npt.NDArray[Any]]) -> tuple[Index, Index]:
    """(the first row of each distinct combination of the columns' values, each row's combination), first occurrences first."""
    size = len(next(iter(columns.values())))
    if size <= 1:
        return np.zeros(size, dtype=np.intp), np.zeros(size, dtype=np.intp)
    if size <= _SMALL:  # a dict of tuples beats building a frame (or finding the varying columns) for a handful of rows
        seen: dict[tuple[Any, ...], int] = {}
        first_small: list[int] = []
        inverse_small = np.empty(size, dtype=np.intp)
        for row, key in enumerate(zip(*(a.tolist() for a in columns.values()), strict=True)):
            group = seen.setdefault(key, len(seen))
            if group == len(first_small):
                first_small.append(row)
            inverse_small[row] = group
        return np.array(first_small, dtype=np.intp), inverse_small
    varying = {n: a for n, a in columns.items() if (a != a[0]).any()}  # a constant column splits no group
    if not varying:
        return np.zeros(1, dtype=np.intp), np.zeros(size, dtype=np.intp)
    groups = pl.DataFrame(varying).with_row_index("_row").group_by(list(varying), maintain_order=True).agg(pl.col("_row"))
    inverse = np.empty(size, dtype=np.intp)
    rows = groups["_row"]
    inverse[rows.explode().to_numpy()] = np.repeat(np.arange(groups.height), rows.list.len().to_numpy())
    return rows.list.first().to_numpy().astype(np.intp), inverse


@dataclass(frozen=True)
class Work:
    """FLOPs and HBM bytes of each operation of each step (arrays of shape steps x operations), all GPUs together."""

    flops: Array
    weight_bytes: Array
    act_bytes: Array
    kv_read_bytes: Array
    kv_write_bytes: Array
    kv_shard: Array  # how many ways tensor parallelism splits the operation's KV cache

    @property
    def total_bytes(self) -> Array:
        """Every byte of each operation: weights, activations, KV read and written."""
        return self.weight_bytes + self.act_bytes + self.kv_read_bytes + self.kv_write_bytes

    def per_gpu(self, num_gpus: Array) -> tuple[Array, Array]:
        """(FLOPs, bytes) one GPU does for each operation."""
        n = num_gpus[:, None]
        per_gpu_bytes = (self.weight_bytes + self.act_bytes) / n + (self.kv_read_bytes + self.kv_write_bytes) / self.kv_shard
        return self.flops / n, per_gpu_bytes


def operation_work(ops: OpMatrix, steps: Steps) -> Work:
    """The FLOPs and bytes of every operation of every step (row i of `ops` is step i's model, or one row for all).

    Each kind of operation has its formula (below), applied to the
    operations of that kind only; every figure covers all the layers an
    operation row stands for. T = batch x q tokens.
    """
    shape = (len(steps), ops.kind.shape[1])
    work = {name: np.zeros(shape) for name in ("flops", "weight_bytes", "act_bytes", "kv_read_bytes", "kv_write_bytes")}
    work["kv_shard"] = np.ones(shape)
    if ops.kind.shape[0] == 1:  # one model for every step: its operations of a kind are columns, the steps' values a column
        step = _Cells(steps, (slice(None), None))
        for name, columns, op in _kind_columns(ops):
            for figure, value in _FORMULAS[name](op, step).items():
                work[figure][:, columns] = value
    else:
        for code, name in enumerate(KINDS):
            at = np.nonzero(ops.kind == code)
            if at[0].size:
                for figure, value in _FORMULAS[name](_Cells(ops, at), _Cells(steps, at[0])).items():
                    work[figure][at] = value
    kv_shard = work.pop("kv_shard")
    return Work(**{name: value * ops.layers for name, value in work.items()}, kv_shard=kv_shard)


class _Cells:
    """Some cells of an OpMatrix (the operations of one kind) or the matching entries of a Steps, as float64.

    A column is read on first use and kept as a plain attribute: the formulas read the steps' batch and q many times.
    """

    def __init__(self, table: OpMatrix | Steps, at: Any) -> None:
        self._table, self._at = table, at

    def __getattr__(self, name: str) -> Array:
        if name.startswith("_"):
            raise AttributeError(name)
        values: Array = getattr(self._table, name)[self._at].astype(np.float64, copy=False)
        setattr(self, name, values)
        return values

    @classmethod
    def of(cls, table: OpMatrix | Steps, at: Any) -> _Cells:
        """Every column read at once (cells kept for many evaluations)."""
        cells = cls(table, at)
        for f in _fields(type(table)):
            getattr(cells, f.name)
        del cells._table, cells._at  # kept cells must not keep their table alive (`_prepared` forgets it with its table)
        return cells


def _kind_columns(ops: OpMatrix) -> list[tuple[str, Index, _Cells]]:
    """A one-row table's operations by kind: (kind, its columns, their cells), the kinds present only.

    Kept per table (`_prepared`): the catalogue's model tables (`model_table`) are built once, so each model's kinds
    are gathered once rather than on every evaluation.
    """
    prepared = _prepared(ops)
    found: list[tuple[str, Index, _Cells]] | None = prepared.get("kinds")
    if found is None:
        found = []
        for code, name in enumerate(KINDS):
            columns = np.flatnonzero(ops.kind[0] == code)
            if columns.size:
                found.append((name, columns, _Cells.of(ops, (slice(None), columns))))
        prepared["kinds"] = found
    return found


#: What is derived once from an OpMatrix, by the matrix's id, with a weak reference that removes it with the matrix
#: (a new catalogue builds new matrices, so nothing derived from an old one is read again).
_PREPARED: dict[int, tuple[weakref.ref[OpMatrix], dict[Any, Any]]] = {}


def _prepared(ops: OpMatrix) -> dict[Any, Any]:
    """The figures derived once from `ops` (the dict is filled by whoever derives them)."""
    key = id(ops)
    entry = _PREPARED.get(key)
    if entry is None or entry[0]() is not ops:
        entry = (weakref.ref(ops, functools.partial(_forget, key)), {})
        _PREPARED[key] = entry
    return entry[1]


def _forget(key: int, ref: weakref.ref[OpMatrix], prepared: dict[int, Any] = _PREPARED) -> None:
    """Drop what was derived from a matrix that is gone (and not a newer matrix's entry under a reused id)."""
    entry = prepared.get(key)
    if entry is not None and entry[0] is ref:
        del prepared[key]


def model_table(ops: OpMatrix, model: int) -> OpMatrix:
    """`ops.row(model)`, built once per matrix and model (so what is derived from it is kept too)."""
    tables: dict[int, OpMatrix] = _prepared(ops).setdefault("rows", {})
    table = tables.get(model)
    if table is None:
        table = tables[model] = ops.row(model)
    return table


def _embedding(op: _Cells, st: _Cells) -> dict[str, Array]:
    """The embedding gathers min(T, vocab) rows and writes T activations."""
    t = st.batch * st.q
    return {
        "weight_bytes": np.minimum(t, op.params / op.out_dim) * op.out_dim * st.weight_bytes,
        "act_bytes": t * op.out_dim * st.act_bytes,
    }


def _matmul(op: _Cells, st: _Cells, tokens: Array | None = None) -> dict[str, Array]:
    """2 T params FLOPs; the weights read once; T (in + out) activations."""
    t = st.batch * st.q if tokens is None else tokens
    return {
        "flops": 2.0 * t * op.params,
        "weight_bytes": op.params * st.weight_bytes,
        "act_bytes": t * (op.in_dim + op.out_dim) * st.act_bytes,
    }


def _lm_head(op: _Cells, st: _Cells) -> dict[str, Array]:
    """A matmul; in prefill it runs on the last token of each sequence only (T = batch)."""
    return _matmul(op, st, tokens=np.where(st.prefill > 0, st.batch, st.batch * st.q))


def _experts(op: _Cells, st: _Cells) -> dict[str, Array]:
    """Routed experts: 2 T k params FLOPs, the weights of the E (1 - (1 - k/E)^T) distinct experts T tokens reach (uniform routing)."""
    t = st.batch * st.q
    distinct = op.experts * (1.0 - (1.0 - op.top_k / op.experts) ** t)
    return {
        "flops": 2.0 * t * op.top_k * op.params,
        "weight_bytes": distinct * op.params * st.weight_bytes,
        "act_bytes": t * op.top_k * (op.in_dim + op.out_dim) * st.act_bytes,
    }


def _attention(op: _Cells, st: _Cells) -> dict[str, Array]:
    """batch x causal (query, key) pairs x FLOPs per pair (a sliding window caps the keys); the KV cache of every
    visible token read and the new tokens' written; unfused attention moves the score matrix through HBM too."""
    b, t = st.batch, st.batch * st.q
    pairs = windowed_pairs(st.cached, st.q, op.window)
    pair_flops = np.where(st.prefill > 0, op.pair_flops_prefill, op.pair_flops_decode)  # decompressed MLA in prefill
    score_matrix = np.where(st.flash > 0, 0.0, 4.0 * b * op.heads * pairs)
    kv_element = op.kv_elems * st.kv_bytes
    return {
        "flops": b * pairs * pair_flops,
        "weight_bytes": op.params * st.weight_bytes,  # attention sinks
        "act_bytes": (t * (op.in_dim + op.out_dim) + score_matrix) * st.act_bytes,
        "kv_read_bytes": b * visible(st.cached + st.q, op.window) * kv_element,
        "kv_write_bytes": t * kv_element,
        "kv_shard": np.where(op.kv_replicated == 1, 1.0, np.minimum(st.num_gpus, op.kv_heads)),
    }


def _norms(op: _Cells, st: _Cells) -> dict[str, Array]:
    """Each of a layer's norms: 4 T h FLOPs, 2 T h activations (read and written); their weights."""
    t = st.batch * st.q
    return {"flops": 4.0 * t * op.in_dim, "weight_bytes": op.params * st.weight_bytes, "act_bytes": 2.0 * t * op.in_dim * st.act_bytes}


_FORMULAS: dict[str, Callable[[_Cells, _Cells], dict[str, Array]]] = {
    "embed": _embedding,
    "matmul": _matmul,
    "lm_head": _lm_head,
    "moe": _experts,
    "attn": _attention,
    "norm": _norms,
}


def windowed_pairs(cached: Array, q: Array, window: Array) -> Array:
    """(query, key) pairs per sequence when q new tokens follow `cached` ones, causal.

    Token i (1..q) sees min(cached + i, window) keys; window 0 means unlimited.
    Prefill from empty gives q (q + 1) / 2: half of S^2, as the causal mask does.
    """
    a, c = cached + 1.0, cached + q
    full = (a + c) * q / 2.0
    w = window
    capped = np.where(c <= w, full, np.where(a > w, q * w, (a + w) * (w - a + 1.0) / 2.0 + (c - w) * w))
    return np.where(w > 0, capped, full)


def visible(tokens: Array, window: Array) -> Array:
    """Tokens a layer holds: all of them, or at most the window."""
    return np.where(window > 0, np.minimum(tokens, window), tokens)


@dataclass(frozen=True)
class StepSums:
    """Per step: its work summed over operations (all GPUs) and its operation time on its accelerator (one GPU)."""

    flops: Array
    bytes: Array
    weight_bytes: Array
    kv_read_bytes: Array
    kv_write_bytes: Array
    ops_time_s: Array  # sum of max(bytes / B, FLOPs / P) over operations
    memory_bound_time_s: Array  # of the operations at or below the ridge
    compute_bound_time_s: Array  # of the operations above it


def time_steps(ops: OpMatrix, steps: Steps, bandwidth: Array, peak: Array) -> StepSums:
    """The operation time of every step on its accelerator: bytes below the ridge / B + FLOPs above it / P.

    `ops` holds every model's operations (row = `steps.model`); `bandwidth`
    and `peak` are the byte/s and FLOP/s one GPU of each step sees (derated).
    A NaN peak (no compute format the accelerator supports) times every
    operation by its bytes. The work of each distinct step is computed once,
    model by model (a model's operations are the same in all its steps).
    """
    sorted_work = sort_work(ops, steps)
    memory, compute = sorted_work.times(bandwidth, peak)
    memory_time, compute_time = memory[:, 0], compute[:, 0]
    return StepSums(
        **sorted_work.sums,
        ops_time_s=memory_time + compute_time,
        memory_bound_time_s=memory_time,
        compute_bound_time_s=compute_time,
    )


_EMBED = KINDS.index("embed")

#: The sums over a step's operations that do not depend on the accelerator.
_TOTALS = ("flops", "bytes", "weight_bytes", "kv_read_bytes", "kv_write_bytes")


@dataclass(frozen=True)
class SortedWork:
    """Steps' work, ready to be timed at any roofs: per distinct step and operation class, the per-GPU intensities of the
    class's operations sorted, with the bytes of the first k and the FLOPs of the rest (k = 0 .. the class's width),
    one repetition.

    A step of `reps` repetitions (a prefill run in chunks) reads its weights once per repetition and shares the rest of
    its bytes and its FLOPs out over them. `sums` are each step's totals (all repetitions, all GPUs); `kernels` the
    operation rows' layers summed (one kernel per operation and layer and repetition).
    """

    of: Index  # step -> its distinct step
    intensity: list[Array]  # per class: (distinct, width of the class), +inf past a step's last operation of the class
    bytes_before: list[Array]  # per class: (distinct, width + 1)
    flops_from: list[Array]  # per class: (distinct, width + 1)
    sums: dict[str, Array]  # per step
    kernels: Array  # per step
    reps: Array  # per step

    @property
    def classes(self) -> int:
        return len(self.intensity)

    def times(self, bandwidth: Array, peak: Array) -> tuple[Array, Array]:
        """(memory-bound time, compute-bound time) of each step's operations of each class, one repetition, at one GPU's
        byte/s and FLOP/s per step (vectors) or per step and class (steps x classes: achieved rates differ by class)."""
        n, c = len(self.of), self.classes
        bw, pk = bandwidth.reshape(n, -1), peak.reshape(n, -1)
        if bw.shape[1] != c or pk.shape[1] != c:  # one rate for every class (broadcast_to has a fixed cost of a few µs)
            bw, pk = np.broadcast_to(bw, (n, c)), np.broadcast_to(pk, (n, c))
        memory, compute = np.zeros((n, c)), np.zeros((n, c))
        with np.errstate(invalid="ignore", divide="ignore"):
            ridge = np.where(np.isnan(pk), np.inf, pk / bw)
        for k in range(c):
            memory_bound_ops = count_at_most(self.intensity[k], self.of, ridge[:, k])
            memory[:, k] = self.bytes_before[k][self.of, memory_bound_ops] / bw[:, k]
            compute_flops = self.flops_from[k][self.of, memory_bound_ops]
            with np.errstate(invalid="ignore"):
                compute[:, k] = np.where(compute_flops > 0, compute_flops / pk[:, k], 0.0)
        return memory, compute


def sort_work(ops: OpMatrix, steps: Steps, *, reps: Array | None = None, class_of_kind: Index | None = None) -> SortedWork:
    """The work of `steps` sorted for timing (SortedWork); `reps`: repetitions per step (default 1); `class_of_kind`: the
    class of each operation kind (an index per KINDS code) when operations of different classes run at different rates."""
    count = len(steps)
    repeated = reps is not None
    reps = np.ones(count) if reps is None else np.asarray(reps, dtype=np.float64)
    cls_of = _ONE_CLASS if class_of_kind is None else class_of_kind
    first, work_of = distinct_rows({**{f.name: getattr(steps, f.name) for f in _fields(Steps)}, "reps": reps})
    work_steps, work_reps = steps.take(first), reps[first]
    distinct = len(work_steps)
    models = [int(work_steps.model[0])] if (work_steps.model == work_steps.model[0]).all() else np.unique(work_steps.model).tolist()
    tables = [model_table(ops, m) for m in models]
    layouts = [_class_layout(t, cls_of) for t in tables]
    if len(models) == 1 and all(n for n in layouts[0].sizes):
        # one model, every class present: its sorted arrays are the whole answer (the padding below would change nothing)
        parts, sums = _sorted_work(tables[0], work_steps, work_reps, layouts[0], repeated)
        return SortedWork(
            of=work_of,
            intensity=[p[0] for p in parts],
            bytes_before=[p[1] for p in parts],
            flops_from=[p[2] for p in parts],
            sums={name: sums[name][work_of] for name in _TOTALS},
            kernels=np.full(count, layouts[0].kernels),
            reps=reps,
        )
    widths = [max(max(layout.sizes[k] for layout in layouts), 1) for k in range(len(layouts[0].sizes))]
    by_intensity = [np.full((distinct, w), np.inf) for w in widths]
    bytes_before = [np.zeros((distinct, w + 1)) for w in widths]
    flops_from = [np.zeros((distinct, w + 1)) for w in widths]
    totals = {name: np.empty(distinct) for name in _TOTALS}
    kernels = np.empty(distinct)
    for model, table, layout in zip(models, tables, layouts, strict=True):
        works = np.flatnonzero(work_steps.model == model)
        parts, sums = _sorted_work(table, work_steps.take(works), work_reps[works], layout, repeated)
        for k, (intensity, before, after) in enumerate(parts):
            n = intensity.shape[1]
            by_intensity[k][works, :n] = intensity
            bytes_before[k][works, : n + 1] = before
            bytes_before[k][works, n + 1 :] = before[:, -1:]
            flops_from[k][works, : n + 1] = after
        for name in _TOTALS:
            totals[name][works] = sums[name]
        kernels[works] = layout.kernels
    return SortedWork(
        of=work_of,
        intensity=by_intensity,
        bytes_before=bytes_before,
        flops_from=flops_from,
        sums={name: totals[name][work_of] for name in _TOTALS},
        kernels=kernels[work_of],
        reps=reps,
    )


_ONE_CLASS = np.zeros(len(KINDS), dtype=np.intp)


@dataclass(frozen=True)
class _ClassLayout:
    """A model's operations by class: each class's columns (None: all of them) and count; which are the embedding's
    gathers; the kernels (the rows' layers summed)."""

    columns: list[Index | None]
    sizes: list[int]
    gathered: npt.NDArray[np.bool_]
    kernels: float


def _class_layout(table: OpMatrix, class_of_kind: Index) -> _ClassLayout:
    """The _ClassLayout of a one-row table (`model_table`) for a class per kind, derived once per table and classes."""
    key = ("classes", class_of_kind.tobytes())
    prepared = _prepared(table)
    layout: _ClassLayout | None = prepared.get(key)
    if layout is None:
        op_class = class_of_kind[table.kind[0]]
        width = op_class.size
        columns: list[Index | None] = []
        sizes = []
        for k in range(int(class_of_kind.max()) + 1):
            mine = np.flatnonzero(op_class == k)
            columns.append(None if mine.size == width else mine)
            sizes.append(int(mine.size))
        layout = prepared[key] = _ClassLayout(columns, sizes, table.kind[0] == _EMBED, float(table.layers.sum()))
    return layout


def _sorted_work(
    ops: OpMatrix, steps: Steps, reps: Array, layout: _ClassLayout, repeated: bool
) -> tuple[list[tuple[Array, Array, Array]], dict[str, Array]]:
    """One model's operations in `steps`: per class, the per-GPU intensities of one repetition of its operations sorted,
    with the bytes of the first k and the FLOPs of the rest for k = 0 .. its operations; and the steps' sums.
    `repeated`: some step runs in more than one repetition (else dividing by them, by 1, is skipped: it changes nothing)."""
    work = operation_work(ops, steps)
    n = steps.num_gpus[:, None]
    flops = work.flops / n
    kv = (work.kv_read_bytes + work.kv_write_bytes) / work.kv_shard
    if repeated:
        r = reps[:, None]
        flops = flops / r
        # the weights are read again by every repetition, except the embedding's rows, which are gathered per token
        weights = np.where(layout.gathered, work.weight_bytes / r, work.weight_bytes)
        nbytes = weights / n + (work.act_bytes / n + kv) / r
    else:
        nbytes = work.weight_bytes / n + (work.act_bytes / n + kv)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(nbytes > 0, flops / nbytes, np.where(flops > 0, np.inf, 0.0))
    zero = np.zeros((len(steps), 1))
    rows = np.arange(len(steps))[:, None]
    parts = []
    for columns in layout.columns:
        ci, b, f = (intensity, nbytes, flops) if columns is None else (intensity[:, columns], nbytes[:, columns], flops[:, columns])
        order = rows, np.argsort(ci, axis=1, kind="stable")
        parts.append(
            (
                ci[order],
                np.concatenate((zero, np.cumsum(b[order], axis=1)), axis=1),
                np.concatenate((np.cumsum(f[order][:, ::-1], axis=1)[:, ::-1], zero), axis=1),
            )
        )
    sums = {
        "flops": work.flops.sum(axis=1),
        "bytes": work.total_bytes.sum(axis=1),
        "weight_bytes": work.weight_bytes.sum(axis=1),
        "kv_read_bytes": work.kv_read_bytes.sum(axis=1),
        "kv_write_bytes": work.kv_write_bytes.sum(axis=1),
    }
    return parts, sums


def count_at_most(rows: Array, row_of: Index, limit: Array) -> Index:
    """For each i, how many values of the sorted row rows[row_of[i]] are <= limit[i].

    A binary search in every row at once, one bit of the answer a round
    (log2 of the row width rounds of a few array operations, rather than one
    comparison per column).
    """
    width = rows.shape[1]
    flat = rows.ravel()
    last = row_of * width - 1  # flat index of the value before the row's first
    count = np.zeros(len(row_of), dtype=np.intp)
    step = 1 << max(width.bit_length() - 1, 0)  # counts up to 2 x step - 1 >= width can be reached
    while step:
        probe = np.minimum(count + step, width)  # would count reach probe: is the probe-th value <= limit?
        count = np.where(flat[last + probe] <= limit, probe, count)
        step >>= 1
    return count


def operation_costs(ops: OpMatrix, steps: Steps, bandwidth: Array, peak: Array) -> pl.DataFrame:
    """One row per (step, operation): FLOPs, bytes by kind, per-GPU times, the bound side.

    `step` and `slot` say which step and which of its model's operations
    (in the order of the model's operation table); padding is left out.
    Each row's time is its own max(bytes / B, FLOPs / P), memory-bound when
    its bytes take at least as long as its FLOPs (or no peak times them).
    """
    table = ops.take(steps.model)
    work = operation_work(table, steps)
    flops, nbytes = work.per_gpu(steps.num_gpus)
    memory_time = nbytes / bandwidth[:, None]
    compute_time = flops / peak[:, None]
    real = table.kind >= 0
    step_of, slot = np.nonzero(real)
    total_bytes = work.total_bytes
    memory_bound = np.isnan(compute_time) | (memory_time >= compute_time)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(total_bytes > 0, work.flops / total_bytes, np.nan)
    columns: dict[str, Any] = {
        "step": step_of,
        "slot": slot,
        "kind": pl.Series(KINDS, dtype=pl.String).gather(table.kind[real].astype(np.int64)),
        "layers": table.layers[real].astype(np.int64),
        "flops": work.flops[real],
        "weight_bytes": work.weight_bytes[real],
        "act_bytes_total": work.act_bytes[real],
        "kv_read_bytes": work.kv_read_bytes[real],
        "kv_write_bytes": work.kv_write_bytes[real],
        "kv_shard": np.broadcast_to(work.kv_shard, work.flops.shape)[real],
        "bytes": total_bytes[real],
        "memory_time_s": memory_time[real],
        "compute_time_s": compute_time[real],
        "time_s": np.where(memory_bound, memory_time, compute_time)[real],
        "bound": pl.Series(["compute", "memory"], dtype=pl.String).gather(memory_bound[real].astype(np.int64)),
        "intensity": intensity[real],
    }
    return pl.DataFrame(columns, nan_to_null=True)
