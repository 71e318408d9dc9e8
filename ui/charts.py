"""Plotly figures of results (results -> figures only), and a chart with its PNG download."""
from __future__ import annotations

import math
from types import MappingProxyType
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ppd_core.config.scenario import Scenario

from .exports import png_bytes
from .specs import (HOUSE_LAYOUT, HOUSE_XAXIS, HOUSE_YAXIS, SYSTEM_COLORS, SYSTEMS, _log_ticks,  # noqa: F401
                    browser_form, by_turn_spec, cdf_spec, readable_spec, sent_figure, shown_figure,
                    spec_figure, systems_spec)

KIND_COLORS = MappingProxyType({"prefill": "#d62728", "transfer": "#9467bd", "decode": "#1f77b4",
                                "mixed": "#ff7f0e", "append": "#2ca02c"})    # as ui.timeline.PHASES


def cdf_figure(results: Mapping[str, dict], scenarios: Mapping[str, Scenario], metric: str,
               title: str, log_x: bool = True, turn1: bool = True) -> go.Figure:
    """``cdf_spec`` as a figure."""
    return spec_figure(cdf_spec(results, scenarios, metric, title, log_x, turn1))


def by_turn_figure(results: Mapping[str, dict], scenarios: Mapping[str, Scenario], metric: str = "ttft_ms",
                   title: str = "TTFT") -> go.Figure:
    """``by_turn_spec`` as a figure."""
    return spec_figure(by_turn_spec(results, scenarios, metric, title))


def systems_figure(summaries: Mapping[str, dict], layouts: Mapping[str, str], slo_ttft: tuple = (),
                   slo_tpot: tuple = (), height: int = 290) -> go.Figure:
    """``systems_spec`` as a figure."""
    return spec_figure(systems_spec(summaries, layouts, slo_ttft, slo_tpot, height))


def band_figure(df: pd.DataFrame, x: str, metric: str, title: str, x_title: str, log_x: bool = False,
                marks: Mapping[str, float] | None = None, errors: Mapping[str, float] | None = None) -> go.Figure:
    """p50 line with a p10-p90 band (go.Scatter fill="tonexty") per system. ``df`` has columns
    system, ``x``, ``{metric}_p10/_p50/_p90``. ``marks``: {system: x} drawn as a dashed vertical line in the
    system's colour, labelled "<system> goodput <x>" (the Sweep's load axis). ``errors``: {system: expected
    simulator error in %} drawn as dotted lines at p50 x (1 +- error), one legend entry for all."""
    fig = go.Figure()
    shown_error = False
    for name in [s for s in SYSTEMS if s in set(df["system"])]:
        d = df[df["system"] == name].sort_values(x)
        color = SYSTEM_COLORS.get(name, "#444")
        e = (errors or {}).get(name, 0.0)
        if e > 0:
            for sign in (1, -1):
                fig.add_trace(go.Scatter(
                    x=d[x], y=d[f"{metric}_p50"] * (1 + sign * e / 100), mode="lines",
                    line=dict(color=color, width=1.2, dash="dot"), legendgroup="expected_error",
                    name="expected simulator error (p50 ±)", showlegend=not shown_error,
                    hovertemplate=f"{name}: p50 {'+' if sign > 0 else '−'}{e:.0f} % (expected simulator error)"
                                  "<extra></extra>"))
                shown_error = True
        rgba = _rgba(color, 0.18)
        fig.add_trace(go.Scatter(x=d[x], y=d[f"{metric}_p90"], mode="lines", line=dict(width=0),
                                 showlegend=False, legendgroup=name, hoverinfo="skip", name=f"{name} p90"))
        fig.add_trace(go.Scatter(x=d[x], y=d[f"{metric}_p10"], mode="lines", line=dict(width=0), fill="tonexty",
                                 fillcolor=rgba, showlegend=False, legendgroup=name, hoverinfo="skip",
                                 name=f"{name} p10–p90"))
        fig.add_trace(go.Scatter(x=d[x], y=d[f"{metric}_p50"], mode="lines+markers", name=f"{name} p50",
                                 line=dict(color=color), legendgroup=name,
                                 customdata=np.stack([d[f"{metric}_p10"], d[f"{metric}_p90"]], axis=-1),
                                 hovertemplate=f"{x_title} %{{x}}: p50 %{{y:.1f}} ms "
                                               "(p10 %{customdata[0]:.1f}, p90 %{customdata[1]:.1f})<extra>"
                                               + name + "</extra>"))
    fig.update_layout(title=title, height=360, margin=dict(t=60, b=40, l=50, r=10), xaxis_title=x_title,
                      yaxis_title=f"Turn 2+ {metric.split('_')[0].upper()} (ms)",
                      legend=dict(orientation="h", y=-0.25))
    if log_x:
        ticks = sorted(set(df[x]))
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    if marks:
        add_marks(fig, marks, float(df[x].min()), float(df[x].max()))
    return fig


