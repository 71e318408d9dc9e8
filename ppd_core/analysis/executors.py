"""Running a grid of scenarios: the disk cache, chunking, and the two executors (a local ``WorkerPool`` or a
Dask cluster). Rows are in input order whatever the executor, worker count or cache state.

This module never builds decision tables: a caller whose grid holds ``policy=dynamic-table`` scenarios
passes ``tables_for`` (``ppd_core.analysis.sweep.run_grid`` does), and the tables travel to the workers as
data with the job.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any, Callable, Mapping, Sequence

from ..config.errors import PPDError, ScenarioError
from ..config.scenario import Scenario
from ..metrics.result import simulate_scenario
from ..model.params import PerfParams
from ..sim.decision_table import DecisionTable
from ..workloads.traces import assign_arrivals, trace_digest
from . import cache as diskcache
from .hybrid import run_with_parent
from .grid import check_grid_size, flatten, query_strings, scenario_columns, table_key
from .pool import MAX_WORKERS, WorkerPool, local_workers
from .progress import Progress

CHUNK_MAX = 64                    # scenarios per task: amortises task overhead, keeps progress moving
CHUNKS_PER_WORKER = 8             # at least this many tasks per worker (load balance)
SERIAL_MAX_REQUESTS = 20_000      # below this many expected requests in all, skip the process pool
EXECUTORS = ("local", "dask")

Check = Callable[[Any], Any]
TablesFor = Callable[[Sequence[Scenario]], Mapping[Scenario, DecisionTable]]


class SweepError(PPDError):
    """A sweep could not run (a scenario failed in a worker, a worker runs different code, ...)."""


@dataclass(frozen=True)
class Job:
    """What every worker needs besides its scenarios (picklable): the trace, the per-run check, the
    latency-model parameters and the decision tables by ``table_key``."""
    trace: Any = None
    check: Check | None = None
    params: PerfParams | None = None
    tables: Mapping[Scenario, DecisionTable] = field(default_factory=dict)

    def __call__(self, items: list[tuple[int, Scenario]]) -> tuple[str, list[tuple[int, dict | None, str | None]]]:
        """Run scenarios, return (the worker's loaded code version, [(index, flat summary, error)])."""
        out = []
        for idx, sc in items:
            try:
                conv = assign_arrivals(self.trace, sc.qps, sc.seed) if sc.workload == "trace" else None
                table = self.tables.get(table_key(sc)) if sc.policy == "dynamic-table" else None
                res = simulate_scenario(sc, conv, params=self.params, table=table)
            except PPDError as exc:     # e.g. the model does not fit: reported with the scenario by the parent
                out.append((idx, None, str(exc)))
                continue
            if self.check is not None:
                self.check(res)
            out.append((idx, flatten(res.summary), None))
        return diskcache.loaded_code_version(), out


def _cost(sc: Scenario, trace) -> float:
    if sc.workload == "trace" and trace is not None:
        return float(sum(len(c.turns) for c in trace))
    return sc.expected_requests()


def _chunks(items: list[tuple[int, Scenario]], costs: dict[int, float], workers: int) -> list[list]:
    """Largest runs first (the tail finishes together), in chunks of similar cost."""
    order = sorted(items, key=lambda it: -costs[it[0]])
    size = max(1, min(CHUNK_MAX, math.ceil(len(order) / (workers * CHUNKS_PER_WORKER))))
    return [order[i:i + size] for i in range(0, len(order), size)]


def run_grid(scenarios: Sequence[Scenario], *, executor: str = "local", scheduler: str | None = None,
             workers: int | None = None, cache_dir: str | os.PathLike | None = None, cache: bool = True,
             progress: Progress | None = None, trace=None, check: Check | None = None,
             params: PerfParams | None = None, tables_for: TablesFor | None = None,
             pool: WorkerPool | None = None, parent_runs: bool | None = None):
    """Run every scenario (cache hits skip the simulation) and return a tidy ``pandas.DataFrame``.

    executor: ``local`` (a ``WorkerPool`` over ``workers`` processes, default all local cores) or ``dask``
    (``distributed.Client(scheduler)``, or a small ``LocalCluster`` when ``scheduler`` is None).
    progress: called as ``progress(done, total)`` (cache hits count as done at once).
    trace: the conversations of ``workload=trace`` scenarios (``traces.load_trace``); each scenario times
    them with ``traces.assign_arrivals(trace, qps, seed)``: timestamps scaled to ``qps`` conv/s, Poisson
    arrivals where the trace has none.
    check: called with every ``RunResult`` in the worker (tests pass their invariant checker); cache hits
    are not re-checked, so pass ``cache=False`` to check every run.
    params: latency-model parameters for every run (the disk cache is then not used).
    tables_for: called once with the scenarios left to simulate; returns their decision tables by
    ``table_key`` (needed for ``policy=dynamic-table``).
    pool: a long-lived ``WorkerPool`` to run the local executor's jobs in (a server passes its one pool;
    ``workers`` is then ignored and the pool is not shut down; it runs every chunk, even a grid of one);
    None: a pool for this call only.
    parent_runs: this process runs chunks too, beside the pool (``hybrid``; a pool of ``workers - 1``
    processes then). Default: yes for a pool of this call's own, no for a given pool (a server's thread
    must not simulate); a caller that owns a long-lived pool for a series of sweeps (a goodput search) says
    True.
    The frame's ``attrs`` hold ``cache_hits``, ``simulated``, ``code_version`` and ``wall_s``."""
    import pandas as pd
    t0 = perf_counter()
    scenarios = list(scenarios)
    check_grid_size(len(scenarios))
    for sc in scenarios:
        if not isinstance(sc, Scenario):
            raise ScenarioError("scenarios", f"expected Scenario objects, got {type(sc).__name__}")
    if executor not in EXECUTORS:
        raise ScenarioError("executor", f"{str(executor)[:40]!r} is not allowed; must be one of {', '.join(EXECUTORS)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or not 1 <= workers <= MAX_WORKERS):
        raise ScenarioError("workers", f"{workers!r} is out of range; must be an integer in [1, {MAX_WORKERS}]")
    uses_trace = any(sc.workload == "trace" for sc in scenarios)
    if uses_trace and trace is None:
        raise ScenarioError("workload", "'trace' needs an imported trace (CLI --trace FILE, or an upload)")
    trace_id = ""
    if uses_trace:
        trace = tuple(trace)
        trace_id = trace_digest(trace)
    version = diskcache.code_version()
    stale = diskcache.is_stale()
    if stale and cache:
        warnings.warn("ppd_core changed on disk since this process loaded it: the sweep cache is off for this "
                      "sweep (restart the process to use it)", RuntimeWarning, stacklevel=2)
    cache = cache and not stale and params is None     # the cache holds runs of the calibrated parameters
    folder = (Path(cache_dir) if cache_dir is not None else diskcache.default_cache_dir()) / version
    queries = query_strings(scenarios)
    keys = [diskcache.scenario_key(sc, trace_id, full) for sc, (full, _) in zip(scenarios, queries)]
    figures: list[dict | None] = [None] * len(scenarios)
    hits = 0
    if cache:
        found = diskcache.read(folder, set(keys))
        for i, k in enumerate(keys):
            if k in found:
                figures[i] = found[k]
                hits += 1
    total = len(scenarios)
    if progress is not None:
        progress(hits, total)
    todo: dict[int, Scenario] = {}
    first_of: dict[str, int] = {}
    copies: dict[int, list[int]] = {}          # the same scenario twice in the input: run it once
    for i, sc in enumerate(scenarios):
        if figures[i] is None:
            if keys[i] in first_of:
                copies.setdefault(first_of[keys[i]], []).append(i)
            else:
                first_of[keys[i]] = i
                todo[i] = sc
    fresh: list[tuple[str, str, dict]] = []
    done = [hits]

    def collect(results: list[tuple[int, dict | None, str | None]]) -> None:
        for idx, flat, error in results:
            if error is not None:
                raise SweepError(f"{error} (scenario {queries[idx][1] or 'with default keys'})")
            for j in (idx, *copies.get(idx, ())):
                figures[j] = flat
            fresh.append((keys[idx], queries[idx][0], flat))
            done[0] += 1 + len(copies.get(idx, ()))
        if progress is not None:
            progress(done[0], total)

    try:
        if todo:
            items = list(todo.items())
            costs = {i: _cost(sc, trace) for i, sc in items}
            tables = dict(tables_for(list(todo.values()))) if tables_for is not None else {}
            job = Job(trace, check, params, tables)
            if executor == "dask":
                _run_dask(items, costs, job, scheduler, workers, {version}, collect)
            else:
                if pool is not None:
                    if parent_runs and len(items) > 1:
                        run_with_parent(pool, _chunks(items, costs, pool.workers + 1), job, collect)
                    elif parent_runs:
                        collect(job(items)[1])
                    else:                  # a given pool gets every chunk, even a single one
                        _run_in(pool, items, costs, job, min(pool.workers, len(items)), collect)
                else:
                    n_workers = min(workers or local_workers(), len(items))
                    if n_workers <= 1 or sum(costs.values()) <= SERIAL_MAX_REQUESTS:
                        for chunk in _chunks(items, costs, 1):
                            collect(job(chunk)[1])
                    elif parent_runs is False:
                        with WorkerPool(n_workers) as own:
                            _run_in(own, items, costs, job, n_workers, collect)
                    else:
                        with WorkerPool(n_workers - 1) as own:
                            run_with_parent(own, _chunks(items, costs, n_workers), job, collect)
    finally:
        if cache and fresh:
            diskcache.write(folder, fresh)
    rows = [{**scenario_columns(sc, short), **flat} for sc, (_, short), flat in zip(scenarios, queries, figures)]
    df = pd.DataFrame(rows)
    df.attrs.update(cache_hits=hits, simulated=len(todo), code_version=version, stale_code=stale,
                    wall_s=round(perf_counter() - t0, 3))
    return df


def _run_in(pool: WorkerPool, items, costs, job: Job, n_workers, collect) -> None:
    for _, results in pool.as_completed(job, _chunks(items, costs, n_workers)):
        collect(results[0][1])


def _run_dask(items, costs, job: "Job", scheduler, workers, versions: set[str], collect) -> None:
    from distributed import Client, LocalCluster, as_completed
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler)
        except (OSError, TimeoutError, ValueError) as exc:
            raise SweepError(f"--scheduler {scheduler[:80]}: cannot reach a Dask scheduler ({exc})") from None
    else:
        cluster = LocalCluster(n_workers=workers or min(2, local_workers()), threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        n = max(1, len(client.scheduler_info().get("workers", {})) or (workers or 1))
        futures = [client.submit(job, chunk, pure=False) for chunk in _chunks(items, costs, n)]
        for fut in as_completed(futures):
            try:
                worker_version, results = fut.result()
            except (RuntimeError, ModuleNotFoundError) as exc:
                if isinstance(exc, ModuleNotFoundError) or "deserializ" in str(exc):
                    raise SweepError("the Dask scheduler or a worker cannot import ppd_core: start `dask scheduler` "
                                     "and `dask worker` with this repository on PYTHONPATH and the same "
                                     "requirements.txt") from exc
                raise
            if worker_version not in versions:
                raise SweepError(f"a Dask worker runs different ppd_core code (code version {worker_version}, "
                                 f"this client {min(versions)}); install the same commit on every worker")
            collect(results)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
