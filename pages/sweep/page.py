"""Sweep explorer: evaluate the catalogue over chosen axes, then ask which scenarios meet a limit."""

from __future__ import annotations

import streamlit as st

from core.model.sweep import filter_results, scenario_grid, sweep_chunks
from core.present.exports import sweep_line
from core.present.figures import sweep_frontier
from core.present.readings import prices_used, sweep_answer
from core.present.report import Section
from core.present.tables import parquet_bytes, sweep_display
from core.present.text import escape_markdown, plain, plural
from pages.shared.data import catalogue
from pages.shared.params import labels, presenting
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, keep_options, parquet_download, show_chart, table_download

st.title("Sweep explorer")
lead = st.container()  # presentation mode: how many scenarios meet the limits and their frontier lead, the controls fold below
if not presenting():
    st.caption(
        "Every combination of the axes below is evaluated (decode ceilings, TTFT, memory fit); then filter the result by what it delivers."
    )
box = st.expander("Controls: the sweep's axes and filters", expanded=False) if presenting() else st.container()
cat = catalogue()
gpus, models = labels(cat, "accelerator"), labels(cat, "model")
DEFAULT_GPUS = ["a100-80gb-sxm", "h100-sxm", "h200-sxm", "b200", "mi300x", "mi325x", "gaudi3", "l40s"]

