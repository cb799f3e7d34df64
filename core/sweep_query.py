"""Querying a catalogue sweep: evaluate a grid in chunks (for a progress bar), filter by result.

The grid and its evaluation come from `core.sweep`; here a grid is split into
row chunks (each one evaluated as one frame, so a page can report progress)
and the result is filtered by Polars expressions: "which accelerators meet
20 ms per output token at batch 64 for a 70B model in fp8?".
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import polars as pl

from core.catalogue import Catalogue
from core.sweep import SWEEP_COLUMNS, sweep

#: Rows evaluated per chunk.
CHUNK_ROWS = 2_000


def sweep_chunks(cat: Catalogue, grid: pl.DataFrame, chunk_rows: int = CHUNK_ROWS) -> Iterator[tuple[float, pl.DataFrame]]:
    """(fraction done, result so far) after each chunk of `chunk_rows` scenarios; the last one is the whole sweep."""
    if grid.is_empty():
        yield 1.0, sweep(cat, grid)
        return
    parts: list[pl.DataFrame] = []
    for start in range(0, grid.height, chunk_rows):
        parts.append(sweep(cat, grid.slice(start, chunk_rows)))
        done = min(grid.height, start + chunk_rows)
        yield done / grid.height, pl.concat(parts)


def filter_results(
    frame: pl.DataFrame,
    *,
    max_tpot_s: float | None = None,
    max_ttft_s: float | None = None,
    min_tokens_per_s_per_user: float | None = None,
    min_tokens_per_s_total: float | None = None,
    fits_only: bool = True,
    bound: str | None = None,
    batch: int | None = None,
) -> pl.DataFrame:
    """The sweep rows that meet every given limit (None: no limit); rows lacking a figure fail its limit."""
    cond = pl.lit(True)
    if fits_only:
        cond = cond & pl.col("fits")
    if max_tpot_s is not None:
        cond = cond & (pl.col("time_per_output_token_s") <= max_tpot_s)
    if max_ttft_s is not None:
        cond = cond & (pl.col("ttft_s") <= max_ttft_s)
    if min_tokens_per_s_per_user is not None:
        cond = cond & (pl.col("tokens_per_s_per_user") >= min_tokens_per_s_per_user)
    if min_tokens_per_s_total is not None:
        cond = cond & (pl.col("tokens_per_s_total") >= min_tokens_per_s_total)
    if bound is not None:
        cond = cond & (pl.col("bound") == bound)
    if batch is not None:
        cond = cond & (pl.col("batch") == batch)
    return frame.filter(cond.fill_null(False)) if frame.height else frame


def answer(frame: pl.DataFrame, matched: pl.DataFrame) -> str:
    """How many scenarios and accelerators meet the limits, in one sentence."""
    if frame.is_empty():
        return "The sweep is empty."
    if matched.is_empty():
        return f"Nothing meets these limits: 0 of {frame.height:,} scenarios."
    names = matched.group_by("gpu_name").agg(pl.col("num_gpus").min()).sort("num_gpus", "gpu_name")
    listed = ", ".join(f"{n} (from {g} GPU{'s' if g > 1 else ''})" for n, g in names.iter_rows())
    return (
        f"{matched.height:,} of {frame.height:,} scenarios meet these limits, "
        f"on {names.height} of {frame['gpu'].n_unique()} accelerators: {listed}."
    )


def sweep_display(frame: pl.DataFrame) -> pl.DataFrame:
    """A sweep result in reading units (ms, GB), units in the column names."""
    if frame.is_empty():
        return frame
    return frame.select(
        pl.col("gpu_name").alias("accelerator"),
        pl.col("model"),
        pl.col("num_gpus").alias("GPUs"),
        pl.col("weights"),
        pl.col("compute_used").alias("compute"),
        pl.col("kv").alias("KV"),
        pl.col("batch"),
        pl.col("context").alias("context (tokens)"),
        (pl.col("time_per_output_token_s") * 1e3).alias("time per output token (ms)"),
        pl.col("tokens_per_s_per_user").alias("tokens/s per user"),
        pl.col("tokens_per_s_total").alias("tokens/s total"),
        (pl.col("ttft_s") * 1e3).alias("time to first token (ms)"),
        pl.col("bound"),
        pl.col("ridge").alias("ridge (FLOP/B)"),
        (pl.col("memory_required_bytes") / 1e9).alias("memory needed (GB)"),
        (pl.col("capacity_bytes") / 1e9).alias("memory on the GPUs (GB)"),
        pl.col("fits"),
        pl.col("max_batch").alias("largest batch"),
        pl.col("min_gpus").alias("fewest GPUs"),
    )


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    """The frame as a Parquet file (every sweep column, SI units)."""
    buf = io.BytesIO()
    frame.select([c for c in SWEEP_COLUMNS if c in frame.columns] or frame.columns).write_parquet(buf)
    return buf.getvalue()
