"""The Validation page's views: points as a table, simulated-vs-measured scatters, the MAPE table and the
point picker's helpers. Results -> tables and figures only."""
from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ppd_core.calibration.validate import target_sets

TARGETS = (("turn2_tpot_mean", "Turn-2 mean TPOT"), ("turn2_ttft_p50_unsaturated", "Turn-2 p50 TTFT (unsaturated)"),
           ("turn2_e2e_mean", "Turn-2 mean E2E"))
METRIC_NAMES = MappingProxyType({"avg_ttft_ms": "mean TTFT", "p50_ttft_ms": "p50 TTFT", "p90_ttft_ms": "p90 TTFT",
                "p99_ttft_ms": "p99 TTFT", "avg_tpot_ms": "mean TPOT", "p50_tpot_ms": "p50 TPOT",
                "p90_tpot_ms": "p90 TPOT", "p99_tpot_ms": "p99 TPOT", "avg_e2e_ms": "mean E2E",
                "p50_e2e_ms": "p50 E2E", "p90_e2e_ms": "p90 E2E", "p99_e2e_ms": "p99 E2E"})
TURN_ORDER = MappingProxyType({"turn1": 0, "turn2": 1, "turn2plus": 2, "average": 3, "all_turns": 4, "all": 5})


def points_frame(pts) -> pd.DataFrame:
    return pd.DataFrame([{"file": p.file, "config": p.config, "workload": p.workload, "qps": p.qps, "turn": p.turn,
                          "metric": p.metric, "measured": p.measured,
                          "simulated": math.nan if p.simulated is None else p.simulated, "success": p.success,
                          "reason": p.reason} for p in pts])


def scatter_figure(df: pd.DataFrame, title: str) -> go.Figure:
    """Simulated vs measured on log axes with the y = x line, one colour per layout."""
    d = df[(df["simulated"] > 0) & (df["measured"] > 0)]
    fig = go.Figure()
    for cfg in sorted(d["config"].unique()):
        s = d[d["config"] == cfg]
        fig.add_trace(go.Scattergl(
            x=s["measured"], y=s["simulated"], mode="markers", name=cfg, marker=dict(size=5, opacity=0.6),
            customdata=np.stack([s["workload"].astype(str), s["qps"].astype(float), s["turn"].astype(str),
                                 s["file"].astype(str)], axis=-1),
            hovertemplate="%{customdata[3]} " + cfg + " %{customdata[0]} QPS %{customdata[1]} %{customdata[2]}"
                          "<br>measured %{x:.1f} ms, simulated %{y:.1f} ms<extra></extra>"))
    if len(d):
        lo = float(min(d["measured"].min(), d["simulated"].min())) * 0.8
        hi = float(max(d["measured"].max(), d["simulated"].max())) * 1.25
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="y = x",
                                 line=dict(color="black", dash="dash", width=1), hoverinfo="skip"))
    fig.update_xaxes(type="log", title_text="measured (ms)")
    fig.update_yaxes(type="log", title_text="simulated (ms)")
    fig.update_layout(title=title, height=420, margin=dict(t=60, b=40, l=50, r=10),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def target_frame(raw, name: str) -> pd.DataFrame:
    ps = target_sets(raw)[name]
    return pd.DataFrame([{"file": p.file, "config": p.config, "workload": p.workload, "qps": p.qps, "turn": p.turn,
                          "measured": p.measured, "simulated": p.simulated} for p in ps],
                        columns=["file", "config", "workload", "qps", "turn", "measured", "simulated"])


def mape_table(summary: dict) -> pd.DataFrame:
    rows = []
    for lay, d in list(summary["per_layout"].items()) + [("overall", summary["overall"])]:
        row = {"layout": lay}
        for key, label in TARGETS:
            row[f"{label}: MAPE %"] = d[key]["mape"]
            row[f"{label}: n"] = d[key]["n"]
        rows.append(row)
    return pd.DataFrame(rows)


def first_simulated(options: list, frame: pd.DataFrame, column: str) -> int:
    """Index of the first option with at least one simulated value (so the picker opens on a real comparison)."""
    for i, o in enumerate(options):
        if frame.loc[frame[column] == o, "simulated"].notna().any():
            return i
    return 0


def qps_text(x) -> str:
    return "not reached" if x is None else f"{x:g}"


CLASS_SCOPE = MappingProxyType({
    "calibrated": "a calibration layout (4R, 1P_3D, 2P_2D, 3P_1D, 1P_3pD, 2P_2pD, 3P_1pD) on a synthetic cell or "
                  "ShareGPT, H100-SXM, Llama-3.1-8B, TP 1",
    "unseen_trace": "a calibration layout on other natural text (WildChat, an imported trace)",
    "unseen_layout": "any other layout: mixed D/pD, replicas beside a P/D pipeline, larger clusters",
    "extrapolated": "another GPU, model or TP degree (constants carried over, see the Explore notes)",
})


def class_table() -> pd.DataFrame:
    """One row per validation class (``ppd_core.metrics.fidelity``): what falls in it, its expected errors and
    where they come from."""
    from ppd_core.metrics.fidelity import CLASSES, error_classes
    rows = []
    for name in CLASSES:
        c = error_classes()[name]
        rows.append({"class": c.label, "Turn 2+ TTFT ±%": c.errors["turn2_ttft_p50"],
                     "TPOT ±%": c.errors["turn2_tpot_mean"], "PPD/PD TTFT ratio ±%": c.errors["effect_ttft"],
                     "a run falls here when": CLASS_SCOPE[name], "from": c.source})
    return pd.DataFrame(rows)


def family_table() -> pd.DataFrame | None:
    """The held-out families of ``calibrate --families`` as written into data/expected_error.json (None before
    the first such run)."""
    import json

    from ppd_core.metrics.fidelity import ERRORS_FILE
    fams = json.loads(ERRORS_FILE.read_text()).get("families")
    if not fams:
        return None
    return pd.DataFrame([{"family held out": n, "Turn 2+ TPOT MAPE %": d["turn2_tpot_mean"]["mape"],
                          "Turn 2+ p50 TTFT MAPE %": d["turn2_ttft_p50_unsaturated"]["mape"],
                          "PPD/PD TTFT ratio error %": d["effect_ttft"], "what": d["doc"]}
                         for n, d in fams.items()])
