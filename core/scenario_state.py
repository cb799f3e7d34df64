"""The shared scenario as plain values, and its round trip through URL query parameters.

Pure functions (no Streamlit): the app keeps one dict of these values in its
session and mirrors it into `st.query_params`, so a link reproduces a view.
Unknown or invalid values in a link fall back to the default with a message
that names the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.precisions import FALLBACK_CHAIN, FORMATS

#: The scenario values every page shares, with their defaults.
DEFAULTS: dict[str, Any] = {
    "gpu": "h100-sxm",
    "compare": "",  # extra accelerators overlaid on the roofline, comma separated
    "num_gpus": 1,
    "model": "llama-3.1-8b",
    "weights": "bf16",
    "compute": "auto",
    "kv": "bf16",
    "batch": 1,
    "context": 4096,
    "prompt": 2048,
}

LIMITS: dict[str, tuple[int, int]] = {
    "num_gpus": (1, 64),
    "batch": (1, 4096),
    "context": (0, 1_048_576),
    "prompt": (1, 1_048_576),
}


def from_query_params(params: Mapping[str, Any], gpu_ids: list[str], model_ids: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Scenario values from query parameters; (values, messages about ignored parameters)."""
    state = dict(DEFAULTS)
    messages: list[str] = []

    def get(name: str) -> str | None:
        value = params.get(name)
        if isinstance(value, list):
            value = value[-1] if value else None
        return None if value is None else str(value)

    for name in ("gpu", "model"):
        value = get(name)
        known = gpu_ids if name == "gpu" else model_ids
        if value is not None:
            if value in known:
                state[name] = value
            else:
                messages.append(f"link parameter {name}={value!r} is not in the catalogue; using {state[name]}")
    compare = get("compare")
    if compare:
        ids = [c for c in compare.split(",") if c]
        bad = [c for c in ids if c not in gpu_ids]
        if bad:
            messages.append(f"link parameter compare: unknown accelerator(s) {', '.join(bad)} ignored")
        state["compare"] = ",".join(c for c in ids if c in gpu_ids)
    for name, allowed in (("weights", list(FORMATS)), ("kv", list(FORMATS)), ("compute", ["auto", *FALLBACK_CHAIN])):
        value = get(name)
        if value is not None:
            if value in allowed:
                state[name] = value
            else:
                messages.append(f"link parameter {name}={value!r} is not a known precision; using {state[name]}")
    for name, (lo, hi) in LIMITS.items():
        value = get(name)
        if value is None:
            continue
        try:
            number = int(value)
        except ValueError:
            messages.append(f"link parameter {name}={value!r} is not a whole number; using {state[name]}")
            continue
        if not lo <= number <= hi:
            messages.append(f"link parameter {name}={number} is outside {lo}..{hi}; using {state[name]}")
            continue
        state[name] = number
    return state, messages


def to_query_params(state: Mapping[str, Any]) -> dict[str, str]:
    """The query parameters that reproduce a scenario (defaults included, so links are explicit)."""
    return {name: str(state.get(name, default)) for name, default in DEFAULTS.items() if str(state.get(name, default)) != ""}


def compute_or_none(state: Mapping[str, Any]) -> str | None:
    """The compute precision for a Scenario: None when the user left it on auto."""
    value = state.get("compute", "auto")
    return None if value in (None, "", "auto") else str(value)
