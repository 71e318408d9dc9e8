"""Paper: the PPD paper's figures and tables reproduced by the simulator, overlaid on the published numbers.

Thin page over ``ppd_core.reproduce``: every item is one cached run (its progress bar is created inside the cached
function, so a cache hit replays it and ends empty) and one Plotly chart (``ui/paper_charts.py``) from its tables.
"""
from __future__ import annotations


import streamlit as st

from ppd_core import reproduce as P
from ui import charts, widgets
from ui.paper_charts import (engines_figure, fig5_figure, fig6_figures, headline_figure, interference_figure,
                             table1_figure, table2_figure)
from ui.cards import defs as metric_defs
from ui.controls import PRESENT, Control
from ui.paper_runs import get, measured_dir

FULL_GRID = Control("paper_t2_full", "Full grid (3,060 runs)", "toggle", default=False)


def show(item: P.Item, defs: str) -> None:
    """Verdict, tolerance, notes, definitions and the simulated-vs-published table."""
    (st.success if item.ok else st.warning)(item.verdict,
                                            icon=":material/check_circle:" if item.ok else ":material/info:")
    st.caption(f"**Tolerance:** {item.tolerance}")
    for note in item.notes:
        st.caption(note)
    st.caption(defs)
    with st.expander("Simulated vs published (table)"):
        t = item.table.copy()
        t["within"] = ["" if w is None else ("yes" if w else "NO") for w in t["within"]]
        st.dataframe(t, hide_index=True, width="stretch")
        st.download_button("CSV", data=lambda t=t: t.to_csv(index=False).encode(), file_name=f"paper_{item.name}.csv",
                           mime="text/csv", on_click="ignore", icon=":material/download:", key=f"csv_{item.name}")


# ---- page ----------------------------------------------------------------------------------------------------

MEASURED = measured_dir()

state = widgets.carry_scenario("paper", (FULL_GRID, PRESENT))      # scenario keys carried for the navigation
widgets.classroom()
st.title("The paper, reproduced")
st.caption("Each section runs the simulator for one of the PPD paper's figures or tables (\"Not All Prefills Are "
           "Equal\", ICML 2026) and overlays the published numbers (and the repository's measured CSVs where they "
           "exist). The verdict says whether the simulator lands within the stated tolerance, and why not where it "
           "does not. Same output on the command line: `python -m ppd_core paper`.")
if MEASURED is None:
    st.info(f"Measured CSVs not found at {P.MEASURED_DEFAULT}: showing published numbers only.")
widgets.show_warnings(state.warnings)

items: dict[str, P.Item] = {}

st.header("1 · Interference (Fig.2, Fig.7)")
it = items["interference"] = get("interference")
charts.chart(interference_figure(it), "paper_interference")
show(it, "**Decode TPOT** = mean time per output token of the decode requests of a batch that starts together "
         "with the inserted prefill(s); each decode has a 2,048+4-token context and generates 64 tokens. **Full "
         "prefill** = 1,024 new tokens, no cache; **append-prefill** = 1,024 new tokens on a 2,048-token cached "
         "context. **Slowdown** = TPOT / decode-only TPOT − 1 at the same batch.")

st.header("2 · Table 1: the x=1 advantage")
it = items["table1"] = get("table1")
charts.chart(table1_figure(it), "paper_table1")
show(it, "**Turn-2 TTFT change** = Σ mean Turn-2 TTFT at x=1 / Σ mean Turn-2 TTFT at x=0 − 1, summed over the "
         "18 synthetic workloads and the band's QPS points (low 0.5–2, medium 4–8, high 12–20). "
         + metric_defs("ttft", "x"))

st.header("3 · Fig.5: KV-transfer bandwidth")
it = items["fig5"] = get("fig5")
charts.chart(fig5_figure(it), "paper_fig5")
show(it, "PD = 1P_3D with policy pd (every Turn 2+ through P, full-context KV transfer); PPD = 1P_3D with policy "
         "dynamic. " + metric_defs("ttft", "tpot", "e2e", "turn2"))

st.header("4 · Fig.6: the weights")
it = items["fig6"] = get("fig6")
left, right = st.columns(2)
f_share, f_front = fig6_figures(it)
with left:
    charts.chart(f_share, "paper_fig6_share")
with right:
    charts.chart(f_front, "paper_fig6_frontier")
show(it, metric_defs("s", "local", "ttft", "tpot") + "  \nChanges are relative to static PD (x=0) on the same GPUs.")

st.header("5 · Table 2: no static optimum")
st.caption("Every (workload, QPS) cell's best layout for Turn-2 mean TTFT, all-turn mean TPOT and throughput among "
           "layouts with ≥ 95 % success. The quick grid (240 runs) takes seconds; the paper's full grid (17 layouts "
           "× 18 workloads × 10 QPS = 3,060 runs) a few minutes on 2 cores, then it is cached on disk.")
c1, c2 = st.columns([1, 3])
with c1:
    full = bool(widgets.render_extra(FULL_GRID))
widgets.sync("paper", state.scenario, (FULL_GRID, PRESENT))
if c2.button("Run Table 2", key="paper_t2_run", icon=":material/play_arrow:", type="primary"):
    st.session_state["paper_t2_requested"] = True
if st.session_state.get("paper_t2_requested"):
    it = items["table2"] = get("table2", quick=not full)
    charts.chart(table2_figure(it), "paper_table2")
    show(it, "**Categories:** Replica = 4R; x=0 = 1P_3D, 2P_2D, 3P_1D; 0<x<1 = 1P_2D_1pD, 1P_1D_2pD, 2P_1D_1pD; "
             "x=1 = 1P_3pD, 2P_2pD, 3P_1pD; Hybrid = layouts mixing R with P/D. " + metric_defs("ttft", "tpot")
         + "  \n**Throughput** = generated tokens per second over the run.")
    with st.expander("Winners per cell"):
        st.dataframe(it.data, hide_index=True, width="stretch")
else:
    st.info("Press **Run Table 2** (quick grid by default).")

st.header("6 · Headline: ~68 % lower Turn 2+ TTFT")
it = items["headline"] = get("headline")
charts.chart(headline_figure(it), "paper_headline")
show(it, "**TTFT reduction** = 1 − Turn 2+ mean TTFT / the x=0 layout's. " + metric_defs("ttft", "tpot", "turn2"))

st.header("7 · Decision engines: offline table vs online Eq.1")
it = items["engines"] = get("engines")
charts.chart(engines_figure(it), "paper_engines")
show(it, "**dynamic-table** = the paper's engine: an offline table of Eq.1 signs from x=0/x=1 runs of 180 cells "
         "(context class × Turn-2 type × QPS bin), nearest cell online. **dynamic** = Eq.1 from the live cluster "
         "state per request. " + metric_defs("local", "s"))

st.header("Summary")
st.dataframe(P.summary_rows(items), hide_index=True, width="stretch")
