"""Roofline: the roofs of one or several accelerators with the model's operating points."""

from __future__ import annotations

import time

import polars as pl
import streamlit as st

from core.ceilings import ceiling, ceilings_by_batch, operation_table
from core.charts import roofline_spec
from core.memo import memo
from core.precisions import PEAK_PRECISIONS, default_compute, effective_compute
from core.roofline import SWEEP_BATCHES, operating_points, plain_reading, roof_lines
from core.tables import operations_display
from pages.roofline.terms import explain_terms
from pages.shared.state import (
    calibration_factors,
    catalogue,
    current,
    linked,
    page_param,
    presenting,
    request,
    scenario,
    set_now,
    split_list,
)
from pages.shared.ui import chart_exports, show_chart, table_download

st.title("Roofline")
cat = catalogue()
state = current()
sc = scenario()
gpu_names = dict(zip(cat.gpus["id"], cat.gpus["name"], strict=True))
used, _ = effective_compute(sc.compute or default_compute(sc.weights), {p: cat.gpu(sc.gpu)[f"peak_{p}"] for p in PEAK_PRECISIONS})

big = presenting()
controls = st.expander("Controls", expanded=False) if big else st.container()
c1, c2, c3 = controls.columns([3, 2, 2])
linked("rf_precisions", [used or "bf16"], split_list)
linked("rf_eff_b", 1.0, float)
linked("rf_eff_c", 1.0, float)
others = c1.multiselect(
    "Overlay accelerators",
    [g for g in gpu_names if g != sc.gpu],
    default=[g for g in state["compare"].split(",") if g and g != sc.gpu],
    format_func=gpu_names.get,
    help="Draw other accelerators' roofs beside the scenario's.",
    key="rf_compare",
    on_change=lambda: set_now(compare=",".join(st.session_state["rf_compare"])),
)
precisions = c2.multiselect(
    "Precisions",
    ["fp4", "fp6", "fp8", "int8", "bf16", "fp16", "tf32", "fp32"],
    help="Compute roofs to draw (dense peaks). Unsupported precisions draw no roof.",
    key="rf_precisions",
)
eff_b = c3.slider(
    "Bandwidth efficiency",
    0.3,
    1.0,
    step=0.05,
    key="rf_eff_b",
    help="Share of peak bandwidth reachable in practice; below 1 a derated roof is drawn.",
)
eff_c = c3.slider("Compute efficiency", 0.3, 1.0, step=0.05, key="rf_eff_c", help="Share of peak FLOP/s reachable in practice.")
for name, value in (("rf_precisions", precisions), ("rf_eff_b", eff_b), ("rf_eff_c", eff_c)):
    page_param(name, value)
b1, b2 = controls.columns([6, 1])
if st.session_state.get("rf_batch", sc.batch) != sc.batch:
    st.session_state["rf_batch"] = sc.batch  # the shared batch changed elsewhere (sidebar, Play, link)
b1.select_slider(
    "Decode batch",
    sorted({*SWEEP_BATCHES, sc.batch}),
    value=sc.batch,
    key="rf_batch",
    help="Sequences decoded together (shared with every page).",
    on_change=lambda: set_now(batch=st.session_state["rf_batch"]),
)
play = b2.button("Play", icon=":material/play_arrow:", help="Sweep the batch from 1 to 1024 and watch the points move.", key="rf_play")

sc = scenario(eff_bandwidth=eff_b, eff_compute=eff_c)
# what does not depend on the batch is computed once per scenario and shared across reruns and sessions
at_batch_1 = sc.model_copy(update={"batch": 1})
ladder = memo(ceilings_by_batch, cat, at_batch_1, tuple(SWEEP_BATCHES))
result = ladder[sc.batch] if sc.batch in ladder else memo(ceiling, cat, sc)
headline = st.empty()
gpus = cat.gpus.filter(pl.col("id").is_in([sc.gpu, *others]))
roofs = roof_lines(gpus, precisions or [result["compute_used"]], eff_bandwidth=sc.eff_bandwidth, eff_compute=sc.eff_compute)
if calibration_factors():
    c3.caption(
        f"Calibrated model on (sidebar): bandwidth {sc.eff_bandwidth:.0%}, compute {sc.eff_compute:.0%}, {sc.overhead_s * 1e3:.2f} ms/step."
    )
paths = memo(operating_points, cat, at_batch_1, tuple(SWEEP_BATCHES))
title = f"{cat.model(sc.model).name} on {sc.num_gpus} × {gpu_names[sc.gpu]} · weights {sc.weights}, KV {sc.kv}"
chart_box, batch_label = st.empty(), st.empty()


def points_at(batch: int) -> pl.DataFrame:
    """Operating points at one batch (the paths already hold every power of two)."""
    if batch in SWEEP_BATCHES:
        return paths.filter(pl.col("batch") == batch)
    return memo(operating_points, cat, sc.model_copy(update={"batch": batch}))


def draw(batch: int) -> tuple[dict[str, object], pl.DataFrame]:
    pts = points_at(batch)
    chart = roofline_spec(roofs, pts, paths, title=title, **({"width": 1080, "height": 620} if big else {}))
    show_chart(chart, chart_box)
    matmul = pts.filter(pl.col("point") == "decode matmul")["intensity"][0]
    batch_label.markdown(f"**Batch {batch}** · decode matmul at {matmul:.1f} FLOP/byte")
    return chart, pts


if play:
    for b in SWEEP_BATCHES:
        draw(b)
        time.sleep(0.35)
    request(batch=SWEEP_BATCHES[-1])
    st.rerun()
chart, points = draw(sc.batch)
step = points.filter(pl.col("point") == "decode step").row(0, named=True)
headline.metric(
    f"Decode at batch {sc.batch}: {step['bound']}-bound",
    f"{step['share_of_peak']:.1%} of peak compute",
    help=f"Whole decode step at {step['intensity']:.1f} FLOP/byte against a ridge of {step['ridge']:.0f} FLOP/byte.",
)
chart_exports(chart, "roofline")
st.info(plain_reading(points, result), icon=":material/lightbulb:")

st.subheader("Decode step, operation by operation")
ops = operations_display(memo(operation_table, cat, sc))
st.dataframe(
    ops,
    hide_index=True,
    key="rf_ops",
    column_config={c: st.column_config.NumberColumn(format="%.3g") for c in ops.columns[3:] if c != "bound"},
)
table_download(ops, "decode operations")
explain_terms()
