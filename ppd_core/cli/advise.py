"""``python -m ppd_core advise --gpus N ...``: rank layouts x policies over a QPS range and SLOs."""
from __future__ import annotations

import argparse
import math
import sys

from ..analysis.advisor import ADVISOR_KEYS, DEFAULT_QPS, RANK_BY, Advice, AdviseRequest, advise, base_from_pairs
from ..analysis.output import out_format, write_frame
from ..analysis.progress import TextProgress
from ..config.errors import ScenarioError
from ..config.scenario import render_value
from .common import add_executor_args, add_trace_args, cli_trace

NAME = "advise"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "advise", help="rank layouts x policies for N GPUs over a QPS range and SLOs",
        description="Enumerate every layout of N GPUs (counts of R/P/D/pD nodes) x Turn 2+ policy, run each "
                    "over the QPS range and rank by SLO attainment (score in [0,1], see ppd_core/analysis/advisor.py); "
                    "candidates with success rate < 95%% at any QPS rank last. KEY=VALUE pairs set the rest "
                    "of the scenario (gpu, model, tp, workload, conversations, ...).",
        epilog="example:\n  python -m ppd_core advise --gpus 4 --qps 1,2,4,8 --slo-ttft-ms 200 --slo-tpot-ms 30 "
               "workload=sharegpt conversations=200",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pairs", nargs="*", help="KEY=VALUE scenario pairs (not " + ", ".join(ADVISOR_KEYS) + ")")
    p.add_argument("--gpus", type=int, default=4, metavar="N", help="number of GPUs (default 4)")
    p.add_argument("--qps", default=",".join(render_value(q) for q in DEFAULT_QPS),
                   help="comma-separated QPS values (default 1,2,4,8)")
    p.add_argument("--slo-ttft-ms", type=float, default=200.0, help="Turn 2+ TTFT SLO threshold (default 200)")
    p.add_argument("--slo-tpot-ms", type=float, default=30.0, help="Turn 2+ TPOT SLO threshold (default 30)")
    p.add_argument("--weight-ttft", type=float, default=1.0, help="weight of TTFT attainment in the score")
    p.add_argument("--weight-tpot", type=float, default=1.0, help="weight of TPOT attainment in the score")
    p.add_argument("--rank-by", choices=RANK_BY, default="attainment",
                   help="attainment: the SLO score; goodput_per_gpu / goodput_per_usd: the highest QPS of the range "
                        "meeting both SLOs for --attain of Turn 2+, per GPU or per GPU-dollar-hour (ties: score)")
    p.add_argument("--attain", type=float, default=0.9, help="goodput's share of Turn 2+ within both SLOs (0.9)")
    p.add_argument("--gpu-types", default="", metavar="A,B",
                   help="compare GPU types: run every candidate on each, e.g. H100-SXM,A100-80GB")
    add_trace_args(p, "a trace file as the workload (ShareGPT JSON, Mooncake, CSV); each QPS scales a "
                      "timestamped trace's own rate")
    p.add_argument("--top", type=int, default=10, help="rows to print (default 10)")
    p.add_argument("--out", metavar="FILE", help="write every ranked candidate to FILE.csv or FILE.parquet")
    add_executor_args(p)


def format_advice(adv: Advice, top: int = 10) -> str:
    r = adv.request
    lines = [f"advice for {r.n_gpus} x {r.base.gpu} ({r.base.model}, tp={r.base.tp}), workload={r.base.workload}, "
             f"QPS {', '.join(render_value(q) for q in r.qps)}; SLO TTFT <= {render_value(r.slo_ttft_ms)} ms "
             f"(weight {render_value(r.weight_ttft)}), TPOT <= {render_value(r.slo_tpot_ms)} ms "
             f"(weight {render_value(r.weight_tpot)})"]
    lines += [f"  {n}" for n in adv.notes]
    lines.append("")
    lines.append(f"ranked by {r.rank_by}" + ("" if r.rank_by == "attainment" else
                 f" (goodput: highest QPS of the range with >= {r.attain:.0%} of Turn 2+ within both SLOs)"))
    lines.append(f"{'rank':>4}  {'layout':<14} {'gpu':<10} {'policy':<20} {'score':>6} {'TTFT SLO':>8} {'TPOT SLO':>8} "
                 f"{'gput/GPU':>8} {'gput/$h':>8} {'T2+ TTFT':>9} {'T2+ TPOT':>8} {'tok/s':>8} {'min ok':>7} pareto")
    for row in adv.ranked.head(top).itertuples():
        lines.append(f"{row.rank:>4}  {row.layout:<14} {row.gpu:<10} {row.label:<20} {row.score:>6.3f} {row.slo_ttft:>8.1%} "
                     f"{row.slo_tpot:>8.1%} {row.goodput_per_gpu:>8.3g} {row.goodput_per_usd_h:>8.3g} "
                     f"{_ms(row.ttft_ms):>9} {_ms(row.tpot_ms):>8} "
                     f"{row.throughput_tok_s:>8,.0f} {row.min_success_rate:>7.1%} {'*' if row.pareto else ''}")
    if len(adv.ranked) > top:
        lines.append(f"... {len(adv.ranked) - top} more candidates (--top N, or --out FILE for all)")
    lines.append("")
    lines.append("Pareto front (Turn 2+ mean TTFT vs TPOT, ms, averaged over the QPS range):")
    for row in adv.pareto.itertuples():
        lines.append(f"  {row.layout:<14} {row.label:<20} TTFT {_ms(row.ttft_ms):>8}  TPOT {_ms(row.tpot_ms):>7}"
                     f"  rank {row.rank}")
    best = adv.ranked.iloc[0]
    lines.append("")
    lines.append(f"best: {best['layout']} {best['label']}   explore: {best['explore']}")
    return "\n".join(lines)


def _ms(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:,.1f}"


def handle(args) -> int:
    if args.out:
        out_format(args.out)
    if not 1 <= args.top <= 10_000:
        raise ScenarioError("--top", f"{args.top} is out of range; must be an integer in [1, 10000]")
    base = base_from_pairs(args.pairs)
    if args.trace:
        base = base.with_(workload="trace")
    req = AdviseRequest(args.gpus, base, args.qps, args.slo_ttft_ms, args.slo_tpot_ms, args.weight_ttft,
                        args.weight_tpot, args.rank_by, args.attain, args.gpu_types)
    trace = cli_trace(args, req.qps, sys.stderr)
    bar = TextProgress("advise")
    try:
        adv = advise(req, trace=trace, executor=args.executor, scheduler=args.scheduler, workers=args.workers,
                     cache=not args.no_cache, progress=bar)
    finally:
        bar.close()
    print(format_advice(adv, args.top))
    if args.out:
        write_frame(adv.ranked, args.out)
        print(f"wrote {len(adv.ranked)} candidates to {args.out}", file=sys.stderr)
    return 0
