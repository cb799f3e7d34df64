"""The store: one DuckDB file (data/roofline.duckdb in a checkout), its schema and seed, and one session's uploads in read-only mode.

`paths` says where things are; `files` lets several processes share the file
by taking turns; `schema` migrates it and loads the seed; `store` runs named
queries and transactions; `session` keeps a browser session's datasets
beside a read-only store.
"""

from core.store.paths import SEED, ReadOnlyError, StoreError, read_sql
from core.store.session import SessionStore, is_session_dataset
from core.store.store import Store, get_store

__all__ = ["SEED", "ReadOnlyError", "SessionStore", "Store", "StoreError", "get_store", "is_session_dataset", "read_sql"]
