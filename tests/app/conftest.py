"""AppTest fixtures: the real streamlit_app.py on a private store, pages reached through st.navigation."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import APP as APP_PATH

APP = str(APP_PATH)  # AppTest.from_file takes the script's path as a string


@pytest.fixture(scope="session", autouse=True)
def private_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every AppTest of the session uses one store in a temp folder."""
    mp = pytest.MonkeyPatch()
    db = tmp_path_factory.mktemp("apptest") / "app.duckdb"
    mp.setenv("ROOFLINE_DB", str(db))
    yield db
    mp.undo()


@pytest.fixture
def open_page() -> Callable[..., AppTest]:
    """Run the app, then switch to a page (optionally with query parameters) and run it."""

    def _open(page: str, **params: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=120)
        for k, v in params.items():
            at.query_params[k] = v
        at.run()
        if page != "home":
            at.switch_page(f"pages/{page}/page.py")
            at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return _open


def chart_frames(at: AppTest) -> list[pl.DataFrame]:
    """Every inline dataset of every Vega-Lite chart on the page, as frames."""
    frames = []
    for chart in at.get("vega_lite_chart"):
        for ds in chart.proto.datasets:
            table = pa.ipc.open_stream(io.BytesIO(ds.data.data)).read_all()
            frames.append(pl.from_arrow(table))
    return frames


@pytest.fixture
def own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A store of this test's own (the session's may hold datasets and entries by now); the app's cached store is reopened
    around it."""
    from core.store import get_store
    from pages.shared import data

    db = tmp_path / "own.duckdb"
    monkeypatch.setenv("ROOFLINE_DB", str(db))
    data.store.clear()
    yield db
    get_store(db).close()
    data.store.clear()
