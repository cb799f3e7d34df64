"""Overview: what the tool answers, the current scenario's headline figures and its small roofline."""

from __future__ import annotations

import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.plan.planning import would_fit
from core.present.figures import RooflineAt, overview_roofline
from core.present.report import Section
from core.present.text import duration, escape_markdown, plain, si
from pages.shared.data import HASH_FUNCS, catalogue, roofline_view_of
from pages.shared.params import presenting, scenario
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, evidence_panel, expected_metrics, show_chart


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=64, show_spinner=False)
def small_roofline(cat: Catalogue, sc: Scenario, big: bool) -> RooflineAt:
    """The scenario's roofline: its accelerator's roof at the compute format used, the operating points at its batch.
    `big` (presentation mode): legends beside the plot, a plot low enough for the two rows of figures above it."""
    return overview_roofline(cat, roofline_view_of(cat, sc), sc, big=big)


st.title("Roofline Explorer")
if not presenting():
    st.markdown(
        "On this accelerator, for this model, at this batch and context: what is the hard ceiling, "
        "which wall am I pressed against, and how far is my real system from it?"
    )
cat = catalogue()
sc = scenario()
r = ceiling(cat, sc)
if not presenting():
    st.subheader(f"{escape_markdown(cat.model(sc.model).name)} on {sc.num_gpus} × {escape_markdown(r.gpu_name)}")
c1, c2, c3, c4 = st.columns(4)
c1.metric(
    "Tokens/s per user",
    si(r.tokens_per_s_per_user) if r.fits else "does not fit",
    help="1 / decode step time: the roofline ceiling, before any software overhead.",
)
c2.metric("Tokens/s total", si(r.tokens_per_s_total) if r.fits else "—", help="Batch / decode step time.")
c3.metric("Time to first token", duration(r.ttft_s), help="Prefill of one prompt on these GPUs.")
c4.metric("Decode is bound by", r.bound, help=f"Whole-step intensity {r.intensity:.1f} FLOP/byte against a ridge of {r.ridge or 0:.0f}.")
expected_metrics(r)
roof = small_roofline(cat, sc, presenting())
chart_box, facts = (st.container(), st.container()) if presenting() else st.columns([3, 2], gap="large")
show_chart(roof.chart, chart_box, width="stretch")
with chart_box:
    chart_exports(roof.chart, "overview-roofline")
    st.caption(roof.reading)
for flag in r.flags:
    facts.warning(flag, icon=":material/flag:")
if (fit := would_fit(cat, sc, r)) is not None:
    facts.info(fit.sentence(), icon=":material/memory:")
with facts:
    evidence_panel(cat, [sc.gpu], sc.model, key="home_evidence")
facts.markdown(
    f"- Ridge point at {r.compute_used}: **{r.ridge or 0:.0f} FLOP/byte** ({si(r.peak_flops, 'FLOP/s')} ÷ {si(r.bandwidth_bytes_per_s, 'B/s')})\n"
    f"- Bandwidth-only ceiling, weights only: **{si(r.bandwidth_ceiling_tokens_per_s)} tokens/s per user**; "
    f"with KV reads: {si(r.bandwidth_ceiling_with_kv_tokens_per_s)} tokens/s per user\n"
    f"- Memory: {si(r.memory_required_bytes, 'B')} needed of {si(r.capacity_bytes, 'B')}; largest batch at this context: "
    f"**{'none' if r.max_batch is None else f'{r.max_batch:,}'}**; fewest GPUs for one sequence at this context: "
    f"**{'none (it fits at no count)' if r.min_gpus is None else f'{r.min_gpus:,}'}**"
)
facts.page_link("pages/roofline/page.py", label="See it on the roofline", icon=":material/show_chart:")
facts.page_link("pages/ridges/page.py", label="Compare ridge points", icon=":material/bar_chart:")
facts.page_link("pages/catalogue/page.py", label="Browse the catalogue", icon=":material/inventory_2:")
report_of_page("Overview", sc, [Section("The scenario on its roofline", text=plain(roof.reading), charts=(roof.chart,))])
