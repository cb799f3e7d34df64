"""The control of one Scenario field, from the field's own definition (core.model.scenario).

Label, unit, help text, range, step and default come from the field and its
Param; the widget's key is the field's link parameter and it is bound to the
query string, so the value travels in the page's link.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
from pydantic import BaseModel

from core.catalogue.catalogue import Catalogue
from core.catalogue.precisions import COMPUTE_FORMATS, FORMATS
from core.model.scenario import Scenario, bounds, choices, default, field_type, param
from core.plan.compare_request import CompareRequest
from pages.shared.params import AUTO, key_of, labels
from pages.shared.ui import keep_options


def scenario_input(
    name: str,
    where: Any = st,
    *,
    options: Sequence[Any] | None = None,
    format_func: Callable[[Any], str] | None = None,
    disabled: bool = False,
) -> Any:
    """Draw the control of a Scenario field and return its value in the field's unit (the control may show ms or %)."""
    return field_input(Scenario, name, where, key=key_of(name), options=options, format_func=format_func, disabled=disabled)


def request_input(
    name: str,
    where: Any = st,
    *,
    options: Sequence[Any] | None = None,
    disabled: bool = False,
    on_change: Callable[[], None] | None = None,
) -> Any:
    """Draw the control of a CompareRequest field (core.plan.compare_request) and return its value in the field's unit."""
    return field_input(CompareRequest, name, where, options=options, disabled=disabled, on_change=on_change)


def field_input(
    of: type[BaseModel],
    name: str,
    where: Any = st,
    *,
    key: str | None = None,
    options: Sequence[Any] | None = None,
    format_func: Callable[[Any], str] | None = None,
    disabled: bool = False,
    on_change: Callable[[], None] | None = None,
) -> Any:
    """The control of a field declared with a Param (label, unit, help, range, step and default from the declaration; its
    widget key is its link parameter, bound to the query string): a select box or radio row for a set of values, a toggle,
    a slider or a number box. Returns the value in the field's unit (the control may show it scaled)."""
    p = param(name, of)
    label = f"{p.label} ({p.unit})" if p.unit else p.label
    dflt = default(name, of)
    common: dict[str, Any] = {"key": key or p.key or name, "help": p.help, "bind": "query-params", "disabled": disabled}
    if on_change is not None:
        common["on_change"] = on_change
    values = list(options) if options is not None else list(choices(name, of) or (p.labels or {}) or [])
    if values:
        shown = format_func or (p.labels.__getitem__ if p.labels is not None else str)
        index = values.index(dflt) if dflt in values else 0
        if p.radio:
            return where.radio(label, values, index=index, format_func=shown, horizontal=True, **common)
        return where.selectbox(label, values, index=index, format_func=shown, **common)
    if field_type(name, of) is bool:
        return where.toggle(label, value=dflt, **common)
    lo, _, hi, _ = bounds(name, of)
    lo = p.lo if p.lo is not None else (lo or 0.0) / p.scale
    hi = p.hi if p.hi is not None else (hi or 0.0) / p.scale
    start = round(dflt / p.scale, 12)
    if field_type(name, of) is int:
        return where.number_input(label, int(lo), int(hi), int(start), step=int(p.step or 1), **common)
    step = p.step or 0.01
    if p.fmt is not None:
        common["format"] = p.fmt
    if p.slider:
        value = where.slider(label, float(lo), float(hi), float(start), float(step), **common)
    else:
        value = where.number_input(label, float(lo), float(hi), float(start), float(step), **common)
    return value * p.scale


def accelerator_input(cat: Catalogue, where: Any = st) -> Any:
    """The scenario's accelerator, picked by name."""
    names = labels(cat, "accelerator")
    return scenario_input("gpu", where, options=list(names), format_func=names.__getitem__)


def model_input(cat: Catalogue, where: Any = st, *, name: str = "model", exclude: str | None = None) -> Any:
    """A model of the catalogue (the scenario's, or the draft model), picked by name."""
    names = labels(cat, "model")
    options = [m for m in names if m != exclude]
    keep_options(key_of(name), options)
    return scenario_input(name, where, options=options, format_func=names.__getitem__)


def format_input(name: str, where: Any = st) -> Any:
    """A storage format (weights, KV cache) or the compute format (auto: the weights' default)."""
    if name == "compute":
        return scenario_input(name, where, options=[None, *COMPUTE_FORMATS], format_func=lambda c: AUTO if c is None else c)
    return scenario_input(name, where, options=list(FORMATS))


def derating_inputs(where: dict[str, Any]) -> None:
    """The controls of the ceiling's derating fields (efficiencies, overhead) in `where` (field -> container)."""
    for name, box in where.items():
        scenario_input(name, box)
