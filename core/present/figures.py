"""What each page shows, computed in one place per page (no Streamlit): figures, charts as specs, tables, readings.

A page reads its widgets into a Scenario (and a few view options), calls one
function here, and draws what it returns; Streamlit caches the call
(st.cache_data beside the page). Charts come back as Vega-Lite spec dicts
(drawn with st.vega_lite_chart, exported with core.present.charts.export_chart),
except the measured page's, which draw at most about MAX_MARKS marks each and stay
Altair charts for Streamlit's Arrow path.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import altair as alt
import polars as pl

from core.catalogue.catalogue import PRODUCT_SCHEMA, Catalogue, filter_table
from core.evidence.compare import PREDICT_COLUMNS, batch_curves, compare_scenarios, summary
from core.evidence.probes import made_from_probe
from core.evidence.refit import Refit, expected, expected_rates, refit
from core.model.ceilings import ceiling, ceilings_by_batch, operation_table
from core.model.result import Ceiling
from core.model.roofline import SWEEP_BATCHES, decode_matmul_intensity, operating_points, ridge_points, ridge_table, roof_lines
from core.model.scenario import Scenario
from core.plan.compare_request import CompareRequest
from core.plan.planning import frontier, memory_use, step_breakdown, what_ifs, would_fit
from core.plan.purchase import compare_accelerators, frontier_curves
from core.present.charts import (
    RooflineBackdrop,
    empirical_roofs,
    measured_roofline_chart,
    positive,
    roofline_backdrop,
    roofline_spec,
    throughput_batch_chart,
)
from core.present.plan_charts import (
    FRONTIER_HEIGHT,
    FRONTIER_WIDTH,
    comparison_bars,
    frontier_chart,
    memory_chart,
    purchase_frontier_chart,
    step_breakdown_chart,
)
from core.present.readings import comparison_reading, frontier_reading, plain_reading
from core.present.ridge_charts import decade_ticks, intensity_text, ridge_chart, ridge_precision_chart, with_decode_rule
from core.present.tables import comparison_display, comparison_table, operations_display, what_if_display
from core.present.text import duration, plural, si, sig

Spec = dict[str, Any]

#: (width, height) of the roofline's plot on its page: normal and presentation mode. In presentation mode the legends
#: stand beside the plot (the width of a 1280 px screen is what it has to spare, not the height: the headline and the
#: chart fit one 1280 x 800 screen); stretched, the plot is as wide as the page leaves it, labels placed at this width.
ROOFLINE_SIZES = {False: (760, 440), True: (760, 380)}
#: The ridge charts' plot height in presentation mode (px): every accelerator's row shares it.
RIDGE_PRESENT_PLOT = 420
#: Where the roofline's legends go: normal and presentation mode.
ROOFLINE_LEGEND = {False: "bottom", True: "right"}


# -- roofline -------------------------------------------------------------------


@dataclass(frozen=True)
class RooflineView:
    """The roofline page for one scenario and overlay: what does not depend on the batch shown."""

    ladder: dict[int, Ceiling]  # the ceilings at every batch of the sweep (1 .. 1024)
    paths: pl.DataFrame  # the operating points at every batch of the sweep (core.model.roofline.operating_points)
    roofs: pl.DataFrame
    title: str
    products: pl.DataFrame | None = None  # the probe's matmul runs (probe_products), drawn as measured points
    backdrop: RooflineBackdrop | None = None  # the chart's roofs, paths and products made ready (roofline_backdrop)


def roofline_view(cat: Catalogue, sc: Scenario, overlay: Sequence[str], precisions: Sequence[str]) -> RooflineView:
    """Roofs of the accelerator and the overlay at `precisions` (default: the compute format used), and the batch sweep.

    The scenario's own batch is ignored: the view holds every batch of the sweep.
    """
    base = sc.model_copy(update={"batch": 1})
    ladder = ceilings_by_batch(cat, base, SWEEP_BATCHES)
    used = ladder[1].compute_used or "bf16"
    gpus = cat.gpus.filter(pl.col("id").is_in([sc.gpu, *overlay]))
    roofs = roof_lines(gpus, list(precisions) or [used])
    if sc.eff_bandwidth < 1.0 or sc.eff_compute < 1.0:  # the scenario's efficiencies derate its own accelerator only
        own = roof_lines(
            gpus.filter(pl.col("id") == sc.gpu), list(precisions) or [used], eff_bandwidth=sc.eff_bandwidth, eff_compute=sc.eff_compute
        )
        roofs = pl.concat([roofs, own.filter(pl.col("roof") == "derated")], how="diagonal_relaxed")
    roofs = pl.concat([roofs, measured_roofs(cat, [sc.gpu, *overlay], list(precisions) or [used])])
    products = probe_products(cat, [sc.gpu, *overlay], list(precisions) or [used])
    title = f"{cat.model(sc.model).name} on {sc.num_gpus} × {cat.gpu(sc.gpu).name} · weights {sc.weights}, KV {sc.kv}"
    paths = operating_points(cat, base, SWEEP_BATCHES)
    return RooflineView(ladder, paths, roofs, title, products, roofline_backdrop(roofs, paths, products))


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


def roofline_at(
    cat: Catalogue,
    view: RooflineView,
    sc: Scenario,
    *,
    big: bool = False,
    operations: bool = True,
    height: int | None = None,
    legend: str | None = None,
    width: int | None = None,
) -> RooflineAt:
    """The view at the scenario's batch (a batch of the sweep reads the view; another is evaluated). `big`: presentation
    mode's size and legends (ROOFLINE_SIZES, ROOFLINE_LEGEND); `height` and `width` (px) set the plot's size instead
    (`width` the narrowest it is drawn at: its labels are placed for it), `legend` the legends' place
    (core.present.charts.roofline_chart)."""
    if sc.batch in view.ladder:
        result, points = view.ladder[sc.batch], view.paths.filter(pl.col("batch") == sc.batch)
    else:
        result, points = ceiling(cat, sc), operating_points(cat, sc)
    points = with_expected(points, result)
    plot_width, plot_height = ROOFLINE_SIZES[big]
    # the title holds no batch (it is in the plot's corner, from the data): the spec stays the same from batch to batch
    chart = roofline_spec(
        view.backdrop or view.roofs,
        points,
        view.paths,
        title=view.title,
        width=width or plot_width,
        height=height or plot_height,
        products=view.products,
        batch=sc.batch,
        legend=legend or ROOFLINE_LEGEND[big],
    )
    table = operations_display(operation_table(cat, sc, communication=True)) if operations else None
    return RooflineAt(result, points, chart, plain_reading(cat, points, result), table)


#: The overview roofline's plot width in normal mode (px): what its 3:5 column leaves the plot on a 1280 px screen. Its
#: labels are placed for it, so none covers another or a marker there or on a wider screen.
OVERVIEW_PLOT = 370


def overview_roofline(cat: Catalogue, view: RooflineView, sc: Scenario, *, big: bool) -> RooflineAt:
    """The overview's roofline. In its 3:5 column (a 1280 px screen gives it about 490 px) the legends go one under
    another; in presentation mode (`big`) beside a plot low enough for the two rows of figures above it."""
    legend = "right" if big else "stacked"
    width = None if big else OVERVIEW_PLOT
    shown = roofline_at(cat, view, sc, operations=False, big=big, height=280 if big else None, legend=legend, width=width)
    if big:
        return shown
    # the title on two lines at its " · " (whole, where on one line the narrow column would cut it with an ellipsis)
    return replace(shown, chart={**shown.chart, "title": view.title.split(" · ", 1)})


#: The roofline's point for the predicted decode step (core.present.charts.POINT_SHAPES draws it as a star).
EXPECTED_POINT = "decode step, expected"


def with_expected(points: pl.DataFrame, result: Ceiling) -> pl.DataFrame:
    """The operating points with the decode step as the scenario's framework is expected to run it: the same intensity,
    at the FLOP/s per GPU the predicted step time gives (under its roof; no prediction: no point)."""
    step = points.filter(pl.col("point") == "decode step")
    t = result.predicted_step_time_s
    if not step.height or t is None or not t > 0:
        return points
    reached = pl.col("flops") / result.scenario.num_gpus / t
    expected = step.with_columns(
        pl.lit(EXPECTED_POINT).alias("point"),
        reached.alias("attainable_flops"),
        (reached / pl.col("attainable_flops") * pl.col("share_of_peak")).alias("share_of_peak"),
        pl.lit(t).alias("time_s"),
    )
    return pl.concat([points, expected.select(points.columns)])


# -- ridge points ------------------------------------------------------------------


@dataclass(frozen=True)
class RidgeView:
    """The ridge page for one selection: the table at one precision, its display form and both charts."""

    table: pl.DataFrame  # empty when no selected accelerator has the precision
    intensity: float
    shown: pl.DataFrame | None = None
    chart: Spec | None = None
    groups: Spec | None = None
    undated: int = 0  # accelerators in the selection without a year, kept by the year filter


#: Precisions of the ridge page's chart by precision.
GROUP_PRECISIONS = ("bf16", "fp8", "fp4")


def ridge_view(
    cat: Catalogue,
    precision: str,
    vendors: Sequence[str],
    forms: Sequence[str],
    years: tuple[int, int],
    batch: int,
    weights: str,
    big: bool,
    highlight: str | None = None,
) -> RidgeView:
    """Each selected accelerator's ridge at `precision` against the decode matmul's intensity at this batch.

    The year filter keeps accelerators without a year (a custom one may have none); `highlight`, the
    scenario's accelerator, is ringed in both charts.
    """
    gpus = filter_table(cat.gpus, "", vendor=list(vendors), form_factor=list(forms))
    gpus = gpus.filter(pl.col("year").is_null() | pl.col("year").is_between(years[0], years[1]))
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
        table["ridge_batch"].alias("compute-bound from batch"),
    )
    width = 1000 if big else 640
    fit = RIDGE_PRESENT_PLOT if big else None  # presentation mode: the rows share a plot the 1280 x 800 screen has room for
    chart = ridge_chart(
        table, intensity, highlight=highlight, title=f"Ridge points at {precision} (dense)", batch=batch, width=width, fit=fit
    )
    grouped = ridge_points(gpus).filter(pl.col("precision").is_in(GROUP_PRECISIONS))
    ticks = decade_ticks([*positive(grouped, "ridge")["ridge"].to_list(), float(intensity)])
    groups = with_decode_rule(
        _precision_spec(cat, grouped, highlight, width, ticks), intensity, ticks, f"decode matmul: {intensity_text(intensity)} FLOP/byte"
    )
    undated = int(table["year"].is_null().sum())
    return RidgeView(table, intensity, shown, chart.to_dict(validate=False), groups, undated)


#: The ridges-by-precision chart of a selection, made once (its batch's rule is added to it: with_decode_rule); keyed by
#: the catalogue it was made from (held weakly: a new catalogue, after a custom entry, makes it again) and what it shows.
_PRECISION_SPECS: OrderedDict[tuple[Any, ...], tuple[weakref.ref[Catalogue], Spec]] = OrderedDict()


def _precision_spec(cat: Catalogue, grouped: pl.DataFrame, highlight: str | None, width: int, ticks: list[float]) -> Spec:
    key = (id(cat), tuple(grouped["id"].to_list()), tuple(grouped["precision"].to_list()), highlight, width, tuple(ticks))
    hit = _PRECISION_SPECS.get(key)
    if hit is not None and hit[0]() is cat:
        _PRECISION_SPECS.move_to_end(key)
        return hit[1]
    spec = ridge_precision_chart(
        grouped,
        None,
        highlight=highlight,
        title=f"Ridge points by precision ({', '.join(GROUP_PRECISIONS)})",
        width=width,  # below the lead chart, it keeps a row's full height in presentation mode too
        ticks=ticks,
    ).to_dict(validate=False)
    _PRECISION_SPECS[key] = (weakref.ref(cat), spec)
    while len(_PRECISION_SPECS) > 32:
        _PRECISION_SPECS.popitem(last=False)
    return spec


# -- ceiling calculator -------------------------------------------------------------


@dataclass(frozen=True)
class CalculatorView:
    """The ceiling, the three charts (frontier None when nothing fits), the frontier's reading and the what-ifs."""

    result: Ceiling
    breakdown: Spec
    memory: Spec
    frontier: Spec | None
    frontier_reading: str
    what_ifs: pl.DataFrame  # core.present.tour.moves_table shows the same frame
    would_fit: str | None = None  # when the scenario does not fit: the largest batch, fewest GPUs, longest context that would


