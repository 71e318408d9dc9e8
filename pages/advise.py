"""Advisor: rank layouts x policies for N GPUs over a QPS range and SLOs (ppd_core.advise). Thin page:
widgets -> AdviseRequest -> cached ppd_core.advise -> ranked table with Explore links + Pareto scatter."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from ppd_core.analysis import advisor as adv
from ppd_core.config import catalog
from ppd_core.config.errors import PPDError
from ppd_core.config.scenario import Scenario
from ppd_core.analysis.grid import PAPER_QPS
from ppd_core.workloads.traces import load_trace
from ppd_core.config.workload_catalog import WORKLOAD_NAMES

GPU_COUNTS = (1, 2, 4, 8, 16)
WORKLOADS = tuple(w for w in WORKLOAD_NAMES if w != "trace")
MAX_PROGRESS_UPDATES = 40


@st.cache_data(max_entries=16, show_spinner=False)
def run_advisor(req: adv.AdviseRequest, trace_bytes: bytes | None, trace_name: str) -> adv.Advice:
    """The advisor run; its progress bar is created here, so a cache hit replays it (ending empty)."""
    trace = load_trace(trace_bytes, name=trace_name) if trace_bytes is not None else None
    bar = st.progress(0.0, text="Simulating candidates…")
    step = [0]

    def progress(done: int, total: int) -> None:
        if done >= total or done * MAX_PROGRESS_UPDATES >= (step[0] + 1) * total:
            step[0] = done * MAX_PROGRESS_UPDATES // max(total, 1)
            bar.progress(done / max(total, 1), text=f"Simulating candidates… {done:,}/{total:,} runs")

    try:
        return adv.advise(req, trace=trace, progress=progress)
    finally:
        bar.empty()


def pareto_figure(ranked) -> go.Figure:
    fig = go.Figure()
    for on, name, color, size in ((False, "other candidates", "#9aa5b1", 8), (True, "Pareto front", "#1f77b4", 12)):
        d = ranked[ranked["pareto"] == on]
        if on:
            d = d.sort_values("ttft_ms")
        fig.add_trace(go.Scatter(
            x=d["ttft_ms"], y=d["tpot_ms"], mode="lines+markers" if on else "markers", name=name,
            marker=dict(size=size, color=color, symbol=["circle" if e else "x" for e in d["eligible"]]),
            line=dict(color=color, dash="dot"),
            text=[f"#{r} {lay} {lab}<br>score {s:.3f}" for r, lay, lab, s in
                  zip(d["rank"], d["layout"], d["label"], d["score"])],
            hovertemplate="%{text}<br>TTFT %{x:.1f} ms, TPOT %{y:.2f} ms<extra></extra>"))
    fig.update_layout(title="Turn 2+ TTFT vs TPOT (means over the QPS range); × = success < 95 % somewhere",
                      height=440, margin=dict(t=60, b=40, l=50, r=10), xaxis_title="Turn 2+ mean TTFT (ms)",
                      yaxis_title="Turn 2+ mean TPOT (ms)", legend=dict(orientation="h", y=-0.2))
    return fig


st.title("Advisor")
st.caption("Which layout and Turn 2+ policy for your GPUs, workload and SLOs? Every layout of the GPU count "
           "(counts of R/P/D/pD nodes) × policy (pd, ppd, dynamic with w_tpot 0.5–4 where there are D nodes) "
           "runs at every QPS; the score is the weighted Turn 2+ SLO attainment averaged over the QPS range, "
           "and a candidate below 95 % success at any QPS ranks last.")

gpus, models = tuple(catalog.gpus()), tuple(catalog.models())
with st.form("advise_form"):
    c1, c2, c3, c4 = st.columns(4)
    n_gpus = c1.selectbox("GPUs", GPU_COUNTS, index=GPU_COUNTS.index(4), key="adv_gpus")
    tp = c1.selectbox("Tensor parallel (GPUs per node)", ("1", "2", "4", "8"), key="adv_tp")
    gpu = c2.selectbox("GPU", gpus, index=gpus.index("H100-SXM") if "H100-SXM" in gpus else 0, key="adv_gpu")
    model = c2.selectbox("Model", models, index=models.index("Llama-3.1-8B") if "Llama-3.1-8B" in models else 0,
                         key="adv_model")
    workload = c3.selectbox("Workload", WORKLOADS, index=WORKLOADS.index("sharegpt"), key="adv_workload")
    conversations = c3.number_input("Conversations per run", min_value=1, max_value=2000, value=200, step=50,
                                    key="adv_convs", help="Fewer is faster; the ranking needs a few hundred.")
    qps = c4.multiselect("QPS range (conversations/s)", PAPER_QPS, default=[1, 2, 4, 8], key="adv_qps")
    s1, s2, s3, s4 = st.columns(4)
    slo_ttft = s1.number_input("TTFT SLO (ms)", min_value=1.0, max_value=1e6, value=200.0, step=10.0,
                               key="adv_slo_ttft")
    slo_tpot = s2.number_input("TPOT SLO (ms)", min_value=1.0, max_value=1e6, value=30.0, step=1.0,
                               key="adv_slo_tpot")
    w_ttft = s3.number_input("Weight of TTFT", min_value=0.0, max_value=100.0, value=1.0, step=0.5, key="adv_w_ttft")
    w_tpot = s4.number_input("Weight of TPOT", min_value=0.0, max_value=100.0, value=1.0, step=0.5, key="adv_w_tpot")
    upload = st.file_uploader("Your own trace (optional; replaces the workload): ShareGPT/WildChat JSON, Mooncake "
                              "JSONL or CSV", type=["json", "jsonl", "csv"], key="adv_trace")
    submitted = st.form_submit_button("Run advisor", type="primary", icon=":material/travel_explore:")

if submitted:
    try:
        trace_bytes = upload.getvalue() if upload is not None else None
        trace_name = upload.name if upload is not None else "trace"
        if trace_bytes is not None:
            load_trace(trace_bytes, name=trace_name)          # a bad file: one line naming the line
        base = Scenario(gpu=gpu, model=model, tp=tp, conversations=int(conversations),
                        workload="trace" if trace_bytes is not None else workload)
        req = adv.AdviseRequest(int(n_gpus), base, tuple(qps), slo_ttft, slo_tpot, w_ttft, w_tpot)
        adv.plan(req)                                         # refuse oversized plans before running
    except PPDError as exc:
        st.session_state.pop("adv_inputs", None)
        st.error(str(exc))
        st.stop()
    st.session_state["adv_inputs"] = (req, trace_bytes, trace_name)

inputs = st.session_state.get("adv_inputs")
if inputs is None:
    st.info("Pick the inputs and press **Run advisor**.")
    st.stop()

try:
    advice = run_advisor(*inputs)
except PPDError as exc:
    st.error(str(exc))
    st.stop()

ranked = advice.ranked
best = ranked.iloc[0]
st.success(f"Best: **{best['layout']}** ({best['label']}) — score {best['score']:.3f}, Turn 2+ TTFT "
           f"{best['ttft_ms']:.1f} ms, TPOT {best['tpot_ms']:.2f} ms, {best['throughput_tok_s']:,.0f} tok/s. "
           f"[Open in Explore]({best['explore']})")
for note in advice.notes:
    st.caption(note)

st.subheader("Ranked candidates")
st.dataframe(
    ranked, hide_index=True, width="stretch",
    column_config={
        "explore": st.column_config.LinkColumn("Explore", display_text="open"),
        "score": st.column_config.NumberColumn(format="%.3f"),
        "slo_ttft": st.column_config.NumberColumn("TTFT SLO", format="percent"),
        "slo_tpot": st.column_config.NumberColumn("TPOT SLO", format="percent"),
        "min_success_rate": st.column_config.NumberColumn("min success", format="percent"),
        "ttft_ms": st.column_config.NumberColumn("T2+ TTFT ms", format="%.1f"),
        "tpot_ms": st.column_config.NumberColumn("T2+ TPOT ms", format="%.2f"),
        "throughput_tok_s": st.column_config.NumberColumn("tok/s", format="%.0f"),
    })
st.caption("Score = mean over the QPS range of (w_TTFT·A_TTFT + w_TPOT·A_TPOT)/(w_TTFT + w_TPOT), where A is the "
           "share of successful Turn 2+ requests within the SLO. TTFT/TPOT columns are Turn 2+ means averaged "
           "over the QPS range; each Explore link opens the candidate at the highest QPS.")
st.plotly_chart(pareto_figure(ranked), key="adv_pareto")
st.download_button("Ranked candidates (CSV)", data=ranked.to_csv(index=False).encode(), file_name="ppd_advice.csv",
                   mime="text/csv", on_click="ignore", icon=":material/download:")
