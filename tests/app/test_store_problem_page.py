"""A store that cannot be read shows one message on the page, not an exception box (issue 32)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.store import Store
from tests.app.conftest import APP


@pytest.fixture
def truncated_store(tmp_path, monkeypatch):
    from pages.shared import data

    db = tmp_path / "broken.duckdb"
    Store(db).file.close()
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)
    monkeypatch.setenv("ROOFLINE_DB", str(db))
    data.store.clear()
    yield db
    data.store.clear()


@pytest.mark.parametrize("page", ["home", "measured"])
def test_a_truncated_store_is_one_message_on_the_page(truncated_store, page):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    if page != "home":
        at.switch_page(f"pages/{page}/page.py")
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "The store cannot be used" in errors[0] and "truncated" in errors[0]
