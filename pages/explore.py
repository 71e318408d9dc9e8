"""Explore: one scenario against its PD and Replica baselines. Widgets -> Scenario -> cached runs -> verdict,
one compact chart of the three systems, their cards, then the details.

Only what changed is redrawn: a control no sidebar element depends on (``controls.RESULTS_ONLY``: the load,
the weights, the bandwidth …) reruns the two fragments below, the results and the sidebar's links, not the
page. Every number is on the page before any chart: the charts' places are reserved (``st.container``) where
they stand and filled last, so a slider move shows the new numbers while the browser is still drawing."""
import contextlib

import streamlit as st

from ui import cards, charts, exports, goodput_view, presets, runner, specs, weights_view, widgets
from ui.controls import PRESENT, PRESET

EXTRAS = (PRESET, PRESENT)
# What a results-only control reruns, in this order: the results first, so the three runs start at once instead
# of after the sidebar's links are rebuilt and sent (their ~20 ms, and the browser's work on them, used to
# stand before every simulation).
FRAGMENTS = ("explore_results", "explore_links")

state = widgets.scenario_sidebar("explore", extras=EXTRAS, rerun=FRAGMENTS)


@st.fragment(key="explore_links")
def links(sc) -> None:
    widgets.nav_links(widgets.fast_scenario("explore") or sc, "explore", where=st)


@st.fragment(key="explore_results")
def results(state: widgets.PageState) -> None:
    with contextlib.ExitStack() as turn:        # the server's simulation slot, if this run needs one
        draw_results(state, turn)


def draw_results(state: widgets.PageState, turn: contextlib.ExitStack) -> None:
    state = widgets.fast_state("explore", EXTRAS) or state
    sc = state.scenario
    present = widgets.classroom()
    preset = presets.by_key(st.session_state.get("preset", ""))
    if preset is not None and preset.scenario() != sc:     # the controls moved away from the preset
        st.session_state["preset"] = PRESET.default
        preset = None
    url = widgets.sync("explore", sc, EXTRAS)

    head, link = st.columns([3, 2], vertical_alignment="bottom")
    head.title("Explore a scenario" if not present else "PPD vs PD vs Replica")
    with link:
        st.code(url, language=None, wrap_lines=False)      # the copy button is at its right edge
    widgets.show_warnings(state.warnings)
    if state.infeasible:
        st.error(f"Nothing to simulate: {state.infeasible}", icon=":material/memory:")
        st.stop()

    scenarios = runner.run_or_stop(lambda: runner.baseline_scenarios(sc))
    queue_box = st.empty()

    def waiting(ahead: int, running: int) -> None:
        queue_box.info(f"Queued: {ahead} ahead of you · {running} simulating now (the server takes the "
                       "classroom's slider moves in turn)", icon=":material/hourglass_top:")

    turn.enter_context(runner.queue_turn(scenarios.values(), waiting))    # held until the page is drawn
    queue_box.empty()
    with st.spinner("Simulating…", show_time=True):
        results = runner.run_or_stop(lambda: runner.simulate_systems(sc))
    summaries = {name: r["summary"] for name, r in results.items()}
    layouts = {name: s.layout for name, s in scenarios.items()}
    slots: list = []        # (container, spec key, chart key, caption): drawn after every number of the page

    def later(where, spec: str, key: str, caption: str | None = None) -> None:
        slots.append((where.container(), spec, key, caption))

    if preset is not None:
        st.markdown(f"**Preset · {preset.title}.** Look at: {preset.look_at}")
    widgets.verdict_box(summaries, layouts, present, goodput_view.rates(goodput_view.known(sc)))
    widgets.run_status(sc, summaries)

    if present:
        later(st, "systems", "explore_systems")
    else:
        later(st, "systems", "explore_systems",
              "Bars: Turn 2+ mean; black whiskers: p90; orange: expected simulator error of the mean (its class "
              "above); dashed: SLO thresholds (slo_ttft_ms, slo_tpot_ms).")
        cards.system_cards(summaries, layouts)
        goodput_view.panel(sc, layouts)           # on a button: it takes several runs per system
        weights_view.panel(sc, results["PPD"]["records"])

    if preset is not None:
        with st.container(border=True):
            st.markdown(f"**Why:** {preset.why}")
            for v in presets.check(preset, lambda s: runner.run_or_stop(lambda: runner.simulate(s))["summary"], sc):
                st.markdown(("✅ " if v.holds else "❌ ") + v.text())
    if not present:
        widgets.preset_links(preset)
        cards.glossary()

    if present:
        later(st, "ttft_cdf", "explore_ttft_cdf")
        later(st, "tpot_cdf", "explore_tpot_cdf")
    else:
        left, right = st.columns(2)
        later(left, "ttft_cdf", "explore_ttft_cdf",
              "Turn 1 TTFT (which includes waiting for a client slot) is in the table below.")
        later(right, "tpot_cdf", "explore_tpot_cdf")

        left, right = st.columns(2)
        later(left, "ttft_by_turn", "explore_ttft_by_turn")
        with right:
            st.markdown("**All systems**")
            st.table(cards.summary_table_text(summaries, scenarios))
            st.caption("Policy `dynamic` decides per request with Eq.1 from live state; `dynamic-table` uses the "
                       "paper's offline table; pD nodes always serve Turn 2+ locally.")

        st.subheader("Export what is on screen")
        c1, c2 = st.columns(2)
        c1.download_button("Per-request records (CSV)", data=lambda: exports.records_csv(results, scenarios, url),
                           file_name="ppd_records.csv", mime="text/csv", on_click="ignore",
                           icon=":material/download:")
        c2.download_button("Summary (JSON)", data=lambda: exports.summary_json(results, url),
                           file_name="ppd_summary.json", mime="application/json", on_click="ignore",
                           icon=":material/download:")
        widgets.share_box("explore", sc, EXTRAS)

    figs = specs.explore_specs(sc, present, results, scenarios)     # after the numbers: they go out first
    for where, spec, key, caption in slots:
        with where:
            charts.chart(figs[spec], key, caption)

    runner.start_workers()      # after the results are on screen: later changes run side by side


with st.sidebar:
    links(state.scenario)
results(state)
