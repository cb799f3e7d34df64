"""Text for people: numbers with units (decimal SI prefixes: 1 TB = 1e12 bytes), and user text made inert for markdown."""

from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """`value` with a decimal SI prefix: si(3.35e12, "B/s") -> "3.35 TB/s"; None -> "n/a"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "∞"
    mag = abs(value)
    for factor, prefix in _PREFIXES:
        if mag >= factor:
            return f"{_sig(value / factor, digits)} {prefix}{unit}".strip()
    return f"{_sig(value, digits)} {unit}".strip()


def duration(seconds: float | None) -> str:
    """A duration in the unit that reads best: 20.9 ms, 1.53 s, 850 µs."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "n/a"
    if seconds >= 1:
        return f"{_sig(seconds, 3)} s"
    if seconds >= 1e-3:
        return f"{_sig(seconds * 1e3, 3)} ms"
    return f"{_sig(seconds * 1e6, 3)} µs"


def _sig(x: float, digits: int) -> str:
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


def escape_markdown(value: str) -> str:
    """A user-supplied string made inert for Streamlit markdown (no links, emphasis or HTML)."""
    return "".join("\\" + c if c in "\\`*_{}[]()<>#+-.!|~=@$:" else c for c in value)
