"""Ceiling calculator: what one deployment can deliver, what it waits on, and what each lever would change."""

from __future__ import annotations

import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.evidence.bench_commands import TOOLS, bench_command, lengths_for
from core.model.scenario import Scenario
from core.plan.planning import default_draft_model
from core.present.exports import scenario_line
from core.present.figures import CalculatorView, calculator_view
from core.present.memory import engine_memory
from core.present.report import Section
from core.present.text import duration, escape_markdown, plain, si
from pages.shared.data import HASH_FUNCS, catalogue
from pages.shared.params import labels, presenting, scenario
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, evidence_panel, expected_metrics, keep_options, show_chart
from pages.shared.widgets import derating_inputs, scenario_input


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=128, show_spinner=False)
def figures(cat: Catalogue, sc: Scenario, frontier_height: int) -> CalculatorView:
    return calculator_view(cat, sc, frontier_height=frontier_height)


st.title("Ceiling calculator")
lead = st.container()  # presentation mode: the headline figures and the frontier lead, the options fold below them
if not presenting():
    st.caption("Accelerator, GPUs, model, precisions, batch, context and prompt are in the sidebar; the options below refine the scenario.")
cat = catalogue()
target = scenario().model
with st.expander("Options: speculative decoding, efficiency, memory reserve, price", expanded=not presenting()):
    c1, c2, c3, c4 = st.columns(4)
    scenario_input("spec_draft_len", c1)
    scenario_input("spec_acceptance", c1)
    names = labels(cat, "model")
    suggested = default_draft_model(cat, target)
    drafts = [m for m in ([suggested] if suggested else []) + list(names) if m != target]
    drafts = list(dict.fromkeys(drafts))
    keep_options("spec_draft_model", drafts)
    scenario_input("spec_draft_model", c1, options=drafts, format_func=names.__getitem__)
    derating_inputs({"eff_bandwidth": c2, "eff_compute": c2, "overhead_s": c3})
    scenario_input("reserve_fraction", c3)
    scenario_input("usd_per_gpu_hour", c4)

sc = scenario()
if not sc.spec_draft_len:
    sc = sc.model_copy(update={"spec_draft_model": None})  # no speculative decoding: no draft model to name
fig = figures(cat, sc, 255 if presenting() else 380)  # presentation mode: a frontier low enough for 1280 x 800
r = fig.result
where = lead if presenting() else st  # presentation mode: the subject and the headline figures above the folded options
where.subheader(
    f"{escape_markdown(cat.model(sc.model).name)} on {sc.num_gpus} × {escape_markdown(r.gpu_name)} · batch {sc.batch}, context {sc.context:,}"
)
m = [*where.columns(3), *where.columns(3)]  # two rows of three: six in a row cut their labels at 1280 px
m[0].metric(
    "Tokens/s per user", si(r.tokens_per_s_per_user) if r.fits else "—", help="Output tokens per second each sequence sees (tokens/s)."
)
m[1].metric("Tokens/s total", si(r.tokens_per_s_total) if r.fits else "—", help="Output tokens per second over the whole batch (tokens/s).")
m[2].metric(
    "Time per token",
    duration(r.time_per_output_token_s) if r.fits else "—",
    help="Time per output token: decode cycle time / tokens per cycle.",
)
m[3].metric("Time to first token", duration(r.ttft_s), help="Prefill of one prompt on these GPUs.")
m[4].metric("Bound by", r.bound, help=f"Whole-step intensity {r.intensity:.1f} FLOP/byte against a ridge of {r.ridge or 0:.0f} FLOP/byte.")
m[5].metric("Fits in memory", "yes" if r.fits else "no", help="Weights + KV cache within the GPUs' memory less the reserve.")
expected_metrics(r, where)
used = cat.price(sc.gpu, "rent", override=sc.usd_per_gpu_hour)
if r.usd_per_million_tokens is not None:
    st.markdown(
        f"**${r.usd_per_million_tokens:,.3f} per million output tokens**, ${r.usd_per_million_input_tokens or 0:,.3f} per million input "
        f"tokens at this ceiling · {si(r.tokens_per_s_per_watt)} tokens/s per W"
    )
    st.caption(f"Price: {escape_markdown(used.label)}. Set your own under Options; the Compare page also costs buying.")
elif r.fits:
    st.caption(f"No cost: {escape_markdown(used.label)} (under Options).")
for flag in r.flags:
    st.warning(flag, icon=":material/flag:")
if fig.would_fit:
    st.info(fig.would_fit, icon=":material/memory:")
