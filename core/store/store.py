"""The one DuckDB store: named queries, transactions, the catalogue's generation.

- The file (default data/roofline.duckdb; ROOFLINE_DB or --db moves it) is
  created on first use, migrated and seeded (core.store.schema).
- Every query is a named `.sql` file in queries/ with values bound as
  parameters; `query()` returns a Polars frame.
- Writes run in one transaction: a rejected write changes nothing.
- Processes share the file by taking turns (core.store.files).
- `ROOFLINE_READ_ONLY=1`: the file is opened read-only and every write is
  refused with ReadOnlyError; a store file that does not exist yet is built
  in memory from the seed instead. The app then keeps each browser session's
  uploads in a SessionStore (core.store.session).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from core.store import schema
from core.store.files import SharedFile
from core.store.paths import READ_ONLY_MESSAGE, SEED, ReadOnlyError, StoreError, default_db_path, read_only_from_env, read_sql

#: What a storage failure's text says, and what it is in words, with what to do (first match wins).
_PROBLEMS = (
    (("could not read enough bytes", "truncated"), "is truncated (shorter than DuckDB wrote it)", "restore"),
    (("checksum", "corrupt", "not a valid duckdb", "invalid database", "failed to read database header"), "is corrupt", "restore"),
    (("no space left", "disk full", "errno 28"), "cannot be written: the disk holding it is full", "space"),
    (("permission denied", "read-only file system", "errno 13", "errno 30"), "cannot be written here", "writable"),
)
_WHAT_TO_DO = {
    "restore": "restore it from a backup, or move it aside (it holds your datasets and custom entries) and start afresh: the app "
    "builds a new store from the seed",
    "space": "free space on that disk, or set ROOFLINE_DB to a store on another disk",
    "writable": "set ROOFLINE_DB to a path this user may write, or run with ROOFLINE_READ_ONLY=1",
}


def storage_problem(exc: BaseException, path: Path) -> StoreError | None:
    """A storage failure (a truncated or corrupt file, a full disk, a folder that cannot be written) as one StoreError
    naming the file and what to do, the original error kept in its text; None for any other error (a query's own)."""
    text = str(exc)
    low = f"{text} errno {getattr(exc, 'errno', '')}".lower()
    for marks, what, todo in _PROBLEMS:
        if any(m in low for m in marks):
            first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
            return StoreError(f"the store file {path} {what}; {_WHAT_TO_DO[todo]} (DuckDB: {first[:200]})")
    return None


class Store:
    """One DuckDB file (or an in-memory database), migrated and seeded on open; a cursor per operation.

    `reference=False` leaves the reference tables empty (a SessionStore's
    memory holds datasets only; its catalogue is the file store's).
    """

    session_only = False  # datasets here are stored (a SessionStore's live in one session)

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        seed_dir: Path = SEED,
        read_only: bool | None = None,
        busy_timeout: float | None = None,
        reference: bool = True,
    ) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.seed_dir = seed_dir
        self.read_only = read_only_from_env() if read_only is None else read_only
        self._lock = threading.RLock()  # one write transaction at a time within this process
        self._writes = 0
        self._signature: tuple[int, ...] | None = None
        self._generation = 0
        self._building = False
        self.file = SharedFile(self.path, read_only=self.read_only, busy_timeout=busy_timeout)
        _OPEN.add(self)
        # an in-memory store keeps its one connection (closing it would lose the data)
        self._memory: duckdb.DuckDBPyConnection | None = None
        self.in_memory = str(self.path) == ":memory:" or (self.read_only and not self.path.exists())
        if self.in_memory:
            self._memory = duckdb.connect(":memory:")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.read_only and not self.in_memory:
            pending = schema.pending_migrations(self)
            if pending:
                raise StoreError(
                    f"the store at {self.path} needs migrations {pending} but ROOFLINE_READ_ONLY=1 forbids writing; "
                    "open it once without ROOFLINE_READ_ONLY"
                )
            return  # a stale seed is served as stored: rebuilding it would be a write
        self._building = True
        try:
            schema.migrate(self)
            if reference:
                schema.refresh_reference(self)
        except (duckdb.Error, OSError) as exc:
            problem = storage_problem(exc, self.path)
            if problem is None:
                raise
            raise problem from exc
        finally:
            self._building = False
        if not self.in_memory:
            # closing checkpoints what building wrote into the file now: closed later (ROOFLINE_HOLD_S after the last read),
            # the checkpoint changed the file's signature, so the first catalogue loaded from it looked stale and was
            # built again (about 0.2 s of the first page after a cold start)
            self.file.close()

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one operation (the file is held only while operations run)."""
        if self._memory is not None:
            cur = self._memory.cursor()
            try:
                yield cur
            finally:
                cur.close()
            return
        try:
            with self.file.connect() as cur:
                yield cur
        except (duckdb.Error, OSError) as exc:
            problem = storage_problem(exc, self.path)
            if problem is None:
                raise
            raise problem from exc

    # -- reading ---------------------------------------------------------
    def query(self, name: str, /, **params: Any) -> pl.DataFrame:
        """Run queries/<name>.sql with `$param` values bound; the result as a frame."""
        sql = read_sql(name)
        with self.connect() as con:
            frame: pl.DataFrame = con.sql(sql, params=params or None).pl()
            return frame

    @property
    def generation(self) -> int:
        """A number that changes whenever the store may have changed (here or in another process).

        Bumped by every write of this Store, and whenever the file's (and its
        WAL's) size, modification time or inode differ from the last look, so
        caches keyed on it (load_catalogue) see another process's writes.
        """
        if self._memory is None:
            sig = self.file.signature()
            if sig != self._signature:
                self._signature = sig
                self._generation += 1
        return self._generation + self._writes

    @generation.setter
    def generation(self, value: int) -> None:
        self._writes = value - self._generation

    # -- writing ---------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection inside BEGIN/COMMIT; any exception rolls everything back."""
        if self.read_only and not self._building:
            raise ReadOnlyError(READ_ONLY_MESSAGE)
        with self._lock, self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                # a failed commit may have ended the transaction already: ROLLBACK then raises "no transaction is active",
                # which would hide the error that matters
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
                raise
            finally:
                self._writes += 1

    def execute(self, name: str, /, **params: Any) -> None:
        """Run one named write statement in its own transaction."""
        with self.transaction() as cur:
            cur.execute(read_sql(name), params or None)

    def insert(self, name: str, rows: pl.DataFrame) -> None:
        """Run one named insert that reads the frame `rows`, in its own transaction."""
        with self.transaction() as cur:
            cur.register("rows", rows)
            cur.execute(read_sql(name))
            cur.unregister("rows")

    def dataset_writable(self, dataset_id: int) -> bool:
        """Whether a dataset may be renamed or deleted here (not in read-only mode)."""
        return not self.read_only

    def close(self) -> None:
        """Close the file now (it would close by itself `hold_s` after the last operation)."""
        self.file.close()
        if self._memory is not None:
            self._memory.close()
            self._memory = None


_OPEN: weakref.WeakSet[Store] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Close held files before the interpreter exits (a pending idle timer must not close one mid-shutdown)."""
    for store in list(_OPEN):
        with contextlib.suppress(Exception):
            store.close()


_STORES: dict[str, Store] = {}
_STORES_LOCK = threading.Lock()


def get_store(path: str | Path | None = None) -> Store:
    """The process-wide Store for a path (it holds no connection between operations)."""
    key = str(Path(path) if path is not None else default_db_path())
    with _STORES_LOCK:
        if key not in _STORES:
            _STORES[key] = Store(key)
        return _STORES[key]
