"""Where one slider move on Explore spends its time, message by message: a diagnosis tool beside
``bench_browser.py`` (which says how long a move takes, not why).

Starts ``streamlit run app.py`` on a free port (or uses ``--url``), loads Explore in Debian's Chromium, moves the
``qps`` slider ``--steps`` times with a Chrome trace recording (the renderer's V8 sampling profiler and
``performance.mark`` calls, in the trace's one clock), and prints for the last move:

* every websocket message the server sent, decoded from Streamlit's ForwardMsg protobuf: when the page
  received it (ms after the keypress), its size, and what it is (``new_session``, an element such as
  ``el:metric`` with its delta path, ``script_finished`` …). A results-only move shows two runs: the
  interaction's own run, which the widget callback replaces at once (``st.rerun`` with fragment keys), and
  the fragments' run.
* the renderer's main thread per 10 ms: how many profiler samples were busy and the functions most of them
  were in (a React render shows as react-dom / emotion frames, Plotly as PlotlyChart frames, layout and
  style as ``(program)``). The profiler slows the page about twofold: read proportions, not absolute times.

    .venv/bin/python scripts/profile_move.py [--steps 3] [--url http://127.0.0.1:8611]

A diagnosis tool, not a benchmark and not a test: run it on an idle machine and read the shape.
"""
from __future__ import annotations

import argparse
import base64
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from bench_browser import DONE_JS, FIRST_DRAW_JS, MARK_JS, SLIDERS  # noqa: E402
from conftest import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server  # noqa: E402

# Every websocket message marks the page's clock with its payload (base64), so the trace orders them with the
# profiler's samples; the payloads are kept in window.__msgs by the same index.
INIT_JS = """
(() => {
  window.__msgs = [];
  const Orig = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Orig(...args);
    ws.addEventListener('message', (e) => {
      if (!(e.data instanceof ArrayBuffer)) return;
      const b = new Uint8Array(e.data); let s = '';
      for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i]);
      window.__msgs.push(btoa(s));
      performance.mark('ppd-msg-' + (window.__msgs.length - 1));
    });
    return ws;
  };
  window.WebSocket.prototype = Orig.prototype;
  Object.assign(window.WebSocket, Orig);
})();
"""
CATEGORIES = "devtools.timeline,blink.user_timing,disabled-by-default-v8.cpu_profiler"


def describe(raw: bytes) -> str:
    """One ForwardMsg in a few words: its type, and for a delta the element or block and its path."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    msg = ForwardMsg()
    msg.ParseFromString(raw)
    kind = msg.WhichOneof("type")
    if kind != "delta":
        return str(kind)
    delta = msg.delta
    sub = delta.WhichOneof("type")
    path = list(msg.metadata.delta_path)
    if sub == "new_element":
        return f"el:{delta.new_element.WhichOneof('type')} {path}"
    if sub == "add_block":
        return f"block:{delta.add_block.WhichOneof('type')} {path}"
    return f"delta:{sub} {path}"


def record(url: str, steps: int) -> tuple[list[dict], list[str]]:
    """Move the slider ``steps`` times under a trace; return the trace events and the messages' payloads."""
    from playwright.sync_api import expect, sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.add_init_script(INIT_JS)
        page.goto(url + "/")
        expect(page.get_by_test_id("stMetric").first).to_be_visible(timeout=120_000)
        page.wait_for_function(FIRST_DRAW_JS, timeout=120_000)
        thumb = page.get_by_test_id("stSlider").filter(has_text=SLIDERS["qps"]).get_by_role("slider")
        cdp = page.context.new_cdp_session(page)
        events: list[dict] = []
        finished: list[bool] = []
        cdp.on("Tracing.dataCollected", lambda e: events.extend(e["value"]))
        cdp.on("Tracing.tracingComplete", lambda e: finished.append(True))
        cdp.send("Tracing.start", {"categories": CATEGORIES, "transferMode": "ReportEvents"})
        for _ in range(steps):
            time.sleep(1.0)                     # an idle page between moves, as a user's
            before = thumb.input_value()
            page.evaluate(MARK_JS)
            thumb.focus()
            page.evaluate("() => performance.mark('ppd-key')")
            page.keyboard.press("ArrowRight")
            expect(thumb).not_to_have_value(before, timeout=120_000)
            want = thumb.input_value().removesuffix(".0")
            # bench_browser's "charts" moment: the link names the new value and every chart has redrawn
            page.wait_for_function(DONE_JS, arg=["qps", want], timeout=120_000)
            time.sleep(0.3)                     # the run's last messages (sidebar links, script_finished)
        msgs = page.evaluate("() => window.__msgs")
        cdp.send("Tracing.end")
        deadline = time.monotonic() + 60
        while not finished and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        browser.close()
    return events, msgs