evidence_panel(cat, [sc.gpu], sc.model, key="calc_evidence")

left, right = st.columns(2)
with left:
    st.markdown("**Where a decode cycle's time goes**")
    show_chart(fig.breakdown, width="stretch")
    chart_exports(fig.breakdown, "step-breakdown")
with right:
    st.markdown("**Memory against capacity**")
    show_chart(fig.memory, width="stretch")
    chart_exports(fig.memory, "memory")
    limit = r.max_batch if r.max_batch is not None else "no limit"
    st.markdown(f"Largest batch at context {sc.context:,}: **{limit}** · fewest GPUs for one sequence at this context: **{r.min_gpus}**")
    st.caption("The ceiling's memory: weights + KV cache within capacity less the reserve. How the engine itself sizes it:")
    mem = engine_memory(cat, sc)
    if mem.allocation is None:
        st.info(mem.reason, icon=":material/memory:")
    else:
        st.markdown(mem.headline)
        for why in mem.allocation.approximate:
            st.caption(f"Approximate: {escape_markdown(why)}.")
        with st.expander(f"Start-up memory per GPU, term by term ({mem.allocation.settings.engine} {mem.allocation.settings.version})"):
            data_table(mem.terms, "engine-memory", key="calc_engine_memory")
            st.caption(
                "Each term as the engine computes it at start-up, from its source at that release; the constants it cannot "
                "measure are chosen once and checked against 18 published start-up logs (10 within 10% of the printed KV tokens)."
            )

st.subheader("Throughput against latency")
if fig.frontier is None:
    st.info(
        "Nothing fits at any batch from 1 to 1,024: add GPUs, quantise the weights or the KV cache, or shorten the context.",
        icon=":material/memory:",
    )
else:
    show_chart(fig.frontier, lead if presenting() else None, width="stretch")
    chart_exports(fig.frontier, "frontier")
if presenting():
    lead.caption(escape_markdown(scenario_line(cat, sc)))
st.caption(fig.frontier_reading)

st.subheader("What if: the three moves")
st.caption(
    "Seed 004's three moves, one lever at a time: lift the diagonal (more memory bandwidth), slide right (fewer bytes or more "
    "math per byte), raise the ceiling (more FLOP/s). × columns are the lever's figure over the current one; the guided tour's "
    "step 7 shows this table."
)
data_table(fig.what_ifs, "what-ifs", key="calc_whatif")

st.subheader("Measure it", help="The exact benchmark command for this scenario; its result imports back with no questions.")
lens = lengths_for(sc.prompt, sc.context)
st.caption(
    f"Concurrency {sc.batch} (the batch), {lens.input_tokens:,} input and {lens.output_tokens:,} output tokens per request: {lens.note}. "
    "The result file carries the accelerator, GPU count, model and formats: import it on Measured vs predicted or with the command shown."
)
tabs = st.tabs([TOOLS[t]["title"].split(":")[0] for t in TOOLS])
for tab, tool in zip(tabs, TOOLS, strict=True):
    cmd = bench_command(tool, cat, sc, input_tokens=lens.input_tokens, output_tokens=lens.output_tokens)
    tab.code(cmd.command, language="bash")
    tab.code(cmd.import_command, language="bash")
    for note in cmd.notes:
        tab.caption(escape_markdown(note))
    tab.caption(f"Options from {escape_markdown(cmd.source)} · [source]({cmd.url})")

cost = (
    (
        ("$ per million output tokens", f"${r.usd_per_million_tokens:,.3f}"),
        ("$ per million input tokens", f"${r.usd_per_million_input_tokens or 0:,.3f}"),
        ("Tokens/s per W", si(r.tokens_per_s_per_watt)),
    )
    if r.usd_per_million_tokens is not None
    else ()
)
report_of_page(
    "Ceiling calculator",
    sc,
    [
        Section("Cost at this ceiling", text=f"Price: {used.label}.", figures=cost),
        Section(
            "Where a decode cycle's time goes, and memory against capacity",
            text=plain(mem.headline),
            figures=(("Largest batch at this context", str(limit)), ("Fewest GPUs for this model", str(r.min_gpus))),
            charts=(fig.breakdown, fig.memory),
            table=mem.terms if mem.allocation is not None else None,
        ),
        Section("Throughput against latency", text=plain(fig.frontier_reading), charts=(fig.frontier,) if fig.frontier else ()),
        Section("What if: the three moves", table=fig.what_ifs),
    ],
)
