"""Roofline: the roofs of one or several accelerators with the model's operating points."""

from __future__ import annotations

import time
from typing import Any

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.evidence.probes import made_from_probe, measured_line
from core.model.roofline import SWEEP_BATCHES
from core.model.scenario import Scenario
from core.present.figures import RooflineAt, roofline_at
from core.present.predicted import expected_tokens
from core.present.text import escape_markdown, plural, si
from pages.roofline.terms import explain_terms
from pages.shared.data import HASH_FUNCS, catalogue, roofline_view_of
from pages.shared.params import labels, presenting, scenario
from pages.shared.ui import chart_exports, data_table, evidence_panel, folded, keep_options, show_chart
from pages.shared.widgets import derating_inputs

PRECISIONS = ["fp4", "fp6", "fp8", "int8", "bf16", "fp16", "tf32", "fp32"]


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=256, show_spinner=False)
def at(
    cat: Catalogue, sc: Scenario, overlay: tuple[str, ...], precisions: tuple[str, ...], big: bool, operations: bool = True
) -> RooflineAt:
    return roofline_at(cat, roofline_view_of(cat, sc, overlay, precisions), sc, big=big, operations=operations)


st.title("Roofline")
cat = catalogue(datasheet=True)
names = labels(cat, "accelerator")
big = presenting()
# presentation mode leads with the headline and the chart, the controls folded under them; the slot is drawn in
# both modes, so the elements above the bound controls never change from one run to the next
lead = st.container()
controls = st.expander("Controls: overlay accelerators, precisions, efficiencies", expanded=False) if big else st.container()
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
derating_inputs({"eff_bandwidth": c3, "eff_compute": c3})

sc, lines = scenario(), (tuple(overlay), tuple(precisions))
FRAME_S = 0.35  # how long Play shows each batch of the sweep


def _play() -> None:
    st.session_state["rf_playing"] = True
    st.session_state["_rf_at"] = SWEEP_BATCHES[0]


def _stop(keep: int | None) -> None:
    """Stop Play; `keep`, the frame the button was drawn with: make it the scenario's batch (the sidebar's, the
    link's), the whole page redrawn."""
    st.session_state["rf_playing"] = False
    if keep is not None:
        st.session_state["batch"] = keep
        st.session_state["_rf_whole_page"] = True


@st.fragment
def roofline_panel() -> RooflineAt:
    """Play's controls, the headline, the chart and the batch line; while playing, the frames of the sweep.

    A frame of Play reruns only this fragment: the batch shown moves with the frame bar and the headline,
    while the scenario's batch (the sidebar's, the link's) stays as the user set it, unless they stop on a frame.
    """
    if st.session_state.pop("_rf_whole_page", False):
        st.rerun()  # the batch stopped on is the scenario's now: every figure of the page changes
    playing = bool(st.session_state.get("rf_playing"))
    head = st.empty()  # the headline leads, above Play
    # one placeholder for Play's controls: each frame replaces them whole (a frame cut short by the next leaves none stale)
    row = st.empty().container(horizontal=True, vertical_alignment="center")
    # Play first in both states (disabled while it plays): the row keeps its first element from frame to frame
    row.button(
        "Play",
        icon=":material/play_arrow:",
        key="rf_play",
        on_click=_play,
        disabled=playing,
        help="Sweep the batch from 1 to 1,024 and watch the points move; the scenario's batch stays as it is.",
    )
    if playing:
        frame = int(st.session_state.get("_rf_at", SWEEP_BATCHES[0]))
        step = SWEEP_BATCHES.index(frame) + 1
        row.progress(
            step / len(SWEEP_BATCHES), text=f"Play: batch {frame:,} · frame {step} of {len(SWEEP_BATCHES)} (1 to 1,024)", width=420
        )
        row.button(
            "Stop", icon=":material/stop:", key="rf_stop", on_click=_stop, args=(None,), help="Stop and show the scenario's batch again."
        )
        row.button(
            "Use this batch",
            icon=":material/check:",
            key="rf_keep",
            on_click=_stop,
            args=(frame,),
            help="Stop here and make this batch the scenario's (the sidebar's and the link's).",
        )
        shown_batch = frame
        shown = at(cat, sc.model_copy(update={"batch": frame}), *lines, big, operations=False)
    else:
        shown_batch, shown = sc.batch, at(cat, sc, *lines, big)
    draw(shown, shown_batch, head)
    if playing:
        time.sleep(FRAME_S)
        if st.session_state.get("rf_playing"):  # not stopped meanwhile
            later = [b for b in SWEEP_BATCHES if b > shown_batch]
            if later:
                st.session_state["_rf_at"] = later[0]
            else:  # the sweep is over: back to the scenario's batch
                st.session_state["rf_playing"] = False
            st.rerun(scope="fragment")
    return shown


def draw(shown: RooflineAt, batch: int, head: Any) -> None:
    """The headline (into `head`), the chart and the batch line of one batch."""
    step = shown.points.filter(pl.col("point") == "decode step").row(0, named=True)
    head.metric(
        f"Decode at batch {batch:,}: {step['bound']}-bound",
        f"{step['share_of_peak']:.1%} of peak compute",
        help=f"Whole decode step at {step['intensity']:.1f} FLOP/byte against a ridge of {step['ridge']:.0f} FLOP/byte.",
    )
    show_chart(shown.chart, width="stretch")
    matmul = shown.points.filter(pl.col("point") == "decode matmul")["intensity"][0]
    r = shown.result
    expected = f" · {expected_tokens(r)}" if r.predicted_tokens_per_s_total else ""
    bound = f"ceiling {si(r.tokens_per_s_total)} tokens/s" if r.tokens_per_s_total else "does not fit in memory"
    st.markdown(f"**Batch {batch:,}** · decode matmul at {matmul:.1f} FLOP/byte · {bound}{expected}")


# this runs on a whole-page run only (a frame of Play reruns the fragment alone): another control changed, Play ends
st.session_state["rf_playing"] = False
with lead if big else st.container():
    roofline_panel()
shown = at(cat, sc, *lines, big)
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

ops = shown.operations
assert ops is not None
# folded: redrawn at every batch, the table cost a key press about 15 ms (paired browser runs); opened, it stays
if box := folded(
    f"Decode step, operation by operation ({plural(ops.height, 'operation')})", key="rf_ops_open", icon=":material/table_rows:"
):
    with box:
        data_table(ops, "decode operations", key="rf_ops")
explain_terms()
