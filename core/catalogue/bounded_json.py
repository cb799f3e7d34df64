"""JSON from a user's file, with its size and nesting depth checked before it is parsed.

    value = loads(text, max_bytes=MAX_CONFIG_BYTES, source="config.json")

Python's `json.loads` recurses once per level of nesting: a file nested
50,000 levels deep ends in a RecursionError (a traceback, not a message), and
a file of hundreds of megabytes holds a server thread while it is parsed.
`loads` refuses both first, and a file of millions of tiny values (66 million
empty objects in 198 MB would take gigabytes once parsed), in one pass over
the bytes that parses nothing: `nesting_depth` and `value_count` count
brackets and commas outside strings with numpy (escaped quotes included), so
a refused file costs milliseconds per megabyte.

Every refusal is a `JSONLimitError` whose text is one line naming the source
and the limit, e.g. "config.json: nested 50,000 levels deep; the limit is 64".
`json.JSONDecodeError` (malformed JSON) passes through unchanged: callers
word it themselves (line, column, truncated or not).

With `allow_nan=False` the literals NaN, Infinity and -Infinity (which Python
writes and reads, but JSON does not define) and numbers too large for a float
(1e999) are refused with their line and column, for documents where every
number must be a number.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import numpy as np

#: Deepest nesting accepted. Real files nest far less: a Hugging Face config.json
#: 4 levels (quantization_config.config_groups.group_0.weights), the deepest
#: benchmark fixture in tests/fixtures 5 (optimum-benchmark's report).
MAX_DEPTH = 64
#: Most values (objects, arrays and the items separated by commas) accepted in one document: parsed, each is a Python
#: object of 30-60 bytes, so a file of 66 million empty objects would take gigabytes. Real files hold far fewer: a vLLM
#: serving run with per-token timings of 1,000 requests about 300,000, the largest fixture 2,000.
MAX_VALUES = 5_000_000

_BLOCK = 1 << 23  # bytes scanned at a time: bounds the scan's scratch memory (~10 bytes per byte of a block)
_KIND = np.zeros(256, dtype=np.int8)  # +1 opens a level, -1 closes one
_KIND[list(b"[{")] = 1
_KIND[list(b"]}")] = -1
_VALUE = np.zeros(256, dtype=bool)  # a byte that opens a value or separates two: [ { ,
_VALUE[list(b"[{,")] = True
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_ESCAPE_STEPS = 16  # backslash runs up to this long are resolved with numpy; longer ones by _LONG_RUN
_LONG_RUN = re.compile(rb"(?<!\\)\\{%d,}+(?=\")" % _ESCAPE_STEPS)
_NON_FINITE = re.compile(r'"(?:[^"\\]++|\\.)*+"|(NaN|-?Infinity|-?\d+(?:\.\d+)?[eE][+-]?\d+)')


class JSONLimitError(ValueError):
    """A JSON file over a limit (size, depth, a non-finite number); str() is one line."""


def nesting_depth(raw: bytes | str) -> int:
    """The deepest nesting of [ ] and { } outside strings (0 for a bare number or string).

    Counts; does not validate: in malformed JSON the figure is that of its
    brackets. Linear in the size, with scratch memory bounded by `_BLOCK`.
    """
    return _scan(raw)[0]


def value_count(raw: bytes | str) -> int:
    """About how many values a document holds: its [ { and , outside strings (each opens a value or separates two), plus
    one. Counts in the same pass as `nesting_depth`, parsing nothing."""
    return _scan(raw)[1] + 1


def _scan(raw: bytes | str, stop_at: int | None = None) -> tuple[int, int]:
    """(deepest nesting, count of [ { and , outside strings); with `stop_at`, stops once the count passes it (a refusal
    needs no more)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if b"[" not in data and b"{" not in data:
        return 0, data.count(b",")
    arr = np.frombuffer(data, dtype=np.uint8)
    long_escapes = _long_escaped_quotes(data)
    in_string = False  # inside a string at the start of the block
    depth = deepest = values = 0
    for start in range(0, arr.size, _BLOCK):
        block = arr[start : start + _BLOCK]
        quotes = np.flatnonzero(block == _QUOTE) + start
        quotes = quotes[~_escaped(arr, quotes, long_escapes)]
        marks = np.flatnonzero(_KIND[block] | _VALUE[block]) + start
        if quotes.size:
            # a mark is inside a string when an odd number of quotes (counting the carried state) precede it
            before = np.searchsorted(quotes, marks) + int(in_string)
            marks = marks[before % 2 == 0]
            in_string = (quotes.size + int(in_string)) % 2 == 1
        elif in_string:
            continue
        values += int(np.count_nonzero(_VALUE[arr[marks]]))
        brackets = marks[_KIND[arr[marks]] != 0]
        if brackets.size:
            levels = np.cumsum(_KIND[arr[brackets]], dtype=np.int64) + depth
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
        if stop_at is not None and values > stop_at:
            break
    return deepest, values


def _escaped(arr: np.ndarray, quotes: np.ndarray, long_escapes: set[int]) -> np.ndarray:
    """Which quotes are escaped (preceded by an odd run of backslashes)."""
    escaped = np.zeros(quotes.size, dtype=bool)
    after = quotes[quotes > 0]
    maybe = np.flatnonzero(quotes > 0)[arr[after - 1] == _BACKSLASH]
    if not maybe.size:
        return escaped
    pos = quotes[maybe]
    run = np.zeros(maybe.size, dtype=np.int64)
    active = np.ones(maybe.size, dtype=bool)
    for step in range(1, _ESCAPE_STEPS + 1):
        idx = pos - step
        active &= idx >= 0
        active[active] = arr[idx[active]] == _BACKSLASH
        run += active
        if not active.any():
            break
    escaped[maybe] = run % 2 == 1
    if long_escapes:  # runs longer than _ESCAPE_STEPS: exact lengths from the regex pass
        for i in np.flatnonzero(active):
            escaped[maybe[i]] = int(pos[i]) in long_escapes
    return escaped


def _long_escaped_quotes(data: bytes) -> set[int]:
    """Positions of quotes after an odd run (so escaping the quote) of _ESCAPE_STEPS or more backslashes."""
    if b"\\" * _ESCAPE_STEPS not in data:
        return set()
    return {m.end() for m in _LONG_RUN.finditer(data) if (m.end() - m.start()) % 2 == 1}


def check_limits(
    raw: bytes | str, *, max_bytes: int, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES, source: str | None = None
) -> None:
    """Refuse `raw` if it is over `max_bytes`, nested deeper than `max_depth` or holds more than `max_values` values;
    parses nothing."""
    size = len(raw) if isinstance(raw, bytes) or raw.isascii() else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise JSONLimitError(_where(source, f"the file is {_size(size)}; the limit is {_size(max_bytes)}"))
    marks = ("[", "{", ",") if isinstance(raw, str) else (b"[", b"{", b",")
    opens = raw.count(marks[0]) + raw.count(marks[1])  # type: ignore[arg-type]
    commas = raw.count(marks[2])  # type: ignore[arg-type]
    if opens <= max_depth and opens + commas < max_values:  # no deeper than its count of [ and {, no more values than marks
        return
    depth, values = _scan(raw, stop_at=max_values)
    if depth > max_depth:
        raise JSONLimitError(_where(source, f"nested {depth:,} levels deep; the limit is {max_depth:,}"))
    if values + 1 > max_values:
        raise JSONLimitError(
            _where(source, f"holds more than {max_values:,} values (objects, arrays and their items), the limit; {_size(size)} in all")
        )


def loads(
    raw: bytes | str,
    *,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
    max_values: int = MAX_VALUES,
    allow_nan: bool = True,
    source: str | None = None,
) -> Any:
    """`json.loads` after `check_limits`; JSONLimitError for a limit, json.JSONDecodeError for malformed JSON."""
    check_limits(raw, max_bytes=max_bytes, max_depth=max_depth, max_values=max_values, source=source)
    text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    hooks: dict[str, Any] = {} if allow_nan else {"parse_constant": _refuse_constant, "parse_float": _finite_float}
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError:
        raise
    except _NonFinite:
        raise JSONLimitError(_where(source, _non_finite_text(text))) from None
    except ValueError:  # int("1" * 5000): over Python's digit limit for int()
        raise JSONLimitError(_where(source, f"a number has more than {sys.get_int_max_str_digits():,} digits")) from None


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def _non_finite_text(text: str) -> str:
    for m in _NON_FINITE.finditer(text):
        if m.group(1) and not math.isfinite(float(m.group(1))):
            line = text.count("\n", 0, m.start(1)) + 1
            col = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1) + 1
            return f"{m.group(1)[:20]} at line {line} column {col} is not a finite number"
    return "a number that is not finite (NaN or Infinity)"


def _where(source: str | None, text: str) -> str:
    return f"{source}: {text}" if source else text


def _size(n: int) -> str:
    return f"{n:,} bytes"
