"""Compare accelerators for one workload inside one scale-up domain: the cheapest configuration under a service target, its cost rented or owned, the frontier."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.catalogue.prices import RATE_LABELS, RATES, parse_price
from core.model.scenario import Scenario
from core.plan.costs import DEFAULT_SOURCES, Ownership
from core.plan.purchase import BASIS_LABELS, PRICE_MAX, SORT_KEYS, SORT_LABELS, Load, price_table
from core.plan.targets import BY_KEY as TARGETS
from core.plan.targets import CUSTOM, OPTION_LABELS, targets_for
from core.present.figures import CompareView, compare_view
from core.present.report import Section
from core.present.tables import prices_display
from core.present.text import escape_markdown, plain, plural, sig
from pages.shared.data import HASH_FUNCS
from pages.shared.params import presenting
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, evidence_panel, show_chart

MODES = ["fixed batch", "service target"]
#: The frontier's plot width in presentation mode at 1280 px (the page's width less the y axis), px.
PRESENT_FRONTIER_WIDTH = 1020
PAY = ["rent", "buy"]
#: The link parameters of the prices the user typed, one `id:usd` per accelerator (written by hand: a table is no widget).
PRICE_PARAMS = {"rent": "cmp_rent", "buy": "cmp_buy"}


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=128, show_spinner=False)
def figures(
    cat: Catalogue,
    picked: tuple[str, ...],
    sc: Scenario,
    max_tpot_s: float | None,
    max_ttft_s: float | None,
    own: Ownership,
    rent: Mapping[str, float],
    buy: Mapping[str, float],
    load: Load | None,
    sort_by: str,
    title: str,
    basis: str,
    frontier_size: tuple[int, int] | None,
) -> CompareView:
    return compare_view(
        cat,
        picked,
        sc,
        max_tpot_s=max_tpot_s,
        max_ttft_s=max_ttft_s,
        own=own,
        prices=rent,
        buy_prices=buy,
        load=load,
        sort_by=sort_by,
        title=title,
        basis=basis,
        frontier_size=frontier_size,
    )


def typed_prices(kind: str, known: set[str]) -> dict[str, float]:
    """The user's prices of one kind: from this session, else from the link (`id:usd`, repeated)."""
    state = f"_cmp_{kind}_prices"
    if state not in st.session_state:
        given: dict[str, float] = {}
        refused = []
        for item in st.query_params.get_all(PRICE_PARAMS[kind]):
            price = parse_price(item, ":")
            if price is not None and price[0] in known and price[1] <= PRICE_MAX[kind]:
                given[price[0]] = price[1]
            else:
                refused.append(item)
        if refused:  # one line, however many; each value cut where it is long
            some = ", ".join(repr(v if len(v) <= 60 else v[:40] + "…") for v in refused[:3])
            st.warning(
                f"Link parameter {PRICE_PARAMS[kind]}: {len(refused):,} {'value is' if len(refused) == 1 else 'values are'} not an "
                f"accelerator id and a price above 0 and at most {PRICE_MAX[kind]:,.0f} US dollars ({escape_markdown(some)}); ignored."
            )
        st.session_state[state] = given
    return dict(st.session_state[state])


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


def _keep_prices(kind: str, prices: dict[str, float]) -> None:
    """Remember the user's prices for the session and write them into the link."""
    st.session_state[f"_cmp_{kind}_prices"] = prices
    items = [f"{g}:{v:g}" for g, v in sorted(prices.items())]
    if items:
        st.query_params[PRICE_PARAMS[kind]] = items
    elif PRICE_PARAMS[kind] in st.query_params:
        del st.query_params[PRICE_PARAMS[kind]]


def _apply_preset() -> None:
    """A preset picked: its limits go into the two number boxes."""
    key = st.session_state.get("cmp_target")
    if key in TARGETS:
        st.session_state["cmp_tpot"] = TARGETS[key].tpot_s * 1e3
        st.session_state["cmp_ttft"] = TARGETS[key].ttft_s


