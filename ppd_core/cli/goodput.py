"""``python -m ppd_core goodput KEY=VALUE ... [--attain 0.9] [--json]``: the highest conversation rate at which
PPD, PD and Replica on the scenario's GPUs still meet both SLOs for ``attain`` of Turn 2+ requests."""
from __future__ import annotations

import json

from ..analysis.goodput import goodput
from ..config.scenario import parse
from .common import add_executor_args

NAME = "goodput"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "goodput", help="capacity: highest conv/s meeting both SLOs for --attain of Turn 2+ (PPD, PD, Replica)",
        description="Goodput (DistServe): the highest conversation rate at which at least --attain of the Turn 2+ "
                    "requests meet both the TTFT and the TPOT SLO (the first slo_ttft_ms / slo_tpot_ms, or "
                    "--slo-ttft-ms / --slo-tpot-ms), for the scenario (PPD) and its PD and Replica baselines, "
                    "per GPU and per GPU-dollar-hour (gpu_price_usd_h, 0 = catalog price). Bracketing search "
                    "through the sweep engine (cached, parallel).")
    p.add_argument("pairs", nargs="*", help="KEY=VALUE scenario keys (or a shared URL)")
    p.add_argument("--attain", type=float, default=0.9, help="share of Turn 2+ requests that must meet both SLOs")
    p.add_argument("--slo-ttft-ms", type=float, help="TTFT SLO (default: the first slo_ttft_ms)")
    p.add_argument("--slo-tpot-ms", type=float, help="TPOT SLO (default: the first slo_tpot_ms)")
    p.add_argument("--rel-tol", type=float, default=0.05, help="relative width of the final bracket")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_executor_args(p)


def handle(args) -> int:
    sc = parse(args.pairs)
    res = goodput(sc, args.attain, slo_ttft_ms=args.slo_ttft_ms, slo_tpot_ms=args.slo_tpot_ms,
                  rel_tol=args.rel_tol, executor=args.executor, scheduler=args.scheduler, workers=args.workers,
                  cache=not args.no_cache)
    if args.json:
        print(json.dumps({k: res[k] for k in ("scenario", "attain", "systems")}, indent=2))
        return 0
    s = res["scenario"]
    print(f"goodput at {res['attain']:.0%} of Turn 2+ within TTFT {s['slo_ttft_ms'][0]:g} ms and TPOT "
          f"{s['slo_tpot_ms'][0]:g} ms ({s['layout']} on {s['gpu']}, {s['workload']}):")
    print(f"{'system':<8} {'conv/s':>9} {'per GPU':>9} {'per $/h':>9}  limit   runs")
    for name, r in res["systems"].items():
        print(f"{name:<8} {r['goodput_qps']:>9.3g} {r['goodput_qps_per_gpu']:>9.3g} "
              f"{r['goodput_qps_per_usd_hour']:>9.3g}  {r['limit']:<6} {r['runs']:>4}")
    return 0
