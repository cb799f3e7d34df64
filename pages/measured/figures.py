"""What the measured page computes for one dataset, in one place (no Streamlit); memoised by the page.

A dataset's rows never change once imported (renaming changes only its
name), so its comparison, calibration and charts are computed once per
(store, dataset, import time, calibration switch) rather than on every rerun.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl

from core.catalogue import Catalogue
from core.charts import empirical_roofs, measured_roofline_chart, throughput_batch_chart
from core.importers import dataset_rows
from core.measurements import batch_curves, calibrate, compare, comparison_table

#: Datasets up to this many rows are memoised; bigger ones are recomputed (their frames would crowd the memo).
MEMO_ROWS = 100_000


def measured_figures(cat: Catalogue, db: Any, dataset_id: int, imported_at: datetime | None, calibrated: bool) -> dict[str, Any]:
    """Comparison, calibration, display table and both charts for one dataset (`imported_at` only keys the memo).

    The charts stay Altair objects: a dataset can hold a million points, which
    Streamlit's own Arrow path (st.altair_chart) sends far quicker than a
    spec of rows would be built.
    """
    rows = dataset_rows(db, dataset_id)
    cal = calibrate(cat, rows) if calibrated else None
    cmp = compare(cat, rows, cal)
    precisions = sorted(set(cmp["compute_used"].drop_nulls().to_list())) or ["bf16"]
    gpus = cat.gpus.filter(pl.col("id").is_in(cmp["gpu"].unique().to_list()))
    roofs = empirical_roofs(gpus, precisions, cal if cal is not None else pl.DataFrame())
    roof_chart = measured_roofline_chart(roofs, cmp, title="Measured points (filled) beside their predicted operating points (rings)")
    curves = batch_curves(cat, rows, cal)
    batch_chart = (
        None
        if curves.is_empty()
        else throughput_batch_chart(curves, cmp, title="Tokens/s against batch: predicted ceiling, calibrated model, measured")
    )
    return {
        "cal": cal,
        "cmp": cmp,
        "table": comparison_table(cmp),
        "roof_chart": roof_chart,
        "batch_chart": batch_chart,
    }
