"""Explore's figures as plain dict specs: what ``go.Figure(...).to_dict()`` of the graph-objects versions
gave, built without Plotly's per-property validation (7-40 ms per figure and slider move through
``graph_objects``, ``make_subplots``, ``add_hline`` and ``update_*``; well under 1 ms as dicts).
``charts.chart`` takes a spec, styles it (``readable_spec``) and shows it through ``spec_figure``;
``tests/test_charts_spec.py`` has Plotly validate every spec and compares the styling with Plotly's own."""
from __future__ import annotations

import base64
import math
from types import MappingProxyType
from typing import Mapping

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from ppd_core.config.scenario import Scenario

SYSTEM_COLORS = MappingProxyType({"PPD": "#1f77b4", "PD": "#ff7f0e", "Replica": "#2ca02c"})
SYSTEMS = ("PPD", "PD", "Replica")
CDF_POINTS = 200            # evenly spaced ranks per CDF trace ...
CDF_TAIL, CDF_TAIL_POINTS = 0.01, 50    # ... and up to 50 more over its top 1 % (``_ecdf``)


def spec_figure(spec: Mapping) -> go.Figure:
    """The figure of a spec, without Plotly's per-property validation (``_validate=False``, the figure-level
    flag of plotly.py PR #2403; plotly is pinned in requirements.txt). The tests validate the specs instead."""
    return go.Figure(dict(spec), _validate=False)


def shown_figure(spec: Mapping, present: bool = False) -> go.Figure:
    """The figure ``charts.chart`` sends to the browser for a spec: ``readable_spec``'s house style, built
    without validation (``spec_figure``), in the form Streamlit's chart element draws once (``browser_form``)."""
    return browser_form(readable_spec(spec, present))


def browser_form(fig: Mapping) -> go.Figure:
    """A styled figure (a dict of data and layout, or ``Figure.to_dict()``) in the one form that Streamlit's
    chart element draws once per mount.

    That element draws a new figure (``Plotly.newPlot``) and then, from an effect, hands Plotly a JSON copy of
    it again (``Plotly.react``). Plotly skips that second pass only when nothing in the copy is new to it: data
    arrays as plain lists (numpy arrays travel base64-encoded and are decoded again each pass), a fixed
    ``layout.datarevision`` (data arrays are then not compared by identity) and no template object (a copied
    template counts as changed and replots everything). Without these every chart was drawn twice: about 50 ms
    of the browser's 2-core time per Explore slider move. What the dashboard took from Plotly's default
    template is set instead: the house style (``HOUSE_LAYOUT``) and the template's colour sequence
    (``COLORWAY``, for traces that do not name a colour)."""
    data, layout = _browser_parts(fig)
    shown = spec_figure({"data": data, "layout": layout})
    shown.layout.template = None
    return shown


def _browser_parts(fig: Mapping) -> tuple[list, dict]:
    data = [{k: _plain(v) for k, v in t.items()} for t in fig["data"]]
    layout = {k: v for k, v in fig["layout"].items() if k != "template"}
    layout.setdefault("colorway", list(COLORWAY))
    layout["datarevision"] = 1          # one figure per mount: its data never changes in place
    return data, layout


class SentFigure(go.Figure):
    """What ``charts.chart`` hands ``st.plotly_chart``: an empty Figure carrying ``shown_figure(spec).to_dict()``
    built directly (same JSON, tests/test_charts_spec.py). Building a Figure and its ``to_dict()`` deep-copied
    the data twice: ~45 % of a chart's server time, under the GIL that 40 sessions share."""

    def __init__(self, sent: dict):
        super().__init__()
        self._sent = sent

    def to_dict(self) -> dict:
        return self._sent


def sent_figure(spec: Mapping, present: bool = False) -> SentFigure:
    """``shown_figure(spec, present)`` as ``st.plotly_chart`` will send it, without building it."""
    data, layout = _browser_parts(readable_spec(spec, present))
    return SentFigure({"data": data, "layout": {**layout, "template": None}})


