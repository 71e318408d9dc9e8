"""Benchmark (not a test): the ShareGPT bench run (500 conversations, QPS 4) on 2P_2D / pd and 2P_2pD / dynamic,
in one or more checkouts, interleaved run by run, so a before/after comparison on a shared machine sees the
same load on both sides.

    .venv/bin/python scripts/bench_engine.py                          # this checkout
    .venv/bin/python scripts/bench_engine.py --tree /tmp/old --tree . # before / after, interleaved

Each repetition is a fresh process per checkout (``ppd_core.run`` after a warm-up run), timing the whole run
(workload, engine, summary) and the engine alone (``summary["sim"]["wall_s"]``) in wall-clock and CPU time.
Prints one table row per checkout and layout: medians (and the minimum of the whole run's CPU time), events
per request, the child's peak RSS and the 1-minute load average (``os.getloadavg``) before and after. On a
loaded machine wall time includes waiting for a core; CPU time is the work itself.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import bench_trees

CASES = (("2P_2D", "pd"), ("2P_2pD", "dynamic"))
CHILD = """
import json, resource, sys
from time import perf_counter, process_time
import ppd_core
out = {}
for layout, policy in %r:
    sc = ppd_core.Scenario(layout=layout, policy=policy)
    ppd_core.run(sc)                                    # warm-up: catalogs, first calls
    c0, t0 = process_time(), perf_counter()
    res = ppd_core.run(sc)
    wall, cpu = perf_counter() - t0, process_time() - c0
    s = res.summary
    out[layout] = {"wall_s": wall, "cpu_s": cpu, "engine_s": s["sim"]["wall_s"], "events": s["sim"]["events"],
                   "requests": s["groups"]["all"]["count"]}
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
""" % (CASES,)


def _child(python: str, tree: Path) -> dict:
    out = subprocess.run([python, "-c", CHILD], cwd=tree, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    a, trees = bench_trees.parse(__doc__.split("\n\n")[0], 5, 100, "fresh processes per checkout", argv)
    load0 = os.getloadavg()[0]
    runs: dict[Path, list[dict]] = {t: [] for t in trees}
    for _ in range(a.repeat):
        for t in trees:
            runs[t].append(_child(a.python, t))
    load1 = os.getloadavg()[0]
    rows = []
    for t in trees:
        for layout, policy in CASES:
            rs = [r[layout] for r in runs[t]]
            med = {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "engine_s")}
            rows.append({"tree": str(t), "layout": layout, "policy": policy, "events": rs[0]["events"],
                         "events_per_request": round(rs[0]["events"] / max(rs[0]["requests"], 1), 2),
                         "run_wall_s": round(med["wall_s"], 4), "run_cpu_s": round(med["cpu_s"], 4),
                         "run_cpu_s_min": round(min(r["cpu_s"] for r in rs), 4),
                         "engine_wall_s": round(med["engine_s"], 4),
                         "peak_rss_mb": round(max(r["rss_mb"] for r in runs[t]), 1)})
    out = {"rows": rows, "repeat": a.repeat, "load_1min": [round(load0, 2), round(load1, 2)],
           "cores": os.cpu_count()}
    if a.json:
        print(json.dumps(out))
        return 0
    print(f"ShareGPT bench run, {a.repeat} fresh processes per checkout, interleaved; {os.cpu_count()} cores")
    print(f"{'checkout':<28} {'layout':<7} {'events':>7} {'ev/req':>6} {'run wall s':>10} {'run cpu s':>9} "
          f"{'cpu min':>8} {'engine s':>8} {'peak MB':>7} {'load':>11}")
    for r in rows:
        print(f"{r['tree'][-28:]:<28} {r['layout']:<7} {r['events']:>7,} {r['events_per_request']:>6.2f} "
              f"{r['run_wall_s']:>10.3f} {r['run_cpu_s']:>9.3f} {r['run_cpu_s_min']:>8.3f} {r['engine_wall_s']:>8.3f} "
              f"{r['peak_rss_mb']:>7.0f} {load0:>5.2f}-{load1:<5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
