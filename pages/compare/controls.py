"""The one-group comparison's controls, drawn from their declaration (core.plan.compare_request.CompareRequest)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.model.scenario import Scenario
from core.plan.compare_request import CompareRequest
from core.plan.purchase import SORT_KEYS
from core.plan.targets import BY_KEY as TARGETS
from core.plan.targets import CUSTOM, targets_for
from core.present.text import escape_markdown
from pages.shared.params import REQUEST_KEYS
from pages.shared.widgets import request_input


def _apply_preset() -> None:
    """A preset picked: its limits go into the two number boxes (shown in their units: ms and s)."""
    preset = TARGETS.get(st.session_state.get(REQUEST_KEYS["target"]))
    if preset is not None:
        st.session_state[REQUEST_KEYS["max_tpot_s"]] = preset.tpot_s * 1e3
        st.session_state[REQUEST_KEYS["max_ttft_s"]] = preset.ttft_s


def controls(box: Any, sc: Scenario) -> CompareRequest:
    """The comparison's controls in `box`, in two rows: the workload, target and sort; the cost of a GPU-hour and a load."""
    c1, c2, c3, c4, c5 = box.columns([2, 2, 1, 1, 2])
    shown: dict[str, Any] = {"mode": request_input("mode", c1)}
    targeted = shown["mode"] == "service target"
    offered = [CUSTOM, *(t.key for t in targets_for(sc.model))]
    shown["target"] = request_input("target", c2, options=offered, on_change=_apply_preset, disabled=not targeted)
    preset = TARGETS.get(str(shown["target"]))
    if preset is not None:  # the preset says the limits (a link may name it without them): the boxes show its values
        said = {REQUEST_KEYS["max_tpot_s"]: preset.tpot_s * 1e3, REQUEST_KEYS["max_ttft_s"]: preset.ttft_s}
        st.session_state.update({k: v for k, v in said.items() if st.session_state.get(k) != v})
    typed = targeted and preset is None
    shown["max_tpot_s"] = request_input("max_tpot_s", c3, disabled=not typed)
    shown["max_ttft_s"] = request_input("max_ttft_s", c4, disabled=not typed)
    shown["sort_by"] = request_input("sort_by", c5, options=list(SORT_KEYS))
    shown["basis"] = request_input("basis", c5)
    # always one caption here: a control below that moves up or down the page when an element appears or goes
    # stops writing its changes into the link (Streamlit 1.67)
    if not targeted:
        box.caption("Target: none; every configuration runs at the sidebar's batch.")
    elif preset is not None:
        box.caption(f"Target: {escape_markdown(preset.source)}.")
    else:
        box.caption("Target: custom limits, typed in the two boxes.")
    row = box.columns([2, 1, 1, 1, 1, 1, 1])
    for where, name in zip(row, ("pay", "years", "usd_per_kwh", "pue", "utilization", "requests_per_s", "output_tokens"), strict=True):
        shown[name] = request_input(name, where)
    return CompareRequest.model_validate(shown)  # each value in its field's unit (request_input scales ms and %)
