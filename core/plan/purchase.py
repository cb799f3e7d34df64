"""Comparing accelerators for one workload (a purchase decision).

One workload (model, precisions, context, prompt) and either a fixed decode
batch or a service target (time per output token <= x, time to first token
<= y). For every accelerator the tensor-parallel degrees and batches are
evaluated as one frame (`core.model.ceilings.evaluate`); per accelerator the table
keeps the fewest GPUs that fit (and meet the target), and at that count the
batch with the most tokens/s in total.

No price is shipped: the catalogue has no reviewed $ per GPU-hour figures,
so every default is 0 ("enter your price") and $ per million tokens stays
empty until a price is entered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.model.ceilings import evaluate
from core.model.scenario import Scenario, grid

#: Tensor-parallel degrees tried per accelerator.
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)
#: Decode batches tried under a service target.
TARGET_BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)

#: Sort keys offered by the page: column -> True when larger is better.
SORT_KEYS: dict[str, bool] = {
    "tokens_per_s_total": True,
    "tokens_per_s_per_user": True,
    "usd_per_million_tokens": False,
    "tokens_per_s_per_watt": True,
    "num_gpus": False,
}
SORT_LABELS = {
    "tokens_per_s_total": "tokens/s total",
    "tokens_per_s_per_user": "tokens/s per user",
    "usd_per_million_tokens": "$ per million tokens",
    "tokens_per_s_per_watt": "tokens/s per W",
    "num_gpus": "fewest GPUs",
}

COMPARISON_COLUMNS = (
    "gpu",
    "gpu_name",
    "status",
    "num_gpus",
    "batch",
    "tokens_per_s_per_user",
    "tokens_per_s_total",
    "time_per_output_token_s",
    "ttft_s",
    "usd_per_gpu_hour",
    "usd_per_million_tokens",
    "tokens_per_s_per_watt",
    "ridge",
    "compute_used",
    "bound",
    "peak_flops",
    "bandwidth_bytes_per_s",
    "memory_required_bytes",
    "capacity_bytes",
)


def price_table(cat: Catalogue, gpu_ids: Sequence[str], prices: Mapping[str, float] | None = None) -> pl.DataFrame:
    """The editable $ per GPU-hour table: one row per chosen accelerator (0 = enter your price)."""
    names = dict(zip(cat.gpus["id"], cat.gpus["name"], strict=True))
    given = dict(prices or {})
    return pl.DataFrame(
        {
            "gpu": list(gpu_ids),
            "accelerator": [names.get(g, g) for g in gpu_ids],
            "usd_per_gpu_hour": [float(given.get(g, 0.0)) for g in gpu_ids],
            "source": ["your price" if given.get(g) else "enter your price" for g in gpu_ids],
        },
        schema={"gpu": pl.String, "accelerator": pl.String, "usd_per_gpu_hour": pl.Float64, "source": pl.String},
    )


def compare_accelerators(
    cat: Catalogue,
    gpu_ids: Sequence[str],
    workload: Scenario,
    *,
    max_tpot_s: float | None = None,
    max_ttft_s: float | None = None,
    prices: Mapping[str, float] | None = None,
    gpu_counts: Sequence[int] = GPU_COUNTS,
    batches: Sequence[int] = TARGET_BATCHES,
    sort_by: str = "tokens_per_s_total",
) -> pl.DataFrame:
    """One row per accelerator for the workload, sorted by `sort_by` (best first, unmet last).

    Without a target (both limits None) the batch is the workload's and an
    accelerator qualifies at the fewest GPUs that hold weights + KV for it.
    With a target, every batch in `batches` is tried and a row qualifies when
    it fits and meets both limits. status says "ok", "does not fit on N GPUs"
    or "misses the target"; the figures of an unqualified row are null.
    """
    ids = list(dict.fromkeys(gpu_ids))
    if not ids:
        return pl.DataFrame(schema=_schema())
    targeted = max_tpot_s is not None or max_ttft_s is not None
    price = pl.col("gpu").replace_strict(dict(prices or {}), default=0.0, return_dtype=pl.Float64)
    axes = grid(workload, gpu=ids, num_gpus=gpu_counts, batch=batches if targeted else [workload.batch])
    out = evaluate(
        cat, axes.with_columns(price.alias("usd_per_gpu_hour")), columns=[c for c in COMPARISON_COLUMNS if c != "status"] + ["fits"]
    )
    meets = pl.col("fits") & pl.col("tokens_per_s_total").is_not_null()
    if max_tpot_s is not None:
        meets = meets & (pl.col("time_per_output_token_s") <= max_tpot_s)
    if max_ttft_s is not None:
        meets = meets & (pl.col("ttft_s") <= max_ttft_s)
    out = out.with_columns(meets.alias("meets"))
    best = (
        out.filter(pl.col("meets"))
        .sort(["gpu", "num_gpus", "tokens_per_s_total", "batch"], descending=[False, False, True, False])
        .group_by("gpu", maintain_order=True)
        .first()
        .with_columns(pl.lit("ok").alias("status"))
    )
    why = out.group_by("gpu").agg(pl.col("fits").any().alias("any_fit"), pl.col("gpu_name").first())
    most = max(gpu_counts)
    status = pl.when(pl.col("any_fit")).then(pl.lit("misses the target")).otherwise(pl.lit(f"does not fit on {most} GPUs"))
    missing = why.join(best.select("gpu"), on="gpu", how="anti").with_columns(status.alias("status")).drop("any_fit")
    table = pl.concat([best.select(COMPARISON_COLUMNS), missing], how="diagonal_relaxed").select(COMPARISON_COLUMNS)
    larger_better = SORT_KEYS.get(sort_by, True)
    return table.sort([pl.col("status") != "ok", sort_by, "gpu"], descending=[False, larger_better, False], nulls_last=True)


def _schema() -> dict[str, Any]:
    strings = {"gpu", "gpu_name", "status", "compute_used", "bound"}
    ints = {"num_gpus", "batch"}
    return {c: pl.String if c in strings else pl.Int64 if c in ints else pl.Float64 for c in COMPARISON_COLUMNS}
