"""One DuckDB file shared by several processes, which take turns.

DuckDB lets one process at a time hold a file read-write. Every operation
(one query, one transaction) runs on its own cursor of a connection that the
process opens when its first operation starts and closes `hold_s` (0.25 s)
after the last one ends, or at once when another process is waiting for the
file (a waiting process leaves a `<db>.wait-<pid>` marker beside it). So a
process holds the file only while it works. When another process holds it,
opening is retried with growing pauses for up to `busy_timeout` seconds
(10 s, ROOFLINE_BUSY_TIMEOUT), then StoreError("store busy: ...").
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from core.store.paths import StoreError

BUSY_TIMEOUT_S = 10.0
HOLD_S = 0.25  # keep the file open this long after the last operation (opening costs ~30 ms)


def _is_lock_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text)


class SharedFile:
    """Connections to one DuckDB file, held only while operations run (see the module docstring)."""

    def __init__(self, path: Path, *, read_only: bool, busy_timeout: float | None = None) -> None:
        self.path = path
        self.read_only = read_only
        env_timeout = os.environ.get("ROOFLINE_BUSY_TIMEOUT")
        self.busy_timeout = busy_timeout if busy_timeout is not None else float(env_timeout) if env_timeout else BUSY_TIMEOUT_S
        env_hold = os.environ.get("ROOFLINE_HOLD_S")
        self.hold_s = float(env_hold) if env_hold else HOLD_S
        self._hold = threading.Condition()
        self._held: duckdb.DuckDBPyConnection | None = None
        self._users = 0
        self._last_used = 0.0
        self._timer: threading.Timer | None = None
        self._yielding = False
        self._local = threading.local()

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one operation; the process holds the file only while operations run."""
        con = self._acquire()
        try:
            cur = con.cursor()
        except BaseException:
            self._release()
            raise
        try:
            yield cur
        finally:
            cur.close()
            self._release()

    def _acquire(self) -> duckdb.DuckDBPyConnection:
        with self._hold:
            nested = getattr(self._local, "depth", 0) > 0  # this thread already runs an operation
            while self._yielding and not nested:
                self._hold.wait()
            if self._held is not None and not nested and self._others_waiting():
                self._yield_to_others()
            if self._held is None:
                self._held = self._open()
            self._users += 1
            self._local.depth = getattr(self._local, "depth", 0) + 1
            return self._held

    def _release(self) -> None:
        with self._hold:
            self._users -= 1
            self._local.depth -= 1
            self._last_used = time.monotonic()
            if self._users == 0:
                if self._others_waiting():
                    self._close_held()
                elif self._timer is None:
                    self._timer = threading.Timer(self.hold_s, self._idle_close)
                    self._timer.daemon = True
                    self._timer.start()
            self._hold.notify_all()

    def _idle_close(self) -> None:
        with self._hold:
            self._timer = None
            if self._held is None or self._users:
                return
            left = self._last_used + self.hold_s - time.monotonic()
            if left > 0.005:
                self._timer = threading.Timer(left, self._idle_close)
                self._timer.daemon = True
                self._timer.start()
                return
            self._close_held()

    def _close_held(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None

    def _yield_to_others(self) -> None:
        """Let a waiting process in: close once no operation runs, pause while it still waits (bounded)."""
        self._yielding = True
        try:
            while self._users:
                self._hold.wait()
            self._close_held()
            until = time.monotonic() + 2.0
            while self._others_waiting() and time.monotonic() < until:
                self._hold.wait(0.02)
        finally:
            self._yielding = False
            self._hold.notify_all()

    def _marker(self) -> Path:
        return self.path.with_name(f"{self.path.name}.wait-{os.getpid()}")

    def _others_waiting(self) -> bool:
        now = time.time()
        mine = self._marker().name
        for m in self.path.parent.glob(f"{self.path.name}.wait-*"):
            try:
                fresh = now - m.stat().st_mtime < 30
            except OSError:
                continue
            if fresh and m.name != mine:
                return True
        return False

    def _open(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.01
        attempts = 0
        marker = self._marker()
        try:
            while True:
                attempts += 1
                try:
                    return duckdb.connect(str(self.path), read_only=self.read_only)
                except duckdb.Error as exc:
                    if not _is_lock_conflict(exc):
                        raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise StoreError(
                            f"store busy: {self.path} is held by another process (tried {attempts} times in "
                            f"{self.busy_timeout:.0f} s); try again"
                        ) from exc
                    with contextlib.suppress(OSError):
                        marker.touch()
                    time.sleep(min(left, pause * (0.5 + random.random())))
                    pause = min(pause * 2, 0.25)
        finally:
            with contextlib.suppress(OSError):
                marker.unlink(missing_ok=True)

    def signature(self) -> tuple[int, ...]:
        """Inode, size and modification time of the file and its WAL: they change with every write, from any process."""
        out: list[int] = []
        for p in (self.path, Path(f"{self.path}.wal")):
            try:
                st = p.stat()
                out += [st.st_ino, st.st_size, st.st_mtime_ns]
            except OSError:
                out += [0, 0, 0]
        return tuple(out)

    def close(self) -> None:
        """Close the file now (it would close by itself `hold_s` after the last operation)."""
        with self._hold:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            while self._users:
                self._hold.wait()
            self._close_held()
