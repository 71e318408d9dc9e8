"""The Paper page's figures: each reproduced item of ``ppd_core.reproduce`` overlaid on the published (and
measured) numbers. Results -> figures only."""
from __future__ import annotations

from types import MappingProxyType

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ppd_core import reproduce as P

from . import charts

SIM, PUB, MEAS = "#1f77b4", "#d62728", "#7f7f7f"
CURVE_COLORS = MappingProxyType({"decode only": "#7f7f7f", "+1 full prefill": "#d62728", "+1 append-prefill": "#1f77b4",
                "+4 full prefills": "#d62728", "+4 append-prefills": "#1f77b4"})


def _layout(fig: go.Figure, title: str, height: int = 400) -> go.Figure:
    fig.update_layout(title=title, height=height, margin=dict(t=60, b=40, l=50, r=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.25))
    return fig


def _wrap_categories(fig: go.Figure) -> go.Figure:
    """Long category labels on several lines, unrotated (rotated they ran into each other and the legend)."""
    cats = []
    for tr in fig.data:
        for c in (tr.x if tr.x is not None else ()):
            if c not in cats:
                cats.append(c)
    short = {"large_huge_paste": "huge paste", "(benchmark window)": "(bench.)"}
    text = []
    for c in map(str, cats):
        for k, v in short.items():
            c = c.replace(k, v)
        text.append(c.replace(" (", "<br>(").replace(" QPS", "<br>QPS").replace(" ", "<br>", 1))
    fig.update_xaxes(tickangle=0, tickvals=cats, ticktext=text)
    return fig


def interference_figure(item: P.Item) -> go.Figure:
    d = item.data
    pub = P.PUB_INTERFERENCE
    base = pub["decode_only_ms_b200"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("one prefill (Fig.2)", "four prefills (Fig.7)"))
    for col, curves in ((1, ("decode only", "+1 full prefill", "+1 append-prefill")),
                        (2, ("decode only", "+4 full prefills", "+4 append-prefills"))):
        for curve in curves:
            for source, dash in (("simulated", None), ("measured (older config)", "dot")):
                s = d[(d["curve"] == curve) & (d["source"] == source)].sort_values("batch")
                if s.empty:
                    continue
                fig.add_trace(go.Scatter(x=s["batch"], y=s["tpot_ms"], mode="lines", name=f"{curve} ({source})",
                                         line=dict(color=CURVE_COLORS[curve], dash=dash),
                                         legendgroup=f"{source}{curve}",
                                         showlegend=col == 1 or curve != "decode only",
                                         hovertemplate="batch %{x}: %{y:.1f} ms<extra>" + curve + "</extra>"),
                              row=1, col=col)
        n = 1 if col == 1 else 4
        xs = [200, 200, 200]
        ys = [base, base * (1 + pub[("full", n)] / 100), base * (1 + pub[("append", n)] / 100)]
        labels = ["decode only ≈28 ms", f"full +{pub[('full', n)]:g} %", f"append +{pub[('append', n)]:g} %"]
        # the paper's numbers in one note per panel (as labels at batch 200 they sat on top of each other)
        fig.add_annotation(text="paper, batch 200:<br>" + "<br>".join(labels), align="left", xref=f"x{'' if col == 1 else col} domain",
                           yref=f"y{'' if col == 1 else col} domain", x=0.02, y=0.98, xanchor="left", yanchor="top",
                           showarrow=False, font=dict(color=PUB))
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", text=labels,
                                 marker=dict(symbol="star", size=13, color=PUB), name="paper (batch 200)",
                                 showlegend=col == 1, legendgroup="paper",
                                 hovertemplate="%{text}<extra>paper</extra>"), row=1, col=col)
    fig.update_xaxes(title_text="decode batch (requests)")
    fig.update_yaxes(title_text="decode TPOT (ms)", row=1, col=1)
    return _layout(fig, "Decode TPOT vs batch with prefills in the batch: simulated (solid), measured older "
                        "config (dotted), paper (stars)", 440)


