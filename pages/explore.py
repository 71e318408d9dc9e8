"""Explore: one scenario against its PD and Replica baselines. Widgets -> Scenario -> cached runs -> charts."""
import streamlit as st

from ui import cards, charts, exports, runner, widgets

state = widgets.scenario_sidebar("explore")
sc = state.scenario
widgets.nav_links(sc, "explore")

st.title("Explore a scenario")
st.caption("PPD (this scenario) against PD (x = 0, the same GPUs, pD → D) and Replica (the same GPU count). "
           "Every change re-runs all three; results are cached per scenario.")
widgets.show_warnings(state.warnings)
url = widgets.share_box("explore", sc)
if state.infeasible:
    st.error(f"Nothing to simulate: {state.infeasible}", icon=":material/memory:")
    st.stop()

scenarios = runner.run_or_stop(lambda: runner.baseline_scenarios(sc))
with st.spinner("Simulating…", show_time=True):
    results = runner.run_or_stop(lambda: runner.simulate_systems(sc))
summaries = {name: r["summary"] for name, r in results.items()}

st.subheader("Turn 2+ headline (deltas against PD)")
cards.headline_cards(summaries)
st.caption(cards.defs("turn2", "ttft", "tpot", "e2e", "local", "slo", "kv"))

left, right = st.columns(2)
with left:
    charts.chart(charts.cdf_figure(results, scenarios, "ttft_ms", "TTFT"), "explore_ttft_cdf",
                 cards.defs("ttft", "turn2"))
with right:
    charts.chart(charts.cdf_figure(results, scenarios, "tpot_ms", "TPOT", log_x=False), "explore_tpot_cdf",
                 cards.defs("tpot", "turn2"))

left, right = st.columns(2)
with left:
    charts.chart(charts.by_turn_figure(results, scenarios, "ttft_ms", "TTFT"), "explore_ttft_by_turn",
                 cards.defs("ttft"))
with right:
    st.markdown("**All systems**")
    st.table(cards.summary_table_text(summaries, scenarios))
    st.caption(cards.defs("x", "s") + "  \nPolicy `dynamic` decides per request with Eq.1 from live state; "
               "`dynamic-table` uses the paper's offline table; pD nodes always serve Turn 2+ locally.")

st.subheader("Export what is on screen")
c1, c2 = st.columns(2)
c1.download_button("Per-request records (CSV)", data=lambda: exports.records_csv(results),
                   file_name="ppd_records.csv", mime="text/csv", on_click="ignore", icon=":material/download:")
c2.download_button("Summary (JSON)", data=lambda: exports.summary_json(results, url), file_name="ppd_summary.json",
                   mime="application/json", on_click="ignore", icon=":material/download:")

runner.start_workers()      # after the results are on screen: later changes run side by side
