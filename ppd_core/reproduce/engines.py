"""Reproduction: The offline lookup table (``dynamic-table``) against the online Eq.1 engine (``dynamic``)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..analysis.grid import table_key
from ..analysis.progress import Progress
from ..analysis.sweep import run_grid
from ..analysis.table import build_table, cell_scenarios
from ..config.scenario import Scenario
from ..config.workload_catalog import SYNTHETIC
from .judge import (Item, Tol, as_number, bench_scenario, judged_counts, judged_row, judged_table,
                    measured_dir_or_none, pct_change)
from .published import ENGINE_LAYOUTS, ENGINE_QPS, ENGINE_WORKLOADS, PUB_TABLE_LOCAL_CELLS


def engine_scenarios(layouts: Sequence[str] = ENGINE_LAYOUTS, conversations: int = 500) -> list[tuple[str, Scenario]]:
    out = []
    for lay in layouts:
        for wl in ENGINE_WORKLOADS:
            for q in ENGINE_QPS:
                if wl in SYNTHETIC:
                    # the benchmark window without the routing quirk: every policy decides every Turn 2
                    base = bench_scenario(layout=lay, workload=wl, qps=q, rehash_frac=0.0)
                    label = f"{lay} {wl} QPS {q:g} (benchmark window)"
                else:
                    base = Scenario(layout=lay, workload=wl, qps=q, conversations=conversations, client="benchmark")
                    label = f"{lay} {wl} QPS {q:g}"
                for pol in ("pd", "ppd", "dynamic", "dynamic-table"):
                    out.append((label, base.with_(policy=pol)))
    return out


def engines(progress: Progress | None = None, measured_dir: str | Path | None = None,
            layouts: Sequence[str] = ENGINE_LAYOUTS, conversations: int = 500, pool=None) -> Item:
    """The paper's offline lookup table (policy ``dynamic-table``: Eq.1 signs from the simulator's own x=0 /
    x=1 runs of the 180 cells, nearest cell online) against the online Eq.1 estimate (policy ``dynamic``),
    with the static ends for reference: local share and Turn 2+ TTFT/TPOT."""
    tables = {}
    keys = [table_key(Scenario(layout=lay)) for lay in layouts]
    per_table = 2 * len(cell_scenarios(keys[0]))
    pts = engine_scenarios(layouts, conversations)
    total = per_table * len(keys) + len(pts)

    def part(offset: int) -> Progress | None:
        return None if progress is None else (lambda done, _n: progress(offset + done, total))

    # the tables' x=0/x=1 runs first, in parallel here (disk-cached), so the dynamic-table runs find them
    for i, (lay, k) in enumerate(zip(layouts, keys)):
        tables[lay] = build_table(k, progress=part(i * per_table), pool=pool)
    df = run_grid([p[1] for p in pts], progress=part(per_table * len(keys)), pool=pool)
    data = pd.DataFrame([{"case": label, "layout": sc.layout, "workload": sc.workload, "qps": sc.qps,
                          "policy": sc.policy, "local_share": as_number(r["local_share"]),
                          "ttft_ms": as_number(r["turn2plus.ttft_ms.mean"]), "tpot_ms": as_number(r["turn2plus.tpot_ms.mean"])}
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
        rows.append(judged_row(f"{lay}: table cells choosing local (of {len(tables[lay].cells)}), w=(1,1)", "cells",
                         n_local, PUB_TABLE_LOCAL_CELLS.get(lay, math.nan),
                         Tol("abs", 18.0) if lay in PUB_TABLE_LOCAL_CELLS else None, "reference code on the repo data"))
        if lay == "2P_2D" and measured_cells is not None:
            rows.append(judged_row(f"{lay}: table cells choosing local (of {len(tables[lay].cells)}), w=(1,1)", "cells",
                             n_local, measured_cells, None, "measured (ppd_lookup_table.csv)"))
    for label in dict.fromkeys(data["case"]):
        d = data[data["case"] == label].set_index("policy")
        rows.append(judged_row(f"{label}: local share, table − online", "pp",
                         100 * (d.loc["dynamic-table", "local_share"] - d.loc["dynamic", "local_share"]), 0.0,
                         Tol("abs", 20.0), "table vs online"))
        rows.append(judged_row(f"{label}: Turn 2+ TTFT, table vs online", "%",
                         pct_change(d.loc["dynamic-table", "ttft_ms"], d.loc["dynamic", "ttft_ms"]), 0.0,
                         Tol("abs", 20.0), "table vs online"))
    sg = data[(data["layout"] == "2P_2D") & (data["workload"] == "sharegpt")]
    for q, g in sg.groupby("qps"):
        g = g.set_index("policy")
        rows.append(judged_row(f"2P_2D sharegpt QPS {q:g}: Turn 2+ TTFT, table engine vs static x=1", "%",
                         pct_change(g.loc["dynamic-table", "ttft_ms"], g.loc["ppd", "ttft_ms"]), 0.0, Tol("abs", 10.0),
                         "measured: PPD-dynamic ≈ static pD (41.8 vs 40.7 ms)"))
    table = judged_table(rows)
    n_ok, n = judged_counts(rows)
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
