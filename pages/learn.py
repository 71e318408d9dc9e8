"""Learn: prefill, decode, KV cache, PD, append-prefill and PPD, each illustrated from the simulator.

Only what changed is redrawn: stepping through the events (or widening the window) reruns the timeline and the
share box, the interference controls rerun their chart and the share box (keyed fragments); the sidebar's
scenario reruns the page."""
import streamlit as st

from ui import cards, charts, runner, timeline, widgets
from ui.controls import PRESENT, Control, step_control

PREFILLS = Control("learn_prefills", "Prefills inserted into the decode batch", "radio", options=("1", "2", "4"),
                     default="1", help="How many prefills join the decode batch at once (paper Fig.2: 1, Fig.7: 4).")
PREFILL_TOKENS = Control("learn_prefill_tokens", "New tokens per prefill", "select_slider",
                           options=("128", "256", "512", "1024", "2048", "4096"), default="1024")
CACHED_TOKENS = Control("learn_cached_tokens", "Cached context of the append-prefill", "select_slider",
                          options=("512", "1024", "2048", "4096", "8192", "16384", "32768", "65536"), default="2048",
                          help="Tokens already in the decode node's prefix cache (paper Fig.8 varies this).")
WINDOW = Control("learn_window", "Time window around the event (ms; all = the whole run)", "select_slider",
                 options=("20", "50", "100", "200", "500", "1000", "2000", "5000", "all"), default="200",
                 help="The timeline's x axis follows the current event: this much simulated time is shown.")
BATCHES = tuple(range(0, 257, 16))
#: The page's own URL keys (the step's range depends on the run; validated as a non-negative integer first).
EXTRAS = (Control("learn_step", "step", "slider", lo=0, step=1), WINDOW, PREFILLS, PREFILL_TOKENS, CACHED_TOKENS,
          PRESENT)

state = widgets.scenario_sidebar("learn", extras=EXTRAS)
widgets.classroom()
sc = state.scenario
widgets.nav_links(sc, "learn")

st.title("Learn: why PPD serves Turn 2+ on the decode node")
widgets.show_warnings(state.warnings)
if state.infeasible:
    st.error(f"Nothing to simulate: {state.infeasible}", icon=":material/memory:")
    st.stop()

kvb = timeline.kv_bytes_per_token(sc.model)
st.markdown(f"""
**Prefill** runs the whole prompt through the model at once. It is compute-bound, produces the first output
token, and leaves behind the **KV cache**: the attention keys and values of every processed token, per layer.
For {sc.model} that is {kvb:,} bytes per token, so a 2,048-token context holds {cards.fmt_bytes(2048 * kvb)} of KV.

**Decode** then generates one token per step for every request in the batch. Each step reads the weights and the
KV of all running requests: it is memory-bound, and its step time is the **TPOT** users feel while text streams.

**PD disaggregation** runs prefill on P nodes and decode on D nodes, and ships the KV from P to D over the link,
so long prefills do not stall running decodes. In a multi-turn chat that pipeline is re-run *every turn*: P never
saw the previous answer (the KV only flows P → D), so it re-prefills the answer plus the new message and sends the
KV of the **whole** context again.

**Append-prefill** serves Turn 2+ on the decode node that already holds the conversation in its prefix cache: only
the new tokens are computed (attending over the cached ones, O(m·(n+m)) instead of O(n²)) and nothing moves over
the link. It also disturbs the co-batched decodes far less than a full prefill does (see the interference picture).

**PPD** keeps Turn 1 on P → D (there is no cache yet) and serves Turn 2+ locally: always on a prefill-capable
decode node **pD** (x = 1), or per request on a D node by Eq.1, S = w_ttft·ΔTTFT − w_tpot·ΔTPOT (S > 0 → local).
""")

st.header("1 · A request timeline, PD and PPD side by side")
pd_layout = runner.baseline_scenarios(sc)["PD"].layout
st.caption(f"The sidebar scenario with {sc.conversations} conversation(s): PD = {pd_layout} "
           f"(policy pd), PPD = {sc.layout} (policy {sc.policy}). Step through the events to see prefills, KV "
           "transfers and decodes happen. " + cards.defs("ttft", "tpot"))

scenarios = runner.run_or_stop(lambda: runner.baseline_scenarios(sc))
shown = {"PD": scenarios["PD"], "PPD": sc}
with st.spinner("Simulating the timeline…"):
    runs = {name: runner.run_or_stop(lambda s=s: runner.simulate(s, record_spans=True)) for name, s in shown.items()}
