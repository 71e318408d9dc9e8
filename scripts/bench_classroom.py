"""Classroom benchmark (issue #30 item 3): N concurrent sessions on ONE Streamlit server open the same shared
Explore link, then each moves 2-3 sliders to values of its own.

The clients are not browsers: they speak Streamlit's websocket protocol (``tests/st_client.py``: BackMsg
``rerun_script`` with the query string / widget states, ForwardMsgs read until ``script_finished``, the
headline numbers decoded from the delta elements), ~0.01 s of CPU each, so the figures are the SERVER's
(40 Chromium pages would take 97 % of the 2 cores themselves). One asyncio loop drives every client.

Per client: time to numbers for the shared link (all at once), then a burst of slider moves (the second sent
0.3 s after the first, while the first may still wait: a session that reruns replaces its own queued job),
timed from the burst's LAST move to the numbers of its final scenario (also from its first move). Every run's
numbers (and share link) are checked against ``ppd_core.run`` of the scenario that run showed, which must be one
of this client's own; exceptions and error boxes are counted. Clients ``2k`` and ``2k + 1`` (``k < --pairs``)
move to the same values: those scenarios must be computed once (the server's single-flight counters, written
to the file named by ``PPD_FLIGHT_STATS``). Server RSS (server + workers) and CPU are sampled before, during
and after (the sessions gone: ``--server.disconnectedSessionTTL`` is set short).

    .venv/bin/python scripts/bench_classroom.py [--sessions 40] [--workers N] [--pairs 4] [--link QUERY]

Exit status 1 if a client saw an exception, another session's numbers, wrong numbers or none.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import st_client as C  # noqa: E402
import test_load as L  # noqa: E402
from conftest import start_server, stop_server  # noqa: E402

import ppd_core  # noqa: E402

MB = 2 ** 20
LINK = "layout=2P_2pD&policy=dynamic&qps=4&seed=7"      # the default ShareGPT workload, 500 conversations


def moves_for(i: int, pairs: int) -> list[dict]:
    """Client ``i``'s burst of slider moves (each a dict of cumulative widget values): distinct per client, the
    same for the two clients of a pair. Every move changes a value (a browser sends nothing for a slider
    released where it was): qps 4.1-8.0 (the link's is 4), w_tpot 1.1-4.7 (1), bandwidth 50-100 (150)."""
    j = i // 2 if i < 2 * pairs else i
    qps = round(4.1 + 0.1 * j, 1)
    burst = [{"qps": qps}, {"qps": qps, "w_tpot": round(1.1 + 0.1 * (j % 37), 1)}]
    if j % 3 == 0:
        burst.append({**burst[-1], "bandwidth_gbps": 50.0 + 5 * (j % 11)})
    return burst


def scenario_of(link: str, values: dict):
    return ppd_core.parse(link).with_(**values)


def expected(sc) -> dict[str, str]:
    s = ppd_core.run(sc).summary
    t2 = s["groups"]["turn2plus"]
    return {"ttft": L._fmt_ms(t2["ttft_ms"]["mean"]), "tpot": L._fmt_ms(t2["tpot_ms"]["mean"]),
            "local": L._fmt_pct(s["local_share"])}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(x for x in xs if x == x)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))
    return xs[k]


class Result:
    def __init__(self, i: int):
        self.i, self.runs, self.problems = i, [], []
        self.load_s = self.last_s = self.first_s = float("nan")
        self.queue: list = []


