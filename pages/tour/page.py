"""Guided tour: the seeds' argument, step by step, on the user's accelerator and model."""

from __future__ import annotations

import polars as pl
import streamlit as st

from core.charts import ridge_bars, roofline_spec
from core.memo import memo
from core.roofline import SWEEP_BATCHES, decode_matmul_intensity, operating_points, ridge_table, roof_lines
from core.tour import batching_table, faster_bandwidth_gpu, moves_table, steps
from pages.shared.state import catalogue, linked, page_param, scenario
from pages.shared.ui import show_chart

st.title("Guided tour")
st.caption(
    "Why decode is memory-bound, why batching helps until the ridge, why attention does not batch, and the three moves: on your scenario."
)
cat = catalogue()
sc = scenario()
tour = memo(steps, cat, sc)
linked("tour_step", tour[0].title)
choice = st.radio("Step", [s.title for s in tour], horizontal=True, key="tour_step", help="Walk the argument in order, or jump to a step.")
page_param("tour_step", choice)
step = next(s for s in tour if s.title == choice)

st.subheader(step.title)
st.markdown(step.text)
paths = memo(operating_points, cat, sc.model_copy(update={"batch": 1}), tuple(SWEEP_BATCHES))  # shared with the roofline page
result_prec = paths["compute_used"][0] or "bf16"
if step.chart in ("roofline", "points"):
    roofs = roof_lines(cat.gpus.filter(pl.col("id") == sc.gpu), [result_prec])
    pts = paths.filter(pl.col("batch") == 1) if step.chart == "points" else paths.clear()
    show_chart(roofline_spec(roofs, pts, None, title=f"{cat.gpu(sc.gpu)['name']} · {result_prec}"))
elif step.chart == "ridges":
    show_chart(
        ridge_bars(
            ridge_table(cat.gpus, result_prec, sc.batch, sc.weights),
            decode_matmul_intensity(sc.batch, sc.weights),
            title=f"Ridge points at {result_prec}",
        )
    )
elif step.chart == "batching":
    roofs = roof_lines(cat.gpus.filter(pl.col("id") == sc.gpu), [result_prec])
    show_chart(
        roofline_spec(
            roofs,
            paths.filter(pl.col("point") == "decode matmul"),
            paths.filter(pl.col("point") == "decode matmul"),
            title="Decode matmuls from batch 1 to 1024",
        )
    )
    st.dataframe(memo(batching_table, cat, sc), hide_index=True, key="tour_batching")
elif step.chart == "attention":
    attn = paths.filter(pl.col("point").is_in(["decode attention", "decode matmul"])).select("point", "batch", "intensity", "bound")
    st.dataframe(
        attn.pivot(on="point", index="batch", values="intensity"),
        hide_index=True,
        key="tour_attention",
        column_config={"decode attention": "decode attention (FLOP/byte)", "decode matmul": "decode matmul (FLOP/byte)"},
    )
elif step.chart == "moves":
    st.dataframe(
        memo(moves_table, cat, sc, faster_bandwidth_gpu(cat, sc.gpu)),
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
