"""Ridge points: how much reuse each accelerator demands, by precision."""

from __future__ import annotations

import streamlit as st

from core.memo import memo
from pages.ridges.figures import ridge_figures
from pages.shared.state import catalogue, linked, page_param, presenting, scenario, split_list
from pages.shared.ui import chart_exports, show_chart, table_download

st.title("Ridge points")
st.caption(
    "Each bar is an accelerator's ridge (dense peak ÷ bandwidth). The dashed line is your decode matmul's intensity ≈ 2 × batch ÷ bytes per weight."
)
cat = catalogue()
sc = scenario()

big = presenting()
controls = st.expander("Controls", expanded=False) if big else st.container()
c1, c2, c3, c4 = controls.columns([2, 2, 2, 2])
linked("rd_precision", "bf16")
linked("rd_vendor", [], split_list)
linked("rd_form", [], split_list)
linked("rd_year", (2016, 2026), lambda t: tuple(int(y) for y in t.split(",")))
precision = c1.radio(
    "Precision",
    ["bf16", "fp8", "fp4", "int8", "fp16"],
    horizontal=True,
    key="rd_precision",
    help="Compute precision whose dense peak sets each ridge. Accelerators without it are absent, not zero.",
)
vendors = c2.multiselect("Vendor", sorted(cat.gpus["vendor"].unique()), key="rd_vendor", help="Show only these vendors.")
forms = c3.multiselect("Form factor", sorted(cat.gpus["form_factor"].drop_nulls().unique()), key="rd_form", help="SXM, PCIe, OAM, chip ...")
years = c4.slider("Year", 2016, 2026, key="rd_year", help="Year of release or announcement.")
for name, value in (("rd_precision", precision), ("rd_vendor", vendors), ("rd_form", forms), ("rd_year", years)):
    page_param(name, value)
figures = memo(ridge_figures, cat, precision, tuple(vendors), tuple(forms), tuple(years), sc.batch, sc.weights, big)
table, intensity = figures["table"], figures["intensity"]
if table.is_empty():
    st.info(f"No accelerator in this selection supports {precision} natively.", icon=":material/search_off:")
    st.stop()
n_compute = int((table["bound"] == "compute").sum())
st.metric(
    f"Compute-bound at batch {sc.batch} ({sc.weights} weights, {precision} peak)",
    f"{n_compute} of {table.height} accelerators",
    help="An accelerator is compute-bound for the decode matmuls once 2 × batch ÷ bytes per weight reaches its ridge.",
)
st.markdown(
    f"Batch **{sc.batch}**, weights **{sc.weights}** → decode matmul ≈ **{intensity:,.0f} FLOP/byte**. "
    f"Compute-bound on **{n_compute}** of {table.height} accelerators."
)
show_chart(figures["chart"])
chart_exports(figures["chart"], f"ridges-{precision}")
shown = figures["shown"]
st.dataframe(shown, hide_index=True, key="rd_table")
table_download(shown, f"ridges {precision}")

st.subheader("By precision")
show_chart(figures["groups"])
chart_exports(figures["groups"], "ridges-by-precision")