async def drive(i: int, base: str, link: str, burst: list[dict], own: dict, want: dict, start: asyncio.Event,
                timeout: float, gap: float) -> Result:
    r = Result(i)
    try:
        async with C.Client(base) as c:
            await start.wait()
            run = await c.load(link, timeout)
            r.runs.append(run)
            r.load_s = run.seconds
            t_first = None
            for k, values in enumerate(burst):
                t = await c.send_move(values)
                t_first = t_first or t
                if k < len(burst) - 1:
                    await asyncio.sleep(gap)
            final = own[json.dumps(burst[-1], sort_keys=True)]
            # read runs until one shows the final scenario (earlier moves' runs may finish first)
            deadline = time.perf_counter() + timeout
            while True:
                run = await c.next_run(max(1.0, deadline - time.perf_counter()))
                r.runs.append(run)
                nums = C.numbers(run)
                if nums is not None and ppd_core.parse(nums["link"]) == final:
                    r.last_s, r.first_s = run.t_numbers - t, run.t_numbers - t_first
                    break
    except Exception as exc:            # noqa: BLE001  (reported per client)
        seen = [(run.status, (C.numbers(run) or {}).get("link"), len(run.elements)) for run in r.runs]
        r.problems.append(f"client {i}: {type(exc).__name__}: {exc}; runs seen: {seen}")
    for run in r.runs:
        r.queue += run.queue
        r.problems += [f"client {i}: exception on the page: {e}" for e in C.exceptions(run)]
        r.problems += [f"client {i}: error on the page: {e}" for e in C.errors(run)]
        nums = C.numbers(run)
        if nums is None:
            continue
        sc = ppd_core.parse(nums["link"])
        if sc not in own.values():
            whose = [q for q, w in want.items() if w["ttft"] == nums["ttft"]]
            r.problems.append(f"client {i}: showed a scenario that is not its own: {nums['link']} "
                              f"(CROSS-SESSION?) {whose[:1]}")
            continue
        for k in ("ttft", "tpot", "local"):
            if nums[k] != want[sc][k]:
                r.problems.append(f"client {i}: {k} {nums[k]!r}, ppd_core.run says {want[sc][k]!r} for {nums['link']}")
    return r


def plan(link: str, n: int, pairs: int, offset: int = 0) -> tuple[list[dict], dict]:
    """Each client's own scenarios (by its burst's cumulative values; "{}" the shared link), and the expected
    numbers of every scenario (``ppd_core.run`` here)."""
    own = []
    for i in range(n):
        own.append({json.dumps(v, sort_keys=True): scenario_of(link, v) for v in moves_for(offset + i, pairs)})
        own[-1]["{}"] = ppd_core.parse(link)
    return own, {sc: expected(sc) for sc in {sc for o in own for sc in o.values()}}


async def classroom(base: str, link: str, n: int, pairs: int, own: list[dict], want: dict, timeout: float,
                    gap: float, offset: int = 0) -> list[Result]:
    start = asyncio.Event()
    tasks = [asyncio.create_task(drive(i, base, link, moves_for(offset + i, pairs), own[i], want, start, timeout,
                                       gap)) for i in range(n)]
    await asyncio.sleep(1.0)            # every websocket is open (Client.__aenter__) before the first load
    start.set()
    return await asyncio.gather(*tasks)


def probe(url: str) -> None:
    """One short session after the class left: Streamlit's session storage (a TTL cache) drops expired
    disconnected sessions only when it is next used, so until someone connects the last class's sessions stay."""
    async def go() -> None:
        async with C.Client(url) as c:
            await c.load("layout=2P_2D&conversations=20&seed=99")
    asyncio.run(go())


