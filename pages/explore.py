"""Explore: one scenario against its PD and Replica baselines. Widgets -> Scenario -> cached runs -> charts."""
import streamlit as st

from pages import _common as C

state = C.scenario_sidebar("explore")
sc = state.scenario
C.nav_links(sc, "explore")

st.title("Explore a scenario")
st.caption("PPD (this scenario) against PD (x = 0, the same GPUs, pD → D) and Replica (the same GPU count). "
           "Every change re-runs all three; results are cached per scenario.")
C.show_warnings(state.warnings)

scenarios = C.run_or_stop(lambda: C.baseline_scenarios(sc))
with st.spinner("Simulating…", show_time=True):
    results = C.run_or_stop(lambda: C.simulate_systems(sc))
summaries = {name: r["summary"] for name, r in results.items()}

url = C.share_box(sc, "")

st.subheader("Turn 2+ headline (deltas against PD)")
C.headline_cards(summaries)
st.caption(C.defs("turn2", "ttft", "tpot", "e2e", "local", "slo", "kv"))

left, right = st.columns(2)
with left:
    C.chart(C.cdf_figure(results, scenarios, "ttft_ms", "TTFT"), "explore_ttft_cdf", C.defs("ttft", "turn2"))
with right:
    C.chart(C.cdf_figure(results, scenarios, "tpot_ms", "TPOT", log_x=False), "explore_tpot_cdf", C.defs("tpot", "turn2"))

left, right = st.columns(2)
with left:
    C.chart(C.by_turn_figure(results, scenarios, "ttft_ms", "TTFT"), "explore_ttft_by_turn", C.defs("ttft"))
with right:
    st.markdown("**All systems**")
    st.table(C.summary_table_text(summaries, scenarios))
    st.caption(C.defs("x", "s") + "  \nPolicy `dynamic` decides per request with Eq.1 from live state; "
               "`dynamic-table` uses the paper's offline table; pD nodes always serve Turn 2+ locally.")

st.subheader("Export what is on screen")
c1, c2 = st.columns(2)
c1.download_button("Per-request records (CSV)", data=lambda: C.records_csv(results), file_name="ppd_records.csv",
                   mime="text/csv", on_click="ignore", icon=":material/download:")
c2.download_button("Summary (JSON)", data=lambda: C.summary_json(results, url), file_name="ppd_summary.json",
                   mime="application/json", on_click="ignore", icon=":material/download:")

C.start_workers()      # after the results are on screen: later changes run side by side
