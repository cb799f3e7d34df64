"""Validation errors in the user's words: a pydantic error becomes a sentence naming the form field and its unit.

A record's fields are stored in SI units under code names (`bandwidth_bytes_per_s`);
a form shows them under a label in a reading unit (Bandwidth, TB/s). The translation
is built once per record from those declarations (`Words`: label, unit, the unit's
size in SI, what to do when it is empty or badly written) and applied to every
error pydantic reports, whatever its kind: a bound (ge, le, gt, lt) is divided by
the unit's size and written as people write numbers, an empty or missing field
says what to enter. So a bandwidth of 0.0005 TB/s is refused as "Bandwidth must be
at least 0.001 TB/s (got 0.0005 TB/s)", never "bandwidth_bytes_per_s: Input should
be greater than or equal to 1000000000".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class Words:
    """How one field is named on screen: its label, its reading unit and that unit's size in the field's SI unit."""

    label: str
    unit: str = ""
    scale: float = 1.0
    empty: str = ""  # what to do when it is empty ("give the accelerator a name"); default: enter it (in its unit)
    allowed: str = ""  # what it may hold, said when its pattern refuses a value
    grouped: bool = True  # thousands separators (not in a year)


def number(value: float) -> str:
    """A number as people write it: 50,000; 3.35; 0.001; 2.5e-05 only for the very small."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 1e-4:
        return f"{value:.4g}"
    return f"{value:.2g}"


def quantity(value: float, words: Words) -> str:
    """`value` (SI) in the field's reading unit, with the unit: 3.35 TB/s; 1 device, 8 devices."""
    shown = value / words.scale
    if not words.grouped:
        return f"{shown:g} {words.unit}".strip()
    unit = words.unit
    if unit.endswith("s") and not unit.endswith("/s") and shown == 1 and unit not in {"s", "TOPS"}:
        unit = unit[:-1]
    return f"{number(shown)} {unit}".strip()


_BOUNDS = {
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
}


def say(err: ErrorDetails | Mapping[str, Any], words: Mapping[str, Words]) -> str:
    """One pydantic error as a sentence naming the field by its label, its values in the field's unit."""
    loc = tuple(err.get("loc", ()))
    name = str(loc[0]) if loc else ""
    w = words.get(name, Words(name or "The entry"))
    kind, ctx, got = str(err.get("type", "")), dict(err.get("ctx") or {}), err.get("input")
    if kind in _BOUNDS and isinstance(ctx.get(_BOUNDS[kind][0]), (int, float)):
        key, phrase = _BOUNDS[kind]
        bound = float(ctx[key])
        given = _as_number(got)
        value = f" (got {quantity(given, w)})" if given is not None else ""
        return f"{w.label} must be {phrase} {quantity(bound, w)}{value}"
    if kind == "empty_or_positive":
        value = f" (got {quantity(float(got), w)})" if isinstance(got, (int, float)) else ""
        return f"{w.label} must be empty where unsupported, or more than 0 {w.unit}{value}".replace("  ", " ")
    if kind == "missing" or (kind == "string_too_short" and not str(got or "").strip()) or (kind.endswith("_type") and got is None):
        return f"{w.label} is empty: {w.empty or _enter(w)}"
    if kind == "string_too_short":
        return f"{w.label} is too short: at least {ctx.get('min_length')} characters"
    if kind == "string_too_long":
        length = f" (it has {len(got):,})" if isinstance(got, str) else ""
        fix = f"; {w.allowed}" if w.allowed else ""
        return f"{w.label} is too long: at most {ctx.get('max_length')} characters{length}{fix}"
    if kind == "string_pattern_mismatch":
        return f"{w.label} {_shown(got)} cannot be used: {w.allowed or 'it holds characters that are not allowed'}"
    if kind in {"int_parsing", "int_from_float", "int_type"}:
        return f"{w.label} must be a whole number{_unit_hint(w)} (got {_shown(got)})"
    if kind in {"float_parsing", "float_type", "finite_number"}:
        return f"{w.label} must be a number{_unit_hint(w)} (got {_shown(got)})"
    if kind == "extra_forbidden":
        return f"{name} is not a field here"
    message = str(err.get("msg", "")).removeprefix("Value error, ")
    if not name:
        return _labelled(message, words)
    return f"{w.label}: {_labelled(message, words)}"


def explain(exc: ValidationError, words: Mapping[str, Words]) -> list[str]:
    """Every error of a pydantic ValidationError as a sentence (say), in the order pydantic reports them."""
    return [say(err, words) for err in exc.errors(include_url=False)]


def _as_number(value: Any) -> float | None:
    """The value a bound refused, as a number (a form's text "1999" too); None if it is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def _enter(w: Words) -> str:
    return f"enter it in {w.unit}" if w.unit else "enter it"


def _unit_hint(w: Words) -> str:
    return f" of {w.unit}" if w.unit else ""


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _labelled(message: str, words: Mapping[str, Words]) -> str:
    """A validator's own sentence with every field name in it replaced by the field's label."""
    names = sorted((n for n in words if n), key=len, reverse=True)
    if not names:
        return message
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    return pattern.sub(lambda m: words[m.group(1)].label, message)
