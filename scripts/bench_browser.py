"""Browser benchmark: how long a slider move on Explore takes to update the numbers and charts.

Starts ``streamlit run app.py`` on a free port, drives Debian's Chromium with Playwright, moves a slider on the
Explore page N times to values never seen before (so every step is a cache miss: PPD, PD and Replica all
re-run), and times each step from the keypress to two moments:

* numbers: the share link names the new value and the headline metric cards are fresh (not stale);
* charts (the figure that counts): the run has finished, no element is stale and every Plotly chart has
  redrawn.

Prints every step, then the median and p90 of both. ``--cpu`` also prints, per step and as medians, the CPU
time each kind of process spent from the keypress to the charts (Linux ``/proc``: Chromium's renderer, the
rest of Chromium, the Streamlit server, its simulation workers), which shows what the two cores were busy
with while a move waited. ``--trace`` also prints where each step's time went:
when the browser sent the move, received the first and the last websocket message of the rerun (the server's
share), how many messages that was (a rerun of the whole page sends every element again), and the browser's
long tasks (mostly React and Plotly drawing) - all in the page's own clock.

    .venv/bin/python scripts/bench_browser.py [--steps 12] [--slider qps] [--url-query 'layout=2P_2pD'] [--trace]

This is a benchmark, not a test: it asserts nothing except that each update happened.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server  # noqa: E402

SLIDERS = {  # URL key -> slider label text on the Explore page
    "qps": "conversation arrival rate",
    "bandwidth_gbps": "KV-transfer bandwidth",
    "w_tpot": "w_tpot",
}

# Done when: the share link names the expected value, nothing is stale, the app is idle, and every Plotly chart
# has redrawn since the keypress (Plotly stamps each redraw on the graph div's _fullLayout via our marker).
DONE_JS = """
([key, want]) => {
  const code = [...document.querySelectorAll('[data-testid="stCode"]')].map(e => e.innerText).join(' ');
  if (!code.includes(key + '=' + want)) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  if (status && /running/i.test(status.innerText)) return false;
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  if (plots.length < 3) return false;
  return plots.every(p => p.__benchMark !== window.__benchStamp);
}
"""
NUMBERS_JS = """
([key, want]) => {
  const code = [...document.querySelectorAll('[data-testid="stCode"]')].map(e => e.innerText).join(' ');
  if (!code.includes(key + '=' + want)) return false;
  const cards = [...document.querySelectorAll('[data-testid="stMetric"]')];
  return cards.length > 0 && cards.every(c => !c.closest('[data-stale="true"]'));
}
"""
#: with --trace: timestamps (page clock) of the websocket messages sent and received, and of long tasks
TRACE_INIT_JS = """
(() => {
  window.__ws = []; window.__lt = [];
  try {
    new PerformanceObserver(l => { for (const e of l.getEntries())
      window.__lt.push([performance.timeOrigin + e.startTime, e.duration]); }).observe({type: 'longtask'});
  } catch (e) {}
  const Orig = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Orig(...args);
    ws.addEventListener('message', () => window.__ws.push([Date.now(), 1]));
    const send = ws.send.bind(ws);
    ws.send = (d) => { window.__ws.push([Date.now(), -1]); return send(d); };
    return ws;
  };
  window.WebSocket.prototype = Orig.prototype;
  Object.assign(window.WebSocket, Orig);
})();
"""
TRACE_JS = """
() => { const out = {ws: window.__ws, lt: window.__lt}; window.__ws = []; window.__lt = []; return out; }
"""
#: the first page load has drawn: the charts are on the page and nothing is stale
FIRST_DRAW_JS = ("() => document.querySelectorAll('.js-plotly-plot').length >= 3 && "
                 "!document.querySelector('[data-stale=\"true\"]')")
MARK_JS = """
() => {
  window.__benchStamp = Math.random();
  document.querySelectorAll('.js-plotly-plot').forEach(p => { p.__benchMark = window.__benchStamp; });
}
"""


#: ``--cpu``: process kinds, told apart by their command lines (run the benchmark on an otherwise idle machine:
#: another Streamlit server or process pool would be counted too).
CPU_KINDS = ("renderer", "chromium", "server", "workers")


def _cpu_kind(cmd: str) -> str | None:
    if "forkserver" in cmd or "multiprocessing" in cmd:
        return "workers"
    if "streamlit run" in cmd or "streamlit.web" in cmd:
        return "server"
    if "chrom" in cmd.lower():
        return "renderer" if "--type=renderer" in cmd else "chromium"
    return None


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds (user + system) used so far by the live processes of each kind in ``CPU_KINDS``."""
    tick = os.sysconf("SC_CLK_TCK")
    out = dict.fromkeys(CPU_KINDS, 0.0)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline") as f:
                cmd = f.read().replace("\0", " ")
        except OSError:                 # the process ended meanwhile
            continue
        kind = _cpu_kind(cmd)
        if kind:
            out[kind] += (int(fields[11]) + int(fields[12])) / tick
    return out


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def trace_line(tr: dict, t0: float) -> str:
    """One step's websocket and long-task timings, relative to the page's clock at the keypress."""
    sent = [t - t0 for t, d in tr["ws"] if d < 0]
    recv = [t - t0 for t, d in tr["ws"] if d > 0]
    if not recv:
        return "no websocket message received"
    tasks = " ".join(f"{a - t0:.0f}+{d:.0f}" for a, d in tr["lt"])
    return (f"move sent +{sent[0] if sent else float('nan'):.0f} ms; {len(recv)} messages received "
            f"+{recv[0]:.0f} .. +{recv[-1]:.0f} ms; long tasks (start+duration ms): {tasks or 'none'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=12, help="slider moves to time (default 12)")
    ap.add_argument("--slider", choices=sorted(SLIDERS), default="qps")
    ap.add_argument("--url-query", default="", help="extra scenario keys for the start page, e.g. 'layout=1P_3D'")
    ap.add_argument("--url", default=None, help="use a running server instead of starting one")
    ap.add_argument("--screenshot", default=None, help="save a screenshot of the final state here")
    ap.add_argument("--trace", action="store_true", help="print where each step's time went (see above)")
    ap.add_argument("--cpu", action="store_true", help="print the CPU time of each kind of process per step "
                                                       "(Linux only; see above)")
    args = ap.parse_args(argv)
    if args.cpu and not os.path.isdir("/proc/self"):
        ap.error("--cpu: needs Linux's /proc, which this machine does not have")

    from playwright.sync_api import expect, sync_playwright
    expect.set_options(timeout=120_000)

    proc = None
    url = args.url
    if url is None:
        (ROOT / "artifacts").mkdir(exist_ok=True)
        proc, url = start_server(ROOT / "artifacts" / "bench-server.log")
    times: list[float] = []
    numbers: list[float] = []
    cpu: list[dict[str, float]] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)
            if args.trace:
                page.add_init_script(TRACE_INIT_JS)
            t0 = time.perf_counter()
            page.goto(f"{url}/?{args.url_query}")
            expect(page.get_by_test_id("stMetric").first).to_be_visible()
            page.wait_for_function(FIRST_DRAW_JS)
            print(f"first load (cold server, cold cache): {time.perf_counter() - t0:.2f} s")
            thumb = page.get_by_test_id("stSlider").filter(has_text=SLIDERS[args.slider]).get_by_role("slider")
            for i in range(args.steps):
                before = float(thumb.input_value())
                page.evaluate(MARK_JS)
                thumb.focus()
                if args.trace:
                    page.evaluate(TRACE_JS)
                    t_page = page.evaluate("() => Date.now()")
                c0 = cpu_by_kind() if args.cpu else {}
                t = time.perf_counter()
                page.keyboard.press("ArrowRight")
                expect(thumb).not_to_have_value(str(before).removesuffix(".0"))
                want = thumb.input_value()
                want = want.removesuffix(".0") if want.endswith(".0") else want
                page.wait_for_function(NUMBERS_JS, arg=[args.slider, want], polling="raf")
                numbers.append(time.perf_counter() - t)
                page.wait_for_function(DONE_JS, arg=[args.slider, want], polling="raf")
                dt = time.perf_counter() - t
                times.append(dt)
                print(f"step {i + 1:2d}: {args.slider} {before:g} -> {want}: numbers {numbers[-1] * 1e3:5.0f} ms, "
                      f"charts {dt * 1e3:5.0f} ms")
                if args.cpu:
                    c1 = cpu_by_kind()
                    cpu.append({k: c1[k] - c0[k] for k in CPU_KINDS})
                    print("         CPU ms: " + ", ".join(f"{k} {cpu[-1][k] * 1e3:.0f}" for k in CPU_KINDS))
                if args.trace:
                    print("         " + trace_line(page.evaluate(TRACE_JS), t_page))
            if args.screenshot:
                page.screenshot(path=args.screenshot)
            browser.close()
    finally:
        if proc is not None:
            stop_server(proc)
    load = os.getloadavg()[0]
    sys.path.insert(0, str(ROOT))
    from ppd_core.config.accel import engine_build      # the server inherits this process's PPD_COMPILED
    print(f"{len(times)} uncached moves of '{args.slider}' (1-min load average {load:.2f} on {os.cpu_count()} cores, "
          f"{engine_build()} engine):")
    print(f"  keypress -> numbers updated: median {statistics.median(numbers) * 1e3:.0f} ms, "
          f"p90 {percentile(numbers, 0.9) * 1e3:.0f} ms")
    print(f"  keypress -> charts updated:  median {statistics.median(times) * 1e3:.0f} ms, "
          f"p90 {percentile(times, 0.9) * 1e3:.0f} ms, min {min(times) * 1e3:.0f} ms, max {max(times) * 1e3:.0f} ms")
    if cpu:
        print("  CPU per move, keypress -> charts (median ms; /proc counts in 10 ms ticks): " + ", ".join(
            f"{k} {statistics.median(c[k] for c in cpu) * 1e3:.0f}" for k in CPU_KINDS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
