"""The Advisor page's run (``ppd_core.analysis.advisor.advise`` in the server's pool, cached, with the one
progress adapter) and its Pareto figure."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from ppd_core.analysis import advisor as adv

from . import runner, uploads
from .progress import StreamlitProgress


@st.cache_data(max_entries=16, show_spinner=False)
def run_advisor(req: adv.AdviseRequest, trace_bytes: bytes | None, trace_name: str, time_unit: str) -> adv.Advice:
    """The advisor run in the server's pool; its progress bar is created here, so a cache hit replays it
    (ending empty)."""
    trace = uploads.import_trace_upload(trace_bytes, trace_name, time_unit)[0] if trace_bytes is not None else None
    with StreamlitProgress("Simulating candidates") as progress:
        return runner.pooled(lambda **opt: adv.advise(req, trace=trace, progress=progress, **opt), long=True)


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
            text=[f"#{r} {lay} on {g} {lab}<br>score {s:.3f}" for r, lay, g, lab, s in
                  zip(d["rank"], d["layout"], d["gpu"], d["label"], d["score"])],
            hovertemplate="%{text}<br>TTFT %{x:.1f} ms, TPOT %{y:.2f} ms<extra></extra>"))
    fig.update_layout(title="Turn 2+ TTFT vs TPOT (means over the QPS range); × = success < 95 % somewhere",
                      height=440, margin=dict(t=60, b=40, l=50, r=10), xaxis_title="Turn 2+ mean TTFT (ms)",
                      yaxis_title="Turn 2+ mean TPOT (ms)", legend=dict(orientation="h", y=-0.2))
    return fig
