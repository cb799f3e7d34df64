"""Warm the server up while the first browser loads the page's code, not after it asks for the page.

From a cold start a browser spends about a second fetching and starting Streamlit's frontend before it asks
the server for the page; the server sat idle through it, then imported the app (Altair, pandas, PyArrow,
Polars, DuckDB, every module of the app), opened the store (creating it from data/seed on the first run)
and loaded the catalogue, all on the first script run. `serve.py` calls `start()`:
once the server is up, a background thread does that work, while the browser loads; the first script run
calls `wait()` before it imports anything of the app, so no two threads import the same modules at once
(two sessions' first runs importing pandas together once failed with "partially initialized module",
benchmarks/load.py).

Without `start()` (`streamlit run streamlit_app.py`, AppTest) `wait()` returns at once and the first run
does the work itself, as before. A warm-up that fails is logged and leaves the work to the script run,
which then shows the error where it belongs, on the page.

`serve.py` also calls `pause_gc()` before it imports Streamlit: importing Streamlit and the app creates about
240,000 objects that live as long as the server, and Python's cyclic collector traversed them all in three full
collections while they were being made (importing, opening the store and loading the catalogue took 1.27-1.43 s
with the collector on, 1.08-1.17 s without it, three runs each; a collection right after found 10 unreachable
objects). The collector runs again when the warm-up ends, with those objects frozen (`gc.freeze()`): no later
collection, during a page's runs, traverses them again.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import logging
import threading
import time
from pathlib import Path

_LOG = logging.getLogger(__name__)
_PAGES = Path(__file__).resolve().parent.parent

#: Set when no warm-up is under way: at import, and once a started warm-up has ended (done or failed).
_idle = threading.Event()
_idle.set()
#: True while pause_gc() holds the cyclic collector off, until the warm-up ends.
_gc_paused = False


def pause_gc() -> None:
    """Hold Python's cyclic garbage collector off until the warm-up started next ends (serve.py, before it
    imports Streamlit); the warm-up then freezes what the imports created and turns the collector back on."""
    global _gc_paused
    gc.disable()
    _gc_paused = True


def _resume_gc() -> None:
    global _gc_paused
    if _gc_paused:
        gc.freeze()  # the modules, classes and catalogue just loaded live as long as the server: no collection visits them again
        # at exit they are collected as before (frozen, DuckDB's types were reported as leaked on every stop)
        atexit.register(gc.unfreeze)
        gc.enable()
        _gc_paused = False


def start(*, server_timeout_s: float = 120.0) -> threading.Thread:
    """Warm up in a daemon thread once the server has started (so it does not delay the server's start)."""
    _idle.clear()
    thread = threading.Thread(target=_run, args=(server_timeout_s,), name="warm-up", daemon=True)
    thread.start()
    return thread


def wait(timeout_s: float = 120.0) -> bool:
    """Block until no warm-up is under way (at most `timeout_s`); True when none is."""
    return _idle.wait(timeout_s)


def app_modules() -> list[str]:
    """The app's own modules that pages import: every `pages/<folder>/<name>.py` but the page scripts themselves
    (Streamlit runs those; it does not import them)."""
    return sorted(f"pages.{p.parent.name}.{p.stem}" for p in _PAGES.glob("*/*.py") if p.name not in ("page.py", "__init__.py"))


def warm() -> None:
    """Import what a page's first run imports (pandas too: Streamlit's tables and pyarrow's lists import it on
    first use), open the store (built from data/seed on a first run) and load its catalogue; core keeps both."""
    for name in ("altair", "pandas", "pyarrow", *app_modules()):
        importlib.import_module(name)
    from core.catalogue.catalogue import load_catalogue
    from core.store import get_store

    load_catalogue(get_store())


def _run(server_timeout_s: float) -> None:
    try:
        _until_serving(server_timeout_s)
        t0 = time.perf_counter()
        warm()
        _LOG.debug("warm-up done in %.0f ms", (time.perf_counter() - t0) * 1e3)
    except Exception:  # the first script run meets the same error and shows it on the page
        _LOG.warning("warm-up failed; the first page run does the work instead", exc_info=True)
    finally:
        _resume_gc()
        _idle.set()


def _until_serving(timeout_s: float) -> None:
    """Wait until Streamlit's runtime runs (the server listens): the app's modules create their caches on import,
    which need the runtime, and work done before it would only delay the server's start."""
    from pages.shared.streamlit_private import runtime_serving

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if runtime_serving():
            return
        time.sleep(0.01)
    raise TimeoutError(f"the server did not start within {timeout_s:.0f} s")
