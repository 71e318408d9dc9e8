"""Load benchmark: N concurrent browser sessions with different Explore URLs on ONE Streamlit server.

Starts ``streamlit run app.py`` on a free port, launches one Debian Chromium and, wave after wave, opens N
browser contexts at once (one asyncio loop, Playwright's async API), each on its own Explore URL (qps, layout,
policy, bandwidth, workload, w_tpot, seed vary; small runs). For every session it times, from ``goto``:

* numbers: the script run is over and the headline cards (Turn 2+ TTFT / TPOT mean, local share) and the
  share link are on screen - and checks them against ``ppd_core.run`` in this process (same rounding);
* charts: Plotly has drawn the page's three charts (with ``--no-charts`` this is not waited for).

It reads the server's RSS (the streamlit process plus its children: the spawned simulation workers) before and
after every wave (contexts closed), samples its peak during each wave, and sums the CPU time of the server and
of the browser per wave. Prints the machine, every session, and per wave the median / max times.

    .venv/bin/python scripts/bench_load.py [--sessions 8] [--waves 2] [--conversations 60] [--no-charts]
                                           [--fault-waves 2]

This is a benchmark, not a test (``tests/test_load.py`` asserts; this reports). Exit status 1 only if a session
showed wrong numbers or none.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import test_load as L  # noqa: E402
from conftest import CHROMIUM, start_server, stop_server  # noqa: E402

MB = 2 ** 20


def wave_queries(wave: int, n: int, conversations: int) -> list[str]:
    """N distinct URLs for wave ``wave``: the 16 of tests/test_load.py in turn, then the same with other seeds."""
    base = L.WAVE1 + L.WAVE2
    out = []
    for j in range(n):
        idx = wave * n + j
        q, bump = base[idx % len(base)], idx // len(base)
        if bump:
            q = re.sub(r"seed=(\d+)", lambda m: f"seed={int(m.group(1)) + 1000 * bump}", q)
        out.append(L.with_size(q, conversations))
    return out


def cpu_seconds(procs) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + getattr(t, "children_user", 0) + getattr(t, "children_system", 0)
        except Exception:            # noqa: BLE001  (process gone)
            pass
    return total


def tree(pid: int) -> list:
    import psutil
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def browser_procs(server_pid: int) -> list:
    """Chromium processes (and the Playwright driver) under this process, not the server's tree."""
    import psutil
    skip = {p.pid for p in tree(server_pid)}
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in skip]


def machine() -> str:
    import psutil
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:                # noqa: BLE001
        chromium = "?"
    from importlib.metadata import version
    return (f"machine: {os.cpu_count()} logical cores ({psutil.cpu_count(logical=False)} physical) {model}; "
            f"RAM {psutil.virtual_memory().total / 2**30:.1f} GiB; Python {platform.python_version()}, "
            f"streamlit {version('streamlit')}, playwright {version('playwright')}, {chromium}")


