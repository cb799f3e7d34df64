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

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from core.catalogue.operations import KINDS, OpMatrix

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.intp]


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
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)})

    def take(self, rows: Index | npt.NDArray[np.bool_]) -> Steps:
        """The steps at `rows` (indices or a mask)."""
        return Steps(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})

    def distinct(self) -> tuple[Steps, Index]:
        """(the distinct steps, for each step the index of its distinct one), first occurrences first."""
        if len(self) <= 1:
            return self, np.zeros(len(self), dtype=np.intp)
        columns = {f.name: getattr(self, f.name) for f in fields(self)}
        varying = {n: a for n, a in columns.items() if (a != a[0]).any()}  # a constant column splits no group
        if not varying:
            return self.take(np.zeros(1, dtype=np.intp)), np.zeros(len(self), dtype=np.intp)
        groups = pl.DataFrame(varying).with_row_index("_row").group_by(list(varying), maintain_order=True).agg(pl.col("_row"))
        inverse = np.empty(len(self), dtype=np.intp)
        rows = groups["_row"]
        inverse[rows.explode().to_numpy()] = np.repeat(np.arange(groups.height), rows.list.len().to_numpy())
        first = rows.list.first().to_numpy().astype(np.intp)
        return self.take(first), inverse


@dataclass(frozen=True)
class Work:
    """FLOPs and HBM bytes of each operation of each step (arrays of shape steps x operations), all GPUs together."""

    flops: Array
    weight_bytes: Array
    act_bytes: Array
    kv_read_bytes: Array
    kv_write_bytes: Array
    kv_shard: Array  # how many ways tensor parallelism splits the operation's KV cache

    def per_gpu(self, num_gpus: Array) -> tuple[Array, Array]:
        """(FLOPs, bytes) one GPU does for each operation."""
        n = num_gpus[:, None]
        per_gpu_bytes = (self.weight_bytes + self.act_bytes) / n + (self.kv_read_bytes + self.kv_write_bytes) / self.kv_shard
        return self.flops / n, per_gpu_bytes


