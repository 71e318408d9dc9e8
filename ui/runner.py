"""Running simulations for the pages: the one worker pool (spawned, self-healing), cached runs, and the one
progress adapter used by Advisor, Paper, Validation and Sweep.

The pool. One ``ProcessPoolExecutor`` per server (``st.cache_resource``), spawned (never a fork of the
threaded server), warmed with a tiny run per worker. Errors raised in a worker come back as themselves
(``ppd_core.config.errors`` pickle intact). If a worker dies anyway (killed, out of memory) every future of that
pool fails with ``BrokenProcessPool``; the first caller to see it marks the pool broken and drops it from the
cache (its ``on_release`` shuts it down) and every affected call is retried once on the fresh pool. A call
whose retry breaks the new pool too raises ``WorkerLost``: one line in that session only.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Sequence

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

import ppd_core
from ppd_core.config.errors import PPDError
from ppd_core.config.scenario import Scenario

from .analysis import sweep_point

MAX_PROGRESS_UPDATES = 40


class WorkerLost(RuntimeError):
    """A simulation worker died (killed, out of memory) twice on this call; the pool was replaced."""


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
    """The simulation process pool, the futures of its warm-up runs, and whether it broke."""

    def __init__(self, pool: ProcessPoolExecutor, warmup: tuple):
        self.pool, self.warmup = pool, warmup
        self.broken = False
        self.lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return all(f.done() for f in self.warmup)

    def pids(self) -> list[int]:
        """PIDs of the live worker processes (tests kill one)."""
        return [p.pid for p in (getattr(self.pool, "_processes", None) or {}).values() if p.is_alive()]


def _release_workers(w: "Workers | None") -> None:
    if w is not None:
        w.pool.shutdown(wait=False, cancel_futures=True)


@st.cache_resource(show_spinner=False, on_release=_release_workers)
def worker_pool(n: int) -> Workers | None:
    """A process pool for ppd_core runs (spawned, so no fork of the threaded server). Every worker imports
    ppd_core and runs a tiny scenario at once, so the first slider move does not wait for that."""
    if n <= 0:
        return None
    pool = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"))
    warm = tuple(pool.submit(ppd_core.run, Scenario(conversations=2, workload="small_tiny")) for _ in range(n))
    return Workers(pool, warm)


def _replace(broken: Workers) -> None:
    """Drop a broken pool from the cache once (concurrent callers that saw the same pool break do nothing)."""
    with broken.lock:
        if broken.broken:
            return
        broken.broken = True
    if worker_pool(worker_count()) is broken:
        worker_pool.clear()          # on_release shuts the broken pool down; the next call spawns a fresh one


def start_workers() -> None:
    """Start (once per server) and warm the worker pool, and let this session use it. Pages call this after
    their results are on screen, so spawning the workers never delays a first page load."""
    worker_pool(worker_count())
    st.session_state["_workers"] = True


def _ready_workers() -> Workers | None:
    if not st.session_state.get("_workers"):
        return None
    workers = worker_pool(worker_count())
    return workers if workers is not None and workers.ready and not workers.broken else None


def call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in the warm pool (in this process until this session's pool is warm). A dead
    worker: the pool is replaced and the call retried once there; a second loss raises ``WorkerLost``."""
    for attempt in (1, 2):
        workers = _ready_workers() if attempt == 1 else worker_pool(worker_count())
        if workers is None:
            return fn(*args, **kwargs)
        try:
            return workers.pool.submit(fn, *args, **kwargs).result()
        except BrokenProcessPool:
            _replace(workers)
    raise WorkerLost("a simulation worker process stopped (killed or out of memory) while running this "
                     "scenario, twice; the worker pool was restarted — change a control or reload to try again")


@st.cache_data(max_entries=256, show_spinner=False)
def simulate(sc: Scenario, record_spans: bool = False) -> dict:
    """One ppd_core run, reduced to picklable parts (summary dict, records/nodes/spans DataFrames); the same
    pure function of ``sc`` wherever it runs (see ``call``)."""
    res = call(ppd_core.run, sc, record_spans=record_spans)
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


@st.cache_data(max_entries=4096, show_spinner=False)
def point_stats(sc: Scenario) -> dict:
    """Sweep point statistics of one cached run (``analysis.sweep_point``)."""
    return sweep_point(simulate(sc))


@st.cache_data(max_entries=64, show_spinner=False)
def interference_curve(sc: Scenario, batches: tuple[int, ...], n_prefills: int, prefill_tokens: int,
                       cached_tokens: int) -> pd.DataFrame:
    """Decode TPOT vs batch with no / a full / an append prefill in the batch (ppd_core.model)."""
    rows = []
    for b in batches:
        for kind in ("none", "full", "append"):
            rows.append({"batch": b, "kind": kind, "tpot_ms": ppd_core.model.interference_tpot_ms(
                sc, batch=b, kind=kind, n_prefills=n_prefills, prefill_tokens=prefill_tokens,
                cached_tokens=cached_tokens)})
    return pd.DataFrame(rows)


def run_or_stop(fn: Callable[[], Any], what: str = "Simulation refused this scenario") -> Any:
    """Call ``fn``; a user-facing ppd_core error or a lost worker becomes one st.error line and stops the
    page (this session only: nothing is cached and the pool is already replaced)."""
    try:
        return fn()
    except PPDError as exc:
        st.error(f"{what}: {exc}")
    except WorkerLost as exc:
        st.error(f"Simulation interrupted: {exc}.")
    st.stop()


class Progress:
    """The one progress adapter: a ``progress(done, total)`` callback (the ppd_core convention) drawing a
    Streamlit progress bar, redrawn at most ``MAX_PROGRESS_UPDATES`` times; ``close()`` removes it. Created
    inside a cached function it is replayed on a cache hit (ending empty)."""

    def __init__(self, label: str):
        self.label = label
        self.bar = st.progress(0.0, text=f"{label}…")
        self.step = 0

    def __call__(self, done: int, total: int) -> None:
        total = max(total, 1)
        if done >= total or done * MAX_PROGRESS_UPDATES >= (self.step + 1) * total:
            self.step = done * MAX_PROGRESS_UPDATES // total
            self.bar.progress(min(done / total, 1.0), text=f"{self.label}… {done:,}/{total:,} runs")

    def close(self) -> None:
        self.bar.empty()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_points(points: Sequence[tuple[dict, Scenario]], label: str) -> pd.DataFrame:
    """``point_stats`` for every (labels, scenario) with a progress bar; cached points are instant."""
    with Progress(label) as progress:
        stats = parallel_map(point_stats, [s for _, s in points], on_done=lambda k: progress(k, len(points)))
    return pd.DataFrame([{**labels, **st_} for (labels, _), st_ in zip(points, stats)])
