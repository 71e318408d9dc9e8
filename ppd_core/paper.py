"""Reproduce the paper's figures and tables with the simulator, overlaid on the published and measured values.

``python -m ppd_core paper [--only NAME[,NAME...]] [--json] [--quick] [--measured DIR]``

Every item is a function returning an ``Item``: ``table`` (tidy: one row per compared quantity with
``simulated``, ``published`` and the ``tolerance`` it is judged by, ``within`` True/False, or None for rows
shown for context only), ``data`` (the full simulated series behind the chart), a one-line ``verdict`` and
the ``tolerance`` text. Simulated numbers always come from a run of the simulator (the calibrated model in
``data/perf_params.json`` when present); the only numbers written here are the paper's (PPD paper, "Not All
Prefills Are Equal", ICML 2026, as digested in ../shared/reference/ppd-paper.md sections 3, 7 and 8) and the
measured ones read from the CSV files of ../shared/data/ppd-measured.

Items (``ITEMS``):
  interference  Fig.2 / Fig.7: decode TPOT vs decode batch with a full or an append prefill in the batch.
  table1        Table 1: Turn-2 TTFT change x=0 -> x=1 per P:D ratio and load band.
  fig5          Fig.5: PD vs PPD against KV-transfer bandwidth (1P_3D, WildChat-like, QPS 1).
  fig6          Fig.6: the Eq.1 weight sweep (local share and the TTFT-TPOT frontier).
  table2        Table 2: which layout category wins each (workload, QPS) cell, and the 92.2 % figure.
  headline      The ~68 % Turn 2+ TTFT reduction on ShareGPT-like traffic at competitive TPOT.
  engines       The offline lookup table (``dynamic-table``) against the online Eq.1 engine (``dynamic``).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import PPDError
from .layout import LAYOUT_CATEGORY, PAPER_LAYOUTS
from .measured import HASH_QUIRK_FRAC, VALID_FAILURE
from .scenario import Scenario
from .sweep import PAPER_BASE, REPO_ROOT, TextProgress, expand_grid, paper_grid_axes, run_grid
from .workload import SYNTHETIC

Progress = Callable[[int, int], None]

#: Where the measured CSVs live in this checkout (used by the CLI and the pages when present).
MEASURED_DEFAULT = REPO_ROOT.parent / "shared" / "data" / "ppd-measured"

#: The synthetic benchmark setting of the paper's sweep (section 4.2) as it was measured: a 10 s Poisson window,
#: a 50-connection client, a 120 s timeout, x=0 layouts routed through P (``sweep --paper-grid``), plus the
#: proxy's routing-key quirk that sent ~2/9 of Turn-2 requests down P->D as "new conversations" (measured
#: README; ``validate`` simulates the comprehensive points the same way). Table 1 and Table 2 were computed
#: from those measurements, so they are reproduced with the quirk.
BENCH = MappingProxyType({**{k: str(v) for k, v in PAPER_BASE.items()}, "rehash_frac": str(HASH_QUIRK_FRAC)})

# ---- published numbers (ppd-paper.md sections 3, 7.1, 8; nothing simulated is written here) ----------------

PUB_INTERFERENCE = MappingProxyType({
    "decode_only_ms_b200": 28.0,          # reviewer's figure reading, Fig.2
    ("full", 1): 48.0, ("append", 1): 2.0,   # % TPOT slowdown at batch 200 (section 4.1)
    ("full", 4): 57.0, ("append", 4): 21.0,  # App.C.1, Fig.7
})
TABLE1_PAIRS = (("1P_3D", "1P_3pD"), ("2P_2D", "2P_2pD"), ("3P_1D", "3P_1pD"))
TABLE1_BANDS = (("low", (0.5, 1.0, 2.0)), ("medium", (4.0, 6.0, 8.0)), ("high", (12.0, 16.0, 20.0)))
PUB_TABLE1 = MappingProxyType({"1P_3D": (-57.8, -65.2, -73.3), "2P_2D": (-47.7, -51.6, -56.2),
                               "3P_1D": (-44.3, -38.1, -24.9)})
FIG5_BW = (150.0, 50.0, 25.0, 10.0)
PUB_FIG5 = MappingProxyType({
    ("PD", "ttft"): MappingProxyType({150.0: 143.7, 10.0: 170.6}),
    ("PPD", "ttft"): MappingProxyType({b: 51.0 for b in FIG5_BW}),        # "flat ~51 ms"
    ("PD", "tpot"): MappingProxyType({150.0: 8.07, 10.0: 8.38}),
    ("PPD", "tpot"): MappingProxyType({b: 8.1 for b in FIG5_BW}),         # "~8.1 ms"
    ("PD", "e2e"): MappingProxyType({150.0: 3028.0, 10.0: 3169.0}),
    "reduction": MappingProxyType({150.0: 64.0, 10.0: 70.0}),
    "ppd_e2e_change_pct": 0.9,
})
FIG6_W_TPOT = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0)
FIG6_QPS = (8.0, 16.0)
#: Fig.6's slice is "prefill-heavy, 500 conversations" of an unnamed dataset (not published).
FIG6_WORKLOAD = "small_huge_paste"
FIG6_WORKLOAD_WHY = ("small_huge_paste (Turn 1 128 -> 128, Turn 2 appends 1,024 tokens and generates 32) is the most "
                     "prefill-heavy request class the paper defines (input/output 32, the engine's 'huge_paste'), "
                     "and it is where the measured 1P_3D collapses: at QPS 8 its Turn-2 TTFT is 1,848 ms under PD vs "
                     "81 ms on 1P_3pD (-96 %, the paper's Fig.6 figure at QPS 8). A local 1,024-token append is also "
                     "the costliest for co-batched decodes, so the weights have a real trade to make. The paper's own "
                     "slice of a real dataset is not published.")
PUB_FIG6_LOCAL = MappingProxyType({"pd": 0.0, 6.0: 20.0, 3.0: 50.0, 1.0: 95.0})   # % of Turn 2+ served locally
PUB_FIG6_X1 = MappingProxyType({8.0: (-96.0, 7.0), 16.0: (-94.0, 12.1)})         # (TTFT %, TPOT %) at x=1
CATEGORIES = ("Replica", "x=0", "0<x<1", "x=1", "Hybrid")
PUB_TABLE2 = MappingProxyType({
    "TTFT": MappingProxyType({"Replica": 63.3, "x=0": 0.0, "0<x<1": 3.3, "x=1": 27.2, "Hybrid": 6.1}),
    "TPOT": MappingProxyType({"Replica": 0.6, "x=0": 38.3, "0<x<1": 33.3, "x=1": 15.6, "Hybrid": 12.2}),
    "Throughput": MappingProxyType({"Replica": 0.0, "x=0": 4.4, "0<x<1": 27.8, "x=1": 38.3, "Hybrid": 16.1}),
})
PUB_TTFT_TPOT_DIFFER = 92.2
QUICK_LAYOUTS = PAPER_LAYOUTS[:10]          # the ten core layouts (4R, x=0, x=1, 0<x<1)
QUICK_WORKLOADS = ("small_tiny", "small_mid_bal", "small_big_paste", "large_long_gen", "large_mid_bal",
                   "large_huge_paste")
QUICK_QPS = (1.0, 4.0, 8.0, 16.0)
PUB_HEADLINE_PCT = 68.0                     # abstract and section 8: "~68 %" Turn 2+ TTFT reduction
HEADLINE_QPS = (2.0, 4.0)
#: Cells (of 180) where the reference code's table picks local at w=(1,1), on the repository's data
#: (ppd-paper.md 2.3, derived; ppd_lookup_table.csv has the same 178 for 2P_2D).
PUB_TABLE_LOCAL_CELLS = MappingProxyType({"1P_3D": 178, "2P_2D": 178})
ENGINE_LAYOUTS = ("1P_3D", "2P_2D")
ENGINE_QPS = (4.0, 8.0)
ENGINE_WORKLOADS = ("sharegpt", "large_huge_paste")


@dataclass(frozen=True, eq=False)
class Item:
    """One reproduced figure or table."""
    name: str
    title: str
    table: pd.DataFrame          # quantity, unit, simulated, published, source, diff, tolerance, within
    verdict: str
    tolerance: str
    data: pd.DataFrame           # the simulated series behind the chart (item-specific tidy columns)
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool | None:
        """True if every judged row is within its tolerance; None if nothing is judged."""
        judged = [w for w in self.table["within"].tolist() if w is not None and not _isnan(w)]
        return None if not judged else all(bool(w) for w in judged)

    def counts(self) -> tuple[int, int]:
        judged = [bool(w) for w in self.table["within"].tolist() if w is not None and not _isnan(w)]
        return sum(judged), len(judged)

    def to_json(self) -> dict:
        return {"name": self.name, "title": self.title, "verdict": self.verdict, "tolerance": self.tolerance,
                "ok": self.ok, "notes": list(self.notes), "table": _records(self.table),
                "data": _records(self.data)}


# ---- small helpers -------------------------------------------------------------------------------------------

def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _num(x: Any) -> float:
    """A summary figure as a float (NaN for missing)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for rec in df.to_dict("records"):
        clean = {}
        for k, v in rec.items():
            if isinstance(v, (np.integer,)):
                v = int(v)
            elif isinstance(v, (np.floating, float)):
                v = None if not math.isfinite(float(v)) else float(v)
            elif isinstance(v, np.bool_):
                v = bool(v)
            elif v is pd.NA:
                v = None
            clean[str(k)] = v
        out.append(clean)
    return out


