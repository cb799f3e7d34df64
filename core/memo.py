"""A small process-wide memo for the pages' pure computations on one catalogue.

A control change reruns a whole page; most of what it computes did not change
(the batch-independent operating-point paths, the ceilings at every batch of
the sweep, a chart's layers). `memo(fn, cat, *args)` returns fn(cat, *args)
from a bounded least-recently-used table shared by every session. Keys are
the function, the catalogue object (a new store generation gives a new one)
and the arguments (pydantic records by their JSON). The functions memoised
must be pure; results are shared, so callers must not modify them (dicts are
handed out as copies).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T")

MAX_ENTRIES = 512

_lock = threading.Lock()
_table: OrderedDict[Hashable, tuple[Any, Any]] = OrderedDict()


def _key(value: Any) -> Hashable:
    if isinstance(value, BaseModel):
        return (type(value).__name__, value.model_dump_json())
    if isinstance(value, list | tuple):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    hash(value)  # unhashable arguments fail here, loudly
    return value  # type: ignore[no-any-return]


def memo(fn: Callable[..., T], cat: Any, *args: Any, **kwargs: Any) -> T:
    """fn(cat, *args, **kwargs), computed once per distinct (fn, catalogue, arguments)."""
    key = (fn.__module__, fn.__qualname__, id(cat), _key(args), _key(kwargs))
    with _lock:
        hit = _table.get(key)
        if hit is not None and hit[0] is cat:
            _table.move_to_end(key)
            value = hit[1]
            return dict(value) if isinstance(value, dict) else value  # type: ignore[return-value]
    value = fn(cat, *args, **kwargs)
    with _lock:
        # the catalogue is kept with the value: its id cannot be reused while the entry lives
        _table[key] = (cat, value)
        _table.move_to_end(key)
        while len(_table) > MAX_ENTRIES:
            _table.popitem(last=False)
    return dict(value) if isinstance(value, dict) else value  # type: ignore[return-value]


def clear() -> None:
    """Forget every memoised value (tests)."""
    with _lock:
        _table.clear()
