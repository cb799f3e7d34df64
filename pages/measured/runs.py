"""The measured page's datasets: each one set against the model (cached per process), and two or more side by side."""

from __future__ import annotations

from typing import Any

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.evidence.importers import dataset_rows, list_datasets
from core.evidence.refit import framework_of
from core.evidence.runs import compare_runs
from core.present.figures import MeasuredView, measured_view
from core.present.report import Section
from core.present.runs import runs_chart, runs_headline, runs_table
from core.present.text import escape_markdown, plural
from core.store import is_session_dataset
from pages.shared.data import HASH_FUNCS
from pages.shared.params import presenting, scenario
from pages.shared.sidebar import report_of_page
from pages.shared.ui import chart_exports, data_table, show_chart

#: The most runs one comparison shows (colours stay distinct, the table readable).
MAX_RUNS = 6


# cache_resource, not cache_data: a view of a million rows is handed back as it is, not pickled again on every rerun;
# the page only reads it
@st.cache_resource(hash_funcs=HASH_FUNCS, max_entries=16, show_spinner="Setting the measurements against their ceilings…")
def figures(
    cat: Catalogue, _db: Any, _dataset_id: int, file_sha256: str, context_json: str, refitted: bool, framework: str
) -> MeasuredView:
    """A dataset against the model. Its rows are the file's and the import's context: those key it (in any session's store)."""
    return measured_view(cat, dataset_rows(_db, _dataset_id), refitted, framework)


def dataset_labels(datasets: pl.DataFrame) -> dict[int, str]:
    """Each dataset's label as the pickers show it (and a link names it): its name and id, or 'this session only'."""
    names = dict(zip(datasets["id"], datasets["name"], strict=True))
    return {i: f"{names[i]} (this session only)" if is_session_dataset(i) else f"{names[i]} (#{i})" for i in names}


def runs_view(cat: Catalogue, db: Any, lead: Any, box: Any) -> None:
    """Two or more of the user's datasets aligned on their scenarios: the table of deltas and ratios, the chart, the report."""
    datasets = list_datasets(db)
    if datasets.height < 2:
        st.info(
            f"Comparing runs needs two datasets or more; {plural(datasets.height, 'dataset')} stored. Import your runs under "
            "'Show: Your datasets' (before and after an upgrade, vLLM and SGLang, H100 and MI300X ...), then pick them here.",
            icon=":material/compare_arrows:",
        )
        return
    labels = dataset_labels(datasets)
    by_label = {label: i for i, label in labels.items()}
    held = st.session_state.get("ms_runs")
    if held:
        gone = [x for x in held if x not in by_label]
        if gone:  # deleted or renamed meanwhile: said, and the rest kept
            st.warning(
                f"No longer stored (deleted or renamed): {', '.join(escape_markdown(str(x)) for x in gone)}; compared without them.",
                icon=":material/warning:",
            )
            st.session_state["ms_runs"] = [x for x in held if x in by_label]
    picked = box.multiselect(
        "Runs to compare",
        list(by_label),
        key="ms_runs",
        bind="query-params",
        max_selections=MAX_RUNS,
        placeholder="Pick two datasets or more",
        help="The first one picked is the baseline: every other run gets its difference from it and its ratio to it at each "
        "scenario both hold. Rows are aligned on accelerator × count, model, formats, phase, batch and lengths, except what "
        "the runs differ in (one value per run: e.g. the accelerator). The link names the runs.",
    )
    if len(picked) < 2:
        st.info("Pick two datasets or more above; the first is the baseline.", icon=":material/compare_arrows:")
        return
    now = scenario()
    runs = []
    for label in picked:
        info = datasets.filter(pl.col("id") == by_label[label]).row(0, named=True)
        framework = framework_of(info["format"], now.framework)
        fig = figures(cat, db, info["id"], info["file_sha256"], info["context_json"], False, framework)
        runs.append((label, fig.cmp))
    result = compare_runs(runs)
    where = lead if presenting() else st
    m1, m2, m3 = where.columns(3)
    m1.metric("Runs", f"{len(result.labels)}", help=f"The baseline is {result.labels[0]}.")
    m2.metric("Scenarios every run holds", f"{result.matched:,}", help="Aligned scenarios with a row in every run picked.")
    m3.metric("Unmatched rows", f"{result.unmatched:,}", help="Scenarios only one run holds: listed in the table, not dropped.")
    lines = runs_headline(cat, result)
    for line in [*lines, *result.notes]:
        where.markdown(escape_markdown(line))
    table = runs_table(cat, result)
    data_table(table, f"runs {' vs '.join(result.labels)}", key="ms_runs_table", csv_key="ms_runs_csv")
    chart = runs_chart(cat, result)
    subject = f"Runs compared: {' vs '.join(result.labels)}"
    if chart is None:
        st.info("No decode or serving rows in these runs: no per-user against per-GPU chart to draw.", icon=":material/show_chart:")
    else:
        show_chart(chart.to_dict(validate=False), lead if presenting() else None, width="stretch" if presenting() else "content")
        chart_exports(chart, "runs-compared", line=subject)
    section = Section(
        subject,
        text=" ".join([*lines, *result.notes]),
        figures=(
            ("Runs", f"{len(result.labels)}"),
            ("Baseline", result.labels[0]),
            ("Scenarios every run holds", f"{result.matched:,}"),
            ("Unmatched rows", f"{result.unmatched:,}"),
        ),
        table=table,
        charts=(chart,) if chart is not None else (),
        line=subject,
    )
    gpus = sorted({g for _, rows in runs for g in rows["gpu"].cast(pl.String).unique().to_list()})
    report_of_page("Measured vs predicted: runs compared", None, [section], subject=subject, gpus=gpus)
