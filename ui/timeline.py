"""The teaching timeline: a per-node Gantt of the spans of a run, and stepping through its events."""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .specs import spec_figure

#: What the teaching timeline shows, in the order of its legend, with its colour and plain-words meaning.
PHASES = (
    ("full prefill", "#d62728", "computes the whole prompt (P node, or a replica's first turn)"),
    ("append-prefill", "#2ca02c", "computes only the new tokens on the node that caches the conversation"),
    ("KV transfer", "#9467bd", "sends the conversation's KV cache P → D over the link"),
    ("KV load", "#8c564b", "the decode node takes in the KV it received before its first decode step"),
    ("decode", "#1f77b4", "generates the answer one token per step"),
)
PHASE_COLORS = MappingProxyType({name: color for name, color, _ in PHASES})
PHASE_MEANING = MappingProxyType({name: meaning for name, _, meaning in PHASES})


def phases(spans: pd.DataFrame) -> pd.DataFrame:
    """``spans`` with a ``phase`` column: a P node's prefill is a full prefill, a link span a KV transfer, a
    decode node's prefill (or mixed iteration) right after a transfer of the same conversation a KV load,
    a replica's first prefill of a conversation a full prefill, any other prefill on D/pD/R an append-prefill.
    Spans that have it already are returned as they are (Learn computes it once per run, not once per step)."""
    if "phase" in spans.columns:
        return spans
    sp = spans.reset_index(drop=True).copy()
    phase = []
    pending: set[tuple[str, str]] = set()       # (decode node, conversation) whose KV arrived, not yet loaded
    seen: set[tuple[str, str]] = set()
    for _, r in sp.sort_values("start_s", kind="stable").iterrows():
        kind, role, node = r["kind"], r["role"], str(r["node"])
        convs = str(r["conversations"]).split()
        if kind == "transfer":
            p = "KV transfer"
            pending.update((node.split("->")[-1], c) for c in convs)
        elif kind == "decode":
            p = "decode"
        elif role == "P":
            p = "full prefill"
        elif any((node, c) in pending for c in convs):
            p = "KV load"
            pending.difference_update((node, c) for c in convs)
        elif role == "R" and not any((node, c) in seen for c in convs):
            p = "full prefill"
        else:
            p = "append-prefill"
        seen.update((node, c) for c in convs)
        phase.append((r.name, p))
    sp["phase"] = pd.Series(dict(phase))
    return sp


def timeline_events(spans_by_system: Mapping[str, pd.DataFrame]) -> np.ndarray:
    """Sorted distinct span boundaries (s) over all systems: the stops of the teaching slider."""
    times = [np.concatenate([s["start_s"].to_numpy(float), s["end_s"].to_numpy(float)])
             for s in spans_by_system.values() if s is not None and len(s)]
    if not times:
        return np.array([0.0])
    return np.unique(np.round(np.concatenate(times), 6))


def window(t_now: float, t_end: float, width_s: float | None) -> tuple[float, float]:
    """The time window (s) the Gantt shows around the current event: ``width_s`` wide, the event at 3/4 of
    it (what just happened is on screen); None: the whole run."""
    if width_s is None or width_s <= 0 or width_s >= t_end:
        return 0.0, max(t_end, 1e-6) * 1.02
    lo = max(0.0, t_now - 0.75 * width_s)
    return lo, lo + width_s


