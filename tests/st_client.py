"""A browserless Streamlit client: it speaks the app's own websocket protocol (``streamlit.proto``'s BackMsg /
ForwardMsg on ``ws://host:port/_stcore/stream``), as the browser does, at a tiny fraction of a browser's CPU.

``Client(base)`` connects (one Streamlit session), ``load(query)`` sends a BackMsg ``rerun_script`` with the
query string (opening a shared link), ``move({key: value})`` sends one with a slider's new value (the
widget's id is read from the elements the server sent, its key is the URL key), and each returns a ``Run``:
every element of that script run (its delta path and proto), the run's end status, the times. ``numbers(run)``
decodes the Explore headline numbers (the PPD column's "Turn 2+ TTFT mean" / "Turn 2+ TPOT mean" cards and
its "local x %" caption, the share link), ``queue_states(run)`` the "Queued: N ahead of you" lines seen, and
``exceptions(run)`` / ``errors(run)`` what a user would see as an exception or an error box.

Used by ``tests/test_classroom.py`` and ``scripts/bench_classroom.py``.
"""
from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

QUEUED = re.compile(r"Queued: (\d+) ahead of you")


@dataclass
class Run:
    """What the server sent for one script run (until its ``script_finished``)."""
    elements: list = field(default_factory=list)      # (delta path tuple, Element proto), in arrival order
    status: str = ""                                    # ScriptFinishedStatus name
    t_sent: float = 0.0
    t_numbers: float = float("nan")                     # first moment the PPD headline numbers were all in
    t_done: float = float("nan")                        # script_finished
    queue: list = field(default_factory=list)           # (seconds after sending, N ahead) as they arrived

    @property
    def seconds(self) -> float:
        return self.t_numbers - self.t_sent


class Client:
    """One Streamlit session over the websocket protocol (asyncio; one client per session). A reader task
    handles every ForwardMsg as it comes, as the browser does: the query string the server writes
    (``page_info_changed``) and every widget's value are current whenever the next BackMsg is sent, and a
    BackMsg carries every widget's state, not only the one that moved."""

    def __init__(self, base: str):
        u = urlsplit(base)
        self.ws_url = f"ws://{u.hostname}:{u.port}/_stcore/stream"
        self.ws = None
        self.widgets: dict[str, str] = {}           # URL key (the widget's user key) -> widget id
        self.values: dict[str, tuple[str, object]] = {}     # widget id -> (WidgetState field, value)
        self.query = ""
        self.page_hash = ""
        self.t_last_send = 0.0
        self._run = Run()
        self._done: asyncio.Queue = asyncio.Queue()
        self._reader: asyncio.Task | None = None

    async def __aenter__(self) -> "Client":
        import websockets
        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=2 ** 26,
                                           open_timeout=60, ping_interval=None)
        self._reader = asyncio.create_task(self._read_forever())
        return self

    async def __aexit__(self, *exc) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self.ws is not None:
            await self.ws.close()

    async def _read_forever(self) -> None:
        try:
            async for data in self.ws:
                self._handle(data)
        except Exception as exc:        # noqa: BLE001  (the connection ended: the waiting caller is told)
            await self._done.put(exc)
            return
        await self._done.put(ConnectionError("the server closed the websocket"))

    def _handle(self, data: bytes) -> None:
        fm = ForwardMsg()
        fm.ParseFromString(data)
        kind = fm.WhichOneof("type")
        now = time.perf_counter()
        run = self._run
        if kind == "new_session":
            self.page_hash = fm.new_session.page_script_hash or self.page_hash
        elif kind == "page_info_changed":
            self.query = fm.page_info_changed.query_string
        elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            el = fm.delta.new_element
            run.elements.append((tuple(fm.metadata.delta_path), el))
            self._learn_widget(el)
            text = _text(el)
            m = QUEUED.search(text) if text else None
            if m:
                run.queue.append((now - self.t_last_send, int(m.group(1))))
            if run.t_numbers != run.t_numbers and numbers(run) is not None:
                run.t_numbers = now
        elif kind == "script_finished":
            status = ForwardMsg.ScriptFinishedStatus.Name(fm.script_finished)
            if status != "FINISHED_EARLY_FOR_RERUN":    # the rerun that replaced it goes on in the same Run
                run.status, run.t_done = status, now
                self._run = Run(t_sent=self.t_last_send)
                self._done.put_nowait(run)

    def _learn_widget(self, el) -> None:
        kind = el.WhichOneof("type")
        if kind not in ("slider", "number_input", "text_input", "checkbox", "selectbox", "radio"):
            return
        w = getattr(el, kind)
        if w.id.startswith("$$ID"):
            self.widgets[w.id.rsplit("-", 1)[-1]] = w.id
        if w.id in self.values and not w.set_value:
            return                      # the value this client last sent stands (as in the browser)
        if kind == "slider":
            if w.options:
                raw = list(w.raw_value) if w.set_value else [w.options[i] for i in w.default]
                self.values[w.id] = ("string_array_value", raw)
            else:
                self.values[w.id] = ("double_array_value", list(w.value if w.set_value else w.default))
        elif kind == "number_input":
            self.values[w.id] = ("double_value", w.value if w.set_value else w.default)
        elif kind in ("selectbox", "radio"):
            if w.set_value:
                self.values[w.id] = ("string_value", w.raw_value)
            elif w.HasField("default") and w.options:
                self.values[w.id] = ("string_value", w.options[w.default])
        elif kind == "text_input":
            self.values[w.id] = ("string_value", w.value if w.set_value else w.default)
        else:
            self.values[w.id] = ("bool_value", w.value if w.set_value else w.default)

    async def _send_rerun(self) -> float:
        from streamlit.proto.WidgetStates_pb2 import WidgetStates
        states = WidgetStates()
        for wid, (fld, value) in self.values.items():
            w = states.widgets.add()
            w.id = wid
            if fld in ("double_array_value", "string_array_value"):
                getattr(w, fld).data.extend(value)
            else:
                setattr(w, fld, value)
        msg = BackMsg()
        rr = msg.rerun_script
        rr.query_string = self.query
        rr.page_script_hash = self.page_hash
        rr.widget_states.CopyFrom(states)
        self.t_last_send = t = time.perf_counter()
        if not self._run.elements:
            self._run.t_sent = t
        await self.ws.send(msg.SerializeToString())
        return t

    async def next_run(self, timeout: float = 120.0) -> Run:
        """The next script run to end (a run replaced by a rerun is part of the one that replaced it)."""
        got = await asyncio.wait_for(self._done.get(), timeout)
        if isinstance(got, BaseException):
            raise got
        return got

    async def load(self, query: str, timeout: float = 120.0) -> Run:
        """Open the app at ``?query`` (a shared link) in this session; the run it started."""
        self.query = query
        await self._send_rerun()
        return await self.next_run(timeout)

    async def send_move(self, values: dict) -> float:
        """Set widgets (by URL key) to new values and send the rerun, as the browser does when a slider is
        released; returns when it was sent."""
        for key, value in values.items():
            wid = self.widgets[key]
            fld = self.values.get(wid, ("double_array_value", None))[0]
            self.values[wid] = (fld, [float(value)] if fld == "double_array_value" else
                                [str(value)] if fld == "string_array_value" else
                                float(value) if fld == "double_value" else value)
        return await self._send_rerun()

    async def move(self, values: dict, timeout: float = 120.0) -> Run:
        await self.send_move(values)
        return await self.next_run(timeout)