def calculator_view(cat: Catalogue, sc: Scenario, *, frontier_height: int = 380) -> CalculatorView:
    """Everything the ceiling calculator shows for one scenario (the ceiling evaluated once); the frontier's plot is
    `frontier_height` px high (its labels are placed for it)."""
    r = ceiling(cat, sc)
    breakdown = step_breakdown_chart(step_breakdown(cat, sc, r), title=f"Decode cycle: {duration(r.cycle_time_s)}", width=440)
    memory = memory_chart(memory_use(r), title=f"{si(r.memory_required_bytes, 'B')} of {si(r.capacity_bytes, 'B')}", width=440)
    front = frontier(cat, sc, result=r)
    fits = not front.filter(pl.col("fits")).is_empty()
    heading = "Each point is a decode batch; the curve stops where memory runs out"
    front_chart = frontier_chart(front, title=heading, height=frontier_height) if fits else None
    return CalculatorView(
        result=r,
        breakdown=breakdown.to_dict(validate=False),
        memory=memory.to_dict(validate=False),
        frontier=front_chart.to_dict(validate=False) if front_chart is not None else None,
        frontier_reading=frontier_reading(cat, sc, front, result=r),
        what_ifs=what_if_display(what_ifs(cat, sc, r)),
        would_fit=fit.sentence() if (fit := would_fit(cat, sc, r)) is not None else None,
    )


