"""The compare page's deployments: a request rate with p90 targets, planned past one scale-up group (core.plan.deploy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.model.scenario import Scenario
from core.plan import load as ld
from core.plan.costs import DEFAULT_SOURCES, Ownership
from core.plan.deploy import Workload
from core.present.deploy import ENERGY_BASIS, DeployView, deploy_view
from core.present.report import Section
from core.present.text import escape_markdown, plain
from pages.compare.prices import typed_prices
from pages.shared.data import HASH_FUNCS
from pages.shared.params import DEPLOY_MODES, presenting
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, show_chart

MODES = DEPLOY_MODES
SAME = "same as decode"
_BOUNDS = {name: Workload.model_fields[name] for name in Workload.model_fields}


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=64, show_spinner="Planning deployments and simulating their load…")
def figures(
    cat: Catalogue,
    base: Scenario,
    workload: Workload,
    gpus: tuple[str, ...],
    modes: tuple[str, ...],
    prefill_gpu: str | None,
    max_gpus: int,
    max_pool_gpus: int,
    prices: Mapping[str, float],
    own: Ownership,
    title: str,
    trace: bytes | None = None,
    trace_name: str = "",
) -> DeployView:
    return deploy_view(
        cat,
        base,
        workload,
        gpus,
        modes=modes,
        prefill_gpu=prefill_gpu,
        max_gpus=max_gpus,
        max_pool_gpus=max_pool_gpus,
        prices=dict(prices),
        own=own,
        title=title,
        trace=ld.read_trace(trace, trace_name) if trace is not None else None,
    )


def _workload(box: Any) -> Workload:
    c = box.columns(6)
    rate = c[0].number_input(
        "Request rate (requests/s)", 0.01, 100_000.0, 10.0, 1.0, key="dp_rate", bind="query-params",
        help="Requests arriving per second, a Poisson process: the load the plan must carry.",
    )  # fmt: skip
    prompt = c[1].number_input(
        "Prompt (tokens)", 1, 1_000_000, 2000, 256, key="dp_prompt", bind="query-params", help="Prompt tokens of each request."
    )  # fmt: skip
    output = c[2].number_input(
        "Output (tokens)", 1, 1_000_000, 500, 64, key="dp_output", bind="query-params", help="Output tokens of each request."
    )  # fmt: skip
    ttft = c[3].number_input(
        "TTFT p90 ≤ (s)", 0.01, 3600.0, 2.0, 0.1, key="dp_ttft", bind="query-params",
        help="The 90th percentile of the time to first token a plan must meet, in seconds (queueing included).",
    )  # fmt: skip
    tpot = c[4].number_input(
        "TPOT p90 ≤ (ms)", 1.0, 60_000.0, 50.0, 5.0, key="dp_tpot", bind="query-params",
        help="The 90th percentile of the time per output token a plan must meet, in ms (50 ms = 20 tokens/s per user).",
    )  # fmt: skip
    hit = c[5].number_input(
        "Prefix-cache hits (%)", 0.0, 99.0, 0.0, 5.0, key="dp_prefix", bind="query-params",
        help="Share of each prompt already in the prefix cache: that part is not prefilled again (its KV still moves).",
    )  # fmt: skip
    return Workload(
        rate_per_s=float(rate),
        prompt=int(prompt),
        output=int(output),
        max_ttft_p90_s=float(ttft),
        max_tpot_p90_s=float(tpot) / 1e3,
        prefix_hit=float(hit) / 100.0,
    )


def deployments_view(cat: Catalogue, sc: Scenario, names: Mapping[str, str], box: Any, lead: Any, picked: list[str]) -> None:
    """Plans for a request rate on each picked accelerator, aggregated and disaggregated, priced; their frontier."""
    workload = _workload(box)
    c = box.columns([3, 2, 1, 1, 1, 1])
    modes = c[0].multiselect(
        "Serving", list(MODES), default=list(MODES), format_func=MODES.__getitem__, key="dp_modes", bind="query-params",
        help="Aggregated: replicas that each prefill and decode (continuous batching, chunked prefill). Disaggregated: a "
        "pool of prefill instances and one of decode instances, the KV cache moved between them (xPyD).",
    )  # fmt: skip
    options = [SAME, *names]
    prefill_gpu = c[1].selectbox(
        "Prefill pool on", options, format_func=lambda g: SAME if g == SAME else names[g], key="dp_prefill_gpu", bind="query-params",
        help="Disaggregated plans put the prefill pool on the decode pool's accelerator, or on this one for every plan "
        "(a compute-rich part for prefill, a bandwidth-rich one for decode).",
    )  # fmt: skip
    max_gpus = c[2].number_input(
        "Instance ≤ (GPUs)", 1, 64, 64, 8, key="dp_max_gpus", bind="query-params",
        help="The most GPUs one aggregated instance takes: tensor parallel inside the scale-up domain, past it pipeline "
        "stages or (MoE) attention data parallel with the experts spread over the GPUs, up to 64.",
    )  # fmt: skip
    max_pool = c[3].number_input(
        "Pool instance ≤ (GPUs)", 1, 64, 16, 8, key="dp_max_pool", bind="query-params",
        help="The most GPUs one prefill or decode instance of a disaggregated plan takes.",
    )  # fmt: skip
    own_fields = Ownership.model_fields
    kwh = c[4].number_input(
        "Energy ($/kWh)", 0.0, 5.0, float(own_fields["usd_per_kwh"].default), 0.01, key="dp_kwh", bind="query-params",
        help=f"For energy's share of the cost. Default {DEFAULT_SOURCES['usd_per_kwh']}",
    )  # fmt: skip
    pue = c[5].number_input(
        "PUE", 1.0, 5.0, float(own_fields["pue"].default), 0.05, key="dp_pue", bind="query-params",
        help=f"Facility power over IT power, for energy's share. Default {DEFAULT_SOURCES['pue']}",
    )  # fmt: skip
    upload = box.file_uploader(
        "Request trace (optional: CSV, JSONL or JSON)",
        type=["csv", "jsonl", "json"],
        key="dp_trace",
        help="Arrival times and lengths of real requests (columns arrival_s or timestamp, prompt_tokens or input_length, "
        "output_tokens or output_length; Azure, Mooncake and BurstGPT names are read too). The plans are sized for its mean "
        "rate and lengths and simulated on its requests instead of a Poisson stream. Not kept in the link.",
    )
    trace: bytes | None = None
    if upload is not None:
        try:
            requests = ld.read_trace(upload.getvalue(), upload.name)
            span = float(requests.arrival_s[-1] - requests.arrival_s[0])
            if len(requests) < 2 or span <= 0:
                raise ValueError(f"{upload.name}: its {len(requests):,} request(s) arrive at one instant: no rate to plan for")
        except ValueError as exc:
            box.error(f"Trace not used: {escape_markdown(str(exc))}", icon=":material/error:")
        else:
            trace = upload.getvalue()
            workload = workload.model_copy(
                update={
                    "rate_per_s": len(requests) / span,
                    "prompt": max(1, round(float(requests.prompt_tokens.mean()))),
                    "output": max(1, round(float(requests.output_tokens.mean()))),
                }
            )
            box.caption(
                f"From {escape_markdown(upload.name)}: {len(requests):,} requests over {span:,.1f} s, {workload.rate_per_s:,.2f} requests/s, "
                f"mean prompt {workload.prompt:,} and output {workload.output:,} tokens (the rate and lengths above are not used)."
            )
    if not picked:
        st.info("No accelerator selected: pick one or more above.", icon=":material/search_off:")
        return
    if not modes:
        st.info("No serving mode selected: pick aggregated, disaggregated or both.", icon=":material/search_off:")
        return
    prices = typed_prices("rent", set(names))
    own = Ownership(usd_per_kwh=kwh, pue=pue)
    model = cat.model(sc.model).name
    goal = f"{workload.rate_per_s:g} requests/s of {workload.prompt:,} + {workload.output:,} tokens, p90 TTFT ≤ {workload.max_ttft_p90_s:g} s, p90 TPOT ≤ {workload.max_tpot_p90_s * 1e3:g} ms"
    title = f"{model} ({sc.weights}, {sc.framework}): {goal}"
    chosen = None if prefill_gpu == SAME else str(prefill_gpu)
    fig = figures(
        cat,
        sc,
        workload,
        tuple(picked),
        tuple(modes),
        chosen,
        int(max_gpus),
        int(max_pool),
        prices,
        own,
        title,
        trace,
        upload.name if upload else "",
    )
    target = lead if presenting() else st
    if fig.headline:
        target.success(escape_markdown(fig.headline), icon=":material/check_circle:")
    else:
        target.warning(
            "No plan meets both p90 targets on the accelerators picked: relax a target, lower the rate, allow larger "
            "instances or pick other accelerators. The closest plans are listed below.",
            icon=":material/warning:",
        )
    if fig.unplanned:
        st.caption(
            "No layout holds the model with room for a batch, or none meets the targets alone, on: "
            + escape_markdown(", ".join(names.get(g, g) for g in fig.unplanned))
            + "."
        )
    if fig.chart is not None:
        show_chart(fig.chart, lead if presenting() else None, width="stretch" if presenting() else "content")
        chart_exports(fig.chart, "deployments-frontier", line=title)
        st.caption(
            "Each line sizes one accelerator and serving mode at TPOT targets from 15 to 200 ms in closed form (solid: "
            "aggregated; dashed: disaggregated); the ringed points are the plans at your target, checked by a simulation of "
            f"4,000 requests. Step times: {escape_markdown(fig.basis)}; the ceiling is the bound (the plans' own table on the "
            "'One scale-up group' view)."
        )
    data_table(fig.table, "deployment plans", key="dp_table")
    st.caption(escape_markdown(ENERGY_BASIS))
    if fig.published.height:
        mine = fig.published.filter(pl.col("Accelerator").is_in([names[g] for g in picked])).height
        st.markdown(
            f"**Published deployments of {escape_markdown(model)}** ({fig.published.height:,}; {mine:,} on the accelerators picked)"
        )
        st.caption(
            "Each published figure set against the layout its source prints, on one instance of its pool (roofline "
            "deployments --json; how a row is read: core/plan/published.py). Share of ceiling above 100% is a finding, "
            "with its cause; where no batch is printed the ceiling is the bound at the largest batch the layout holds."
        )
        data_table(
            fig.published,
            "published deployments",
            key="dp_published",
            download=False,
            column_config={
                "Source": st.column_config.LinkColumn("Source", display_text="source ↗", help="The page or file the figure is printed in."),
                "Share of ceiling": st.column_config.ProgressColumn(
                    format="percent", min_value=0.0, max_value=1.0, help="Of its layout's ceiling; above 100%: a finding."
                ),
            },
        )
    report_of_page(
        "Compare accelerators: deployments",
        sc,
        [
            Section(
                "Deployments",
                text=plain(fig.headline or "No plan meets both targets.") + " " + ENERGY_BASIS,
                table=fig.table,
                charts=(fig.chart,) if fig.chart else (),
                line=title,
            ),
            *(
                [
                    Section(
                        "Published deployments",
                        text=f"The published deployments of {model}, each against its layout's ceiling.",
                        table=fig.published,
                    )
                ]
                if fig.published.height
                else []
            ),
        ],
        subject=title,
        gpus=picked,
    )
