"""``python -m ppd_core sweep KEY=V1,V2 ...``: run a grid of scenarios, print a table or write CSV/Parquet."""
from __future__ import annotations

import argparse
import sys

from ..analysis.grid import MAX_GRID, PAPER_BASE, PAPER_QPS, expand_grid, paper_grid_axes, parse_sweep_args
from ..analysis.output import format_table, out_format, write_frame
from ..analysis.progress import TextProgress
from ..analysis.sweep import run_grid
from ..config.scenario import SPEC
from .common import add_executor_args, add_trace_args, describe_rates, load_cli_trace

NAME = "sweep"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep", help="run a grid of scenarios (local cores or Dask), write CSV/Parquet",
        description="KEY=V fixes a scenario key, KEY=V1,V2,... sweeps it; the grid is every combination. "
                    "The SLO keys are themselves comma lists, so their alternatives are separated by ';' "
                    "(quote the argument): 'slo_ttft_ms=100,200;500' sweeps (100,200) and (500). "
                    f"At most {MAX_GRID:,} scenarios. Results are cached on disk by scenario and code version.",
        epilog="examples:\n  python -m ppd_core sweep layout=2P_2D,2P_2pD qps=1,2,4 workload=small_tiny\n"
               "  python -m ppd_core sweep --paper-grid --out paper.parquet\n"
               "  python -m ppd_core sweep --paper-grid --executor dask --scheduler tcp://HOST:8786",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pairs", nargs="*", help="KEY=V or KEY=V1,V2,... ('slo_ttft_ms=100,200;500'), or a shared URL")
    p.add_argument("--paper-grid", action="store_true",
                   help="the paper's study: 17 layouts x 18 synthetic workloads x QPS "
                        f"{','.join(f'{q:g}' for q in PAPER_QPS)} (3,060 runs) with "
                        + " ".join(f"{k}={v}" for k, v in PAPER_BASE.items()) + "; KEY=V pairs override")
    p.add_argument("--out", metavar="FILE", help="write all rows to FILE.csv or FILE.parquet")
    add_trace_args(p, "replay a trace file (sets workload=trace): a timestamped trace replays at its own rate, "
                      "or scaled to each qps=... given")
    add_executor_args(p)


def handle(args) -> int:
    if args.out:
        out_format(args.out)          # fail before running
    base, axes = parse_sweep_args(args.pairs)
    if args.paper_grid:
        paper = paper_grid_axes()
        base = {**{k: str(v) for k, v in PAPER_BASE.items()}, **base}
        axes = {**{k: v for k, v in paper.items() if k not in base}, **axes}
    trace = load_cli_trace(args, sys.stderr)
    if trace is not None:
        base["workload"] = "trace"
        axes.pop("workload", None)
        if "qps" not in base and "qps" not in axes:      # no qps given: the trace at its own rate
            from ..workloads.traces import describe_rate, replay_rate
            arrivals = replay_rate(trace, None, SPEC["qps"].default)
            base["qps"] = repr(arrivals["qps"])
            print(f"  {describe_rate(arrivals)}", file=sys.stderr)
    grid = expand_grid(base, axes)
    if trace is not None:
        describe_rates(trace, [sc.qps for sc in grid], sys.stderr)
    bar = TextProgress("sweep")
    try:
        df = run_grid(grid, executor=args.executor, scheduler=args.scheduler, workers=args.workers,
                      cache=not args.no_cache, progress=bar, trace=trace)
    finally:
        bar.close()
    a = df.attrs
    print(f"{len(df):,} scenarios: {a['simulated']:,} simulated, {a['cache_hits']:,} from the cache, "
          f"{a['wall_s']:.1f} s", file=sys.stderr)
    if args.out:
        write_frame(df, args.out)
        print(f"wrote {len(df):,} rows x {len(df.columns)} columns to {args.out}", file=sys.stderr)
    else:
        print(format_table(df, list(axes) or ["layout"]))
    return 0