def operation_work(ops: OpMatrix, steps: Steps) -> Work:
    """The FLOPs and bytes of every operation (row i of `ops` is step i's model).

    - matmul, lm_head: 2 T params FLOPs, the weights read once, T (in + out)
      activations (in prefill the lm_head runs on the last token: T = batch);
    - MoE experts: 2 T k params FLOPs; weights of the E (1 - (1 - k/E)^T)
      distinct experts T tokens route to (uniform routing), T k (in + out)
      activations;
    - attention: batch x (query, key) pairs x FLOPs per pair, causal, a
      sliding window capping the keys; the KV cache of every visible token
      read, the new tokens' written; without fused (flash) attention the
      score matrix goes through HBM too (4 x batch x heads x pairs elements);
    - norms: 4 T h FLOPs and 2 T h activations each; the embedding gathers
      min(T, vocab) rows.

    T = batch x q tokens. Every figure covers all the layers an operation
    row stands for.
    """
    b, q, cached = steps.batch[:, None], steps.q[:, None], steps.cached[:, None]
    prefill, flash, n = steps.prefill[:, None], steps.flash[:, None], steps.num_gpus[:, None]
    t = b * q
    kind = {k: ops.kind == i for i, k in enumerate(KINDS)}
    tokens = np.where(kind["lm_head"] & prefill, b, t)
    pairs = windowed_pairs(cached, q, ops.window)
    experts = np.where(ops.experts > 0, ops.experts, 1.0)
    distinct_experts = experts * (1.0 - (1.0 - ops.top_k / experts) ** t)
    pair_flops = np.where(prefill, ops.pair_flops_prefill, ops.pair_flops_decode)
    flops = np.select(
        [kind["matmul"] | kind["lm_head"], kind["moe"], kind["norm"], kind["attn"]],
        [2.0 * tokens * ops.params, 2.0 * t * ops.top_k * ops.params, 4.0 * t * ops.in_dim, b * pairs * pair_flops],
        0.0,
    )
    gathered_rows = np.minimum(t, ops.params / np.where(ops.out_dim > 0, ops.out_dim, 1.0))
    weights = np.select([kind["embed"], kind["moe"]], [gathered_rows * ops.out_dim, distinct_experts * ops.params], ops.params)
    in_out = ops.in_dim + ops.out_dim
    score_matrix = np.where(flash, 0.0, 4.0 * b * ops.heads * pairs)
    activations = np.select(
        [kind["moe"], kind["embed"], kind["norm"], kind["attn"]],
        [t * ops.top_k * in_out, t * ops.out_dim, 2.0 * t * ops.in_dim, t * in_out + score_matrix],
        tokens * in_out,
    )
    kv_element = ops.kv_elems * steps.kv_bytes[:, None]  # zero for every operation but attention
    layers = ops.layers
    return Work(
        flops=flops * layers,
        weight_bytes=weights * steps.weight_bytes[:, None] * layers,
        act_bytes=activations * steps.act_bytes[:, None] * layers,
        kv_read_bytes=b * visible(cached + q, ops.window) * kv_element * layers,
        kv_write_bytes=t * kv_element * layers,
        kv_shard=np.where(kind["attn"] & (ops.kv_replicated != 1), np.minimum(n, ops.kv_heads), 1.0),
    )


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
    activation_bytes: Array
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
    operation by its bytes.
    """
    work_steps, inverse = steps.distinct()
    work = operation_work(ops.take(work_steps.model), work_steps)
    flops, nbytes = work.per_gpu(work_steps.num_gpus)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(nbytes > 0, flops / nbytes, np.where(flops > 0, np.inf, 0.0))
    order = np.argsort(intensity, axis=1, kind="stable")
    by_intensity = np.take_along_axis(intensity, order, axis=1)
    zero = np.zeros((len(work_steps), 1))
    # bytes of the first k operations and FLOPs of the rest, for k = 0 .. operations
    bytes_before = np.hstack([zero, np.cumsum(np.take_along_axis(nbytes, order, axis=1), axis=1)])
    flops_from = np.hstack([np.cumsum(np.take_along_axis(flops, order, axis=1)[:, ::-1], axis=1)[:, ::-1], zero])

    ridge = np.where(np.isnan(peak), np.inf, peak / bandwidth)
    memory_bound_ops = count_at_most(by_intensity, inverse, ridge)
    memory_bytes = bytes_before[inverse, memory_bound_ops]
    compute_flops = flops_from[inverse, memory_bound_ops]
    memory_time = memory_bytes / bandwidth
    with np.errstate(invalid="ignore"):
        compute_time = np.where(compute_flops > 0, compute_flops / peak, 0.0)

    def total(x: Array) -> Array:
        summed: Array = x.sum(axis=1)
        return summed[inverse]

    return StepSums(
        flops=total(work.flops),
        bytes=total(work.weight_bytes + work.act_bytes + work.kv_read_bytes + work.kv_write_bytes),
        weight_bytes=total(work.weight_bytes),
        activation_bytes=total(work.act_bytes),
        kv_read_bytes=total(work.kv_read_bytes),
        kv_write_bytes=total(work.kv_write_bytes),
        ops_time_s=memory_time + compute_time,
        memory_bound_time_s=memory_time,
        compute_bound_time_s=compute_time,
    )


def count_at_most(rows: Array, row_of: Index, limit: Array) -> Index:
    """For each i, how many values of the sorted row rows[row_of[i]] are <= limit[i].

    A binary search in every row at once: log2(columns) rounds of one
    comparison per query (rather than one per column).
    """
    width = rows.shape[1]
    flat = rows.ravel()
    start = row_of * width
    lo = np.zeros(len(row_of), dtype=np.intp)  # the count is in [lo, hi]
    hi = np.full(len(row_of), width, dtype=np.intp)
    while (lo < hi).any():
        mid = (lo + hi) // 2  # lo <= mid < hi where the search goes on
        at_most = flat[start + np.minimum(mid, width - 1)] <= limit
        searching = lo < hi
        lo = np.where(searching & at_most, mid + 1, lo)
        hi = np.where(searching & ~at_most, mid, hi)
    return lo


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
    total_bytes = work.weight_bytes + work.act_bytes + work.kv_read_bytes + work.kv_write_bytes
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