def _text(el) -> str:
    kind = el.WhichOneof("type")
    if kind == "markdown":
        return el.markdown.body
    if kind == "alert":
        return el.alert.body
    if kind == "code":
        return el.code.code_text
    if kind == "exception":
        return el.exception.message
    return ""


def numbers(run: Run) -> dict | None:
    """The PPD column's headline numbers as the page shows them (strings), from the last time they were sent in
    this run; None until all three and the share link are in."""
    els = run.elements
    head = None
    for path, el in els:
        if el.WhichOneof("type") == "markdown" and el.markdown.body.startswith("**PPD** ·"):
            head = path[:-1]
    if head is None:
        return None
    out: dict = {}
    for path, el in els:
        if path[:len(head)] != head:
            continue
        kind = el.WhichOneof("type")
        if kind == "metric":
            if el.metric.label.startswith("Turn 2+ TTFT mean"):
                out["ttft"] = el.metric.body
            elif el.metric.label.startswith("Turn 2+ TPOT mean"):
                out["tpot"] = el.metric.body
        elif kind == "markdown":
            m = re.search(r"local (\d+\.\d %)", el.markdown.body)
            if m:
                out["local"] = m.group(1)
    for _, el in els:
        if el.WhichOneof("type") == "code" and el.code.code_text.startswith("http"):
            out["link"] = el.code.code_text
    return out if all(k in out for k in ("ttft", "tpot", "local", "link")) else None


def exceptions(run: Run) -> list[str]:
    return [f"{el.exception.type}: {el.exception.message}" for _, el in run.elements
            if el.WhichOneof("type") == "exception"]


def errors(run: Run) -> list[str]:
    """st.error boxes (format 1 = ERROR in Alert.Format)."""
    return [el.alert.body for _, el in run.elements if el.WhichOneof("type") == "alert" and el.alert.format == 1]
