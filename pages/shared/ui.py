"""Shared renderers: table and chart downloads, drawing a chart spec, keeping a bound widget's value among its options."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl
import pyarrow as pa
import streamlit as st

from core.evidence.reference import evidence_for
from core.present.charts import export_chart
from core.present.evidence import evidence_display
from core.present.exports import scenario_line, scenario_parts, titled
from core.present.predicted import band_text, expected_ttft, help_text, share_of_ceiling
from core.present.tables import csv_ready, number_formats, table_width
from core.present.text import DASH, duration, escape_markdown, plural, si
from core.settings import settings
from pages.shared.data import HASH_FUNCS, catalogue
from pages.shared.params import scenario
from pages.shared.streamlit_private import arrow_bytes


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "export"


def expected_metrics(r: Any, where: Any = st) -> None:
    """The predicted figures beside the ceiling's: tokens/s per user and total, TPOT and TTFT as the scenario's framework is
    expected to reach them, each with its held-out error (core.present.predicted)."""
    where.markdown(
        f"**Expected with {escape_markdown(r.scenario.framework)}** (the framework is in the sidebar; the figures above are the ceiling)",
        help=help_text(r),
    )
    cols = where.columns(4)
    help_ = help_text(r)
    off = {"delta_color": "off", "delta_arrow": "off"}
    cols[0].metric(
        "Expected tokens/s per user", si(r.predicted_tokens_per_s_per_user) if r.predicted_tokens_per_s_per_user else DASH, help=help_
    )
    cols[1].metric(
        "Expected tokens/s total",
        si(r.predicted_tokens_per_s_total) if r.predicted_tokens_per_s_total else DASH,
        delta=f"{band_text(r.predicted_error)} held out",
        help=help_,
        **off,
    )
    cols[2].metric(
        "Expected time per token", duration(r.predicted_tpot_s) if r.predicted_tpot_s else DASH, delta=_share(r), help=help_, **off
    )
    cols[3].metric(
        "Expected TTFT",
        duration(r.predicted_ttft_s),
        delta=f"{band_text(r.predicted_ttft_error)} held out",
        help=expected_ttft(r) + ". The ceiling's TTFT is one prompt alone at the datasheet roofs.",
        **off,
    )


def _share(r: Any) -> str | None:
    share = share_of_ceiling(r)
    return f"{share:.0%} of the ceiling" if share else None


def table_download(frame: pl.DataFrame, name: str, *, key: str | None = None) -> None:
    """A CSV download button for a table shown on screen: every column at full precision, without float noise.

    Floats keep 12 significant digits (157.3, not 157.29999999999998); missing values are empty cells
    (core.present.tables.csv_ready).
    """
    st.download_button(
        ":material/download: CSV",
        lambda: csv_ready(frame).write_csv().encode("utf-8"),  # written when pressed, not on every rerun
        file_name=f"{_slug(name)}.csv",
        mime="text/csv",
        key=key or f"csv-{_slug(name)}",
        help=f"Download the {escape_markdown(name)} table as CSV: every column, full precision.",
        on_click="ignore",
    )


#: Export formats: (label, extension, MIME type, help).
EXPORTS = (
    (":material/image: PNG", "png", "image/png", "Download the chart as a PNG image (2x scale)."),
    (":material/polyline: SVG", "svg", "image/svg+xml", "Download the chart as an SVG vector image."),
)


def chart_exports(chart: Any, name: str, *, line: str | None = None, parts: Sequence[str] | None = None) -> None:
    """PNG and SVG download buttons rendering the same chart (an Altair chart or its spec) offline, side by side.

    The exported chart says what it is of (core.present.exports.titled): `line` in its title, by default the page's
    scenario (GPUs × accelerator, model, formats, batch), unless its title already holds `parts` (by default the
    scenario's model, GPUs × accelerator, formats and batch). A page whose chart is not of one scenario (several
    accelerators, a sweep, a dataset) passes its own line.
    """
    if line is None:
        cat, sc = catalogue(), scenario()
        line, parts = scenario_line(cat, sc), scenario_parts(cat, sc) if parts is None else parts
    exported = titled(chart, line, parts or ())
    row = st.container(horizontal=True)
    slug = _slug(name)
    for label, ext, mime, text in EXPORTS:
        row.download_button(
            label,
            lambda ext=ext: export_chart(exported, ext),  # type: ignore[misc]
            file_name=f"{slug}.{ext}",
            mime=mime,
            key=f"{ext}-{slug}",
            help=text,
            on_click="ignore",
        )


#: Room (px) around every chart on a page, as vl-convert leaves in an export.
CHART_PADDING = {"left": 5, "top": 5, "right": 5, "bottom": 5}
#: ROOFLINE_SVG_CHARTS=1 (the browser tests' servers): every chart drawn as SVG, not on a canvas.
SVG_CHARTS = settings().svg_charts


def show_chart(spec: dict[str, Any], target: Any = None, *, width: str = "content", height: int | None = None) -> None:
    """Draw a chart's Vega-Lite spec (the builders are tested; Streamlit need not validate it again).

    Stretched to its container (presentation mode), a chart's own "pad" sizing would add its axes and legend to
    the container's width and overflow it: its width fits the container instead (its height stays). Its named
    datasets go as Arrow bytes made straight from their rows: Streamlit would make each through pandas (about
    30 ms of every rerun for the roofline's six small datasets); a dataset Arrow cannot type is left to Streamlit.
    `height` (px), where given, is the plot's height instead of the spec's (presentation mode: what a 1280 x 800
    screen leaves under the headline).
    """
    if height is not None:
        spec = {**spec, "height": height}
    if "padding" not in spec:  # Streamlit's theme draws to the edge: a rotated y title's "p" and "(" would be cut
        spec = {**spec, "padding": CHART_PADDING}
    if SVG_CHARTS:  # drawn as SVG, which a browser test reads text by text (tests/e2e/test_chart_text_e2e.py)
        spec = {**spec, "usermeta": {**spec.get("usermeta", {}), "embedOptions": {"renderer": "svg"}}}
    if width == "stretch" and spec.get("autosize") == {"type": "pad"}:
        spec = {**spec, "autosize": {"type": "fit-x", "contains": "padding"}}
    if isinstance(spec.get("datasets"), dict):
        spec = {**spec, "datasets": {name: _arrow(rows) for name, rows in spec["datasets"].items()}}
    (target or st).vega_lite_chart(spec, width=width)


def _arrow(rows: Any) -> Any:
    """A dataset's rows as Arrow IPC bytes, or the rows as they are where Arrow cannot type a column."""
    if not isinstance(rows, list):
        return rows
    try:
        return arrow_bytes(pa.Table.from_pylist(rows))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return rows


def parquet_download(data: bytes, name: str, *, key: str | None = None) -> None:
    """A Parquet download button (bytes from a core function, e.g. core.present.tables.parquet_bytes)."""
    st.download_button(
        ":material/download: Parquet",
        data,
        file_name=f"{_slug(name)}.parquet",
        mime="application/vnd.apache.parquet",
        key=key or f"parquet-{_slug(name)}",
        help=f"Download the {escape_markdown(name)} table as Parquet (SI units).",
    )


#: Whole-number columns written without thousands separators: ids, row numbers and years (2024, not 2,024).
_PLAIN_INTEGERS = re.compile(r"(^|\b)(id|row|profile|year|years)(\b|$)", re.IGNORECASE)


def number_columns(frame: pl.DataFrame, fmt: str | None = None) -> dict[str, object]:
    """column_config writing `frame`'s numbers as people write them (the data keeps full precision).

    Floats to 3 significant figures with thousands separators (116.6667 -> "117", 1530.0 -> "1,530"),
    a column of whole numbers whole (core.present.tables.number_format; `fmt` overrides); integers
    with separators ("1,024"), except ids, row numbers and years.
    """
    config: dict[str, object] = {}
    formats = number_formats(frame)
    for c, t in frame.schema.items():
        if t in (pl.Float32, pl.Float64):
            config[c] = st.column_config.NumberColumn(format=fmt or formats[c])
        elif t.is_integer() and not _PLAIN_INTEGERS.search(c):
            config[c] = st.column_config.NumberColumn(format="%,d")
    return config


def keep_options(key: str, options: Sequence[Any]) -> None:
    """Before a bound selection widget is drawn: drop from its value what is no longer an option.

    Streamlit would show the widget without them but leave them in the link;
    setting the value first keeps the two in step.
    """
    value = st.session_state.get(key)
    if isinstance(value, list):
        kept = [v for v in value if v in options]
        if kept != value:
            st.session_state[key] = kept
    elif value is not None and value not in options and options:
        st.session_state[key] = options[0]


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=256, show_spinner=False)
def _evidence(cat: Any, gpus: tuple[str, ...], model: str) -> tuple[list[str], int, pl.DataFrame]:
    """The panel's sentences, how many rows bear on it and the first 40 as shown (figured once per catalogue and
    scenario, not on every rerun)."""
    sentences, shown = [], []
    for gpu in dict.fromkeys(gpus):
        ev = evidence_for(cat, gpu, model)
        sentences.append(ev.sentence)
        if ev.rows.height:
            shown.append(ev.rows)
    if not shown:
        return sentences, 0, pl.DataFrame()
    rows = pl.concat(shown, how="diagonal_relaxed").unique("id", keep="first", maintain_order=True)
    return sentences, rows.height, evidence_display(rows.head(40))


