"""One DuckDB file shared by several processes, which take turns.

DuckDB lets one process at a time hold a file read-write. Every operation
(one query, one transaction) runs on its own cursor of a connection that the
process opens when its first operation starts and closes `hold_s` (0.25 s,
ROOFLINE_HOLD_S) after the last one ends, or at once when another process is
waiting for the file. So a process holds the file only while it works.

The turn is a `filelock` lock beside the file (`<db>.lock`, gone when
released): a process that opens the file read-write takes it first, waiting
up to `busy_timeout` seconds (10 s, ROOFLINE_BUSY_TIMEOUT) and then
StoreError("store busy: ..."). While it waits it leaves a `<db>.wait-<pid>`
marker beside the file, which the holder reads as "close soon". A reader
that may not write (ROOFLINE_READ_ONLY=1) takes no lock, and a program
outside the app (the DuckDB shell) takes none either: against those DuckDB's
own lock is retried, with growing pauses, within the same time.
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
from filelock import FileLock, Timeout

from core.store.paths import StoreError, store_settings


def _is_lock_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text)


class SharedFile:
    """Connections to one DuckDB file, held only while operations run (see the module docstring)."""

    def __init__(self, path: Path, *, read_only: bool, busy_timeout: float | None = None) -> None:
        self.path = path
        self.read_only = read_only
        env = store_settings()
        self.busy_timeout = busy_timeout if busy_timeout is not None else env.busy_timeout
        self.hold_s = env.hold_s
        self._hold = threading.Condition()
        self._held: duckdb.DuckDBPyConnection | None = None
        self._users = 0
        self._last_used = 0.0
        self._timer: threading.Timer | None = None
        self._yielding = False
        self._local = threading.local()
        # one lock object per file in a process (is_singleton), taken by count across its threads and stores, as the
        # process's own connections share DuckDB's one database instance
        self._turn = None if read_only else FileLock(f"{path}.lock", thread_local=False, is_singleton=True)

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
            try:
                self._held.close()
            finally:
                self._held = None
                if self._turn is not None:
                    self._turn.release()

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

    def _busy(self, attempts: int) -> StoreError:
        return StoreError(
            f"store busy: {self.path} is held by another process (waited {self.busy_timeout:.0f} s"
            + (f", tried {attempts} times" if attempts > 1 else "")
            + "); try again"
        )

    def _take_turn(self, deadline: float) -> None:
        """This process's turn at the file: at once if free, else waiting (its marker beside the file) until the deadline."""
        assert self._turn is not None
        try:
            self._turn.acquire(blocking=False)
            return
        except Timeout:
            pass
        marker = self._marker()
        try:
            with contextlib.suppress(OSError):
                marker.touch()
            self._turn.acquire(timeout=max(deadline - time.monotonic(), 0.0), poll_interval=0.01)
        except Timeout:
            raise self._busy(1) from None
        finally:
            with contextlib.suppress(OSError):
                marker.unlink(missing_ok=True)

    def _open(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.busy_timeout
        if self._turn is not None:
            self._take_turn(deadline)
        try:
            return self._connect(deadline)
        except BaseException:
            if self._turn is not None:
                self._turn.release()
            raise

    def _connect(self, deadline: float) -> duckdb.DuckDBPyConnection:
        """DuckDB's connection, retried while a holder that takes no turn (a reader, another program) has the file."""
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
                        raise self._busy(attempts) from exc
                    with contextlib.suppress(OSError):
                        marker.touch()
                    time.sleep(min(left, pause * (0.5 + random.random())))
                    pause = min(pause * 2, 0.25)
        finally:
            if attempts > 1:
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
