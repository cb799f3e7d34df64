"""The shared sidebar: the scenario's controls, presentation mode, the refit on your data, the link and the report."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.evidence.probes import measured_line
from core.model.predicted import FRAMEWORKS
from core.model.scenario import Scenario
from core.present.exports import scenario_line
from core.present.figures import roofline_at, roofline_view
from core.present.report import Section, report_html
from core.present.text import escape_markdown
from pages.shared.data import catalogue
from pages.shared.params import (
    current_page,
    link_messages,
    presenting,
    scenario,
    share_link,
    write_refit,
)
from pages.shared.widgets import accelerator_input, format_input, model_input, scenario_input


def scenario_sidebar(cat: Catalogue) -> tuple[Any, Any]:
    """Draw the scenario's controls (folded into one line in presentation mode); returns the container for link notes
    and the place of that line (subject_line writes the page's own subject there, once the page has named it)."""
    with st.sidebar:
        notes = st.container()
        for message in link_messages():
            notes.warning(message, icon=":material/link_off:")
        st.toggle(
            "Presentation mode",
            key="present",
            bind="query-params",
            help="Fold the controls away, enlarge the charts and lead with the headline figure.",
        )
        line = st.empty()
        box = st.expander("Scenario controls", expanded=False, icon=":material/tune:") if presenting() else st.container()
        with box:
            st.subheader("Scenario", help="Shared by every page and kept in the page's link.")
            accelerator_input(cat)
            scenario_input("num_gpus")
            model_input(cat)
            c1, c2 = st.columns(2)
            format_input("weights", c1)
            format_input("kv", c2)
            format_input("compute")
            scenario_input("batch")
            scenario_input("context")
            scenario_input("prompt")
            scenario_input("framework", options=FRAMEWORKS)
        if presenting():
            line.markdown(f"**{_summary(cat)}**")
        _measured_switch(cat)
        _refit_switch()
    return notes, line


def subject_line(line: Any) -> None:
    """Presentation mode: the sidebar's one line names what the page shows where its subject is not the sidebar's
    scenario (a comparison, a sweep, a dataset: the subject it gave report_of_page this run)."""
    held = st.session_state.get(_REPORT)
    if presenting() and held and held["page"] == current_page() and held["subject"]:
        line.markdown(f"**{escape_markdown(held['subject'])}**")


def _summary(cat: Catalogue) -> str:
    """The scenario in one line (presentation mode)."""
    return escape_markdown(scenario_line(cat, scenario()))


def _measured_switch(cat: Catalogue) -> None:
    """Measured roofs: compute with the probe's figures where a profile exists (drawn always, so links keep it)."""
    has = not cat.profiles.is_empty()
    on = st.toggle(
        "Measured roofs",
        key="measured",
        bind="query-params",
        disabled=not has and not st.session_state.get("measured"),
        help="Compute with the bandwidth and peaks your probe measured (python -m core.probe, imported on the catalogue page) "
        "instead of the datasheet's, on every page but the roofline and the catalogue, which show both. "
        + ("" if has else "No measured profile yet: import a probe on the catalogue page."),
    )
    if on:
        line = measured_line(cat, scenario().gpu)
        st.caption(line or f"{escape_markdown(cat.gpu(scenario().gpu).name)} has no measured profile: its datasheet figures apply.")


def _refit_switch() -> None:
    """The refit of the predicted model on your measurements (the measured page offers it): on, every page predicts the
    refitted accelerators and frameworks with it; off, with the shipped fit."""
    held = st.session_state.get("refit")
    if not held:
        st.session_state["use_refit"] = False
        return
    cells = [part.split("|")[:2] for part in held["text"].split(";") if part]
    st.toggle(
        "Refit on your data",
        key="use_refit",
        help=f"Predict with the model refitted on {held['source']} for "
        + ", ".join(f"{g} with {f}" for g, f in cells)
        + " (each refit applies to its own accelerator and framework only; the ceiling does not change).",
    )


_REPORT = "_report"


def report_of_page(
    title: str, sc: Scenario | None = None, sections: Sequence[Section] = (), *, subject: str | None = None, gpus: Sequence[str] = ()
) -> None:
    """Say what the sidebar's report holds for the page being drawn: the page's name, its scenario (its own options
    in it; None: the sidebar's) and what it shows beyond the scenario's figures. A page whose subject is not the
    scenario (a comparison, a sweep, a dataset) names it: the report is titled by it and leads with the page's sections,
    and cites the sources of `gpus`. Called by the page each run."""
    st.session_state[_REPORT] = {
        "page": current_page(),
        "title": title,
        "scenario": sc,
        "sections": tuple(sections),
        "subject": subject,
        "gpus": tuple(gpus),
    }


def _roofline_sections(sc: Scenario, compare: Sequence[str], precisions: Sequence[str]) -> list[Section]:
    """The roofline page's view for its report: its chart with the overlay accelerators (`compare`) and precisions
    chosen, as the page's controls held them in the run that drew the report's button."""
    cat = catalogue(datasheet=True)  # as the page draws it: datasheet roofs beside the measured ones
    overlay = [g for g in compare if g in cat.gpu_index and g != sc.gpu]
    precisions = list(precisions)
    view = roofline_view(cat, sc.model_copy(update={"batch": 1}), overlay, precisions)
    shown = roofline_at(cat, view, sc, operations=False)
    step = shown.points.filter(pl.col("point") == "decode step").row(0, named=True)
    names = [cat.gpu(g).name for g in overlay]
    text = (
        f"Roofs of {cat.gpu(sc.gpu).name}" + (f" with {', '.join(names)} overlaid" if names else "") + " at "
        f"{', '.join(precisions) if precisions else 'the compute format the scenario uses'}; efficiencies: bandwidth "
        f"{sc.eff_bandwidth:.0%}, compute {sc.eff_compute:.0%}."
    )
    figures = ((f"Decode at batch {sc.batch:,}", f"{step['bound']}-bound, {step['share_of_peak']:.1%} of peak compute"),)
    return [Section("Roofline, as on the page", text=text, figures=figures, charts=(shown.chart,))]


def share_panel(cat: Catalogue) -> None:
    """Sidebar footer: the link to this view (in a popover, with a copy button) and the page's HTML report.

    The report is of the page being viewed: the scenario and sections the page registered this run
    (`report_of_page`), else the page's scenario (the roofline's chart with its overlays is added here)."""
    sc = scenario()
    write_refit()
    held = st.session_state.pop(_REPORT, None)
    held = held if held and held["page"] == current_page() else {"title": "", "scenario": None, "sections": (), "subject": None, "gpus": ()}
    page, report_sc = held["title"], held["scenario"] or sc

    # read now: the report is made when its button is pressed, outside this run, where the page's controls are not
    chosen = (list(st.session_state.get("rf_compare") or []), list(st.session_state.get("rf_precisions") or []))

    def report() -> bytes:
        sections = held["sections"] or (_roofline_sections(report_sc, *chosen) if current == "roofline" else ())
        return report_html(
            cat, report_sc, page=page or current.title(), sections=sections, subject=held["subject"], gpus=held["gpus"]
        ).encode("utf-8")

    current = current_page()
    with st.sidebar:
        st.divider()
        # the link opens in a popover, whose content the browser draws only once opened: st.code's copy button
        # loads a syntax highlighter, about 0.25 s of the browser's main thread on every new tab otherwise
        with st.popover(
            "Share this view",
            icon=":material/share:",
            width="stretch",
            help="A link to this view: it reproduces this page, the scenario and the page's controls on any server.",
        ):
            st.caption("This page, its scenario and its controls, on any server running Roofline Explorer:")
            st.code(share_link(cat), language=None, wrap_lines=True)
        st.download_button(
            ":material/description: Report (HTML)",
            report,
            file_name=(
                f"{current}-{_slug(held['subject'])}.html"
                if held["subject"]
                else f"{current}-{report_sc.model}-on-{report_sc.num_gpus}x{report_sc.gpu}.html"
            ),
            mime="text/html",
            key="report_download",
            on_click="ignore",
            help="One self-contained HTML file of this page as it is: its scenario's headline figures, what the page shows "
            "(tables, charts as SVG), the per-operation table, assumptions and sources.",
        )
    if st.session_state.get("use_refit"):
        st.sidebar.caption("Refit on your data: on (predictions of the refitted accelerators use it).")


def _slug(text: str) -> str:
    """A file name's part from a subject: lower-case words joined by hyphens, at most 80 characters."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")[:80] or "report"
