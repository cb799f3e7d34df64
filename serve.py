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
    app = str(Path(__file__).resolve().parent / "streamlit_app.py")
    sys.argv = ["streamlit", "run", app, *sys.argv[1:]]
    sys.exit(cli.main())