# -- compare accelerators -----------------------------------------------------------


@dataclass(frozen=True)
class CompareView:
    """The comparison, its display form, its reading, the frontier (two views) and the bar charts (None when nothing
    qualifies), with what it is of in words: the goal, the chart title and the subject line naming each configuration."""

    table: pl.DataFrame
    met: int
    reading: str | None
    shown: pl.DataFrame
    chart: Spec | None
    curves: pl.DataFrame
    frontier: Spec | None  # output tokens/s per GPU against tokens/s per user
    frontier_cost: Spec | None  # $ per million output tokens against tokens/s per user
    goal: str = ""
    heading: str = ""  # model, formats, lengths and goal (the page's subheading)
    subject: str = ""  # the heading and each accelerator's configuration (the report's and the exports' line)
    headline: tuple[tuple[str, str, str], ...] = ()  # (label, value, help) of the best configuration's figures

    @property
    def best(self) -> dict[str, Any] | None:
        """The best configuration's row (None when nothing qualifies)."""
        return self.table.row(0, named=True) if self.met else None


def compare_view(
    cat: Catalogue,
    picked: Sequence[str],
    sc: Scenario,
    request: CompareRequest | None = None,
    *,
    prices: Mapping[str, float] | None = None,
    buy_prices: Mapping[str, float] | None = None,
    frontier_size: tuple[int, int] | None = None,
) -> CompareView:
    """The workload on every picked accelerator as `request` asks (core.plan.purchase.compare_accelerators) and its
    frontier, ready to show (`frontier_size`: the frontiers' plot width and height in px as drawn, where not their own;
    their labels are placed for it)."""
    request = request or CompareRequest()
    max_tpot_s, max_ttft_s = request.limits()
    own = request.ownership()
    load = request.load(sc.prompt)
    model = cat.model(sc.model).name
    goal = request.goal(sc.batch)
    title = f"{model} ({sc.weights}, KV {sc.kv}), {goal}"
    kw: dict[str, Any] = {"own": own, "prices": prices, "buy_prices": buy_prices, "basis": request.basis}
    table = compare_accelerators(cat, picked, sc, max_tpot_s=max_tpot_s, max_ttft_s=max_ttft_s, load=load, sort_by=request.sort_by, **kw)
    met = int((table["status"] == "ok").sum())
    chart = comparison_bars(table, title=title).to_dict(validate=False) if met else None
    curves = frontier_curves(cat, table, sc, max_tpot_s=max_tpot_s, max_ttft_s=max_ttft_s, **kw)
    views: list[Spec | None] = [None, None]
    if not curves.is_empty():
        heading = f"{title}: each curve is one configuration's batch sweep; ringed: the one kept"
        width, height = frontier_size or (FRONTIER_WIDTH, FRONTIER_HEIGHT)
        views[0] = purchase_frontier_chart(curves, max_tpot_s=max_tpot_s, title=heading, width=width, height=height).to_dict(validate=False)
        if curves["usd_per_million_tokens"].is_not_null().any():
            cost = purchase_frontier_chart(
                curves, y="usd_per_million_tokens", max_tpot_s=max_tpot_s, title=heading, width=width, height=height
            )
            views[1] = cost.to_dict(validate=False)
    reading = comparison_reading(table) if met else None
    line = f"{model} · weights {sc.weights}, KV {sc.kv} · context {sc.context:,}, prompt {sc.prompt:,} · {goal}"
    configurations = ", ".join(  # an accelerator on which no configuration qualifies has no count: it said "None × ..."
        f"{n} × {g}" if n is not None else f"{g} (none qualifies)" for g, n in zip(table["gpu_name"], table["num_gpus"], strict=True)
    )
    best = table.row(0, named=True) if met else None
    return CompareView(
        table,
        met,
        reading,
        comparison_display(table),
        chart,
        curves,
        views[0],
        views[1],
        goal=goal,
        heading=line,
        subject=f"{line} · {configurations}",
        headline=compare_headline(best, request, sc) if best else (),
    )


