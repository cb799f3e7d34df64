"""Measured vs predicted: your benchmark results against their ceilings, with a fitted (empirical) roof."""

from __future__ import annotations

from typing import Any

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.evidence.importers import dataset_rows, list_datasets
from core.evidence.refit import MIN_FIT_POINTS, MIN_FIT_R2, framework_of, shift_text
from core.model.predicted import FRAMEWORKS
from core.present.exports import dataset_line
from core.present.figures import measured_charts
from core.present.report import Section
from core.present.text import escape_markdown, plural
from core.store import is_session_dataset
from pages.measured.forms import import_form, manage_dataset, measurement_form
from pages.measured.published import published_view
from pages.measured.runs import dataset_labels, figures, runs_view
from pages.shared.data import catalogue, dataset_store
from pages.shared.params import MEASURED_VIEWS, presenting, scenario, set_refit
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, show_chart

st.title("Measured vs predicted")
lead = st.container()  # presentation mode: the headline figures and the chart lead, the controls fold below them
if not presenting():
    st.caption(
        "Real systems under their ceilings: published measurements shipped with the app, and your own benchmark results. Each measurement "
        "is set against the ceiling the model predicts for the same scenario, with its bandwidth (MBU) and compute (MFU) utilisation. "
        "A well-tuned decode reaches 70-90% MBU; 40% MFU on decode is suspicious."
    )
box = st.expander("Controls: the view, its filters or dataset, the metric", expanded=False) if presenting() else st.container()
cat, db = catalogue(), dataset_store()  # in read-only mode: this session's datasets beside the stored ones
view = box.radio(
    "Show",
    list(MEASURED_VIEWS),
    format_func=MEASURED_VIEWS.__getitem__,
    horizontal=True,
    key="ms_view",
    bind="query-params",
    help="Published: measurements vendors and communities printed, each linked to its source (read-only, shipped with the app). "
    "Yours: the benchmark files you import. Compare runs: two or more of your datasets side by side, aligned on the scenario.",
)


