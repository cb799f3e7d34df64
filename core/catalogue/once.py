"""A process-wide cache whose value for a key is computed once, however many sessions ask for it at the same moment.

A plain check-then-compute cache lets eight browser sessions that open the same page together each compute the same
scorecard: eight times the work, each of them waiting for all. `Once.get` lets the first compute while the others wait
for its value (a lock per key, so different keys do not wait for each other), and keeps the newest `keep` values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class Once(Generic[T]):
    """Values by key, each computed by one caller while any others asking for it wait."""

    def __init__(self, keep: int = 1) -> None:
        self._keep = keep
        self._values: dict[Hashable, T] = {}
        self._gates: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            if key in self._values:
                return self._values[key]
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                if key in self._values:  # computed while this caller waited
                    return self._values[key]
            value = compute()
            with self._lock:
                while len(self._values) >= self._keep:
                    self._values.pop(next(iter(self._values)))
                self._values[key] = value
                self._gates.pop(key, None)
            return value

    def peek(self, key: Hashable) -> T | None:
        """The value if it is computed already (never computes)."""
        with self._lock:
            return self._values.get(key)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
