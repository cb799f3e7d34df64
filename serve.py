"""Start the app: `streamlit run streamlit_app.py`, without Streamlit's legacy pages/ mode.

Streamlit switches a fresh server into its v1 multipage mode when a folder
named `pages/` sits beside the main script, until the first `st.navigation`
call. The first request of a fresh server that is a deep link (a shared
link such as /roofline?gpu=b200) then gets a "Page not found" dialog before
st.navigation routes it. This app routes with st.navigation only, so the
launcher turns that detection off before the server starts. It also keeps
the start from asking a server on the internet for the machine's public address,
warms the app up while the first browser loads with Python's cyclic garbage
collector held off until then (pages/shared/warmup.py), and has Starlette read
each of Streamlit's frontend files in one go.

    python serve.py [streamlit options, e.g. --server.port 8502]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pages.shared import warmup

if __name__ == "__main__":
    # No cyclic garbage collection while Streamlit and the app are imported: the warm-up turns it back on when it
    # ends, with what the imports made frozen (pages/shared/warmup.py, pause_gc).
    warmup.pause_gc()

from streamlit import delta_generator, net_util  # noqa: E402
from streamlit.runtime.pages_manager import PagesManager  # noqa: E402
from streamlit.web import cli  # noqa: E402

#: How much of a file Starlette reads at a time when the server sends it (its default: 64 KiB).
STATIC_READ_BYTES = 8 << 20


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


def serve_index_with_backend_base() -> None:
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


if __name__ == "__main__":
    from starlette.responses import FileResponse

    from core.model.allocator import keep_freed_memory

    keep_freed_memory()  # the engine's large arrays reuse freed memory (core/model/allocator.py)
    # Once the server is up, import the app, open the store and load the catalogue in the background while the
    # first browser loads Streamlit's frontend; the first script run waits for it (pages/shared/warmup.py).
    warmup.start()

    PagesManager.uses_pages_directory = False
    # Streamlit asks once per process, when a run sends its first element, whether it runs in a Python REPL, to
    # print a warning there: it walks the script thread's whole stack with inspect.stack(), which looks up every
    # frame's source file: about 40 ms of the first page after a start (its first run, 207 -> 167 ms, median of 6).
    # A server started here runs no REPL (tests/unit/test_serve.py checks the flag still stops that check).
    delta_generator._use_warning_has_been_displayed = True
    # A headless server asks checkip.amazonaws.com for the machine's public address, to print
    # an "External URL" on start: a request leaving the machine on every start, and offline a
    # "Did not auto detect external IP" warning. The app is reached at its local or network
    # URL (both still printed), so that lookup is off.
    net_util.get_external_ip = lambda: None
    # Streamlit's frontend (about 130 files, 3.5 MB, on a browser's first visit) goes out through Starlette's
    # FileResponse, which reads a file 64 KiB at a time, each read a hop to a worker thread and back, and each hop
    # waits for Python's one lock, held by the warm-up during a cold start. Each file is read in one go (the app's
    # largest is 0.8 MB, Streamlit's 4.7 MB): a cold start's first chart 2.63 and 2.62 s against 2.77 and 2.65 s,
    # p90 2.67 and 2.71 s against 2.94 and 2.79 s (benchmarks/browser.py, paired, 7 starts each);
    # tests/unit/test_serve.py checks that Starlette still reads by this setting.
    FileResponse.chunk_size = STATIC_READ_BYTES
    serve_index_with_backend_base()
    app = str(Path(__file__).resolve().parent / "streamlit_app.py")
    sys.argv = ["streamlit", "run", app, *sys.argv[1:]]
    sys.exit(cli.main())
