"""Roofline Explorer: page config, navigation in sections, the shared scenario sidebar."""

from __future__ import annotations

import streamlit as st

from pages.shared.state import scenario_sidebar

st.set_page_config(page_title="Roofline Explorer", page_icon=":material/roofing:", layout="wide")

PAGES = {
    "Explore": [
        st.Page("pages/home/page.py", title="Overview", icon=":material/home:", url_path="overview", default=True),
        st.Page("pages/roofline/page.py", title="Roofline", icon=":material/show_chart:", url_path="roofline"),
        st.Page("pages/ridges/page.py", title="Ridge points", icon=":material/bar_chart:", url_path="ridges"),
    ],
    "Data": [
        st.Page("pages/catalogue/page.py", title="Catalogue", icon=":material/inventory_2:", url_path="catalogue"),
    ],
}

page = st.navigation(PAGES)
scenario_sidebar()
page.run()
