"""``python -m ppd_core run KEY=VALUE ...``: simulate one scenario."""
from __future__ import annotations

import json
import sys

from .common import add_trace_args, cli_trace

NAME = "run"


def add_parser(sub) -> None:
    r = sub.add_parser("run", help="simulate one scenario")
    r.add_argument("pairs", nargs="*", help="KEY=VALUE pairs or a whole shared URL")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.add_argument("--records", metavar="CSV", help="also write per-request records to this CSV file")
    add_trace_args(r, "replay a trace file (ShareGPT JSON, Mooncake JSONL, CSV); qps scales a timestamped "
                      "trace's own rate")


def _fmt_ms(x) -> str:
    return "-" if x is None else f"{x:,.1f}"


def format_summary(s: dict) -> str:
    sc = s["scenario"]
    lines = [f"scenario: layout={sc['layout']} policy={sc['policy']} gpu={sc['gpu']} model={sc['model']} "
             f"workload={sc['workload']} qps={sc['qps']:g} bandwidth={sc['bandwidth_gbps']:g} GB/s",
             "",
             f"{'group':<10} {'count':>6}  {'TTFT mean':>10} {'p50':>8} {'p90':>8} {'p99':>9}  "
             f"{'TPOT mean':>9} {'p90':>6}  {'E2E mean':>9}   (ms)"]
    for g in ("turn1", "turn2plus", "all"):
        d = s["groups"][g]
        t, p, e = d["ttft_ms"], d["tpot_ms"], d["e2e_ms"]
        lines.append(f"{g:<10} {d['count']:>6}  {_fmt_ms(t['mean']):>10} {_fmt_ms(t['p50']):>8} "
                     f"{_fmt_ms(t['p90']):>8} {_fmt_ms(t['p99']):>9}  {_fmt_ms(p['mean']):>9} "
                     f"{_fmt_ms(p['p90']):>6}  {_fmt_ms(e['mean']):>9}")
    slo = "  ".join(f"{k}={v:.1%}" for k, v in s["slo_attainment"].items())
    lines += ["",
              f"SLO attainment (Turn 2+): {slo}",
              f"success rate {s['success_rate']:.1%}   local share (Turn 2+ without P) {s['local_share']:.1%}",
              f"throughput {s['throughput']['requests_per_s']:.2f} req/s, {s['throughput']['tokens_per_s']:,.0f} "
              f"tok/s   KV moved {s['kv']['bytes'] / 1e9:,.2f} GB in {s['kv']['transfers']} transfers "
              f"(link utilization {s['kv']['link_utilization']:.1%})",
              f"simulated {s['sim']['simulated_s']:,.1f} s with {s['sim']['events']:,} events in "
              f"{s['sim']['wall_s']:.3f} s wall"]
    lines += [f"warning: {w}" for w in s.get("warnings", ())]
    return "\n".join(lines)


def handle(args) -> int:
    from ..analysis.runs import run
    from ..config.scenario import parse
    sc = parse(args.pairs)
    trace = cli_trace(args, [sc.qps], sys.stderr)
    if trace is not None:
        from ..workloads.traces import assign_arrivals
        trace = assign_arrivals(trace, sc.qps, sc.seed)
        if sc.workload != "trace":
            sc = sc.with_(workload="trace")
    res = run(sc, trace)
    if args.json:
        print(json.dumps(res.summary))
    else:
        print(format_summary(res.summary))
    if args.records:
        res.records.to_csv(args.records, index=False)
    return 0


