"""Guided tour: the seeds' argument, step by step, on the user's accelerator and model."""

from __future__ import annotations

import polars as pl
import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.model.roofline import SWEEP_BATCHES, decode_matmul_intensity, operating_points, ridge_table, roof_lines
from core.model.scenario import Scenario
from core.present.charts import roofline_chart
from core.present.report import Section
from core.present.ridge_charts import ridge_chart
from core.present.text import plain
from core.present.tour import Step, batching_table, moves_table, steps
from pages.shared.data import HASH_FUNCS, catalogue
from pages.shared.params import presenting, scenario
from pages.shared.sidebar import report_of_page
from pages.shared.ui import data_table, show_chart

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
    return moves_table(cat, sc)


st.title("Guided tour")
lead = st.container()  # presentation mode: the step's title and chart lead, its text and the step picker below them
if not presenting():
    st.caption(
        "Why decode is memory-bound, why batching helps until the ridge, why attention does not batch, and the three moves: on your scenario."
    )
box = st.expander("Controls: the tour's step", expanded=False) if presenting() else st.container()


def draw(spec: dict[str, object]) -> None:
    """The step's chart: at full width under the step's text, ahead of everything else, in presentation mode."""
    show_chart(spec, lead if presenting() else None, width="stretch" if presenting() else "content")


#: The roofline's plot height (px) and its legends' place: normal and presentation mode (the step's text above it).
TOUR_ROOFLINE = {False: (440, "bottom"), True: (420, "right")}


cat = catalogue()
sc = scenario()
walk = tour(cat, sc)
choice = box.radio(
    "Step",
    [s.title for s in walk],
    horizontal=True,
    key="tour_step",
    bind="query-params",
    help="Walk the argument in order, or jump to a step.",
)
step = next(s for s in walk if s.title == choice)

(lead if presenting() else st).subheader(step.title)
st.markdown(step.text)  # presentation mode: under the chart, which follows the step's title
plot_height, legend = TOUR_ROOFLINE[presenting()]
sweep = paths(cat, sc)
prec = sweep["compute_used"][0] or "bf16"
roofs = roof_lines(cat.gpus.filter(pl.col("id") == sc.gpu), [prec])
if step.chart in ("roofline", "points"):
    pts = sweep.filter(pl.col("batch") == 1) if step.chart == "points" else sweep.clear()
    draw(
        roofline_chart(roofs, pts, None, title=f"{cat.gpu(sc.gpu).name} · {prec}", height=plot_height, legend=legend).to_dict(
            validate=False
        )
    )
elif step.chart == "ridges":
    ridges = ridge_table(cat.gpus, prec, sc.batch, sc.weights)
    draw(
        ridge_chart(
            ridges,
            decode_matmul_intensity(sc.batch, sc.weights),
            highlight=sc.gpu,
            title=f"Ridge points at {prec}",
            batch=sc.batch,
            fit=plot_height if presenting() else None,
        ).to_dict(validate=False)
    )
elif step.chart == "batching":
    matmuls = sweep.filter(pl.col("point") == "decode matmul")
    chart = roofline_chart(roofs, matmuls, matmuls, title="Decode matmuls from batch 1 to 1,024", height=plot_height, legend=legend)
    draw(chart.to_dict(validate=False))
    table = batching(cat, sc)
    data_table(table, "batching", key="tour_batching", download=False)
elif step.chart == "attention":
    attn = sweep.filter(pl.col("point").is_in(["decode attention", "decode matmul"])).select("point", "batch", "intensity", "bound")
    data_table(
        attn.pivot(on="point", index="batch", values="intensity"),
        "attention against matmul",
        key="tour_attention",
        download=False,
        column_config={
            "batch": st.column_config.NumberColumn("batch (sequences)", format="%,d"),
            "decode attention": st.column_config.NumberColumn("decode attention (FLOP/byte)", format="%,.3g"),
            "decode matmul": st.column_config.NumberColumn("decode matmul (FLOP/byte)", format="%,.3g"),
        },
    )
elif step.chart == "moves":
    table = moves(cat, sc)
    data_table(table, "three moves", key="tour_moves", download=False)

st.markdown("**Check yourself**")
for question, answer in step.questions:
    with st.expander(question):
        st.markdown(answer)

report_of_page(
    "Guided tour",
    sc,
    [
        Section(
            f"Tour step {step.title}",
            text=plain(step.text) + " Check yourself: " + " ".join(f"{q} {plain(a)}" for q, a in step.questions),
        )
    ],
)
