"""Overview: what the tool answers, and the current scenario's headline figures."""

from __future__ import annotations

import streamlit as st

from core.model.ceilings import ceiling
from core.present.text import duration, escape_markdown, si
from pages.shared.data import catalogue
from pages.shared.params import scenario
from pages.shared.ui import evidence_panel

st.title("Roofline Explorer")
st.markdown(
    "On this accelerator, for this model, at this batch and context: what is the hard ceiling, "
    "which wall am I pressed against, and how far is my real system from it?"
)
cat = catalogue()
sc = scenario()
r = ceiling(cat, sc)
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
for flag in r.flags:
    st.warning(flag, icon=":material/flag:")
evidence_panel(cat, [sc.gpu], sc.model, key="home_evidence")
st.markdown(
    f"- Ridge point at {r.compute_used}: **{r.ridge or 0:.0f} FLOP/byte** ({si(r.peak_flops, 'FLOP/s')} ÷ {si(r.bandwidth_bytes_per_s, 'B/s')})\n"
    f"- Bandwidth-only ceiling, weights only: **{si(r.bandwidth_ceiling_tokens_per_s)} tokens/s per user**; "
    f"with KV reads: {si(r.bandwidth_ceiling_with_kv_tokens_per_s)}\n"
    f"- Memory: {si(r.memory_required_bytes, 'B')} needed of {si(r.capacity_bytes, 'B')}; largest batch at this context: "
    f"**{r.max_batch}**; fewest GPUs for this model: **{r.min_gpus}**"
)
st.page_link("pages/roofline/page.py", label="See it on the roofline", icon=":material/show_chart:")
st.page_link("pages/ridges/page.py", label="Compare ridge points", icon=":material/bar_chart:")
st.page_link("pages/catalogue/page.py", label="Browse the catalogue", icon=":material/inventory_2:")
