"""The one DuckDB store: numbered migrations, seeded reference tables, named queries.

- The file (default `data/roofline.duckdb`, `ROOFLINE_DB` or `--db` to move it)
  is created on first use, migrated by the numbered `.sql` files in
  `queries/migrations/`, each recorded in `schema_migrations`.
- Reference tables (`accelerators`, `models`) are rebuilt from `data/seed/`
  whenever the seed's hash changes; user tables (`custom_*`, later uploads)
  are never touched by that.
- Every query is a named `.sql` file in `queries/` with values bound as
  parameters; `query()` runs it on its own connection and returns a Polars frame.
- Writes run in one transaction: a rejected write changes nothing.
- Processes share the file by taking turns: every operation (one query, one
  transaction) runs on its own cursor of a connection that the process opens
  when the first operation starts and closes `hold_s` (0.25 s) after the last
  one ends, or at once when another process is waiting. So a process holds
  DuckDB's file lock only while it works. When another process holds the
  lock, opening is retried with bounded backoff (`busy_timeout`, default
  10 s, `ROOFLINE_BUSY_TIMEOUT`), then `StoreError("store busy: ...")`.
- `ROOFLINE_READ_ONLY=1`: the file is opened read-only and every write is
  refused with `ReadOnlyError`; a store file that does not exist yet is built
  in memory from the seed instead. The app then keeps each browser session's
  uploads in a `SessionStore`: an in-memory DuckDB of the same schema (the
  same migrations) over the read-only store, which it never writes to.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import random
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
QUERIES = ROOT / "queries"
MIGRATIONS = QUERIES / "migrations"
SEED = ROOT / "data" / "seed"
DEFAULT_DB = ROOT / "data" / "roofline.duckdb"
BUSY_TIMEOUT_S = 10.0
HOLD_S = 0.25  # keep the file open this long after the last operation (opening costs ~30 ms)


class StoreError(RuntimeError):
    """The store cannot be opened or a write was refused; the message says why."""


class ReadOnlyError(StoreError):
    """A write was attempted while the store is read-only (ROOFLINE_READ_ONLY=1)."""


READ_ONLY_MESSAGE = "the store is read-only (ROOFLINE_READ_ONLY=1): nothing is saved; run without it to save changes"


def default_db_path() -> Path:
    """`ROOFLINE_DB` when set, else data/roofline.duckdb."""
    env = os.environ.get("ROOFLINE_DB")
    return Path(env) if env else DEFAULT_DB


def read_only_from_env() -> bool:
    """Whether ROOFLINE_READ_ONLY asks for a read-only store (1, true, yes, on)."""
    return os.environ.get("ROOFLINE_READ_ONLY", "").strip().lower() in {"1", "true", "yes", "on"}


def read_sql(name: str) -> str:
    """The text of queries/<name>.sql (names are code constants, never user input)."""
    path = QUERIES / f"{name}.sql"
    if not path.is_file():
        raise StoreError(f"no query named {name!r} in {QUERIES}")
    return path.read_text(encoding="utf-8")


def _is_lock_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text)


class Store:
    """One DuckDB file, migrated and seeded on open; a connection per operation.

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
        env_timeout = os.environ.get("ROOFLINE_BUSY_TIMEOUT")
        self.busy_timeout = busy_timeout if busy_timeout is not None else float(env_timeout) if env_timeout else BUSY_TIMEOUT_S
        self._lock = threading.RLock()  # one write transaction at a time within this process
        self._writes = 0
        self._signature: tuple[int, ...] | None = None
        self._generation = 0
        self._building = False
        env_hold = os.environ.get("ROOFLINE_HOLD_S")
        self.hold_s = float(env_hold) if env_hold else HOLD_S
        self._hold = threading.Condition()
        self._held: duckdb.DuckDBPyConnection | None = None
        self._users = 0
        self._last_used = 0.0
        self._timer: threading.Timer | None = None
        self._yielding = False
        self._local = threading.local()
        _OPEN.add(self)
        # an in-memory store keeps its one connection (closing it would lose the data)
        self._memory: duckdb.DuckDBPyConnection | None = None
        self.in_memory = str(self.path) == ":memory:" or (self.read_only and not self.path.exists())
        if self.in_memory:
            self._memory = duckdb.connect(":memory:")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.read_only and not self.in_memory:
            pending = self._pending_migrations()
            if pending:
                raise StoreError(
                    f"the store at {self.path} needs migrations {pending} but ROOFLINE_READ_ONLY=1 forbids writing; "
                    "open it once without ROOFLINE_READ_ONLY"
                )
            return  # a stale seed is served as stored: rebuilding it would be a write
        self._building = True
        try:
            self.migrate()
            if reference:
                self.refresh_reference()
        finally:
            self._building = False

    # -- connections -----------------------------------------------------
    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one operation; the process holds the file only while operations run.

        Opening DuckDB costs ~30 ms, so the file stays open while operations
        follow each other and is closed `hold_s` seconds after the last one
        ends, or as soon as no operation runs when another process is
        waiting for it (it leaves a `<db>.wait-<pid>` marker). Opening waits
        up to `busy_timeout` seconds, with growing pauses, while another
        process holds the file; then raises StoreError("store busy: ...").
        """
        if self._memory is not None:
            cur = self._memory.cursor()
            try:
                yield cur
            finally:
                cur.close()
            return
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
            sig = self._file_signature()
            if sig != self._signature:
                self._signature = sig
                self._generation += 1
        return self._generation + self._writes

    @generation.setter
    def generation(self, value: int) -> None:
        self._writes = value - self._generation

    def _file_signature(self) -> tuple[int, ...]:
        out: list[int] = []
        for p in (self.path, Path(f"{self.path}.wal")):
            try:
                st = p.stat()
                out += [st.st_ino, st.st_size, st.st_mtime_ns]
            except OSError:
                out += [0, 0, 0]
        return tuple(out)

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
                con.execute("ROLLBACK")
                raise
            finally:
                self._writes += 1

    def execute(self, name: str, /, **params: Any) -> None:
        """Run one named write statement in its own transaction."""
        with self.transaction() as cur:
            cur.execute(read_sql(name), params or None)

    def dataset_writable(self, dataset_id: int) -> bool:
        """Whether a dataset may be renamed or deleted here (not in read-only mode)."""
        return not self.read_only

    def close(self) -> None:
        """Close the file now (it would close by itself `hold_s` after the last operation)."""
        with self._hold:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            while self._users:
                self._hold.wait()
            self._close_held()
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    # -- schema and seed -------------------------------------------------
    _MIGRATIONS_TABLE = (
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )

    def _pending_migrations(self) -> list[int]:
        with self.connect() as con:
            known = con.sql("SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'").fetchall()
            done = {r[0] for r in con.sql("SELECT version FROM schema_migrations").fetchall()} if known[0][0] else set()
        return [v for v in self._migration_files() if v not in done]

    @staticmethod
    def _migration_files() -> dict[int, Path]:
        return {int(p.name.split("_", 1)[0]): p for p in sorted(MIGRATIONS.glob("*.sql"))}

    def migrate(self) -> list[int]:
        """Apply the numbered migrations not yet recorded; the versions applied now.

        Each one is checked and applied inside its own transaction, so two
        processes opening a new file at once never apply one twice.
        """
        applied = []
        with self.transaction() as cur:
            cur.execute(self._MIGRATIONS_TABLE)
        for version, path in self._migration_files().items():
            with self.transaction() as cur:
                row = cur.execute("SELECT count(*) FROM schema_migrations WHERE version = $v", {"v": version}).fetchone()
                if row and row[0]:
                    continue
                cur.execute(path.read_text(encoding="utf-8"))
                cur.execute("INSERT INTO schema_migrations VALUES ($v, $n, now())", {"v": version, "n": path.stem})
            applied.append(version)
        return applied

    def seed_hash(self) -> str:
        """sha256 over every file of the seed folder (names and contents)."""
        digest = hashlib.sha256()
        for path in sorted(p for p in self.seed_dir.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(self.seed_dir)).encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()

    def refresh_reference(self, *, force: bool = False) -> bool:
        """Rebuild the reference tables from the seed when it changed; True if rebuilt."""
        from core.catalogue import accelerator_seed_frame, model_seed_frame

        current = self.seed_hash()
        stored = self.query("seed_state")
        if not force and stored.height and stored["sha256"][0] == current:
            return False
        gpus = accelerator_seed_frame(self.seed_dir)
        models = model_seed_frame(self.seed_dir)
        with self.transaction() as cur:
            if not force:  # another process may have rebuilt it meanwhile
                row = cur.execute("SELECT count(*) FROM seed_state WHERE sha256 = $h", {"h": current}).fetchone()
                if row and row[0]:
                    return False
            cur.execute("DELETE FROM accelerators")
            cur.register("seed_gpus", gpus)
            cur.execute("INSERT INTO accelerators BY NAME SELECT * FROM seed_gpus")
            cur.execute("DELETE FROM models")
            cur.register("seed_models", models)
            cur.execute("INSERT INTO models BY NAME SELECT * FROM seed_models")
            cur.execute("DELETE FROM seed_state")
            cur.execute("INSERT INTO seed_state VALUES ($h, now())", {"h": current})
        return True


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


# -- one browser session's datasets over a read-only store ---------------------------------

#: Queries answered from the session's memory as well as the file (datasets); every other one reads the file.
SESSION_QUERIES = frozenset({"datasets", "dataset_by_hash", "dataset_measurements"})
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
            raise ReadOnlyError(f"{READ_ONLY_MESSAGE} (only benchmark datasets can be imported, and they are kept in this session only)")
        if "id" in params and not self.dataset_writable(int(params["id"])):
            raise ReadOnlyError(f"dataset {params['id']} is in the read-only store (ROOFLINE_READ_ONLY=1): it cannot be changed")
        self._mem().execute(name, **params)

    def dataset_writable(self, dataset_id: int) -> bool:
        """Only this session's datasets can be renamed or deleted."""
        return is_session_dataset(dataset_id)

    def close(self) -> None:
        """Drop this session's datasets now (they go anyway when the object is collected)."""
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None
