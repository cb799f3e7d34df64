"""Guided tour: the seeds' argument, step by step, on the user's accelerator and model."""

from __future__ import annotations

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.model.roofline import SWEEP_BATCHES, decode_matmul_intensity, operating_points, ridge_table, roof_lines
from core.model.scenario import Scenario
from core.present.charts import ridge_bars, roofline_chart
from core.present.tour import Step, batching_table, faster_bandwidth_gpu, moves_table, steps
from pages.shared.data import HASH_FUNCS, catalogue
from pages.shared.params import scenario
from pages.shared.ui import show_chart

cached = st.cache_data(hash_funcs=HASH_FUNCS, max_entries=64, show_spinner=False)


@cached
def tour(cat: Catalogue, sc: Scenario) -> list[Step]:
    return steps(cat, sc)


@cached
def paths(cat: Catalogue, sc: Scenario) -> pl.DataFrame:
    return operating_points(cat, sc.model_copy(update={"batch": 1}), SWEEP_BATCHES)


@cached
def batching(cat: Catalogue, sc: Scenario) -> pl.DataFrame:
    return batching_table(cat, sc)


@cached
def moves(cat: Catalogue, sc: Scenario) -> pl.DataFrame:
    return moves_table(cat, sc, faster_bandwidth_gpu(cat, sc.gpu))


st.title("Guided tour")
st.caption(
    "Why decode is memory-bound, why batching helps until the ridge, why attention does not batch, and the three moves: on your scenario."
)
cat = catalogue()
sc = scenario()
walk = tour(cat, sc)
choice = st.radio(
    "Step",
    [s.title for s in walk],
    horizontal=True,
    key="tour_step",
    bind="query-params",
    help="Walk the argument in order, or jump to a step.",
)
step = next(s for s in walk if s.title == choice)

st.subheader(step.title)
st.markdown(step.text)
sweep = paths(cat, sc)
prec = sweep["compute_used"][0] or "bf16"
roofs = roof_lines(cat.gpus.filter(pl.col("id") == sc.gpu), [prec])
if step.chart in ("roofline", "points"):
    pts = sweep.filter(pl.col("batch") == 1) if step.chart == "points" else sweep.clear()
    show_chart(roofline_chart(roofs, pts, None, title=f"{cat.gpu(sc.gpu).name} · {prec}").to_dict(validate=False))
elif step.chart == "ridges":
    ridges = ridge_table(cat.gpus, prec, sc.batch, sc.weights)
    show_chart(ridge_bars(ridges, decode_matmul_intensity(sc.batch, sc.weights), title=f"Ridge points at {prec}").to_dict(validate=False))
elif step.chart == "batching":
    matmuls = sweep.filter(pl.col("point") == "decode matmul")
    show_chart(roofline_chart(roofs, matmuls, matmuls, title="Decode matmuls from batch 1 to 1024").to_dict(validate=False))
    st.dataframe(batching(cat, sc), hide_index=True, key="tour_batching")
elif step.chart == "attention":
    attn = sweep.filter(pl.col("point").is_in(["decode attention", "decode matmul"])).select("point", "batch", "intensity", "bound")
    st.dataframe(
        attn.pivot(on="point", index="batch", values="intensity"),
        hide_index=True,
        key="tour_attention",
        column_config={"decode attention": "decode attention (FLOP/byte)", "decode matmul": "decode matmul (FLOP/byte)"},
    )
elif step.chart == "moves":
    st.dataframe(
        moves(cat, sc),
        hide_index=True,
        key="tour_moves",
        column_config={
            "tokens_per_s_per_user": st.column_config.NumberColumn("tokens/s per user", format="%.1f"),
            "tokens_per_s_total": st.column_config.NumberColumn("tokens/s total", format="%.1f"),
            "step_time_ms": st.column_config.NumberColumn("step time (ms)", format="%.2f"),
        },
    )

st.markdown("**Check yourself**")
for question, answer in step.questions:
    with st.expander(question):
        st.markdown(answer)
