"""The measured page's published view: the reference measurements shipped with the app, their findings and the accuracy scorecard."""

from __future__ import annotations

from typing import Any

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.catalogue.reference import METRICS
from core.evidence.scorecard import ROW_COLUMNS, scorecard
from core.present.evidence import headline_sentence, options, reference_display, reference_view, scorecard_tables
from core.present.evidence_charts import prediction_chart, ratio_chart
from core.present.exports import published_line
from core.present.report import Section
from core.present.text import escape_markdown, plain, plural
from pages.shared.params import METRIC_LABELS, labels
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, keep_options, show_chart, table_download


def published_view(cat: Catalogue, lead: Any = None, box: Any = None) -> None:
    """Filters, headline figures, findings, the share-of-ceiling chart, the linked table and the scorecard.

    In presentation mode the headline figures and the chart go into `lead` and the controls into `box` (folded)."""
    opts = options(cat)
    if not opts["gpu"]:
        st.info("The catalogue holds no published measurements (data/seed/reference_measurements.csv is empty).", icon=":material/inbox:")
        return
    gpu_names, model_names = labels(cat, "accelerator"), labels(cat, "model")
    filters = (  # (option list, widget key, label, placeholder, how an option shows, help)
        ("gpu", "ms_ref_gpus", "Accelerator", "every accelerator", lambda g: gpu_names.get(g, g), "on these accelerators"),
        ("model", "ms_ref_models", "Model", "every model", lambda m: model_names.get(m, m), "of these models"),
        ("framework", "ms_ref_frameworks", "Framework", "every framework", str, "made with these serving frameworks or suites"),
        ("publisher", "ms_ref_publishers", "Source", "every publisher", str, "these publishers printed (each row links to its page)"),
    )
    chosen: dict[str, list[str]] = {}
    for column, (option, key, label, placeholder, shown, what) in zip((box or st).columns(4), filters, strict=True):
        keep_options(key, opts[option])
        chosen[option] = column.multiselect(
            label,
            opts[option],
            format_func=shown,
            key=key,
            bind="query-params",
            placeholder=placeholder,
            help=f"Keep the measurements {what} (none chosen: every one).",
        )
    gpus, models, frameworks, publishers = (chosen[k] for k in ("gpu", "model", "framework", "publisher"))
    view = reference_view(cat, gpus=gpus, models=models, frameworks=frameworks, publishers=publishers)
    rows = view.rows
    m1, m2, m3, m4 = (lead or st).columns(4)
    m1.metric("Published measurements", f"{rows.height:,}", help=f"Rows kept by the filters, of {view.total:,} shipped.")
    m2.metric("Sources", f"{view.sources:,}", help="Distinct documents the numbers are printed in (a page at any commit counts once).")
    m3.metric("Accelerators", f"{rows['gpu'].n_unique() if rows.height else 0:,}", help="Distinct accelerators among the rows kept.")
    decode = rows.filter(((pl.col("metric") == "output_tokens_per_s") & (pl.col("phase") == "decode")) | (pl.col("metric") == "tpot"))
    m4.metric(
        "Median decode share",
        f"{decode['ratio'].median():.0%}" if decode.height else "—",
        help="The median share of its ceiling that a decode measurement reached (decode throughput and time per output "
        "token): the measured rate over the ceiling of the same scenario (for TPOT: ceiling time over measured time).",
    )
    if not rows.height:
        st.info("No published measurement passes these filters: clear one of them.", icon=":material/filter_alt_off:")
        return
    if view.findings.height:
        n = view.findings.height
        st.warning(
            f"{n} published measurement{'s' if n != 1 else ''} lie above {'their' if n != 1 else 'its'} ceiling: a finding, not a plot point. "
            "Each is drawn as a cross and its likely cause is named below (max-load throughput counting prompt tokens, speculative decoding, "
            "a sparse figure, a different power mode).",
            icon=":material/warning:",
        )
        with st.expander(f"Findings: {n:,} above {'their ceilings' if n != 1 else 'its ceiling'}", icon=":material/search:"):
            st.dataframe(
                reference_display(view.findings).select(
                    "Row",
                    "Accelerator",
                    "GPUs",
                    "Model",
                    "Metric",
                    "Published value",
                    "Unit",
                    "Share of ceiling",
                    "Above its ceiling because",
                    "Note",
                    "Source",
                ),
                hide_index=True,
                key="ms_ref_findings",
                column_config=_columns(),
            )
    chart = ratio_chart(rows, by="framework", title=f"Published measurements: share of their own ceiling ({plural(rows.height, 'row')})")
    show_chart(chart.to_dict(validate=False), lead, width="stretch")
    kept = published_line(cat, gpus, models, frameworks, publishers, rows)
    chart_exports(chart, "published-share-of-ceiling", line=kept)
    table = reference_display(rows)
    data_table(table, "published measurements", key="ms_ref_table", csv_key="ms_ref_csv", column_config=_columns())
    st.caption(
        "Share of ceiling: measured / ceiling for a rate, ceiling / measured for a time, each against the ceiling of its own scenario. "
        "A max-load figure that prints no batch is set against the ceiling at the largest batch that fits, and at most the requests "
        "the run sent where its source prints them (column Requests sent)."
    )
    figures = (
        ("Published measurements", f"{rows.height:,} of {view.total:,}"),
        ("Sources", f"{view.sources:,}"),
        ("Median decode share of ceiling", f"{decode['ratio'].median():.0%}" if decode.height else "—"),
    )
    shown = Section("Published measurements", text=kept, figures=figures, table=table, charts=(chart,), line=kept)
    _scorecard(cat, box, shown)


