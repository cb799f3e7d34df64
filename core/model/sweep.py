"""Grid sweeps: accelerators x models x precisions x batches x contexts as one frame, and questions asked of it.

`scenario_grid` builds the cross product of the axes as a frame of
scenarios (no Python loop per row), `sweep` evaluates it in one call of
core.model.ceilings.evaluate, `sweep_chunks` in row chunks so a page can
show progress, and `filter_results` keeps the rows that meet given limits:
"which accelerators meet 20 ms per output token at batch 64 for a 70B model
in fp8?"."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.model.ceilings import evaluate
from core.model.result import RESULT_SCHEMA
from core.model.scenario import Scenario, grid

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
    "within_scaleup_domain",
    "usd_per_gpu_hour_used",
    "usd_per_million_tokens",
    "tokens_per_s_per_watt",
    "framework",
    "predicted_tpot_s",
    "predicted_tokens_per_s_per_user",
    "predicted_tokens_per_s_total",
    "predicted_ttft_s",
    "predicted_usd_per_million_tokens",
    "predicted_error",
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
    base: Scenario | None = None,
) -> pl.DataFrame:
    """The cross product of the given axes as a scenario frame (no Python loop per row); every other field from `base`."""
    return grid(base or Scenario(), gpu=gpus, model=models, weights=weights, batch=batches, context=contexts, num_gpus=num_gpus)


def sweep(cat: Catalogue, grid: pl.DataFrame) -> pl.DataFrame:
    """Evaluate a scenario grid; one row per scenario with the sweep columns."""
    if grid.is_empty():
        return pl.DataFrame(schema={c: RESULT_SCHEMA[c] for c in SWEEP_COLUMNS})
    return evaluate(cat, grid, columns=SWEEP_COLUMNS)


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
    within_domain: bool = False,
) -> pl.DataFrame:
    """The sweep rows that meet every given limit (None: no limit); rows lacking a figure fail its limit.

    `within_domain` keeps only tensor-parallel groups one scale-up domain holds (no 16 x H100 in tensor parallel).
    """
    cond = pl.lit(True)
    if fits_only:
        cond = cond & pl.col("fits")
    if within_domain:
        cond = cond & pl.col("within_scaleup_domain")
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
