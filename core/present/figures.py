"""What each page shows, computed in one place per page (no Streamlit): figures, charts as specs, tables, readings.

A page reads its widgets into a Scenario (and a few view options), calls one
function here, and draws what it returns; Streamlit caches the call
(st.cache_data beside the page). Charts come back as Vega-Lite spec dicts
(drawn with st.vega_lite_chart, exported with core.present.charts.export_chart),
except the measured page's, which can hold a million points and stay
Altair charts for Streamlit's Arrow path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt
import polars as pl

from core.catalogue.catalogue import PRODUCT_SCHEMA, Catalogue, filter_table
from core.evidence.calibration import calibrate
from core.evidence.compare import batch_curves, compare
from core.evidence.probes import made_from_probe
from core.model.ceilings import ceiling, ceilings_by_batch, operation_table
from core.model.result import Ceiling
from core.model.roofline import SWEEP_BATCHES, decode_matmul_intensity, operating_points, ridge_points, ridge_table, roof_lines
from core.model.scenario import Scenario
from core.plan.costs import Ownership
from core.plan.planning import frontier, memory_use, step_breakdown, what_ifs
from core.plan.purchase import Load, compare_accelerators, frontier_curves
from core.present.charts import (
    empirical_roofs,
    measured_roofline_chart,
    ridge_bars,
    ridge_groups,
    roofline_chart,
    throughput_batch_chart,
)
from core.present.plan_charts import comparison_bars, frontier_chart, memory_chart, purchase_frontier_chart, step_breakdown_chart
from core.present.readings import comparison_reading, frontier_reading, plain_reading
from core.present.tables import comparison_display, comparison_table, operations_display, what_if_display
from core.present.text import duration, si

Spec = dict[str, Any]

#: (width, height) of the roofline on its page: normal and presentation mode.
ROOFLINE_SIZES = {False: (760, 440), True: (1080, 620)}


# -- roofline -------------------------------------------------------------------


@dataclass(frozen=True)
class RooflineView:
    """The roofline page for one scenario and overlay: what does not depend on the batch shown."""

    ladder: dict[int, Ceiling]  # the ceilings at every batch of the sweep (1 .. 1024)
    paths: pl.DataFrame  # the operating points at every batch of the sweep (core.model.roofline.operating_points)
    roofs: pl.DataFrame
    title: str
    products: pl.DataFrame | None = None  # the probe's matmul runs (probe_products), drawn as measured points


def roofline_view(cat: Catalogue, sc: Scenario, overlay: Sequence[str], precisions: Sequence[str]) -> RooflineView:
    """Roofs of the accelerator and the overlay at `precisions` (default: the compute format used), and the batch sweep.

    The scenario's own batch is ignored: the view holds every batch of the sweep.
    """
    base = sc.model_copy(update={"batch": 1})
    ladder = ceilings_by_batch(cat, base, SWEEP_BATCHES)
    used = ladder[1].compute_used or "bf16"
    gpus = cat.gpus.filter(pl.col("id").is_in([sc.gpu, *overlay]))
    roofs = roof_lines(gpus, list(precisions) or [used], eff_bandwidth=sc.eff_bandwidth, eff_compute=sc.eff_compute)
    roofs = pl.concat([roofs, measured_roofs(cat, [sc.gpu, *overlay], list(precisions) or [used])])
    products = probe_products(cat, [sc.gpu, *overlay], list(precisions) or [used])
    title = f"{cat.model(sc.model).name} on {sc.num_gpus} × {cat.gpu(sc.gpu).name} · weights {sc.weights}, KV {sc.kv}"
    return RooflineView(ladder, operating_points(cat, base, SWEEP_BATCHES), roofs, title, products)


def measured_roofs(cat: Catalogue, gpu_ids: Sequence[str], precisions: Sequence[str]) -> pl.DataFrame:
    """The roofs a probe measured (kind "measured"), for the accelerators among `gpu_ids` with a profile, at the
    precisions the probe measured; none for an accelerator made from a probe (its datasheet roofs are the probe's)."""
    probed = [g for g in gpu_ids if cat.profile(g) is not None and not made_from_probe(cat.gpu(g))]
    frames = []
    for gpu in probed:
        prof = cat.profile(gpu) or {}
        measured = [p for p in precisions if prof.get(f"peak_{p}")]
        if measured:
            one = cat.measured().gpus.filter(pl.col("id") == gpu)
            frames.append(
                roof_lines(one, measured).with_columns(
                    pl.lit("measured").alias("roof"), (pl.col("series") + pl.lit(" (measured)")).alias("series")
                )
            )
    return pl.concat(frames) if frames else roof_lines(cat.gpus.head(0), list(precisions))


def probe_products(cat: Catalogue, gpu_ids: Sequence[str], precisions: Sequence[str]) -> pl.DataFrame:
    """The products a probe timed on the accelerators among `gpu_ids`, at `precisions`: where real shapes (decode
    m = 1..64, prefill, square) sit under the roofs. Columns: series, shape, m, n, k, intensity, attainable_flops."""
    frames = [
        cat.probe_products(g)
        .filter(pl.col("precision").is_in(list(precisions)))
        .with_columns(pl.format("{} · {} (probe)", pl.lit(cat.gpu(g).name), pl.col("precision")).alias("series"))
        for g in gpu_ids
        if cat.profile(g) is not None
    ]
    empty = pl.DataFrame(schema={**PRODUCT_SCHEMA, "series": pl.String})
    return pl.concat([empty, *frames], how="diagonal_relaxed").select(
        "series", "shape", "m", "n", "k", "intensity", pl.col("flops_per_s").alias("attainable_flops")
    )


@dataclass(frozen=True)
class RooflineAt:
    """The roofline at one batch: the ceiling, the operating points, the chart, its reading, the decode step's operations."""

    result: Ceiling
    points: pl.DataFrame
    chart: Spec
    reading: str
    operations: pl.DataFrame | None  # None for a frame of Play


def roofline_at(cat: Catalogue, view: RooflineView, sc: Scenario, *, big: bool = False, operations: bool = True) -> RooflineAt:
    """The view at the scenario's batch (a batch of the sweep reads the view; another is evaluated)."""
    if sc.batch in view.ladder:
        result, points = view.ladder[sc.batch], view.paths.filter(pl.col("batch") == sc.batch)
    else:
        result, points = ceiling(cat, sc), operating_points(cat, sc)
    width, height = ROOFLINE_SIZES[big]
    chart = roofline_chart(
        view.roofs, points, view.paths, title=f"{view.title} · batch {sc.batch}", width=width, height=height, products=view.products
    )
    table = operations_display(operation_table(cat, sc, communication=True)) if operations else None
    return RooflineAt(result, points, chart.to_dict(validate=False), plain_reading(points, result), table)


# -- ridge points ------------------------------------------------------------------


@dataclass(frozen=True)
class RidgeView:
    """The ridge page for one selection: the table at one precision, its display form and both charts."""

    table: pl.DataFrame  # empty when no selected accelerator has the precision
    intensity: float
    shown: pl.DataFrame | None = None
    chart: Spec | None = None
    groups: Spec | None = None


def ridge_view(
    cat: Catalogue,
    precision: str,
    vendors: Sequence[str],
    forms: Sequence[str],
    years: tuple[int, int],
    batch: int,
    weights: str,
    big: bool,
) -> RidgeView:
    """Each selected accelerator's ridge at `precision` against the decode matmul's intensity at this batch."""
    gpus = filter_table(cat.gpus, "", vendor=list(vendors), form_factor=list(forms))
    gpus = gpus.filter((gpus["year"] >= years[0]) & (gpus["year"] <= years[1]))
    intensity = decode_matmul_intensity(batch, weights)
    table = ridge_table(gpus, precision, batch, weights)
    if table.is_empty():
        return RidgeView(table, intensity)
    shown = table.select(
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
    chart = ridge_bars(table, intensity, title=f"Ridge points at {precision} (dense)", width=900 if big else 600)
    grouped = ridge_points(gpus).filter(pl.col("precision").is_in(["bf16", "fp8", "fp4"]))
    groups = ridge_groups(grouped, title="Ridge points by precision (bf16, fp8, fp4)")
    return RidgeView(table, intensity, shown, chart.to_dict(validate=False), groups.to_dict(validate=False))


# -- ceiling calculator -------------------------------------------------------------


@dataclass(frozen=True)
class CalculatorView:
    """The ceiling, the three charts (frontier None when nothing fits), the frontier's reading and the what-ifs."""

    result: Ceiling
    breakdown: Spec
    memory: Spec
    frontier: Spec | None
    frontier_reading: str
    what_ifs: pl.DataFrame


def calculator_view(cat: Catalogue, sc: Scenario) -> CalculatorView:
    """Everything the ceiling calculator shows for one scenario (the ceiling evaluated once)."""
    r = ceiling(cat, sc)
    breakdown = step_breakdown_chart(step_breakdown(cat, sc, r), title=f"Decode cycle: {duration(r.cycle_time_s)}", width=440)
    memory = memory_chart(memory_use(r), title=f"{si(r.memory_required_bytes, 'B')} of {si(r.capacity_bytes, 'B')}", width=440)
    front = frontier(cat, sc, result=r)
    fits = not front.filter(pl.col("fits")).is_empty()
    front_chart = frontier_chart(front, title="Each point is a decode batch; the curve stops where memory runs out") if fits else None
    return CalculatorView(
        result=r,
        breakdown=breakdown.to_dict(validate=False),
        memory=memory.to_dict(validate=False),
        frontier=front_chart.to_dict(validate=False) if front_chart is not None else None,
        frontier_reading=frontier_reading(cat, sc, front, result=r),
        what_ifs=what_if_display(what_ifs(cat, sc, r)),
    )


# -- compare accelerators -----------------------------------------------------------


@dataclass(frozen=True)
class CompareView:
    """The comparison, its display form, its reading, the frontier (two views) and the bar charts (None when nothing qualifies)."""

    table: pl.DataFrame
    met: int
    reading: str | None
    shown: pl.DataFrame
    chart: Spec | None
    curves: pl.DataFrame
    frontier: Spec | None  # output tokens/s per GPU against tokens/s per user
    frontier_cost: Spec | None  # $ per million output tokens against tokens/s per user


def compare_view(
    cat: Catalogue,
    picked: Sequence[str],
    sc: Scenario,
    *,
    max_tpot_s: float | None,
    max_ttft_s: float | None,
    own: Ownership | None = None,
    prices: Mapping[str, float] | None = None,
    buy_prices: Mapping[str, float] | None = None,
    load: Load | None = None,
    sort_by: str = "usd_per_million_tokens",
    title: str = "",
) -> CompareView:
    """The workload on every picked accelerator (core.plan.purchase.compare_accelerators) and its frontier, ready to show."""
    kw: dict[str, Any] = {"own": own, "prices": prices, "buy_prices": buy_prices}
    table = compare_accelerators(cat, picked, sc, max_tpot_s=max_tpot_s, max_ttft_s=max_ttft_s, load=load, sort_by=sort_by, **kw)
    met = int((table["status"] == "ok").sum())
    chart = comparison_bars(table, title=title).to_dict(validate=False) if met else None
    curves = frontier_curves(cat, table, sc, max_tpot_s=max_tpot_s, max_ttft_s=max_ttft_s, **kw)
    views: list[Spec | None] = [None, None]
    if not curves.is_empty():
        heading = f"{title}: each curve is one configuration's batch sweep; ringed: the one kept"
        views[0] = purchase_frontier_chart(curves, max_tpot_s=max_tpot_s, title=heading).to_dict(validate=False)
        if curves["usd_per_million_tokens"].is_not_null().any():
            cost = purchase_frontier_chart(curves, y="usd_per_million_tokens", max_tpot_s=max_tpot_s, title=heading)
            views[1] = cost.to_dict(validate=False)
    reading = comparison_reading(table) if met else None
    return CompareView(table, met, reading, comparison_display(table), chart, curves, views[0], views[1])


def sweep_frontier(rows: pl.DataFrame, *, max_tpot_s: float | None, title: str) -> Spec | None:
    """A sweep's rows on the throughput-interactivity frontier: one curve per accelerator x GPUs x model x weights x context
    over its batches (None when no row has throughput)."""
    data = rows.filter(pl.col("tokens_per_s_total").is_not_null() & (pl.col("tokens_per_s_total") > 0))
    if data.is_empty():
        return None
    data = data.with_columns(
        (pl.col("tokens_per_s_total") / pl.col("num_gpus")).alias("tokens_per_s_per_gpu"),
        pl.format("{} × {} · {} {} · context {}", "num_gpus", "gpu_name", "model", "weights", "context").alias("series"),
    )
    return purchase_frontier_chart(data, max_tpot_s=max_tpot_s, title=title, height=420, colour_by="gpu_name").to_dict(validate=False)


# -- measured against predicted ----------------------------------------------------


@dataclass(frozen=True)
class MeasuredView:
    """One dataset against the model: comparison, calibration (None when off), display table."""

    cal: pl.DataFrame | None
    cmp: pl.DataFrame
    table: pl.DataFrame


def measured_view(cat: Catalogue, rows: pl.DataFrame, calibrated: bool) -> MeasuredView:
    """A dataset's measurements against their ceilings, with the calibrated model when asked for."""
    cal = calibrate(cat, rows) if calibrated else None
    cmp = compare(cat, rows, cal)
    return MeasuredView(cal, cmp, comparison_table(cmp))


def measured_charts(cat: Catalogue, rows: pl.DataFrame, view: MeasuredView) -> tuple[alt.LayerChart, alt.LayerChart | None]:
    """The measured roofline and the tokens/s-against-batch chart (None without decode or serving rows), as Altair charts."""
    cmp, cal = view.cmp, view.cal
    precisions = sorted(set(cmp["compute_used"].drop_nulls().to_list())) or ["bf16"]
    gpus = cat.gpus.filter(pl.col("id").is_in(cmp["gpu"].unique().to_list()))
    roofs = empirical_roofs(gpus, precisions, cal if cal is not None else pl.DataFrame())
    roof_chart = measured_roofline_chart(roofs, cmp, title="Measured points (filled) beside their predicted operating points (rings)")
    curves = batch_curves(cat, rows, cal)
    title = "Tokens/s against batch: predicted ceiling, calibrated model, measured"
    batch_chart = None if curves.is_empty() else throughput_batch_chart(curves, cmp, title=title)
    return roof_chart, batch_chart
