"""``python -m ppd_core run KEY=VALUE ...``: simulate one scenario."""
from __future__ import annotations

import json
import sys

from .common import add_trace_args, describe_rates, load_cli_trace

NAME = "run"


SYSTEMS = ("PPD", "PD", "Replica")


def keys_epilog() -> str:
    """Every scenario key with its default, unit and allowed range (``run --help``)."""
    from ..config.scenario import SPEC, render_value
    lines = ["scenario keys (KEY=VALUE; defaults are used for keys not given):"]
    for k, spec in SPEC.items():
        unit = f" {spec.unit}" if spec.unit else ""
        lines.append(f"  {k} = {render_value(spec.default)}{unit}   ({spec.allowed()})")
    lines.append("a page link of the dashboard works too; its page-only keys (e.g. learn_step, present) are "
                 "ignored with a one-line note")
    return "\n".join(lines)


def add_parser(sub) -> None:
    import argparse
    r = sub.add_parser("run", help="simulate one scenario", epilog=keys_epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("pairs", nargs="*", help="KEY=VALUE pairs or a whole shared URL (of any page)")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.add_argument("--baselines", action="store_true",
                   help="also run PD (x = 0, pD -> D) and Replica on the same GPUs and print the three side by "
                        "side, as the Explore page does (with --json: {\"systems\": {\"PPD\": ..., \"PD\": ..., "
                        "\"Replica\": ...}})")
    r.add_argument("--records", metavar="CSV", help="also write per-request records to this CSV file")
    add_trace_args(r, "replay a trace file (ShareGPT JSON, Mooncake JSONL, CSV): a timestamped trace "
                      "replays at its own rate, or scaled to qps=... when given")


def _fmt_ms(x) -> str:
    return "-" if x is None else f"{x:,.1f}"


def _hardware_lines(sc: dict) -> list[str]:
    """One line naming each role's GPU x TP and the fleet's price when the roles differ (per-role keys set)."""
    from ..config.scenario import ROLE_KEYS, parse
    if not any(sc.get(k) for k in ROLE_KEYS):
        return []
    scn = parse({k: v for k, v in sc.items() if k not in ("tp_p", "tp_d") or v})
    roles = ", ".join(f"{r} on {g} x TP{t}" for r, (g, t) in scn.role_hardware().items())
    return [f"hardware: {roles}; {scn.gpu_count} GPUs, fleet ${scn.fleet_usd_h:,.2f}/h"]


def _arrival_lines(s: dict) -> list[str]:
    """A trace run's arrival rate and why (``summary["arrivals"]``)."""
    from ..workloads.trace_replay import describe_rate
    return [f"arrivals: {describe_rate(s['arrivals'])}"] if s.get("arrivals") else []


def format_summary(s: dict) -> str:
    sc = s["scenario"]
    lines = [f"scenario: layout={sc['layout']} policy={sc['policy']} gpu={sc['gpu']} model={sc['model']} "
             f"workload={sc['workload']} qps={sc['qps']:.4g} bandwidth={sc['bandwidth_gbps']:g} GB/s",
             *_hardware_lines(sc), *_arrival_lines(s),
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
    e = s.get("expected_error")
    if e:
        p = e["errors_pct"]
        lines.append(f"expected simulator error ({e['label']}): Turn 2+ TTFT ±{p['turn2_ttft_p50']:g} %, TPOT "
                     f"±{p['turn2_tpot_mean']:g} %, PPD/PD TTFT ratio ±{p['effect_ttft']:g} %"
                     + (f" ({'; '.join(e['reasons'])})" if e["reasons"] else ""))
    lines += [f"extrapolated: {n}" for n in s.get("extrapolated", ())]
    lines += [f"warning: {w}" for w in s.get("warnings", ())]
    return "\n".join(lines)


def format_baselines(summaries: dict) -> str:
    """PPD, PD and Replica side by side: one row per figure, one column per system."""
    def row(label: str, fn, fmt) -> str:
        cells = []
        for name in summaries:
            try:
                v = fn(summaries[name])
            except (KeyError, TypeError):
                v = None
            cells.append("-" if v is None else fmt(v))
        return f"{label:<24}" + "".join(f"{c:>16}" for c in cells)
    ms = "{:,.1f}".format
    pct = "{:.1%}".format
    head = f"{'':<24}" + "".join(f"{n + ' ' + s['scenario']['layout']:>16}" for n, s in summaries.items())
    t2 = lambda s: s["groups"]["turn2plus"]       # noqa: E731
    lines = [head,
             row("Turn 2+ TTFT mean (ms)", lambda s: t2(s)["ttft_ms"]["mean"], ms),
             row("Turn 2+ TTFT p90 (ms)", lambda s: t2(s)["ttft_ms"]["p90"], ms),
             row("Turn 2+ TPOT mean (ms)", lambda s: t2(s)["tpot_ms"]["mean"], ms),
             row("Turn 2+ E2E mean (ms)", lambda s: t2(s)["e2e_ms"]["mean"], ms),
             row("Turn 1 TTFT mean (ms)", lambda s: s["groups"]["turn1"]["ttft_ms"]["mean"], ms),
             row("local share", lambda s: s["local_share"], pct),
             row("success rate", lambda s: s["success_rate"], pct),
             row("tokens/s", lambda s: s["throughput"]["tokens_per_s"], "{:,.0f}".format),
             row("KV moved (GB)", lambda s: s["kv"]["bytes"] / 1e9, "{:,.2f}".format)]
    for k in next(iter(summaries.values())).get("slo_attainment", {}):
        lines.append(row(f"SLO {k}", lambda s, k=k: s["slo_attainment"][k], pct))
    return "\n".join(lines)


def _note_arrivals(summary: dict, arrivals: dict | None) -> None:
    """A trace run's summary says the rate it used and why (``replay_rate``)."""
    if arrivals is not None:
        summary["arrivals"] = dict(arrivals)


def handle(args) -> int:
    from ..analysis.runs import run
    from ..config.page_keys import parse_link
    from ..config.scenario import baselines
    sc, dropped = parse_link(args.pairs)
    if dropped:
        print(f"note: page-only keys ignored: {', '.join(dropped)}", file=sys.stderr)
    trace, arrivals = load_cli_trace(args, sys.stderr), None
    if trace is not None:
        from ..config.scenario import query_pairs
        from ..workloads.traces import assign_arrivals, describe_rate, replay_rate
        given = any(k == "qps" for k, _ in query_pairs(args.pairs))
        arrivals = replay_rate(trace, sc.qps if given else None, sc.qps)
        sc = sc.with_(qps=arrivals["qps"], workload="trace")
        describe_rates(trace, [sc.qps], sys.stderr)
        print(f"  {describe_rate(arrivals)}", file=sys.stderr)
        trace = assign_arrivals(trace, sc.qps, sc.seed)
    if args.baselines:
        results = {name: run(s, trace) for name, s in baselines(sc).items()}
        for r in results.values():
            _note_arrivals(r.summary, arrivals)
        if args.json:
            print(json.dumps({"systems": {name: r.summary for name, r in results.items()}}))
        else:
            print(format_summary(results["PPD"].summary) + "\n\nPPD against its baselines (same GPUs):\n"
                  + format_baselines({name: r.summary for name, r in results.items()}))
        if args.records:
            import pandas as pd
            pd.concat([r.records.assign(system=name) for name, r in results.items()],
                      ignore_index=True).to_csv(args.records, index=False)
        return 0
    res = run(sc, trace)
    _note_arrivals(res.summary, arrivals)
    if args.json:
        print(json.dumps(res.summary))
    else:
        print(format_summary(res.summary))
    if args.records:
        res.records.to_csv(args.records, index=False)
    return 0