def _pct(new: float, old: float) -> float:
    return 100.0 * (new / old - 1.0) if old and math.isfinite(old) and math.isfinite(new) else math.nan


@dataclass(frozen=True)
class Tol:
    """A tolerance: ``abs`` |sim - pub| <= a, ``rel`` |sim/pub - 1| <= a, ``range`` a <= sim <= b, ``holds``
    a yes/no property (sim is 1.0 for yes)."""
    kind: str
    a: float = 0.0
    b: float = 0.0

    def text(self, unit: str = "") -> str:
        u = f" {unit}" if unit and unit not in ("%",) else ""
        if self.kind == "abs":
            return f"±{self.a:g}{' pp' if unit == '%' else u}"
        if self.kind == "rel":
            return f"±{100 * self.a:g} %"
        if self.kind == "range":
            return f"{self.a:g} to {self.b:g}{' %' if unit == '%' else u}"
        if self.kind == "holds":
            return "must hold"
        return self.kind

    def check(self, sim: float, pub: float) -> bool | None:
        if not math.isfinite(sim):
            return False
        if self.kind == "abs":
            return abs(sim - pub) <= self.a + 1e-9
        if self.kind == "rel":
            return abs(sim / pub - 1.0) <= self.a + 1e-9 if pub else None
        if self.kind == "range":
            return self.a - 1e-9 <= sim <= self.b + 1e-9
        if self.kind == "holds":
            return sim >= 0.5
        return None


def _row(quantity: str, unit: str, sim: float, pub: float, tol: Tol | None, source: str = "paper") -> dict:
    sim, pub = _num(sim), _num(pub)
    within = tol.check(sim, pub) if tol is not None else None
    return {"quantity": quantity, "unit": unit, "simulated": sim, "published": pub, "source": source,
            "diff": sim - pub if math.isfinite(sim) and math.isfinite(pub) else math.nan,
            "tolerance": tol.text(unit) if tol is not None else "context only", "within": within}


def _table(rows: Iterable[dict]) -> pd.DataFrame:
    cols = ["quantity", "unit", "simulated", "published", "source", "diff", "tolerance", "within"]
    df = pd.DataFrame(list(rows), columns=cols)
    df["within"] = df["within"].astype(object)
    return df


def _grid(scenarios: Sequence[Scenario], progress: Progress | None) -> pd.DataFrame:
    return run_grid(list(scenarios), progress=progress)


def _bench(**changes: Any) -> Scenario:
    return Scenario(**{**dict(BENCH), **changes})


def _judged(rows: Iterable[dict]) -> tuple[int, int]:
    w = [r["within"] for r in rows if r["within"] is not None]
    return sum(bool(x) for x in w), len(w)


def measured_dir_or_none(path: str | Path | None) -> Path | None:
    """The measured folder if given and present; a given folder that is missing is an error."""
    if path is None or str(path) == "":
        return None
    p = Path(path)
    if not p.is_dir():
        raise PPDError(f"--measured: {path} is not a directory")
    return p


# ---- 1. interference (Fig.2, Fig.7) -------------------------------------------------------------------------

INTERFERENCE_BATCHES = tuple(range(0, 251, 10))
_CURVES = (("decode only", "none", 1), ("+1 full prefill", "full", 1), ("+1 append-prefill", "append", 1),
           ("+4 full prefills", "full", 4), ("+4 append-prefills", "append", 4))
_MEASURED_SCEN = MappingProxyType({"decoding_only": "decode only",
                                   "decoding_with_1_full_prefill": "+1 full prefill",
                                   "decoding_with_1_append_prefill": "+1 append-prefill",
                                   "decoding_with_4_full_prefill": "+4 full prefills",
                                   "decoding_with_4_append_prefill": "+4 append-prefills"})