def samples(events: list[dict]) -> tuple[list[tuple[float, tuple]], dict, dict]:
    """The V8 profiler's samples (trace time in us, node key) with its call-tree nodes and parents."""
    frames: dict = {}
    parent: dict = {}
    clock: dict = {}
    out: list[tuple[float, tuple]] = []
    for e in events:
        if e.get("name") == "Profile":
            clock[e["id"]] = e["args"]["data"]["startTime"]
    for e in sorted((e for e in events if e.get("name") == "ProfileChunk"), key=lambda e: e["ts"]):
        data = e["args"]["data"]
        prof = data.get("cpuProfile", {})
        for n in prof.get("nodes", []):
            frames[(e["id"], n["id"])] = n["callFrame"]
            if "parent" in n:
                parent[(e["id"], n["id"])] = (e["id"], n["parent"])
        t = clock.get(e["id"], 0)
        for node, dt in zip(prof.get("samples", []), data.get("timeDeltas", [])):
            t += dt
            out.append((t, (e["id"], node)))
        clock[e["id"]] = t
    return out, frames, parent


def label(key: tuple, frames: dict, parent: dict) -> str | None:
    """The sample's leaf function, with the nearest React / Plotly / Streamlit handler above it."""
    chain = []
    while key in frames:
        cf = frames[key]
        chain.append((cf.get("functionName") or "(anonymous)", cf.get("url", "").rsplit("/", 1)[-1].split(".")[0]))
        key = parent.get(key)
    if not chain or chain[0][0] in ("(idle)", "(root)"):
        return None
    leaf = f"{chain[0][0]}@{chain[0][1]}" if chain[0][1] else chain[0][0]
    for name, src in chain[1:]:
        if src in ("react-dom", "PlotlyChart") or name.startswith("handle"):
            return f"{src or name}>{leaf}"
    return leaf


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3, help="slider moves to record; the last is printed (default 3)")
    ap.add_argument("--url", default=None, help="a running server (default: start one)")
    args = ap.parse_args(argv)
    if not 1 <= args.steps <= 20:
        ap.error(f"--steps: {args.steps} is outside 1..20")
    proc, url = None, args.url
    if url is None:
        (ROOT / "artifacts").mkdir(exist_ok=True)
        proc, url = start_server(ROOT / "artifacts" / "profile-server.log")
    try:
        events, payloads = record(url, args.steps)
    finally:
        if proc is not None:
            stop_server(proc)
    keys = sorted(e["ts"] for e in events if e.get("name") == "ppd-key")
    if not keys:
        print("the trace holds no keypress mark: Chromium recorded nothing", file=sys.stderr)
        return 1
    key = keys[-1]
    print(f"last move (of {args.steps}): messages received, ms after the keypress")
    marks = sorted((e["ts"], int(e["name"].rsplit("-", 1)[1])) for e in events
                   if e.get("name", "").startswith("ppd-msg-") and e["ts"] >= key)
    for ts, i in marks:
        raw = base64.b64decode(payloads[i])
        print(f"  {(ts - key) / 1e3:7.1f} {len(raw):7d} B  {describe(raw)}")
    sampled, frames, parent = samples(events)
    buckets: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    end = (marks[-1][0] - key) / 1e3 + 300 if marks else 1000
    for ts, node in sampled:
        rel = (ts - key) / 1e3
        if 0 <= rel < end:
            name = label(node, frames, parent)
            if name is not None:
                buckets[int(rel // 10) * 10][name] += 1
    print("renderer main thread per 10 ms after the keypress: busy samples, then the top functions")
    for b in sorted(buckets):
        top = "; ".join(f"{n} {c}" for n, c in buckets[b].most_common(3))
        print(f"  {b:5d} {sum(buckets[b].values()):4d}  {top}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