def table1_figure(item: P.Item) -> go.Figure:
    t = item.table
    fig = make_subplots(rows=1, cols=3, subplot_titles=[f"{d} → {p}" for d, p in P.TABLE1_PAIRS], shared_yaxes=True)
    for i, (d, _) in enumerate(P.TABLE1_PAIRS, start=1):
        sub = t[t["quantity"].str.startswith(d)]
        bands = [b for b, _ in P.TABLE1_BANDS]
        paper = sub[sub["source"] == "paper"]
        meas = sub[sub["source"] != "paper"]
        fig.add_trace(go.Bar(x=bands, y=paper["simulated"], name="simulated", marker_color=SIM, showlegend=i == 1,
                             legendgroup="sim", hovertemplate="%{x}: %{y:.1f} %<extra>simulated</extra>"), row=1, col=i)
        fig.add_trace(go.Bar(x=bands, y=paper["published"], name="paper", marker_color=PUB, showlegend=i == 1,
                             legendgroup="pub", hovertemplate="%{x}: %{y:.1f} %<extra>paper</extra>"), row=1, col=i)
        if len(meas):
            fig.add_trace(go.Bar(x=bands, y=meas["published"], name="measured (repo CSV)", marker_color=MEAS,
                                 showlegend=i == 1, legendgroup="meas",
                                 hovertemplate="%{x}: %{y:.1f} %<extra>measured</extra>"), row=1, col=i)
    fig.update_yaxes(title_text="Turn-2 TTFT change x=0 → x=1 (%)", row=1, col=1)
    fig.update_layout(barmode="group")
    return _layout(fig, "Table 1: Turn-2 mean TTFT change from x=0 to x=1 per QPS band (negative = better)")


def fig5_figure(item: P.Item) -> go.Figure:
    d = item.data
    fig = make_subplots(rows=1, cols=3, subplot_titles=("Turn 2+ TTFT", "Turn 2+ TPOT", "Turn 2+ E2E"))
    colors = {"PD": charts.SYSTEM_COLORS["PD"], "PPD": charts.SYSTEM_COLORS["PPD"]}
    for col, m in enumerate(("ttft", "tpot", "e2e"), start=1):
        for system in ("PD", "PPD"):
            s = d[d["system"] == system].sort_values("bandwidth_gbps")
            fig.add_trace(go.Scatter(x=s["bandwidth_gbps"], y=s[f"{m}_ms"], mode="lines+markers",
                                     name=f"{system} simulated", line=dict(color=colors[system]), legendgroup=system,
                                     showlegend=col == 1,
                                     hovertemplate="%{x} GB/s: %{y:.2f} ms<extra>" + system + "</extra>"),
                          row=1, col=col)
            p = s.dropna(subset=[f"published_{m}_ms"])
            if len(p):
                fig.add_trace(go.Scatter(x=p["bandwidth_gbps"], y=p[f"published_{m}_ms"], mode="markers",
                                         marker=dict(symbol="star", size=12, color=colors[system],
                                                     line=dict(color="black", width=1)),
                                         name=f"{system} paper", legendgroup=f"{system}p", showlegend=col == 1,
                                         hovertemplate="%{x} GB/s: %{y:.2f} ms<extra>paper " + system + "</extra>"),
                              row=1, col=col)
        fig.update_yaxes(title_text="ms", row=1, col=col)
    fig.update_xaxes(type="log", autorange="reversed", title_text="KV link bandwidth (GB/s)",
                     tickvals=list(P.FIG5_BW), ticktext=[f"{b:g}" for b in P.FIG5_BW])
    return _layout(fig, "Fig.5: 1P_3D, WildChat-like, QPS 1 — simulated lines, paper stars "
                        "(x axis: faster → slower link)")