def compare_headline(best: Mapping[str, Any], request: CompareRequest, sc: Scenario) -> tuple[tuple[str, str, str], ...]:
    """(label, value, help) of the best configuration's four figures: GPUs x batch, tokens/s per GPU, $ per million output
    tokens, and the GPUs the load needs (tokens/s per user where no load is asked for)."""
    usd = best["usd_per_million_tokens"]
    out = [
        ("GPUs × batch", f"{best['num_gpus']} × {best['batch']}", best["why"]),
        ("Tokens/s per GPU", sig(best["tokens_per_s_per_gpu"]), "Output tokens per second per GPU at this configuration."),
        (
            "$ per million output tokens",
            f"${usd:,.3g}" if usd is not None else "—",
            f"{request.pay}: {best['price_basis']}" if usd is not None else "No price: type one under 'Prices used'.",
        ),
    ]
    if request.load(sc.prompt) is not None:
        month = f"${best['usd_per_month']:,.0f} per month." if best["usd_per_month"] is not None else "no price."
        out.append(
            (
                "GPUs for the load",
                f"{best['gpus_needed']:,}" if best["gpus_needed"] is not None else "—",
                f"{plural(best['replicas'] or 0, 'replica')} of {plural(best['num_gpus'], 'GPU')} for {request.requests_per_s:g} "
                f"requests/s of {sc.prompt:,} in / {request.output_tokens:,} out tokens; {month}",
            )
        )
    else:
        out.append(
            ("Tokens/s per user", sig(best["tokens_per_s_per_user"]), "Output tokens per second each user sees at this configuration.")
        )
    return tuple(out)