def flight_stats(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--workers", type=int, default=None, help="PPD_DASHBOARD_WORKERS for the server (default: "
                    "the app's own rule, min(3, cores))")
    ap.add_argument("--pairs", type=int, default=4, help="pairs of clients that move to the same values")
    ap.add_argument("--link", default=LINK, help=f"the shared link's query (default {LINK})")
    ap.add_argument("--gap", type=float, default=0.3, help="seconds between the moves of a burst")
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--leave-wait", type=float, default=12.0, help="seconds after the sessions left before the "
                    "'after' RSS is read")
    ap.add_argument("--waves", type=int, default=1, help="then more classrooms with new values (memory only: "
                    "RSS after each, the caches filling to their caps)")
    ap.add_argument("--same", action="store_true", help="the extra waves move to the first wave's values (all "
                    "cached: what stays after them is what sessions leave behind)")
    ap.add_argument("--server-arg", action="append", default=[], help="more `streamlit run` options (A/B runs)")
    ap.add_argument("--profile", type=Path, default=None, help="py-spy record the server process (GIL-holding samples, collapsed stacks) into this file")
    args = ap.parse_args(argv)

    print(L.__name__ and __import__("bench_load").machine())
    t = time.perf_counter()
    own, want = plan(args.link, args.sessions, args.pairs)
    scenarios = set(want)
    print(f"expected numbers from ppd_core.run in this process: {len(want)} scenarios, "
          f"{time.perf_counter() - t:.1f} s")

    stats_file = Path(tempfile.mkdtemp(prefix="ppd-classroom-")) / "flights.json"
    os.environ["PPD_FLIGHT_STATS"] = str(stats_file)
    if args.workers is not None:
        os.environ["PPD_DASHBOARD_WORKERS"] = str(args.workers)
    (ROOT / "artifacts").mkdir(exist_ok=True)
    proc, url = start_server(ROOT / "artifacts" / "bench-classroom-server.log",
                             extra_args=("--server.disconnectedSessionTTL=2", *args.server_arg))
    import bench_load as B
    spy = None
    try:
        pid = proc.pid
        # one warm-up session: the worker pool starts after a first page (runner.start_workers)
        async def warm() -> None:
            async with C.Client(url) as c:
                await c.load("layout=2P_2D&conversations=20&seed=99")
                await asyncio.sleep(3.0)
        asyncio.run(warm())
        time.sleep(args.leave_wait)
        rss0, n0 = L.server_rss(pid)
        before = []
        for p in B.tree(pid):
            try:
                before.append(f"{p.pid}: {p.memory_info().rss / MB:.0f} MB")
            except Exception:                   # noqa: BLE001  (a process that just exited)
                pass
        stats0 = flight_stats(stats_file)
        main0 = B.cpu_seconds(B.tree(pid)[:1])
        cpu0, load0, t0 = B.cpu_seconds(B.tree(pid)), os.getloadavg(), time.perf_counter()
        if args.profile:
            import subprocess
            spy = subprocess.Popen([str(ROOT / ".venv" / "bin" / "py-spy"), "record", "-p", str(pid), "-o",
                                    str(args.profile), "-r", "40", "--format", "raw", "--nonblocking", "--gil"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with L.RssSampler(pid, every=0.2) as sampler:
            results = asyncio.run(classroom(url, args.link, args.sessions, args.pairs, own, want, args.timeout,
                                            args.gap))
        wall = time.perf_counter() - t0
        cpu1, load1 = B.cpu_seconds(B.tree(pid)), os.getloadavg()
        main1 = B.cpu_seconds(B.tree(pid)[:1])
        if spy is not None:
            import signal
            spy.send_signal(signal.SIGINT)      # py-spy writes its file on SIGINT
            spy.wait(timeout=60)
        stats1 = flight_stats(stats_file)
        time.sleep(args.leave_wait)            # the sessions' websockets are closed; their TTL passes
        rss_kept = L.server_rss(pid)[0]
        probe(url)
        time.sleep(2.0)
        rss2, n2 = L.server_rss(pid)
        rss_peak = max(sampler.peak, rss2)
        more = []
        for k in range(1, args.waves):
            off = 0 if args.same else k * args.sessions
            own_k, want_k = (own, want) if args.same else plan(args.link, args.sessions, args.pairs, offset=off)
            with L.RssSampler(pid, every=0.2) as s_k:
                res_k = asyncio.run(classroom(url, args.link, args.sessions, args.pairs, own_k, want_k,
                                              args.timeout, args.gap, offset=off))
            time.sleep(args.leave_wait)
            probe(url)
            time.sleep(2.0)
            r_k = L.server_rss(pid)[0]
            more.append((k + 1, r_k, max(s_k.peak, r_k), sum(len(r.problems) for r in res_k),
                         pct([r.last_s for r in res_k], .95)))
        breakdown = []
        for p in B.tree(pid):
            try:
                breakdown.append(f"{p.pid} {' '.join(p.cmdline())[-40:]!r}: {p.memory_info().rss / MB:.0f} MB")
            except Exception:                   # noqa: BLE001  (a process that just exited)
                pass
    finally:
        stop_server(proc)

    problems = [p for r in results for p in r.problems]
    load_s = [r.load_s for r in results]
    last_s = [r.last_s for r in results]
    first_s = [r.first_s for r in results]
    queued = [r for r in results if r.queue]
    ns = [n for r in results for _, n in r.queue]
    updated = sum(1 for r in results if len({n for _, n in r.queue}) > 1)
    got = sum(1 for x in last_s if x == x)
    print()
    for r in results:
        q = ",".join(str(n) for _, n in r.queue[:8])
        print(f"  client {r.i:2d}: shared link {r.load_s:5.2f} s; last move -> numbers {r.last_s:5.2f} s "
              f"(first move -> {r.first_s:5.2f} s); queue seen [{q}]")
    print()
    print(f"{args.sessions} sessions, workers {os.environ.get('PPD_DASHBOARD_WORKERS', 'default')}, "
          f"load avg before {load0[0]:.2f}, after {load1[0]:.2f} (1-min)")
    print(f"shared link -> numbers: p50 {pct(load_s, .5):.2f} s, p95 {pct(load_s, .95):.2f} s, "
          f"max {max(load_s):.2f} s")
    print(f"last slider move -> numbers: p50 {pct(last_s, .5):.2f} s, p95 {pct(last_s, .95):.2f} s, "
          f"max {max(x for x in last_s if x == x) if got else float('nan'):.2f} s ({got}/{args.sessions} got numbers)")
    print(f"first slider move -> final numbers: p50 {pct(first_s, .5):.2f} s, p95 {pct(first_s, .95):.2f} s")
    print(f"queue: {len(queued)}/{args.sessions} sessions saw 'Queued: N ahead of you' (max N {max(ns, default=0)}; "
          f"{updated} saw N change while waiting)")
    comp = {k: stats1.get(k, 0) - stats0.get(k, 0) for k in ("computed", "joined", "failed", "replaced", "admitted")}
    print(f"single-flight: {comp['computed']} simulations computed, {comp['joined']} requests joined one already "
          f"in flight, {comp['failed']} failed; admission: {comp['admitted']} jobs admitted, {comp['replaced']} "
          f"queued jobs replaced by their session's rerun; distinct scenarios asked: {len(scenarios)} "
          f"(x3 systems, some baselines shared)")
    main_cpu, all_cpu = main1 - main0, cpu1 - cpu0
    print(f"server CPU {all_cpu:.1f} s over {wall:.1f} s wall ({all_cpu / wall:.2f} cores): the Streamlit process "
          f"{main_cpu:.1f} s (one GIL: its floor), the simulation workers {all_cpu - main_cpu:.1f} s")
    for cores in (2, 4, 8, 16):
        print(f"  EXTRAPOLATED for {cores} free cores (workers = cores): the burst takes about max(Streamlit "
              f"process, all CPU / cores) = {max(main_cpu, all_cpu / cores):.1f} s of wall")
    print(f"server RSS (server + workers): before {rss0 / MB:.0f} MB ({n0} processes), peak {rss_peak / MB:.0f} MB, "
          f"after the sessions left {rss_kept / MB:.0f} MB, after one more session came (Streamlit then drops the "
          f"expired ones) {rss2 / MB:.0f} MB ({n2} processes, {(rss2 - rss0) / MB:+.0f} MB)")
    for k, r_k, peak_k, bad_k, p95_k in more:
        print(f"wave {k} ({'the same' if args.same else 'new'} values): RSS after {r_k / MB:.0f} MB, peak {peak_k / MB:.0f} MB; last move p95 "
              f"{p95_k:.2f} s; {bad_k} problems")
        problems += [f"wave {k}: {bad_k} problems"] if bad_k else []
    print("server processes before: " + "; ".join(before))
    print("server processes at the end: " + "; ".join(breakdown))
    print(f"problems: {len(problems)}")
    for p in problems[:30]:
        print("  " + p)
    return 1 if problems or got < args.sessions else 0


if __name__ == "__main__":
    sys.exit(main())