def fig6_figures(item: P.Item) -> tuple[go.Figure, go.Figure]:
    d = item.data
    share = go.Figure()
    front = go.Figure()
    palette = ("#1f77b4", "#9467bd", "#2ca02c")
    for i, q in enumerate(sorted(d["qps"].unique())):
        s = d[(d["qps"] == q) & (d["policy"] == "dynamic")].sort_values("w_tpot")
        color = palette[i % len(palette)]
        share.add_trace(go.Scatter(x=s["w_tpot"], y=100 * s["local_share"], mode="lines+markers",
                                   name=f"QPS {q:g} simulated", line=dict(color=color),
                                   hovertemplate="w_tpot %{x}: %{y:.0f} %<extra>QPS " + f"{q:g}</extra>"))
        all_q = d[d["qps"] == q].copy()
        order = {"pd": 0, "dynamic": 1, "ppd": 2}
        all_q["o"] = [order[p] for p in all_q["policy"]]
        all_q = all_q.sort_values(["o", "w_tpot"], ascending=[True, False])
        labels = [s_ if p != "dynamic" else f"w_tpot={w:g}" for s_, p, w in
                  zip(all_q["setting"], all_q["policy"], all_q["w_tpot"])]
        front.add_trace(go.Scatter(x=all_q["tpot_change_pct"], y=all_q["ttft_change_pct"], mode="lines+markers",
                                   name=f"QPS {q:g} simulated", line=dict(color=color), text=labels,
                                   customdata=100 * all_q["local_share"],
                                   hovertemplate="%{text}: TPOT %{x:+.1f} %, TTFT %{y:+.1f} %, local "
                                                 "%{customdata:.0f} %<extra>QPS " + f"{q:g}</extra>"))
        if q in P.PUB_FIG6_X1:
            t_, p_ = P.PUB_FIG6_X1[q]
            first = not any(tr.name and tr.name.endswith("paper ends") for tr in front.data)
            front.add_trace(go.Scatter(x=[0, p_], y=[0, t_], mode="markers+text",
                                       text=["PD (all QPS)" if first else "", f"x=1 QPS {q:g}"],
                                       textposition=["top left", "top right" if i % 2 == 0 else "bottom right"],
                                       marker=dict(symbol="star", size=12, color=color,
                                                   line=dict(color="black", width=1)),
                                       name=f"QPS {q:g} paper ends",
                                       hovertemplate="paper: TPOT %{x:+.1f} %, TTFT %{y:+.1f} %<extra></extra>"))
    pub = [(w, v) for w, v in P.PUB_FIG6_LOCAL.items() if w != "pd"]
    share.add_trace(go.Scatter(x=[w for w, _ in pub], y=[v for _, v in pub], mode="markers",
                               marker=dict(symbol="star", size=13, color=PUB), name="paper",
                               hovertemplate="w_tpot %{x}: %{y:.0f} %<extra>paper</extra>"))
    share.update_xaxes(title_text="w_tpot (w_ttft = 1)")
    share.update_yaxes(title_text="Turn 2+ served locally (%)", range=[-5, 105])
    front.update_xaxes(title_text="Turn 2+ TPOT change vs static PD (%)")
    front.update_yaxes(title_text="Turn 2+ TTFT change vs static PD (%)")
    return (_layout(share, "Local share vs w_tpot"),
            _layout(front, "TTFT–TPOT frontier, relative to static PD (x=0)"))