spans = {name: timeline.phases(r["spans"]) if r["spans"] is not None else None for name, r in runs.items()}
events = timeline.timeline_events(spans)
n_ev = len(events)
t_end = float(events[-1]) if n_ev else 0.0
step_ctrl = step_control(n_ev)
EXTRAS_NOW = (step_ctrl, WINDOW, PREFILLS, PREFILL_TOKENS, CACHED_TOKENS, PRESENT)
TIMELINE = ("learn_timeline", "learn_share")            # what a step or the window reruns
INTERFERENCE = ("learn_interference", "learn_share")    # what the interference controls rerun


@st.fragment(key="learn_timeline")
def timeline_panel() -> None:
    b1, b2, b3, b4 = st.columns([1, 1, 4, 3])
    b1.button("◀ Previous", on_click=widgets.move_step, args=(-1, n_ev, TIMELINE), key="_learn_prev",
              width="stretch")
    b2.button("Next ▶", on_click=widgets.move_step, args=(1, n_ev, TIMELINE), key="_learn_next", width="stretch")
    with b3:
        step = widgets.render_extra(step_ctrl, rerun=TIMELINE) if n_ev > 1 else 0
    with b4:
        win = widgets.render_extra(WINDOW, rerun=TIMELINE)
    t_now = float(events[min(int(step), n_ev - 1)]) if n_ev else 0.0
    lines = timeline.event_lines(spans, t_now)
    st.markdown(f"**Event {int(step) + 1} of {n_ev} at t = {t_now * 1e3:,.1f} ms** — {timeline.caption(lines)}")
    charts.chart(timeline.gantt_spec(spans, t_now, t_end, None if win == "all" else float(win) / 1e3),
                 "learn_gantt", "Colours: " + "; ".join(f"**{name}** {meaning}" for name, _, meaning in timeline.PHASES)
                 + ". Hover a bar for its conversation(s); zoom with the window control or by dragging.")
    with st.expander("Everything that starts or ends at this event", expanded=False):
        st.markdown("  \n".join(lines) if lines else "_nothing starts or ends exactly here_")


timeline_panel()

with st.expander("Per-request numbers of this timeline"):
    for name, r in runs.items():
        st.markdown(f"**{name}** ({shown[name].layout}, policy {shown[name].policy})")
        cols = ["conversation", "turn", "path", "prefill_node", "decode_node", "prompt_tokens", "cached_tokens",
                "prefill_tokens", "output_tokens", "kv_bytes", "ttft_ms", "tpot_ms", "e2e_ms", "status"]
        rec = r["records"]
        st.dataframe(rec[[c for c in cols if c in rec.columns]], hide_index=True, width="stretch")

st.header("2 · Interference: what a prefill does to the decodes batched with it")
st.caption("Decode TPOT of a batch that starts together with inserted prefills, full (no cache) or append "
           "(new tokens on a cached context), from the simulator's performance model for "
           f"{sc.gpu} / {sc.model} / tp={sc.tp} (the paper's Fig.2 micro-benchmark). " + cards.defs("tpot"))


@st.fragment(key="learn_interference")
def interference_panel() -> None:
    c1, c2, c3 = st.columns(3)
    with c1:
        n_prefills = int(widgets.render_extra(PREFILLS, rerun=INTERFERENCE))
    with c2:
        p_tokens = int(widgets.render_extra(PREFILL_TOKENS, rerun=INTERFERENCE))
    with c3:
        c_tokens = int(widgets.render_extra(CACHED_TOKENS, rerun=INTERFERENCE))
    curve = runner.run_or_stop(lambda: runner.interference_curve(sc, BATCHES, n_prefills, p_tokens, c_tokens))
    charts.chart(charts.interference_figure(curve, n_prefills, p_tokens, c_tokens), "learn_interference",
            "The percentages at the right end are the slowdown against decode-only at the largest batch. The paper "
            "measured about +48 % (full) vs +2 % (append) for one 1,024-token prefill at batch 200 on an H100.")


interference_panel()


@st.fragment(key="learn_share")
def share_panel() -> None:
    widgets.share_box("learn", sc, EXTRAS_NOW)


share_panel()

runner.start_workers()      # after the results are on screen: later changes run side by side
