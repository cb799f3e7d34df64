"""The shared scenario sidebar: one dict in the session, mirrored into the URL."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.catalogue import Catalogue, load_catalogue
from core.precisions import FALLBACK_CHAIN, FORMATS
from core.scenario_state import DEFAULTS, LIMITS, compute_or_none, from_query_params, to_query_params
from core.specs import Scenario
from core.store import Store, get_store

KEY = "sc_"


@st.cache_resource(show_spinner="Opening the store…")
def store() -> Store:
    """The process-wide store (created from data/seed on first run)."""
    return get_store()


def catalogue() -> Catalogue:
    """The catalogue, cached in core until the store changes."""
    return load_catalogue(store())


def scenario_sidebar() -> None:
    """Draw the scenario controls in the sidebar and sync them with the URL."""
    cat = catalogue()
    gpu_ids = cat.gpus["id"].to_list()
    model_ids = list(cat.records)
    if not st.session_state.get("scenario_loaded"):
        state, messages = from_query_params(st.query_params.to_dict(), gpu_ids, model_ids)
        for name, value in state.items():
            st.session_state[KEY + name] = value
        st.session_state["link_messages"] = messages
        st.session_state["scenario_loaded"] = True
    for name, value in st.session_state.pop("pending_scenario", {}).items():
        st.session_state[KEY + name] = value
    gpu_names = dict(zip(cat.gpus["id"], cat.gpus["name"], strict=True))
    model_names = {m: r.name for m, r in cat.records.items()}
    with st.sidebar:
        st.subheader("Scenario", help="Shared by every page and kept in the page's link.")
        for msg in st.session_state.get("link_messages", []):
            st.warning(msg, icon=":material/link_off:")
        st.selectbox(
            "Accelerator",
            gpu_ids,
            key=KEY + "gpu",
            format_func=lambda g: gpu_names.get(g, g),
            help="The accelerator whose datasheet roof applies (dense peaks, decimal units).",
        )
        st.number_input(
            "GPUs (tensor parallel)",
            *LIMITS["num_gpus"],
            key=KEY + "num_gpus",
            help="Tensor-parallel degree: weights and KV are sharded, bandwidth and compute add up, two all-reduces per layer.",
        )
        st.selectbox(
            "Model",
            model_ids,
            key=KEY + "model",
            format_func=lambda m: model_names.get(m, m),
            help="Shapes come from the model's own config.json.",
        )
        c1, c2 = st.columns(2)
        c1.selectbox(
            "Weights", list(FORMATS), key=KEY + "weights", help="Storage format of the weights, scales included (int4 = 4.125 bits)."
        )
        c2.selectbox("KV cache", list(FORMATS), key=KEY + "kv", help="Storage format of the KV cache.")
        st.selectbox(
            "Compute",
            ["auto", *FALLBACK_CHAIN],
            key=KEY + "compute",
            help="Tensor-core format whose peak applies. auto: fp8 weights compute in fp8, fp4 in fp4, others in bf16.",
        )
        st.number_input("Batch (sequences)", *LIMITS["batch"], key=KEY + "batch", help="Sequences decoded together in one step.")
        st.number_input(
            "Context (tokens)",
            *LIMITS["context"],
            step=1024,
            key=KEY + "context",
            help="Tokens already in each sequence's KV cache during decode.",
        )
        st.number_input(
            "Prompt (tokens)", *LIMITS["prompt"], step=256, key=KEY + "prompt", help="Prompt length for prefill and time to first token."
        )
    st.query_params.from_dict({**_page_params(), **to_query_params(current())})


def current() -> dict[str, Any]:
    """The shared scenario values as a dict."""
    return {name: st.session_state.get(KEY + name, default) for name, default in DEFAULTS.items()}


def scenario(**overrides: Any) -> Scenario:
    """The shared scenario as a validated core Scenario (with optional overrides)."""
    s = current()
    values: dict[str, Any] = {
        "gpu": s["gpu"],
        "model": s["model"],
        "num_gpus": s["num_gpus"],
        "weights": s["weights"],
        "compute": compute_or_none(s),
        "kv": s["kv"],
        "batch": s["batch"],
        "context": s["context"],
        "prompt": s["prompt"],
    }
    values.update(overrides)
    return Scenario(**values)


def _page_params() -> dict[str, str]:
    """Query parameters a page registered for its own controls (see page_param)."""
    return {k: str(v) for k, v in st.session_state.get("page_params", {}).items()}


def page_param(name: str, value: Any) -> None:
    """Record one of the current page's controls in the link."""
    st.session_state.setdefault("page_params", {})[name] = value
    st.query_params[name] = str(value)


def request(**values: Any) -> None:
    """Change shared scenario values on the next run (widgets cannot change mid-run)."""
    st.session_state.setdefault("pending_scenario", {}).update(values)


def set_now(**values: Any) -> None:
    """Change shared scenario values from a widget callback (runs before the rerun)."""
    for name, value in values.items():
        st.session_state[KEY + name] = value
