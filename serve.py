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

from streamlit.web import cli  # noqa: E402

from pages.shared.streamlit_private import patch_server  # noqa: E402

if __name__ == "__main__":
    from core.model.allocator import keep_freed_memory

    keep_freed_memory()  # the engine's large arrays reuse freed memory (core/model/allocator.py)
    # Once the server is up, import the app, open the store and load the catalogue in the background while the
    # first browser loads Streamlit's frontend; the first script run waits for it (pages/shared/warmup.py).
    warmup.start()

    # What Streamlit has no public switch for, each explained and tested in pages/shared/streamlit_private.py: the
    # legacy pages/ detection, the REPL check, the external-address lookup, frontend files in one read, and
    # index.html naming the server so a deep link asks the root.
    patch_server()
    app = str(Path(__file__).resolve().parent / "streamlit_app.py")
    sys.argv = ["streamlit", "run", app, *sys.argv[1:]]
    sys.exit(cli.main())
