"""Shared fixtures for the unit tests."""

from __future__ import annotations

import pytest

from core.catalogue.catalogue import Catalogue, load_catalogue
from core.store import Store


@pytest.fixture(scope="session")
def cat(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    """The seeded catalogue, built once from a fresh DuckDB store in a temp folder."""
    store = Store(tmp_path_factory.mktemp("db") / "t.duckdb")
    return load_catalogue(store)
