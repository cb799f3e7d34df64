"""Work that does not depend on the session is done once per process, however many sessions ask at once (issue 32)."""

from __future__ import annotations

import threading
import time

import pytest

from core.catalogue.once import Once


def _together(n: int, call) -> list:  # type: ignore[no-untyped-def]
    start, out = threading.Barrier(n), [None] * n

    def run(i: int) -> None:
        start.wait()
        out[i] = call()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_eight_callers_at_once_get_one_computation():
    calls = []

    def compute() -> object:
        calls.append(1)
        time.sleep(0.2)  # long enough that every caller arrives while it runs
        return object()

    once: Once[object] = Once()
    got = _together(8, lambda: once.get("k", compute))
    assert len(calls) == 1 and all(g is got[0] for g in got)
    assert once.get("k", compute) is got[0] and len(calls) == 1


def test_a_new_key_is_computed_and_only_the_newest_are_kept():
    once: Once[str] = Once(keep=1)
    assert once.get("a", lambda: "A") == "A"
    assert once.get("b", lambda: "B") == "B"
    assert once.peek("a") is None and once.peek("b") == "B"


def test_a_failed_computation_is_not_kept_and_the_next_caller_tries_again():
    once: Once[int] = Once()

    def fail() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        once.get("k", fail)
    assert once.get("k", lambda: 3) == 3


def test_the_scorecard_is_computed_once_for_sessions_that_open_the_page_together(cat, monkeypatch):
    from core.evidence import scorecard as sc

    real, calls = sc._scorecard, []

    def counted(c):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(c)

    monkeypatch.setattr(sc, "_scorecard", counted)
    monkeypatch.setattr(sc, "_CARDS", Once())
    cards = _together(4, lambda: sc.scorecard(cat))
    assert len(calls) == 1 and all(c is cards[0] for c in cards)
