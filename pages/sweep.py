"""Sweep: Turn 2+ TTFT/TPOT against QPS and bandwidth for PPD, PD and Replica, and the weights frontier."""
import streamlit as st

from ui import analysis, cards, charts, runner, widgets

QPS_GRID = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 20.0)
BW_GRID = (10.0, 25.0, 50.0, 100.0, 150.0)
W_TPOT_GRID = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0)

state = widgets.scenario_sidebar("sweep")
sc = state.scenario
widgets.nav_links(sc, "sweep")

st.title("Sweeps")
st.caption("The sidebar scenario is the base point; each sweep varies one key and runs PPD (this scenario), PD "
           "(x = 0, same GPUs) and Replica (same GPU count). Lines are the p50 of Turn 2+ requests, bands p10–p90. "
           "Every point is cached per scenario, so revisiting is instant.")
widgets.show_warnings(state.warnings)
widgets.share_box("sweep", sc)
if state.infeasible:
    st.error(f"Nothing to simulate: {state.infeasible}", icon=":material/memory:")
    st.stop()

systems = runner.run_or_stop(lambda: runner.baseline_scenarios(sc))
runner.start_workers()      # the sweeps run their points side by side in the worker pool


def _points(key, grid):
    return [({"system": name, key: v}, s.with_(**{key: v})) for v in grid for name, s in systems.items()]


qps_df = runner.run_or_stop(lambda: runner.run_points(_points("qps", QPS_GRID), "QPS sweep"))
bw_df = runner.run_or_stop(lambda: runner.run_points(_points("bandwidth_gbps", BW_GRID), "Bandwidth sweep"))

st.subheader("Against load (QPS)")
left, right = st.columns(2)
with left:
    charts.chart(charts.band_figure(qps_df, "qps", "ttft_ms", "Turn 2+ TTFT vs QPS", "QPS (conv/s)"), "sweep_qps_ttft",
            cards.defs("ttft", "turn2"))
with right:
    charts.chart(charts.band_figure(qps_df, "qps", "tpot_ms", "Turn 2+ TPOT vs QPS", "QPS (conv/s)"), "sweep_qps_tpot",
            cards.defs("tpot", "turn2"))

st.subheader("Against KV-transfer bandwidth")
left, right = st.columns(2)
with left:
    charts.chart(charts.band_figure(bw_df, "bandwidth_gbps", "ttft_ms", "Turn 2+ TTFT vs bandwidth", "bandwidth (GB/s)",
                          log_x=True), "sweep_bw_ttft", cards.defs("ttft", "turn2"))
with right:
    charts.chart(charts.band_figure(bw_df, "bandwidth_gbps", "tpot_ms", "Turn 2+ TPOT vs bandwidth", "bandwidth (GB/s)",
                          log_x=True), "sweep_bw_tpot", cards.defs("tpot", "turn2"))

st.subheader("Weights frontier")
front_base = sc
note = ""
if not analysis.has_d_nodes(sc) or sc.policy not in ("dynamic", "dynamic-table"):
    # Eq.1 only decides on D nodes under a dynamic policy: sweep the x=0 layout with the dynamic policy.
    front_base = systems["PD"].with_(policy="dynamic")
    note = (f"This scenario ({sc.layout}, policy {sc.policy}) has no per-request decision to weigh, so the "
            f"frontier uses {front_base.layout} with policy dynamic.")
front_df = runner.run_or_stop(lambda: runner.run_points(
    [({"w_tpot": w}, front_base.with_(w_tpot=w)) for w in W_TPOT_GRID], "Weights frontier"))
refs = runner.run_or_stop(lambda: runner.run_points(
    [({"label": "x=0 (policy pd)"}, front_base.with_(policy="pd")),
     ({"label": "x=1 (policy ppd)"}, front_base.with_(policy="ppd"))], "Frontier extremes"))
charts.chart(charts.frontier_figure(front_df, refs), "sweep_frontier",
             (note + "  \n" if note else "") + f"w_ttft = {front_base.w_ttft:g}. "
             + cards.defs("s", "x", "local", "ttft", "tpot"))

st.subheader("Export")
c1, c2, c3 = st.columns(3)
c1.download_button("QPS sweep (CSV)", data=lambda: qps_df.to_csv(index=False).encode(), file_name="sweep_qps.csv",
                   mime="text/csv", on_click="ignore", icon=":material/download:")
c2.download_button("Bandwidth sweep (CSV)", data=lambda: bw_df.to_csv(index=False).encode(),
                   file_name="sweep_bandwidth.csv", mime="text/csv", on_click="ignore", icon=":material/download:")
c3.download_button("Frontier (CSV)", data=lambda: front_df.to_csv(index=False).encode(), file_name="sweep_frontier.csv",
                   mime="text/csv", on_click="ignore", icon=":material/download:")