def interference(measured_dir: str | Path | None = None, params=None,
                 batches: Sequence[int] = INTERFERENCE_BATCHES) -> Item:
    """Fig.2: decode TPOT vs decode batch (context 2,048+4 tokens, 64 output tokens) alone, with one full
    prefill (1,024 tokens, no cache) and with one append-prefill (1,024 new tokens on a 2,048-token cache);
    Fig.7: the same with four prefills. From ``perf.interference_tpot_ms``."""
    from .perf import interference_tpot_ms
    sc = Scenario()
    rows = []
    for label, kind, n in _CURVES:
        for b in batches:
            rows.append({"batch": int(b), "curve": label, "source": "simulated",
                         "tpot_ms": interference_tpot_ms(sc, int(b), kind=kind, n_prefills=n, prefill_tokens=1024,
                                                         cached_tokens=2048, decode_ctx=2048 + 4,
                                                         output_tokens=64, params=params)})
    data = pd.DataFrame(rows)
    mdir = measured_dir_or_none(measured_dir)
    notes = ["Measured CSV: an older configuration of the same benchmark (decodes add 32 tokens, the append "
             "adds 128 tokens to the 2,048 context; client-measured through the API server), which gave "
             "+117 % / +9 % at batch 200, not the paper's +48 % / +2 %: shown for shape only, not judged."]
    if mdir is not None and (mdir / "interference_core.csv").exists():
        m = pd.read_csv(mdir / "interference_core.csv")
        m = m[m["scenario"].isin(list(_MEASURED_SCEN))]
        data = pd.concat([data, pd.DataFrame({
            "batch": m["decode_count"].astype(int), "curve": m["scenario"].map(dict(_MEASURED_SCEN)),
            "source": "measured (older config)", "tpot_ms": m["decode_avg_tpot_ms_mean"].astype(float)})],
            ignore_index=True)
    data = data.dropna(subset=["tpot_ms"])
    base = data[data["curve"] == "decode only"].set_index(["source", "batch"])["tpot_ms"]
    key = list(zip(data["source"], data["batch"]))
    data["slowdown_pct"] = [100.0 * (t / base.get(k, math.nan) - 1.0) if base.get(k, 0) else math.nan
                            for t, k in zip(data["tpot_ms"], key)]

    def at(curve: str, source: str = "simulated", b: int = 200) -> pd.Series:
        d = data[(data["curve"] == curve) & (data["source"] == source) & (data["batch"] == b)]
        return d.iloc[0] if len(d) else pd.Series({"tpot_ms": math.nan, "slowdown_pct": math.nan})

    one, four = Tol("abs", 5.0), Tol("abs", 10.0)
    t = [_row("decode-only TPOT at batch 200", "ms", at("decode only")["tpot_ms"],
              PUB_INTERFERENCE["decode_only_ms_b200"], Tol("rel", 0.30)),
         _row("+1 full prefill: TPOT slowdown at batch 200", "%", at("+1 full prefill")["slowdown_pct"],
              PUB_INTERFERENCE[("full", 1)], one),
         _row("+1 append-prefill: TPOT slowdown at batch 200", "%", at("+1 append-prefill")["slowdown_pct"],
              PUB_INTERFERENCE[("append", 1)], one),
         _row("+4 full prefills: TPOT slowdown at batch 200", "%", at("+4 full prefills")["slowdown_pct"],
              PUB_INTERFERENCE[("full", 4)], four),
         _row("+4 append-prefills: TPOT slowdown at batch 200", "%", at("+4 append-prefills")["slowdown_pct"],
              PUB_INTERFERENCE[("append", 4)], four)]
    if mdir is not None and (data["source"] == "measured (older config)").any():
        src = "measured (older config)"
        for curve, label in (("decode only", "decode-only TPOT at batch 200"),
                             ("+1 full prefill", "+1 full prefill: TPOT slowdown at batch 200"),
                             ("+1 append-prefill", "+1 append-prefill: TPOT slowdown at batch 200")):
            col = "tpot_ms" if curve == "decode only" else "slowdown_pct"
            sim_col = at(curve)[col]
            t.append(_row(label, "ms" if col == "tpot_ms" else "%", sim_col, at(curve, src)[col], None, src))
    table = _table(t)
    full1, app1, full4, app4 = (table.loc[i, "simulated"] for i in (1, 2, 3, 4))
    ok1 = bool(table.loc[1, "within"]) and bool(table.loc[2, "within"])
    ok4 = bool(table.loc[3, "within"]) and bool(table.loc[4, "within"])
    verdict = (f"1 prefill at batch 200: full {full1:+.0f} % vs +48 %, append {app1:+.0f} % vs +2 % "
               f"({'within' if ok1 else 'outside'} ±5 pp); 4 prefills: {full4:+.0f} % / {app4:+.0f} % vs "
               f"+57 % / +21 % ({'within' if ok4 else 'outside'} ±10 pp); decode-only "
               f"{table.loc[0, 'simulated']:.1f} ms vs ≈28 ms "
               f"({'within' if table.loc[0, 'within'] else 'outside'} ±30 %).")
    if not ok4:
        verdict += (" The model charges a full prefill's interference once per iteration (saturating at 1,024 "
                    "tokens) and an append's per token, two parameters for four targets.")
    if table.loc[0, "within"] is False:
        verdict += (" Decode-only is too slow because the simulator charges every decode its own KV read and "
                    "per-sequence step cost, while the benchmark's decodes share one cached 2,048-token prefix "
                    "(which vLLM's cascade attention reads once); the older measured configuration sits in between "
                    f"({at('decode only', 'measured (older config)')['tpot_ms']:.1f} ms)."
                    if (data["source"] != "simulated").any() else
                    " Decode-only is too slow because the simulator charges every decode its own KV read and "
                    "per-sequence step cost, while the benchmark's decodes share one cached 2,048-token prefix "
                    "(which vLLM's cascade attention reads once).")
    tol = ("slowdowns at batch 200: ±5 pp with one prefill (the paper's headline claim), ±10 pp with four "
           "(a two-parameter interference model fitted to four targets); decode-only TPOT ±30 % (a figure reading).")
    return Item("interference", "Fig.2 / Fig.7: prefill-decode interference", table, verdict, tol, data,
                tuple(notes))


# ---- 2. Table 1 ----------------------------------------------------------------------------------------------

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
           rehash_frac: float = HASH_QUIRK_FRAC) -> Item:
    """Table 1: Turn-2 TTFT change of x=1 (pD) over x=0 (D, policy pd) at the same P:D ratio, per QPS band:
    the ratio of mean Turn-2 TTFT summed over the 18 synthetic workloads and the band's QPS points (the
    aggregation that reproduces the paper best, ppd-paper.md 7.3), in the benchmark setting."""
    df = _grid(table1_scenarios(rehash_frac=rehash_frac), progress)
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
            rows.append(_row(f"{d}→{p} {band} (QPS {lo:g}–{hi:g})", "%", ch, PUB_TABLE1[d][i], tol))
            if measured:
                rows.append(_row(f"{d}→{p} {band} (QPS {lo:g}–{hi:g})", "%", ch, measured.get((d, band), math.nan),
                                 None, "measured (repo CSV, same aggregation)"))
    table = _table(rows)
    paper = table[table["source"] == "paper"]
    sim = {q: paper.loc[paper["quantity"].str.startswith(q), "simulated"].tolist() for q, _ in TABLE1_PAIRS}
    n_ok, n = _judged(paper.to_dict("records"))
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


# ---- 3. Fig.5: bandwidth -------------------------------------------------------------------------------------

def fig5_scenarios(conversations: int = 500) -> list[Scenario]:
    base = Scenario(layout="1P_3D", workload="wildchat", qps=1.0, conversations=conversations,
                    link_sharing="independent")
    return [base.with_(bandwidth_gbps=bw, policy=pol) for bw in FIG5_BW for pol in ("pd", "dynamic")]


