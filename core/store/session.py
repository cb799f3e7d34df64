"""One browser session's datasets beside a read-only store (ROOFLINE_READ_ONLY=1)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import polars as pl

from core.store.paths import READ_ONLY_MESSAGE, ReadOnlyError, read_sql
from core.store.store import Store

#: Queries answered from the session's memory as well as the file (datasets); every other one reads the file.
SESSION_QUERIES = frozenset({"datasets", "dataset_by_hash", "dataset_measurements"})
_REFUSED = f"{READ_ONLY_MESSAGE} (only benchmark datasets can be imported, and they are kept in this session only)"
#: Named single-statement writes a SessionStore accepts (imports and deletes use transaction()).
SESSION_WRITES = frozenset({"rename_dataset"})


def is_session_dataset(dataset_id: int) -> bool:
    """Whether a dataset id is one of a SessionStore's (they count down from -1; stored ones count up from 1)."""
    return dataset_id < 0


class SessionStore:
    """One session's own datasets beside a read-only store; the read-only store is never written.

    For the app in read-only mode (ROOFLINE_READ_ONLY=1): uploads go into an
    in-memory DuckDB built by the same numbered migrations as the file (a
    `Store(":memory:")` without the seed), created on the first write and
    gone with this object. It answers the importer's interface (`query`,
    `transaction`, `execute`, `path`, `generation`):

    - datasets: the file's (ids 1, 2, ..., read-only) and this session's (ids
      -1, -2, ..., writable) listed together, newest first; a file's sha256
      is looked up in both, so the same file twice is still refused;
    - everything else, the catalogue included, is read from `base`, and
      `generation` is base's (session writes never touch the catalogue);
    - writes are transactions on the memory, so an import is still one
      transaction and a rejected one leaves nothing; writes other than a
      dataset's import, rename or delete (custom accelerators and models)
      are refused with ReadOnlyError, as are renames of the file's datasets.

    Two SessionStores share nothing: each has its own memory database.
    """

    session_only = True
    read_only = False  # imports are accepted (into the session only)

    def __init__(self, base: Store) -> None:
        self.base = base
        self.path = base.path
        self._memory: Store | None = None
        self._lock = threading.Lock()

    @property
    def generation(self) -> int:
        """The catalogue's generation: base's (this session's writes change datasets only)."""
        return self.base.generation

    def _mem(self) -> Store:
        """The session's memory database, created (migrated, session ids set) on first use."""
        with self._lock:
            if self._memory is None:
                mem = Store(":memory:", read_only=False, reference=False)
                with mem.transaction() as cur:
                    cur.execute(read_sql("session_dataset_ids"))
                self._memory = mem
            return self._memory

    def query(self, name: str, /, **params: Any) -> pl.DataFrame:
        """Run queries/<name>.sql: datasets from the session and the file, anything else from the file."""
        mem = self._memory
        if name not in SESSION_QUERIES or mem is None:
            return self.base.query(name, **params)
        if name == "dataset_measurements":
            return (mem if is_session_dataset(int(params["dataset_id"])) else self.base).query(name, **params)
        mine = mem.query(name, **params)
        if name == "dataset_by_hash" and mine.height:
            return mine
        both = pl.concat([mine, self.base.query(name, **params)], how="vertical_relaxed")
        return both.sort(["imported_at", "id"], descending=True) if name == "datasets" else both

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A transaction on this session's memory (never on the file); any exception rolls it back."""
        with self._mem().transaction() as cur:
            yield cur

    def execute(self, name: str, /, **params: Any) -> None:
        """Run one named write on a session dataset; other writes are refused (the file is read-only)."""
        if name not in SESSION_WRITES:
            raise ReadOnlyError(_REFUSED)
        if "id" in params and not self.dataset_writable(int(params["id"])):
            raise ReadOnlyError(f"dataset {params['id']} is in the read-only store (ROOFLINE_READ_ONLY=1): it cannot be changed")
        self._mem().execute(name, **params)

    def insert(self, name: str, rows: pl.DataFrame) -> None:
        """Refused: the catalogue is the read-only file's (imports go through transaction())."""
        raise ReadOnlyError(_REFUSED)

    def dataset_writable(self, dataset_id: int) -> bool:
        """Only this session's datasets can be renamed or deleted."""
        return is_session_dataset(dataset_id)

    def close(self) -> None:
        """Drop this session's datasets now (they go anyway when the object is collected)."""
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None
