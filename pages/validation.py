"""Validation: every measured point of ../shared/data/ppd-measured simulated the way it was measured
(``ppd_core.validate``), compared metric by metric. Thin page: one cached validation run, then tables and
Plotly charts built from its points and ``validate.summarize``."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ppd_core.errors import PPDError
from ppd_core.paper import MEASURED_DEFAULT
from ppd_core.sweep import code_version
from ppd_core.validate import target_sets, validate
from ui import charts, runner, uploads, widgets
from ui.cards import defs, fmt_pct
from ui.controls import Control

SOURCE = Control("val_source", "Measured data", "radio", options=("bundled", "upload"), default="bundled",
                 help="bundled: the calibration set shipped with the project (../shared/data/ppd-measured); "
                      "upload: your own CSVs in the same schemas (each up to 50 MiB).")
SAMPLE = Control("val_sample", "Points to simulate (0 = all)", "number", lo=0, hi=100_000, step=100, default=0,
                 help="A random sample of measured (file, layout, workload, QPS) points; 0 simulates all of "
                      "them (about 20–45 s).")
EXTRAS = (SOURCE, SAMPLE)
TARGETS = (("turn2_tpot_mean", "Turn-2 mean TPOT"), ("turn2_ttft_p50_unsaturated", "Turn-2 p50 TTFT (unsaturated)"),
           ("turn2_e2e_mean", "Turn-2 mean E2E"))
METRIC_NAMES = {"avg_ttft_ms": "mean TTFT", "p50_ttft_ms": "p50 TTFT", "p90_ttft_ms": "p90 TTFT",
                "p99_ttft_ms": "p99 TTFT", "avg_tpot_ms": "mean TPOT", "p50_tpot_ms": "p50 TPOT",
                "p90_tpot_ms": "p90 TPOT", "p99_tpot_ms": "p99 TPOT", "avg_e2e_ms": "mean E2E",
                "p50_e2e_ms": "p50 E2E", "p90_e2e_ms": "p90 E2E", "p99_e2e_ms": "p99 E2E"}
TURN_ORDER = {"turn1": 0, "turn2": 1, "turn2plus": 2, "average": 3, "all_turns": 4, "all": 5}


def _frame(pts) -> pd.DataFrame:
    return pd.DataFrame([{"file": p.file, "config": p.config, "workload": p.workload, "qps": p.qps, "turn": p.turn,
                          "metric": p.metric, "measured": p.measured,
                          "simulated": math.nan if p.simulated is None else p.simulated, "success": p.success,
                          "reason": p.reason} for p in pts])


def _validate(folder: str, sample: int) -> dict:
    with runner.Progress("Simulating the measured points") as progress:
        pts, summary, notes = validate(folder, sample or None, progress=progress)
    return {"points": _frame(pts), "summary": summary, "notes": notes, "raw": pts}


@st.cache_data(max_entries=4, show_spinner=False)
def run_bundled(sample: int, version: str) -> dict:
    """Every usable point of the bundled calibration set (``sample`` > 0: a random sample of that many
    points). ``version``: the simulator's code + parameter version. The progress bar is created here, so a
    cache hit replays it and ends empty."""
    return _validate(str(MEASURED_DEFAULT), sample)


@st.cache_data(max_entries=4, show_spinner=False)
def run_uploaded(files: tuple[tuple[str, bytes], ...], sample: int, version: str) -> dict:
    """The same for uploaded CSVs (already checked), written to a fresh temporary folder for the run."""
    with uploads.materialised(files) as folder:
        return _validate(folder, sample)


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


def _target_frame(raw, name: str) -> pd.DataFrame:
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


def _first_simulated(options: list, frame: pd.DataFrame, column: str) -> int:
    """Index of the first option with at least one simulated value (so the picker opens on a real comparison)."""
    for i, o in enumerate(options):
        if frame.loc[frame[column] == o, "simulated"].notna().any():
            return i
    return 0


def _q(x) -> str:
    return "not reached" if x is None else f"{x:g}"


# ---- page ----------------------------------------------------------------------------------------------------

st.title("Validation against the measured data")
st.caption("Every measured point (synthetic sweep, ShareGPT runs, turn scaling) is simulated the way it was "
           "measured: the 10 s arrival window, the 50-connection client, the timeouts and the comprehensive "
           "benchmark's routing quirk (`ppd_core.validate`; same as `python -m ppd_core validate --measured DIR`). "
           "Points hit by infrastructure failures are listed with the reason and not simulated.")

state = widgets.carry_scenario("validation", EXTRAS)     # scenario keys carried for the navigation
widgets.show_warnings(state.warnings)
c1, c2 = st.columns([3, 1])
with c1:
    source = widgets.render_extra(SOURCE)
with c2:
    sample = int(widgets.render_extra(SAMPLE))
widgets.sync("validation", state.scenario, EXTRAS)
try:
    if source == "upload":
        files = st.file_uploader("Measured CSVs (the schemas of ../shared/data/ppd-measured; up to 50 MiB each)",
                                 type=["csv"], accept_multiple_files=True, key="val_upload")
        if not files:
            st.info("Upload one or more CSVs in the calibration set's schemas (comprehensive, ShareGPT/trace runs, "
                    "scaling), or pick **bundled**.")
            st.stop()
        checked = uploads.check_measured_csvs([(f.name, f.getvalue()) for f in files])
        res = run_uploaded(tuple(checked), sample, code_version())
    else:
        if not MEASURED_DEFAULT.is_dir():
            st.error("The bundled calibration set is not installed on this server (../shared/data/ppd-measured); "
                     "upload your CSVs instead.")
            st.stop()
        res = run_bundled(sample, code_version())
except (PPDError, OSError, ValueError, KeyError) as exc:
    st.error(f"Could not validate: {exc}")
    st.stop()

pts: pd.DataFrame = res["points"]
summary = res["summary"]
raw = res["raw"]
n = summary["points"]
st.caption(f"{n['simulated']:,} measured values compared, {n['not_simulated']:,} listed with a reason. "
           f"Simulator version {code_version()}.")

st.header("Simulated vs measured")
cols = st.columns(3)
for col, (key, label) in zip(cols, TARGETS):
    with col:
        charts.chart(scatter_figure(_target_frame(raw, key), label), f"val_scatter_{key}")
st.caption("Turn-2 points of every file (comprehensive Turn 2, ShareGPT Turn 2+, turn-scaling turns ≥ 2). TTFT "
           "p50 only at unsaturated points (measured success ≥ 95 % and TTFT < 1 s). "
           + defs("ttft", "tpot", "e2e"))
with st.expander("Any metric"):
    sim_ok = pts[pts["simulated"].notna()]
    metrics = sorted(sim_ok["metric"].unique(), key=lambda m: list(METRIC_NAMES).index(m) if m in METRIC_NAMES else 99)
    mc1, mc2 = st.columns(2)
    metric = mc1.selectbox("Metric", metrics, format_func=lambda m: METRIC_NAMES.get(m, m), key="val_metric")
    turns = sorted(sim_ok["turn"].unique(), key=lambda t: (TURN_ORDER.get(t, 9), t))
    turn = mc2.selectbox("Turn group", turns, index=turns.index("turn2") if "turn2" in turns else 0, key="val_turn")
    sel = sim_ok[(sim_ok["metric"] == metric) & (sim_ok["turn"] == turn)]
    charts.chart(scatter_figure(sel, f"{METRIC_NAMES.get(metric, metric)}, {turn}"), "val_scatter_any")

st.header("Error per layout")
st.dataframe(mape_table(summary), hide_index=True, width="stretch")
st.caption("MAPE = mean of |simulated − measured| / measured over the points (n). `validate.summarize`.")

st.header("Winner agreement and saturation")
w = summary["winner_agreement"]
c1, c2 = st.columns(2)
with c1:
    if w["agreement"] is not None:
        st.metric("PD-vs-pD winner on Turn-2 mean TTFT", fmt_pct(w["agreement"]), border=True,
                  help="Share of (workload, QPS) pairs where the simulator picks the same winner between a D layout "
                       "and its pD twin as the measurement.")
        st.caption(f"{w['n']} pairs compared.")
        if w["misses"]:
            st.caption("Disagreements: " + "; ".join(w["misses"]))
    else:
        st.info("No PD/pD pairs among the simulated points.")
with c2:
    sat = pd.DataFrame([{"layout / context": k, "measured QPS": _q(v["measured"]), "simulated QPS": _q(v["simulated"])}
                        for k, v in summary["saturation_qps"].items()])
    st.dataframe(sat, hide_index=True, width="stretch")
    st.caption("Saturation QPS: the lowest QPS where the median over workloads of Turn-2 mean TTFT exceeds twice its "
               "low-load value (empty: never within the measured range).")

st.header("One point, side by side")
keyed = pts.assign(qps_text=pts["qps"].map(lambda q: f"{q:g}"))
f1, f2, f3, f4 = st.columns(4)
opts = sorted(keyed["file"].unique())
file = f1.selectbox("File", opts, index=_first_simulated(opts, keyed, "file"), key="val_pick_file")
d = keyed[keyed["file"] == file]
opts = sorted(d["config"].unique())
config = f2.selectbox("Layout", opts, index=_first_simulated(opts, d, "config"), key="val_pick_config")
d = d[d["config"] == config]
opts = sorted(d["workload"].unique())
workload = f3.selectbox("Workload", opts, index=_first_simulated(opts, d, "workload"), key="val_pick_workload")
d = d[d["workload"] == workload]
qps_opts = [float(q) for q in sorted(d["qps"].unique())]
qps = f4.selectbox("QPS", qps_opts, index=_first_simulated(qps_opts, d, "qps"), format_func=lambda q: f"{q:g}",
                   key="val_pick_qps")
d = d[d["qps"] == qps].copy()
d["order"] = [(TURN_ORDER.get(t, 9), t) for t in d["turn"]]
d = d.sort_values(["order", "metric"])
d["error %"] = 100 * (d["simulated"] / d["measured"] - 1)
view = d[["turn", "metric", "measured", "simulated", "error %", "success", "reason"]].rename(
    columns={"success": "measured success %"})
view["metric"] = view["metric"].map(lambda m: METRIC_NAMES.get(m, m))
st.dataframe(view, hide_index=True, width="stretch")
if res["notes"]:
    st.caption("Files not compared: " + "; ".join(n.split(":")[0] for n in res["notes"]) + " (schemas that "
               "`validate` does not simulate; the interference files are on the Paper page).")