def table2_figure(item: P.Item) -> go.Figure:
    t = item.table
    metrics = ("TTFT", "TPOT", "Throughput")
    fig = make_subplots(rows=1, cols=3, subplot_titles=[f"best {m}" for m in metrics], shared_yaxes=True)
    for i, m in enumerate(metrics, start=1):
        sub = t[t["quantity"].str.startswith(f"{m} wins")]
        cats = [q.split(": ", 1)[1] for q in sub["quantity"]]
        fig.add_trace(go.Bar(x=cats, y=sub["simulated"], name="simulated", marker_color=SIM, showlegend=i == 1,
                             legendgroup="sim", hovertemplate="%{x}: %{y:.1f} %<extra>simulated</extra>"), row=1, col=i)
        fig.add_trace(go.Bar(x=cats, y=sub["published"], name="paper", marker_color=PUB, showlegend=i == 1,
                             legendgroup="pub", hovertemplate="%{x}: %{y:.1f} %<extra>paper</extra>"), row=1, col=i)
    fig.update_yaxes(title_text="% of (workload, QPS) cells won", row=1, col=1)
    fig.update_layout(barmode="group")
    return _layout(fig, "Table 2: share of cells each layout category wins")


def headline_figure(item: P.Item) -> go.Figure:
    d = item.data
    t = item.table
    meas = t[(t["source"] != "paper") & (t["unit"] == "ms")]
    fig = go.Figure()
    for system, color in (("2P_2D (x=0)", charts.SYSTEM_COLORS["PD"]), ("2P_2pD (x=1)", charts.SYSTEM_COLORS["PPD"]),
                          ("2P_2D dynamic (PPD)", "#17becf")):
        s = d[d["system"] == system]
        fig.add_trace(go.Bar(x=[f"QPS {q:g}" for q in s["qps"]], y=s["ttft_ms"], name=f"{system} simulated",
                             marker_color=color, hovertemplate="%{x}: %{y:.1f} ms<extra>" + system + "</extra>"))
        m = meas[meas["quantity"].str.contains(system, regex=False)]
        if len(m):
            fig.add_trace(go.Bar(x=[q.split(":")[0] for q in m["quantity"]], y=m["published"],
                                 name=f"{system} measured", marker=dict(color=color, pattern_shape="/", opacity=0.55),
                                 hovertemplate="%{x}: %{y:.1f} ms<extra>measured " + system + "</extra>"))
    fig.update_layout(barmode="group", yaxis_title="Turn 2+ mean TTFT (ms)")
    return _layout(fig, "ShareGPT-like traffic: Turn 2+ mean TTFT, simulated (solid) vs measured sharegpt.csv "
                        "(hatched); paper: ~68 % lower with PPD")


def engines_figure(item: P.Item) -> go.Figure:
    d = item.data
    # stacked, sharing the case axis: side by side the eight long case labels did not fit
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("local share", "Turn 2+ TTFT"))
    colors = {"pd": charts.SYSTEM_COLORS["PD"], "ppd": charts.SYSTEM_COLORS["PPD"], "dynamic": "#17becf",
              "dynamic-table": "#9467bd"}
    for pol, color in colors.items():
        s = d[d["policy"] == pol]
        fig.add_trace(go.Bar(x=s["case"], y=100 * s["local_share"], name=pol, marker_color=color, legendgroup=pol,
                             hovertemplate="%{x}: %{y:.0f} %<extra>" + pol + "</extra>"), row=1, col=1)
        fig.add_trace(go.Bar(x=s["case"], y=s["ttft_ms"], name=pol, marker_color=color, legendgroup=pol,
                             showlegend=False, hovertemplate="%{x}: %{y:.1f} ms<extra>" + pol + "</extra>"),
                      row=2, col=1)
    fig.update_yaxes(title_text="%", row=1, col=1)
    fig.update_yaxes(title_text="ms", type="log", row=2, col=1)
    fig.update_layout(barmode="group")
    _wrap_categories(fig)
    _layout(fig, "Offline table (dynamic-table) vs online Eq.1 (dynamic), with the static ends", 620)
    fig.update_layout(legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"))
    pos = d["ttft_ms"][d["ttft_ms"] > 0]
    if len(pos):
        ticks = charts._log_ticks(float(pos.min()), float(pos.max()))
        fig.update_yaxes(tickvals=ticks, ticktext=[f"{t:,g}" for t in ticks], row=2, col=1)
    return fig