def _columns() -> dict[str, object]:
    return {
        "Source": st.column_config.LinkColumn("Source", display_text="source ↗", help="The page or file the number is printed in."),
        "Published value": st.column_config.NumberColumn("Published value", format="%,.4g", help="As printed, in the row's unit."),
        "Statistic": st.column_config.TextColumn(
            "Statistic",
            help="For a time (TTFT, TPOT, ITL): which statistic of the run's requests it is, as its source prints it (median, "
            "mean, p90 ...); empty: one figure, or not printed. The predicted model gives the median.",
        ),
        "Cached depth (tokens)": st.column_config.NumberColumn(
            "Cached depth (tokens)",
            format="%,d",
            help="Tokens already in the KV cache before the figure's own (llama-bench's '@ dN'); empty: none.",
        ),
        "KV window (tokens)": st.column_config.NumberColumn(
            "KV window (tokens)",
            format="%,d",
            help="A rolling-window KV cache the run kept per sequence, shorter than the sequence: the ceiling reads at most this "
            "many tokens of context. Empty: the whole context is kept.",
        ),
        "Latency limits": st.column_config.TextColumn(
            "Latency limits",
            help="The limits the run was held to, as its log prints them (MLPerf Server and Interactive: 99th-percentile TTFT "
            "and TPOT). A max-load row is set against the ceiling at the largest batch that meets them. Empty: none.",
        ),
        "Not scored because": st.column_config.TextColumn(
            "Not scored because",
            help="Why the row is left out of the accuracy scorecard and the predicted model's fit: its scenario as run is "
            "not printed (empty: scored).",
        ),
        "Requests sent": st.column_config.NumberColumn(
            "Requests sent", format="%,d", help="The requests the run sent, where its source prints them (empty: not printed)."
        ),
        "Ceiling (same unit)": st.column_config.NumberColumn(
            "Ceiling (same unit)", format="%,.3g", help="The model's ceiling for the same scenario, in the row's unit."
        ),
        "Share of ceiling": st.column_config.ProgressColumn(
            "Share of ceiling",
            format="percent",
            min_value=0.0,
            max_value=1.0,
            help="Share of the ceiling reached; above 100% is a finding.",
        ),
    }


def _scorecard(cat: Catalogue, box: Any, shown: Section) -> None:
    st.subheader("Accuracy scorecard")
    card = scorecard(cat)
    st.markdown(headline_sentence(card))
    st.caption(
        "Held out by publisher: the rows of one campaign (one article, one MLPerf submission, one performance page, whatever "
        "its URLs) are predicted by the predicted model fitted on every other campaign's rows under their ceilings, so no "
        "campaign predicts itself; the last two columns hold out the accelerator or the model instead. The model times every "
        "operation at efficiencies fitted per operation class, accelerator family, framework, weight format and model, with "
        "per-kernel, per-step, per-sequence and per-request overheads (README: How the numbers are computed). "
        "MAPE = mean |predicted - measured| / measured. Each row's held-out predictions are in the CSV below."
    )
    if card.left_out.height:
        reasons = card.left_out.group_by("unscored", maintain_order=True).agg(pl.col("id"))
        st.caption(
            f"Not scored: {card.left_out.height:,} published measurements whose scenario as run their source does not print "
            "(they stay in the table above): "
            + "; ".join(f"{', '.join(r['id'])}: {escape_markdown(r['unscored'])}" for r in reasons.iter_rows(named=True))
            + "."
        )
    per_metric, groups = scorecard_tables(card)
    data_table(
        per_metric,
        "scorecard by metric",
        key="ms_sc_metrics",
        download=False,
        column_config={c: st.column_config.NumberColumn(format="%,.0f") for c in per_metric.columns[2:]},
    )
    with st.expander("By framework and accelerator family", icon=":material/table_chart:"):
        data_table(
            groups,
            "scorecard by group",
            key="ms_sc_groups",
            download=False,
            column_config={c: st.column_config.NumberColumn(format="%,.0f") for c in groups.columns[3:]},
        )
    metrics = [m for m in METRICS if m in set(card.rows["metric"].to_list())]
    keep_options("ms_sc_metric", metrics)
    metric = (box or st).selectbox(
        "Metric",
        metrics,
        format_func=METRIC_LABELS.__getitem__,
        key="ms_sc_metric",
        bind="query-params",
        help="Which metric the predicted-against-measured chart shows.",
    )
    charts = ()
    if metric:
        chart = prediction_chart(card.rows, metric)
        show_chart(chart.to_dict(validate=False))  # its own size, square: the y = x line at 45 degrees
        chart_exports(
            chart,
            f"scorecard-{metric}",
            line=f"Accuracy scorecard, {METRIC_LABELS[metric]}: every published measurement, held out by campaign",
        )
        charts = (chart,)
    sentence = plain(headline_sentence(card))
    scored = Section("Accuracy scorecard", text=sentence, table=per_metric, charts=charts, line="Accuracy scorecard: held out by campaign")
    report_of_page(
        "Measured vs predicted: published measurements",
        None,
        [shown, scored],
        subject=f"Published measurements: {shown.line or 'every row'}",
        gpus=card.rows["gpu"].unique().to_list() if card.rows.height and "gpu" in card.rows.columns else [],
    )
    table_download(
        card.rows.select(ROW_COLUMNS),
        "scorecard rows",
        key="ms_sc_csv",
    )
