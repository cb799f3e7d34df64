"""Roofline: the roofs of one or several accelerators with the model's operating points."""

from __future__ import annotations

import time

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.evidence.probes import made_from_probe, measured_line
from core.model.roofline import SWEEP_BATCHES
from core.model.scenario import Scenario
from core.present.figures import RooflineAt, RooflineView, roofline_at, roofline_view
from core.present.text import escape_markdown
from pages.roofline.terms import explain_terms
from pages.shared.data import HASH_FUNCS, catalogue
from pages.shared.params import labels, presenting, scenario
from pages.shared.ui import chart_exports, evidence_panel, keep_options, show_chart, table_download
from pages.shared.widgets import calibrated_inputs

PRECISIONS = ["fp4", "fp6", "fp8", "int8", "bf16", "fp16", "tf32", "fp32"]


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=64, show_spinner=False)
def view(cat: Catalogue, sc: Scenario, overlay: tuple[str, ...], precisions: tuple[str, ...]) -> RooflineView:
    return roofline_view(cat, sc.model_copy(update={"batch": 1}), overlay, precisions)


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=256, show_spinner=False)
def at(
    cat: Catalogue, sc: Scenario, overlay: tuple[str, ...], precisions: tuple[str, ...], big: bool, operations: bool = True
) -> RooflineAt:
    return roofline_at(cat, view(cat, sc, overlay, precisions), sc, big=big, operations=operations)


st.title("Roofline")
cat = catalogue(datasheet=True)
names = labels(cat, "accelerator")
big = presenting()
controls = st.expander("Controls", expanded=False) if big else st.container()
c1, c2, c3 = controls.columns([3, 2, 2])
gpu = scenario().gpu
others = [g for g in names if g != gpu]
keep_options("rf_compare", others)
overlay = c1.multiselect(
    "Overlay accelerators",
    others,
    format_func=names.__getitem__,
    key="rf_compare",
    bind="query-params",
    help="Draw other accelerators' roofs beside the scenario's.",
)
precisions = c2.multiselect(
    "Precisions",
    PRECISIONS,
    key="rf_precisions",
    bind="query-params",
    placeholder="the scenario's compute format",
    help="Compute roofs to draw (dense peaks); empty: the format the scenario computes in. Unsupported precisions draw no roof.",
)
calibrated_inputs({"eff_bandwidth": c3, "eff_compute": c3})
play = controls.button(
    "Play", icon=":material/play_arrow:", help="Sweep the batch from 1 to 1024 and watch the points move.", key="rf_play"
)

sc, lines = scenario(), (tuple(overlay), tuple(precisions))
headline, chart_box, batch_label = st.empty(), st.empty(), st.empty()


def draw(shown: RooflineAt, batch: int) -> None:
    """The headline, the chart and the batch line of one batch."""
    step = shown.points.filter(pl.col("point") == "decode step").row(0, named=True)
    headline.metric(
        f"Decode at batch {batch}: {step['bound']}-bound",
        f"{step['share_of_peak']:.1%} of peak compute",
        help=f"Whole decode step at {step['intensity']:.1f} FLOP/byte against a ridge of {step['ridge']:.0f} FLOP/byte.",
    )
    show_chart(shown.chart, chart_box, width="stretch" if big else "content")
    matmul = shown.points.filter(pl.col("point") == "decode matmul")["intensity"][0]
    batch_label.markdown(f"**Batch {batch}** · decode matmul at {matmul:.1f} FLOP/byte")


if play:  # the frames of the sweep; the scenario's batch stays as it is
    for b in SWEEP_BATCHES:
        draw(at(cat, sc.model_copy(update={"batch": b}), *lines, big, operations=False), b)
        time.sleep(0.35)
shown = at(cat, sc, *lines, big)
draw(shown, sc.batch)
chart_exports(shown.chart, "roofline")
for shown_gpu in [sc.gpu, *overlay]:
    if line := measured_line(cat, shown_gpu):
        dashed = "" if made_from_probe(cat.gpu(shown_gpu)) else "; dashed: the measured roofs"
        st.caption(
            f"{escape_markdown(names[shown_gpu])}: {line}{dashed}; hollow squares: the products the probe timed "
            "(decode-like m = 1 to 64 rows, prefill-like, square), where they reached.",
            help="From the newest probe imported on the catalogue page (python -m core.probe).",
        )
st.info(shown.reading, icon=":material/lightbulb:")
evidence_panel(cat, [sc.gpu, *overlay], sc.model, key="rf_evidence")

st.subheader("Decode step, operation by operation")
ops = shown.operations
assert ops is not None
st.dataframe(
    ops,
    hide_index=True,
    key="rf_ops",
    column_config={c: st.column_config.NumberColumn(format="%.3g") for c in ops.columns[3:] if c != "bound"},
)
table_download(ops, "decode operations")
explain_terms()
