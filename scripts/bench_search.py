"""Benchmarks (not tests) of the capacity searches of issue #13 part 4, each one command, each printing one
table row with the load average before and after (``os.getloadavg()``: figures from a loaded machine are
not the quiet-machine targets).

    .venv/bin/python scripts/bench_search.py goodput        # python -m ppd_core goodput (defaults), whole process
    .venv/bin/python scripts/bench_search.py goodput-warm   # the same search started from its previous answer
    .venv/bin/python scripts/bench_search.py explore        # goodput(Scenario()) through a warm long-lived pool
    .venv/bin/python scripts/bench_search.py advise         # python -m ppd_core advise --gpus 4 --rank-by goodput_per_gpu
    .venv/bin/python scripts/bench_search.py paper-grid     # python -m ppd_core paper --only table2 (3,060 runs)
    .venv/bin/python scripts/bench_search.py all            # every row above, one after another

Every run is uncached: the CLI ones get a fresh, empty ``PPD_CACHE_DIR`` (removed afterwards), the
in-process ones pass ``cache=False``. Targets (quiet 2-core machine): goodput of the three systems <= 3 s,
the advisor on 4 GPUs with goodput ranking <= 20 s, the paper grid <= 5 s.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from time import perf_counter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGETS = {"goodput": 3.0, "goodput-warm": 3.0, "explore": 3.0, "advise": 20.0, "paper-grid": 5.0}
CLI = {
    "goodput": ["goodput"],
    "advise": ["advise", "--gpus", "4", "--rank-by", "goodput_per_gpu"],
    "paper-grid": ["paper", "--only", "table2"],
}


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _cli(args: list[str]) -> tuple[float, str]:
    """Wall time of ``python -m ppd_core ARGS`` as a whole process, on an empty cache."""
    cache = tempfile.mkdtemp(prefix="ppd-bench-search-")
    env = {**os.environ, "PPD_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    try:
        t0 = perf_counter()
        out = subprocess.run([sys.executable, "-m", "ppd_core", *args], cwd=ROOT, env=env, capture_output=True,
                             text=True, check=True)
        wall = perf_counter() - t0
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    return wall, f"{len(lines)} lines of output"


def _in_process(name: str) -> tuple[float, str]:
    from ppd_core import Scenario
    from ppd_core.analysis.goodput import goodput
    from ppd_core.analysis.pool import WorkerPool
    sc = Scenario()
    if name == "goodput-warm":
        previous = goodput(sc, cache=False)
        t0 = perf_counter()
        res = goodput(sc, hint=previous, cache=False)
        wall = perf_counter() - t0
    else:                         # explore: the dashboard's path, a long-lived pool already started
        with WorkerPool() as pool:
            pool.map(abs, [0] * pool.workers)
            t0 = perf_counter()
            res = goodput(sc, cache=False, pool=pool)
            wall = perf_counter() - t0
    runs = {k: v["runs"] for k, v in res["systems"].items()}
    got = {k: round(v["goodput_qps"], 3) for k, v in res["systems"].items()}
    return wall, f"goodput {got} runs {runs}"


def bench(name: str) -> str:
    before = _load()
    wall, what = _cli(CLI[name]) if name in CLI else _in_process(name)
    return f"{name:<13} {wall:>8.2f} {TARGETS[name]:>8.1f}  {before:<17} {_load():<17} {what}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", choices=(*TARGETS, "all"))
    args = ap.parse_args(argv)
    print(f"{'bench':<13} {'wall s':>8} {'target':>8}  {'load before':<17} {'load after':<17} what", flush=True)
    for name in (TARGETS if args.which == "all" else (args.which,)):
        print(bench(name), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
