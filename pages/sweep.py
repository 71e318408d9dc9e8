"""Sweep: Turn 2+ TTFT/TPOT against QPS and bandwidth for PPD, PD and Replica, and the weights frontier."""
import streamlit as st

from ui import cards, charts, runner, sweeps, widgets

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

qps_df = runner.run_or_stop(lambda: sweeps.run_points(sweeps.system_points(systems, "qps", sweeps.QPS_GRID),
                                                      "QPS sweep"))
bw_df = runner.run_or_stop(lambda: sweeps.run_points(
    sweeps.system_points(systems, "bandwidth_gbps", sweeps.BW_GRID), "Bandwidth sweep"))

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
front_base, note = sweeps.frontier_base(sc, systems)
front_df = runner.run_or_stop(lambda: sweeps.run_points(sweeps.frontier_points(front_base), "Weights frontier"))
refs = runner.run_or_stop(lambda: sweeps.run_points(sweeps.frontier_extremes(front_base), "Frontier extremes"))
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
