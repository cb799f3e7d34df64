"""The prices the user types on the compare page: the editor over each accelerator's published median, kept in the link."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.plan.compare_request import PRICE_LINKS, CompareRequest, link_price_items, read_link_prices, refused_prices_text
from core.plan.purchase import PRICE_MAX, price_table
from core.present.tables import prices_display
from core.present.text import escape_markdown
from pages.shared.ui import data_table
from pages.shared.widgets import request_input

KINDS = ("rent", "buy")


def typed_prices(kind: str, known: set[str]) -> dict[str, float]:
    """The user's prices of one kind: from this session, else from the link (`id:usd`, repeated)."""
    state = f"_cmp_{kind}_prices"
    if state not in st.session_state:
        given, refused = read_link_prices(st.query_params.get_all(PRICE_LINKS[kind]), known, kind)
        if refused:  # one line, however many
            st.warning(refused_prices_text(kind, refused, escape_markdown))
        st.session_state[state] = given
    return dict(st.session_state[state])


def keep_prices(typed: Mapping[str, Mapping[str, float]]) -> None:
    """Remember the user's prices for the session and write them into the link (every run: the link always says them)."""
    for kind, prices in typed.items():
        st.session_state[f"_cmp_{kind}_prices"] = dict(prices)
        items = link_price_items(prices)
        if items:
            st.query_params[PRICE_LINKS[kind]] = items
        elif PRICE_LINKS[kind] in st.query_params:
            del st.query_params[PRICE_LINKS[kind]]


def _with_pending_edits(prices: dict[str, float], state: Any, gpus: list[str]) -> dict[str, float]:
    """The user's prices with the price editor's edits of this run applied (its rows are `gpus` in order), so that the
    table's "what it rests on" says "your price" in the same run the figures start using it."""
    out = dict(prices)
    edits = state.get("edited_rows", {}) if isinstance(state, dict) else {}
    for row, cells in edits.items():
        if "yours" not in cells or not str(row).isdigit() or int(row) >= len(gpus):
            continue
        value, gpu = cells["yours"], gpus[int(row)]
        if isinstance(value, int | float) and value == value and value > 0:
            out[gpu] = float(value)
        else:
            out.pop(gpu, None)
    return out


def price_editor(
    cat: Catalogue, picked: Sequence[str], request: CompareRequest, names: Mapping[str, str]
) -> tuple[CompareRequest, dict[str, dict[str, float]]]:
    """The prices expander: which published rent prices the median uses, the editor of the user's own, every published
    price. Returns the request with the rent-price choice and the user's prices of each kind, this run's edits included."""
    pay = request.pay
    typed = {kind: typed_prices(kind, set(names)) for kind in KINDS}
    unit = "$ per GPU-hour (rent)" if pay == "rent" else "$ per GPU (purchase)"
    with st.expander(f"Prices used: {unit}. Published medians unless you type yours", expanded=False):
        rates = request_input("rent_prices", disabled=pay != "rent")
        request = request.model_copy(update={"rent_prices": rates})
        own = request.ownership()
        editor_key = f"cmp_prices_{pay}_" + "-".join(picked)  # a new selection starts from the prices typed so far
        typed[pay] = _with_pending_edits(typed[pay], st.session_state.get(editor_key), list(dict.fromkeys(picked)))
        table = price_table(cat, picked, own, given=typed[pay])  # what each price rests on, the edit just typed included
        editor = table.with_columns(pl.col("gpu").replace_strict(typed[pay], default=None, return_dtype=pl.Float64).alias("yours"))
        edited = st.data_editor(
            editor,
            key=editor_key,
            hide_index=True,
            column_order=["accelerator", "yours", "usd", "source"],
            placeholder="type yours",
            disabled=["gpu", "accelerator", "usd", "source", "old"],
            column_config={
                "yours": st.column_config.NumberColumn(
                    f"your price ({'$/GPU-h' if pay == 'rent' else '$/GPU'})",
                    min_value=0.0,
                    max_value=PRICE_MAX[pay],
                    format="%.2f",
                    help="Type your price to override the published one; clear it to go back.",
                ),
                "usd": st.column_config.NumberColumn("used ($)", format="%.2f", help="The price the figures below use."),
                "source": st.column_config.TextColumn(
                    "what it rests on", help="Your price, or the median of the published ones with their date."
                ),
            },
        )
        edited = edited if isinstance(edited, pl.DataFrame) else pl.from_pandas(edited)
        mine = {g: float(v) for g, v in zip(edited["gpu"], edited["yours"], strict=True) if v is not None and v == v and v > 0}
        typed[pay] = {**{g: v for g, v in typed[pay].items() if g not in picked}, **mine}
        _published(cat, picked, pay, names, rates)
    return request, typed


def _published(cat: Catalogue, picked: Sequence[str], pay: str, names: Mapping[str, str], rates: str) -> None:
    """Every published price of one kind of the picked accelerators, with which the median uses."""
    published = prices_display(cat.prices, picked, pay, names, rates)
    if published.height:
        st.markdown(f"**Every published {pay} price of these accelerators** (the median of those ticked is used)")
        data_table(
            published,
            f"published {pay} prices",
            key=f"cmp_published_{pay}",
            download=False,
            column_config={
                "source": st.column_config.LinkColumn("source", display_text="source ↗", help="The page that printed the price."),
                "what it is": st.column_config.TextColumn(
                    help="Rent: on-demand instance rate, reserved, spot, serverless, managed endpoint, marketplace floor or a "
                    "second-hand report. Buy: list price, quote, street price, estimate or an aggregator's listing."
                ),
                "in median": st.column_config.CheckboxColumn(
                    help="Whether the median uses this price: rent, on-demand instance rates (or every rent price, as chosen "
                    "above); buy, list prices and quotes where there are any, else street prices, else estimates. Each seller "
                    "counts once, with its lowest."
                ),
                published.columns[1]: st.column_config.NumberColumn(format="%,.2f", help="As published, in US dollars."),
            },
        )
    st.caption("A price older than 12 months, or undated, is marked. All of them, with their notes: `python -m core.cli prices --json`.")