def evidence_panel(cat: Any, gpus: Sequence[str], model: str, *, key: str) -> None:
    """Beside a scenario: how the published measurements of this model on these accelerators sit under their ceilings, each linked.

    One sentence per accelerator (core.evidence.reference.evidence_for: the same model on the same
    accelerator, else the nearest: same accelerator and another model size, else the same model
    elsewhere) and the rows behind it in an expander, every value linked to the page it is printed in.
    """
    sentences, count, table = _evidence(cat, tuple(gpus), model)
    for sentence in sentences:
        st.caption(f":material/fact_check: {escape_markdown(sentence)}")
    if not count:
        return
    box = folded(f"The published measurements ({count:,}), each with its source", key=f"{key}_open", icon=":material/fact_check:")
    if box is None:
        return
    with box:
        data_table(
            table,
            "published measurements",
            key=key,
            download=False,
            column_config={
                "Source": st.column_config.LinkColumn("Source", display_text="source ↗", help="The page or file the number is printed in."),
                "Share of ceiling": st.column_config.ProgressColumn(
                    format="percent",
                    min_value=0.0,
                    max_value=1.0,
                    help="Of the ceiling of the measurement's own scenario; above 100%: a finding.",
                ),
            },
        )
        st.page_link(
            "pages/measured/page.py", label="Every published measurement, with the accuracy scorecard", icon=":material/fact_check:"
        )


