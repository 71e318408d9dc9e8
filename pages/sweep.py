"""Sweep: Turn 2+ TTFT/TPOT against QPS and bandwidth for PPD, PD and Replica, and the weights frontier."""
import streamlit as st

from ppd_core.analysis.weights import w_tpot_range
from ppd_core.metrics import fidelity
from ui import cards, charts, exports, goodput_view, runner, sweeps, widgets
from ui.controls import PRESENT

state = widgets.scenario_sidebar("sweep", extras=(PRESENT,))
widgets.classroom()
sc = state.scenario
widgets.nav_links(sc, "sweep")

url = widgets.sync("sweep", sc, (PRESENT,))
head, link = st.columns([3, 2], vertical_alignment="bottom")
head.title("Sweeps")
with link:
    st.code(url, language=None, wrap_lines=False)      # the copy button is at its right edge; full box below
st.caption("The sidebar scenario is the base point; each sweep varies one key and runs PPD (this scenario), PD "
           "(x = 0, same GPUs) and Replica (same GPU count). Lines are the p50 of Turn 2+ requests, bands p10–p90, "
           "dotted lines the expected simulator error of each system's class (the Validation page). "
           "Every point is cached per scenario, so revisiting is instant.")
widgets.show_warnings(state.warnings)
if state.infeasible:
    st.error(f"Nothing to simulate: {state.infeasible}", icon=":material/memory:")
    st.stop()

systems = runner.run_or_stop(lambda: runner.baseline_scenarios(sc))
ttft_err, tpot_err = ({name: fidelity.for_scenario(s)["errors_pct"][m] for name, s in systems.items()}
                      for m in ("turn2_ttft_p50", "turn2_tpot_mean"))
runner.start_workers()      # the sweeps run their points side by side in the worker pool

qps_df = runner.run_or_stop(lambda: sweeps.run_points(sweeps.system_points(systems, "qps", sweeps.QPS_GRID),
                                                      "QPS sweep"))
bw_df = runner.run_or_stop(lambda: sweeps.run_points(
    sweeps.system_points(systems, "bandwidth_gbps", sweeps.BW_GRID), "Bandwidth sweep"))

good = runner.run_or_stop(lambda: goodput_view.get(sc), "Goodput search refused this scenario")
marks = goodput_view.markers(good)
ttft_slo, tpot_slo = goodput_view.slos(sc)
none = [n for n, v in (goodput_view.rates(good) or {}).items() if v <= 0]

st.subheader("Against load (QPS)")
left, right = st.columns(2)
with left:
    charts.chart(charts.band_figure(qps_df, "qps", "ttft_ms", "Turn 2+ TTFT vs QPS", "QPS (conv/s)", marks=marks,
                                    errors=ttft_err), "sweep_qps_ttft", cards.defs("ttft", "turn2"))
with right:
    charts.chart(charts.band_figure(qps_df, "qps", "tpot_ms", "Turn 2+ TPOT vs QPS", "QPS (conv/s)", marks=marks,
                                    errors=tpot_err), "sweep_qps_tpot", cards.defs("tpot", "turn2"))
st.caption(f"Dashed verticals: each system's goodput, the highest conversation rate at which ≥ "
           f"{100 * goodput_view.ATTAIN:.0f} % of Turn 2+ requests meet both TTFT ≤ {ttft_slo:g} ms and TPOT ≤ "
           f"{tpot_slo:g} ms (searched over a fixed arrival window; the curves use {sc.conversations} "
           "conversations per point)."
           + (f" {', '.join(none)}: no rate tried meets both SLOs." if none else ""))

st.subheader("Against KV-transfer bandwidth")
left, right = st.columns(2)
with left:
    charts.chart(charts.band_figure(bw_df, "bandwidth_gbps", "ttft_ms", "Turn 2+ TTFT vs bandwidth", "bandwidth (GB/s)",
                                    log_x=True, errors=ttft_err), "sweep_bw_ttft", cards.defs("ttft", "turn2"))
with right:
    charts.chart(charts.band_figure(bw_df, "bandwidth_gbps", "tpot_ms", "Turn 2+ TPOT vs bandwidth", "bandwidth (GB/s)",
                                    log_x=True, errors=tpot_err), "sweep_bw_tpot", cards.defs("tpot", "turn2"))

st.subheader("Weights frontier")
front_base, note = sweeps.frontier_base(sc, systems)
base_run = runner.run_or_stop(lambda: runner.simulate(front_base))
grid, grid_note = sweeps.frontier_grid(w_tpot_range(base_run["records"], front_base.w_ttft))
front_df = runner.run_or_stop(lambda: sweeps.run_points(sweeps.frontier_points(front_base, grid),
                                                        "Weights frontier"))
refs = runner.run_or_stop(lambda: sweeps.run_points(sweeps.frontier_extremes(front_base), "Frontier extremes"))
charts.chart(charts.frontier_figure(front_df, refs), "sweep_frontier",
             (note + "  \n" if note else "") + grid_note + f" w_ttft = {front_base.w_ttft:g}. "
             + cards.defs("s", "x", "local", "ttft", "tpot"))

st.subheader("Export")
st.caption("Each CSV starts with `#` lines naming the base scenario and its link (`pd.read_csv(f, comment=\"#\")`).")
about = exports.describe(sc)
c1, c2, c3, c4 = st.columns(4)
c1.download_button("QPS sweep (CSV)", data=lambda: exports.csv_with_context(qps_df, url, about),
                   file_name="sweep_qps.csv", mime="text/csv", on_click="ignore", icon=":material/download:")
c2.download_button("Bandwidth sweep (CSV)", data=lambda: exports.csv_with_context(bw_df, url, about),
                   file_name="sweep_bandwidth.csv", mime="text/csv", on_click="ignore", icon=":material/download:")
c3.download_button("Frontier (CSV)", data=lambda: exports.csv_with_context(
    front_df, url, exports.describe(front_base) if front_base != sc else about), file_name="sweep_frontier.csv",
                   mime="text/csv", on_click="ignore", icon=":material/download:")
c4.download_button("Goodput (CSV)", data=lambda: exports.csv_with_context(
    goodput_view.table(good, {n: s.layout for n, s in systems.items()}).reset_index(), url, about),
                   file_name="sweep_goodput.csv", mime="text/csv", on_click="ignore", icon=":material/download:")
widgets.share_box("sweep", sc, (PRESENT,))
