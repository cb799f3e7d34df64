"""Ceiling calculator: what one deployment can deliver, what it waits on, and what each lever would change."""

from __future__ import annotations

import streamlit as st

from core.memo import memo
from core.units import duration, si
from pages.calculator.figures import calculator_figures
from pages.calculator.options import scenario_options
from pages.shared.state import catalogue, current, scenario
from pages.shared.ui import chart_exports, number_columns, show_chart, table_download

st.title("Ceiling calculator")
st.caption("Accelerator, GPUs, model, precisions, batch, context and prompt are in the sidebar; the options below refine the scenario.")
cat = catalogue()
models = {m: r.name for m, r in cat.records.items()}

sc = scenario(**scenario_options(cat, current()["model"]))
figures = memo(calculator_figures, cat, sc)
r = figures["result"]
gpu_name = r["gpu_name"]
st.subheader(f"{models[sc.model]} on {sc.num_gpus} × {gpu_name} · batch {sc.batch}, context {sc.context:,}")
fits = bool(r["fits"])
m = st.columns(6)
m[0].metric(
    "Tokens/s per user", si(r["tokens_per_s_per_user"]) if fits else "—", help="Output tokens per second each sequence sees (tokens/s)."
)
m[1].metric(
    "Tokens/s total", si(r["tokens_per_s_total"]) if fits else "—", help="Output tokens per second over the whole batch (tokens/s)."
)
m[2].metric(
    "Time per token",
    duration(r["time_per_output_token_s"]) if fits else "—",
    help="Time per output token: decode cycle time / tokens per cycle.",
)
m[3].metric("Time to first token", duration(r["ttft_s"]), help="Prefill of one prompt on these GPUs.")
m[4].metric(
    "Bound by",
    r["bound"],
    help=f"Whole-step intensity {r['intensity']:.1f} FLOP/byte against a ridge of {r['ridge']:.0f} FLOP/byte.",
)
m[5].metric("Fits in memory", "yes" if fits else "no", help="Weights + KV cache within the GPUs' memory less the reserve.")
if r["usd_per_million_tokens"] is not None:
    st.markdown(
        f"**${r['usd_per_million_tokens']:,.3f} per million output tokens** at this ceiling · {si(r['tokens_per_s_per_watt'])} tokens/s per W"
    )
for flag in r["flags"]:
    st.warning(flag, icon=":material/flag:")

left, right = st.columns(2)
with left:
    st.markdown("**Where a decode cycle's time goes**")
    show_chart(figures["breakdown"])
    chart_exports(figures["breakdown"], "step-breakdown")
with right:
    st.markdown("**Memory against capacity**")
    show_chart(figures["memory"])
    chart_exports(figures["memory"], "memory")
    st.markdown(
        f"Largest batch at context {sc.context:,}: **{r['max_batch'] if r['max_batch'] is not None else 'no limit'}** · fewest GPUs for this model: **{r['min_gpus']}**"
    )

st.subheader("Throughput against latency")
if figures["frontier"] is None:
    st.info(
        "Nothing fits at any batch from 1 to 1,024: add GPUs, quantise the weights or the KV cache, or shorten the context.",
        icon=":material/memory:",
    )
else:
    show_chart(figures["frontier"], width="stretch")
    chart_exports(figures["frontier"], "frontier")
st.caption(figures["frontier_reading"])

st.subheader("What if: the three moves")
st.caption("The same scenario with one lever applied at a time; × columns are the lever's figure over the current one.")
table = figures["what_ifs"]
st.dataframe(table, hide_index=True, key="calc_whatif", column_config=number_columns(table))
table_download(table, "what-ifs")
