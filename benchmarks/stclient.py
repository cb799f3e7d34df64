"""A Streamlit session without a browser: the frontend's side of the websocket protocol, nothing rendered.

One `StClient` is one browser tab: it fetches the XSRF cookie the way the
page load does (any GET sets `_streamlit_xsrf`), opens
`ws://HOST/_stcore/stream` with the token as the second subprotocol and the
cookie and Origin headers a browser sends, and then speaks the protobuf
messages the installed `streamlit` package defines:

- `rerun(...)` sends a `rerun_script` BackMsg (`ClientState`: query string,
  page script hash from the app's `navigation` message, widget states) and
  waits for the run's `script_finished` (FINISHED_SUCCESSFULLY or a compile
  error; a run that ends early because the script called `st.rerun()` is
  followed by the next run). It returns a `Run`: seconds from send to
  finish, the widgets the run drew (by user key), its alerts and exceptions.
- Widget values persist per session like the frontend's WidgetStateManager
  (sent with every rerun, dropped when the widget was not drawn in the
  last run); a button press is a trigger value sent once.
- `upload(key, name, data)`: `file_urls_request` BackMsg, the server's
  `file_urls_response`, an HTTP PUT of the file as multipart form data to
  the upload URL with the `X-Xsrftoken` header and the cookie (XSRF
  protection stays on), then the rerun carrying the uploader's
  `FileUploaderState`. A replaced file is deleted (HTTP DELETE) first, as
  the frontend does.
- Every exception element, error alert, compile error and page-not-found
  message any run sends is kept in `problems`.

Used by benchmarks/load.py and benchmarks/faults_server.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import requests
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Common_pb2 import FileUploaderState, FileURLs, UploadedFileInfo
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect

XSRF_COOKIE = "_streamlit_xsrf"
ID_PREFIX = "$$ID"
DONE = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR}


class StClientError(RuntimeError):
    """The server refused something or the connection ended; the message says what."""


def user_key(widget_id: str) -> str | None:
    """The user key of a widget id `$$ID-<hash>-<key>` (None for widgets without one)."""
    if not widget_id.startswith(ID_PREFIX + "-"):
        return None
    key = widget_id.split("-", 2)[-1]
    return None if key == "None" else key


def element_problem(msg: ForwardMsg) -> str | None:
    """What a ForwardMsg reports as going wrong: an exception element, an error alert, a compile error, a missing page."""
    kind = msg.WhichOneof("type")
    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        el = msg.delta.new_element
        which = el.WhichOneof("type")
        if which == "exception":
            where = " | ".join(line.strip() for line in el.exception.stack_trace[-4:])
            return f"exception {el.exception.type}: {el.exception.message}" + (f" [at {where}]" if where else "")
        if which == "alert" and el.alert.format == Alert.ERROR:
            return f"error alert: {el.alert.body}"
    if kind == "session_event" and msg.session_event.WhichOneof("type") == "script_compilation_exception":
        exc = msg.session_event.script_compilation_exception
        return f"compile error {exc.type}: {exc.message}"
    if kind == "page_not_found":
        return f"page not found: {msg.page_not_found.page_name!r}"
    return None


def finished_run(payload: bytes) -> bool:
    """Whether a serialized ForwardMsg ends a script run (not one cut short by a rerun)."""
    msg = ForwardMsg()
    msg.ParseFromString(payload)
    return msg.WhichOneof("type") == "script_finished" and msg.script_finished in DONE


@dataclass
class Run:
    """One script run as the client saw it."""

    seconds: float = 0.0
    started: float = 0.0  # time.perf_counter() when the rerun was sent
    widgets: dict[str, tuple[str, Any]] = field(default_factory=dict)  # user key -> (element type, its proto)
    ids: set[str] = field(default_factory=set)  # every widget id drawn
    alerts: list[tuple[int, str]] = field(default_factory=list)  # (Alert.Format, body)
    problems: list[str] = field(default_factory=list)
    progress: list[tuple[float, str]] = field(default_factory=list)  # (seconds since the send, text) of st.progress bars
    status: int | None = None

    def add(self, msg: ForwardMsg) -> None:
        """Take one ForwardMsg of this run into account."""
        problem = element_problem(msg)
        if problem:
            self.problems.append(problem)
        if msg.WhichOneof("type") != "delta" or msg.delta.WhichOneof("type") != "new_element":
            return
        el = msg.delta.new_element
        which = el.WhichOneof("type")
        if which is None:
            return
        proto = getattr(el, which)
        if which == "alert":
            self.alerts.append((proto.format, proto.body))
        elif which == "progress":
            self.progress.append((time.perf_counter() - self.started, proto.text))
        wid = getattr(proto, "id", "")
        if isinstance(wid, str) and wid:
            self.ids.add(wid)
            key = user_key(wid)
            if key is not None:
                self.widgets[key] = (which, proto)

    def success_texts(self) -> list[str]:
        return [body for fmt, body in self.alerts if fmt == Alert.SUCCESS]


def widget_state(widget_id: str, kind: str, value: Any) -> WidgetState:
    """The WidgetState the frontend sends for a widget of `kind` set to `value`."""
    ws = WidgetState(id=widget_id)
    if kind in ("button", "download_button", "trigger"):
        ws.trigger_value = bool(value)
    elif kind in ("checkbox", "toggle"):
        ws.bool_value = bool(value)
    elif kind == "number_input":
        ws.double_value = float(value)
    elif kind in ("selectbox", "text_input", "text_area", "radio"):
        ws.string_value = str(value)
    elif kind == "slider":  # a slider's value is a list, one number per thumb
        ws.double_array_value.data.extend(float(v) for v in value)
    elif kind in ("multiselect", "select_slider"):
        ws.string_array_value.data.extend(str(v) for v in value)
    elif kind == "file_uploader":
        ws.file_uploader_state_value.CopyFrom(value)
    else:
        raise ValueError(f"no widget state for a {kind}")
    return ws


class StClient:
    """One session of a Streamlit app over its websocket, as a browser tab would hold it."""

    def __init__(self, base_url: str, *, timeout: float = 120) -> None:
        self.base = base_url.rstrip("/")
        self.timeout = timeout  # seconds a run may take before waiting for it raises StClientError
        self.http = requests.Session()
        self.http.trust_env = False  # loopback only: never a proxy
        self.ws: ClientConnection | None = None
        self.session_id = ""
        self.pages: dict[str, str] = {}  # url path -> page script hash
        self.page_hash = ""
        self.query_string = ""
        self.values: dict[str, WidgetState] = {}  # widget id -> last value set (persists like the frontend's)
        self.problems: list[str] = []
        self.last: Run = Run()
        self._run: Run | None = None
        self._finished: asyncio.Future[Run] | None = None
        self._url_replies: dict[str, asyncio.Future[ForwardMsg]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._closed: BaseException | None = None
        self._uploaded: dict[str, UploadedFileInfo] = {}  # uploader widget id -> file now in it

    @property
    def current(self) -> Run | None:
        """The run in flight (what it has sent so far), or None."""
        return self._run

    @property
    def xsrf(self) -> str:
        token = self.http.cookies.get(XSRF_COOKIE)
        if not token:
            raise StClientError("no XSRF cookie: the server did not set one")
        return str(token)

    async def open(self, page: str = "", query_string: str = "") -> Run:
        """Load the app (cookie, websocket) and run the page at url path `page` ('' = the default page)."""
        r = await asyncio.to_thread(self.http.get, f"{self.base}/_stcore/health", timeout=30)
        r.raise_for_status()
        ws_url = "ws" + self.base.removeprefix("http") + "/_stcore/stream"
        self.ws = await connect(
            ws_url,
            origin=self.base,  # type: ignore[arg-type]
            subprotocols=["streamlit", self.xsrf],  # type: ignore[list-item]
            additional_headers={"Cookie": f"{XSRF_COOKIE}={self.xsrf}"},
            max_size=None,
            proxy=None,
            open_timeout=60,
        )
        self._reader = asyncio.create_task(self._read())
        self.query_string = query_string
        return await self._send_rerun(page_name=page)

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        self.http.close()

    # -- receiving -------------------------------------------------------
    async def _read(self) -> None:
        assert self.ws is not None
        try:
            async for raw in self.ws:
                msg = ForwardMsg()
                msg.ParseFromString(raw if isinstance(raw, bytes) else raw.encode())
                self._dispatch(msg)
            self._lost(StClientError("the server closed the websocket"))
        except asyncio.CancelledError:
            self._lost(StClientError("the client closed"))
            raise
        except Exception as exc:
            self._lost(exc)

    def _lost(self, exc: BaseException) -> None:
        """The connection ended: every waiter gets the error."""
        self._closed = exc
        waiters: list[asyncio.Future[Any]] = [*self._url_replies.values()]
        if self._finished is not None:
            waiters.append(self._finished)
        for fut in waiters:
            if not fut.done():
                fut.set_exception(StClientError(f"connection lost: {type(exc).__name__}: {exc}"))

    def _dispatch(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        problem = element_problem(msg)
        if problem:
            self.problems.append(problem)
        if kind == "new_session":
            if msg.new_session.initialize.session_id:
                self.session_id = msg.new_session.initialize.session_id
            if self._run is not None:  # a new run (after st.rerun the collection starts again)
                self._run = Run(started=self._run.started, problems=self._run.problems, progress=self._run.progress)
        elif kind == "navigation":
            self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            self.page_hash = msg.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "file_urls_response":
            fut = self._url_replies.pop(msg.file_urls_response.response_id, None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        elif kind == "script_finished" and self._run is not None and msg.script_finished in DONE:
            run, self._run = self._run, None
            run.status = msg.script_finished
            if self._finished is not None and not self._finished.done():
                self._finished.set_result(run)
        if self._run is not None and kind in ("delta", "session_event", "page_not_found"):
            self._run.add(msg)

    # -- sending ---------------------------------------------------------
    async def _send(self, back: BackMsg) -> None:
        if self._closed is not None or self.ws is None:
            raise StClientError(f"connection lost: {self._closed}")
        await self.ws.send(back.SerializeToString())

    async def _send_rerun(self, *, page_hash: str = "", page_name: str = "", triggers: list[WidgetState] | None = None) -> Run:
        back = BackMsg()
        cs = back.rerun_script
        cs.query_string = self.query_string
        cs.page_script_hash = page_hash
        cs.page_name = page_name
        cs.widget_states.widgets.extend(self.values.values())
        cs.widget_states.widgets.extend(triggers or [])
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        self._run = Run(started=t0)
        self._finished = loop.create_future()
        await self._send(back)
        try:
            run = await asyncio.wait_for(self._finished, self.timeout)
        except TimeoutError:
            raise StClientError(f"no script_finished within {self.timeout:.0f} s") from None
        run.seconds = time.perf_counter() - t0
        self.last = run
        # like the frontend: forget values of widgets this run did not draw
        self.values = {k: v for k, v in self.values.items() if k in run.ids}
        return run

    async def goto(self, url_path: str) -> Run:
        """Navigate to the page at `url_path` ('' = default page) as a sidebar link click does."""
        target = self.pages.get(url_path)
        if target is None:
            raise StClientError(f"no page {url_path!r} in the navigation ({sorted(self.pages)})")
        if target != self.page_hash:
            self.query_string = ""  # the frontend drops the query string on a page change
        return await self._send_rerun(page_hash=target)

    def widget(self, key: str) -> tuple[str, Any]:
        """(element type, proto) of the widget with this user key in the last run."""
        if key not in self.last.widgets:
            raise StClientError(f"no widget with key {key!r} in the last run ({sorted(self.last.widgets)})")
        return self.last.widgets[key]

    async def set(self, key: str, value: Any) -> Run:
        """Set the widget with this user key to `value` (a rerun, as a changed control starts one)."""
        kind, proto = self.widget(key)
        if kind == "slider" and proto.type == proto.SELECT_SLIDER:
            kind = "select_slider"
        self.values[proto.id] = widget_state(proto.id, kind, value)
        return await self._send_rerun(page_hash=self.page_hash)

    async def click(self, key: str) -> Run:
        """Press the button with this user key (a trigger value, sent once)."""
        kind, proto = self.widget(key)
        if getattr(proto, "disabled", False):
            raise StClientError(f"button {key!r} is disabled")
        return await self._send_rerun(page_hash=self.page_hash, triggers=[widget_state(proto.id, "trigger", True)])

    async def upload(self, key: str, name: str, data: bytes, content_type: str = "text/csv") -> Run:
        """Put a file into the file uploader with this user key, as dropping it on the widget does."""
        kind, proto = self.widget(key)
        if kind != "file_uploader":
            raise StClientError(f"{key!r} is a {kind}, not a file uploader")
        old = self._uploaded.pop(proto.id, None)
        if old is not None:
            await self._http("DELETE", old.file_urls.delete_url)
        request_id = uuid.uuid4().hex
        fut: asyncio.Future[ForwardMsg] = asyncio.get_running_loop().create_future()
        self._url_replies[request_id] = fut
        back = BackMsg()
        back.file_urls_request.request_id = request_id
        back.file_urls_request.file_names.append(name)
        back.file_urls_request.session_id = self.session_id
        await self._send(back)
        reply = (await asyncio.wait_for(fut, 60)).file_urls_response
        if reply.error_msg or not reply.file_urls:
            raise StClientError(f"file_urls_request refused: {reply.error_msg or 'no URL'}")
        urls: FileURLs = reply.file_urls[0]
        await self._http("PUT", urls.upload_url, files={"file": (name, data, content_type)})
        info = UploadedFileInfo(name=name, size=len(data), file_id=urls.file_id, file_urls=urls)
        self._uploaded[proto.id] = info
        self.values[proto.id] = widget_state(proto.id, "file_uploader", FileUploaderState(uploaded_file_info=[info]))
        return await self._send_rerun(page_hash=self.page_hash)

    async def _http(self, method: str, path: str, **kwargs: Any) -> None:
        url = path if path.startswith("http") else f"{self.base}/{path.lstrip('/')}"
        headers = {"X-Xsrftoken": self.xsrf, "Origin": self.base}
        r = await asyncio.to_thread(self.http.request, method, url, headers=headers, timeout=300, **kwargs)
        if r.status_code >= 300:
            raise StClientError(f"{method} {path}: HTTP {r.status_code} {r.text[:200]}")
