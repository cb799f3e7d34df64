"""Grid sweeps: accelerators x models x precisions x batches x contexts as one frame."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from core.catalogue import Catalogue
from core.ceilings import evaluate

DEFAULT_BATCHES = tuple(2**i for i in range(11))  # 1 .. 1024
DEFAULT_CONTEXTS = (1024, 4096, 16384, 32768, 65536, 131072)
DEFAULT_WEIGHTS = ("bf16", "fp8", "int4")

#: The columns a sweep result keeps (the full evaluation has many more).
SWEEP_COLUMNS = (
    "gpu",
    "gpu_name",
    "model",
    "num_gpus",
    "weights",
    "compute",
    "compute_used",
    "kv",
    "batch",
    "context",
    "prompt",
    "step_time_s",
    "time_per_output_token_s",
    "tokens_per_s_per_user",
    "tokens_per_s_total",
    "ttft_s",
    "intensity",
    "ridge",
    "bound",
    "bandwidth_ceiling_tokens_per_s",
    "bandwidth_ceiling_with_kv_tokens_per_s",
    "weight_memory_bytes",
    "kv_memory_bytes",
    "memory_required_bytes",
    "capacity_bytes",
    "fits",
    "max_batch",
    "min_gpus",
    "usd_per_million_tokens",
    "tokens_per_s_per_watt",
    "flags",
)


def scenario_grid(
    gpus: Sequence[str],
    models: Sequence[str],
    *,
    weights: Sequence[str] = DEFAULT_WEIGHTS,
    batches: Sequence[int] = DEFAULT_BATCHES,
    contexts: Sequence[int] = DEFAULT_CONTEXTS,
    num_gpus: Sequence[int] = (1,),
    kv: str = "bf16",
    prompt: int = 2048,
    usd_per_gpu_hour: float = 0.0,
) -> pl.DataFrame:
    """The cross product of the given axes as a scenario frame (no Python loop per row)."""
    axes = [
        pl.DataFrame({"gpu": list(gpus)}),
        pl.DataFrame({"model": list(models)}),
        pl.DataFrame({"weights": list(weights)}),
        pl.DataFrame({"batch": [int(b) for b in batches]}),
        pl.DataFrame({"context": [int(c) for c in contexts]}),
        pl.DataFrame({"num_gpus": [int(n) for n in num_gpus]}),
    ]
    grid = axes[0]
    for axis in axes[1:]:
        grid = grid.join(axis, how="cross")
    return grid.with_columns(
        pl.lit(kv).alias("kv"), pl.lit(int(prompt)).alias("prompt"), pl.lit(float(usd_per_gpu_hour)).alias("usd_per_gpu_hour")
    )


def sweep(cat: Catalogue, grid: pl.DataFrame) -> pl.DataFrame:
    """Evaluate a scenario grid; one row per scenario with the sweep columns."""
    if grid.is_empty():
        return pl.DataFrame(schema={c: pl.Null for c in SWEEP_COLUMNS})
    return evaluate(cat, grid, columns=SWEEP_COLUMNS)
