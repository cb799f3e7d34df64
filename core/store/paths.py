"""Where the store's files are, and the store's errors.

The queries and migrations (queries/) and the seed (data/seed/) are read from
the checkout this package lives in; the DuckDB file defaults to
data/roofline.duckdb there (ROOFLINE_DB or --db moves it).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ROOT / "queries"
MIGRATIONS = QUERIES / "migrations"
SEED = ROOT / "data" / "seed"
DEFAULT_DB = ROOT / "data" / "roofline.duckdb"


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
