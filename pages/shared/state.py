"""The shared scenario sidebar: one dict in the session, mirrored into the URL.

- The scenario values live in `st.session_state["scenario_values"]` (not only
  in widget keys), so presentation mode can hide the widgets without losing them.
- Every page's own controls can travel in the link too: `linked(key, default)`
  seeds a widget from the link that opened the app, `page_param(key, value)`
  writes it back, so a link reproduces the view exactly.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

import streamlit as st

from core.catalogue import Catalogue, load_catalogue
from core.measurements import escape_markdown
from core.precisions import FALLBACK_CHAIN, FORMATS
from core.scenario_state import DEFAULTS, LIMITS, compute_or_none, from_query_params, to_query_params
from core.specs import Scenario
from core.store import SessionStore, Store, get_store

KEY = "sc_"
VALUES = "scenario_values"


@st.cache_resource(show_spinner="Opening the store…")
def store() -> Store:
    """The process-wide store (created from data/seed on first run)."""
    return get_store()


def dataset_store() -> Store | SessionStore:
    """Where the measured page reads and imports datasets.

    The store; in read-only mode (ROOFLINE_READ_ONLY=1) this browser
    session's own SessionStore over it: uploads live in the session's memory
    only, other sessions never see them and the file is never written.
    """
    base = store()
    if not base.read_only:
        return base
    held = st.session_state.get("session_store")
    if not isinstance(held, SessionStore) or held.base is not base:
        held = st.session_state["session_store"] = SessionStore(base)
    return held


def catalogue() -> Catalogue:
    """The catalogue, cached in core until the store changes."""
    return load_catalogue(store())


def scenario_sidebar() -> None:
    """Draw the scenario controls in the sidebar and sync them with the URL."""
    cat = catalogue()
    if not st.session_state.get("scenario_loaded"):
        params = st.query_params.to_dict()
        state, messages = from_query_params(params, cat.gpus["id"].to_list(), list(cat.records))
        st.session_state[VALUES] = state
        st.session_state["initial_params"] = {k: v for k, v in params.items() if k not in DEFAULTS}
        st.session_state["link_messages"] = messages
        st.session_state["present"] = params.get("present") == "1"
        _calibration_from_link(params)
        st.session_state["scenario_loaded"] = True
    pending = st.session_state.pop("pending_scenario", {})
    st.session_state[VALUES].update(pending)
    st.session_state["page_params"] = {}
    with st.sidebar:
        presenting = st.toggle(
            "Presentation mode", key="present", help="Hide the controls, enlarge charts and lead with the headline figure."
        )
        _calibration_switch()
        if presenting:
            _scenario_summary(cat)
        else:
            # the widgets are seeded from the scenario on every run and write back through
            # their callbacks, so no page switch, interrupted run or option change can lose a value
            for name, value in st.session_state[VALUES].items():
                st.session_state[KEY + name] = value
            _scenario_controls(cat)
    st.query_params.from_dict(_link_params())


def _sync(name: str) -> None:
    """Widget callback: copy the widget's new value into the shared scenario."""
    st.session_state[VALUES][name] = st.session_state[KEY + name]


def _scenario_controls(cat: Catalogue) -> None:
    gpu_names = dict(zip(cat.gpus["id"], cat.gpus["name"], strict=True))
    model_names = {m: r.name for m, r in cat.records.items()}
    st.subheader("Scenario", help="Shared by every page and kept in the page's link.")
    for msg in st.session_state.get("link_messages", []):
        st.warning(msg, icon=":material/link_off:")
    st.selectbox(
        "Accelerator",
        list(gpu_names),
        key=KEY + "gpu",
        on_change=_sync,
        args=("gpu",),
        format_func=lambda g: gpu_names.get(g, g),
        help="The accelerator whose datasheet roof applies (dense peaks, decimal units).",
    )
    st.number_input(
        "GPUs (tensor parallel)",
        *LIMITS["num_gpus"],
        key=KEY + "num_gpus",
        on_change=_sync,
        args=("num_gpus",),
        help="Tensor-parallel degree: weights and KV are sharded, bandwidth and compute add up, two all-reduces per layer.",
    )
    st.selectbox(
        "Model",
        list(model_names),
        key=KEY + "model",
        on_change=_sync,
        args=("model",),
        format_func=lambda m: model_names.get(m, m),
        help="Shapes come from the model's own config.json.",
    )
    c1, c2 = st.columns(2)
    c1.selectbox(
        "Weights",
        list(FORMATS),
        key=KEY + "weights",
        on_change=_sync,
        args=("weights",),
        help="Storage format of the weights, scales included (int4 = 4.125 bits).",
    )
    c2.selectbox("KV cache", list(FORMATS), key=KEY + "kv", on_change=_sync, args=("kv",), help="Storage format of the KV cache.")
    st.selectbox(
        "Compute",
        ["auto", *FALLBACK_CHAIN],
        key=KEY + "compute",
        on_change=_sync,
        args=("compute",),
        help="Tensor-core format whose peak applies. auto: fp8 weights compute in fp8, fp4 in fp4, others in bf16.",
    )
    st.number_input(
        "Batch (sequences)",
        *LIMITS["batch"],
        key=KEY + "batch",
        on_change=_sync,
        args=("batch",),
        help="Sequences decoded together in one step.",
    )
    st.number_input(
        "Context (tokens)",
        *LIMITS["context"],
        step=1024,
        key=KEY + "context",
        on_change=_sync,
        args=("context",),
        help="Tokens already in each sequence's KV cache during decode.",
    )
    st.number_input(
        "Prompt (tokens)",
        *LIMITS["prompt"],
        step=256,
        key=KEY + "prompt",
        on_change=_sync,
        args=("prompt",),
        help="Prompt length for prefill and time to first token.",
    )