def sweep_frontier(rows: pl.DataFrame, *, max_tpot_s: float | None, title: str, height: int = 420) -> Spec | None:
    """A sweep's rows on the throughput-interactivity frontier: one curve per accelerator x GPUs x model x weights x context
    over its batches (None when no row has throughput), its plot `height` px high (its labels are placed for it)."""
    data = rows.filter(pl.col("tokens_per_s_total").is_not_null() & (pl.col("tokens_per_s_total") > 0))
    if data.is_empty():
        return None
    data = data.with_columns(
        (pl.col("tokens_per_s_total") / pl.col("num_gpus")).alias("tokens_per_s_per_gpu"),
        pl.format("{} × {} · {} {} · context {}", "num_gpus", "gpu_name", "model", "weights", "context").alias("series"),
    )
    return purchase_frontier_chart(data, max_tpot_s=max_tpot_s, title=title, height=height, colour_by="gpu_name").to_dict(validate=False)


# -- measured against predicted ----------------------------------------------------


#: The measured charts draw at most about this many marks: a larger dataset is drawn as the median of each scenario's
#: measurements, merged in log bins when there are still too many; every row stays in the table and its download.
MAX_MARKS = 10_000


@dataclass(frozen=True)
class MeasuredView:
    """One dataset against the model: the comparison with the ceiling and with what the framework is expected to reach,
    the refit (None when off), the display table, the summary (core.evidence.compare.summary) and what the two charts
    draw (at most about MAX_MARKS marks each)."""

    refit: Refit | None
    cmp: pl.DataFrame  # core.evidence.compare.compare with the expected columns, less the model's step figures; flags as categories
    table: pl.DataFrame  # core.present.tables.comparison_table, its flags as categories
    summary: dict[str, Any] = field(default_factory=dict)
    roofs: pl.DataFrame | None = None  # datasheet and (accepted refits') empirical roofs
    rings: pl.DataFrame | None = None  # predicted operating points: one per scenario (or bin)
    points: pl.DataFrame | None = None  # measured points: each row, or the median of each scenario (or bin)
    curves: pl.DataFrame | None = None  # core.evidence.compare.batch_curves
    batch_points: pl.DataFrame | None = None  # measured tokens/s against batch, like `points`
    note: str = ""  # how the marks were aggregated ("" when every row is its own mark)
    framework: str = "vLLM"


