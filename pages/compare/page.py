"""Compare accelerators for one workload: GPUs needed, best batch, tokens/s, $ per million tokens."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.model.scenario import Scenario
from core.plan.purchase import SORT_KEYS, SORT_LABELS, price_table
from core.present.figures import CompareView, compare_view
from core.present.text import escape_markdown
from pages.shared.data import HASH_FUNCS, catalogue
from pages.shared.params import labels, scenario
from pages.shared.ui import chart_exports, number_columns, show_chart, table_download

MODES = ["fixed batch", "service target"]


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=128, show_spinner=False)
def figures(
    cat: Catalogue,
    picked: tuple[str, ...],
    sc: Scenario,
    max_tpot_s: float | None,
    max_ttft_s: float | None,
    prices: Mapping[str, float],
    sort_by: str,
    title: str,
) -> CompareView:
    return compare_view(cat, picked, sc, max_tpot_s=max_tpot_s, max_ttft_s=max_ttft_s, prices=prices, sort_by=sort_by, title=title)


st.title("Compare accelerators")
st.caption(
    "The workload (model, weights, compute, KV cache, context, prompt, batch) is the sidebar's scenario; its accelerator and GPU count are ignored here."
)
cat = catalogue()
sc = scenario()
names = labels(cat, "accelerator")

picked = st.multiselect(
    "Accelerators",
    list(names),
    default=["a100-80gb-sxm", "l40s"],
    format_func=names.__getitem__,
    key="cmp_gpus",
    bind="query-params",
    help="Any number of accelerators; each gets the fewest GPUs (1, 2, 4 ... 64, tensor parallel) that hold the workload.",
)
c1, c2, c3, c4 = st.columns([2, 1, 1, 2])
mode = c1.radio(
    "Workload",
    MODES,
    horizontal=True,
    key="cmp_mode",
    bind="query-params",
    help="Fixed batch: the sidebar's batch. Service target: the batch (1 to 1,024) with the most tokens/s that meets both limits.",
)
targeted = mode == "service target"
tpot_ms = c2.number_input(
    "Time per output token ≤ (ms)",
    1.0,
    10_000.0,
    50.0,
    1.0,
    key="cmp_tpot",
    bind="query-params",
    disabled=not targeted,
    help="Latency each user sees between tokens, in ms.",
)
ttft_s = c3.number_input(
    "Time to first token ≤ (s)",
    0.01,
    600.0,
    2.0,
    0.1,
    key="cmp_ttft",
    bind="query-params",
    disabled=not targeted,
    help="Prefill time of one prompt, in seconds.",
)
sort_by = c4.selectbox(
    "Sort by",
    list(SORT_KEYS),
    key="cmp_sort",
    bind="query-params",
    format_func=SORT_LABELS.__getitem__,  # the labels the link carries (params.LINKS says so too)
    help="Best first; unmet accelerators last.",
)
if not picked:
    st.info("No accelerator selected: pick one or more above.", icon=":material/search_off:")
    st.stop()

st.markdown("**$ per GPU-hour** (no reviewed prices ship with the catalogue: enter yours; 0 leaves $ per million tokens empty)")
known = st.session_state.setdefault("cmp_price_of", {})
edited = st.data_editor(
    price_table(cat, picked, known),
    key="cmp_prices_" + "-".join(picked),  # a new selection starts from the prices entered so far
    hide_index=True,
    column_order=["accelerator", "usd_per_gpu_hour", "source"],
    disabled=["gpu", "accelerator", "source"],
    column_config={
        "usd_per_gpu_hour": st.column_config.NumberColumn(
            "$ per GPU-hour", min_value=0.0, max_value=1000.0, format="%.2f", help="US$ per GPU per hour."
        )
    },
)
edited = edited if isinstance(edited, pl.DataFrame) else pl.from_pandas(edited)
price_of = {**known, **dict(zip(edited["gpu"], edited["usd_per_gpu_hour"].fill_null(0.0), strict=True))}
st.session_state["cmp_price_of"] = price_of
goal = f"time per output token ≤ {tpot_ms:g} ms and time to first token ≤ {ttft_s:g} s" if targeted else f"batch {sc.batch}"
fig = figures(
    cat,
    tuple(picked),
    sc,
    tpot_ms / 1e3 if targeted else None,
    ttft_s if targeted else None,
    price_of,
    sort_by,
    f"{cat.model(sc.model).name}, {goal}",
)
st.subheader(
    f"{escape_markdown(cat.model(sc.model).name)} · weights {sc.weights}, KV {sc.kv} · context {sc.context:,}, prompt {sc.prompt:,} · {goal}"
)
if fig.met == 0:
    st.warning(
        "Nothing meets this target on any selected accelerator (up to 64 GPUs). Loosen the limits or pick other accelerators.",
        icon=":material/block:",
    )
elif fig.reading:
    st.info(fig.reading, icon=":material/lightbulb:")
st.dataframe(fig.shown, hide_index=True, key="cmp_table", column_config=number_columns(fig.shown))
table_download(fig.shown, "accelerator comparison")
if fig.chart is not None:
    show_chart(fig.chart)
    chart_exports(fig.chart, "accelerator-comparison")