def _scenario_summary(cat: Catalogue) -> None:
    s = current()
    st.caption(
        f"{s['num_gpus']} × {escape_markdown(cat.gpu(s['gpu'])['name'])} · {escape_markdown(cat.model(s['model']).name)} · weights {s['weights']}, "
        f"KV {s['kv']} · batch {s['batch']}, context {s['context']:,}, prompt {s['prompt']:,}"
    )


def current() -> dict[str, Any]:
    """The shared scenario values as a dict."""
    values: dict[str, Any] = st.session_state.get(VALUES) or dict(DEFAULTS)
    return dict(values)


def presenting() -> bool:
    """Whether presentation mode is on (pages hide controls and enlarge charts)."""
    return bool(st.session_state.get("present"))


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
    # when switched on, the calibrated model replaces any page's own efficiency controls
    values.update(calibration_factors())
    return Scenario(**values)


def request(**values: Any) -> None:
    """Change shared scenario values on the next run (widgets cannot change mid-run)."""
    st.session_state.setdefault("pending_scenario", {}).update(values)


def set_now(**values: Any) -> None:
    """Change shared scenario values from a widget callback (runs before the rerun)."""
    for name, value in values.items():
        st.session_state[KEY + name] = value
        st.session_state.setdefault(VALUES, dict(DEFAULTS))[name] = value


# -- page controls in the link ------------------------------------------------


def linked(key: str, default: Any, parse: Callable[[str], Any] = str) -> Any:
    """Seed a page widget's state from the link that opened the app (once), else `default`.

    Returns the value the widget will show; an unreadable link value is ignored.
    """
    initial = st.session_state.get("initial_params", {})
    if key in initial:
        raw = initial.pop(key)
        try:
            st.session_state[key] = parse(str(raw))
        except (ValueError, TypeError):
            st.session_state.setdefault("link_messages", []).append(f"link parameter {key}={raw!r} could not be read; ignored")
    if key not in st.session_state:
        st.session_state[key] = default
    return st.session_state[key]


def page_param(name: str, value: Any) -> None:
    """Record one of the current page's controls in the link (lists as comma-separated)."""
    text = ",".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
    st.session_state.setdefault("page_params", {})[name] = text
    st.query_params[name] = text


def split_list(text: str) -> list[str]:
    """Parse a comma-separated link value."""
    return [t for t in text.split(",") if t]


def _link_params() -> dict[str, str]:
    params = to_query_params(current())
    if presenting():
        params["present"] = "1"
    factors = calibration_factors()
    if factors:
        params["cal"] = ",".join(f"{factors[k]:.4g}" for k in ("eff_bandwidth", "eff_compute", "overhead_s"))
    return params


# -- calibrated model ---------------------------------------------------------


def set_calibration(fits: dict[str, dict[str, float]], source: str) -> None:
    """Offer fitted efficiencies (per accelerator id) to every page; the sidebar switches them on."""
    st.session_state["calibration"] = {"fits": fits, "source": source}


def calibration_factors() -> dict[str, float]:
    """eff_bandwidth, eff_compute and overhead_s of the calibrated model for the current accelerator, when switched on."""
    cal = st.session_state.get("calibration")
    if not cal or not st.session_state.get("use_calibration"):
        return {}
    fit = cal["fits"].get(current()["gpu"])
    return dict(fit) if fit else {}


def _calibration_switch() -> None:
    cal = st.session_state.get("calibration")
    gpu = current()["gpu"]
    if not cal or gpu not in cal["fits"]:
        st.session_state["use_calibration"] = False
        return
    fit = cal["fits"][gpu]
    st.toggle(
        "Calibrated model",
        key="use_calibration",
        help=f"Use the efficiencies fitted from {cal['source']} for this accelerator on every page: bandwidth {fit['eff_bandwidth']:.0%}, "
        f"compute {fit['eff_compute']:.0%}, {fit['overhead_s'] * 1e3:.2f} ms per step.",
    )


def _calibration_from_link(params: dict[str, Any]) -> None:
    raw = params.get("cal")
    if not raw:
        return
    try:
        bw, comp, over = (float(x) for x in str(raw).split(","))
        fit = {"eff_bandwidth": min(max(bw, 0.01), 1.0), "eff_compute": min(max(comp, 0.01), 1.0), "overhead_s": max(over, 0.0)}
    except ValueError:
        st.session_state.setdefault("link_messages", []).append(f"link parameter cal={raw!r} could not be read; ignored")
        return
    gpu = st.session_state[VALUES]["gpu"]
    set_calibration({gpu: fit}, "the shared link")
    st.session_state["use_calibration"] = True


def share_link() -> str:
    """The link that reproduces this view: this page, the scenario and the page's controls."""
    params = {**_link_params(), **st.session_state.get("page_params", {})}
    base = str(getattr(st.context, "url", "") or "").split("?")[0]
    return f"{base}?{urllib.parse.urlencode(params)}"


def share_panel() -> None:
    """Sidebar footer: the link to this view (with a copy button) and the HTML report download."""
    from core.report import report_html

    with st.sidebar:
        st.divider()
        st.markdown("**Share this view**", help="The link reproduces this page, the scenario and the page's controls on any server.")
        st.code(share_link(), language=None, wrap_lines=True)
        sc = scenario()
        st.download_button(
            ":material/description: Report (HTML)",
            lambda: report_html(catalogue(), sc).encode("utf-8"),
            file_name=f"roofline-{sc.model}-on-{sc.num_gpus}x{sc.gpu}.html",
            mime="text/html",
            key="report_download",
            on_click="ignore",
            help="One self-contained HTML file: headline figures, charts as SVG, the per-operation table, assumptions and sources.",
        )