c1, c2 = box.columns(2)
pick_gpus = c1.multiselect(
    "Accelerators",
    list(gpus),
    DEFAULT_GPUS,
    format_func=gpus.__getitem__,
    key="sw_gpus",
    bind="query-params",
    help="Accelerators to sweep.",
)
pick_models = c2.multiselect(
    "Models",
    list(models),
    ["llama-3.1-70b"],
    format_func=models.__getitem__,
    key="sw_models",
    bind="query-params",
    help="Models to sweep (shapes from their config.json).",
)
c1, c2, c3, c4 = box.columns(4)
weights = c1.multiselect(
    "Weights",
    ["bf16", "fp8", "int8", "int4", "fp4"],
    ["fp8"],
    key="sw_weights",
    bind="query-params",
    help="Weight formats; compute runs at each format's default (fp8 in fp8, int4 in bf16).",
)
batches = c2.multiselect(
    "Batches (sequences)",
    [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    [1, 16, 64, 256],
    key="sw_batches",
    bind="query-params",
    help="Decode batch sizes.",
)
contexts = c3.multiselect(
    "Contexts (tokens)",
    [1024, 4096, 8192, 16384, 32768, 131072],
    [4096],
    key="sw_contexts",
    bind="query-params",
    help="Tokens in each sequence's KV cache.",
)
counts = c4.multiselect("GPU counts", [1, 2, 4, 8, 16], [1, 2, 4, 8], key="sw_counts", bind="query-params", help="Tensor-parallel degrees.")
missing = [
    name
    for name, chosen in (
        ("accelerator", pick_gpus),
        ("model", pick_models),
        ("weight format", weights),
        ("batch", batches),
        ("context", contexts),
        ("GPU count", counts),
    )
    if not chosen
]
if missing:
    st.info(f"No {', no '.join(missing)} selected: the sweep needs at least one value on every axis.", icon=":material/search_off:")
    st.stop()

grid = scenario_grid(pick_gpus, pick_models, weights=weights, batches=batches, contexts=contexts, num_gpus=counts)
bar = st.progress(0.0, text=f"Evaluating {plural(grid.height, 'scenario')}…")
for done, partial in sweep_chunks(cat, grid):
    result = partial
    bar.progress(done, text=f"Evaluated {done:.0%} of {plural(grid.height, 'scenario')}")
bar.empty()

box.subheader("Filter by result")
f0, f1, f2, f3, f4 = box.columns(5)
at_options = ["any", *sorted(batches)]
keep_options("sw_at_batch", at_options)
at_batch = f0.selectbox(
    "At batch",
    at_options,
    index=1 + sorted(batches).index(64) if 64 in batches else 0,
    key="sw_at_batch",
    bind="query-params",
    help="Keep one decode batch of the sweep, or any.",
)
tpot = f1.number_input(
    "Time per output token ≤ (ms)",
    0.0,
    10_000.0,
    20.0,
    1.0,
    key="sw_tpot",
    bind="query-params",
    help="Latency between output tokens per user, in ms; 0 = no limit.",
)
ttft = f2.number_input(
    "Time to first token ≤ (s)",
    0.0,
    600.0,
    0.0,
    0.1,
    key="sw_ttft",
    bind="query-params",
    help="Prefill of one prompt, in seconds; 0 = no limit.",
)
total = f3.number_input(
    "Tokens/s total ≥",
    0.0,
    1e9,
    0.0,
    100.0,
    key="sw_total",
    bind="query-params",
    help="Output tokens per second over the batch; 0 = no limit.",
)
bound = f4.selectbox(
    "Decode is",
    ["any", "memory", "compute", "communication"],
    key="sw_bound",
    bind="query-params",
    help="Which wall the decode step is pressed against.",
)
fits_only = box.toggle(
    "Only scenarios that fit in memory",
    True,
    key="sw_fits",
    bind="query-params",
    help="Weights + KV cache within the GPUs' memory less a 10% reserve.",
)
within = box.toggle(
    "Only tensor parallel within one scale-up domain",
    True,
    key="sw_domain",
    bind="query-params",
    help="Drop GPU counts no standard platform ganges in tensor parallel (more than 8 HGX H100s, more than one Apple or Jetson part); "
    "beyond one domain a deployment uses replicas.",
)
matched = filter_results(
    result,
    max_tpot_s=tpot / 1e3 if tpot > 0 else None,
    max_ttft_s=ttft if ttft > 0 else None,
    min_tokens_per_s_total=total if total > 0 else None,
    bound=None if bound == "any" else bound,
    fits_only=fits_only,
    batch=None if at_batch == "any" else int(at_batch),
    within_domain=within,
)
message = sweep_answer(result, matched)
swept = sweep_line(
    [gpus[g] for g in pick_gpus], [models[m] for m in pick_models], weights=weights, batches=batches, contexts=contexts, counts=counts
)
if presenting():
    lead.metric(
        "Scenarios that meet the limits", f"{matched.height:,} of {result.height:,}", help="Rows of the sweep that pass every filter."
    )
(st.info if matched.height else st.warning)(message, icon=":material/checklist:")
chart = None
if matched.height:
    heading = f"{plural(matched.height, 'scenario')} that {'meets' if matched.height == 1 else 'meet'} the limits: output tokens/s per GPU against tokens/s per user"
    chart = sweep_frontier(matched, max_tpot_s=tpot / 1e3 if tpot > 0 else None, title=heading, height=350 if presenting() else 420)
    if chart is not None:
        show_chart(chart, lead if presenting() else None, width="stretch" if presenting() else "content")
        chart_exports(chart, "sweep-frontier", line=swept)
        st.caption(
            "One curve per accelerator × GPUs × model × weights × context over its batches (choose 'any' batch to see whole curves); "
            "up and to the right is better."
        )
shown = sweep_display(matched.sort("num_gpus", "time_per_output_token_s", nulls_last=True), models)
if matched.height:
    data_table(shown, "sweep", key="sw_table", download=False)
d1, d2, _ = st.columns([1, 1, 6])
with d1:
    table_download(shown if matched.height else sweep_display(result, models), "sweep", key="sw_csv")
with d2:
    parquet_download(parquet_bytes(matched if matched.height else result), "sweep", key="sw_parquet")
st.caption(
    "$ per million output tokens uses each accelerator's median published on-demand price (the Compare page lists every price "
    f"with its source). {escape_markdown(prices_used(cat, pick_gpus))} "
    f"Downloads hold the rows shown ({matched.height:,}); when none match, the whole sweep ({plural(result.height, 'row')}). Parquet keeps SI units (s, bytes)."
)
filters = (
    f"at batch {at_batch}; time per output token ≤ {tpot:g} ms; time to first token ≤ {ttft:g} s; tokens/s total ≥ {total:,.0f} "
    f"(0: no limit); decode {bound}-bound; {'only' if fits_only else 'also'} scenarios that do not fit"
    f"{'; tensor parallel within one scale-up domain' if within else ''}"
)
report_of_page(
    "Sweep explorer",
    None,
    [
        Section(
            "The sweep",
            text=f"{swept}. Filters: {filters}. {plain(message)}",
            figures=(("Scenarios that meet the limits", f"{matched.height:,} of {result.height:,}"),),
            table=shown if matched.height else None,
            charts=(chart,) if chart is not None else (),
            line=swept,
        )
    ],
    subject=f"Sweep: {swept}",
    gpus=pick_gpus,
)