def fig5(conversations: int = 500, progress: Progress | None = None) -> Item:
    """Fig.5: 1P_3D at QPS 1 on WildChat-like traffic (500 conversations), PD (policy pd) vs PPD (policy
    dynamic) as the P->D link drops from 150 to 10 GB/s. Transfers are independent (the paper's Eq.2 adds
    a per-transfer delay; it models no shared link)."""
    scs = fig5_scenarios(conversations)
    df = _grid(scs, progress)
    data = []
    for sc, (_, r) in zip(scs, df.iterrows()):
        system = "PD" if sc.policy == "pd" else "PPD"
        rec = {"bandwidth_gbps": sc.bandwidth_gbps, "system": system,
               "ttft_ms": _num(r["turn2plus.ttft_ms.mean"]), "tpot_ms": _num(r["turn2plus.tpot_ms.mean"]),
               "e2e_ms": _num(r["turn2plus.e2e_ms.mean"]), "local_share": _num(r["local_share"])}
        for m in ("ttft", "tpot", "e2e"):
            rec[f"published_{m}_ms"] = PUB_FIG5.get((system, m), {}).get(sc.bandwidth_gbps, math.nan)
        data.append(rec)
    data = pd.DataFrame(data)

    def v(system: str, bw: float, m: str) -> float:
        d = data[(data["system"] == system) & (data["bandwidth_gbps"] == bw)]
        return float(d.iloc[0][f"{m}_ms"]) if len(d) else math.nan

    hi, lo = FIG5_BW[0], FIG5_BW[-1]
    pd_rise = v("PD", lo, "ttft") - v("PD", hi, "ttft")
    ppd_move = _pct(v("PPD", lo, "ttft"), v("PPD", hi, "ttft"))
    red_hi = -_pct(v("PPD", hi, "ttft"), v("PD", hi, "ttft"))
    red_lo = -_pct(v("PPD", lo, "ttft"), v("PD", lo, "ttft"))
    P = PUB_FIG5
    rows = [
        _row("PD Turn 2+ TTFT rise, 150 → 10 GB/s", "ms", pd_rise, P[("PD", "ttft")][lo] - P[("PD", "ttft")][hi],
             Tol("range", 10.0, 45.0)),
        _row("PPD Turn 2+ TTFT change, 150 → 10 GB/s", "%", ppd_move, 0.0, Tol("abs", 5.0)),
        _row("TTFT reduction PPD vs PD at 150 GB/s", "%", red_hi, P["reduction"][hi], Tol("abs", 10.0)),
        _row("TTFT reduction PPD vs PD at 10 GB/s", "%", red_lo, P["reduction"][lo], Tol("abs", 10.0)),
        _row("PD Turn 2+ TTFT at 150 GB/s", "ms", v("PD", hi, "ttft"), P[("PD", "ttft")][hi], Tol("rel", 0.25)),
        _row("PPD Turn 2+ TTFT at 150 GB/s", "ms", v("PPD", hi, "ttft"), P[("PPD", "ttft")][hi], Tol("rel", 0.25)),
        _row("PD TPOT at 150 GB/s", "ms", v("PD", hi, "tpot"), P[("PD", "tpot")][hi], Tol("rel", 0.15)),
        _row("PD TPOT change, 150 → 10 GB/s", "%", _pct(v("PD", lo, "tpot"), v("PD", hi, "tpot")),
             _pct(P[("PD", "tpot")][lo], P[("PD", "tpot")][hi]), Tol("range", 0.0, 10.0)),
        _row("PD Turn 2+ E2E at 150 GB/s", "ms", v("PD", hi, "e2e"), P[("PD", "e2e")][hi], Tol("rel", 0.25)),
        _row("PD E2E change, 150 → 10 GB/s", "%", _pct(v("PD", lo, "e2e"), v("PD", hi, "e2e")),
             _pct(P[("PD", "e2e")][lo], P[("PD", "e2e")][hi]), Tol("range", 0.0, 10.0)),
        _row("PPD E2E change, 150 → 10 GB/s", "%", _pct(v("PPD", lo, "e2e"), v("PPD", hi, "e2e")),
             P["ppd_e2e_change_pct"], Tol("abs", 3.0)),
    ]
    n_ok, n = _judged(rows)
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
    return Item("fig5", "Fig.5: PD vs PPD against KV-transfer bandwidth", _table(rows), verdict, tol, data, notes)


def _handoff_ms() -> float:
    """The calibrated fixed part of the PD hand-off plus one HTTP hop (for the Fig.5 explanation)."""
    from .perf import default_params
    p = default_params()
    return p.pd_handoff_ms + p.api_ms


# ---- 4. Fig.6: weights ---------------------------------------------------------------------------------------

def fig6_scenarios(workload: str = FIG6_WORKLOAD, qps: Sequence[float] = FIG6_QPS,
                   conversations: int = 500) -> list[tuple[float, str, float, Scenario]]:
    out = []
    for q in qps:
        base = Scenario(layout="1P_3D", workload=workload, qps=q, conversations=conversations, w_ttft=1.0)
        out.append((q, "static PD (x=0)", math.nan, base.with_(policy="pd")))
        for w in FIG6_W_TPOT:
            out.append((q, f"w_tpot={w:g}", w, base.with_(policy="dynamic", w_tpot=w)))
        out.append((q, "static local (x=1)", math.nan, base.with_(policy="ppd")))
    return out


def fig6(workload: str = FIG6_WORKLOAD, qps: Sequence[float] = FIG6_QPS, conversations: int = 500,
         progress: Progress | None = None) -> Item:
    """Fig.6: 1P_3D on a prefill-heavy workload at QPS 8 and 16, policy dynamic with w_ttft=1 and
    w_tpot from 0 to 6, plus the static ends: local share and the Turn 2+ TTFT-TPOT frontier."""
    pts = fig6_scenarios(workload, qps, conversations)
    df = _grid([p[3] for p in pts], progress)
    data = []
    for (q, setting, w, sc), (_, r) in zip(pts, df.iterrows()):
        data.append({"qps": q, "setting": setting, "w_tpot": w, "policy": sc.policy,
                     "local_share": _num(r["local_share"]), "ttft_ms": _num(r["turn2plus.ttft_ms.mean"]),
                     "tpot_ms": _num(r["turn2plus.tpot_ms.mean"])})
    data = pd.DataFrame(data)
    rows, mono_all = [], True
    for q in qps:
        d = data[data["qps"] == q]
        x0 = d[d["policy"] == "pd"].iloc[0]
        x1 = d[d["policy"] == "ppd"].iloc[0]
        data.loc[d.index, "ttft_change_pct"] = [_pct(t, x0["ttft_ms"]) for t in d["ttft_ms"]]
        data.loc[d.index, "tpot_change_pct"] = [_pct(t, x0["tpot_ms"]) for t in d["tpot_ms"]]
        dyn = d[d["policy"] == "dynamic"].sort_values("w_tpot")
        shares = dyn["local_share"].tolist()
        mono = all(b <= a + 1e-9 for a, b in zip(shares, shares[1:]))
        mono_all &= mono
        rows.append(_row(f"QPS {q:g}: local share, static PD", "%", 100 * x0["local_share"], PUB_FIG6_LOCAL["pd"],
                         Tol("abs", 0.5)))
        for w in (6.0, 3.0, 1.0):
            s = dyn[dyn["w_tpot"] == w]["local_share"]
            share = 100 * float(s.iloc[0]) if len(s) else math.nan
            rows.append(_row(f"QPS {q:g}: local share, w_tpot={w:g}", "%", share, PUB_FIG6_LOCAL[w], Tol("abs", 20.0)))
        rows.append(_row(f"QPS {q:g}: local share non-increasing in w_tpot", "bool", float(mono), 1.0,
                         Tol("holds")))
        pub_t, pub_p = PUB_FIG6_X1[q] if q in PUB_FIG6_X1 else (math.nan, math.nan)
        rows.append(_row(f"QPS {q:g}: x=1 end TTFT change", "%", _pct(x1["ttft_ms"], x0["ttft_ms"]), pub_t,
                         Tol("range", -100.0, -80.0)))
        rows.append(_row(f"QPS {q:g}: x=1 end TPOT change", "%", _pct(x1["tpot_ms"], x0["tpot_ms"]), pub_p,
                         Tol("abs", 7.0)))
    table = _table(rows)
    n_ok, n = _judged(rows)
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