def folded(label: str, *, key: str, icon: str | None = None) -> Any | None:
    """An expander whose content runs only while it is open: the container when open, else None (then draw nothing).

    Closed (as it starts), its content is neither worked out nor sent, so the browser does not draw it hidden on
    every rerun (the roofline's eight terms and a table of published rows were). Opening it reruns the page once;
    it stays open for the session.
    """
    box = st.expander(label, key=key, icon=icon, on_change="rerun")
    return box if box.open else None


#: About the main column's width in a 1280 px window with the sidebar open: a wider table scrolls sideways there.
NARROW_TABLE_PX = 780


@st.cache_data(max_entries=512, show_spinner=False)
def _layout(frame: pl.DataFrame) -> tuple[dict[str, object], int]:
    """A table's number formats and its width as drawn (figured once per table's content, not on every rerun)."""
    return number_columns(frame), table_width(frame)


def data_table(
    frame: pl.DataFrame,
    name: str,
    *,
    key: str,
    column_config: dict[str, Any] | None = None,
    csv_key: str | None = None,
    download: bool = True,
    **kwargs: Any,
) -> None:
    """A table as people read it, and its CSV download.

    Numbers to 3 significant figures with thousands separators (number_columns; the page's own
    `column_config` wins; the data itself keeps full precision), a dash for a value that does not exist
    (never "None"), the first column pinned so a row keeps its name while the table scrolls sideways,
    and, where the table is wider than the page at 1280 px, a line saying so. The CSV holds `frame`
    itself: every column, full precision.
    """
    numbers, width = _layout(frame)
    config: dict[str, Any] = {**numbers, **(column_config or {})}
    if frame.width:
        first = frame.columns[0]
        mine = config.get(first)
        if isinstance(mine, dict):
            config[first] = {**mine, "pinned": mine.get("pinned", True)}
        elif mine is None or isinstance(mine, str):
            config[first] = st.column_config.Column(mine, pinned=True)
    # as Arrow, which Streamlit sends as it is (a Polars frame it would first make into pandas: about 10 ms a table)
    st.dataframe(_arrow_table(frame), hide_index=True, key=key, column_config=config, placeholder=DASH, **kwargs)
    if width > NARROW_TABLE_PX:
        st.caption(
            f":material/swap_horiz: {plural(frame.width, 'column')}: where they do not all fit, scroll the table sideways "
            "(its first column stays in view)" + ("; the CSV holds every one." if download else ".")
        )
    if download:
        table_download(frame, name, key=csv_key)


def _arrow_table(frame: pl.DataFrame) -> pa.Table:
    """The frame as an Arrow table the browser's Arrow reader takes (plain and large strings, not string views)."""
    return frame.to_arrow(compat_level=pl.CompatLevel.oldest())


#: The screen presentation mode is laid out for (px): a projector's 1280 x 800.
PRESENT_SCREEN = (1280, 800)