def measured_view(cat: Catalogue, rows: pl.DataFrame, refitted: bool, framework: str = "vLLM") -> MeasuredView:
    """A dataset's measurements against their ceilings and against what `framework` is expected to reach (the catalogue's
    predictor), refitted on the dataset when asked for (core.evidence.refit): compared once, refitted once, the rows
    predicted before and after, and the charts' marks aggregated here."""
    if not rows.height:
        return MeasuredView(None, rows, rows, framework=framework)
    cmp, _ = compare_scenarios(cat, rows)
    cmp = expected(cat, cmp, framework)
    fit = refit(cat, cmp, framework) if refitted else None
    if fit is not None and fit.accepted:
        after = expected(cat, cmp.drop("expected_tokens_per_s", "expected_ttft_s", "expected_ratio"), framework, fit.predictor)
        cmp = cmp.with_columns(after["expected_tokens_per_s"].alias("refit_tokens_per_s"), after["expected_ratio"].alias("refit_ratio"))
    precisions = sorted(set(cmp["compute_used"].drop_nulls().to_list())) or ["bf16"]
    gpus = cat.gpus.filter(pl.col("id").is_in(cmp["gpu"].unique().to_list()))
    roofs = empirical_roofs(gpus, precisions, fit.cells if fit is not None else ())
    rings, points, roof_note = measured_marks(cmp)
    curve_fit = fit.predictor if fit is not None and fit.accepted else None
    curves = batch_curves(cat, cmp, expected_rates(cat, framework, curve_fit) if cat.predictor is not None else None)
    batch_points, batch_note = batch_marks(cmp, MAX_MARKS - curves.height)
    note = roof_note or batch_note
    # text columns of few distinct values (accelerator, model, formats, phase, status, flags) as categories: stored once each
    table = comparison_table(cmp)
    table = table.with_columns(pl.col(c).cast(pl.Categorical) for c, t in table.schema.items() if t == pl.String)
    kept = cmp.drop(_STEP_INTERNALS, strict=False)
    kept = kept.with_columns(
        *(pl.col(c).cast(pl.Categorical) for c, t in kept.schema.items() if t == pl.String), pl.col("flags").cast(pl.List(pl.Categorical))
    )
    return MeasuredView(fit, kept, table, summary(cmp), roofs, rings, points, curves, batch_points, note, framework)


#: The model's step figures behind a comparison, which the view does not keep: the page caches the view (pickled on every
#: rerun), and a million rows of these are most of its size. Its charts' marks are made from them before they go.
_STEP_INTERNALS = tuple(
    "predicted_ttft_s" if c == "ttft_s" else c for c in PREDICT_COLUMNS if c not in ("scenario_id", "compute_used", "fits")
)


def _label(prefix: pl.Expr) -> pl.Expr:
    return pl.format("{} · {} · batch {} · {} in / {} out", prefix, "phase", "batch", "input_tokens", "output_tokens")


