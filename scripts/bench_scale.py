"""Benchmark (not a test): the simulator at scale (issue #13 item 5).

    .venv/bin/python scripts/bench_scale.py                 # all three tables
    .venv/bin/python scripts/bench_scale.py --only requests # one of: requests, cluster, dask
    .venv/bin/python scripts/bench_scale.py --quick         # smaller points (a smoke run, ~1 min)

* **requests**: one 4-GPU cluster (2P_2D, pd, ShareGPT lengths, 10 turns per conversation) with the work
  growing up to the cap of 200,000 requests (20,000 conversations x 10 turns), the arrival rate fixed, so
  the load stays the same and only the length of the run grows.
* **cluster**: the cluster grows from 2 to 64 GPUs (nP_nD) at proportional load: qps = GPUs (the bench's
  4 conv/s on 4 GPUs) and 125 conversations per GPU (the same 125 s of arrivals), ShareGPT.
* **dask**: the same sweep (2 layouts x 4 QPS, 2,000 ShareGPT conversations each, uncached) on the local
  ``WorkerPool`` with 2 workers and on a Dask ``LocalCluster`` with 2 worker processes, side by side.

Every point of the first two tables runs in a fresh process, so its peak RSS (``ru_maxrss``) is that run's
own. Each row prints the whole run (workload, engine, summary) in wall and CPU time, the engine alone (wall),
the time per event (engine wall; and the whole run's CPU, which waiting for a core does not inflate), events
per request, peak memory and the 1-minute load average at the end of the point (``os.getloadavg``): figures
from a loaded machine are not quiet-machine figures. A flat CPU time per event ('x first': relative to the
first row) and a memory that grows no faster than the requests mean the engine scales linearly.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from time import perf_counter, process_time

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MEMORY_TARGET_MB = 1024.0


def requests_points(quick: bool) -> list[dict]:
    convs = (200, 500, 1000, 2000) if quick else (500, 2000, 5000, 10_000, 20_000)
    # ShareGPT on 2P_2D carries ~17.8 requests/s at qps 4 (4.44 turns); 10 turns at qps 1.8: ~18 requests/s
    return [dict(layout="2P_2D", policy="pd", workload="sharegpt", turns=10, qps=1.8, conversations=c)
            for c in convs]


def cluster_points(quick: bool) -> list[dict]:
    ns = (1, 2, 4, 8) if quick else (1, 2, 4, 8, 16, 32)
    return [dict(layout=f"{n}P_{n}D", policy="pd", workload="sharegpt", qps=2.0 * n, conversations=250 * n)
            for n in ns]


def dask_grid(quick: bool) -> list[dict]:
    convs = 300 if quick else 2000
    return [dict(layout=lay, policy=pol, workload="sharegpt", qps=q, conversations=convs)
            for lay, pol in (("2P_2D", "pd"), ("2P_2pD", "dynamic")) for q in (2.0, 4.0, 6.0, 8.0)]


def one_point(kw: dict) -> dict:
    """Run one scenario in this process and measure it (called in a fresh child by ``measure``)."""
    from ppd_core import Scenario, run
    sc = Scenario(**kw)
    c0, t0 = process_time(), perf_counter()
    res = run(sc)
    wall, cpu = perf_counter() - t0, process_time() - c0
    s = res.summary
    events, requests = s["sim"]["events"], s["groups"]["all"]["count"]
    return {"scenario": kw, "requests": requests, "events": events, "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3), "engine_s": round(s["sim"]["wall_s"], 3),
            "us_per_event": round(1e6 * s["sim"]["wall_s"] / max(events, 1), 2),
            "cpu_us_per_event": round(1e6 * cpu / max(events, 1), 2),   # the whole run's CPU: load-proof
            "events_per_request": round(events / max(requests, 1), 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "success": s["success_rate"], "saturated": s.get("saturation", {}).get("saturated"),
            "load_1min": round(os.getloadavg()[0], 2)}


def measure(kw: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--point", json.dumps(kw)], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _gpus(layout: str) -> int:
    from ppd_core.config.layout import parse_layout
    return len(parse_layout(layout).roles())


HEAD = (f"{'layout':<9} {'GPUs':>4} {'qps':>5} {'conv':>6} {'requests':>8} {'events':>9} {'ev/req':>6} "
        f"{'run s':>7} {'cpu s':>7} {'engine s':>8} {'us/event':>8} {'cpu us/ev':>9} {'x first':>7} {'peak MB':>7} "
        f"{'sat':>4} {'load':>5}")


def _row(r: dict, first: dict) -> str:
    sc = r["scenario"]
    return (f"{sc['layout']:<9} {_gpus(sc['layout']):>4} {sc['qps']:>5g} {sc['conversations']:>6} "
            f"{r['requests']:>8,} {r['events']:>9,} {r['events_per_request']:>6.2f} {r['wall_s']:>7.2f} "
            f"{r['cpu_s']:>7.2f} {r['engine_s']:>8.2f} {r['us_per_event']:>8.1f} {r['cpu_us_per_event']:>9.1f} "
            f"{r['cpu_us_per_event'] / first['cpu_us_per_event']:>7.2f} "
            f"{r['peak_rss_mb']:>7.0f} {'yes' if r['saturated'] else 'no':>4} {r['load_1min']:>5.2f}")


def series(title: str, points: list[dict], as_json: bool) -> list[dict]:
    rows = []
    if not as_json:
        print(title)
        print(HEAD, flush=True)
    for kw in points:
        r = measure(kw)
        rows.append(r)
        if not as_json:
            print(_row(r, rows[0]), flush=True)
    if not as_json:
        last = rows[-1]
        print(f"  CPU time per event at the largest point: {last['cpu_us_per_event'] / rows[0]['cpu_us_per_event']:.2f}x "
              f"the smallest ('x first'); peak {last['peak_rss_mb']:.0f} MB (target <= {MEMORY_TARGET_MB:.0f} MB: "
              f"{'met' if last['peak_rss_mb'] <= MEMORY_TARGET_MB else 'MISSED'})\n", flush=True)
    return rows


def dask_vs_local(quick: bool, as_json: bool) -> list[dict]:
    import tempfile
    from ppd_core import Scenario
    from ppd_core.analysis.sweep import run_grid
    grid = [Scenario(**kw) for kw in dask_grid(quick)]
    rows, frames = [], []
    with tempfile.TemporaryDirectory(prefix="ppd-bench-scale-") as tmp:
        for executor in ("local", "dask"):
            t0 = perf_counter()
            df = run_grid(grid, executor=executor, workers=2, cache=False, cache_dir=tmp)
            wall = perf_counter() - t0
            frames.append(df.drop(columns="sim.wall_s"))
            requests = int(df["all.count"].sum()) if "all.count" in df else None
            rows.append({"executor": executor, "workers": 2, "runs": len(grid), "requests": requests,
                         "wall_s": round(wall, 2), "runs_per_s": round(len(grid) / wall, 2),
                         "sum_engine_s": round(float(df["sim.wall_s"].sum()), 2),
                         "load_1min": round(os.getloadavg()[0], 2)})
    same = frames[0].equals(frames[1])
    for r in rows:
        r["same_results"] = same
    if not as_json:
        print(f"the same sweep ({len(grid)} runs: 2P_2D/pd and 2P_2pD/dynamic x qps 2,4,6,8, "
              f"{grid[0].conversations:,} ShareGPT conversations each, uncached) on 2 workers")
        print(f"{'executor':<9} {'runs':>5} {'requests':>9} {'wall s':>7} {'runs/s':>7} {'engine s (sum)':>14} "
              f"{'load':>5}")
        for r in rows:
            req = "-" if r["requests"] is None else f"{r['requests']:,}"
            print(f"{r['executor']:<9} {r['runs']:>5} {req:>9} {r['wall_s']:>7.2f} {r['runs_per_s']:>7.2f} "
                  f"{r['sum_engine_s']:>14.2f} {r['load_1min']:>5.2f}")
        print(f"  identical results on both executors (apart from sim.wall_s): {same}\n")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("requests", "cluster", "dask"), action="append",
                    help="run only this table (repeatable; default: all three)")
    ap.add_argument("--quick", action="store_true", help="smaller points: a smoke run")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    ap.add_argument("--point", help=argparse.SUPPRESS)   # internal: measure one scenario in this process
    a = ap.parse_args(argv)
    if a.point:
        print(json.dumps(one_point(json.loads(a.point))))
        return 0
    only = a.only or ["requests", "cluster", "dask"]
    out: dict = {"cores": os.cpu_count(), "load_1min_start": round(os.getloadavg()[0], 2)}
    if not a.json:
        print(f"{os.cpu_count()} cores, load average (1 min) at the start {out['load_1min_start']:.2f}\n")
    if "requests" in only:
        out["requests"] = series("work grows to the request cap on one 4-GPU cluster (2P_2D, pd, ShareGPT "
                                 "lengths, 10 turns, qps 1.8)", requests_points(a.quick), a.json)
    if "cluster" in only:
        out["cluster"] = series("the cluster grows to 64 GPUs at proportional load (nP_nD, pd, ShareGPT, "
                                "qps = GPUs, 125 conversations per GPU)", cluster_points(a.quick), a.json)
    if "dask" in only:
        out["dask"] = dask_vs_local(a.quick, a.json)
    if a.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