def add_marks(fig: go.Figure, marks: Mapping[str, float], lo: float, hi: float) -> None:
    """One dashed vertical line per system at its mark, the label at the top of the plot, each system in its
    own row (so two close marks never share a label line), anchored towards the inside of the axis."""
    hi = max([hi] + list(marks.values()))
    for row, name in enumerate(n for n in SYSTEMS if n in marks):
        v = marks[name]
        color = SYSTEM_COLORS.get(name, "#444")
        fig.add_vline(x=v, line=dict(color=color, dash="dash", width=1.5))
        right = v > lo + 0.6 * (hi - lo)
        fig.add_annotation(x=v, xref="x", y=1 - 0.11 * row, yref="paper", yanchor="top", showarrow=False,
                           text=f"{name} goodput {v:.3g}", xanchor="right" if right else "left",
                           xshift=-4 if right else 4, font=dict(color=color), bgcolor="rgba(255,255,255,0.8)")


def frontier_figure(df: pd.DataFrame, refs: pd.DataFrame | None = None) -> go.Figure:
    """Turn 2+ TTFT vs TPOT (mean, and p50 dotted) as w_tpot goes over the frontier's grid; ``refs`` (column
    ``label``) adds the x=0 and x=1 extremes. Labels (w_tpot span and local share per distinct operating point,
    and the extremes) sit in a column right of the plot, one slot each in the order of their points' TTFT,
    joined to their point by a thin line, so no two labels can overlap whatever the points do."""
    d = df.sort_values("w_tpot").reset_index(drop=True)
    lo_w, hi_w = float(d["w_tpot"].min()), float(d["w_tpot"].max())
    # one label per distinct operating point (several weights often give the same decisions)
    key = d[["tpot_mean", "ttft_mean"]].round(6).apply(tuple, axis=1)
    labels = []           # (x, y, text, colour)
    for i, k in enumerate(key):
        same = d.loc[key == k, "w_tpot"]
        if same.index[0] == i:
            span = f"{same.min():g}" if len(same) == 1 else f"{same.min():g}–{same.max():g}"
            labels.append((d.loc[i, "tpot_mean"], d.loc[i, "ttft_mean"],
                           f"w_tpot {span}: local {100 * d.loc[i, 'local_share']:.0f}%", SYSTEM_COLORS["PPD"]))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=d["tpot_mean"], y=d["ttft_mean"], mode="lines+markers",
                             name=f"PPD mean (w_tpot {lo_w:g} → {hi_w:g})",
                             line=dict(color=SYSTEM_COLORS["PPD"]), customdata=np.stack(
                                 [d["w_tpot"], 100 * d["local_share"]], axis=-1),
                             hovertemplate="w_tpot %{customdata[0]:g}: TPOT %{x:.2f} ms, TTFT %{y:.1f} ms, "
                                           "local %{customdata[1]:.0f}%<extra>mean</extra>"))
    fig.add_trace(go.Scatter(x=d["tpot_ms_p50"], y=d["ttft_ms_p50"], mode="lines+markers", name="PPD p50",
                             line=dict(color=SYSTEM_COLORS["PPD"], dash="dot"), customdata=d["w_tpot"],
                             hovertemplate="w_tpot %{customdata:g}: TPOT %{x:.2f} ms, TTFT %{y:.1f} ms"
                                           "<extra>p50</extra>"))
    if refs is not None and len(refs):
        fig.add_trace(go.Scatter(x=refs["tpot_mean"], y=refs["ttft_mean"], mode="markers", name="extremes (mean)",
                                 text=refs["label"], marker=dict(symbol="x", size=11, color="#555"),
                                 hovertemplate="%{text}: TPOT %{x:.2f} ms, TTFT %{y:.1f} ms<extra></extra>"))
        labels += [(r["tpot_mean"], r["ttft_mean"], r["label"], "#555") for _, r in refs.iterrows()]
    extent = list(zip(d["tpot_ms_p50"], d["ttft_ms_p50"]))
    _label_column(fig, labels, extent)
    fig.update_layout(title=f"Weights frontier: Turn 2+ TTFT vs TPOT as w_tpot goes {lo_w:g} → {hi_w:g}",
                      height=460, margin=dict(t=60, b=40, l=50, r=260), xaxis_title="Turn 2+ TPOT (ms)",
                      yaxis_title="Turn 2+ TTFT (ms)", legend=dict(orientation="h", y=-0.2))
    return fig


def _label_column(fig: go.Figure, labels: list, extent: list = ()) -> None:
    """Labels in evenly spaced slots right of the plot (paper x > 1), in the order of their points' y, each
    joined to its point: the axis ranges are fixed here so the data-to-paper mapping is known."""
    pts = [(float(x), float(y), t, c) for x, y, t, c in labels if math.isfinite(float(x)) and math.isfinite(float(y))]
    if not pts:
        return
    more = [(float(x), float(y)) for x, y in extent if math.isfinite(float(x)) and math.isfinite(float(y))]
    xs, ys = [p[0] for p in pts] + [p[0] for p in more], [p[1] for p in pts] + [p[1] for p in more]
    (x0, x1), (y0, y1) = (_pad(min(xs), max(xs)), _pad(min(ys), max(ys)))
    fig.update_xaxes(range=[x0, x1])
    fig.update_yaxes(range=[y0, y1])
    order = sorted(range(len(pts)), key=lambda i: pts[i][1])
    n = len(pts)
    for slot, i in enumerate(order):
        x, y, text, color = pts[i]
        sy = 0.5 if n == 1 else 0.04 + 0.92 * slot / (n - 1)            # paper y of the label's slot
        fig.add_annotation(x=1.02, xref="paper", y=sy, yref="paper", text=text, showarrow=False, xanchor="left",
                           yanchor="middle", font=dict(color=color))
        fig.add_shape(type="line", xref="paper", yref="paper", x0=(x - x0) / (x1 - x0), y0=(y - y0) / (y1 - y0),
                      x1=1.015, y1=sy, line=dict(color=color, width=0.7, dash="dot"))


