"""Whole-process speed of the command line: ``python -m ppd_core run conversations=50 --json`` and a bare
``python -c "import ppd_core"``, each started as a fresh process, timed from spawn to exit.

    .venv/bin/python scripts/bench_cli.py                      # this checkout, 15 repetitions
    .venv/bin/python scripts/bench_cli.py --tree /tmp/base .   # two checkouts, interleaved run by run

With several ``--tree`` checkouts the runs alternate between them (A B A B ...), so a load change on a shared
machine hits both alike. Prints the median, min and p90 per command and checkout, and the 1-minute load
average before and after (``os.getloadavg``): figures from a loaded machine are not quiet-machine figures.
It also says whether the runs may write their bytecode cache: with ``PYTHONDONTWRITEBYTECODE`` set (or no
``__pycache__`` writable) every run compiles again each ppd_core module without an up-to-date ``.pyc``, ~30 ms
of CPU for ``run --json`` on the 2-core machine (issue #13). This is a benchmark that prints figures, not a test.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from time import perf_counter

import bench_trees

COMMANDS = {
    "import": ["-c", "import ppd_core"],
    "run --json": ["-m", "ppd_core", "run", "conversations=50", "--json"],
}


def _time(python: str, args: list[str], cwd: Path) -> float:
    t0 = perf_counter()
    subprocess.run([python, *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    a, trees = bench_trees.parse(__doc__.split("\n\n")[0], 15, 500, "timed runs per command and checkout", argv)
    load0 = os.getloadavg()[0]
    for t in trees:                                   # warm-up: bytecode and the OS file cache
        for args in COMMANDS.values():
            _time(a.python, args, t)
    times: dict[tuple[str, str], list[float]] = {(str(t), c): [] for t in trees for c in COMMANDS}
    for _ in range(a.repeat):
        for name, args in COMMANDS.items():
            for t in trees:
                times[(str(t), name)].append(_time(a.python, args, t))
    load1 = os.getloadavg()[0]
    bytecode = not os.environ.get("PYTHONDONTWRITEBYTECODE")      # what the child interpreters inherit
    rows = []
    for (tree, name), ts in times.items():
        q = sorted(ts)
        rows.append({"tree": tree, "command": name, "runs": len(ts), "median_s": round(statistics.median(ts), 3),
                     "min_s": round(q[0], 3), "p90_s": round(q[min(len(q) - 1, int(0.9 * len(q)))], 3)})
    out = {"rows": rows, "load_1min_before": round(load0, 2), "load_1min_after": round(load1, 2),
           "cores": os.cpu_count(), "bytecode_written": bytecode}
    if a.json:
        print(json.dumps(out))
        return 0
    print(f"load average (1 min) {load0:.2f} before, {load1:.2f} after; {os.cpu_count()} cores")
    print("bytecode cache: " + ("written and reused" if bytecode else
                                "not written (PYTHONDONTWRITEBYTECODE is set): every run compiles each "
                                "ppd_core module that has no up-to-date .pyc"))
    print(f"{'checkout':<40} {'command':<12} {'runs':>5} {'median s':>9} {'min s':>7} {'p90 s':>7}")
    for r in rows:
        print(f"{r['tree'][-40:]:<40} {r['command']:<12} {r['runs']:>5} {r['median_s']:>9.3f} {r['min_s']:>7.3f} "
              f"{r['p90_s']:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
