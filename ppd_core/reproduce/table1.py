"""Reproduction: Table 1: Turn-2 TTFT change x=0 -> x=1 per P:D ratio and load band."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis.grid import expand_grid
from ..analysis.progress import Progress
from ..calibration.measured import HASH_QUIRK_FRAC, VALID_FAILURE
from ..config.scenario import Scenario
from ..config.workload_catalog import SYNTHETIC
from .judge import BENCH, Item, Tol, judged_counts, judged_row, judged_table, measured_dir_or_none, run_scenarios
from .published import PUB_TABLE1, TABLE1_BANDS, TABLE1_PAIRS


def table1_scenarios(**changes: Any) -> list[Scenario]:
    layouts = [lay for pair in TABLE1_PAIRS for lay in pair]
    qps = sorted({q for _, qs in TABLE1_BANDS for q in qs})
    return expand_grid({**dict(BENCH), **{k: str(v) for k, v in changes.items()}},
                       {"layout": layouts, "workload": SYNTHETIC, "qps": qps})


def _band_change(x0: pd.Series, x1: pd.Series) -> tuple[float, int]:
    """Ratio of summed Turn-2 mean TTFT (x=1 over x=0) over the points both have, as a % change."""
    j = pd.concat([x0.rename("x0"), x1.rename("x1")], axis=1).dropna()
    if j.empty or j["x0"].sum() <= 0:
        return math.nan, 0
    return 100.0 * (j["x1"].sum() / j["x0"].sum() - 1.0), len(j)


def _measured_table1(mdir: Path | None) -> dict[tuple[str, str], float]:
    if mdir is None or not (mdir / "comprehensive.csv").exists():
        return {}
    c = pd.read_csv(mdir / "comprehensive.csv")
    c = c[(c["turn"] == "turn2") & c["failure_class"].fillna("").isin(list(VALID_FAILURE))]
    c = c.dropna(subset=["avg_ttft_ms"])
    out = {}
    for d, p in TABLE1_PAIRS:
        for band, qs in TABLE1_BANDS:
            sel = c[c["qps"].isin(qs)]
            x0 = sel[sel["config"] == d].set_index(["workload", "qps"])["avg_ttft_ms"]
            x1 = sel[sel["config"] == p].set_index(["workload", "qps"])["avg_ttft_ms"]
            out[(d, band)] = _band_change(x0, x1)[0]
    return out


def table1(progress: Progress | None = None, measured_dir: str | Path | None = None,
           rehash_frac: float = HASH_QUIRK_FRAC, pool=None) -> Item:
    """Table 1: Turn-2 TTFT change of x=1 (pD) over x=0 (D, policy pd) at the same P:D ratio, per QPS band:
    the ratio of mean Turn-2 TTFT summed over the 18 synthetic workloads and the band's QPS points (the
    aggregation that reproduces the paper best, ppd-paper.md 7.3), in the benchmark setting."""
    df = run_scenarios(table1_scenarios(rehash_frac=rehash_frac), progress, pool)
    col = "turn2plus.ttft_ms.mean"
    measured = _measured_table1(measured_dir_or_none(measured_dir))
    rows, data = [], []
    for (d, p) in TABLE1_PAIRS:
        for q in sorted({q for _, qs in TABLE1_BANDS for q in qs}):
            sel = df[df["qps"] == q]
            x0 = sel[sel["layout"] == d].set_index("workload")[col]
            x1 = sel[sel["layout"] == p].set_index("workload")[col]
            ch, n = _band_change(x0, x1)
            data.append({"pair": f"{d}→{p}", "x0_layout": d, "qps": q, "change_pct": ch, "points": n,
                         "x0_ttft_ms": float(x0.mean()), "x1_ttft_ms": float(x1.mean())})
        for i, (band, qs) in enumerate(TABLE1_BANDS):
            sel = df[df["qps"].isin(qs)]
            x0 = sel[sel["layout"] == d].set_index(["workload", "qps"])[col]
            x1 = sel[sel["layout"] == p].set_index(["workload", "qps"])[col]
            ch, _ = _band_change(x0, x1)
            tol = Tol("abs", 15.0) if d != "3P_1D" else Tol("range", -100.0, 0.0)
            lo, hi = qs[0], qs[-1]
            rows.append(judged_row(f"{d}→{p} {band} (QPS {lo:g}–{hi:g})", "%", ch, PUB_TABLE1[d][i], tol))
            if measured:
                rows.append(judged_row(f"{d}→{p} {band} (QPS {lo:g}–{hi:g})", "%", ch, measured.get((d, band), math.nan),
                                 None, "measured (repo CSV, same aggregation)"))
    table = judged_table(rows)
    paper = table[table["source"] == "paper"]
    sim = {q: paper.loc[paper["quantity"].str.startswith(q), "simulated"].tolist() for q, _ in TABLE1_PAIRS}
    n_ok, n = judged_counts(paper.to_dict("records"))
    signs = all(v < 0 for vals in sim.values() for v in vals if math.isfinite(v))
    # the paper's 3P benefit shrinks with load (-44 -> -25 %): the change rises towards 0
    trend3 = "shrinks" if sim["3P_1D"][-1] > sim["3P_1D"][0] else "does not shrink"
    verdict = (f"{n_ok}/{n} cells within tolerance; all reductions {'negative' if signs else 'NOT all negative'}. "
               f"1P: {' / '.join(f'{v:.0f}' for v in sim['1P_3D'])} % (paper −58/−65/−73), 2P: "
               f"{' / '.join(f'{v:.0f}' for v in sim['2P_2D'])} % (−48/−52/−56), 3P: "
               f"{' / '.join(f'{v:.0f}' for v in sim['3P_1D'])} % (−44/−38/−25). The 3P benefit "
               f"{trend3} with load in the simulator ({'like' if trend3 == 'shrinks' else 'unlike'} the "
               "paper, where its single pD carries every append); the measured repo data do not show the paper's "
               "3P trend either (−48/−48/−52), so 3P is judged on sign only.")
    tol = ("1P and 2P: ±15 pp of the paper per band (bands pool 54 synthetic points; the paper's own numbers "
           "are not exactly reproducible from its data); 3P: sign only (negative), because the paper's falling "
           "3P trend is not in the measured data.")
    notes = ("Benchmark setting: arrival window 10 s, client cap 50, timeout 120 s, policy pd on D layouts, and "
             "the proxy's routing quirk (rehash_frac=2/9: that share of Turn-2 requests takes P->D even on pD, as "
             "in the measured runs the paper's table comes from). Without the quirk every pD layout's Turn 2 is "
             "local and the reductions are larger (run table1_scenarios(rehash_frac=0) to see them).",)
    return Item("table1", "Table 1: Turn-2 TTFT change x=0 → x=1", table, verdict, tol, pd.DataFrame(data), notes)
