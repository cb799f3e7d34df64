"""Catalogue: searchable accelerators and models with units and sources; custom entries."""

from __future__ import annotations

import polars as pl
import streamlit as st

from core.catalogue.catalogue import filter_table
from core.present.report import Section
from core.present.tables import accelerator_table, model_table, profiles_display
from core.present.text import escape_markdown, plural
from pages.catalogue.forms import custom_accelerator_form, custom_model_form, delete_custom_form, probe_form
from pages.shared.data import catalogue, store
from pages.shared.params import presenting
from pages.shared.sidebar import report_of_page
from pages.shared.ui import data_table

st.title("Catalogue")
cat = catalogue(datasheet=True)
if presenting():  # the headline figures lead; the filters fold away
    k1, k2, k3 = st.columns(3)
    k1.metric("Accelerators", f"{cat.gpus.height:,}", help="In the catalogue: the shipped datasheets and your custom ones.")
    k2.metric("Models", f"{cat.models.height:,}", help="Each from its own config.json.")
    k3.metric("Vendors", f"{cat.gpus['vendor'].n_unique():,}", help="Of the accelerators.")
else:
    st.caption("Every accelerator figure is the vendor's dense peak in decimal units, with its source; every model is its own config.json.")
for line in cat.unreadable:  # stored by an older version before these were bounded: left out, not deleted
    if line.startswith("measured profile"):
        st.warning(f"Left out: {escape_markdown(line)}.", icon=":material/warning:")
    else:
        st.warning(f"Custom model left out: {escape_markdown(line)}. Delete it and add its config.json again.", icon=":material/warning:")

tab_gpus, tab_models, tab_custom, tab_probe = st.tabs(
    [
        "Accelerators",  # plain names: the link carries the tab's name (cat_tab=Models)
        "Models",
        "Add your own",
        "Measured roofs",
    ],
    key="cat_tab",
    bind="query-params",  # the link opens the tab shown
    on_change="rerun",
)

with tab_gpus:
    gpus = cat.gpus
    c1, c2, c3 = (st.expander("Filters: search, vendor, form factor", expanded=False) if presenting() else st).columns([2, 2, 2])
    text = c1.text_input(
        "Search accelerators", placeholder="e.g. h100, MI300", key="cat_gpu_search", bind="query-params", help="Matches id or name."
    )
    vendors = c2.multiselect(
        "Vendor", sorted(gpus["vendor"].unique()), key="cat_gpu_vendor", bind="query-params", help="Show only these vendors."
    )
    forms = c3.multiselect(
        "Form factor",
        sorted(gpus["form_factor"].drop_nulls().unique()),
        key="cat_gpu_form",
        bind="query-params",
        help="SXM, PCIe, OAM, chip ...",
    )
    picked = filter_table(gpus, text, vendor=vendors, form_factor=forms)
    shown = accelerator_table(picked)
    if shown.is_empty():
        st.info("No accelerator matches these filters.", icon=":material/search_off:")
    else:
        data_table(
            shown,
            "accelerators",
            key="gpu_table",
            column_config={
                "source": st.column_config.LinkColumn("source", help="Datasheet or vendor page for the figures"),
                "bf16 ridge (FLOP/B)": st.column_config.NumberColumn(format="%,.0f"),
            },
        )
        st.caption(
            f"{shown.height:,} of {plural(gpus.height, 'accelerator')}. A dash: the precision is not supported natively (never zero)."
        )
    # the report's part when this tab is shown: what it lists, under the search and filters that chose it
    gpu_filters = [f"search '{text}'" if text else "", ", ".join(vendors), ", ".join(forms)]
    gpu_part = Section(
        "Accelerators" + "".join(f" · {f}" for f in gpu_filters if f),
        text=f"{shown.height:,} of {plural(gpus.height, 'accelerator')}; every figure the vendor's dense peak in decimal units.",
        figures=(("Accelerators listed", f"{shown.height:,} of {gpus.height:,}"),),
        table=shown if shown.height else None,
    )

with tab_models:
    models = model_table(cat.models)
    c1, c2 = (st.expander("Filters: search, attention", expanded=False) if presenting() else st).columns([2, 2])
    text = c1.text_input(
        "Search models", placeholder="e.g. llama, qwen3", key="cat_model_search", bind="query-params", help="Matches id or name."
    )
    kinds = c2.multiselect(
        "Attention", sorted(models["attention"].unique()), key="cat_model_attn", bind="query-params", help="MHA, GQA, MQA or MLA."
    )
    shown = filter_table(models, text, attention=kinds)
    if shown.is_empty():
        st.info("No model matches these filters.", icon=":material/search_off:")
    else:
        data_table(
            shown,
            "models",
            key="model_table",
            column_config={"params source": st.column_config.LinkColumn("params source")},
        )
        st.caption(
            f"{shown.height:,} of {plural(models.height, 'model')}. Parameters are computed from each config.json and checked against the published count."
        )
    model_filters = [f"search '{text}'" if text else "", ", ".join(kinds)]
    model_part = Section(
        "Models" + "".join(f" · {f}" for f in model_filters if f),
        text=f"{shown.height:,} of {plural(models.height, 'model')}, each from its config.json.",
        figures=(("Models listed", f"{shown.height:,} of {models.height:,}"),),
        table=shown if shown.height else None,
    )

with tab_custom:
    if store().read_only:
        st.info(
            "Read-only demo (ROOFLINE_READ_ONLY=1): custom accelerators and models cannot be added or deleted here; the catalogue is "
            "the shared store's. (Benchmark files imported on Measured vs predicted are kept for your session.)",
            icon=":material/lock:",
        )
    left, right = st.columns(2)
    with left:
        custom_accelerator_form()
    with right:
        custom_model_form()
    delete_custom_form()

with tab_probe:
    probe_form()

# the report is of the tab shown: its list, with the filters that chose it
custom = [(a.name, "accelerator", g) for g, a in cat.accelerators.items() if a.custom]
custom += [(r.name, "model", m) for m, r in cat.records.items() if r.custom]
if tab_models.open:
    part, cited = model_part, []
elif tab_custom.open:
    listed = pl.DataFrame(custom, schema=["name", "kind", "id"], orient="row") if custom else None
    part, cited = (
        Section("Your custom entries", text=f"{plural(len(custom), 'custom entry', 'custom entries')} in the store.", table=listed),
        [],
    )
elif tab_probe.open:
    profiles = profiles_display(cat) if not cat.profiles.is_empty() else None
    count = 0 if profiles is None else profiles.height
    part, cited = Section("Measured profiles", text=f"{plural(count, 'measured profile')} in the store.", table=profiles), []
else:
    part, cited = gpu_part, picked["id"].to_list()
report_of_page("Catalogue", None, [part], subject=f"Catalogue: {part.title}", gpus=cited)
