"""Every use of Streamlit's private API, in one place, written for the version pinned in requirements.txt.

Each is here because the public API has no way to do it, and each has a test
in tests/unit/test_streamlit_private.py that fails when an upgrade moves or
changes what it touches. A server patch whose target is gone is skipped and
logged (the app still starts, without that one improvement), never raised.

- `patch_server()` (serve.py, before the server starts):
  - the legacy pages/ auto-discovery off (a deep link on a fresh server would
    otherwise show "Page not found" before st.navigation routes it);
  - the once-per-process REPL check off (it walks the script thread's stack
    with inspect.stack(), about 40 ms of the first page after a start);
  - no external-address lookup (a request to checkip.amazonaws.com on every
    headless start; offline, a warning);
  - Starlette sends each frontend file in one read (`STATIC_READ_BYTES`);
  - index.html tells the frontend where the server is (`with_backend_base`),
    so a deep link asks the root, not /<page>/_stcore/..., which 404s.
- `arrow_bytes`: a table as the Arrow bytes st.dataframe sends, for the
  pages' cached tables (Streamlit's own conversion, which it would redo each
  rerun).
- `runtime_serving`: whether the runtime has started serving (the warm-up
  waits for it before importing the app's cached modules).
- `CHIP_ROWS_CSS`, `PRESENT_CSS`: style rules on the frontend's elements by
  their data-testid (multiselect chips that wrap; presentation mode's frame).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

#: The Streamlit version every use below was written for and checked with (requirements.txt pins it).
WRITTEN_FOR = "1.67.0"

#: How much of a file Starlette reads at a time when the server sends it (its default: 64 KiB): the app's largest
#: frontend file is 0.8 MB and Streamlit's 4.7 MB, so each goes in one read, not 72 hops to a worker thread and back.
STATIC_READ_BYTES = 8 << 20

_LOG = logging.getLogger(__name__)


def _apply(name: str, patch: Callable[[], None]) -> bool:
    """Apply one patch; a target an upgrade moved is logged and skipped, not raised."""
    try:
        patch()
        return True
    except (AttributeError, ImportError, ValueError) as exc:
        import streamlit

        _LOG.warning("Streamlit %s (written for %s): %s skipped: %s", streamlit.__version__, WRITTEN_FOR, name, exc)
        return False


def _no_pages_directory() -> None:
    from streamlit.runtime.pages_manager import PagesManager

    if not hasattr(PagesManager, "uses_pages_directory"):
        raise AttributeError("PagesManager.uses_pages_directory")
    PagesManager.uses_pages_directory = False


def _no_repl_check() -> None:
    from streamlit import delta_generator

    if not hasattr(delta_generator, "_use_warning_has_been_displayed"):
        raise AttributeError("delta_generator._use_warning_has_been_displayed")
    delta_generator._use_warning_has_been_displayed = True


def _no_external_ip() -> None:
    from streamlit import net_util

    if not callable(getattr(net_util, "get_external_ip", None)):
        raise AttributeError("net_util.get_external_ip")
    net_util.get_external_ip = lambda: None


def _static_files_in_one_read() -> None:
    from starlette.responses import FileResponse

    if not isinstance(getattr(FileResponse, "chunk_size", None), int):
        raise AttributeError("starlette FileResponse.chunk_size")
    FileResponse.chunk_size = STATIC_READ_BYTES


def backend_base_script(base_url: str | None) -> str:
    """A script for Streamlit's index.html that tells its frontend where the server is (window.__streamlit's
    BACKEND_BASE_URL, the server's origin and base URL path): without it, a deep link such as /roofline first asks
    /roofline/_stcore/health and /roofline/_stcore/host-config, in case the app is served under /roofline, and the
    browser logs each 404 as a console error before the frontend asks the root."""
    path = "/".join(p for p in (base_url or "").split("/") if p)
    base = f"/{path}/" if path else "/"
    return f'<script>window.__streamlit = {{...window.__streamlit, BACKEND_BASE_URL: location.origin + "{base}"}};</script>'


def with_backend_base(index_html: str, base_url: str | None) -> str:
    """Streamlit's index.html with backend_base_script first in its head (before the frontend's own script)."""
    head = index_html.index("<head>") + len("<head>")
    return index_html[:head] + backend_base_script(base_url) + index_html[head:]


def _index_with_backend_base() -> None:
    """Have Streamlit's static file handler send index.html (the page every link opens) with_backend_base."""
    from starlette.responses import FileResponse, HTMLResponse
    from streamlit.web.server.starlette import starlette_static_routes as routes

    make = routes.create_streamlit_static_handler

    def handler(directory: str, base_url: str | None) -> Any:
        files = make(directory=directory, base_url=base_url)
        index = Path(directory) / "index.html"
        html = with_backend_base(index.read_text(encoding="utf-8"), base_url)
        plain = files.get_response

        async def get_response(path: str, scope: Any) -> Any:
            response = await plain(path, scope)
            if isinstance(response, FileResponse) and Path(response.path) == index:
                return HTMLResponse(html, headers={"Cache-Control": response.headers.get("Cache-Control", "no-cache")})
            return response

        files.get_response = get_response
        return files

    routes.create_streamlit_static_handler = handler


