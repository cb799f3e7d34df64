"""Tables in reading units for the pages (units in column names)."""

from __future__ import annotations

import polars as pl


def operations_display(ops: pl.DataFrame) -> pl.DataFrame:
    """The per-operation roofline table (core.ceilings.operation_table) in GFLOP, MB, µs and %."""
    return ops.select(
        pl.col("group").alias("layer group"),
        pl.col("op").alias("operation"),
        pl.col("layers"),
        (pl.col("flops") / 1e9).alias("GFLOP"),
        (pl.col("weight_bytes") / 1e6).alias("weights (MB)"),
        (pl.col("act_bytes") / 1e6).alias("activations (MB)"),
        (pl.col("kv_bytes") / 1e6).alias("KV (MB)"),
        pl.col("intensity").alias("intensity (FLOP/B)"),
        pl.col("bound"),
        (pl.col("time_s") * 1e6).alias("time (µs)"),
        (pl.col("share") * 100).alias("share of step (%)"),
    )
