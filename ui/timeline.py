"""The teaching timeline: a per-node Gantt of the spans of a run, and stepping through its events."""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .charts import KIND_COLORS


def timeline_events(spans_by_system: Mapping[str, pd.DataFrame]) -> np.ndarray:
    """Sorted distinct span boundaries (s) over all systems: the stops of the teaching slider."""
    times = [np.concatenate([s["start_s"].to_numpy(float), s["end_s"].to_numpy(float)])
             for s in spans_by_system.values() if s is not None and len(s)]
    if not times:
        return np.array([0.0])
    return np.unique(np.round(np.concatenate(times), 6))


def gantt_figure(spans_by_system: Mapping[str, pd.DataFrame], t_now: float, t_end: float) -> go.Figure:
    """Per-node Gantt (one row of subplots per system) of the spans started by ``t_now``, cut at ``t_now``."""
    names = list(spans_by_system)
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=names)
    shown_kinds: set[str] = set()
    for i, name in enumerate(names, start=1):
        sp = spans_by_system[name]
        if sp is None or sp.empty:
            continue
        nodes = sorted(sp["node"].astype(str).unique(), key=_node_order)
        vis = sp[sp["start_s"] <= t_now + 1e-9]
        min_w = max(t_end, 1e-6) * 0.004          # keep microsecond transfers visible at any zoom
        for kind, d in vis.groupby("kind", sort=False):
            end = np.minimum(d["end_s"].to_numpy(float), t_now)
            start = d["start_s"].to_numpy(float)
            fig.add_trace(go.Bar(
                y=d["node"].astype(str), x=np.maximum(end - start, min_w) * 1e3, base=start * 1e3,
                orientation="h", name=kind, legendgroup=kind, showlegend=kind not in shown_kinds,
                marker=dict(color=KIND_COLORS.get(kind, "#7f7f7f"), line=dict(width=0.5, color="white")),
                customdata=np.stack([d["conversations"].astype(str), start * 1e3,
                                     d["end_s"].to_numpy(float) * 1e3], axis=-1),
                hovertemplate="%{y} " + kind + "<br>conv %{customdata[0]}<br>%{customdata[1]:.1f} → "
                              "%{customdata[2]:.1f} ms<extra>" + name + "</extra>"), row=i, col=1)
            shown_kinds.add(str(kind))
        fig.update_yaxes(categoryorder="array", categoryarray=nodes[::-1], row=i, col=1)
        fig.add_vline(x=t_now * 1e3, line=dict(color="black", dash="dash", width=1), row=i, col=1)
    fig.update_xaxes(range=[0, t_end * 1e3 * 1.02], title_text="simulated time (ms)", row=len(names), col=1)
    fig.update_layout(barmode="overlay", height=200 + 170 * len(names), margin=dict(t=50, b=40, l=60, r=10),
                      title=f"Request timeline at t = {t_now * 1e3:,.1f} ms",
                      legend=dict(orientation="h", y=-0.15))
    return fig


def _node_order(name: str) -> tuple:
    head = name.rstrip("0123456789")
    order = {"R": 0, "P": 1, "D": 2, "pD": 3}.get(head, 4)
    tail = name[len(head):]
    return (order, int(tail) if tail.isdigit() else 0, name)


def event_lines(spans_by_system: Mapping[str, pd.DataFrame], t: float, tol: float = 1e-6) -> list[str]:
    """What starts and ends at time ``t`` on each system (for the step-through text)."""
    lines = []
    for name, sp in spans_by_system.items():
        if sp is None or sp.empty:
            continue
        for _, r in sp[(sp["start_s"] - t).abs() <= tol].iterrows():
            lines.append(f"**{name}** · `{r['node']}` starts **{r['kind']}** (conversation {r['conversations']})")
        for _, r in sp[(sp["end_s"] - t).abs() <= tol].iterrows():
            lines.append(f"**{name}** · `{r['node']}` ends {r['kind']} (conversation {r['conversations']})")
    return lines


def kv_bytes_per_token(model: str) -> int:
    from ppd_core.config import catalog
    return int(catalog.models()[model].kv_bytes_per_token)