#: name -> patch, in the order patch_server applies them.
SERVER_PATCHES: dict[str, Callable[[], None]] = {
    "legacy pages/ discovery off": _no_pages_directory,
    "REPL check off": _no_repl_check,
    "external address lookup off": _no_external_ip,
    "frontend files in one read": _static_files_in_one_read,
    "index.html names the server": _index_with_backend_base,
}


def patch_server() -> list[str]:
    """Apply every server patch before the server starts; the names of those applied."""
    return [name for name, patch in SERVER_PATCHES.items() if _apply(name, patch)]


def arrow_bytes(table: pa.Table) -> bytes:
    """The Arrow IPC bytes st.dataframe sends for `table` (Streamlit's own conversion)."""
    from streamlit.dataframe_util import convert_arrow_table_to_arrow_bytes

    return convert_arrow_table_to_arrow_bytes(table)


def runtime_serving() -> bool:
    """Whether Streamlit's runtime exists and serves (no session yet, or some)."""
    from streamlit.runtime import Runtime, RuntimeState

    return Runtime.exists() and Runtime.instance().state in (
        RuntimeState.NO_SESSIONS_CONNECTED,
        RuntimeState.ONE_OR_MORE_SESSIONS_CONNECTED,
    )


#: Streamlit 1.6x lays a multiselect's chips on one line that scrolls sideways inside the box, so
#: the chips past its width are hidden (three accelerators in the roofline's overlay at 1280 px show
#: one and a half). These three rules let the chips wrap onto more lines and the box grow to hold
#: them: the box's fixed 40 px height, the tag row's no-wrap and its scrolling are the only changes
#: (min-width 0 keeps the wrapping row from pushing the clear and open buttons out of the box).
CHIP_ROWS_CSS = """<style>
[data-testid="stMultiSelect"] .react-aria-ComboBox > [role="group"] { height: auto; max-height: none; }
[data-testid="stMultiSelectTagsContainer"] { flex-wrap: wrap; overflow: visible; min-width: 0; }
[data-testid="stMultiSelectTagsContainer"] > [role="group"] { flex-wrap: wrap; }
</style>"""

#: Presentation mode's frame: the page starts just under Streamlit's header (3.75rem, a bar drawn over the page)
#: instead of 6rem down, so that a page's headline and lead chart fit one 1280 x 800 projector screen.
PRESENT_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 3.75rem; padding-bottom: 2rem; }
[data-testid="stMain"] h1 { padding-top: 0; padding-bottom: 0.5rem; }
</style>"""


def chip_rows() -> None:
    """Every multiselect shows all its chips, wrapped onto as many lines as they need (CHIP_ROWS_CSS); once per run."""
    import streamlit as st

    st.html(CHIP_ROWS_CSS)


def presentation_frame() -> None:
    """Presentation mode's frame (PRESENT_CSS); once per run, in presentation mode only."""
    import streamlit as st

    st.html(PRESENT_CSS)
