"""The store's schema and reference tables: numbered migrations, and the seed loaded when it changes.

- `migrate` applies the numbered `.sql` files in queries/migrations/ not yet
  recorded in `schema_migrations`, each in its own transaction.
- `refresh_reference` rebuilds the reference tables (`accelerators`,
  `models`, `prices`, `reference_measurements`) from data/seed/ whenever the seed's hash changes; user tables
  (`custom_*`, datasets) are never touched by that.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import duckdb
import polars as pl

from core.catalogue.deployments import deployment_seed_frame
from core.catalogue.prices import price_seed_frame
from core.catalogue.reference import reference_seed_frame
from core.catalogue.seed import accelerator_seed_frame, model_seed_frame
from core.catalogue.serving_power import power_seed_frame
from core.store.paths import MIGRATIONS


class Store(Protocol):
    """What the schema needs of a store: its seed folder, cursors, transactions and named queries.

    `core.store.store.Store` is one; the schema names only this shape, so the
    store can import the schema without the schema importing the store.
    """

    seed_dir: Path

    def connect(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]: ...

    def transaction(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]: ...

    def query(self, name: str, /, **params: Any) -> pl.DataFrame: ...


_MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
)


def migration_files() -> dict[int, Path]:
    """Version -> file of every numbered migration."""
    return {int(p.name.split("_", 1)[0]): p for p in sorted(MIGRATIONS.glob("*.sql"))}


def pending_migrations(store: Store) -> list[int]:
    """The migrations the store's file has not had yet."""
    with store.connect() as con:
        known = con.sql("SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'").fetchall()
        done = {r[0] for r in con.sql("SELECT version FROM schema_migrations").fetchall()} if known[0][0] else set()
    return [v for v in migration_files() if v not in done]


def migrate(store: Store) -> list[int]:
    """Apply the numbered migrations not yet recorded; the versions applied now.

    Each one is checked and applied inside its own transaction, so two
    processes opening a new file at once never apply one twice.
    """
    applied: list[int] = []
    if not pending_migrations(store):  # the common case, one read: a store opened again has them all
        return applied
    with store.transaction() as cur:
        cur.execute(_MIGRATIONS_TABLE)
    for version, path in migration_files().items():
        with store.transaction() as cur:
            row = cur.execute("SELECT count(*) FROM schema_migrations WHERE version = $v", {"v": version}).fetchone()
            if row and row[0]:
                continue
            cur.execute(path.read_text(encoding="utf-8"))
            cur.execute("INSERT INTO schema_migrations VALUES ($v, $n, now())", {"v": version, "n": path.stem})
        applied.append(version)
    return applied


def seed_hash(seed_dir: Path) -> str:
    """sha256 over every file of the seed folder (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in seed_dir.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(seed_dir)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def refresh_reference(store: Store, *, force: bool = False) -> bool:
    """Rebuild the reference tables from the store's seed folder when it changed; True if rebuilt."""
    current = seed_hash(store.seed_dir)
    stored = store.query("seed_state")
    if not force and stored.height and stored["sha256"][0] == current:
        return False
    gpus = accelerator_seed_frame(store.seed_dir)
    models = model_seed_frame(store.seed_dir)
    prices = price_seed_frame(store.seed_dir, set(gpus["id"].to_list()))
    reference = reference_seed_frame(store.seed_dir, set(gpus["id"].to_list()), set(models["id"].to_list()))
    deployments = deployment_seed_frame(store.seed_dir, set(gpus["id"].to_list()), set(models["id"].to_list()))
    power = power_seed_frame(store.seed_dir, set(gpus["id"].to_list()), set(models["id"].to_list()))
    with store.transaction() as cur:
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
        cur.execute("DELETE FROM prices")
        cur.register("seed_prices", prices)
        cur.execute("INSERT INTO prices BY NAME SELECT * FROM seed_prices")
        cur.execute("DELETE FROM reference_measurements")
        cur.register("seed_reference", reference)
        cur.execute("INSERT INTO reference_measurements BY NAME SELECT * FROM seed_reference")
        cur.execute("DELETE FROM deployment_measurements")
        cur.register("seed_deployments", deployments)
        cur.execute("INSERT INTO deployment_measurements BY NAME SELECT * FROM seed_deployments")
        cur.execute("DELETE FROM serving_power")
        cur.register("seed_power", power)
        cur.execute("INSERT INTO serving_power BY NAME SELECT * FROM seed_power")
        cur.execute("DELETE FROM seed_state")
        cur.execute("INSERT INTO seed_state VALUES ($h, now())", {"h": current})
    return True
