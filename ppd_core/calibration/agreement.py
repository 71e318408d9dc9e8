"""What the dashboard headlines, measured against the measured system: the effect size (simulated vs
measured PPD/PD ratio of Turn-2 mean TTFT and TPOT per cell) and the rank agreement of layouts per cell
(Kendall tau). Works on validation points (anything with file, config, workload, qps, turn, metric,
measured, simulated); a cell is one (file, workload, QPS) of the synthetic sweep's Turn 2."""
from __future__ import annotations

from collections import defaultdict
from types import MappingProxyType

import numpy as np

PAIRS = MappingProxyType({"1P_3D": "1P_3pD", "2P_2D": "2P_2pD", "3P_1D": "3P_1pD"})   # PD (x=0) -> PPD (x=1)
METRICS = MappingProxyType({"ttft": "avg_ttft_ms", "tpot": "avg_tpot_ms"})


def _cells(pts, metric: str) -> dict[tuple, dict[str, tuple[float, float]]]:
    """{(file, workload, qps): {layout: (measured, simulated)}} of Turn-2 ``metric``."""
    out: dict[tuple, dict] = defaultdict(dict)
    for p in pts:
        if p.turn == "turn2" and p.metric == metric and p.simulated is not None and p.measured > 0:
            out[(p.file, p.workload, p.qps)][p.config] = (p.measured, p.simulated)
    return out


def ratio_errors(pts, metric: str) -> list[tuple[str, float, float]]:
    """Per (PD layout, cell): (label, measured PPD/PD ratio, simulated PPD/PD ratio)."""
    out = []
    for (f, wl, q), lay in sorted(_cells(pts, metric).items()):
        for pd, ppd in PAIRS.items():
            if pd in lay and ppd in lay:
                m = lay[ppd][0] / lay[pd][0]
                s = lay[ppd][1] / lay[pd][1]
                out.append((f"{pd}/{ppd} {wl} qps={q:g}", m, s))
    return out


def effect_size(pts) -> dict:
    """Error of the simulated PPD/PD ratio relative to the measured one, in % (|s/m - 1|): median, mean,
    the median signed error (bias), and per PD/PPD pair."""
    out = {}
    for name, metric in METRICS.items():
        rows = ratio_errors(pts, metric)
        err = np.array([100 * (s / m - 1) for _, m, s in rows])
        if not err.size:
            out[name] = None
            continue
        per_pair = {}
        for pd in PAIRS:
            e = [abs(100 * (s / m - 1)) for lab, m, s in rows if lab.startswith(pd + "/")]
            if e:
                per_pair[pd] = round(float(np.median(e)), 2)
        out[name] = {"median_abs_pct": round(float(np.median(np.abs(err))), 2),
                     "mean_abs_pct": round(float(np.mean(np.abs(err))), 2),
                     "median_signed_pct": round(float(np.median(err)), 2), "n": int(err.size),
                     "per_pair_median_abs_pct": per_pair}
    return out


def rank_agreement(pts, min_layouts: int = 3) -> dict:
    """Kendall tau (scipy.stats.kendalltau, tau-b) between measured and simulated layout order per cell;
    cells with fewer than ``min_layouts`` layouts or no defined tau (all tied) are skipped."""
    from scipy.stats import kendalltau
    out = {}
    for name, metric in METRICS.items():
        taus = []
        for lay in _cells(pts, metric).values():
            if len(lay) < min_layouts:
                continue
            names = sorted(lay)
            t = kendalltau([lay[n][0] for n in names], [lay[n][1] for n in names]).statistic
            if np.isfinite(t):
                taus.append(float(t))
        out[name] = ({"mean_tau": round(float(np.mean(taus)), 3), "median_tau": round(float(np.median(taus)), 3),
                      "share_tau_ge_0_6": round(float(np.mean(np.asarray(taus) >= 0.6)), 3), "n_cells": len(taus)}
                     if taus else None)
    return out


def format_agreement(summary: dict) -> list[str]:
    lines = []
    for name, label in (("ttft", "TTFT"), ("tpot", "TPOT")):
        e = summary.get("effect_size", {}).get(name)
        if e:
            lines.append(f"Effect size, PPD/PD ratio of Turn-2 mean {label}: simulated vs measured off by a median "
                         f"{e['median_abs_pct']:.1f} % (mean {e['mean_abs_pct']:.1f} %, bias "
                         f"{e['median_signed_pct']:+.1f} %) over {e['n']} cells")
        k = summary.get("rank_agreement", {}).get(name)
        if k:
            lines.append(f"Layout rank per cell on Turn-2 mean {label}: Kendall tau mean {k['mean_tau']:.2f}, "
                         f"median {k['median_tau']:.2f}, tau >= 0.6 in {k['share_tau_ge_0_6']:.0%} of "
                         f"{k['n_cells']} cells")
    nf = summary.get("noise_floor", {})
    for name, d in nf.items():
        if d:
            lines.append(f"Noise floor ({summary.get('seeds')} seeds), {name}: seed-to-seed CV median "
                         f"{d['median_cv_pct']:.1f} %, p90 {d['p90_cv_pct']:.1f} % (n={d['n']})")
    return lines
