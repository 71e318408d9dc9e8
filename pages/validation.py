"""Validation: every measured point of ../shared/data/ppd-measured simulated the way it was measured
(``ppd_core.calibration.validate``), compared metric by metric. Thin page: one cached validation run, then tables and
Plotly charts (``ui/validation_view.py``) built from its points and ``validate.summarize``."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from ppd_core.config.errors import PPDError
from ppd_core.config.paths import MEASURED_DEFAULT
from ppd_core.analysis.cache import code_version
from ui import charts, uploads, widgets
from ui import validation_view as V
from ui.cards import defs, fmt_pct
from ui.controls import PRESENT, Control
from ui.validation_runs import run_bundled, run_uploaded

SOURCE = Control("val_source", "Measured data", "radio", options=("bundled", "upload"), default="bundled",
                 help="bundled: the calibration set shipped with the project (../shared/data/ppd-measured); "
                      "upload: your own CSVs in the same schemas (each up to 50 MiB).")
SAMPLE = Control("val_sample", "Points to simulate (0 = all)", "number", lo=0, hi=100_000, step=100, default=0,
                 help="A random sample of measured (file, layout, workload, QPS) points; 0 simulates all of "
                      "them (about 20–45 s).")
EXTRAS = (SOURCE, SAMPLE, PRESENT)


# ---- page ----------------------------------------------------------------------------------------------------

st.title("Validation against the measured data")
st.caption("Every measured point (synthetic sweep, ShareGPT runs, turn scaling) is simulated the way it was "
           "measured: the 10 s arrival window, the 50-connection client, the timeouts and the comprehensive "
           "benchmark's routing quirk (`ppd_core.calibration.validate`; one seed per point; same as `python -m ppd_core validate --measured DIR --seeds 1`). "
           "Points hit by infrastructure failures are listed with the reason and not simulated.")

state = widgets.carry_scenario("validation", EXTRAS)     # scenario keys carried for the navigation
widgets.classroom()
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

st.header("Expected error by validation class")
st.dataframe(V.class_table(), hide_index=True, width="stretch")
st.caption("Every run on Explore and Sweep says which class its scenario falls into and draws that class's "
           "expected error (orange whiskers, dotted lines). The figures are typical misses, not bounds: mean "
           "|simulated − measured| / measured for TTFT and TPOT, the median for the ratio. An unseen layout's "
           "comes from holding a whole family of layouts out of the fit (`calibrate --families`):")
fam = V.family_table()
if fam is not None:
    st.dataframe(fam, hide_index=True, width="stretch")

st.header("Simulated vs measured")
cols = st.columns(3)
for col, (key, label) in zip(cols, V.TARGETS):
    with col:
        charts.chart(V.scatter_figure(V.target_frame(raw, key), label), f"val_scatter_{key}")
st.caption("Turn-2 points of every file (comprehensive Turn 2, ShareGPT Turn 2+, turn-scaling turns ≥ 2). TTFT "
           "p50 only at unsaturated points (measured success ≥ 95 % and TTFT < 1 s). "
           + defs("ttft", "tpot", "e2e"))
with st.expander("Any metric"):
    sim_ok = pts[pts["simulated"].notna()]
    metrics = sorted(sim_ok["metric"].unique(),
                     key=lambda m: list(V.METRIC_NAMES).index(m) if m in V.METRIC_NAMES else 99)
    mc1, mc2 = st.columns(2)
    metric = mc1.selectbox("Metric", metrics, format_func=lambda m: V.METRIC_NAMES.get(m, m), key="val_metric")
    turns = sorted(sim_ok["turn"].unique(), key=lambda t: (V.TURN_ORDER.get(t, 9), t))
    turn = mc2.selectbox("Turn group", turns, index=turns.index("turn2") if "turn2" in turns else 0, key="val_turn")
    sel = sim_ok[(sim_ok["metric"] == metric) & (sim_ok["turn"] == turn)]
    charts.chart(V.scatter_figure(sel, f"{V.METRIC_NAMES.get(metric, metric)}, {turn}"), "val_scatter_any")

st.header("Error per layout (calibration set)")
st.dataframe(V.mape_table(summary), hide_index=True, width="stretch")
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
    sat = pd.DataFrame([{"layout / context": k, "measured QPS": V.qps_text(v["measured"]),
                         "simulated QPS": V.qps_text(v["simulated"])}
                        for k, v in summary["saturation_qps"].items()])
    st.dataframe(sat, hide_index=True, width="stretch")
    st.caption("Saturation QPS: the lowest QPS where the median over workloads of Turn-2 mean TTFT exceeds twice its "
               "low-load value (empty: never within the measured range).")

st.header("One point, side by side")
keyed = pts.assign(qps_text=pts["qps"].map(lambda q: f"{q:g}"))
f1, f2, f3, f4 = st.columns(4)
opts = sorted(keyed["file"].unique())
file = f1.selectbox("File", opts, index=V.first_simulated(opts, keyed, "file"), key="val_pick_file")
d = keyed[keyed["file"] == file]
opts = sorted(d["config"].unique())
config = f2.selectbox("Layout", opts, index=V.first_simulated(opts, d, "config"), key="val_pick_config")
d = d[d["config"] == config]
opts = sorted(d["workload"].unique())
workload = f3.selectbox("Workload", opts, index=V.first_simulated(opts, d, "workload"), key="val_pick_workload")
d = d[d["workload"] == workload]
qps_opts = [float(q) for q in sorted(d["qps"].unique())]
qps = f4.selectbox("QPS", qps_opts, index=V.first_simulated(qps_opts, d, "qps"), format_func=lambda q: f"{q:g}",
                   key="val_pick_qps")
d = d[d["qps"] == qps].copy()
d["order"] = [(V.TURN_ORDER.get(t, 9), t) for t in d["turn"]]
d = d.sort_values(["order", "metric"])
d["error %"] = 100 * (d["simulated"] / d["measured"] - 1)
view = d[["turn", "metric", "measured", "simulated", "error %", "success", "reason"]].rename(
    columns={"success": "measured success %"})
view["metric"] = view["metric"].map(lambda m: V.METRIC_NAMES.get(m, m))
st.dataframe(view, hide_index=True, width="stretch")
if res["notes"]:
    st.caption("Files not compared: " + "; ".join(n.split(":")[0] for n in res["notes"]) + " (schemas that "
               "`validate` does not simulate; the interference files are on the Paper page).")