def _pad(lo: float, hi: float, share: float = 0.08) -> tuple[float, float]:
    span = hi - lo if hi > lo else max(abs(hi), 1.0) * 0.1
    return lo - share * span, hi + share * span


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def interference_figure(df: pd.DataFrame, n_prefills: int, prefill_tokens: int, cached_tokens: int) -> go.Figure:
    labels = {"none": "decode only", "full": f"+{n_prefills} full prefill ({prefill_tokens} tok, no cache)",
              "append": f"+{n_prefills} append-prefill ({prefill_tokens} tok on {cached_tokens} cached)"}
    colors = {"none": "#7f7f7f", "full": KIND_COLORS["prefill"], "append": KIND_COLORS["append"]}
    fig = go.Figure()
    for kind in ("none", "full", "append"):
        d = df[df["kind"] == kind]
        fig.add_trace(go.Scatter(x=d["batch"], y=d["tpot_ms"], mode="lines+markers", name=labels[kind],
                                 line=dict(color=colors[kind], dash="dot" if kind == "none" else None),
                                 hovertemplate="batch %{x}: %{y:.2f} ms<extra>" + kind + "</extra>"))
    # annotate the slowdown at the largest batch
    last = df["batch"].max()
    base = df[(df["batch"] == last) & (df["kind"] == "none")]["tpot_ms"]
    for kind in ("full", "append"):
        v = df[(df["batch"] == last) & (df["kind"] == kind)]["tpot_ms"]
        if len(base) and len(v) and base.iloc[0] > 0:
            pct = 100 * (v.iloc[0] / base.iloc[0] - 1)
            fig.add_annotation(x=last, y=v.iloc[0], text=f"{pct:+.0f}%", showarrow=False, xanchor="left",
                               font=dict(color=colors[kind]))
    fig.update_layout(title="Interference: decode TPOT vs batch size with a prefill in the batch", height=400,
                      margin=dict(t=60, b=40, l=50, r=40), xaxis_title="decode batch size (requests)",
                      yaxis_title="decode TPOT (ms)", legend=dict(orientation="h", y=-0.2))
    return fig


def readable(fig: go.Figure, present: bool = False) -> go.Figure:
    """The house style (``specs.HOUSE_LAYOUT``), dark text at a readable size (classroom mode: ≥ 16 px
    everywhere, taller charts)."""
    base = 18 if present else 13
    fig.update_layout(dict(HOUSE_LAYOUT))
    fig.update_xaxes(dict(HOUSE_XAXIS))
    fig.update_yaxes(dict(HOUSE_YAXIS))
    fig.update_layout(font=dict(size=base, color="#222"), title_font=dict(size=base + 3), legend_font_size=base)
    fig.update_xaxes(tickfont_size=base, title_font_size=base)
    fig.update_yaxes(tickfont_size=base, title_font_size=base)
    fig.update_annotations(font_size=base)
    if present:
        fig.update_layout(height=max(int(fig.layout.height or 400), 540))
        fig.update_traces(selector=dict(type="scatter"), textfont_size=base)
        fig.update_traces(selector=dict(type="bar"), textfont_size=base)
    return fig


def chart(fig: go.Figure | Mapping, key: str, caption: str | None = None, filename: str | None = None,
          context: str | None = None) -> None:
    """A Plotly chart with its metric definitions and a PNG download (rendered on click; ``context``, the
    scenario's short description and link, goes in the PNG's footer). ``fig``: a figure, or a spec (``*_spec``,
    styled as plain dicts: no Plotly validation on the slider path)."""
    present = bool(st.session_state.get("_present"))
    if isinstance(fig, Mapping):
        spec = fig
        st.plotly_chart(sent_figure(spec, present), key=key, config={"displaylogo": False}, theme=None)
        fig = None                      # the PNG's figure is built only if the button is pressed
    else:
        fig = browser_form(readable(fig, present).to_dict())
        spec = None
        st.plotly_chart(fig, key=key, config={"displaylogo": False}, theme=None)   # styled by readable*
    if caption and not present:
        st.caption(caption)
    ctx = context if context is not None else st.session_state.get("_context")
    png_fig = (lambda: fig) if fig is not None else (lambda: shown_figure(spec, present))
    st.download_button("PNG", data=lambda: png_bytes(png_fig(), ctx), file_name=filename or f"{key}.png",
                       mime="image/png", key=f"png_{key}", on_click="ignore", icon=":material/download:")
