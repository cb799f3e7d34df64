"""A model's operations as a table, and the counts derived from it.

Every parameter lives in exactly one operation row, so the parameter totals,
the weight bytes of the memory fit and the per-operation roofline all read
the same table. One row stands for `layers` identical layers.

Columns of the operation table (one row per operation and layer group):

| column | meaning |
| --- | --- |
| model_id, group, op, kind | kind: embed, matmul, lm_head, moe, attn, norm |
| layers | how many layers the row stands for (1 for embed, lm_head) |
| params | weight elements per layer (moe: per expert) |
| in_dim, out_dim | activation elements per token read and written (matmul, moe; norm: all norms of the layer) |
| experts, top_k | moe rows: experts in the layer, routed per token |
| heads | attention heads (attn rows) |
| kv_elems | KV-cache elements per token per layer (attn rows) |
| pair_flops_decode, pair_flops_prefill | FLOPs per (query token, visible key) pair, all heads |
| window | 0 = full attention, else the most tokens a layer holds |
| kv_replicated | 1 when tensor parallelism cannot shard the cache (MLA latent) |
| kv_heads | KV heads (how far tensor parallelism can shard a GQA cache) |
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from core.catalogue.specs import ModelRecord

#: Operation kinds, in the order of their codes in an OpMatrix (padding is -1).
KINDS: tuple[str, ...] = ("embed", "matmul", "lm_head", "moe", "attn", "norm")

OPS_SCHEMA: dict[str, Any] = {
    "model_id": pl.String,
    "group": pl.String,
    "op": pl.String,
    "kind": pl.String,
    "layers": pl.Int64,
    "params": pl.Float64,
    "in_dim": pl.Float64,
    "out_dim": pl.Float64,
    "experts": pl.Float64,
    "top_k": pl.Float64,
    "heads": pl.Float64,
    "kv_elems": pl.Float64,
    "pair_flops_decode": pl.Float64,
    "pair_flops_prefill": pl.Float64,
    "window": pl.Float64,
    "kv_replicated": pl.Int8,
    "kv_heads": pl.Float64,
}


def operations(model: ModelRecord) -> pl.DataFrame:
    """The operation table of one model (see the module docstring for columns)."""
    rows: list[dict[str, Any]] = []
    h = model.hidden_size

    def add(op: str, kind: str, group: str, layers: int, **values: float) -> None:
        if layers:
            rows.append({"op": op, "kind": kind, "group": group, "layers": layers, **values})

    add("embedding (gather)", "embed", "model", 1, params=model.vocab_size * h, in_dim=0, out_dim=h)
    for group, count, is_moe, window in _layer_groups(model):
        _attention_rows(model, group, count, window, add)
        if is_moe:
            _moe_rows(model, group, count, add)
        else:
            _mlp_rows(model, group, count, model.intermediate_size, "mlp", add)
    add("final norm", "norm", "model", 1, params=h, in_dim=h, out_dim=h)
    lm_params = 0 if model.tie_embeddings else model.vocab_size * h
    # a tied lm_head still reads the (shared) embedding matrix: bytes yes, params no
    add("lm_head", "lm_head", "model", 1, params=model.vocab_size * h, in_dim=h, out_dim=model.vocab_size, counted_params=lm_params)

    frame = pl.DataFrame(rows).with_columns(pl.lit(model.id).alias("model_id"))
    for col, dtype in OPS_SCHEMA.items():
        if col not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype=dtype).alias(col))
    counted = frame["counted_params"] if "counted_params" in frame.columns else None
    frame = frame.with_columns((counted.fill_null(frame["params"]) if counted is not None else frame["params"]).alias("counted_params"))
    return frame.select([pl.col(c).cast(t) for c, t in OPS_SCHEMA.items()] + [pl.col("counted_params").cast(pl.Float64)])


def operations_frame(models: list[ModelRecord]) -> pl.DataFrame:
    """The operation tables of several models, stacked."""
    return pl.concat([operations(m) for m in models], how="vertical") if models else _empty_ops()


def parameter_counts(ops: pl.DataFrame) -> pl.DataFrame:
    """Total and active parameters per model_id (active: routed experts counted top_k of E)."""
    per_row = pl.col("counted_params") * pl.col("layers")
    experts = pl.col("experts").fill_null(1.0)
    active_share = pl.when(pl.col("kind") == "moe").then(pl.col("top_k") / experts).otherwise(1.0)
    total_mult = pl.when(pl.col("kind") == "moe").then(experts).otherwise(1.0)
    return ops.group_by("model_id", maintain_order=True).agg(
        (per_row * total_mult).sum().alias("total_params"),
        (per_row * total_mult * active_share).sum().alias("active_params"),
    )


def kv_elements_per_token(ops: pl.DataFrame) -> pl.DataFrame:
    """KV-cache elements per token summed over layers, before any window cap, per model_id."""
    return (
        ops.filter(pl.col("kind") == "attn")
        .group_by("model_id", maintain_order=True)
        .agg((pl.col("kv_elems") * pl.col("layers")).sum().alias("kv_elems_per_token"))
    )


def summary(model: ModelRecord) -> dict[str, float]:
    """Total params, active params and KV elements per token (all layers) of one model."""
    ops = operations(model)
    counts = parameter_counts(ops).row(0, named=True)
    kv = kv_elements_per_token(ops).row(0, named=True)
    return {
        "total_params": counts["total_params"],
        "active_params": counts["active_params"],
        "kv_elems_per_token": kv["kv_elems_per_token"],
    }


def _layer_groups(model: ModelRecord) -> list[tuple[str, int, bool, int]]:
    """(group label, layer count, is MoE, window) for each distinct kind of layer."""
    moe, win = set(model.moe_layer_ids), set(model.window_layer_ids)
    counts: dict[tuple[bool, bool], int] = {}
    for i in range(model.num_layers):
        key = (i in moe, i in win)
        counts[key] = counts.get(key, 0) + 1
    groups = []
    for (is_moe, is_win), count in sorted(counts.items()):
        label = ("MoE" if is_moe else "dense") + (f" / window {model.window}" if is_win else "")
        groups.append((label + " layers", count, is_moe, model.window if is_win else 0))
    return groups


def _attention_rows(model: ModelRecord, group: str, n: int, window: int, add: Any) -> None:
    h, heads = model.hidden_size, model.num_heads
    norm_params = 2 * h
    if model.is_mla:
        nope, rope, v, rank = model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim, model.kv_lora_rank
        q_out = heads * (nope + rope)
        if model.q_lora_rank:
            add("q_a (down)", "matmul", group, n, params=h * model.q_lora_rank, in_dim=h, out_dim=model.q_lora_rank)
            add("q_b (up)", "matmul", group, n, params=model.q_lora_rank * q_out, in_dim=model.q_lora_rank, out_dim=q_out)
            norm_params += model.q_lora_rank
        else:
            add("q_proj", "matmul", group, n, params=h * q_out, in_dim=h, out_dim=q_out)
        add("kv_a (down)", "matmul", group, n, params=h * (rank + rope), in_dim=h, out_dim=rank + rope)
        add("kv_b (up)", "matmul", group, n, params=rank * heads * (nope + v), in_dim=rank, out_dim=heads * (nope + v))
        norm_params += rank
        # decode runs the absorbed form (scores and values over the latent),
        # prefill the decompressed form (per-head keys and values)
        add(
            "attention (MLA)",
            "attn",
            group,
            n,
            params=0,
            heads=heads,
            kv_elems=rank + rope,
            pair_flops_decode=2 * heads * (2 * rank + rope),
            pair_flops_prefill=2 * heads * (nope + rope + v),
            window=window,
            kv_replicated=1,
            kv_heads=1,
            in_dim=q_out,
            out_dim=heads * v,
        )
        add("o_proj", "matmul", group, n, params=heads * v * h, in_dim=heads * v, out_dim=h)
    else:
        d, kvh = model.head_dim, model.num_kv_heads
        qb = heads * d if model.qkv_bias else 0
        kb = kvh * d if model.qkv_bias else 0
        add("q_proj", "matmul", group, n, params=h * heads * d + qb, in_dim=h, out_dim=heads * d)
        add("k_proj", "matmul", group, n, params=h * kvh * d + kb, in_dim=h, out_dim=kvh * d)
        add("v_proj", "matmul", group, n, params=h * kvh * d + kb, in_dim=h, out_dim=kvh * d)
        if model.qk_norm:
            norm_params += 2 * d
        add(
            "attention",
            "attn",
            group,
            n,
            params=heads if model.attention_sinks else 0,
            heads=heads,
            kv_elems=2 * kvh * d,
            pair_flops_decode=4 * heads * d,
            pair_flops_prefill=4 * heads * d,
            window=window,
            kv_replicated=0,
            kv_heads=kvh,
            in_dim=heads * d,
            out_dim=heads * d,
        )
        add("o_proj", "matmul", group, n, params=heads * d * h + (h if model.o_bias else 0), in_dim=heads * d, out_dim=h)
    # two RMSNorms per layer (Gemma 2/3: four); in_dim carries all of them so each is costed
    norms = 4 if model.architecture.startswith("gemma") and model.architecture != "gemma" else 2
    add("norms", "norm", group, n, params=norm_params + (norms - 2) * h, in_dim=norms * h, out_dim=norms * h)


def _mlp_rows(model: ModelRecord, group: str, n: int, size: int, name: str, add: Any) -> None:
    h = model.hidden_size
    bias_up = (2 * size if model.mlp_gated else size) if model.mlp_bias else 0
    bias_down = h if model.mlp_bias else 0
    if model.mlp_gated:
        add(f"{name} gate+up", "matmul", group, n, params=2 * h * size + bias_up, in_dim=h, out_dim=2 * size)
    else:
        add(f"{name} up", "matmul", group, n, params=h * size + bias_up, in_dim=h, out_dim=size)
    add(f"{name} down", "matmul", group, n, params=size * h + bias_down, in_dim=size, out_dim=h)


def _moe_rows(model: ModelRecord, group: str, n: int, add: Any) -> None:
    h, size, e = model.hidden_size, model.moe_intermediate_size, model.num_experts
    add("router", "matmul", group, n, params=h * e + (e if model.router_bias else 0), in_dim=h, out_dim=e)
    per_expert = 3 * h * size if model.mlp_gated else 2 * h * size
    if model.mlp_bias:
        per_expert += (2 * size if model.mlp_gated else size) + h
    add("experts (routed)", "moe", group, n, params=per_expert, in_dim=2 * h, out_dim=3 * size, experts=e, top_k=model.experts_per_token)
    if model.num_shared_experts:
        _mlp_rows(model, group, n, model.num_shared_experts * model.shared_intermediate_size, "shared expert", add)


def _empty_ops() -> pl.DataFrame:
    return pl.DataFrame(schema={**OPS_SCHEMA, "counted_params": pl.Float64})


Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class OpMatrix:
    """Operation tables as arrays: row i is one model (or one step's model), column j its j-th operation.

    The numeric columns of the operation table, each of shape (rows, J) with J
    the most operations any model has; a model with fewer operations is
    padded with kind -1 and zeros, which add nothing to any sum. `kind` holds
    codes into KINDS.
    """

    kind: npt.NDArray[np.int8]
    layers: Array
    params: Array
    in_dim: Array
    out_dim: Array
    experts: Array
    top_k: Array
    heads: Array
    kv_elems: Array
    pair_flops_decode: Array
    pair_flops_prefill: Array
    window: Array
    kv_replicated: Array
    kv_heads: Array

    @classmethod
    def of(cls, ops: pl.DataFrame, model_ids: list[str]) -> OpMatrix:
        """The operation tables of `model_ids` (row i = model_ids[i]), ops in table order."""
        index = {m: i for i, m in enumerate(model_ids)}
        rows = ops.filter(pl.col("model_id").is_in(model_ids)).with_columns(
            pl.col("model_id").replace_strict(index, return_dtype=pl.Int64).alias("_row"),
            pl.int_range(pl.len()).over("model_id").alias("_slot"),
        )
        r, c = rows["_row"].to_numpy(), rows["_slot"].to_numpy()
        width = int(c.max()) + 1 if len(c) else 1
        kind = np.full((len(model_ids), width), -1, dtype=np.int8)
        kind[r, c] = rows["kind"].replace_strict({k: i for i, k in enumerate(KINDS)}, return_dtype=pl.Int8).to_numpy()
        values: dict[str, Any] = {"kind": kind}
        for f in fields(cls)[1:]:
            grid = np.zeros((len(model_ids), width))
            grid[r, c] = rows[f.name].cast(pl.Float64).fill_null(0.0).to_numpy()
            values[f.name] = grid
        return cls(**values)

    def take(self, rows: npt.NDArray[np.intp]) -> OpMatrix:
        """The tables of the given rows (a model index per step)."""
        return OpMatrix(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})

    def row(self, model: int) -> OpMatrix:
        """One model's operations as a one-row table without the padding (it broadcasts over any number of steps)."""
        width = int((self.kind[model] >= 0).sum())
        return OpMatrix(**{f.name: getattr(self, f.name)[model : model + 1, :width] for f in fields(self)})