# ---- 5. Table 2 ----------------------------------------------------------------------------------------------

def table2_scenarios(quick: bool = False, rehash_frac: float = HASH_QUIRK_FRAC) -> list[Scenario]:
    axes = paper_grid_axes()
    if quick:
        axes = {"layout": QUICK_LAYOUTS, "workload": QUICK_WORKLOADS, "qps": QUICK_QPS}
    return expand_grid({**dict(BENCH), "rehash_frac": str(rehash_frac)}, axes)


def category(layout: str) -> str:
    cat = LAYOUT_CATEGORY.get(layout, "Hybrid")
    return {"Replica": "Replica", "PD (x=0)": "x=0", "Partial (0<x<1)": "0<x<1",
            "Full AP-to-D (x=1)": "x=1"}.get(cat, "Hybrid")


def _median_ratio(frame: pd.DataFrame, index: list[str], columns: str, values: str, num: str, den: str,
                  q: float = 0.5) -> float:
    """Quantile ``q`` (the median by default) over cells of ``num`` / ``den``."""
    piv = frame.pivot_table(index=index, columns=columns, values=values)
    if num not in piv or den not in piv:
        return math.nan
    r = (piv[num] / piv[den]).dropna()
    return float(r.quantile(q)) if len(r) else math.nan


X1_LAYOUTS = ("1P_3pD", "2P_2pD", "3P_1pD")


def _x1_beats_replica(frame: pd.DataFrame, columns: str, values: str) -> float:
    """% of (workload, QPS) cells where the best x=1 layout has a lower Turn-2 mean TTFT than 4R."""
    piv = frame.pivot_table(index=["workload", "qps"], columns=columns, values=values)
    have = [c for c in X1_LAYOUTS if c in piv]
    if "4R" not in piv or not have:
        return math.nan
    j = pd.concat([piv[have].min(axis=1).rename("x1"), piv["4R"].rename("r")], axis=1).dropna()
    return 100.0 * float((j["x1"] < j["r"]).mean()) if len(j) else math.nan


def _measured_table2_ratios(mdir: Path | None) -> dict[str, float]:
    """Measured median ratios behind the Table 2 winners (comprehensive.csv): all-turn TPOT 1P_3D/4R,
    throughput 2P_2pD/4R and Turn-2 TTFT 2P_2pD/4R over the (workload, QPS) points both layouts have."""
    if mdir is None or not (mdir / "comprehensive.csv").exists():
        return {}
    c = pd.read_csv(mdir / "comprehensive.csv")
    c = c[(c["success_rate"] >= 95) & c["failure_class"].fillna("").isin(list(VALID_FAILURE))]
    avg, t2 = c[c["turn"] == "average"], c[c["turn"] == "turn2"]
    idx = ["workload", "qps"]
    return {"tpot": _median_ratio(avg, idx, "config", "avg_tpot_ms", "1P_3D", "4R"),
            "tput": _median_ratio(avg, idx, "config", "throughput_tok_s", "2P_2pD", "4R"),
            "ttft": _median_ratio(t2, idx, "config", "avg_ttft_ms", "2P_2pD", "4R"),
            "ttft_p10": _median_ratio(t2, idx, "config", "avg_ttft_ms", "2P_2pD", "4R", q=0.1),
            "x1_beats_r": _x1_beats_replica(t2, "config", "avg_ttft_ms")}