#: Plotly's default template's colour sequence (``plotly.io.templates["plotly"].layout.colorway``), which the
#: figures without a template keep.
COLORWAY = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880", "#FF97FF",
            "#FECB52")


def _plain(value):
    """``value`` with numpy arrays and Plotly's base64 typed arrays (``{"dtype", "bdata"[, "shape"]}``, what
    ``Figure.to_dict`` makes of numpy arrays) as lists; other values as they are."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping) and "bdata" in value and "dtype" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if value.get("shape"):
            arr = arr.reshape([int(n) for n in str(value["shape"]).split(",")])
        return arr.tolist()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _line(color: str | None, **kw) -> dict:
    """A trace's ``line`` dict without the unset keys (Plotly drops None values; so do we)."""
    return {k: v for k, v in dict(color=color, **kw).items() if v is not None}


def _axis_title(text: str) -> dict:
    return {"title": {"text": text}}


#: The dashboard's chart style, set on every figure by ``readable`` / ``readable_spec``. Charts are shown with
#: ``theme=None``: Streamlit's own theme is applied in the browser after the chart mounts (a second Plotly
#: update per chart and slider move) and sets zero side margins with ``automargin``, so every draw is pushed
#: and redrawn. The look is Streamlit's (its font, left-aligned bold titles, light y grid, no x grid, white
#: background), set once here; each figure's margins leave room for its labels, and ``automargin`` stays on as
#: a safety net that costs nothing when they fit.
FONT_FAMILY = '"Source Sans", "Source Sans Pro", sans-serif'
GRID = "#e6eaf1"
HOUSE_LAYOUT = MappingProxyType({
    "font": {"family": FONT_FAMILY},
    "title": {"x": 0, "xanchor": "left", "font": {"weight": 600}},
    "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff",
    "hoverlabel": {"bgcolor": "#ffffff", "bordercolor": "#d5dae5", "font": {"family": FONT_FAMILY, "color": "#222"}},
})
HOUSE_XAXIS = MappingProxyType({"showgrid": False, "zeroline": False, "automargin": True, "linecolor": GRID})
HOUSE_YAXIS = MappingProxyType({"gridcolor": GRID, "zeroline": False, "automargin": True})


def _merged(old: Mapping, new: Mapping) -> dict:
    """``new`` laid over ``old`` as Plotly's ``update_*`` does: nested dicts merged, everything else replaced."""
    out = dict(old)
    for k, v in new.items():
        out[k] = _merged(out.get(k) or {}, v) if isinstance(v, Mapping) else v
    return out


def readable_spec(spec: Mapping, present: bool = False) -> dict:
    """``readable`` for a spec (``*_spec``): the same house style, fonts and sizes set on the dicts, on a copy
    (the spec may come from a cache)."""
    base = 18 if present else 13
    data = [dict(t) for t in spec["data"]]
    layout = _merged(spec["layout"], HOUSE_LAYOUT)
    layout["font"] = {**layout.get("font", {}), "size": base, "color": "#222"}
    layout["title"] = {**layout.get("title", {}), "font": {**layout.get("title", {}).get("font", {}),
                                                          "size": base + 3}}
    layout["legend"] = {**layout.get("legend", {}), "font": {**layout.get("legend", {}).get("font", {}),
                                                            "size": base}}
    axes = [k for k in layout if k.startswith(("xaxis", "yaxis"))]
    for k in ("xaxis", "yaxis"):            # Plotly's update_xaxes/update_yaxes reach the first axis even unset
        if k not in axes:
            axes.append(k)
    for k in axes:
        ax = _merged(layout.get(k, {}), HOUSE_XAXIS if k.startswith("x") else HOUSE_YAXIS)
        ax["tickfont"] = {**ax.get("tickfont", {}), "size": base}
        title = dict(ax.get("title", {}))
        title["font"] = {**title.get("font", {}), "size": base}
        ax["title"] = title
        layout[k] = ax
    if "annotations" in layout:
        layout["annotations"] = [{**a, "font": {**a.get("font", {}), "size": base}} for a in layout["annotations"]]
    if present:
        layout["height"] = max(int(layout.get("height") or 400), 540)
        for t in data:
            if t.get("type", "scatter") in ("scatter", "bar"):
                t["textfont"] = {**t.get("textfont", {}), "size": base}
    return {"data": data, "layout": layout}


