"""The one DuckDB store: numbered migrations, seeded reference tables, named queries.

- The file (default `data/roofline.duckdb`, `ROOFLINE_DB` or `--db` to move it)
  is created on first use, migrated by the numbered `.sql` files in
  `queries/migrations/`, each recorded in `schema_migrations`.
- Reference tables (`accelerators`, `models`) are rebuilt from `data/seed/`
  whenever the seed's hash changes; user tables (`custom_*`, later uploads)
  are never touched by that.
- Every query is a named `.sql` file in `queries/` with values bound as
  parameters; `query()` runs it on a fresh cursor (DuckDB refuses concurrent
  calls on one connection) and returns a Polars frame.
- Writes run in one transaction: a rejected write changes nothing.
"""

from __future__ import annotations

import hashlib
import os
import threading
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


class StoreError(RuntimeError):
    """The store cannot be opened or a write was refused; the message says why."""


def default_db_path() -> Path:
    """`ROOFLINE_DB` when set, else data/roofline.duckdb."""
    env = os.environ.get("ROOFLINE_DB")
    return Path(env) if env else DEFAULT_DB


def read_sql(name: str) -> str:
    """The text of queries/<name>.sql (names are code constants, never user input)."""
    path = QUERIES / f"{name}.sql"
    if not path.is_file():
        raise StoreError(f"no query named {name!r} in {QUERIES}")
    return path.read_text(encoding="utf-8")


class Store:
    """One DuckDB file, migrated and seeded on open."""

    def __init__(self, path: str | Path | None = None, *, seed_dir: Path = SEED) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.seed_dir = seed_dir
        self._lock = threading.RLock()
        self.generation = 0  # bumped on every write, for caches keyed on the store
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._con = duckdb.connect(str(self.path))
        except duckdb.Error as exc:
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
        self.migrate()
        self.refresh_reference()

    # -- reading ---------------------------------------------------------
    def query(self, name: str, /, **params: Any) -> pl.DataFrame:
        """Run queries/<name>.sql with `$param` values bound; the result as a frame."""
        sql = read_sql(name)
        cur = self._con.cursor()
        try:
            frame: pl.DataFrame = cur.sql(sql, params=params or None).pl()
            return frame
        finally:
            cur.close()

    # -- writing ---------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor inside BEGIN/COMMIT; any exception rolls everything back."""
        with self._lock:
            cur = self._con.cursor()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            finally:
                cur.close()
            self.generation += 1

    def execute(self, name: str, /, **params: Any) -> None:
        """Run one named write statement in its own transaction."""
        with self.transaction() as cur:
            cur.execute(read_sql(name), params or None)

    def close(self) -> None:
        self._con.close()

    # -- schema and seed -------------------------------------------------
    def migrate(self) -> list[int]:
        """Apply the numbered migrations not yet recorded; the versions applied now."""
        with self._lock:
            self._con.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
            )
            done = {row[0] for row in self._con.execute("SELECT version FROM schema_migrations").fetchall()}
        applied = []
        for path in sorted(MIGRATIONS.glob("*.sql")):
            version = int(path.name.split("_", 1)[0])
            if version in done:
                continue
            with self.transaction() as cur:
                cur.execute(path.read_text(encoding="utf-8"))
                cur.execute(
                    "INSERT INTO schema_migrations VALUES ($v, $n, now())",
                    {"v": version, "n": path.stem},
                )
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
            cur.execute("DELETE FROM accelerators")
            cur.register("seed_gpus", gpus)
            cur.execute("INSERT INTO accelerators BY NAME SELECT * FROM seed_gpus")
            cur.execute("DELETE FROM models")
            cur.register("seed_models", models)
            cur.execute("INSERT INTO models BY NAME SELECT * FROM seed_models")
            cur.execute("DELETE FROM seed_state")
            cur.execute("INSERT INTO seed_state VALUES ($h, now())", {"h": current})
        return True


_STORES: dict[str, Store] = {}
_STORES_LOCK = threading.Lock()


def get_store(path: str | Path | None = None) -> Store:
    """The process-wide Store for a path (one connection per file per process)."""
    key = str(Path(path) if path is not None else default_db_path())
    with _STORES_LOCK:
        if key not in _STORES:
            _STORES[key] = Store(key)
        return _STORES[key]
