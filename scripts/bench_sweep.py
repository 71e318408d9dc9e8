"""Benchmark (not a test): the paper's 3,060-run grid through the sweep engine, uncached then cached.

    .venv/bin/python scripts/bench_sweep.py [--workers N] [--executor local|dask] [--scheduler ADDRESS]

Uses a fresh temporary cache directory (removed afterwards), so the first pass simulates every run and the
second pass must be all cache hits. Prints wall time, runs/s, CPU time and the load average (other
processes on the machine slow the wall time; CPU time shows the work itself). Target: <= 300 s uncached on a
2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
from pathlib import Path
from time import perf_counter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ppd_core.analysis.grid import PAPER_BASE, expand_grid, paper_grid_axes  # noqa: E402
from ppd_core.analysis.pool import local_workers  # noqa: E402
from ppd_core.analysis.progress import TextProgress  # noqa: E402
from ppd_core.analysis.sweep import run_grid  # noqa: E402

TARGET_S = 300.0


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--executor", choices=("local", "dask"), default="local")
    ap.add_argument("--scheduler", default=None)
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = ap.parse_args(argv)

    t0 = perf_counter()
    grid = expand_grid(dict(PAPER_BASE), paper_grid_axes())
    expand_s = perf_counter() - t0
    cache = Path(tempfile.mkdtemp(prefix="ppd-bench-sweep-"))
    try:
        load0 = os.getloadavg()[0]
        cpu0, t0 = _cpu_s(), perf_counter()
        cold = run_grid(grid, executor=args.executor, scheduler=args.scheduler, workers=args.workers,
                        cache_dir=cache, progress=TextProgress("uncached"))
        cold_s, cold_cpu = perf_counter() - t0, _cpu_s() - cpu0
        load1 = os.getloadavg()[0]
        t0 = perf_counter()
        warm = run_grid(grid, executor=args.executor, scheduler=args.scheduler, workers=args.workers,
                        cache_dir=cache)
        warm_s = perf_counter() - t0
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    same = cold.drop(columns="sim.wall_s").equals(warm.drop(columns="sim.wall_s"))
    figures = {
        "runs": len(grid), "workers": args.workers or local_workers(), "executor": args.executor,
        "expand_grid_s": round(expand_s, 3), "uncached_wall_s": round(cold_s, 2),
        "runs_per_s": round(len(grid) / cold_s, 1), "uncached_cpu_s": round(cold_cpu, 1),
        "sum_sim_wall_s": round(float(cold["sim.wall_s"].sum()), 1),
        "cached_wall_s": round(warm_s, 3), "cached_hits": warm.attrs["cache_hits"],
        "cached_equal": bool(same), "load_avg_1min": [round(load0, 2), round(load1, 2)],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "target_s": TARGET_S, "meets_target": cold_s <= TARGET_S,
    }
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"paper grid: {figures['runs']:,} runs ({figures['executor']}, {figures['workers']} workers) "
          f"on {figures['machine']}")
    print(f"  expand + validate grid  {expand_s:8.2f} s")
    print(f"  uncached                {cold_s:8.1f} s wall  ({figures['runs_per_s']:,} runs/s; "
          f"{cold_cpu:.1f} s CPU; simulations alone {figures['sum_sim_wall_s']} s)")
    print(f"  cached re-run           {warm_s:8.3f} s wall  ({figures['cached_hits']:,} hits; "
          f"identical apart from sim.wall_s: {same})")
    print(f"  load average (1 min) before/after: {load0:.2f} / {load1:.2f}   target <= {TARGET_S:.0f} s: "
          f"{'met' if figures['meets_target'] else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
