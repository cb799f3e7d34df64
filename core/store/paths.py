"""Where the store's files are, and the store's errors.

In a checkout (the app, `pip install -e .`) the queries and migrations are
read from queries/ and the seed from data/seed/, and the DuckDB file defaults
to data/roofline.duckdb there. An installed wheel (`pip install .`) carries
both folders inside the package as core/bundled/ (pyproject.toml maps them)
and keeps its DuckDB file per user, in platformdirs' user data folder
(on Linux $XDG_DATA_HOME, default ~/.local/share, then roofline-explorer/).
ROOFLINE_DB or --db moves the file (`core.settings`).
"""

from __future__ import annotations

from pathlib import Path

from core.settings import Settings, SettingsError, settings, user_data_dir

_CHECKOUT = Path(__file__).resolve().parents[2]
IN_CHECKOUT = (_CHECKOUT / "queries").is_dir() and (_CHECKOUT / "data" / "seed").is_dir()
_FILES = _CHECKOUT if IN_CHECKOUT else Path(__file__).resolve().parents[1] / "bundled"
QUERIES = _FILES / "queries"
MIGRATIONS = QUERIES / "migrations"
SEED = _CHECKOUT / "data" / "seed" if IN_CHECKOUT else _FILES / "seed"


class StoreError(RuntimeError):
    """The store cannot be opened or a write was refused; the message says why."""


class ReadOnlyError(StoreError):
    """A write was attempted while the store is read-only (ROOFLINE_READ_ONLY=1)."""


READ_ONLY_MESSAGE = "the store is read-only (ROOFLINE_READ_ONLY=1): nothing is saved; run without it to save changes"


def store_settings() -> Settings:
    """The environment's settings, a malformed one as the StoreError that names it."""
    try:
        return settings()
    except SettingsError as exc:
        raise StoreError(str(exc)) from None


def default_db_path() -> Path:
    """`ROOFLINE_DB` when set, else data/roofline.duckdb in a checkout, else the user's data folder."""
    db = store_settings().db
    if db is not None:
        return db
    return _CHECKOUT / "data" / "roofline.duckdb" if IN_CHECKOUT else user_data_dir() / "roofline.duckdb"


def read_only_from_env() -> bool:
    """Whether ROOFLINE_READ_ONLY asks for a read-only store (1, true, yes, on)."""
    return store_settings().read_only


def read_sql(name: str) -> str:
    """The text of queries/<name>.sql (names are code constants, never user input)."""
    path = QUERIES / f"{name}.sql"
    if not path.is_file():
        raise StoreError(f"no query named {name!r} in {QUERIES}")
    return path.read_text(encoding="utf-8")
