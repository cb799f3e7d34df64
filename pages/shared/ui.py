"""Shared renderers: table and chart downloads, drawing a chart spec, keeping a bound widget's value among its options."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl
import streamlit as st

from core.evidence.reference import evidence_for
from core.present.charts import export_chart
from core.present.evidence import evidence_display
from core.present.tables import csv_safe
from core.present.text import escape_markdown


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "export"


def table_download(frame: pl.DataFrame, name: str, *, key: str | None = None) -> None:
    """A CSV download button for a table shown on screen."""
    st.download_button(
        ":material/download: CSV",
        csv_safe(frame).write_csv().encode("utf-8"),
        file_name=f"{_slug(name)}.csv",
        mime="text/csv",
        key=key or f"csv-{_slug(name)}",
        help=f"Download the {name} table as CSV.",
    )


#: Export formats: (label, extension, MIME type, help).
EXPORTS = (
    (":material/image: PNG", "png", "image/png", "Download the chart as a PNG image (2x scale)."),
    (":material/polyline: SVG", "svg", "image/svg+xml", "Download the chart as an SVG vector image."),
)


def chart_exports(chart: Any, name: str) -> None:
    """PNG and SVG download buttons rendering the same chart (an Altair chart or its spec) offline, side by side."""
    row = st.container(horizontal=True)
    slug = _slug(name)
    for label, ext, mime, text in EXPORTS:
        row.download_button(
            label,
            lambda ext=ext: export_chart(chart, ext),  # type: ignore[misc]
            file_name=f"{slug}.{ext}",
            mime=mime,
            key=f"{ext}-{slug}",
            help=text,
            on_click="ignore",
        )


def show_chart(spec: dict[str, Any], target: Any = None, *, width: str = "content") -> None:
    """Draw a chart's Vega-Lite spec (the builders are tested; Streamlit need not validate it again)."""
    (target or st).vega_lite_chart(spec, width=width)


def parquet_download(data: bytes, name: str, *, key: str | None = None) -> None:
    """A Parquet download button (bytes from a core function, e.g. core.present.tables.parquet_bytes)."""
    st.download_button(
        ":material/download: Parquet",
        data,
        file_name=f"{_slug(name)}.parquet",
        mime="application/vnd.apache.parquet",
        key=key or f"parquet-{_slug(name)}",
        help=f"Download the {name} table as Parquet (SI units).",
    )


def number_columns(frame: pl.DataFrame, fmt: str = "%.4g") -> dict[str, object]:
    """column_config that shows every float column of `frame` to 4 significant digits (the data keeps full precision)."""
    return {c: st.column_config.NumberColumn(format=fmt) for c, t in frame.schema.items() if t == pl.Float64}


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


def evidence_panel(cat: Any, gpus: Sequence[str], model: str, *, key: str) -> None:
    """Beside a scenario: how the published measurements of this model on these accelerators sit under their ceilings, each linked.

    One sentence per accelerator (core.evidence.reference.evidence_for: the same model on the same
    accelerator, else the nearest: same accelerator and another model size, else the same model
    elsewhere) and the rows behind it in an expander, every value linked to the page it is printed in.
    """
    shown = []
    for gpu in dict.fromkeys(gpus):
        ev = evidence_for(cat, gpu, model)
        st.caption(f":material/fact_check: {escape_markdown(ev.sentence)}")
        if ev.rows.height:
            shown.append(ev.rows)
    if not shown:
        return
    rows = pl.concat(shown, how="diagonal_relaxed").unique("id", keep="first", maintain_order=True)
    with st.expander(f"The published measurements ({rows.height:,}), each with its source", icon=":material/fact_check:"):
        table = evidence_display(rows.head(40))
        st.dataframe(
            table,
            hide_index=True,
            key=key,
            column_config={
                "Source": st.column_config.LinkColumn("Source", display_text="source ↗", help="The page or file the number is printed in."),
                "Published value": st.column_config.NumberColumn(format="%.4g", help="As printed, in the row's unit."),
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