def fmt_t(xs: list[float]) -> str:
    xs = [x for x in xs if x == x]
    if not xs:
        return "n/a"
    return f"median {statistics.median(xs):5.1f} s, max {max(xs):5.1f} s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=8, help="concurrent sessions per wave (default 8)")
    ap.add_argument("--waves", type=int, default=2, help="waves of new URLs, one after the other (default 2)")
    ap.add_argument("--conversations", type=int, default=L.CONVERSATIONS, help="conversations per run (default 60)")
    ap.add_argument("--no-charts", action="store_true", help="do not wait for the charts (numbers only)")
    ap.add_argument("--timeout", type=float, default=240.0, help="per-session timeout in s (default 240)")
    ap.add_argument("--fault-waves", type=int, default=0,
                    help="then N waves with a fault: 7 sessions load and move a slider (pool runs) while one "
                         "picks a model that does not fit and a simulation worker is killed by its PID")
    args = ap.parse_args(argv)

    print(machine())
    waves = [wave_queries(i, args.sessions, args.conversations) for i in range(args.waves)]
    t = time.perf_counter()
    want = {q: L.expected(q) for w in waves for q in w}
    print(f"expected numbers from ppd_core.run in this process: {len(want)} scenarios, "
          f"{time.perf_counter() - t:.1f} s")

    (ROOT / "artifacts").mkdir(exist_ok=True)
    proc, url = start_server(ROOT / "artifacts" / "bench-load-server.log")
    rows: list[dict] = []
    bad = 0
    try:
        pid = proc.pid
        rss0, n0 = L.server_rss(pid)
        print(f"server up: RSS {rss0 / MB:.0f} MB in {n0} process(es) before any session")
        state = {"sampler": L.RssSampler(pid).__enter__(), "cpu_srv": cpu_seconds(tree(pid)),
                 "cpu_br": cpu_seconds(browser_procs(pid)), "t": time.perf_counter()}

        def between(i: int, sessions) -> None:
            wall = time.perf_counter() - state["t"]
            state["sampler"].__exit__(None, None, None)
            time.sleep(1.0)                     # the closed sessions' websockets go
            rss, n = L.server_rss(pid)
            srv, br = cpu_seconds(tree(pid)), cpu_seconds(browser_procs(pid))
            rows.append({"wave": i + 1, "sessions": sessions, "rss": rss, "nproc": n, "wall": wall,
                         "peak": max(state["sampler"].peak, rss),
                         "cpu_srv": srv - state["cpu_srv"], "cpu_br": br - state["cpu_br"]})
            state.update(sampler=L.RssSampler(pid).__enter__(), cpu_srv=srv, cpu_br=br, t=time.perf_counter())

        L.run_waves(url, waves, timeout_s=args.timeout, charts=not args.no_charts, between=between)
        state["sampler"].__exit__(None, None, None)
        fault_rows = []
        for i in range(args.fault_waves):
            queries = wave_queries(i, 7, args.conversations)
            queries.append(L.with_size(L.FAULT_QUERY, args.conversations))
            t0 = time.perf_counter()
            with L.RssSampler(pid) as sampler:
                sessions, killed = L.run_fault_wave(url, queries, pid, timeout_s=args.timeout)
            time.sleep(1.0)
            rss, n = L.server_rss(pid)
            fault_rows.append({"wave": i + 1, "wall": time.perf_counter() - t0, "killed": killed, "rss": rss,
                               "nproc": n, "peak": max(sampler.peak, rss),
                               "problems": L.check_fault_wave(sessions)})
        breakdown = []
        for p in tree(pid):
            try:
                breakdown.append(f"{p.pid} {' '.join(p.cmdline())[-60:]!r}: {p.memory_info().rss / MB:.0f} MB")
            except Exception:                   # noqa: BLE001
                pass
    finally:
        stop_server(proc)

    print()
    for r in rows:
        print(f"wave {r['wave']}: {len(r['sessions'])} concurrent sessions")
        for s in r["sessions"]:
            what = s.error or (f"{s.shown['ttft']:>10} {s.shown['tpot']:>8} {s.shown['local']:>7}")
            print(f"  numbers {s.seconds:6.1f} s  charts {s.charts_seconds:6.1f} s  {what}  <- {s.query}")
            for line in s.log[:3]:
                print(f"    browser: {line[:200]}")
        problems = L.check_sessions(r["sessions"], want)
        bad += len(problems)
        for p in problems:
            print(f"  WRONG: {p}")
    print()
    print(f"server RSS (streamlit + children) before: {rss0 / MB:.0f} MB ({n0} process)")
    prev = rss0
    for r in rows:
        ss = r["sessions"]
        print(f"wave {r['wave']}: numbers on all {len(ss)} sessions after {fmt_t([s.seconds for s in ss])} "
              f"per session; charts {fmt_t([s.charts_seconds for s in ss])}; wave wall {r['wall']:.1f} s; "
              f"CPU server {r['cpu_srv']:.1f} s, browser {r['cpu_br']:.1f} s; "
              f"RSS after {r['rss'] / MB:.0f} MB ({r['nproc']} processes, {(r['rss'] - prev) / MB:+.0f} MB), "
              f"peak during {r['peak'] / MB:.0f} MB; "
              f"{'all correct' if not L.check_sessions(ss, want) else 'WRONG NUMBERS'}")
        prev = r["rss"]
    for r in fault_rows:
        bad += len(r["problems"])
        print(f"fault wave {r['wave']}: 7 sessions + 1 infeasible model, worker {r['killed']} killed; wave wall "
              f"{r['wall']:.1f} s; RSS after {r['rss'] / MB:.0f} MB ({r['nproc']} processes), peak "
              f"{r['peak'] / MB:.0f} MB; " + ("all correct" if not r["problems"] else "; ".join(r["problems"])))
    print("server processes at the end: " + "; ".join(breakdown))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
