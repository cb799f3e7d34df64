"""The server's warm-up (pages/shared/warmup.py): what it imports, what it leaves ready, and that a page's first
run never waits on it for ever."""

from __future__ import annotations

import importlib
from pathlib import Path

import core.catalogue.catalogue as catalogue_module
from core.catalogue.catalogue import load_catalogue
from core.store import get_store
from pages.shared import warmup

ROOT = Path(__file__).resolve().parents[2]


def test_the_app_modules_are_every_helper_module_of_the_pages_and_no_page_script():
    """Streamlit runs the page scripts itself; every other module under pages/ is imported by some page's first run."""
    modules = warmup.app_modules()
    on_disk = sorted(f"pages.{p.parent.name}.{p.stem}" for p in (ROOT / "pages").glob("*/*.py") if p.stem not in ("page", "__init__"))
    assert modules == on_disk
    assert {"pages.shared.data", "pages.shared.sidebar", "pages.roofline.terms", "pages.measured.forms"} <= set(modules)
    assert not [m for m in modules if m.endswith(".page")]
    for name in modules:
        importlib.import_module(name)  # each one imports on its own


def test_with_no_warm_up_started_a_first_run_does_not_wait():
    """`streamlit run streamlit_app.py` and AppTest start none: wait() answers at once."""
    assert warmup.wait(timeout_s=0) is True


def test_a_warm_up_that_fails_still_lets_the_first_run_go_on():
    """No server comes up here (no Streamlit runtime): the warm-up gives up after its bound, and wait() returns
    instead of holding the page's first run for ever."""
    thread = warmup.start(server_timeout_s=0.2)
    assert warmup.wait(timeout_s=30) is True
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_after_the_warm_up_the_first_run_finds_the_store_open_and_the_catalogue_loaded(tmp_path, monkeypatch):
    """warm() builds the store from the seed and loads its catalogue into core's cache: the page's later call
    builds nothing again."""
    db = tmp_path / "warm.duckdb"
    monkeypatch.setenv("ROOFLINE_DB", str(db))
    warmup.warm()
    assert db.exists()
    built = []
    real = catalogue_module.build_catalogue
    monkeypatch.setattr(catalogue_module, "build_catalogue", lambda *a, **k: built.append(1) or real(*a, **k))
    cat = load_catalogue(get_store())
    assert built == []
    assert cat.key.startswith(str(db))
    assert "h100-sxm" in cat.gpu_index and "llama-3.1-70b" in cat.records
