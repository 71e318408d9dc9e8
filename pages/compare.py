"""Compare two shared links: their scenarios' diff and their results side by side, with the deltas."""
import streamlit as st

from ui import compare, runner, widgets
from ui.controls import PRESENT, Control

LINK_A = Control("cmp_a", "Link A", "text", default="", hi=4000,
                 help="Paste a shared link of any page (or key=value&… pairs); page-only keys are ignored.")
LINK_B = Control("cmp_b", "Link B", "text", default="", hi=4000, help=LINK_A.help)

state = widgets.carry_scenario("compare", (LINK_A, LINK_B, PRESENT))
widgets.classroom()
st.title("Compare two links")
st.caption("Paste two shared links (from any page). The page shows which scenario keys differ and both runs "
           "side by side with B − A. This page's own link keeps both, so a comparison is shareable too.")
widgets.show_warnings(state.warnings)
c1, c2 = st.columns(2)
with c1:
    a_link = widgets.render_extra(LINK_A)
with c2:
    b_link = widgets.render_extra(LINK_B)
url = widgets.sync("compare", state.scenario, (LINK_A, LINK_B, PRESENT))
if not a_link or not b_link:
    st.info("Paste a link into A and B (e.g. open Explore, change one control, copy the address).",
            icon=":material/link:")
    st.stop()

(sa, pa), (sb, pb) = compare.scenario_of(a_link), compare.scenario_of(b_link)
for name, probs in (("A", pa), ("B", pb)):
    for p in probs[:5]:
        st.warning(f"Link {name}: {p}", icon="⚠️")
d = compare.diff(sa, sb)
st.subheader("Scenario diff")
st.markdown(compare.describe_diff(d))
if not d.empty:
    st.table(d.set_index("key"))

with st.spinner("Simulating both…", show_time=True):
    ra = runner.run_or_stop(lambda: runner.simulate(sa), "Link A")
    rb = runner.run_or_stop(lambda: runner.simulate(sb), "Link B")
st.subheader("Results side by side")
st.caption(f"A = {sa.layout} (policy {sa.policy}), B = {sb.layout} (policy {sb.policy}). Turn 2+ = turns ≥ 2.")
st.table(compare.results_table(ra["summary"], rb["summary"]))
st.caption("Share this comparison:")
st.code(url, language=None, wrap_lines=True)
runner.start_workers()
