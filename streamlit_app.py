"""Roofline Explorer: page config, navigation in sections, the shared scenario sidebar."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.shared import warmup

# serve.py warms the app up in a thread while the first browser loads; nothing of the app is imported before it ends
warmup.wait()

from core.present.text import escape_markdown  # noqa: E402
from core.store import StoreError  # noqa: E402
from pages.shared.data import catalogue  # noqa: E402
from pages.shared.params import hold_sidebar, note_refused_values, open_link, presenting, restore_sidebar  # noqa: E402
from pages.shared.sidebar import scenario_sidebar, share_panel, subject_line  # noqa: E402
from pages.shared.streamlit_private import chip_rows, presentation_frame  # noqa: E402

# The favicon ships with the app (sent to the browser inline): a ":material/..." page icon
# is fetched from a font server on the internet, which an offline machine cannot reach.
ICON = Path(__file__).resolve().parent / ".streamlit" / "favicon.svg"
st.set_page_config(page_title="Roofline Explorer", page_icon=str(ICON), layout="wide")
chip_rows()  # multiselect chips wrap instead of hiding past the box (pages.shared.streamlit_private.CHIP_ROWS_CSS)

# The overview is the default page, served at the app's root ("/"); Streamlit gives a
# default page no other address, so /overview (the name in older links and the docs)
# is a hidden page that sends its visitor, with the link's parameters, to the root.
OVERVIEW = st.Page("pages/home/page.py", title="Overview", icon=":material/home:", url_path="", default=True)
OVERVIEW_LINK = st.Page("pages/home/page.py", title="Overview", url_path="overview", visibility="hidden")

PAGES = {
    "Explore": [
        OVERVIEW,
        OVERVIEW_LINK,
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
try:
    cat = catalogue()
except StoreError as exc:  # a truncated or corrupt store, a full disk, a folder that cannot be written: one line, once
    st.error(f"The store cannot be used: {escape_markdown(str(exc))}", icon=":material/database_off:")
    st.stop()
if page is OVERVIEW_LINK:
    # a link's first run: rewritten (older forms) and moved to the root in one switch, so no parameter is lost
    # between two switches; later in the session, moved as it is
    open_link(cat, OVERVIEW, move=True)
    st.switch_page(OVERVIEW, query_params={k: st.query_params.get_all(k) for k in st.query_params})
st.session_state["_page"] = page.url_path or "overview"
open_link(cat, page)
restore_sidebar(cat)
notes, line = scenario_sidebar(cat)
# presentation mode gives the page the whole screen: the sidebar starts collapsed (its chevron opens it again)
st.set_page_config(initial_sidebar_state="collapsed" if presenting() else "auto")
if presenting():
    presentation_frame()
hold_sidebar()
page.run()
subject_line(line)
for message in note_refused_values(cat):
    notes.warning(message, icon=":material/link_off:")
share_panel(cat)
