"""Reproduction: Fig.5: PD vs PPD against KV-transfer bandwidth (1P_3D, WildChat-like, QPS 1)."""
from __future__ import annotations

import math

import pandas as pd

from ..analysis.progress import Progress
from ..config.scenario import Scenario
from ..model.params import default_params
from .judge import Item, Tol, as_number, judged_counts, judged_row, judged_table, pct_change, run_scenarios
from .published import FIG5_BW, PUB_FIG5


def fig5_scenarios(conversations: int = 500) -> list[Scenario]:
    base = Scenario(layout="1P_3D", workload="wildchat", qps=1.0, conversations=conversations, client="benchmark",
                    link_sharing="independent")
    return [base.with_(bandwidth_gbps=bw, policy=pol) for bw in FIG5_BW for pol in ("pd", "dynamic")]


def fig5(conversations: int = 500, progress: Progress | None = None, pool=None) -> Item:
    """Fig.5: 1P_3D at QPS 1 on WildChat-like traffic (500 conversations), PD (policy pd) vs PPD (policy
    dynamic) as the P->D link drops from 150 to 10 GB/s. Transfers are independent (the paper's Eq.2 adds
    a per-transfer delay; it models no shared link)."""
    scs = fig5_scenarios(conversations)
    df = run_scenarios(scs, progress, pool)
    data = []
    for sc, (_, r) in zip(scs, df.iterrows()):
        system = "PD" if sc.policy == "pd" else "PPD"
        rec = {"bandwidth_gbps": sc.bandwidth_gbps, "system": system,
               "ttft_ms": as_number(r["turn2plus.ttft_ms.mean"]), "tpot_ms": as_number(r["turn2plus.tpot_ms.mean"]),
               "e2e_ms": as_number(r["turn2plus.e2e_ms.mean"]), "local_share": as_number(r["local_share"])}
        for m in ("ttft", "tpot", "e2e"):
            rec[f"published_{m}_ms"] = PUB_FIG5.get((system, m), {}).get(sc.bandwidth_gbps, math.nan)
        data.append(rec)
    data = pd.DataFrame(data)

    def v(system: str, bw: float, m: str) -> float:
        d = data[(data["system"] == system) & (data["bandwidth_gbps"] == bw)]
        return float(d.iloc[0][f"{m}_ms"]) if len(d) else math.nan

    hi, lo = FIG5_BW[0], FIG5_BW[-1]
    pd_rise = v("PD", lo, "ttft") - v("PD", hi, "ttft")
    ppd_move = pct_change(v("PPD", lo, "ttft"), v("PPD", hi, "ttft"))
    red_hi = -pct_change(v("PPD", hi, "ttft"), v("PD", hi, "ttft"))
    red_lo = -pct_change(v("PPD", lo, "ttft"), v("PD", lo, "ttft"))
    P = PUB_FIG5
    rows = [
        judged_row("PD Turn 2+ TTFT rise, 150 → 10 GB/s", "ms", pd_rise, P[("PD", "ttft")][lo] - P[("PD", "ttft")][hi],
             Tol("range", 10.0, 45.0)),
        judged_row("PPD Turn 2+ TTFT change, 150 → 10 GB/s", "%", ppd_move, 0.0, Tol("abs", 5.0)),
        judged_row("TTFT reduction PPD vs PD at 150 GB/s", "%", red_hi, P["reduction"][hi], Tol("abs", 10.0)),
        judged_row("TTFT reduction PPD vs PD at 10 GB/s", "%", red_lo, P["reduction"][lo], Tol("abs", 10.0)),
        judged_row("PD Turn 2+ TTFT at 150 GB/s", "ms", v("PD", hi, "ttft"), P[("PD", "ttft")][hi], Tol("rel", 0.25)),
        judged_row("PPD Turn 2+ TTFT at 150 GB/s", "ms", v("PPD", hi, "ttft"), P[("PPD", "ttft")][hi], Tol("rel", 0.25)),
        judged_row("PD TPOT at 150 GB/s", "ms", v("PD", hi, "tpot"), P[("PD", "tpot")][hi], Tol("rel", 0.15)),
        judged_row("PD TPOT change, 150 → 10 GB/s", "%", pct_change(v("PD", lo, "tpot"), v("PD", hi, "tpot")),
             pct_change(P[("PD", "tpot")][lo], P[("PD", "tpot")][hi]), Tol("range", 0.0, 10.0)),
        judged_row("PD Turn 2+ E2E at 150 GB/s", "ms", v("PD", hi, "e2e"), P[("PD", "e2e")][hi], Tol("rel", 0.25)),
        judged_row("PD E2E change, 150 → 10 GB/s", "%", pct_change(v("PD", lo, "e2e"), v("PD", hi, "e2e")),
             pct_change(P[("PD", "e2e")][lo], P[("PD", "e2e")][hi]), Tol("range", 0.0, 10.0)),
        judged_row("PPD E2E change, 150 → 10 GB/s", "%", pct_change(v("PPD", lo, "e2e"), v("PPD", hi, "e2e")),
             P["ppd_e2e_change_pct"], Tol("abs", 3.0)),
    ]
    n_ok, n = judged_counts(rows)
    verdict = (f"{n_ok}/{n} within tolerance. PD TTFT {v('PD', hi, 'ttft'):.0f} → {v('PD', lo, 'ttft'):.0f} ms "
               f"(paper 143.7 → 170.6), PPD {v('PPD', hi, 'ttft'):.0f} → {v('PPD', lo, 'ttft'):.0f} ms "
               "(≈51 flat), "
               f"reduction {red_hi:.0f} % → {red_lo:.0f} % (64 → 70); PD TPOT {v('PD', hi, 'tpot'):.2f} → "
               f"{v('PD', lo, 'tpot'):.2f} ms (8.07 → 8.38).")
    bad = [r["quantity"] for r in rows if r["within"] is False]
    if bad:
        verdict += " Off: " + "; ".join(bad) + "."
    if any("TTFT rise" in q for q in bad):
        verdict += (" The simulator starts the KV transfer when P's prefill ends and overlaps it with the PD hand-off "
                    "(P's 1-token response, the second HTTP hop: "
                    f"~{_handoff_ms():.0f} ms plus per-token costs), so a transfer shorter than that adds no TTFT; the "
                    "paper's Eq.2 sleeps on D's receive path after the request reaches D, adding B/β − t_NVLink "
                    "in series.")
    if any("E2E at 150" in q for q in bad):
        verdict += (" Absolute E2E depends on the WildChat-like output lengths and turn counts (the paper's sample "
                    "had 3.1 turns/conversation, the repo's 4.1; outputs are synthetic here).")
    tol = ("shape: PD TTFT must rise 10–45 ms (paper +26.9) while PPD moves < 5 %; reductions ±10 pp; "
           "absolute TTFT/E2E ±25 %, TPOT ±15 % (WildChat is synthetic here and held out of calibration).")
    notes = (f"{conversations} WildChat-like conversations (lognormal lengths fitted to the repo's sample), "
             "client cap 50, link_sharing=independent (Eq.2: each transfer pays its own delay).",)
    return Item("fig5", "Fig.5: PD vs PPD against KV-transfer bandwidth", judged_table(rows), verdict, tol, data, notes)


def _handoff_ms() -> float:
    """The calibrated fixed part of the PD hand-off plus one HTTP hop (for the Fig.5 explanation)."""
    p = default_params()
    return p.pd_handoff_ms + p.api_ms
