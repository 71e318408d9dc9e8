"""Reproduction: Fig.6: the Eq.1 weight sweep (local share and the TTFT-TPOT frontier)."""
from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from ..analysis.progress import Progress
from ..config.scenario import Scenario
from .judge import Item, Tol, as_number, judged_counts, judged_row, judged_table, pct_change, run_scenarios
from .published import FIG6_QPS, FIG6_WORKLOAD, FIG6_WORKLOAD_WHY, FIG6_W_TPOT, PUB_FIG6_LOCAL, PUB_FIG6_X1


def fig6_scenarios(workload: str = FIG6_WORKLOAD, qps: Sequence[float] = FIG6_QPS,
                   conversations: int = 500) -> list[tuple[float, str, float, Scenario]]:
    out = []
    for q in qps:
        base = Scenario(layout="1P_3D", workload=workload, qps=q, conversations=conversations, w_ttft=1.0,
                        client="benchmark")
        out.append((q, "static PD (x=0)", math.nan, base.with_(policy="pd")))
        for w in FIG6_W_TPOT:
            out.append((q, f"w_tpot={w:g}", w, base.with_(policy="dynamic", w_tpot=w)))
        out.append((q, "static local (x=1)", math.nan, base.with_(policy="ppd")))
    return out


def fig6(workload: str = FIG6_WORKLOAD, qps: Sequence[float] = FIG6_QPS, conversations: int = 500,
         progress: Progress | None = None, pool=None) -> Item:
    """Fig.6: 1P_3D on a prefill-heavy workload at QPS 8 and 16, policy dynamic with w_ttft=1 and
    w_tpot from 0 to 6, plus the static ends: local share and the Turn 2+ TTFT-TPOT frontier."""
    pts = fig6_scenarios(workload, qps, conversations)
    df = run_scenarios([p[3] for p in pts], progress, pool)
    data = []
    for (q, setting, w, sc), (_, r) in zip(pts, df.iterrows()):
        data.append({"qps": q, "setting": setting, "w_tpot": w, "policy": sc.policy,
                     "local_share": as_number(r["local_share"]), "ttft_ms": as_number(r["turn2plus.ttft_ms.mean"]),
                     "tpot_ms": as_number(r["turn2plus.tpot_ms.mean"])})
    data = pd.DataFrame(data)
    rows, mono_all = [], True
    for q in qps:
        d = data[data["qps"] == q]
        x0 = d[d["policy"] == "pd"].iloc[0]
        x1 = d[d["policy"] == "ppd"].iloc[0]
        data.loc[d.index, "ttft_change_pct"] = [pct_change(t, x0["ttft_ms"]) for t in d["ttft_ms"]]
        data.loc[d.index, "tpot_change_pct"] = [pct_change(t, x0["tpot_ms"]) for t in d["tpot_ms"]]
        dyn = d[d["policy"] == "dynamic"].sort_values("w_tpot")
        shares = dyn["local_share"].tolist()
        mono = all(b <= a + 1e-9 for a, b in zip(shares, shares[1:]))
        mono_all &= mono
        rows.append(judged_row(f"QPS {q:g}: local share, static PD", "%", 100 * x0["local_share"], PUB_FIG6_LOCAL["pd"],
                         Tol("abs", 0.5)))
        for w in (6.0, 3.0, 1.0):
            s = dyn[dyn["w_tpot"] == w]["local_share"]
            share = 100 * float(s.iloc[0]) if len(s) else math.nan
            rows.append(judged_row(f"QPS {q:g}: local share, w_tpot={w:g}", "%", share, PUB_FIG6_LOCAL[w], Tol("abs", 20.0)))
        rows.append(judged_row(f"QPS {q:g}: local share non-increasing in w_tpot", "bool", float(mono), 1.0,
                         Tol("holds")))
        pub_t, pub_p = PUB_FIG6_X1[q] if q in PUB_FIG6_X1 else (math.nan, math.nan)
        rows.append(judged_row(f"QPS {q:g}: x=1 end TTFT change", "%", pct_change(x1["ttft_ms"], x0["ttft_ms"]), pub_t,
                         Tol("range", -100.0, -80.0)))
        rows.append(judged_row(f"QPS {q:g}: x=1 end TPOT change", "%", pct_change(x1["tpot_ms"], x0["tpot_ms"]), pub_p,
                         Tol("abs", 7.0)))
    table = judged_table(rows)
    n_ok, n = judged_counts(rows)
    parts = []
    for q in qps:
        d = data[(data["qps"] == q) & (data["policy"] == "dynamic")].sort_values("w_tpot")
        sh = " / ".join(f"{100 * s:.0f}" for s in d["local_share"])
        parts.append(f"QPS {q:g}: local % at w_tpot {'/'.join(f'{w:g}' for w in d['w_tpot'])} = {sh}")
    verdict = (f"{n_ok}/{n} within tolerance; local share {'monotone' if mono_all else 'NOT monotone'} in w_tpot. "
               + "; ".join(parts) + " (paper 95 % at 1, 50 % at 3, 20 % at 6).")
    off = [r["quantity"] for r in rows if r["within"] is False]
    share_off = [r for r in rows if r["within"] is False and "local share, w_tpot" in r["quantity"]]
    if share_off:
        more = sum(r["diff"] > 0 for r in share_off)
        trend = ("keeps more requests local than the paper at " if more == len(share_off) else
                 "sends more requests through P than the paper at " if more == 0 else "misses the paper at ")
        verdict += (" The online Eq.1 (per request, from the live queue and batch state) " + trend
                    + ", ".join(r["quantity"].split(": ", 1)[0] + " " + r["quantity"].rsplit(", ", 1)[1]
                                for r in share_off)
                    + "; the paper's offline table stores one sign per cell from x=0/x=1 averages, so the two "
                      "cross over at different weights.")
    if any("x=1 end" in q for q in off):
        verdict += " Off at the x=1 end: " + "; ".join(q for q in off if "x=1 end" in q) + "."
    tol = ("local share ±20 pp of the paper's 95/50/20 % (read off a figure; the paper's slice is unnamed), 0 at "
           "static PD, monotone; x=1 end: TTFT reduction ≥ 80 % (paper 94–96 %), TPOT change ±7 pp (7–12 %).")
    notes = (f"Workload {workload}, {conversations} conversations, client cap 50."
             + (f" {FIG6_WORKLOAD_WHY}" if workload == FIG6_WORKLOAD else ""),)
    return Item("fig6", "Fig.6: the Eq.1 weight sweep", table, verdict, tol, data, notes)