def one_group_view(cat: Catalogue, sc: Scenario, names: Mapping[str, str], box: Any, lead: Any, picked: list[str]) -> None:
    """The comparison inside one scale-up domain (tensor parallel): its controls in `box`, its headline in `lead`."""
    c1, c2, c3, c4, c5 = box.columns([2, 2, 1, 1, 2])
    mode = c1.radio(
        "Workload",
        MODES,
        horizontal=True,
        key="cmp_mode",
        bind="query-params",
        help="Fixed batch: the sidebar's batch. Service target: every batch from 1 to 1,024 is tried and the cheapest that meets both limits kept.",
    )
    targeted = mode == "service target"
    presets = targets_for(sc.model)
    offered = [CUSTOM, *(t.key for t in presets)]
    target = c2.selectbox(
        "Preset target",
        offered,
        format_func=OPTION_LABELS.__getitem__,  # the labels the link carries (params.LINKS says so too)
        key="cmp_target",
        bind="query-params",
        on_change=_apply_preset,
        disabled=not targeted,
        help="Published latency limits (MLPerf Inference's Server and Interactive scenarios, for the model they were set for) "
        "or this app's chat and batch assumptions; picking one sets both limits, custom limits lets you type them.",
    )
    preset = TARGETS.get(str(target))
    if preset is not None:  # the preset says the limits (a link may name it without them): the boxes show its values
        st.session_state.update(
            {k: v for k, v in (("cmp_tpot", preset.tpot_s * 1e3), ("cmp_ttft", preset.ttft_s)) if st.session_state.get(k) != v}
        )
    typed = targeted and preset is None
    tpot_ms = c3.number_input(
        "TPOT ≤ (ms)",
        1.0,
        10_000.0,
        50.0,
        1.0,
        key="cmp_tpot",
        bind="query-params",
        disabled=not typed,
        help="Time per output token each user sees, in ms (50 ms = 20 tokens/s per user). A preset sets it; "
        "pick custom limits to type your own.",
    )
    ttft_s = c4.number_input(
        "TTFT ≤ (s)",
        0.01,
        600.0,
        2.0,
        0.1,
        key="cmp_ttft",
        bind="query-params",
        disabled=not typed,
        help="Time to first token: the prefill of one prompt, in seconds. A preset sets it; pick custom limits to type your own.",
    )
    sort_by = c5.selectbox(
        "Sort by",
        list(SORT_KEYS),
        key="cmp_sort",
        bind="query-params",
        format_func=SORT_LABELS.__getitem__,  # the labels the link carries (params.LINKS says so too)
        help="Best first; accelerators that miss the target or do not fit last.",
    )
    basis = c5.radio(
        "Figures",
        list(BASIS_LABELS),
        format_func=BASIS_LABELS.__getitem__,
        horizontal=True,
        key="cmp_basis",
        bind="query-params",
        help="Expected: what the sidebar's framework is expected to reach (the predicted model, with its held-out error), the "
        "search made on it and the ceiling beside it as the bound. Ceiling: the roofline bound alone (seed 004's comparisons).",
    )
    # always one caption here: a control below that moves up or down the page when an element appears or goes
    # stops writing its changes into the link (Streamlit 1.67)
    if not targeted:
        box.caption("Target: none; every configuration runs at the sidebar's batch.")
    elif preset is not None:
        box.caption(f"Target: {escape_markdown(preset.source)}.")
    else:
        box.caption("Target: custom limits, typed in the two boxes.")

    d1, d2, d3, d4, d5, d6, d7 = box.columns([2, 1, 1, 1, 1, 1, 1])
    pay = d1.radio(
        "Pay for GPU-hours by",
        PAY,
        horizontal=True,
        key="cmp_pay",
        bind="query-params",
        help="Rent: the on-demand price per GPU-hour, paid only while used. "
        "Buy: the purchase price over the years below plus the energy of every hour, over the utilisation.",
    )
    years = d2.number_input(
        "Years", 1.0, 15.0, 6.0, 0.5, key="cmp_years", bind="query-params", help=f"Buy: amortisation. Default {DEFAULT_SOURCES['years']}."
    )
    kwh = d3.number_input(
        "$ per kWh",
        0.0,
        2.0,
        0.081,
        0.005,
        format="%.3f",
        key="cmp_kwh",
        bind="query-params",
        help=f"Energy price. Default: {DEFAULT_SOURCES['usd_per_kwh']}.",
    )
    pue = d4.number_input(
        "PUE",
        1.0,
        3.0,
        1.54,
        0.01,
        key="cmp_pue",
        bind="query-params",
        help=f"Facility power over IT power. Default: {DEFAULT_SOURCES['pue']}.",
    )
    util = d5.number_input(
        "Utilisation (%)",
        1.0,
        100.0,
        100.0,
        5.0,
        key="cmp_util",
        bind="query-params",
        help="Share of hours the GPUs serve. Buy: an owned GPU is paid every hour, so its cost per token is divided by this. "
        "Rent vs buy: the rented hours are this share of the month.",
    )
    rps = d6.number_input(
        "Load (requests/s)",
        0.0,
        1e6,
        0.0,
        1.0,
        key="cmp_rps",
        bind="query-params",
        help="A load to serve, in requests per second (0: none): each configuration is replicated to carry it, "
        "each request's input is the sidebar's prompt.",
    )
    out_tokens = d7.number_input(
        "Output tokens",
        1,
        100_000,
        256,
        64,
        key="cmp_out",
        bind="query-params",
        help="Output tokens per request of the load.",
    )
    own = Ownership(mode=pay, years=years, usd_per_kwh=kwh, pue=pue, utilization=util / 100.0)  # type: ignore[arg-type]
    load = Load(requests_per_s=rps, input_tokens=sc.prompt, output_tokens=int(out_tokens)) if rps > 0 else None

    if not picked:
        st.info("No accelerator selected: pick one or more above.", icon=":material/search_off:")
        return

    known = set(names)
    typed = {kind: typed_prices(kind, known) for kind in PAY}
    unit = "$ per GPU-hour (rent)" if pay == "rent" else "$ per GPU (purchase)"
    with st.expander(f"Prices used: {unit}. Published medians unless you type yours", expanded=False):
        rates = st.radio(
            "Rent prices in the median",
            RATES,
            format_func=RATE_LABELS.__getitem__,
            horizontal=True,
            key="cmp_rates",
            bind="query-params",
            disabled=pay != "rent",
            help="Which published rent prices the median of each accelerator uses. On-demand instance rates (the default) are "
            "what a cloud charges for a GPU-hour with no commitment. Every rent price adds serverless per-second rates, managed "
            "inference endpoints, marketplace floor prices and second-hand reports. Either way each seller counts once, with "
            "its lowest price.",
        )
        own = own.model_copy(update={"rent_prices": rates})
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
        others = {g: v for g, v in typed[pay].items() if g not in picked}
        typed[pay] = {**others, **mine}
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
        st.caption(
            "A price older than 12 months, or undated, is marked. All of them, with their notes: `python -m core.cli prices --json`."
        )

    for kind in PAY:  # every run: the link always says the prices typed
        _keep_prices(kind, typed[kind])

    goal = f"TPOT ≤ {tpot_ms:g} ms, TTFT ≤ {ttft_s:g} s" if targeted else f"batch {sc.batch}"
    title = f"{cat.model(sc.model).name} ({sc.weights}, KV {sc.kv}), {goal}"
    st.caption(
        f"Searched on what {escape_markdown(sc.framework)} (sidebar: Framework) is expected to reach: the predicted model's TPOT and "
        "TTFT against the target, its held-out error in the table, the ceiling beside it as the bound."
        if basis == "predicted"
        else "Searched on the ceiling: the roofline bound, before any engine's overheads (Figures: Expected for what an engine reaches)."
    )
    # presentation mode: the frontier's plot as a 1280 px screen draws it stretched, its height what the headline above and
    # the legend's rows under it (two names a row) leave on 1280 x 800; its labels are placed for that size
    low = (PRESENT_FRONTIER_WIDTH, 290 - 22 * -(-len(picked) // 2)) if presenting() else None
    fig = figures(
        cat,
        tuple(picked),
        sc,
        tpot_ms / 1e3 if targeted else None,
        ttft_s if targeted else None,
        own,
        typed["rent"],
        typed["buy"],
        load,
        sort_by,
        title,
        basis,
        low,
    )
    st.subheader(
        f"{escape_markdown(cat.model(sc.model).name)} · weights {sc.weights}, KV {sc.kv} · context {sc.context:,}, prompt {sc.prompt:,} · {goal}"
    )
    configurations = ", ".join(  # an accelerator on which no configuration qualifies has no count: it said "None × ..."
        f"{n} × {g}" if n is not None else f"{g} (none qualifies)"
        for g, n in zip(fig.table["gpu_name"], fig.table["num_gpus"], strict=True)
    )
    compared = f"{cat.model(sc.model).name} · weights {sc.weights}, KV {sc.kv} · context {sc.context:,}, prompt {sc.prompt:,} · {goal} · {configurations}"
    if fig.met == 0:
        st.warning(
            "Nothing qualifies on any selected accelerator (within one scale-up domain). Loosen the limits or pick other accelerators.",
            icon=":material/block:",
        )
    else:
        best = fig.table.row(0, named=True)
        head = lead if presenting() else st.container()
        head.markdown(f"##### Best by {SORT_LABELS[sort_by]}: {escape_markdown(best['gpu_name'])}")
        m = head.columns(4)
        m[0].metric("GPUs × batch", f"{best['num_gpus']} × {best['batch']}", help=best["why"])
        m[1].metric("Tokens/s per GPU", sig(best["tokens_per_s_per_gpu"]), help="Output tokens per second per GPU at this configuration.")
        usd = best["usd_per_million_tokens"]
        m[2].metric(
            "$ per million output tokens",
            f"${usd:,.3g}" if usd is not None else "—",
            help=f"{pay}: {best['price_basis']}" if usd is not None else "No price: type one under 'Prices used'.",
        )
        if load is not None:
            m[3].metric(
                "GPUs for the load",
                f"{best['gpus_needed']:,}" if best["gpus_needed"] is not None else "—",
                help=f"{plural(best['replicas'] or 0, 'replica')} of {plural(best['num_gpus'], 'GPU')} for {rps:g} requests/s of {sc.prompt:,} in / {out_tokens:,} out tokens; "
                + (f"${best['usd_per_month']:,.0f} per month." if best["usd_per_month"] is not None else "no price."),
            )
        else:
            m[3].metric(
                "Tokens/s per user",
                sig(best["tokens_per_s_per_user"]),
                help="Output tokens per second each user sees at this configuration.",
            )
        if fig.reading:
            st.info(fig.reading, icon=":material/lightbulb:")
        if best["price_old"]:
            st.caption(
                f"⚠ The price used for {escape_markdown(best['gpu_name'])} is older than 12 months or undated: {escape_markdown(best['price_basis'])}."
            )

    if fig.frontier is not None:
        t1, t2 = (lead if presenting() else st).tabs(["Throughput against interactivity", "Cost against interactivity"])
        wide = "stretch" if presenting() else "content"
        with t1:
            show_chart(fig.frontier, width=wide)
            chart_exports(fig.frontier, "frontier-throughput", line=compared)
        with t2:
            if fig.frontier_cost is not None:
                show_chart(fig.frontier_cost, width=wide)
                chart_exports(fig.frontier_cost, "frontier-cost", line=compared)
            else:
                st.info("No accelerator here has a price: type one under 'Prices used'.", icon=":material/payments:")
        curves = (
            f"what {escape_markdown(sc.framework)} is expected to reach (the predicted model; the table gives each ceiling beside it)"
            if basis == "predicted"
            else "the model's ceilings"
        )
        st.caption(
            "Each curve sweeps the decode batch at the GPU count kept; up and to the right is better. Left of the dashed line "
            f"a token takes longer than the target allows. The curves are {curves}; the published measurements of this model "
            "on these accelerators are listed below the table, each against its own scenario's ceiling."
        )
    if presenting():
        lead.caption(escape_markdown(compared))
    data_table(fig.shown, "accelerator comparison", key="cmp_table")
    evidence_panel(cat, picked, sc.model, key="cmp_evidence")
    if fig.chart is not None:
        show_chart(fig.chart)
        chart_exports(fig.chart, "accelerator-comparison", line=compared)
    report_of_page(
        "Compare accelerators",
        sc,
        [
            Section(
                "The comparison",
                text=f"{compared}. Paid by {pay}" + (f"; {plain(fig.reading)}" if fig.reading else "") + ".",
                table=fig.shown,
                charts=tuple(c for c in (fig.frontier, fig.frontier_cost, fig.chart) if c is not None),
                line=compared,
            )
        ],
        subject=compared,
        gpus=picked,
    )
