"""Text for people: numbers with units (decimal SI prefixes: 1 TB = 1e12 bytes), and user text made inert for markdown."""

from __future__ import annotations

import math
import re

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """`value` with a decimal SI prefix: si(3.35e12, "B/s") -> "3.35 TB/s"; None -> "n/a"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "∞"
    mag = abs(float(f"{value:.{digits}g}"))  # 999.6e9 is written 1.00 T, not 1,000 G
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


#: What a table cell or a sentence shows where a value does not exist (never "None", "null" or "nan").
DASH = "—"


def _sig(x: float, digits: int) -> str:
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    rounded = round(x, decimals)
    if rounded != 0 and abs(rounded) >= 10 ** (digits - decimals) and decimals > 0:
        decimals -= 1  # 9.996 rounds up to 10.0, not 10.00: still `digits` figures
    return f"{x:,.{decimals}f}"


def sig(value: float | None, digits: int = 3) -> str:
    """A number as people write it: `digits` significant figures and thousands separators.

    sig(116.6667) -> "117", sig(4.6429) -> "4.64", sig(1530.0) -> "1,530", sig(0.00819) -> "0.00819";
    digits left of the point are never rounded away (sig(12346.7) -> "12,347"); a value that does
    not exist (None, NaN) -> DASH; infinities -> "∞" / "-∞".
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return _sig(value, digits)


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """The count with its noun agreeing: plural(1, "sequence") -> "1 sequence", plural(1024, "GPU") -> "1,024 GPUs".

    The plural is the singular plus "s" unless `plural_form` is given (plural(2, "batch", "batches")).
    """
    word = singular if count == 1 else (plural_form or f"{singular}s")
    return f"{count:,} {word}"


def escape_markdown(value: str) -> str:
    """A user-supplied string made inert for Streamlit markdown (no links, emphasis or HTML)."""
    return "".join("\\" + c if c in "\\`*_{}[]()<>#+-.!|~=@$:" else c for c in value)


def web_link(url: str | None) -> str | None:
    """`url` where it is a web address (http or https) a page may link to; None otherwise (a `javascript:` or `data:` URL, a
    file path, a blank), which is then shown as text, never as a link."""
    text = (url or "").strip()
    return text if text.lower().startswith(("https://", "http://")) and len(text) > len("https://") else None


def plain(markdown: str) -> str:
    """The text of a sentence written in this app's markdown: without its bold marks and its escapes (a name escaped with
    escape_markdown, a dollar sign kept from starting maths), for a report or a caption outside markdown."""
    return re.sub(r"\\(.)", r"\1", markdown.replace("**", ""))
