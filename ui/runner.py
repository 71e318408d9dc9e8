"""Running simulations for the pages: the server's one worker pool (``ppd_core.analysis.pool.WorkerPool``),
cached runs, and the retry rule.

The pool. One ``WorkerPool`` per server (``st.cache_resource``): the core's start-method rule (forkserver with
ppd_core preloaded, else spawn; never a fork of the threaded server), warmed with a tiny run per worker.
Errors raised in a worker come back as themselves (``ppd_core.config.errors`` pickle intact). If a worker dies
anyway (killed, out of memory) the pool raises ``WorkerCrashed`` on the call that finds it broken and starts
fresh processes on the next call; ``pooled`` / ``call`` retry such a call once on the healed pool, and a call
whose retry crashes too raises ``WorkerLost``: one line in that session only.
"""
from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Iterator, Sequence

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import get_run_yield_check

import ppd_core
from ppd_core.analysis.pool import WorkerCrashed, WorkerPool
from ppd_core.analysis.runs import run_built
from ppd_core.config.errors import PPDError
from ppd_core.config.scenario import Scenario

from .admission import Traffic, traffic as server_traffic


class WorkerLost(WorkerCrashed):
    """A simulation worker died (killed, out of memory) twice on this call; the pool was healed."""


def worker_count() -> int:
    """Simulation worker processes: ``PPD_DASHBOARD_WORKERS`` (0 = run in the server process), default: one
    per core up to 3 (the scenario and its two baselines run side by side)."""
    if multiprocessing.parent_process() is not None:
        return 0                    # inside a worker: never start a nested pool
    raw = os.environ.get("PPD_DASHBOARD_WORKERS", "")
    if raw.strip().isdigit():
        return min(int(raw), 8)
    return min(3, os.cpu_count() or 1) if (os.cpu_count() or 1) > 1 else 0


class Workers:
    """The server's ``WorkerPool`` and the futures of its warm-up runs."""

    def __init__(self, pool: WorkerPool, warmup: tuple[Future, ...]):
        self.pool, self.warmup = pool, warmup

    @property
    def ready(self) -> bool:
        return all(f.done() for f in self.warmup)

    def pids(self) -> tuple[int, ...]:
        """PIDs of the live worker processes (tests kill one)."""
        return self.pool.pids()


def _release_workers(w: "Workers | None") -> None:
    if w is not None:
        w.pool.shutdown(wait=False)


@st.cache_resource(show_spinner=False, on_release=_release_workers)
def worker_pool(n: int) -> Workers | None:
    """The server's one ``WorkerPool`` of ``n`` processes (None for 0: run in the server process). Every worker
    imports ppd_core and runs a tiny scenario at once, so the first slider move does not wait for that."""
    if n <= 0:
        return None
    pool = WorkerPool(n)
    warm = tuple(pool.submit(ppd_core.run, Scenario(conversations=2, workload="small_tiny")) for _ in range(n))
    return Workers(pool, warm)


def start_workers() -> None:
    """Start (once per server) and warm the worker pool, and let this session use it. Pages call this after
    their results are on screen, so spawning the workers never delays a first page load."""
    worker_pool(worker_count())
    st.session_state["_workers"] = True
    freeze_startup_heap()


@st.cache_resource(show_spinner=False)
def freeze_startup_heap() -> None:
    """Once per process, after a first page has run: take what is alive now out of the cyclic garbage
    collector's walks (``gc.freeze``; garbage is collected first, so only live objects are frozen). That heap is
    mostly the imported libraries (Streamlit, pandas, pyarrow, Plotly's validators, ppd_core's catalogs: some
    140,000 objects), and Streamlit runs a full collection after every script run (``runner.postScriptGC``)
    holding the GIL: 40-100 ms per slider move on the 2-core machine, during which the server could not even
    send the "run finished" message. After the freeze the collection walks only what sessions made since, and
    still frees it. Once per server through ``st.cache_resource``: asking ``gc.get_freeze_count()`` instead would
    walk the frozen list on every call (CPython counts it node by node: ~14 ms per slider move here)."""
    gc.collect()
    gc.freeze()


def _ready_workers() -> Workers | None:
    if not st.session_state.get("_workers"):
        return None
    workers = worker_pool(worker_count())
    return workers if workers is not None and workers.ready else None


LOST = ("a simulation worker process stopped (killed or out of memory) while running this scenario, twice; "
        "the worker pool was restarted — change a control or reload to try again")


def pooled(job: Callable[..., Any], long: bool = False) -> Any:
    """``job(pool=WorkerPool)`` on the warm server pool, or ``job(workers=1)`` (in this process) until this
    session's pool is warm; ``long`` (a sweep, the advisor, validation, a paper item): start the pool and use
    it at once (the job waits for the workers anyway). No pool (``PPD_DASHBOARD_WORKERS=0``): in this process.
    A worker that dies: retried once on the healed pool; twice: ``WorkerLost``."""
    if long:
        start_workers()
    for attempt in (1, 2):
        workers = _ready_workers() if attempt == 1 and not long else worker_pool(worker_count())
        if workers is None:
            return job(workers=1)
        try:
            return job(pool=workers.pool)
        except WorkerCrashed:
            continue
    raise WorkerLost(LOST)


