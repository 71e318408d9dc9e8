"""Building the paper's two-phase decision engine (policy ``dynamic-table``) for a cluster.

Offline (section 5, Alg.1): for each cell - context class (small <= 512, large <= 4096 tokens; huge reuses
large) x the nine Turn-2 input/output classes x QPS bin - run the cell's synthetic benchmark twice, at x=0
(every Turn 2+ through P) and x=1 (every Turn 2+ local), and store the sign of Eq.1
S = w_ttft * (TTFT_x0 - TTFT_x1)/TTFT_x0 - w_tpot * (TPOT_x1 - TPOT_x0)/TPOT_x0 from the Turn-2 means.
Here the runs are the simulator's own (the paper measured them), through ``run_grid`` and so its disk cache
(unless ``params`` override the calibrated latency model: then the cache is not used).
Online (``ppd_core.sim.decision_table``): a Turn 2+ request is mapped to the nearest cell (QPS ties go up, as
in the reference code) and the stored decision returned. A cell whose x=0 run lost every request defaults to
local (the code's "PD failure fallback"). The reference code's 512-token short-input bypass came after the
paper; it is not applied.

Nothing is cached in memory: ``table_for`` rebuilds from the (disk-cached) runs on every call.
"""
from __future__ import annotations

from typing import Sequence

from ..config.layout import parse_layout, pd_layout
from ..config.scenario import Scenario
from ..config.workload_catalog import CONTEXT_CLASSES, T2_TYPES
from ..model.params import PerfParams
from ..sim.decision_table import QPS_BINS, DecisionTable
from .executors import run_grid
from .grid import table_key
from .progress import Progress


def cell_scenarios(sc: Scenario) -> list[tuple[tuple, Scenario, Scenario]]:
    """(cell, x=0 run, x=1 run) for every cell, in the benchmark setting of the paper's sweep."""
    base = pd_layout(parse_layout(sc.layout)).text
    common = dict(layout=base, gpu=sc.gpu, model=sc.model, tp=sc.tp, bandwidth_gbps=sc.bandwidth_gbps,
                  link_latency_us=sc.link_latency_us, link_sharing=sc.link_sharing,
                  max_batched_tokens=sc.max_batched_tokens, gpu_mem_util=sc.gpu_mem_util,
                  arrival_window_s=10.0, client="benchmark", client_concurrency=50, timeout_s=120.0, seed=0)
    out = []
    for ctx in CONTEXT_CLASSES:
        for t2 in T2_TYPES:
            for q in QPS_BINS:
                wl = f"{ctx}_{t2}"
                out.append(((ctx, t2, q), Scenario(workload=wl, qps=q, policy="pd", **common),
                            Scenario(workload=wl, qps=q, policy="ppd", **common)))
    return out


def _score(w_ttft: float, w_tpot: float, x0: dict, x1: dict) -> tuple[bool, float]:
    t0, t1 = x0.get("turn2plus.ttft_ms.mean"), x1.get("turn2plus.ttft_ms.mean")
    p0, p1 = x0.get("turn2plus.tpot_ms.mean"), x1.get("turn2plus.tpot_ms.mean")
    if not t0 or t0 != t0 or not p0 or p0 != p0:
        return True, float("inf")       # x=0 lost everything: fall back to local
    if not t1 or t1 != t1 or not p1 or p1 != p1:
        return False, float("-inf")
    s = w_ttft * (t0 - t1) / t0 - w_tpot * (p1 - p0) / p0
    return s > 0, s


def build_table(sc: Scenario, progress: Progress | None = None, params: PerfParams | None = None,
                **grid_options) -> DecisionTable:
    """Run every cell of ``sc``'s cluster at x=0 and x=1 and keep the sign of Eq.1 per cell.
    ``grid_options`` go to ``run_grid`` (executor, workers, cache_dir, cache)."""
    cells = cell_scenarios(sc)
    runs = [c[1] for c in cells] + [c[2] for c in cells]
    df = run_grid(runs, progress=progress, params=params, **grid_options)
    n = len(cells)
    recs = df.to_dict("records")
    entries = []
    for i, (cell, _, _) in enumerate(cells):
        use, s = _score(sc.w_ttft, sc.w_tpot, recs[i], recs[n + i])
        entries.append((cell, use, round(s, 6) if s == s and abs(s) != float("inf") else s))
    return DecisionTable(tuple(entries), sc.w_ttft, sc.w_tpot)


def table_for(sc: Scenario, params: PerfParams | None = None, **grid_options) -> DecisionTable:
    """The decision table of this scenario's cluster (only ``table_key(sc)`` matters), built with ``params``
    (default: the calibrated latency model, whose runs come from the disk cache once built)."""
    return build_table(table_key(sc), params=params, **grid_options)


def tables_for(scenarios: Sequence[Scenario], params: PerfParams | None = None,
               **grid_options) -> dict[Scenario, DecisionTable]:
    """The decision tables the ``dynamic-table`` scenarios among ``scenarios`` need, by ``table_key``."""
    keys = dict.fromkeys(table_key(sc) for sc in scenarios if sc.policy == "dynamic-table")
    return {k: build_table(k, params=params, **grid_options) for k in keys}