def _ecdf(values: np.ndarray, max_points: int = CDF_POINTS, tail_points: int = CDF_TAIL_POINTS
          ) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of ``values`` (NaN left out) on at most ``max_points`` evenly spaced ranks plus
    ``tail_points`` over the top ``CDF_TAIL`` (every point there when it holds fewer): the first and last value
    are always in, and the tail a log axis stretches keeps its steps (p99 and up are exact at the dashboard's
    sizes). An exact-looking CDF on a few hundred points, whatever the run's size."""
    v = np.asarray(values, dtype=float)
    v = np.sort(v[~np.isnan(v)])
    if v.size == 0:
        return v, v
    y = np.arange(1, v.size + 1) / v.size
    if v.size > max_points:
        n = v.size
        first_tail = max(n - math.ceil(CDF_TAIL * n), 0)
        idx = np.unique(np.concatenate([np.linspace(0, n - 1, max_points).astype(int),
                                        np.linspace(first_tail, n - 1, min(tail_points, n - first_tail)).astype(int)]))
        v, y = v[idx], y[idx]
    return v, y


def _system_name(name: str, scenarios: Mapping[str, Scenario]) -> str:
    return f"{name} ({scenarios[name].layout})"


def cdf_spec(results: Mapping[str, dict], scenarios: Mapping[str, Scenario], metric: str,
             title: str, log_x: bool = True, turn1: bool = True) -> dict:
    """CDF of ``metric``: Turn 2+ solid, Turn 1 dotted (``turn1=False``: Turn 2+ only, so Turn 1's client
    queueing does not stretch the axis), one colour per system, on one axis (every extra subplot costs the
    browser a noticeable redraw on each slider move). At most ``CDF_POINTS`` (+ the tail) points per trace."""
    data = []
    cols = {name: (r["records"]["status"].to_numpy() == "ok", r["records"]["turn"].to_numpy(),
                   r["records"][metric].to_numpy(dtype=float)) for name, r in results.items()}
    for name, (ok, turns, vals) in cols.items():
        for turn, mask, dash in (("Turn 2+", ok & (turns >= 2), None), ("Turn 1", ok & (turns == 1), "dot"))[
                :2 if turn1 else 1]:
            x, y = _ecdf(vals[mask])
            data.append({
                "type": "scatter", "x": x, "y": y, "mode": "lines", "name": f"{_system_name(name, scenarios)} · {turn}",
                "legendgroup": name,
                "line": _line(SYSTEM_COLORS.get(name), shape="hv", dash=dash, width=2 if dash is None else 1.5),
                "hovertemplate": "%{x:.1f} ms: %{y:.0%}<extra>" + f"{name} {turn}" + "</extra>"})
    if log_x:
        shown = np.concatenate([vals[turns >= (1 if turn1 else 2)] for _, turns, vals in cols.values()] or [[]])
        shown = shown[shown > 0]            # NaN compares False: left out too
        ticks = _log_ticks(float(shown.min()), float(shown.max())) if shown.size else []
        xaxis = {**_axis_title(f"{title} (ms, log scale)"), "type": "log", "tickvals": ticks,
                 "ticktext": [f"{t:,g}" for t in ticks]}
    else:
        xaxis = _axis_title(f"{title} (ms)")
    layout = {"xaxis": xaxis, "yaxis": {**_axis_title("share of requests ≤ x"), "tickformat": ".0%"},
              "title": {"text": f"{title} distribution (CDF): Turn 2+ solid, Turn 1 dotted" if turn1 else
                        f"Turn 2+ {title} distribution (CDF)"},
              "height": 430, "margin": {"t": 60, "b": _legend_below(len(data)), "l": 56, "r": 10},
              "legend": {"orientation": "h", "yanchor": "top", "y": -0.3}}
    return {"data": data, "layout": layout}


