"""serve.py sets four things inside Streamlit and Starlette; each test fails when an upgrade moves what it sets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit import delta_generator, env_util, net_util
from streamlit.runtime.pages_manager import PagesManager


def test_the_flag_serve_sets_stops_streamlit_s_once_per_process_repl_check(monkeypatch):
    """With the flag set, the first element of a run no longer walks the stack to ask whether a REPL runs it."""

    def walked() -> bool:
        raise AssertionError("is_repl walked the stack")

    monkeypatch.setattr(env_util, "is_repl", walked)
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    with pytest.raises(AssertionError, match="walked the stack"):
        delta_generator._maybe_print_use_warning()  # unset: the check runs (and would walk the stack)
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", True)
    delta_generator._maybe_print_use_warning()  # set, as serve.py does: no check


def test_the_other_settings_serve_makes_are_still_streamlit_s():
    """The legacy pages/ detection switch and the external-address lookup serve.py turns off."""
    assert isinstance(PagesManager.uses_pages_directory, bool | None)
    assert callable(net_util.get_external_ip)


def _body_messages(path: Path, chunk_size: int) -> list[dict[str, Any]]:
    """The body messages Starlette's FileResponse sends for `path`, reading `chunk_size` bytes at a time."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from starlette.responses import FileResponse

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)  # no disconnect
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    response = FileResponse(path)
    response.chunk_size = chunk_size
    scope = {"type": "http", "method": "GET", "path": "/x.js", "headers": []}
    # on a thread of its own: in the whole suite Playwright's synchronous API keeps an event loop in this one
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, response(scope, receive, send)).result()
    return [m for m in sent if m["type"] == "http.response.body"]


def test_the_static_read_size_serve_sets_sends_streamlit_s_largest_bundle_in_one_read():
    """serve.py raises FileResponse.chunk_size so that each of Streamlit's frontend files is read in one go: with
    Starlette's default Streamlit's largest file (4.7 MB) goes out in 72 reads, each a hop to a worker thread and
    back, with the app's in one; the bytes are the same."""
    from starlette.responses import FileResponse
    from streamlit import file_util

    import serve

    largest = max((Path(file_util.get_static_dir()) / "static" / "js").glob("*.js"), key=lambda p: p.stat().st_size)
    size = largest.stat().st_size
    assert 1e6 < size <= serve.STATIC_READ_BYTES  # every file of Streamlit's frontend fits one read
    default = _body_messages(largest, FileResponse.chunk_size)
    ours = _body_messages(largest, serve.STATIC_READ_BYTES)
    assert len(default) == -(-size // (64 * 1024)) and len(ours) == 1
    assert b"".join(m["body"] for m in default) == b"".join(m["body"] for m in ours) == largest.read_bytes()


def test_index_html_tells_the_frontend_where_the_server_is():
    """serve.py puts a script first in Streamlit's index.html head that sets window.__streamlit.BACKEND_BASE_URL to the
    server's origin and base path, so a deep link's first request is the root's health check, not /<page>/... (404)."""
    from streamlit import file_util

    import serve

    html = (Path(file_util.get_static_dir()) / "index.html").read_text(encoding="utf-8")
    patched = serve.with_backend_base(html, None)
    head = patched.index("<head>") + len("<head>")
    assert patched[head:].startswith('<script>window.__streamlit = {...window.__streamlit, BACKEND_BASE_URL: location.origin + "/"};')
    assert patched.replace(serve.backend_base_script(None), "") == html  # nothing else changed
    assert 'location.origin + "/tools/roofline/"' in serve.backend_base_script("/tools/roofline/")
    # the frontend still reads that name (a Streamlit upgrade that renames it would bring the 404s back)
    bundles = (Path(file_util.get_static_dir()) / "static" / "js").glob("index.*.js")
    assert any(
        "BACKEND_BASE_URL" in b.read_text(encoding="utf-8") and "window.__streamlit" in b.read_text(encoding="utf-8") for b in bundles
    )
