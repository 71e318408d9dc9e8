"""Paper: the PPD paper's figures and tables reproduced by the simulator, overlaid on the published numbers.

Thin page over ``ppd_core.paper``: every item is one cached run (its progress bar is created inside the cached
function, so a cache hit replays it and ends empty) and one Plotly chart built here from the item's tables.
"""
from __future__ import annotations


import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from ppd_core import paper as P
from ppd_core.errors import PPDError
from ppd_core.sweep import code_version
from ui import charts, runner, widgets
from ui.cards import defs as metric_defs
from ui.controls import Control

FULL_GRID = Control("paper_t2_full", "Full grid (3,060 runs)", "toggle", default=False)
SIM, PUB, MEAS = "#1f77b4", "#d62728", "#7f7f7f"
CURVE_COLORS = {"decode only": "#7f7f7f", "+1 full prefill": "#d62728", "+1 append-prefill": "#1f77b4",
                "+4 full prefills": "#d62728", "+4 append-prefills": "#1f77b4"}


@st.cache_data(max_entries=32, show_spinner=False)
def run_item(name: str, quick: bool, measured: str | None, version: str) -> P.Item:
    """One paper item (``version``: the simulator's code + parameter version, so recalibration re-runs)."""
    with runner.Progress(f"{name}: simulating") as progress:
        return P.run_item(name, quick=quick, measured_dir=measured, progress=progress)


def get(name: str, quick: bool = False) -> P.Item:
    try:
        return run_item(name, quick, MEASURED, VERSION)
    except PPDError as exc:
        st.error(f"{name}: {exc}")
        st.stop()


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


def _layout(fig: go.Figure, title: str, height: int = 400) -> go.Figure:
    fig.update_layout(title=title, height=height, margin=dict(t=60, b=40, l=50, r=10),
                      legend=dict(orientation="h", y=-0.22))
    return fig


# ---- figures -------------------------------------------------------------------------------------------------

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
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers+text", text=labels, textposition="middle left",
                                 textfont=dict(size=10, color=PUB),
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
            front.add_trace(go.Scatter(x=[0, p_], y=[0, t_], mode="markers+text", text=["PD", "x=1"],
                                       textposition="top right", marker=dict(symbol="star", size=12, color=color,
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
    fig = make_subplots(rows=1, cols=2, subplot_titles=("local share", "Turn 2+ TTFT"))
    colors = {"pd": charts.SYSTEM_COLORS["PD"], "ppd": charts.SYSTEM_COLORS["PPD"], "dynamic": "#17becf",
              "dynamic-table": "#9467bd"}
    for pol, color in colors.items():
        s = d[d["policy"] == pol]
        fig.add_trace(go.Bar(x=s["case"], y=100 * s["local_share"], name=pol, marker_color=color, legendgroup=pol,
                             hovertemplate="%{x}: %{y:.0f} %<extra>" + pol + "</extra>"), row=1, col=1)
        fig.add_trace(go.Bar(x=s["case"], y=s["ttft_ms"], name=pol, marker_color=color, legendgroup=pol,
                             showlegend=False, hovertemplate="%{x}: %{y:.1f} ms<extra>" + pol + "</extra>"),
                      row=1, col=2)
    fig.update_yaxes(title_text="%", row=1, col=1)
    fig.update_yaxes(title_text="ms", type="log", row=1, col=2)
    fig.update_layout(barmode="group")
    return _layout(fig, "Offline table (dynamic-table) vs online Eq.1 (dynamic), with the static ends", 480)


# ---- page ----------------------------------------------------------------------------------------------------

VERSION = code_version()
MEASURED = str(P.MEASURED_DEFAULT) if P.MEASURED_DEFAULT.is_dir() else None

state = widgets.carry_scenario("paper", (FULL_GRID,))      # scenario keys carried for the navigation
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
widgets.sync("paper", state.scenario, (FULL_GRID,))
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
