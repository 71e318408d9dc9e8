"""Speed benchmark: the paper's ShareGPT run (500 conversations, ~2,200 requests, QPS 4) on 2P_2D and
2P_2pD. The real 4xH100 run took 177 s (measured README: duration_sec of the QPS-4 point)."""
from __future__ import annotations

import json
import os
import platform
import resource
import statistics
from time import perf_counter

from ..analysis.runs import run
from ..config.errors import ScenarioError
from ..config.scenario import Scenario

REAL_SECONDS = 177.0


NAME = "bench"


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="speed benchmark (prints figures)")
    b.add_argument("--repeat", type=int, default=5, help="timed repetitions per layout (1-100)")
    b.add_argument("--json", action="store_true")


def handle(args) -> int:
    repeat = args.repeat
    if not 1 <= repeat <= 100:
        raise ScenarioError("--repeat", f"{repeat} is out of range; must be an integer in [1, 100]")
    rows = []
    for layout, policy in (("2P_2D", "pd"), ("2P_2pD", "dynamic")):
        sc = Scenario(layout=layout, policy=policy)
        run(sc)   # warm-up: imports, catalog loading
        walls, events = [], 0
        for _ in range(repeat):
            t0 = perf_counter()
            res = run(sc)
            walls.append(perf_counter() - t0)
            events = res.summary["sim"]["events"]
        wall = statistics.median(walls)
        rows.append({"layout": layout, "policy": policy, "requests": res.summary["groups"]["all"]["count"],
                     "events": events, "wall_s_median": round(wall, 4), "wall_s_min": round(min(walls), 4),
                     "events_per_s": round(events / wall), "x_real_time": round(REAL_SECONDS / wall),
                     "simulated_s": res.summary["sim"]["simulated_s"]})
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    if args.json:
        print(json.dumps({"rows": rows, "peak_rss_mb": round(rss_mb), "machine": machine}))
        return 0
    print(f"ShareGPT benchmark run (500 conversations, QPS 4; the real 4xH100 run took {REAL_SECONDS:.0f} s)")
    print(f"machine: {machine}")
    print(f"{'layout':<8} {'policy':<8} {'requests':>8} {'events':>8} {'wall s (median)':>16} {'events/s':>10} "
          f"{'x real time':>12}")
    for r in rows:
        print(f"{r['layout']:<8} {r['policy']:<8} {r['requests']:>8} {r['events']:>8} {r['wall_s_median']:>16.3f} "
              f"{r['events_per_s']:>10,} {r['x_real_time']:>12,}")
    print(f"peak RSS {rss_mb:.0f} MB (whole process; pandas is not imported)")
    return 0
