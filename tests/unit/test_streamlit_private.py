"""Streamlit's private API as pages/shared/streamlit_private.py uses it: each test fails when an upgrade moves or changes
what a use touches, and a moved target is skipped with a warning, not raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit import delta_generator, env_util, net_util
from streamlit.runtime.pages_manager import PagesManager

import pages.shared.streamlit_private as private
from tests.helpers import ROOT


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

    largest = max((Path(file_util.get_static_dir()) / "static" / "js").glob("*.js"), key=lambda p: p.stat().st_size)
    size = largest.stat().st_size
    assert 1e6 < size <= private.STATIC_READ_BYTES  # every file of Streamlit's frontend fits one read
    default = _body_messages(largest, FileResponse.chunk_size)
    ours = _body_messages(largest, private.STATIC_READ_BYTES)
    assert len(default) == -(-size // (64 * 1024)) and len(ours) == 1
    assert b"".join(m["body"] for m in default) == b"".join(m["body"] for m in ours) == largest.read_bytes()


def test_index_html_tells_the_frontend_where_the_server_is():
    """serve.py puts a script first in Streamlit's index.html head that sets window.__streamlit.BACKEND_BASE_URL to the
    server's origin and base path, so a deep link's first request is the root's health check, not /<page>/... (404)."""
    from streamlit import file_util

    html = (Path(file_util.get_static_dir()) / "index.html").read_text(encoding="utf-8")
    patched = private.with_backend_base(html, None)
    head = patched.index("<head>") + len("<head>")
    assert patched[head:].startswith('<script>window.__streamlit = {...window.__streamlit, BACKEND_BASE_URL: location.origin + "/"};')
    assert patched.replace(private.backend_base_script(None), "") == html  # nothing else changed
    assert 'location.origin + "/tools/roofline/"' in private.backend_base_script("/tools/roofline/")
    # the frontend still reads that name (a Streamlit upgrade that renames it would bring the 404s back)
    bundles = (Path(file_util.get_static_dir()) / "static" / "js").glob("index.*.js")
    assert any(
        "BACKEND_BASE_URL" in b.read_text(encoding="utf-8") and "window.__streamlit" in b.read_text(encoding="utf-8") for b in bundles
    )


def test_the_pinned_streamlit_is_the_one_the_private_uses_were_written_for():
    """Whoever moves the pin re-reads pages/shared/streamlit_private.py (and its WRITTEN_FOR) with this file's tests."""
    import streamlit

    pinned = [
        line.split("==")[1].strip() for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("streamlit==")
    ]
    assert pinned == [streamlit.__version__] == [private.WRITTEN_FOR]


def test_every_server_patch_applies_and_sets_what_it_names(monkeypatch):
    from starlette.responses import FileResponse
    from streamlit.web.server.starlette import starlette_static_routes as routes

    monkeypatch.setattr(PagesManager, "uses_pages_directory", None)
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    monkeypatch.setattr(net_util, "get_external_ip", net_util.get_external_ip)
    monkeypatch.setattr(FileResponse, "chunk_size", FileResponse.chunk_size)
    monkeypatch.setattr(routes, "create_streamlit_static_handler", routes.create_streamlit_static_handler)
    plain_handler = routes.create_streamlit_static_handler
    assert private.patch_server() == list(private.SERVER_PATCHES)
    assert PagesManager.uses_pages_directory is False
    assert delta_generator._use_warning_has_been_displayed is True
    assert net_util.get_external_ip() is None
    assert FileResponse.chunk_size == private.STATIC_READ_BYTES
    assert routes.create_streamlit_static_handler is not plain_handler


def test_a_patch_whose_target_an_upgrade_moved_is_skipped_and_said(monkeypatch, caplog):
    from streamlit import net_util as nu

    monkeypatch.delattr(nu, "get_external_ip")
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    monkeypatch.setattr(PagesManager, "uses_pages_directory", None)
    from starlette.responses import FileResponse
    from streamlit.web.server.starlette import starlette_static_routes as routes

    monkeypatch.setattr(FileResponse, "chunk_size", FileResponse.chunk_size)
    monkeypatch.setattr(routes, "create_streamlit_static_handler", routes.create_streamlit_static_handler)
    with caplog.at_level("WARNING", logger=private.__name__):
        applied = private.patch_server()
    assert "external address lookup off" not in applied and len(applied) == len(private.SERVER_PATCHES) - 1
    assert "external address lookup off skipped: net_util.get_external_ip" in caplog.text


def test_the_arrow_bytes_are_what_streamlit_reads_back():
    import pyarrow as pa

    table = pa.table({"gpu": ["H100", "B200"], "tokens_per_s": [1234.5, 2468.0]})
    back = pa.ipc.open_stream(private.arrow_bytes(table)).read_all()
    assert back.equals(table)


def test_the_runtime_is_not_serving_outside_a_server():
    assert private.runtime_serving() is False


def test_every_element_the_style_rules_name_is_in_the_frontend_bundle():
    """The data-testid values and class the CSS targets are still drawn by this Streamlit's frontend."""
    import re

    from streamlit import file_util

    names = set(re.findall(r'data-testid="([^"]+)"', private.CHIP_ROWS_CSS + private.PRESENT_CSS))
    assert names == {"stMultiSelect", "stMultiSelectTagsContainer", "stMainBlockContainer", "stMain"}
    bundle = "".join(
        p.read_text(encoding="utf-8", errors="ignore") for p in (Path(file_util.get_static_dir()) / "static" / "js").glob("*.js")
    )
    missing = [n for n in sorted(names) + ["react-aria-ComboBox"] if not any(f"{q}{n}{q}" in bundle for q in "\"'`")]
    assert not missing, missing


def test_no_other_module_touches_streamlit_s_private_api():
    """Outside this module the app uses streamlit's public names only: st.*, streamlit.web.cli (serve.py's start) and
    streamlit.testing (the AppTests)."""
    import ast

    allowed = {"streamlit", "streamlit.web", "streamlit.web.cli", "streamlit.testing.v1", "streamlit.components.v1"}
    found = []
    files = [*(ROOT / "pages").rglob("*.py"), *(ROOT / "core").rglob("*.py"), ROOT / "streamlit_app.py", ROOT / "serve.py"]
    for path in files:
        if path.name == "streamlit_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("streamlit"):
                mods = {f"{node.module}.{a.name}" if node.module == "streamlit" else node.module for a in node.names}
            elif isinstance(node, ast.Import):
                mods = {a.name for a in node.names if a.name.startswith("streamlit")}
            else:
                continue
            found += [
                f"{path.relative_to(ROOT)}: {m}" for m in mods if m not in allowed and m.rsplit(".", 1)[0] not in allowed - {"streamlit"}
            ]
    assert not found, found