def _legend_below(entries: int) -> int:
    """The bottom margin that holds the x-axis title and a horizontal legend of ``entries`` below the plot, at
    three entries a row in a half-width column (Explore's CDF and by-turn charts at 1280-1400 px). A margin
    the labels overflow makes Plotly's ``automargin`` push it and draw the whole figure a second time: about a
    third of the browser's drawing time per slider move (``tests/test_browser_charts.py`` checks that
    nothing is pushed)."""
    return 140 + 32 * (math.ceil(max(entries, 1) / 3) - 1)


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Readable log-axis ticks: 1-2-5 steps over at most four decades, else one tick per decade."""
    lo_e, hi_e = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1, 2, 5) if hi_e - lo_e <= 4 else (1,)
    ticks = [m * 10.0 ** e for e in range(lo_e, hi_e + 1) for m in steps]
    return [t for t in ticks if lo / 1.5 <= t <= hi * 1.5]


def _per_turn(records, metric: str, min_n: int = 3) -> tuple[np.ndarray, ...] | None:
    """(turn, mean, p90, n) of ``metric`` over the served (``status == "ok"``) requests of each turn index
    with at least ``min_n`` of them (None when nothing was served), as pandas' ``groupby("turn")`` mean /
    quantile(0.9) / size give them (NaN left out of mean and p90, counted in n), with numpy: a tenth of the
    time, on every slider move."""
    ok = records["status"].to_numpy() == "ok"
    if not ok.any():
        return None
    turns = records["turn"].to_numpy()[ok]
    vals = records[metric].to_numpy(dtype=float)[ok]
    order = np.lexsort((vals, turns))           # by turn, then value; NaN last within its turn
    turns, vals = turns[order], vals[order]
    keys, starts, counts = np.unique(turns, return_index=True, return_counts=True)
    nan = np.isnan(vals)
    finite = counts - np.add.reduceat(nan, starts).astype(int)      # reduceat: from one start to the next
    sums = np.add.reduceat(np.where(nan, 0.0, vals), starts)
    keep = counts >= min_n
    keys, starts, counts, finite, sums = keys[keep], starts[keep], counts[keep], finite[keep], sums[keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(finite > 0, sums / finite, np.nan)
    rank = 0.9 * np.maximum(finite - 1, 0)      # numpy's default ("linear") quantile between two ranks
    below = np.floor(rank).astype(int)
    above = np.minimum(below + 1, np.maximum(finite - 1, 0))
    lo_v, hi_v = vals[starts + below], vals[starts + above]
    p90 = np.where(finite > 0, lo_v + (hi_v - lo_v) * (rank - below), np.nan)
    return keys, mean, p90, counts


def by_turn_spec(results: Mapping[str, dict], scenarios: Mapping[str, Scenario], metric: str = "ttft_ms",
                 title: str = "TTFT") -> dict:
    """Mean (solid) and p90 (dotted) of ``metric`` per turn index, one colour per system."""
    data = []
    lo, hi = math.inf, 0.0
    for name, r in results.items():
        stats = _per_turn(r["records"], metric)
        if stats is None:
            continue
        turns, mean, p90, n = stats
        pos = np.concatenate([mean, p90])
        pos = pos[np.isfinite(pos) & (pos > 0)]
        if pos.size:
            lo, hi = min(lo, float(pos.min())), max(hi, float(pos.max()))
        color = SYSTEM_COLORS.get(name)
        data.append({"type": "scatter", "x": turns, "y": mean, "mode": "lines+markers",
                     "name": f"{_system_name(name, scenarios)} mean", "line": _line(color),
                     "customdata": n, "legendgroup": name,
                     "hovertemplate": "turn %{x}: %{y:.1f} ms (n=%{customdata})<extra>" + name + "</extra>"})
        data.append({"type": "scatter", "x": turns, "y": p90, "mode": "lines",
                     "name": f"{name} p90", "line": _line(color, dash="dot"), "legendgroup": name,
                     "hovertemplate": "turn %{x}: p90 %{y:.1f} ms<extra>" + name + "</extra>"})
    yaxis = {**_axis_title(f"{title} (ms, log scale)"), "type": "log"}
    if hi > 0:
        ticks = _log_ticks(lo, hi)
        yaxis.update(tickvals=ticks, ticktext=[f"{t:,g}" for t in ticks])
    layout = {"title": {"text": f"{title} by turn index (mean solid, p90 dotted)"}, "height": 430,
              "margin": {"t": 60, "b": _legend_below(len(data)), "l": 60, "r": 10},
              "xaxis": {**_axis_title("turn index (turns with ≥ 3 requests)"), "dtick": 1}, "yaxis": yaxis,
              "legend": {"orientation": "h", "yanchor": "top", "y": -0.3}}
    return {"data": data, "layout": layout}


#: The systems chart's two panels side by side (as ``make_subplots(rows=1, cols=2, horizontal_spacing=0.14)``).
_SPACING = 0.14
_PANEL = (1 - _SPACING) / 2
ERROR_COLOR = "#e08a00"      # the expected-simulator-error whisker, apart from the systems' colours


def _expected_error(summary: Mapping, metric: str) -> float:
    """The expected error (%) of this run's Turn 2+ ``metric`` (``summary["expected_error"]``), else 0."""
    from ppd_core.metrics.fidelity import metric_for
    e = summary.get("expected_error")
    if not isinstance(e, Mapping):
        return 0.0
    return float(e["errors_pct"].get(metric_for(metric), 0.0))


