"""Compare accelerators for one workload: inside one scale-up domain (the cheapest configuration under a service
target), or as deployments at a request rate past it (expert, pipeline and data parallel, disaggregated prefill and
decode), priced rented or owned."""

from __future__ import annotations

import streamlit as st

from core.model.scenario import default
from pages.compare.deploy import deployments_view
from pages.compare.one_group import one_group_view
from pages.shared.data import catalogue
from pages.shared.params import COMPARE_VIEWS, labels, presenting, scenario

st.title("Compare accelerators")
lead = st.container()  # presentation mode: the best configuration and the frontier lead, the controls fold below them
cat = catalogue()
# the workload is the sidebar's without the ceiling's derating: the search runs on the predicted model (a refit of the
# user's own accelerator included), the ceiling beside it as the bound
sc = scenario().model_copy(update={name: default(name) for name in ("eff_bandwidth", "eff_compute", "overhead_s")})
names = labels(cat, "accelerator")
box = (
    st.expander("Controls: plan, accelerators, workload, target, sort, rent or buy, load", expanded=False)
    if presenting()
    else st.container()
)
view = box.radio(
    "Plan",
    list(COMPARE_VIEWS),
    format_func=COMPARE_VIEWS.__getitem__,
    horizontal=True,
    key="cmp_view",
    bind="query-params",
    help="One scale-up group: a fixed batch or a service target, tensor parallel within one NVLink/xGMI domain. "
    "Deployments: a request rate with p90 targets, served by replicas or by separate prefill and decode pools, with "
    "expert, pipeline and data parallel layouts past one domain.",
)
if not presenting():
    box.caption(
        "The workload (model, weights, compute, KV cache, context, prompt, batch) is the sidebar's scenario; its accelerator and GPU count "
        "are chosen here: per accelerator the cheapest configuration (GPUs × batch, tensor parallel within one scale-up domain)."
        if view == "group"
        else "The model, its formats and the framework are the sidebar's; the request rate, lengths and p90 targets are set here. "
        "Per accelerator the cheapest plan that meets both p90 targets in a simulation of the load, aggregated and disaggregated."
    )
picked = box.multiselect(
    "Accelerators",
    list(names),
    default=["a100-80gb-sxm", "l40s"],
    format_func=names.__getitem__,
    key="cmp_gpus",
    bind="query-params",
    help="Any number of accelerators; each is tried at 1, 2, 4 ... GPUs in tensor parallel, up to its scale-up domain "
    "(8 on an HGX board, 72 in an NVL72 rack, 1 for Apple and Jetson parts); as deployments, at up to 64 GPUs an "
    "instance with expert or pipeline parallelism past the domain.",
)
if view == "deploy":
    deployments_view(cat, sc, names, box, lead, picked)
else:
    one_group_view(cat, sc, names, box, lead, picked)
