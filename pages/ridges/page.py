"""Ridge points: how much reuse each accelerator demands, by precision."""

from __future__ import annotations

import datetime as dt

import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.present.figures import RidgeView, ridge_view
from core.present.readings import moe_ridge_note
from core.present.report import Section
from core.present.text import escape_markdown, plural
from pages.shared.data import HASH_FUNCS, catalogue
from pages.shared.params import presenting, scenario
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, show_chart

PRECISIONS = ["bf16", "fp8", "fp4", "int8", "fp16"]
#: The year slider's range: the catalogue's years and this year (a custom accelerator's default), at least 2016 to 2026.
FIRST_YEAR, LAST_YEAR = 2016, 2026


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=128, show_spinner=False)
def figures(
    cat: Catalogue,
    precision: str,
    vendors: tuple[str, ...],
    forms: tuple[str, ...],
    years: tuple[int, int],
    batch: int,
    weights: str,
    big: bool,
    highlight: str,
) -> RidgeView:
    return ridge_view(cat, precision, vendors, forms, years, batch, weights, big, highlight)


st.title("Ridge points")
if not presenting():  # presentation mode leads with the figure and the chart
    st.caption(
        "Each dot is an accelerator's ridge point (dense peak ÷ memory bandwidth, FLOP/byte) on a log axis. The dashed line is your "
        "decode matmul's intensity ≈ 2 × batch ÷ bytes per weight: an accelerator whose dot lies left of it is compute-bound at "
        "this batch. Your accelerator (the sidebar's) is ringed, its name in bold."
    )
cat = catalogue()
sc = scenario()
if st.session_state.get("measured") and not cat.profiles.is_empty():
    probed = [cat.gpu(g).name for g in cat.profiles["accelerator_id"] if g in cat.gpu_index]
    st.caption(
        f"Measured roofs on (sidebar): {escape_markdown(', '.join(probed))} use their probe's bandwidth and peaks "
        "(a precision the probe did not measure keeps its datasheet peak); every other accelerator its datasheet's."
    )

big = presenting()
# presentation mode leads with the headline and the chart, the controls folded under them; the slot is drawn in
# both modes, so the elements above the bound controls never change from one run to the next
lead = st.container()
controls = st.expander("Controls: precision, vendor, form factor, year", expanded=False) if big else st.container()
c1, c2, c3, c4 = controls.columns([2, 2, 2, 2])
precision = c1.radio(
    "Precision",
    PRECISIONS,
    horizontal=True,
    key="rd_precision",
    bind="query-params",
    help="Compute precision whose dense peak sets each ridge. Accelerators without it are absent, not zero.",
)
vendors = c2.multiselect(
    "Vendor", sorted(cat.gpus["vendor"].unique()), key="rd_vendor", bind="query-params", help="Show only these vendors."
)
forms = c3.multiselect(
    "Form factor",
    sorted(cat.gpus["form_factor"].drop_nulls().unique()),
    key="rd_form",
    bind="query-params",
    help="SXM, PCIe, OAM, chip ...",
)
known_years = [int(y) for y in cat.gpus["year"].drop_nulls().to_list()]
span = (min([FIRST_YEAR, *known_years]), max([LAST_YEAR, dt.date.today().year, *known_years]))
years = c4.slider(
    "Year",
    *span,
    span,
    key="rd_year",
    bind="query-params",
    help="Year of release or announcement. Accelerators without a year (a custom one may have none) are always kept.",
)
fig = figures(cat, precision, tuple(vendors), tuple(forms), tuple(years), sc.batch, sc.weights, big, sc.gpu)
head = lead if big else st.container()
# the selection as the report's subject names it: the precision, then each filter that leaves something out
chosen = [", ".join(vendors), ", ".join(forms)] + ([f"{years[0]}-{years[1]}"] if tuple(years) != span else [])
subject = f"Ridge points at {precision}" + "".join(f" · {part}" for part in chosen if part)
if fig.table.is_empty() or fig.chart is None or fig.shown is None or fig.groups is None:
    empty = f"No accelerator in this selection supports {precision} natively."
    head.info(empty, icon=":material/search_off:")
    report_of_page("Ridge points", None, [Section(subject, text=empty)], subject=subject)
    st.stop()
n_compute = int((fig.table["bound"] == "compute").sum())
headline = (
    f"Compute-bound at batch {sc.batch} ({sc.weights} weights, {precision} peak)",
    f"{n_compute:,} of {plural(fig.table.height, 'accelerator')}",
)
head.metric(
    *headline,
    help="An accelerator is compute-bound for the decode matmuls once 2 × batch ÷ bytes per weight reaches its ridge.",
)
(st if big else head).markdown(  # presentation mode: under the chart (the metric above says it)
    f"Batch **{sc.batch}**, weights **{sc.weights}** → decode matmul ≈ **{fig.intensity:,.0f} FLOP/byte**. "
    f"Compute-bound on **{n_compute:,}** of {plural(fig.table.height, 'accelerator')}."
)
moe = moe_ridge_note(cat, sc, fig.table)  # a mixture of experts' matmuls are far from the dense rule's line
if moe:
    (st if big else head).warning(escape_markdown(moe), icon=":material/call_split:")
if fig.undated:
    head.caption(
        f"{fig.undated} accelerator{'s' if fig.undated > 1 else ''} without a year {'are' if fig.undated > 1 else 'is'} shown "
        "whatever the year filter."
    )
show_chart(fig.chart, head, width="stretch")
chart_exports(fig.chart, f"ridges-{precision}")
data_table(fig.shown, f"ridges {precision}", key="rd_table")

st.subheader("By precision")
show_chart(fig.groups, width="stretch")
chart_exports(fig.groups, "ridges-by-precision")

report_of_page(
    "Ridge points",
    None,
    [
        Section(
            subject,
            text=f"Batch {sc.batch}, weights {sc.weights}: the decode matmul's intensity is about {fig.intensity:,.0f} FLOP/byte "
            f"(2 × batch ÷ bytes per weight). An accelerator whose ridge (dense {precision} peak ÷ memory bandwidth) lies below it "
            "is compute-bound at this batch." + (f" {moe}" if moe else ""),
            figures=(headline,),
            table=fig.shown,
            charts=(fig.chart, fig.groups),
            line=subject,
        )
    ],
    subject=subject,
    gpus=fig.table["id"].to_list(),
)