def table2(quick: bool = False, progress: Progress | None = None, rehash_frac: float = HASH_QUIRK_FRAC,
           measured_dir: str | Path | None = None) -> Item:
    """Table 2: per (workload, QPS) cell, the layout with the lowest Turn-2 mean TTFT, the lowest all-turn
    mean TPOT and the highest throughput among points with success >= 95 %, counted per category; and the
    share of cells whose TTFT-best and TPOT-best layouts differ."""
    df = _grid(table2_scenarios(quick, rehash_frac), progress)
    ok = df[df["success_rate"] >= 0.95]
    metrics = (("TTFT", "turn2plus.ttft_ms.mean", True), ("TPOT", "all.tpot_ms.mean", True),
               ("Throughput", "throughput.tokens_per_s", False))
    cells = []
    for (wl, q), g in ok.groupby(["workload", "qps"], sort=True):
        rec = {"workload": wl, "qps": q, "layouts": len(g)}
        for name, col, low in metrics:
            s = g.set_index("layout")[col].dropna()
            best = (s.idxmin() if low else s.idxmax()) if len(s) else None
            rec[f"{name}_best"] = best
            rec[f"{name}_category"] = category(best) if best else None
        cells.append(rec)
    data = pd.DataFrame(cells)
    n_cells = len(df.groupby(["workload", "qps"]))
    rows = []
    for name, _, _ in metrics:
        counts = data[f"{name}_category"].value_counts() if len(data) else pd.Series(dtype=int)
        for cat in CATEGORIES:
            if quick and cat == "Hybrid":
                continue
            share = 100.0 * counts.get(cat, 0) / n_cells if n_cells else math.nan
            rows.append(_row(f"{name} wins: {cat}", "%", share, PUB_TABLE2[name][cat], Tol("abs", 15.0)))
    differ = 100.0 * float((data["TTFT_best"] != data["TPOT_best"]).mean()) if len(data) else math.nan
    rows.append(_row("cells where TTFT-best ≠ TPOT-best layout", "%", differ, PUB_TTFT_TPOT_DIFFER,
                     Tol("range", 60.0, 100.0)))
    ttft_counts = data["TTFT_category"].value_counts() if len(data) else pd.Series(dtype=int)
    top = str(ttft_counts.idxmax()) if len(ttft_counts) else "none"
    rows.append(_row("Replica wins the most TTFT cells", "bool", float(top == "Replica"), 1.0,
                     Tol("holds")))
    idx = ["workload", "qps"]
    sim_tpot = _median_ratio(ok, idx, "layout", "all.tpot_ms.mean", "1P_3D", "4R")
    sim_tput = _median_ratio(ok, idx, "layout", "throughput.tokens_per_s", "2P_2pD", "4R")
    sim_ttft = _median_ratio(ok, idx, "layout", "turn2plus.ttft_ms.mean", "2P_2pD", "4R")
    sim_ttft_p10 = _median_ratio(ok, idx, "layout", "turn2plus.ttft_ms.mean", "2P_2pD", "4R", q=0.1)
    sim_beats = _x1_beats_replica(ok, "layout", "turn2plus.ttft_ms.mean")
    meas = _measured_table2_ratios(measured_dir_or_none(measured_dir))
    if meas:
        src = "measured (repo CSV)"
        rows.append(_row("cells where the best x=1 layout beats 4R on Turn-2 TTFT", "%", sim_beats,
                         meas["x1_beats_r"], None, src))
        rows.append(_row("median Turn-2 TTFT ratio 2P_2pD / 4R", "ratio", sim_ttft, meas["ttft"], None, src))
        rows.append(_row("10th percentile Turn-2 TTFT ratio 2P_2pD / 4R", "ratio", sim_ttft_p10, meas["ttft_p10"],
                         None, src))
        rows.append(_row("median all-turn TPOT ratio 1P_3D / 4R", "ratio", sim_tpot, meas["tpot"], None, src))
        rows.append(_row("median throughput ratio 2P_2pD / 4R", "ratio", sim_tput, meas["tput"], None, src))
    table = _table(rows)
    n_ok, n = _judged(rows)

    def shares(name: str) -> str:
        sub = table[table["quantity"].str.startswith(f"{name} wins")]
        return " / ".join(f"{v:.0f}" for v in sub["simulated"])

    shown = [c for c in CATEGORIES if not (quick and c == "Hybrid")]

    def paper(name: str) -> str:
        return "/".join(f"{PUB_TABLE2[name][c]:.0f}" for c in shown)

    verdict = (f"{'Quick grid' if quick else 'Full grid'} ({n_cells} cells): {n_ok}/{n} within tolerance. "
               f"% of cells won ({'/'.join(shown)}): TTFT {shares('TTFT')} (paper {paper('TTFT')}), TPOT "
               f"{shares('TPOT')} ({paper('TPOT')}), throughput {shares('Throughput')} ({paper('Throughput')}); "
               f"TTFT-best ≠ TPOT-best in {differ:.0f} % (paper 92.2 %); most TTFT wins: {top}.")
    off = {r["quantity"].split(" wins")[0] for r in rows if r["within"] is False and " wins: " in r["quantity"]}
    if "TTFT" in off:
        if meas:
            verdict += (f" TTFT: x=1 is ~{100 * (sim_ttft - 1):.0f} % slower than 4R at the median in the simulator "
                        f"and ~{100 * (meas['ttft'] - 1):.0f} % in the measurements alike, but the measured ratio "
                        f"spreads wider (10th percentile {meas['ttft_p10']:.2f} vs {sim_ttft_p10:.2f}), so the best "
                        f"x=1 layout beats 4R in {meas['x1_beats_r']:.0f} % of measured cells and {sim_beats:.0f} % "
                        "of simulated ones (measured low-QPS points hold 1–20 conversations).")
        else:
            verdict += (f" TTFT: the median Turn-2 TTFT ratio 2P_2pD/4R is {sim_ttft:.2f} and the best x=1 layout "
                        f"beats 4R in {sim_beats:.0f} % of cells.")
    if off & {"TPOT", "Throughput"}:
        m_txt = (f" (measured {meas['tpot']:.3f} and {meas['tput']:.3f})" if meas else "")
        verdict += (" TPOT and throughput winners hinge on differences of a few %: the median all-turn TPOT ratio "
                    f"1P_3D/4R is {sim_tpot:.3f} and the throughput ratio 2P_2pD/4R {sim_tput:.3f} in the "
                    f"simulator{m_txt}, so replicas take cells the measured disaggregated layouts won.")
    tol = ("category shares ±15 pp (a winner table flips on ~1 % differences); TTFT-best ≠ TPOT-best in ≥ 60 % of "
           "cells; Replica must win the most TTFT cells.")
    notes = ["Success = share of requests finished within the 120 s timeout (the paper's 'success rate').",
             "Benchmark setting as measured, including the proxy's routing quirk (rehash_frac=2/9)."]
    if quick:
        notes.append(f"Quick grid: the 10 core layouts × {len(QUICK_WORKLOADS)} workloads × QPS "
                     f"{', '.join(f'{q:g}' for q in QUICK_QPS)}; hybrids are absent, so shares are among core "
                     "layouts only (the paper's 180-cell denominator includes the hybrids' wins).")
    return Item("table2", "Table 2: no static optimum", table, verdict, tol, data, tuple(notes))


# ---- 6. headline ---------------------------------------------------------------------------------------------

def headline_scenarios(conversations: int = 500,
                       qps: Sequence[float] = HEADLINE_QPS) -> list[tuple[float, str, Scenario]]:
    out = []
    for q in qps:
        base = Scenario(workload="sharegpt", qps=q, conversations=conversations)
        out += [(q, "2P_2D (x=0)", base.with_(layout="2P_2D", policy="pd")),
                (q, "2P_2pD (x=1)", base.with_(layout="2P_2pD", policy="ppd")),
                (q, "2P_2D dynamic (PPD)", base.with_(layout="2P_2D", policy="dynamic"))]
    return out


def _measured_headline(mdir: Path | None) -> dict:
    if mdir is None or not (mdir / "sharegpt.csv").exists():
        return {}
    s = pd.read_csv(mdir / "sharegpt.csv")
    s = s[(s["dataset"] == "sharegpt") & (s["turn_group"] == "turn2plus")]
    out = {}
    for q in HEADLINE_QPS:
        x = s[s["qps"] == q]

        def pick(config: str, mode: str, weights: str) -> pd.Series | None:
            r = x[(x["config"] == config) & (x["mode"] == mode) & (x["weights"] == weights)]
            return r.iloc[0] if len(r) else None
        out[q] = {"2P_2D (x=0)": pick("2P_2D", "baseline", "baseline"),
                  "2P_2pD (x=1)": pick("2P_2pD", "baseline", "baseline"),
                  "2P_2D dynamic (PPD)": pick("2P_2D", "ppd_dynamic", "w1.0_1.0")}
    return out