def systems_spec(summaries: Mapping[str, dict], layouts: Mapping[str, str], slo_ttft: tuple = (),
                 slo_tpot: tuple = (), height: int = 290) -> dict:
    """The three systems side by side: Turn 2+ TTFT and TPOT (bar = mean, whisker = p90) with the SLO
    thresholds as dashed lines (those inside the plotted range, labelled at the right edge)."""
    names = [n for n in SYSTEMS if n in summaries]
    labels = [f"{n}<br>{layouts.get(n, '')}" for n in names]
    data: list[dict] = []
    layout: dict = {}
    annotations = [{"font": {"size": 16}, "showarrow": False, "text": text, "x": x, "xanchor": "center",
                    "xref": "paper", "y": 1.0, "yanchor": "bottom", "yref": "paper"}
                   for text, x in (("Turn 2+ TTFT (ms)", _PANEL / 2), ("Turn 2+ TPOT (ms)", 1 - _PANEL / 2))]
    shapes: list[dict] = []
    for col, metric, slos in ((1, "ttft_ms", slo_ttft), (2, "tpot_ms", slo_tpot)):
        xa, ya = ("x", "y") if col == 1 else (f"x{col}", f"y{col}")
        g = [summaries[n]["groups"]["turn2plus"][metric] for n in names]
        mean = [float(x["mean"] or 0.0) for x in g]
        p90 = [float(x["p90"] or 0.0) for x in g]
        data.append({
            "type": "bar", "x": labels, "y": mean, "marker": {"color": [SYSTEM_COLORS[n] for n in names]},
            "showlegend": False, "text": [f"{v:,.1f}" for v in mean], "textposition": "inside",
            "insidetextanchor": "middle",
            "error_y": {"type": "data", "symmetric": False, "array": [max(b - a, 0.0) for a, b in zip(mean, p90)],
                        "arrayminus": [0.0] * len(mean), "color": "#444", "thickness": 1.2},
            "hovertemplate": "%{x}: mean %{y:.1f} ms<extra></extra>", "xaxis": xa, "yaxis": ya})
        err = [_expected_error(summaries[n], metric) for n in names]
        if any(e > 0 for e in err):
            data.append({
                "type": "scatter", "mode": "markers", "x": labels, "y": mean, "name": "expected simulator error",
                "showlegend": False,        # the caption names it (a legend row would push the bottom margin)
                "marker": {"color": ERROR_COLOR, "size": 7, "symbol": "line-ew-open", "line": {"width": 2}},
                "error_y": {"type": "data", "symmetric": True, "array": [m * e / 100 for m, e in zip(mean, err)],
                            "color": ERROR_COLOR, "thickness": 2.4, "width": 10},
                "customdata": err,
                "hovertemplate": "%{x}: expected simulator error ±%{customdata:.0f} %<extra></extra>",
                "xaxis": xa, "yaxis": ya})
        top = max(p90 + [m * (1 + e / 100) for m, e in zip(mean, err)] + [1e-9]) * 1.18
        shown: list[float] = []
        for thr in sorted(slos):
            if thr > top * 1.6 or any(abs(thr - s) < 0.12 * top for s in shown):
                continue
            top = max(top, thr * 1.12)
            shown.append(thr)
            shapes.append({"line": {"color": "#b00", "dash": "dash", "width": 1.2}, "type": "line", "x0": 0,
                           "x1": 1, "xref": f"{xa} domain", "y0": thr, "y1": thr, "yref": ya})
            annotations.append({"font": {"color": "#b00"}, "showarrow": False, "text": f"SLO {thr:g}", "x": 1,
                                "xanchor": "right", "xref": f"{xa} domain", "y": thr, "yanchor": "bottom",
                                "yref": ya})
        left = 0.0 if col == 1 else _PANEL + _SPACING
        layout[f"xaxis{'' if col == 1 else col}"] = {"anchor": ya, "domain": [left, _PANEL if col == 1 else 1.0]}
        layout[f"yaxis{'' if col == 1 else col}"] = {"anchor": xa, "domain": [0.0, 1.0], "range": [0, top]}
    layout.update(annotations=annotations, shapes=shapes, height=height,
                  margin={"t": 36, "b": 48, "l": 44, "r": 10}, bargap=0.35)   # room for the two-line ticks
    return {"data": data, "layout": layout}