def gantt_spec(spans_by_system: Mapping[str, pd.DataFrame], t_now: float, t_end: float,
               width_s: float | None = None, spacing: float = 0.12) -> dict:
    """Per-node Gantt (one row of subplots per system, the time axis shared) of the spans started by
    ``t_now``, cut at ``t_now``, coloured by phase (``PHASES``), its time axis a window of ``width_s`` around
    ``t_now``: the figure spec (``ui.specs``) of what ``make_subplots`` + ``go.Bar`` + ``add_vline`` gave."""
    names = list(spans_by_system)
    n = len(names)
    lo, hi = window(t_now, t_end, width_s)
    row_h = (1.0 - spacing * (n - 1)) / n
    data: list[dict] = []
    layout: dict = {"annotations": [], "shapes": []}
    shown_kinds: set[str] = set()
    for i, name in enumerate(names, start=1):
        sfx = "" if i == 1 else str(i)
        below = n - i                                   # rows under this one (make_subplots' arithmetic)
        bottom = sum([row_h] * below) + below * spacing
        top = bottom + row_h
        bottom, top = (0.0 if -0.01 < bottom < 0.0 else bottom), (1.0 if 1.0 < top < 1.01 else top)
        layout[f"xaxis{sfx}"] = {"anchor": f"y{sfx}", "domain": [0.0, 1.0], "range": [lo * 1e3, hi * 1e3]}
        if i < n:
            layout[f"xaxis{sfx}"].update(matches=f"x{n}", showticklabels=False)
        layout[f"yaxis{sfx}"] = {"anchor": f"x{sfx}", "domain": [bottom, top]}
        layout["annotations"].append({"font": {"size": 16}, "showarrow": False, "text": name, "x": 0.5,
                                      "xanchor": "center", "xref": "paper", "y": top, "yanchor": "bottom",
                                      "yref": "paper"})
        sp = spans_by_system[name]
        if sp is None or sp.empty:
            continue
        sp = phases(sp)
        nodes = sorted(sp["node"].astype(str).unique(), key=_node_order)
        vis = sp[sp["start_s"] <= t_now + 1e-9]
        min_w = max(hi - lo, 1e-6) * 0.004        # keep microsecond transfers visible at any zoom
        for kind in [p for p, _, _ in PHASES if p in set(vis["phase"])]:
            d = vis[vis["phase"] == kind]
            end = np.minimum(d["end_s"].to_numpy(float), t_now)
            start = d["start_s"].to_numpy(float)
            data.append({
                "type": "bar", "y": d["node"].astype(str).to_numpy(), "x": np.maximum(end - start, min_w) * 1e3,
                "base": (start * 1e3).tolist(),        # a list, as Plotly's validator made it
                "orientation": "h", "name": kind, "legendgroup": kind,
                "showlegend": kind not in shown_kinds,
                "marker": {"color": PHASE_COLORS[kind], "line": {"width": 0.5, "color": "white"}},
                "customdata": np.stack([d["conversations"].astype(str), start * 1e3,
                                        d["end_s"].to_numpy(float) * 1e3], axis=-1),
                "hovertemplate": "%{y} " + kind + "<br>conv %{customdata[0]}<br>%{customdata[1]:.1f} → "
                                 "%{customdata[2]:.1f} ms<extra>" + name + "</extra>",
                "xaxis": f"x{sfx}", "yaxis": f"y{sfx}"})
            shown_kinds.add(str(kind))
        layout[f"yaxis{sfx}"].update(categoryorder="array", categoryarray=nodes[::-1])
        if not any(t["yaxis"] == f"y{sfx}" for t in data):
            continue                                    # add_vline leaves a subplot without bars alone
        layout["shapes"].append({"line": {"color": "black", "dash": "dash", "width": 1}, "type": "line",
                                 "x0": t_now * 1e3, "x1": t_now * 1e3, "xref": f"x{sfx}", "y0": 0, "y1": 1,
                                 "yref": f"y{sfx} domain"})
    if not layout["shapes"]:
        del layout["shapes"]                            # as Plotly leaves it: no empty list
    layout[f"xaxis{'' if n == 1 else n}"]["title"] = {"text": "simulated time (ms)"}
    layout.update(barmode="overlay", height=200 + 170 * n, margin={"t": 50, "b": 40, "l": 60, "r": 10},
                  title={"text": f"Request timeline at t = {t_now * 1e3:,.1f} ms"},
                  legend={"orientation": "h", "y": -0.15})
    return {"data": data, "layout": layout}


def gantt_figure(spans_by_system: Mapping[str, pd.DataFrame], t_now: float, t_end: float,
                 width_s: float | None = None) -> go.Figure:
    """``gantt_spec`` as a figure."""
    return spec_figure(gantt_spec(spans_by_system, t_now, t_end, width_s))


def _node_order(name: str) -> tuple:
    head = name.rstrip("0123456789")
    order = {"R": 0, "P": 1, "D": 2, "pD": 3}.get(head, 4)
    tail = name[len(head):]
    return (order, int(tail) if tail.isdigit() else 0, name)


def _convs(text: str) -> str:
    c = str(text).split()
    return f"conversation {c[0]}" if len(c) == 1 else f"conversations {', '.join(c)}"


def event_lines(spans_by_system: Mapping[str, pd.DataFrame], t: float, tol: float = 1e-6) -> list[str]:
    """What starts and ends at time ``t`` on each system, in plain words (the step-through text)."""
    lines = []
    for name, sp in spans_by_system.items():
        if sp is None or sp.empty:
            continue
        sp = phases(sp)
        for _, r in sp[(sp["start_s"] - t).abs() <= tol].iterrows():
            lines.append(f"**{name}** · `{r['node']}` starts the **{r['phase']}** of {_convs(r['conversations'])}: "
                         f"it {PHASE_MEANING[r['phase']]}.")
        for _, r in sp[(sp["end_s"] - t).abs() <= tol].iterrows():
            lines.append(f"**{name}** · `{r['node']}` ends the {r['phase']} of {_convs(r['conversations'])} "
                         f"({(r['end_s'] - r['start_s']) * 1e3:,.2f} ms).")
    return lines


def caption(lines: list[str]) -> str:
    """One short plain-words caption of an event (its first start, else its first end)."""
    starts = [line for line in lines if " starts the " in line]
    return (starts or lines or ["Nothing starts or ends exactly here."])[0].replace("**", "")


def kv_bytes_per_token(model: str) -> int:
    from ppd_core.config import catalog
    return int(catalog.models()[model].kv_bytes_per_token)