def headline(conversations: int = 500, qps: Sequence[float] = HEADLINE_QPS,
             measured_dir: str | Path | None = None, progress: Progress | None = None) -> Item:
    """The headline: on ShareGPT-like traffic (the default workload, 500 conversations, client cap 50),
    2P_2D at x=0 against 2P_2pD (x=1) and against 2P_2D with the online Eq.1 policy: Turn 2+ TTFT
    reduction and TPOT change."""
    pts = headline_scenarios(conversations, qps)
    df = _grid([p[2] for p in pts], progress)
    data = pd.DataFrame([{"qps": q, "system": name, "layout": sc.layout, "policy": sc.policy,
                          "ttft_ms": _num(r["turn2plus.ttft_ms.mean"]), "tpot_ms": _num(r["turn2plus.tpot_ms.mean"]),
                          "e2e_ms": _num(r["turn2plus.e2e_ms.mean"]), "local_share": _num(r["local_share"])}
                         for (q, name, sc), (_, r) in zip(pts, df.iterrows())])
    meas = _measured_headline(measured_dir_or_none(measured_dir))
    rows = []
    for q in qps:
        d = data[data["qps"] == q].set_index("system")
        base = d.loc["2P_2D (x=0)"]
        m = meas.get(q, {})
        mb = m.get("2P_2D (x=0)")
        for name in ("2P_2pD (x=1)", "2P_2D dynamic (PPD)"):
            red = -_pct(d.loc[name, "ttft_ms"], base["ttft_ms"])
            tp = _pct(d.loc[name, "tpot_ms"], base["tpot_ms"])
            rows.append(_row(f"QPS {q:g}: Turn 2+ TTFT reduction, {name} vs x=0", "%", red, PUB_HEADLINE_PCT,
                             Tol("range", 55.0, 80.0)))
            rows.append(_row(f"QPS {q:g}: Turn 2+ TPOT change, {name} vs x=0", "%", tp, 0.0, Tol("abs", 10.0)))
            mr = m.get(name)
            if mb is not None and mr is not None:
                rows.append(_row(f"QPS {q:g}: Turn 2+ TTFT reduction, {name} vs x=0", "%", red,
                                 -_pct(mr["avg_ttft_ms"], mb["avg_ttft_ms"]), None, "measured (sharegpt.csv)"))
                rows.append(_row(f"QPS {q:g}: Turn 2+ TPOT change, {name} vs x=0", "%", tp,
                                 _pct(mr["avg_tpot_ms"], mb["avg_tpot_ms"]), None, "measured (sharegpt.csv)"))
        if mb is not None:
            for name in ("2P_2D (x=0)", "2P_2pD (x=1)", "2P_2D dynamic (PPD)"):
                mr = m.get(name)
                if mr is not None:
                    rows.append(_row(f"QPS {q:g}: {name} Turn 2+ TTFT", "ms", d.loc[name, "ttft_ms"],
                                     mr["avg_ttft_ms"], None, "measured (sharegpt.csv)"))
    table = _table(rows)
    n_ok, n = _judged(rows)
    d = data.set_index(["qps", "system"])
    parts = []
    for q in qps:
        b = d.loc[(q, "2P_2D (x=0)")]
        x1 = d.loc[(q, "2P_2pD (x=1)")]
        dy = d.loc[(q, "2P_2D dynamic (PPD)")]
        parts.append(f"QPS {q:g}: {b['ttft_ms']:.0f} → {x1['ttft_ms']:.0f} ms "
                     f"(x=1, {-_pct(x1['ttft_ms'], b['ttft_ms']):.0f} %) "
                     f"/ {dy['ttft_ms']:.0f} ms (dynamic, {-_pct(dy['ttft_ms'], b['ttft_ms']):.0f} %), TPOT "
                     f"{_pct(x1['tpot_ms'], b['tpot_ms']):+.1f} % / {_pct(dy['tpot_ms'], b['tpot_ms']):+.1f} %")
    verdict = (f"{n_ok}/{n} within tolerance. " + "; ".join(parts)
               + " (paper ~68 %; measured ShareGPT 2P_2D −66/−67 %, TPOT −1/−6 %).")
    tol = "TTFT reduction 55–80 % (paper ~68 %, measured 66–67 %); TPOT change within ±10 % (\"competitive\")."
    return Item("headline", "Headline: ~68 % lower Turn 2+ TTFT on ShareGPT-like traffic", table, verdict, tol,
                data.reset_index(drop=True), (f"ShareGPT-like synthetic traces, {conversations} conversations, "
                                              "client cap 50, timeout 180 s (the ShareGPT benchmark's setting).",))


# ---- 7. engines ----------------------------------------------------------------------------------------------

def engine_scenarios(layouts: Sequence[str] = ENGINE_LAYOUTS, conversations: int = 500) -> list[tuple[str, Scenario]]:
    out = []
    for lay in layouts:
        for wl in ENGINE_WORKLOADS:
            for q in ENGINE_QPS:
                if wl in SYNTHETIC:
                    # the benchmark window without the routing quirk: every policy decides every Turn 2
                    base = _bench(layout=lay, workload=wl, qps=q, rehash_frac=0.0)
                    label = f"{lay} {wl} QPS {q:g} (benchmark window)"
                else:
                    base = Scenario(layout=lay, workload=wl, qps=q, conversations=conversations)
                    label = f"{lay} {wl} QPS {q:g}"
                for pol in ("pd", "ppd", "dynamic", "dynamic-table"):
                    out.append((label, base.with_(policy=pol)))
    return out


def engines(progress: Progress | None = None, measured_dir: str | Path | None = None,
            layouts: Sequence[str] = ENGINE_LAYOUTS, conversations: int = 500) -> Item:
    """The paper's offline lookup table (policy ``dynamic-table``: Eq.1 signs from the simulator's own x=0 /
    x=1 runs of the 180 cells, nearest cell online) against the online Eq.1 estimate (policy ``dynamic``),
    with the static ends for reference: local share and Turn 2+ TTFT/TPOT."""
    from .table import build_table, cell_scenarios, table_key
    tables = {}
    keys = [table_key(Scenario(layout=lay)) for lay in layouts]
    per_table = 2 * len(cell_scenarios(keys[0]))
    pts = engine_scenarios(layouts, conversations)
    total = per_table * len(keys) + len(pts)

    def part(offset: int) -> Progress | None:
        return None if progress is None else (lambda done, _n: progress(offset + done, total))

    # the tables' x=0/x=1 runs first, in parallel here (disk-cached), so the dynamic-table runs find them
    for i, (lay, k) in enumerate(zip(layouts, keys)):
        tables[lay] = build_table(k, progress=part(i * per_table))
    df = run_grid([p[1] for p in pts], progress=part(per_table * len(keys)))
    data = pd.DataFrame([{"case": label, "layout": sc.layout, "workload": sc.workload, "qps": sc.qps,
                          "policy": sc.policy, "local_share": _num(r["local_share"]),
                          "ttft_ms": _num(r["turn2plus.ttft_ms.mean"]), "tpot_ms": _num(r["turn2plus.tpot_ms.mean"])}
                         for (label, sc), (_, r) in zip(pts, df.iterrows())])
    rows = []
    mdir = measured_dir_or_none(measured_dir)
    measured_cells = None
    if mdir is not None and (mdir / "ppd_lookup_table.csv").exists():
        lt = pd.read_csv(mdir / "ppd_lookup_table.csv")
        lt = lt[(lt["base_config"] == "2P_2D") & (lt["w_ttft"] == 1.0) & (lt["w_tpot"] == 1.0)]
        measured_cells = int(lt["use_ppd"].astype(str).str.lower().eq("true").sum())
    for lay in layouts:
        n_local = tables[lay].local_cells()
        rows.append(_row(f"{lay}: table cells choosing local (of {len(tables[lay].cells)}), w=(1,1)", "cells",
                         n_local, PUB_TABLE_LOCAL_CELLS.get(lay, math.nan),
                         Tol("abs", 18.0) if lay in PUB_TABLE_LOCAL_CELLS else None, "reference code on the repo data"))
        if lay == "2P_2D" and measured_cells is not None:
            rows.append(_row(f"{lay}: table cells choosing local (of {len(tables[lay].cells)}), w=(1,1)", "cells",
                             n_local, measured_cells, None, "measured (ppd_lookup_table.csv)"))
    for label in dict.fromkeys(data["case"]):
        d = data[data["case"] == label].set_index("policy")
        rows.append(_row(f"{label}: local share, table − online", "pp",
                         100 * (d.loc["dynamic-table", "local_share"] - d.loc["dynamic", "local_share"]), 0.0,
                         Tol("abs", 20.0), "table vs online"))
        rows.append(_row(f"{label}: Turn 2+ TTFT, table vs online", "%",
                         _pct(d.loc["dynamic-table", "ttft_ms"], d.loc["dynamic", "ttft_ms"]), 0.0,
                         Tol("abs", 20.0), "table vs online"))
    sg = data[(data["layout"] == "2P_2D") & (data["workload"] == "sharegpt")]
    for q, g in sg.groupby("qps"):
        g = g.set_index("policy")
        rows.append(_row(f"2P_2D sharegpt QPS {q:g}: Turn 2+ TTFT, table engine vs static x=1", "%",
                         _pct(g.loc["dynamic-table", "ttft_ms"], g.loc["ppd", "ttft_ms"]), 0.0, Tol("abs", 10.0),
                         "measured: PPD-dynamic ≈ static pD (41.8 vs 40.7 ms)"))
    table = _table(rows)
    n_ok, n = _judged(rows)
    agree = table[table["quantity"].str.contains("local share, table")]
    verdict = (f"{n_ok}/{n} within tolerance. Tables choose local in "
               + ", ".join(f"{lay} {tables[lay].local_cells()}/{len(tables[lay].cells)}" for lay in layouts)
               + " cells (reference code on the repo data: 178/180); table and online local shares differ by at "
                 f"most {agree['simulated'].abs().max():.0f} pp across {len(agree)} scenarios.")
    tol = ("table local cells within ±18 of the reference code's 178/180 (10 % of cells); per scenario the two "
           "engines' local shares within ±20 pp and Turn 2+ TTFT within ±20 % of each other; on ShareGPT the table "
           "engine's TTFT within ±10 % of static x=1 (as measured: 41.8 vs 40.7 ms).")
    notes = ("The table is built from the simulator's own x=0 and x=1 runs of the 180 cells (seed 0, benchmark "
             "setting) as the paper did from its measurements; the reference code's 512-token bypass is not applied.",
             "The synthetic rows run in the benchmark window (seed 42), close to the table's own cells; the ShareGPT "
             "rows are off-grid and mapped to the nearest cell.")
    return Item("engines", "Decision engines: offline table vs online Eq.1", table, verdict, tol, data, notes)


