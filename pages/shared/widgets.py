"""The control of one Scenario field, from the field's own definition (core.model.scenario).

Label, unit, help text, range, step and default come from the field and its
Param; the widget's key is the field's link parameter and it is bound to the
query string, so the value travels in the page's link.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.catalogue.precisions import COMPUTE_FORMATS, FORMATS
from core.model.scenario import bounds, default, field_type, param
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
    p = param(name)
    label = f"{p.label} ({p.unit})" if p.unit else p.label
    dflt = default(name)
    common: dict[str, Any] = {"key": key_of(name), "help": p.help, "bind": "query-params", "disabled": disabled}
    if options is not None:
        return where.selectbox(
            label, list(options), index=list(options).index(dflt) if dflt in options else 0, format_func=format_func or str, **common
        )
    if field_type(name) is bool:
        return where.toggle(label, value=dflt, **common)
    lo, _, hi, _ = bounds(name)
    lo = p.lo if p.lo is not None else (lo or 0.0) / p.scale
    hi = p.hi if p.hi is not None else (hi or 0.0) / p.scale
    start = dflt / p.scale
    if field_type(name) is int:
        return where.number_input(label, int(lo), int(hi), int(start), step=int(p.step or 1), **common)
    step = p.step or 0.01
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
