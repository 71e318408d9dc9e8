"""A classroom on one server (issue #30 item 3): the server-wide queue and single-flight map (``ui.admission``)
in threads, then 10 protocol clients (``tests/st_client.py``, Streamlit's own websocket protocol, no browser)
on one real server with one simulation slot: no exceptions, every client its own scenario's numbers (checked
against ``ppd_core.run``), a queued client saw "Queued: N ahead of you", identical scenarios computed once
(the server's counters, written to the file ``PPD_FLIGHT_STATS`` names)."""
from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

import ppd_core
from ui.admission import Traffic

# ------------------------------------------------------------------------------------------------------------
# ui.admission.Traffic in threads (no server)
# ------------------------------------------------------------------------------------------------------------


def _together(fns, timeout=20.0):
    """Run each fn in its own thread, all released at once; [(result | exception)] in order."""
    out: list = [None] * len(fns)
    gate = threading.Barrier(len(fns))

    def go(i, fn):
        gate.wait()
        try:
            out[i] = fn()
        except BaseException as exc:        # noqa: BLE001  (the test looks at what each thread got)
            out[i] = exc

    ts = [threading.Thread(target=go, args=(i, f)) for i, f in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
    assert not any(t.is_alive() for t in ts)
    return out


def test_identical_requests_at_once_compute_once_and_share_the_result():
    t = Traffic(slots=1)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.3)
        return {"n": len(calls)}

    got = _together([lambda: t.run("k", slow) for _ in range(6)])
    assert calls == [1]
    assert all(g == {"n": 1} for g in got)
    s = t.stats()
    assert s["joined"] == 5 and s["in_flight"] == 0
    assert not t.needs_turn(["k"])          # computed: a later request only reads the cache
    assert t.needs_turn(["k", "other"])


class Refused(ValueError):
    pass


def test_an_error_reaches_the_waiters_of_its_key_only_each_a_copy():
    t = Traffic(slots=1)

    def bad():
        time.sleep(0.3)
        raise Refused("scenario A does not fit")

    def good():
        time.sleep(0.3)
        return "B"

    got = _together([lambda: t.run("A", bad)] * 3 + [lambda: t.run("B", good)] * 2)
    assert all(isinstance(g, Refused) and str(g) == "scenario A does not fit" for g in got[:3])
    assert len({id(g) for g in got[:3]}) == 3              # no traceback shared between sessions
    assert got[3:] == ["B", "B"]
    assert t.stats()["failed"] == 1 and t.stats()["in_flight"] == 0


class Stopped(BaseException):               # stands for Streamlit's StopException / RerunException
    pass


def test_a_stopped_computing_session_hands_over_and_its_waiters_compute():
    t = Traffic(slots=1)
    calls = []

    def first():
        calls.append("first")
        time.sleep(0.3)
        raise Stopped()

    def second():
        calls.append("second")
        return 42

    got = _together([lambda: t.run("k", first), lambda: (time.sleep(0.05), t.run("k", second))[1]])
    assert isinstance(got[0], Stopped)
    assert got[1] == 42 and calls == ["first", "second"]


def test_the_queue_is_fifo_tells_each_its_place_and_a_rerun_keeps_its_place():
    t = Traffic(slots=1)
    order, places = [], {}
    hold = threading.Event()

    def session(name, delay, body=lambda: None):
        def go():
            time.sleep(delay)
            with t.turn(name, lambda ahead, running: places.setdefault(name, []).append(ahead)):
                order.append(name)
                body()
        return go

    def rerun_while_waiting():
        """c's first run is stopped while it waits (its waiting callback raises, as st does on a rerun); its
        next request takes c's place, ahead of d."""
        time.sleep(0.2)
        seen = []

        def stop(ahead, running):
            seen.append(ahead)
            if len(seen) == 2:
                raise Stopped()
        try:
            with t.turn("c", stop):
                order.append("c-first")
        except Stopped:
            pass
        time.sleep(0.2)                      # d is queued behind c's vacant place meanwhile
        with t.turn("c", lambda a, r: places.setdefault("c", []).append(a)):
            order.append("c")

    got = _together([session("a", 0.0, lambda: hold.wait(3)), session("b", 0.1), rerun_while_waiting,
                     session("d", 0.5), lambda: (time.sleep(1.5), hold.set())])
    assert not any(isinstance(g, BaseException) for g in got), got
    assert order == ["a", "b", "c", "d"]
    assert places["b"][0] == 0 and places["d"][0] == 2       # d: behind b and c's kept place
    s = t.stats()
    assert s["replaced"] == 1 and s["admitted"] == 4 and s["running"] == 0 and s["waiting"] == 0


# ------------------------------------------------------------------------------------------------------------
# 10 protocol clients on one server
# ------------------------------------------------------------------------------------------------------------