@st.cache_data(max_entries=64, show_spinner=False)
def explore_specs(sc: Scenario, present: bool, _results: Mapping[str, dict],
                  _scenarios: Mapping[str, Scenario]) -> dict[str, dict]:
    """Explore's four figures as specs, cached by the scenario: the runs (``_results`` of ``_scenarios``, not
    hashed) are a pure function of it. A rerun that leaves the scenario alone (goodput computed, a preset
    link, a page visited again) reuses them; a new slider value builds them in ~3 ms."""
    summaries = {name: r["summary"] for name, r in _results.items()}
    layouts = {name: s.layout for name, s in _scenarios.items()}
    figs = {
        "systems": systems_spec(summaries, layouts, sc.slo_ttft_ms, sc.slo_tpot_ms, height=560 if present else 290),
        "ttft_cdf": cdf_spec(_results, _scenarios, "ttft_ms", "TTFT", turn1=False),
        "tpot_cdf": cdf_spec(_results, _scenarios, "tpot_ms", "TPOT", log_x=False),
        "ttft_by_turn": {} if present else by_turn_spec(_results, _scenarios, "ttft_ms", "TTFT"),
    }
    if present:                 # classroom mode's larger text, the charts one under another at full width
        for key, margin in CLASSROOM_MARGINS.items():
            figs[key]["layout"]["margin"] = {**figs[key]["layout"]["margin"], **margin}
    return figs


#: Classroom mode (``present=1``: 18 px text, every chart at full width): the margins its tick labels and
#: legends take, so that no chart is pushed by ``automargin`` and drawn twice (``tests/test_browser_charts.py``).
CLASSROOM_MARGINS = MappingProxyType({"systems": {"b": 64}, "ttft_cdf": {"l": 72, "b": 148}, "tpot_cdf": {"l": 72}})
