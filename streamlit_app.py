"""Roofline Explorer: page config, navigation in sections, the shared scenario sidebar."""

from __future__ import annotations

import streamlit as st

from pages.shared.data import catalogue
from pages.shared.params import hold_sidebar, note_refused_values, open_link, restore_sidebar
from pages.shared.sidebar import scenario_sidebar, share_panel

st.set_page_config(page_title="Roofline Explorer", page_icon=":material/roofing:", layout="wide")

PAGES = {
    "Explore": [
        st.Page("pages/home/page.py", title="Overview", icon=":material/home:", url_path="overview", default=True),
        st.Page("pages/roofline/page.py", title="Roofline", icon=":material/show_chart:", url_path="roofline"),
        st.Page("pages/ridges/page.py", title="Ridge points", icon=":material/bar_chart:", url_path="ridges"),
        st.Page("pages/tour/page.py", title="Guided tour", icon=":material/school:", url_path="tour"),
    ],
    "Plan": [
        st.Page("pages/calculator/page.py", title="Ceiling calculator", icon=":material/calculate:", url_path="calculator"),
        st.Page("pages/compare/page.py", title="Compare accelerators", icon=":material/compare_arrows:", url_path="compare"),
        st.Page("pages/sweep/page.py", title="Sweep explorer", icon=":material/table_chart:", url_path="sweep"),
    ],
    "Data": [
        st.Page("pages/catalogue/page.py", title="Catalogue", icon=":material/inventory_2:", url_path="catalogue"),
        st.Page("pages/measured/page.py", title="Measured vs predicted", icon=":material/fact_check:", url_path="measured"),
    ],
}

page = st.navigation(PAGES)
st.session_state["_page"] = page.url_path or "overview"
cat = catalogue()
open_link(cat, page)
restore_sidebar(cat)
notes = scenario_sidebar(cat)
hold_sidebar()
page.run()
for message in note_refused_values(cat):
    notes.warning(message, icon=":material/link_off:")
share_panel(cat)
