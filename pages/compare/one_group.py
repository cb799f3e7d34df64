"""Compare accelerators for one workload inside one scale-up domain: the cheapest configuration under a service target, its cost rented or owned, the frontier.

The controls are core.plan.compare_request.CompareRequest's fields, drawn
from their declaration; the figures are core.present.figures.compare_view's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.model.scenario import Scenario
from core.plan.compare_request import CompareRequest
from core.plan.purchase import SORT_LABELS
from core.present.figures import CompareView, compare_view
from core.present.report import Section
from core.present.text import escape_markdown, plain
from pages.compare.controls import controls
from pages.compare.prices import keep_prices, price_editor
from pages.shared.data import HASH_FUNCS
from pages.shared.params import presenting
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, evidence_panel, show_chart

#: The frontier's plot width in presentation mode at 1280 px (the page's width less the y axis), px.
PRESENT_FRONTIER_WIDTH = 1020


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=128, show_spinner=False)
def figures(
    cat: Catalogue,
    picked: tuple[str, ...],
    sc: Scenario,
    request: CompareRequest,
    rent: Mapping[str, float],
    buy: Mapping[str, float],
    frontier_size: tuple[int, int] | None,
) -> CompareView:
    return compare_view(cat, picked, sc, request, prices=rent, buy_prices=buy, frontier_size=frontier_size)


def one_group_view(cat: Catalogue, sc: Scenario, names: Mapping[str, str], box: Any, lead: Any, picked: list[str]) -> None:
    """The comparison inside one scale-up domain (tensor parallel): its controls in `box`, its headline in `lead`."""
    request = controls(box, sc)
    if not picked:
        st.info("No accelerator selected: pick one or more above.", icon=":material/search_off:")
        return
    request, typed = price_editor(cat, picked, request, names)
    keep_prices(typed)
    st.caption(
        f"Searched on what {escape_markdown(sc.framework)} (sidebar: Framework) is expected to reach: the predicted model's TPOT and "
        "TTFT against the target, its held-out error in the table, the ceiling beside it as the bound."
        if request.basis == "predicted"
        else "Searched on the ceiling: the roofline bound, before any engine's overheads (Figures: Expected for what an engine reaches)."
    )
    # presentation mode: the frontier's plot as a 1280 px screen draws it stretched, its height what the headline above and
    # the legend's rows under it (two names a row) leave on 1280 x 800; its labels are placed for that size
    low = (PRESENT_FRONTIER_WIDTH, 290 - 22 * -(-len(picked) // 2)) if presenting() else None
    fig = figures(cat, tuple(picked), sc, request, typed["rent"], typed["buy"], low)
    st.subheader(escape_markdown(fig.heading))
    if fig.best is None:
        st.warning(
            "Nothing qualifies on any selected accelerator (within one scale-up domain). Loosen the limits or pick other accelerators.",
            icon=":material/block:",
        )
    else:
        head = lead if presenting() else st.container()
        head.markdown(f"##### Best by {SORT_LABELS[request.sort_by]}: {escape_markdown(fig.best['gpu_name'])}")
        for column, (label, value, text) in zip(head.columns(4), fig.headline, strict=True):
            column.metric(label, value, help=text)
        if fig.reading:
            st.info(fig.reading, icon=":material/lightbulb:")
        if fig.best["price_old"]:
            st.caption(
                f"⚠ The price used for {escape_markdown(fig.best['gpu_name'])} is older than 12 months or undated: "
                f"{escape_markdown(fig.best['price_basis'])}."
            )
    _frontier(fig, sc, request, lead)
    if presenting():
        lead.caption(escape_markdown(fig.subject))
    data_table(fig.shown, "accelerator comparison", key="cmp_table")
    evidence_panel(cat, picked, sc.model, key="cmp_evidence")
    if fig.chart is not None:
        show_chart(fig.chart)
        chart_exports(fig.chart, "accelerator-comparison", line=fig.subject)
    said = f"{fig.subject}. Paid by {request.pay}" + (f"; {plain(fig.reading)}" if fig.reading else "") + "."
    charts = tuple(c for c in (fig.frontier, fig.frontier_cost, fig.chart) if c is not None)
    section = Section("The comparison", text=said, table=fig.shown, charts=charts, line=fig.subject)
    report_of_page("Compare accelerators", sc, [section], subject=fig.subject, gpus=picked)


def _frontier(fig: CompareView, sc: Scenario, request: CompareRequest, lead: Any) -> None:
    """The two frontier tabs (throughput and cost against interactivity) and what their curves are."""
    if fig.frontier is None:
        return
    t1, t2 = (lead if presenting() else st).tabs(["Throughput against interactivity", "Cost against interactivity"])
    wide = "stretch" if presenting() else "content"
    with t1:
        show_chart(fig.frontier, width=wide)
        chart_exports(fig.frontier, "frontier-throughput", line=fig.subject)
    with t2:
        if fig.frontier_cost is not None:
            show_chart(fig.frontier_cost, width=wide)
            chart_exports(fig.frontier_cost, "frontier-cost", line=fig.subject)
        else:
            st.info("No accelerator here has a price: type one under 'Prices used'.", icon=":material/payments:")
    curves = (
        f"what {escape_markdown(sc.framework)} is expected to reach (the predicted model; the table gives each ceiling beside it)"
        if request.basis == "predicted"
        else "the model's ceilings"
    )
    st.caption(
        "Each curve sweeps the decode batch at the GPU count kept; up and to the right is better. Left of the dashed line "
        f"a token takes longer than the target allows. The curves are {curves}; the published measurements of this model "
        "on these accelerators are listed below the table, each against its own scenario's ceiling."
    )
