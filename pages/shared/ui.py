"""Shared renderers: table download, chart export buttons, empty states."""

from __future__ import annotations

import copy
import re

import altair as alt
import polars as pl
import pyarrow as pa
import streamlit as st

from core.charts import export_chart


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "export"


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """Neutralise cells a spreadsheet would run as a formula (= + - @ at the start)."""
    exprs = []
    for name, dtype in frame.schema.items():
        if dtype == pl.String:
            exprs.append(
                pl.when(pl.col(name).str.contains(r"^[=+\-@\t\r]")).then(pl.lit("'") + pl.col(name)).otherwise(pl.col(name)).alias(name)
            )
        elif isinstance(dtype, pl.List):
            exprs.append(pl.col(name).cast(pl.List(pl.String)).list.join("; ").alias(name))
    return frame.with_columns(exprs) if exprs else frame


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


def chart_exports(chart: alt.TopLevelMixin | dict[str, object], name: str) -> None:
    """PNG and SVG download buttons rendering the same chart offline (vl-convert), side by side."""
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


def show_chart(chart: alt.TopLevelMixin | dict[str, object], target: object | None = None, *, width: str = "content") -> None:
    """Draw an Altair chart (or its spec dict) without re-validating it (the builders are tested).

    A spec dict may be shared (core.memo): Streamlit edits the spec it is
    given, so it gets its own copy.
    """
    spec = chart if isinstance(chart, dict) else chart.to_dict(validate=False)
    (target or st).vega_lite_chart(with_arrow_datasets(spec), width=width)  # type: ignore[attr-defined]


def with_arrow_datasets(spec: dict[str, object]) -> dict[str, object]:
    """A copy of `spec` whose named datasets (lists of rows) are Arrow IPC bytes.

    Streamlit sends a chart's datasets as Arrow; rows it converts through
    pandas (~6 ms per dataset), bytes it passes on as they are. `spec` itself
    is left alone (its rows still serve the PNG/SVG export).
    """
    datasets = spec.get("datasets")
    out = copy.deepcopy({k: v for k, v in spec.items() if k != "datasets"})
    if isinstance(datasets, dict):
        out["datasets"] = {name: _arrow_bytes(rows) if isinstance(rows, list) else rows for name, rows in datasets.items()}
    return out


def _arrow_bytes(rows: list[dict[str, object]]) -> bytes:
    table = pl.DataFrame(rows, infer_schema_length=None).to_arrow()
    # plain utf8 strings, as Streamlit's own conversion writes them (not large or view types)
    table = table.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type) for f in table.schema]))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def parquet_download(data: bytes, name: str, *, key: str | None = None) -> None:
    """A Parquet download button (bytes from a core function, e.g. core.sweep_query.parquet_bytes)."""
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