def measured_marks(cmp: pl.DataFrame, budget: int = MAX_MARKS) -> tuple[pl.DataFrame, pl.DataFrame, str]:
    """The roofline's marks of a comparison: predicted rings (one per distinct scenario) and measured points (each row
    when they fit in the budget with the rings, else the median of each scenario's rows, per status, merged in log bins
    if still too many), with the note that says so. Columns: intensity, flops, status, label, n (measurements); the
    points also `accelerator` (the id of the one they were measured on: a bin holds one accelerator's marks)."""
    pts = positive(cmp, "point_intensity", "achieved_flops_per_gpu", "predicted_flops_per_gpu")
    first = [pl.col(c).first() for c in ("phase", "batch", "input_tokens", "output_tokens", "point_intensity")]
    rings = (
        pts.group_by("scenario_id", maintain_order=True)
        .agg(*first, pl.col("predicted_flops_per_gpu").first(), pl.col("status").min(), pl.len().alias("n"))  # "above ceiling" < "ok"
        .select(
            pl.col("point_intensity").alias("intensity"),
            pl.col("predicted_flops_per_gpu").alias("flops"),
            "status",
            _label(pl.lit("predicted")).alias("label"),
            pl.col("n").cast(pl.Int64),
        )
    )
    rings, ring_step = _binned(rings, budget // 2)
    room = budget - rings.height
    if pts.height <= room:
        points = pts.select(
            pl.col("point_intensity").alias("intensity"),
            pl.col("achieved_flops_per_gpu").alias("flops"),
            "status",
            _label(pl.format("row {}", "row")).alias("label"),
            pl.lit(1, dtype=pl.Int64).alias("n"),
            pl.col("gpu").cast(pl.String).alias("accelerator"),
        )
        return rings, points, _note(pts.height, rings.height + points.height, None, ring_step, per_row=True)
    points = (
        pts.group_by("scenario_id", "status", maintain_order=True)
        .agg(*first, pl.col("achieved_flops_per_gpu").median(), pl.len().alias("n"), pl.col("row").min(), pl.col("gpu").first())
        .select(
            pl.col("point_intensity").alias("intensity"),
            pl.col("achieved_flops_per_gpu").alias("flops"),
            "status",
            _label(pl.format("median of {} measurements from row {}", "n", "row")).alias("label"),
            pl.col("n").cast(pl.Int64),
            pl.col("gpu").cast(pl.String).alias("accelerator"),
        )
    )
    points, step = _binned(points, room)
    return rings, points, _note(pts.height, rings.height + points.height, step, ring_step, per_row=False)


def batch_marks(cmp: pl.DataFrame, budget: int = MAX_MARKS) -> tuple[pl.DataFrame, str]:
    """The measured points of the tokens/s-against-batch chart (decode and serving rows), aggregated as `measured_marks`
    does. Columns: series, batch, tokens_per_s, status, phase, label, n."""
    pts = positive(cmp.filter(pl.col("phase") != "prefill"), "batch", "tokens_per_s")
    series = pl.format("{} × {} · {} · {} ({} in / {} out)", "num_gpus", "gpu", "model", "weights", "input_tokens", "output_tokens")
    budget = max(budget, 1)
    if pts.height <= budget:
        marks = pts.select(
            series.alias("series"),
            "batch",
            "tokens_per_s",
            "status",
            "phase",
            pl.format("row {}", "row").alias("label"),
            pl.lit(1, dtype=pl.Int64).alias("n"),
        )
        return marks, ""
    marks = (
        pts.group_by("scenario_id", "status", maintain_order=True)
        .agg(
            *(pl.col(c).first() for c in ("num_gpus", "gpu", "model", "weights", "input_tokens", "output_tokens", "batch", "phase")),
            pl.col("tokens_per_s").median(),
            pl.len().alias("n"),
            pl.col("row").min(),
        )
        .select(
            series.alias("series"),
            "batch",
            "tokens_per_s",
            "status",
            "phase",
            pl.format("median of {} measurements from row {}", "n", "row").alias("label"),
            pl.col("n").cast(pl.Int64),
        )
    )
    if marks.height > budget:
        marks = _bin_batch(marks, budget)
    return marks, _note(pts.height, marks.height, None, None, per_row=False)


def _binned(marks: pl.DataFrame, budget: int) -> tuple[pl.DataFrame, float | None]:
    """Marks (intensity, flops, status, label, n) merged into log bins, per status, coarse enough to be at most `budget`
    (bins of 1/256 decade, doubled until they are); the marks as they are when already few enough. Returns the bin size."""
    if marks.height <= budget:
        return marks, None
    logs = marks.with_columns(pl.col("intensity").log10().alias("_x"), pl.col("flops").log10().alias("_y"))
    step = 1 / 256
    own = [pl.col("accelerator")] if "accelerator" in marks.columns else []  # a bin holds one accelerator's marks
    while True:
        keys = [(pl.col("_x") / step).floor().alias("_bx"), (pl.col("_y") / step).floor().alias("_by"), pl.col("status"), *own]
        bins = logs.group_by(keys).agg(
            (10 ** ((pl.col("_x") * pl.col("n")).sum() / pl.col("n").sum())).alias("intensity"),
            (10 ** ((pl.col("_y") * pl.col("n")).sum() / pl.col("n").sum())).alias("flops"),
            pl.col("n").sum(),
            pl.len().alias("_marks"),
            pl.col("label").first(),
        )
        if bins.height <= budget or step >= 1:
            break
        step *= 2
    label = (
        pl.when(pl.col("_marks") == 1)
        .then(pl.col("label"))
        .otherwise(pl.format("{} measurements of {} scenarios in one bin", "n", "_marks"))
    )
    return bins.select("intensity", "flops", "status", label.alias("label"), pl.col("n").cast(pl.Int64), *own), step


def _bin_batch(marks: pl.DataFrame, budget: int) -> pl.DataFrame:
    """Tokens/s marks merged per batch and status into log bins of tokens/s, coarse enough to be at most `budget`."""
    logs = marks.with_columns(pl.col("tokens_per_s").log10().alias("_y"))
    step = 1 / 256
    while True:
        bins = logs.group_by("batch", "status", (pl.col("_y") / step).floor().alias("_by")).agg(
            pl.col("series").first(),
            pl.col("series").n_unique().alias("_series"),
            pl.col("phase").first(),
            (10 ** ((pl.col("_y") * pl.col("n")).sum() / pl.col("n").sum())).alias("tokens_per_s"),
            pl.col("n").sum(),
            pl.len().alias("_marks"),
            pl.col("label").first(),
        )
        if bins.height <= budget or step >= 1:
            break
        step *= 2
    many = pl.col("_marks") > 1
    return bins.select(
        pl.when(pl.col("_series") > 1).then(pl.format("{} setups", "_series")).otherwise(pl.col("series")).alias("series"),
        "batch",
        "tokens_per_s",
        "status",
        "phase",
        pl.when(many)
        .then(pl.format("{} measurements of {} scenarios in one bin", "n", "_marks"))
        .otherwise(pl.col("label"))
        .alias("label"),
        pl.col("n").cast(pl.Int64),
    )


def _note(rows: int, marks: int, step: float | None, ring_step: float | None, *, per_row: bool) -> str:
    """What a chart's marks are, when they are not one per row and scenario."""
    if per_row and ring_step is None:
        return ""
    parts = [] if per_row else ["each measured mark is the median of one scenario's measurements"]
    if step is not None or ring_step is not None:
        parts.append(f"nearby marks merged in log bins of {max(step or 0.0, ring_step or 0.0):.3g} decade")
    return (
        f"{plural(rows, 'measurement')} drawn as {plural(marks, 'mark')}: " + "; ".join(parts) + "; every row is in the table and its CSV"
    )


def measured_charts(cat: Catalogue, rows: pl.DataFrame, view: MeasuredView) -> tuple[alt.LayerChart, alt.LayerChart | None]:
    """The measured roofline and the tokens/s-against-batch chart (None without decode or serving rows), as Altair charts,
    drawn from the view's marks (at most about MAX_MARKS each; the view says how they were aggregated). `rows` (the
    dataset's) is used only for a view made without marks."""
    if view.roofs is None or view.rings is None or view.points is None or view.curves is None:
        view = measured_view(cat, rows, view.refit is not None, view.framework)
    assert view.roofs is not None and view.rings is not None and view.points is not None and view.curves is not None
    names = dict(cat.gpus.select("id", "name").iter_rows())
    points = view.points.with_columns(pl.col("accelerator").replace(names)) if "accelerator" in view.points.columns else view.points
    roof_chart = measured_roofline_chart(
        view.roofs,
        points,
        title="Measured points (filled) beside their predicted operating points (rings)",
        rings=view.rings,
        subtitle=view.note,
    )
    title = f"Tokens/s against batch: the ceiling, what {view.framework} is expected to reach, measured"
    batch_chart = (
        None if view.curves.is_empty() else throughput_batch_chart(view.curves, view.batch_points, title=title, subtitle=view.note)
    )
    return roof_chart, batch_chart