# ---- registry and CLI ----------------------------------------------------------------------------------------

ITEMS = ("interference", "table1", "fig5", "fig6", "table2", "headline", "engines")
GRID_ITEMS = ("table1", "table2", "engines")


def run_item(name: str, *, quick: bool = False, measured_dir: str | Path | None = None,
             progress: Progress | None = None) -> Item:
    """Run one item by name with the options that apply to it."""
    if name == "interference":
        return interference(measured_dir)
    if name == "table1":
        return table1(progress, measured_dir)
    if name == "fig5":
        return fig5(progress=progress)
    if name == "fig6":
        return fig6(progress=progress)
    if name == "table2":
        return table2(quick, progress, measured_dir=measured_dir)
    if name == "headline":
        return headline(measured_dir=measured_dir, progress=progress)
    if name == "engines":
        return engines(progress, measured_dir)
    raise PPDError(f"--only: {name[:40]!r} is not an item; choose from {', '.join(ITEMS)}")


def parse_only(text: str | None) -> tuple[str, ...]:
    if not text:
        return ITEMS
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    bad = [n for n in names if n not in ITEMS]
    if bad or not names:
        raise PPDError(f"--only: {(bad or [text])[0][:40]!r} is not an item; choose from {', '.join(ITEMS)}")
    return names


def _fmt_cell(v: Any, unit: str = "") -> str:
    if v is None or _isnan(v):
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "NO"
    if isinstance(v, (int, float, np.floating)):
        if unit == "bool":
            return "yes" if v >= 0.5 else "no"
        return f"{v:,.2f}" if abs(v) < 100 else f"{v:,.1f}"
    return str(v)


def format_item(item: Item) -> str:
    t = item.table
    view = pd.DataFrame({
        "quantity": t["quantity"], "unit": t["unit"],
        "simulated": [_fmt_cell(v, u) for v, u in zip(t["simulated"], t["unit"])],
        "published": [_fmt_cell(v, u) for v, u in zip(t["published"], t["unit"])],
        "source": t["source"], "tolerance": t["tolerance"],
        "ok": ["-" if w is None else ("yes" if w else "NO") for w in t["within"]],
    })
    ok_n, n = item.counts()
    status = "no judged rows" if n == 0 else f"{ok_n}/{n} within tolerance"
    lines = [f"== {item.title} [{item.name}] — {status} ==", view.to_string(index=False), "",
             f"tolerance: {item.tolerance}", f"verdict:   {item.verdict}"]
    lines += [f"note:      {n_}" for n_ in item.notes]
    return "\n".join(lines)


def add_cli(sub) -> Callable[[Any], int]:
    p = sub.add_parser(
        "paper", help="reproduce the paper's figures and tables against the published/measured numbers",
        description="Runs the simulator for each item (Fig.2/7 interference, Table 1, Fig.5, Fig.6, Table 2, the "
                    "headline and the decision engines) and prints simulated vs published values, the tolerance "
                    "used and a one-line verdict. Grid runs are cached on disk (see `sweep`).",
        epilog="examples:\n  python -m ppd_core paper --only table1,fig5\n  python -m ppd_core paper --quick --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", metavar="NAME[,NAME]", help=f"items to run: {', '.join(ITEMS)} (default: all)")
    p.add_argument("--json", action="store_true", help="print every item as JSON (tables, data, verdicts)")
    p.add_argument("--quick", action="store_true",
                   help=f"Table 2 on a reduced grid ({len(QUICK_LAYOUTS)} core layouts x {len(QUICK_WORKLOADS)} "
                        f"workloads x {len(QUICK_QPS)} QPS) instead of the paper's 3,060 runs")
    p.add_argument("--measured", metavar="DIR", default=None,
                   help="folder of measured CSVs to overlay (default: ../shared/data/ppd-measured if present; "
                        "'' for none)")
    return _cmd_paper


def _cmd_paper(args) -> int:
    names = parse_only(args.only)
    if args.measured is None:
        mdir = str(MEASURED_DEFAULT) if MEASURED_DEFAULT.is_dir() else None
    else:
        mdir = str(measured_dir_or_none(args.measured)) if args.measured else None
    out = {}
    for i, name in enumerate(names):
        bar = None if args.json else TextProgress(name, stream=sys.stderr)
        item = run_item(name, quick=args.quick, measured_dir=mdir, progress=bar)
        if args.json:
            out[name] = item.to_json()
        else:
            if i:
                print()
            print(format_item(item), flush=True)
    if args.json:
        print(json.dumps({"items": out, "measured_dir": mdir, "quick": bool(args.quick)}))
    return 0


def summary_rows(items: Mapping[str, Item]) -> pd.DataFrame:
    """One row per item: name, title, judged counts, ok, verdict (for an overview table)."""
    rows = []
    for name, it in items.items():
        ok_n, n = it.counts()
        rows.append({"item": name, "title": it.title, "within": f"{ok_n}/{n}", "ok": it.ok, "verdict": it.verdict})
    return pd.DataFrame(rows)
