"""The server's warm-up (pages/shared/warmup.py): what it imports, what it leaves ready, and that a page's first
run never waits on it for ever."""

from __future__ import annotations

import importlib

import pytest

import core.catalogue.catalogue as catalogue_module
from core.catalogue.catalogue import load_catalogue
from core.store import get_store
from pages.shared import warmup
from tests.helpers import ROOT


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


def test_the_collector_held_off_for_the_warm_up_runs_again_after_it_with_what_it_made_frozen(monkeypatch):
    """serve.py pauses the cyclic collector before importing Streamlit; the warm-up's end, even a failed one,
    turns it back on, freezes what the imports made, and unfreezes at exit so that it is collected then."""
    import atexit
    import gc

    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    try:
        warmup.pause_gc()
        assert not gc.isenabled()
        thread = warmup.start(server_timeout_s=0.2)  # no runtime here: it gives up, as a failed warm-up does
        assert warmup.wait(timeout_s=30) is True
        thread.join(timeout=5)
        assert gc.isenabled()
        assert gc.get_freeze_count() > 10_000  # the modules, classes and functions loaded so far
        assert registered == [gc.unfreeze]
        warmup._resume_gc()  # once only
        assert registered == [gc.unfreeze]
    finally:
        gc.unfreeze()
        gc.enable()


@pytest.mark.slow  # starts a process
def test_a_server_that_froze_its_objects_stops_without_reporting_leaks(tmp_path):
    """Frozen objects are not collected at exit: DuckDB's bindings then reported 44 'leaked' instances and types on
    every stop. The warm-up unfreezes at exit; this stops a process that paused, warmed and resumed as serve.py does."""
    import os
    import subprocess
    import sys

    script = "from pages.shared import warmup\nwarmup.pause_gc()\nwarmup.warm()\nwarmup._resume_gc()\n"
    env = {**os.environ, "ROOFLINE_DB": str(tmp_path / "w.duckdb"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stdout + done.stderr, done.stderr[-2000:]