# small runs (the test server runs the pure-Python engine); the last two links repeat the first two
LINKS = [f"layout={lay}&conversations=30&workload=small_tiny&qps={q}&seed={s}" for lay, q, s in (
    ("2P_2D", 2, 1), ("2P_2pD", 3, 2), ("1P_3pD", 4, 3), ("3P_1D", 2.5, 4), ("4R", 5, 5), ("2P_1D_1pD", 3.5, 6),
    ("1P_1D_2pD", 4.5, 7), ("2P_2D", 6, 8))]
LINKS += LINKS[:2]


def _want(sc) -> dict:
    s = ppd_core.run(sc).summary
    t2 = s["groups"]["turn2plus"]
    return {"ttft": f"{t2['ttft_ms']['mean']:,.1f} ms", "tpot": f"{t2['tpot_ms']['mean']:,.1f} ms",
            "local": f"{100 * s['local_share']:.1f} %"}


@pytest.fixture(scope="module")
def classroom_server(tmp_path_factory):
    import os

    from conftest import ARTIFACTS, start_server, stop_server
    stats = tmp_path_factory.mktemp("classroom") / "flights.json"
    saved = {k: os.environ.get(k) for k in ("PPD_FLIGHT_STATS", "PPD_DASHBOARD_SLOTS")}
    os.environ.update(PPD_FLIGHT_STATS=str(stats), PPD_DASHBOARD_SLOTS="1")
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        proc, url = start_server(ARTIFACTS / "classroom-test-server.log",
                                 extra_args=("--server.disconnectedSessionTTL=1",))
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    try:
        yield url, stats
    finally:
        stop_server(proc)


def _run_in_own_loop(make_coro, timeout_s):
    """asyncio.run on a fresh thread: an earlier test (Playwright's sync API) may leave a loop running on
    this one, and asyncio.run refuses to nest."""
    box: dict = {}

    def target():
        try:
            box["out"] = asyncio.run(make_coro())
        except BaseException as exc:            # re-raised on the test's thread below
            box["err"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout=timeout_s)
    if "err" in box:
        raise box["err"]
    if "out" not in box:
        raise TimeoutError(f"the clients did not finish within {timeout_s} s")
    return box["out"]


def test_10_sessions_queue_share_identical_runs_and_each_gets_its_own_numbers(classroom_server):
    import st_client as C
    url, stats = classroom_server
    t0 = time.perf_counter()
    moved = [round(1.0 + 0.5 * i, 1) for i in range(len(LINKS))]
    moved[-2:] = moved[:2]                                  # the repeated links move to the same values too
    mine = [{ppd_core.parse(q), ppd_core.parse(q).with_(qps=v)} for q, v in zip(LINKS, moved)]
    want = {sc: _want(sc) for m in mine for sc in m}
    distinct_runs = {b for m in mine for sc in m for b in ppd_core.baselines(sc).values()}

    async def client(q, v, start):
        async with C.Client(url) as c:
            await start.wait()
            runs = [await c.load(q, 60)]
            runs.append(await c.move({"qps": v}, 60))
            return runs

    async def main():
        start = asyncio.Event()
        tasks = [asyncio.create_task(client(q, v, start)) for q, v in zip(LINKS, moved)]
        await asyncio.sleep(0.5)            # every websocket is open before the first link is sent
        start.set()
        return await asyncio.gather(*tasks)

    got = _run_in_own_loop(main, 300)
    counts = json.loads(stats.read_text())
    problems, queued = [], 0
    for i, (runs, own) in enumerate(zip(got, mine)):
        queued += any(run.queue for run in runs)
        for run, sc in zip(runs, (ppd_core.parse(LINKS[i]), ppd_core.parse(LINKS[i]).with_(qps=moved[i]))):
            nums = C.numbers(run)
            if C.exceptions(run) or C.errors(run):
                problems.append(f"client {i}: {C.exceptions(run) + C.errors(run)}")
            elif nums is None:
                problems.append(f"client {i}: no numbers ({run.status})")
            elif ppd_core.parse(nums["link"]) != sc:
                problems.append(f"client {i}: shows {nums['link']}, its scenario is {sc.to_params()}")
            elif {k: nums[k] for k in ("ttft", "tpot", "local")} != want[sc]:
                problems.append(f"client {i}: {nums} but ppd_core.run says {want[sc]}")
    report = f"{counts}; {len(distinct_runs)} distinct runs; {time.perf_counter() - t0:.1f} s"
    assert not problems, "\n".join(problems) + "\n" + report
    assert queued >= 1, report                              # one slot, ten sessions at once
    assert counts["computed"] == len(distinct_runs), report    # every identical run once, none lost
    assert counts["queued"] >= 1 and counts["admitted"] >= 1, report