def your_view(cat: Catalogue, db: Any) -> None:
    """The user's own datasets: import, type one, choose, set against the ceiling and the predicted model, refit it."""
    import_form(cat, db)
    now = scenario()
    measurement_form(cat, db, now.gpu, now.model)
    datasets = list_datasets(db)
    if datasets.is_empty():
        st.info(
            "No datasets of yours yet: import a benchmark file above (vLLM, SGLang, TensorRT-LLM, guidellm, LMDeploy, TGI, genai-perf, "
            "AIPerf, llmperf, llama.cpp, ollama, MLPerf, optimum-benchmark or a CSV: the uploader's help lists every format). "
            "The published measurements are under 'Show: Published measurements'.",
            icon=":material/inbox:",
        )
        return
    names = dict(zip(datasets["id"], datasets["name"], strict=True))
    labels = dataset_labels(datasets)  # the picker's options, so the link names the dataset chosen as the page shows it
    by_label = {label: i for i, label in labels.items()}
    picked = st.session_state.pop("_ms_select_id", None)  # a dataset just imported or typed: shown at once
    if picked in labels:
        st.session_state["ms_dataset"] = labels[picked]
    was = st.session_state.get("ms_dataset")
    if was is not None and was not in by_label:  # deleted or renamed meanwhile (another session, or this one): said
        st.warning(
            f"Dataset {escape_markdown(str(was))} is no longer stored (deleted or renamed in this or another session); showing another."
        )
        del st.session_state["ms_dataset"]
    for line in st.session_state.pop("_ms_done", []):
        st.success(line, icon=":material/check:")
    shown = box.selectbox(
        "Dataset",
        list(by_label),
        key="ms_dataset",
        bind="query-params",
        help="An imported file and its context. The link names the dataset chosen.",
    )
    chosen = by_label[shown]
    info = datasets.filter(pl.col("id") == chosen).row(0, named=True)
    kept = " · kept in this browser session only, not saved" if is_session_dataset(chosen) else ""
    box.caption(
        f"{plural(info['row_count'], 'measurement')} · format {info['format']} · imported {info['imported_at']:%Y-%m-%d %H:%M}{kept}"
    )
    if info["notes"]:
        with box.expander("How the file was read"):
            st.markdown("\n".join(f"- {escape_markdown(n)}" for n in info["notes"].split("; ")))
    manage_dataset(db, chosen, names[chosen])
    framework = box.selectbox(
        "Framework the runs used",
        FRAMEWORKS,
        index=FRAMEWORKS.index(framework_of(info["format"], now.framework)),
        key=f"ms_framework_{chosen}",
        help="Whose fitted efficiencies predict these rows: the format's framework where it has one, else the sidebar's.",
    )
    refitted = box.toggle(
        "Refit the predicted model",
        value=True,
        key="ms_refit",
        bind="query-params",
        help=f"Refit the predicted model on these rows, per accelerator and framework (at least {MIN_FIT_POINTS} rows under "
        f"their ceiling, R² of their log times ≥ {MIN_FIT_R2}); the rows are shown predicted before and after.",
    )
    fig = figures(cat, db, chosen, info["file_sha256"], info["context_json"], refitted, framework)
    fit, cmp = fig.refit, fig.cmp

    above = cmp.filter(pl.col("status") == "above ceiling")
    m1, m2, m3, m4 = (lead if presenting() else st).columns(4)
    m1.metric("Measurements", f"{cmp.height:,}", help="Rows in this dataset.")
    m2.metric("Above their ceiling", f"{above.height:,}", help="Measured faster than physics allows: check them.")
    m3.metric(
        "Median measured / ceiling",
        f"{cmp['ratio'].median():.0%}",
        delta=f"{cmp['expected_ratio'].median():.0%} of expected" if cmp["expected_ratio"].is_not_null().any() else None,
        delta_color="off",
        delta_arrow="off",
        help=f"Measured tokens/s over the datasheet ceiling; below it, over what {framework} is expected to reach.",
    )
    decode = cmp.filter(pl.col("phase") == "decode")
    m4.metric(
        "Median decode MBU", f"{decode['mbu'].median():.0%}" if decode.height else "n/a", help="Achieved bytes/s over peak bandwidth."
    )
    if above.height:
        st.warning(
            f"Rows above their ceiling: {plural(above.height, 'measurement')}, drawn as red crosses, not as normal points. Likely causes: a wrong precision, "
            "a sparse peak, a wrong accelerator or count, or a figure that mixes prefill and decode. See the flags column.",
            icon=":material/warning:",
        )

    table = fig.table
    data_table(table, f"measured vs predicted {names[chosen]}", key="ms_table", csv_key="ms_csv")

    rows = pl.DataFrame() if fig.roofs is not None else dataset_rows(db, chosen)  # the view has its marks: no second read
    roof_chart, batch_chart = measured_charts(cat, rows, fig)
    show_chart(roof_chart.to_dict(validate=False), lead if presenting() else None, width="stretch" if presenting() else "content")
    chart_exports(roof_chart, "measured-roofline", line=f"Dataset {names[chosen]}: {dataset_line(cat, cmp)}")
    if batch_chart is None:
        st.info("No decode or serving measurements: no tokens/s-against-batch curve to draw.", icon=":material/show_chart:")
    else:
        show_chart(batch_chart.to_dict(validate=False))
        chart_exports(batch_chart, "measured-throughput-batch", line=f"Dataset {names[chosen]}: {dataset_line(cat, cmp)}")

    sections = [
        Section(
            f"Dataset {names[chosen]}",
            text=f"{plural(info['row_count'], 'measurement')} · format {info['format']} · imported {info['imported_at']:%Y-%m-%d %H:%M}.",
            figures=(
                ("Measurements", f"{cmp.height:,}"),
                ("Above their ceiling", f"{above.height:,}"),
                ("Median measured / ceiling", f"{cmp['ratio'].median():.0%}"),
                ("Median decode MBU", f"{decode['mbu'].median():.0%}" if decode.height else "n/a"),
            ),
            table=table,
            charts=tuple(c for c in (roof_chart, batch_chart) if c is not None),
            line=f"Dataset {names[chosen]}: {dataset_line(cat, cmp)}",
        )
    ]
    subject = f"Measured vs predicted: dataset {names[chosen]}"
    dataset_gpus = cmp["gpu"].unique().to_list() if "gpu" in cmp.columns else []
    report_of_page("Measured vs predicted: your datasets", None, sections, subject=subject, gpus=dataset_gpus)
    st.subheader("Refit of the predicted model")
    if fit is None:
        st.info("The refit is off: switch it on to fit the predicted model to these rows.", icon=":material/tune:")
    else:
        cells = fit.table().select(
            pl.col("gpu").alias("accelerator"),
            "framework",
            pl.col("points").alias("points used"),
            pl.col("r2").alias("R² of log times"),
            (pl.col("mape_before") * 100).alias("error before (%)"),
            (pl.col("mape_after") * 100).alias("error after (%)"),
            (pl.col("eta_mem_gemm") * 100).alias("GEMM bandwidth share (%)"),
            (pl.col("eta_compute_gemm") * 100).alias("GEMM compute share (%)"),
            (pl.col("overhead_step_s") * 1e3).alias("overhead per step (ms)"),
            "note",
        )
        st.caption(
            "Each accelerator and framework in the dataset gets its own shift of the predicted model's efficiencies and "
            "overheads on top of the fit on the published measurements; the table of rows above shows each row expected before "
            "and after. Errors are mean |expected - measured| / measured over the rows the refit rests on (in sample)."
        )
        data_table(cells, f"refit {names[chosen]}", key="ms_fit", csv_key="ms_fit_csv")
        report_of_page(
            "Measured vs predicted: your datasets",
            None,
            [*sections, Section("Refit of the predicted model", table=cells)],
            subject=subject,
            gpus=dataset_gpus,
        )
        if fit.accepted and st.button(
            "Use this refit on every page",
            icon=":material/tune:",
            key=f"ms_use_refit_{chosen}",
            help="The sidebar's 'Refit on your data' switch then predicts these accelerators and this framework with it.",
        ):
            set_refit(shift_text(fit.accepted), f"dataset {names[chosen]}")
            st.session_state["use_refit"] = True
            st.rerun()


if view == "yours":
    your_view(cat, db)
elif view == "runs":
    runs_view(cat, db, lead, box)
else:
    published_view(cat, lead if presenting() else None, box if presenting() else None)
