"""Deployments at a request rate as people read them: the plans' table in reading units, the priced frontier of
aggregated and disaggregated serving, the headline (core.plan.deploy computes them)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt
import polars as pl

from core.catalogue.catalogue import Catalogue
from core.model.scenario import Scenario
from core.plan import load as ld
from core.plan.costs import Ownership
from core.plan.deploy import Plan, Workload, frontier, plan_deployments, plan_goodput, plan_split
from core.plan.published import score_deployments
from core.present.charts import ACCELERATOR_COLOURS, log_ticks, positive

Spec = dict[str, Any]
#: the plot's own size, px (axes and legend are added around it)
WIDTH, HEIGHT = 700, 340
MODE_DASH = alt.Scale(domain=["aggregated", "disaggregated"], range=[[1, 0], [6, 3]])
MODE_SHAPE = alt.Scale(domain=["aggregated", "disaggregated"], range=["circle", "triangle-up"])


@dataclass(frozen=True)
class DeployView:
    """The plans (cheapest meeting the targets first), their table, the frontier, the headline and the energy basis."""

    plans: list[Plan]
    table: pl.DataFrame
    chart: Spec | None
    headline: str | None
    basis: str
    unplanned: list[str]
    published: pl.DataFrame  # the published deployments of the model (core.plan.published), picked accelerators first


ENERGY_BASIS = (
    "Energy: every GPU of a plan at the power it is published to draw while serving (the median of the measured serving "
    "figures of that accelerator: ML.ENERGY Leaderboard v3 and InferenceX, vLLM) for the whole time, else at its board "
    "power (TDP), the upper bound; the Power column says which. J per output token = GPUs x W / output tokens/s, "
    "tokens per kWh = 3.6 million / that. Its share of the cost: that power x PUE x $/kWh over the $ per GPU-hour paid."
)


def plans_table(plans: Sequence[Plan], names: dict[str, str], goodputs: Sequence[float | None] = ()) -> pl.DataFrame:
    """One row per plan in reading units: the split, GPUs, p50/p90/p99 TTFT (s) and TPOT (ms), the goodput, cost, energy."""
    rows = []
    for i, p in enumerate(plans):
        r = p.record()
        rows.append(
            {
                "Accelerator": names.get(p.decode.gpu, p.decode.gpu)
                + (
                    "" if p.prefill is None or p.prefill.gpu == p.decode.gpu else f" (prefill on {names.get(p.prefill.gpu, p.prefill.gpu)})"
                ),
                "Serving": p.mode,
                "Plan": p.split,
                "GPUs": p.gpus,
                "Meets p90 targets": "yes" if p.meets else "no",
                "TTFT p50 (s)": r["ttft_p50_s"],
                "TTFT p90 (s)": r["ttft_p90_s"],
                "TTFT p99 (s)": r["ttft_p99_s"],
                "TPOT p50 (ms)": r["tpot_p50_s"] * 1e3,
                "TPOT p90 (ms)": r["tpot_p90_s"] * 1e3,
                "TPOT p99 (ms)": r["tpot_p99_s"] * 1e3,
                "KV transfer (ms)": r["kv_transfer_s"] * 1e3 if p.prefill is not None else None,
                "Goodput (requests/s)": goodputs[i] if i < len(goodputs) else None,
                "$ per hour": r["usd_per_hour"],
                "$ per M output tokens": r["usd_per_million_tokens"],
                "J per output token": r["joules_per_token"],
                "Output tokens per kWh": r["tokens_per_kwh"],
                "Energy share of cost (%)": r["energy_share"] * 100 if r["energy_share"] is not None else None,
                "Power": r["power_basis"],
                "Step times": p.basis,
                "Notes": "; ".join(p.notes),
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def frontier_chart(
    points: list[dict[str, Any]], plans: Sequence[Plan], names: dict[str, str], max_tpot_s: float, title: str
) -> Spec | None:
    """$ per million output tokens against tokens/s per user: one line per accelerator and serving mode (solid
    aggregated, dashed disaggregated) over the TPOT targets, the plans kept at the target ringed, the target a rule."""
    data = (
        positive(pl.DataFrame(points, infer_schema_length=None), "tokens_per_s_per_user", "usd_per_million_tokens")
        if points
        else pl.DataFrame()
    )
    if data.is_empty():
        return None
    data = data.with_columns(pl.col("gpu").replace_strict(names, default=pl.col("gpu")).alias("accelerator"))
    kept = pl.DataFrame(
        [
            {
                "accelerator": names.get(p.decode.gpu, p.decode.gpu),
                "mode": p.mode,
                "tokens_per_s_per_user": 1.0 / p.tpot_p50_s,
                "usd_per_million_tokens": p.usd_per_million_tokens,
                "split": p.split,
                "tpot_p90_ms": p.tpot_p90_s * 1e3,
                "ttft_p90_s": p.ttft_p90_s,
            }
            for p in plans
            if p.usd_per_million_tokens is not None and p.tpot_p50_s > 0
        ],
        infer_schema_length=None,
    )
    xs = [*data["tokens_per_s_per_user"].to_list(), 1.0 / max_tpot_s, *(kept["tokens_per_s_per_user"].to_list() if kept.height else [])]
    ys = [*data["usd_per_million_tokens"].to_list(), *(kept["usd_per_million_tokens"].to_list() if kept.height else [])]
    x_dom, y_dom = [min(xs) / 1.3, max(xs) * 1.3], [min(ys) / 1.4, max(ys) * 1.4]
    x = alt.X(
        "tokens_per_s_per_user:Q",
        scale=alt.Scale(type="log", domain=x_dom, nice=False),
        axis=alt.Axis(
            format=",~g", title="tokens/s per user (log; 1 / time per output token) → more interactive", values=log_ticks(*x_dom)
        ),
    )
    y = alt.Y(
        "usd_per_million_tokens:Q",
        scale=alt.Scale(type="log", domain=y_dom, nice=False),
        axis=alt.Axis(format="$,.3~g", title="$ per million output tokens (log) ↓ cheaper", values=log_ticks(*y_dom)),
    )
    colour = alt.Color(
        "accelerator:N",
        title="Accelerator",
        scale=alt.Scale(range=ACCELERATOR_COLOURS),
        legend=alt.Legend(orient="bottom", columns=3, labelLimit=300),
    )
    tips = [
        alt.Tooltip("accelerator:N", title="Accelerator"),
        alt.Tooltip("mode:N", title="Serving"),
        alt.Tooltip("split:N", title="Plan"),
        alt.Tooltip("tokens_per_s_per_user:Q", format=",.1f", title="Tokens/s per user"),
        alt.Tooltip("usd_per_million_tokens:Q", format="$,.3f", title="$ per million output tokens"),
    ]
    lines = (
        alt.Chart(data)
        .mark_line(strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=colour,
            strokeDash=alt.StrokeDash("mode:N", title="Serving", scale=MODE_DASH),
            detail="series:N",
            order="tokens_per_s_per_user:Q",
        )
    )
    dots = (
        alt.Chart(data)
        .mark_point(filled=True, size=50)
        .encode(x=x, y=y, color=colour, shape=alt.Shape("mode:N", title="Serving", scale=MODE_SHAPE), tooltip=tips)
    )
    layers: list[Any] = [lines, dots]
    if kept.height:
        ring_tips = [
            *tips[:4],
            alt.Tooltip("tpot_p90_ms:Q", format=",.1f", title="TPOT p90, simulated (ms)"),
            alt.Tooltip("ttft_p90_s:Q", format=",.2f", title="TTFT p90, simulated (s)"),
            tips[4],
        ]
        layers.append(alt.Chart(kept).mark_point(size=420, strokeWidth=3, filled=False).encode(x=x, y=y, color=colour, tooltip=ring_tips))
    rule = pl.DataFrame(
        {
            "tokens_per_s_per_user": [1.0 / max_tpot_s],
            "usd_per_million_tokens": [y_dom[1] / 1.15],
            "label": [f"target: TPOT p90 ≤ {max_tpot_s * 1e3:g} ms"],
        }
    )
    layers.append(alt.Chart(rule).mark_rule(color="#c53030", strokeDash=[6, 4], strokeWidth=2).encode(x="tokens_per_s_per_user:Q"))
    layers.append(
        alt.Chart(rule).mark_text(align="left", dx=6, fontSize=11, color="#c53030", fontWeight="bold").encode(x=x, y=y, text="label:N")
    )
    chart = alt.layer(*layers).properties(title=title, width=WIDTH, height=HEIGHT, autosize=alt.AutoSizeParams(type="pad"))
    spec: Spec = chart.to_dict(validate=False)
    return spec


def headline(plans: Sequence[Plan], names: dict[str, str], workload: Workload) -> str | None:
    """The cheapest plan meeting the targets, in one sentence, or why there is none."""
    met = [p for p in plans if p.meets and p.usd_per_million_tokens is not None]
    if not met:
        return None
    best = met[0]
    split = best.split
    for gpu in {best.decode.gpu, best.prefill.gpu if best.prefill else best.decode.gpu}:
        split = split.replace(f" {gpu} (", f" {names.get(gpu, gpu)} (")
    text = (
        f"Cheapest at {workload.rate_per_s:,g} requests/s: {split}, "
        f"{best.gpus:,} GPUs, ${best.usd_per_million_tokens:,.3f} per million output tokens "
        f"(p90 TTFT {best.ttft_p90_s:,.2f} s, p90 TPOT {best.tpot_p90_s * 1e3:,.1f} ms; {best.basis})."
    )
    other = next((p for p in met[1:] if p.decode.gpu == best.decode.gpu and p.mode != best.mode), None)
    if other is not None and other.usd_per_million_tokens is not None and best.usd_per_million_tokens:
        text += f" {other.mode.capitalize()} on the same accelerator: ${other.usd_per_million_tokens:,.3f} ({other.usd_per_million_tokens / best.usd_per_million_tokens:,.2f}x)."
    return text


def deploy_view(
    cat: Catalogue,
    base: Scenario,
    workload: Workload,
    gpus: Sequence[str],
    *,
    modes: Sequence[str] = ("aggregated", "disaggregated"),
    prefill_gpu: str | None = None,
    max_gpus: int = 64,
    max_pool_gpus: int = 16,
    prices: dict[str, float] | None = None,
    own: Ownership | None = None,
    title: str = "",
    trace: ld.Requests | None = None,
) -> DeployView:
    """The plans for the workload on each accelerator (both modes by default; `prefill_gpu`: the prefill pool on that
    accelerator for every disaggregated plan), their goodput, table and frontier. `trace`: requests to simulate
    instead of the Poisson stream (the workload then holds their mean rate and lengths; no goodput is searched)."""
    names = {g: acc.name for g, acc in cat.accelerators.items()}
    found: dict[str, Any] = {}
    plans: list[Plan]
    if prefill_gpu and "disaggregated" in modes:
        plans = [
            p
            for p in (
                plan_split(cat, base, workload, prefill_gpu, g, max_pool_gpus=max_pool_gpus, prices=prices, own=own, trace=trace)
                for g in gpus
            )
            if p
        ]
        if "aggregated" in modes:
            plans += plan_deployments(
                cat, base, workload, gpus, modes=("aggregated",), max_gpus=max_gpus, prices=prices, own=own, found=found, trace=trace
            )
        plans.sort(key=lambda p: (0 if p.meets else 1, p.usd_per_million_tokens if p.usd_per_million_tokens is not None else math.inf))
        points = (
            frontier(cat, base, workload, gpus, modes=("aggregated",), max_gpus=max_gpus, prices=prices, found=found)
            if "aggregated" in modes
            else []
        )
    else:
        plans = plan_deployments(
            cat,
            base,
            workload,
            gpus,
            modes=modes,
            max_gpus=max_gpus,
            max_pool_gpus=max_pool_gpus,
            prices=prices,
            own=own,
            found=found,
            trace=trace,
        )
        points = frontier(
            cat, base, workload, gpus, modes=modes, max_gpus=max_gpus, max_pool_gpus=max_pool_gpus, prices=prices, found=found
        )
    basis = plans[0].basis if plans else ("predicted" if cat.predictor is not None else "ceiling")
    return DeployView(
        plans=plans,
        table=plans_table(plans, names, [None if trace is not None else plan_goodput(p, workload) for p in plans]),
        chart=frontier_chart(points, plans, names, workload.max_tpot_p90_s, title),
        headline=headline(plans, names, workload),
        basis=basis,
        unplanned=[g for g in gpus if not any(p.decode.gpu == g for p in plans)],
        published=published_table(cat, base.model, gpus),
    )


def published_table(cat: Catalogue, model: str, gpus: Sequence[str]) -> pl.DataFrame:
    """The published deployments of `model` set against their layouts (core.plan.published), in reading units: the
    picked accelerators' rows first, each with its layout, batch, measured figure, ceiling, expected figure and
    source."""
    names = {g: acc.name for g, acc in cat.accelerators.items()}
    rows = score_deployments(cat).filter((pl.col("model") == model) & pl.col("unscored").is_null())
    if not rows.height:
        return pl.DataFrame()
    picked = list(gpus)
    return (
        rows.with_columns(pl.col("gpu").is_in(picked).alias("_picked"))
        .sort(["_picked", "gpu", "id"], descending=[True, False, False])
        .select(
            pl.col("gpu").replace_strict(names, default=pl.col("gpu")).alias("Accelerator"),
            pl.col("layout").alias("Layout (one instance)"),
            pl.col("batch").alias("Batch"),
            pl.col("batch_basis").alias("Batch from"),
            pl.col("metric").alias("Figure"),
            pl.col("measured").alias("Measured"),
            pl.col("ceiling").alias("Ceiling"),
            pl.col("predicted").alias("Expected"),
            pl.col("unit").alias("Unit"),
            pl.col("share_of_ceiling").alias("Share of ceiling"),
            pl.col("predicted_error").alias("Expected's error"),
            pl.col("cause").alias("Above its ceiling because"),
            pl.col("source_url").alias("Source"),
        )
    )
