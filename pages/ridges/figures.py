"""What the ridge page shows for one selection, computed in one place (no Streamlit); memoised by the page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from core.catalogue import Catalogue, filter_table
from core.charts import ridge_bars, ridge_groups
from core.roofline import decode_matmul_intensity, ridge_points, ridge_table


def ridge_figures(
    cat: Catalogue,
    precision: str,
    vendors: Sequence[str],
    forms: Sequence[str],
    years: tuple[int, int],
    batch: int,
    weights: str,
    big: bool,
) -> dict[str, Any]:
    """The ridge table at `precision` (empty when no selected accelerator has it), its display form and both charts' specs."""
    gpus = filter_table(cat.gpus, "", vendor=list(vendors), form_factor=list(forms))
    gpus = gpus.filter((gpus["year"] >= years[0]) & (gpus["year"] <= years[1]))
    intensity = decode_matmul_intensity(batch, weights)
    table = ridge_table(gpus, precision, batch, weights)
    out: dict[str, Any] = {"table": table, "intensity": intensity}
    if table.is_empty():
        return out
    out["shown"] = table.select(
        "name",
        "vendor",
        "year",
        "precision",
        (table["peak_flops"] / 1e12).alias("peak (TFLOP/s)"),
        (table["bandwidth_bytes_per_s"] / 1e12).alias("bandwidth (TB/s)"),
        table["ridge"].alias("ridge (FLOP/B)"),
        "bound",
        table["ridge_batch"].alias("batch to become compute-bound"),
    )
    out["chart"] = ridge_bars(table, intensity, title=f"Ridge points at {precision} (dense)", width=900 if big else 600).to_dict(
        validate=False
    )
    all_ridges = ridge_points(gpus)
    grouped = all_ridges.filter(pl.col("precision").is_in(["bf16", "fp8", "fp4"]))
    out["groups"] = ridge_groups(grouped, title="Ridge points by precision (bf16, fp8, fp4)").to_dict(validate=False)
    return out