def call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in the warm pool (in this process until this session's pool is warm), with
    ``pooled``'s retry rule."""
    def job(pool: WorkerPool | None = None, workers: int = 1) -> Any:
        return fn(*args, **kwargs) if pool is None else pool.result(pool.submit(fn, *args, **kwargs))
    return pooled(job)


SIM_CACHE = 256            # simulate's st.cache_data entries (see docs/classroom.md for what that costs)


def queue_slots() -> int:
    """Sessions simulating (and drawing their numbers) at once: ``PPD_DASHBOARD_SLOTS``, default one per
    simulation worker (at least 1)."""
    raw = os.environ.get("PPD_DASHBOARD_SLOTS", "")
    return max(1, min(int(raw), 64)) if raw.strip().isdigit() else max(1, worker_count())


def traffic() -> Traffic:
    """The server's queue and single-flight map (``ui.admission``)."""
    return server_traffic(queue_slots(), SIM_CACHE)


def simulate(sc: Scenario, record_spans: bool = False) -> dict:
    """One ppd_core run, reduced to picklable parts (summary dict, records/nodes/spans DataFrames); the same
    pure function of ``sc`` wherever it runs (see ``call``). Sessions asking for the same run at once share one
    computation (``Traffic.run``, single flight); a finished one is a cache read."""
    return traffic().run((sc, record_spans), lambda: _simulate_cached(sc, record_spans))


@contextlib.contextmanager
def queue_turn(scenarios: Iterable[Scenario], waiting: Callable[[int, int], None] | None = None) -> Iterator[None]:
    """Hold one of the server's simulation slots for the block (FIFO; ``waiting(ahead, running)`` while
    queued), unless every scenario is cached or already being computed for another session."""
    t = traffic()
    if not t.needs_turn([(sc, False) for sc in scenarios]):
        yield
        return
    ctx = get_script_run_ctx()
    check = get_run_yield_check()           # raises Streamlit's stop / rerun when this run is to end
    shown: list = []

    def tell(ahead: int, running: int) -> None:
        """Redraw the place only when it changed (each redraw is a message to the browser: with 40 sessions
        waiting, twice a second each, that was a few % of the server); in between, only let a rerun or a
        stop of this session through (its place is then kept for its next request)."""
        if waiting is not None and shown != [ahead, running]:
            shown[:] = [ahead, running]
            waiting(ahead, running)
        elif check is not None:
            check()

    with t.turn(ctx.session_id if ctx is not None else "", tell):
        yield


@st.cache_data(max_entries=SIM_CACHE, show_spinner=False)
def _simulate_cached(sc: Scenario, record_spans: bool = False) -> dict:
    traffic().computed()
    # the tables are built in the worker: the server only unpickles them (~0.4 ms instead of ~20 ms per run)
    res = call(run_built, sc, record_spans=record_spans)
    return {"summary": res.summary, "records": res.records, "nodes": res.nodes,
            "spans": res.spans if record_spans else None}


def parallel_map(fn: Callable[[Any], Any], items: Sequence[Any],
                 on_done: Callable[[int], None] | None = None) -> list:
    """``[fn(x) for x in items]`` with up to (workers + 1) calls in flight. The calls are cached functions
    whose misses run in the process pool, so threads only wait; each thread gets this run's script context
    (st.cache_data needs it). ``on_done(k)`` is called in this thread after k results are in."""
    n = worker_count()
    if n <= 0 or len(items) <= 1:
        out = []
        for i, x in enumerate(items, start=1):
            out.append(fn(x))
            if on_done:
                on_done(i)
        return out
    ctx = get_script_run_ctx()

    def run_one(x: Any) -> Any:
        add_script_run_ctx(threading.current_thread(), ctx)
        return fn(x)

    with ThreadPoolExecutor(max_workers=n + 1, thread_name_prefix="ppd-sim") as ex:
        futures = [ex.submit(run_one, x) for x in items]
        if on_done:
            for k, _ in enumerate(as_completed(futures), start=1):
                on_done(k)
        return [f.result() for f in futures]


def baseline_scenarios(sc: Scenario) -> dict[str, Scenario]:
    """{"PPD": sc, "PD": x=0 on the same GPUs, "Replica": same GPU count} from the core."""
    return dict(ppd_core.baselines(sc))


def simulate_systems(sc: Scenario) -> dict[str, dict]:
    """The scenario and its baselines, each cached separately, run side by side."""
    scs = baseline_scenarios(sc)
    return dict(zip(scs, parallel_map(simulate, list(scs.values()))))


@st.cache_data(max_entries=64, show_spinner=False)
def interference_curve(sc: Scenario, batches: tuple[int, ...], n_prefills: int, prefill_tokens: int,
                       cached_tokens: int) -> pd.DataFrame:
    """Decode TPOT vs batch with no / a full / an append prefill in the batch (ppd_core.model), in the
    micro-benchmark's setting: the decodes share ``cached_tokens`` of cached context (its KV read once by
    cascade attention), which a full prefill of another prompt turns off and an append-prefill keeps."""
    sc = sc.with_(shared_prefix_tokens=cached_tokens)
    rows = []
    for b in batches:
        for kind in ("none", "full", "append"):
            rows.append({"batch": b, "kind": kind, "tpot_ms": ppd_core.model.interference_tpot_ms(
                sc, batch=b, kind=kind, n_prefills=n_prefills, prefill_tokens=prefill_tokens,
                cached_tokens=cached_tokens)})
    return pd.DataFrame(rows)


def run_or_stop(fn: Callable[[], Any], what: str = "Simulation refused this scenario") -> Any:
    """Call ``fn``; a user-facing ppd_core error or a lost worker becomes one st.error line and stops the
    page (this session only: nothing is cached and the pool has already healed)."""
    try:
        return fn()
    except WorkerLost as exc:                   # a PPDError too: caught first, it is not the scenario's fault
        st.error(f"Simulation interrupted: {exc}.")
    except PPDError as exc:
        st.error(f"{what}: {exc}")
    st.stop()
