"""Parameter sweeps: a grid of scenarios -> one tidy row per scenario, on local cores or a Dask cluster.

    >>> from ppd_core.analysis.grid import expand_grid
    >>> from ppd_core.analysis.sweep import run_grid
    >>> grid = expand_grid({"workload": "small_tiny", "conversations": 20}, {"layout": ["2P_2D", "2P_2pD"],
    ...                                                                     "qps": [1, 4]})
    >>> df = run_grid(grid)            # 4 rows: every scenario key + the flattened ``run --json`` summary

Columns: every scenario key (SLO threshold lists as text such as ``100,200,500``), ``query`` (the
scenario's URL query, defaults omitted: the Explore link is ``/?`` + query) and the summary figures of
``run --json`` flattened with dots: ``turn2plus.ttft_ms.mean``, ``slo_attainment.ttft_100ms``,
``success_rate``, ``throughput.tokens_per_s``, ``kv.bytes``, ``local_share``, ``sim.events`` ...
``sim.wall_s`` is the wall time of the simulation that produced the row (kept in the cache, so a cached
row repeats it); it is the one column that is not a function of the scenario.

The grid syntax is in ``grid``, the disk cache in ``cache``, the executors in ``executors``; this module adds
the decision tables that ``policy=dynamic-table`` scenarios need (``table``).
"""
from __future__ import annotations

import os
from typing import Sequence

from ..config.scenario import Scenario
from ..model.params import PerfParams
from . import executors
from .executors import Check
from .pool import WorkerPool
from .progress import Progress
from .table import tables_for


def run_grid(scenarios: Sequence[Scenario], *, executor: str = "local", scheduler: str | None = None,
             workers: int | None = None, cache_dir: str | os.PathLike | None = None, cache: bool = True,
             progress: Progress | None = None, trace=None, check: Check | None = None,
             params: PerfParams | None = None, pool: WorkerPool | None = None, parent_runs: bool | None = None):
    """``executors.run_grid`` with the decision tables of any ``dynamic-table`` scenario built first (from
    the same cache). See ``executors.run_grid`` for the arguments and the frame's ``attrs``."""
    def tables(todo):
        return tables_for(todo, params, executor=executor, scheduler=scheduler, workers=workers,
                          cache_dir=cache_dir, cache=cache, pool=pool)
    return executors.run_grid(scenarios, executor=executor, scheduler=scheduler, workers=workers,
                              cache_dir=cache_dir, cache=cache, progress=progress, trace=trace, check=check,
                              params=params, tables_for=tables, pool=pool, parent_runs=parent_runs)
