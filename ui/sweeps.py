"""The Sweep page's sweeps: the grids, the points (PPD / PD / Replica per grid value), the weights-frontier
base, and one ``ppd_core.analysis.sweep.run_grid`` call per sweep (the core's disk cache, the server's pool,
``ppd_core.analysis.points.point_stats`` for the p10-p50-p90 bands)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd
import streamlit as st

from ppd_core.analysis.points import point_stats
from ppd_core.analysis.sweep import run_grid
from ppd_core.config.scenario import Scenario

from .progress import StreamlitProgress
from .runner import pooled

QPS_GRID = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 20.0)
BW_GRID = (10.0, 25.0, 50.0, 100.0, 150.0)
W_TPOT_GRID = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0)


def system_points(systems: Mapping[str, Scenario], key: str, grid: Sequence[float]) -> list[tuple[dict, Scenario]]:
    """({"system": name, key: v}, that system's scenario with ``key = v``) for every grid value and system."""
    return [({"system": name, key: v}, s.with_(**{key: v})) for v in grid for name, s in systems.items()]


def frontier_base(sc: Scenario, systems: Mapping[str, Scenario]) -> tuple[Scenario, str]:
    """The scenario the w_tpot frontier varies, and a note when it is not ``sc``: Eq.1 only decides on D
    nodes under a dynamic policy, so a scenario without that sweeps its x=0 layout with policy dynamic."""
    if sc.layout_obj.n_D > 0 and sc.policy in ("dynamic", "dynamic-table"):
        return sc, ""
    base = systems["PD"].with_(policy="dynamic")
    return base, (f"This scenario ({sc.layout}, policy {sc.policy}) has no per-request decision to weigh, so the "
                  f"frontier uses {base.layout} with policy dynamic.")


W_TPOT_MAX = 100.0        # the w_tpot slider's range is [0, 100]
FRONTIER_POINTS = 6       # log-spaced w_tpot values over the computed range, plus w_tpot = 0


def frontier_grid(w_range: tuple[float, float] | None) -> tuple[tuple[float, ...], str]:
    """The w_tpot values of the frontier: 0 and ``FRONTIER_POINTS`` log-spaced values over ``w_range`` (the
    base run's ``ppd_core.analysis.weights.w_tpot_range``: where the decisions change) clipped to the slider's
    [0, 100], 2 significant digits; the fixed ``W_TPOT_GRID`` (with a note) when no decision can move."""
    if w_range is None:
        return W_TPOT_GRID, "No Turn 2+ request of the base run has both a TTFT gain and a TPOT loss, so no w_tpot " \
                            "changes a decision; the frontier shows a fixed grid."
    lo, hi = (min(max(float(w), 0.0), W_TPOT_MAX) for w in w_range)
    lo = max(lo, 0.01)
    if hi <= lo * 1.05:
        hi = min(max(lo * 4, 1.0), W_TPOT_MAX)
        lo = hi / 4
    ratio = hi / lo
    grid = [0.0] + [float(f"{lo * ratio ** (i / (FRONTIER_POINTS - 1)):.2g}") for i in range(FRONTIER_POINTS)]
    clipped = " (clipped to the slider's 100)" if w_range[1] > W_TPOT_MAX else ""
    return tuple(sorted(set(grid))), (f"w_tpot from 0 and over {lo:.3g}–{hi:.3g}: where the base run's per-request "
                                      f"switch points w_ttft·ΔTTFT/ΔTPOT lie (5–95 %){clipped}.")


def frontier_points(base: Scenario, grid: Sequence[float] = W_TPOT_GRID) -> list[tuple[dict, Scenario]]:
    return [({"w_tpot": w}, base.with_(w_tpot=w)) for w in grid]


def frontier_extremes(base: Scenario) -> list[tuple[dict, Scenario]]:
    return [({"label": "x=0 (policy pd)"}, base.with_(policy="pd")),
            ({"label": "x=1 (policy ppd)"}, base.with_(policy="ppd"))]


@st.cache_data(max_entries=64, show_spinner=False)
def _sweep(points: tuple[tuple[tuple[tuple[str, Any], ...], Scenario], ...], label: str) -> pd.DataFrame:
    """One ``run_grid`` over the points' scenarios, reduced by ``point_stats``; the progress bar is created
    here, so a cache hit replays it (ending empty)."""
    with StreamlitProgress(label) as progress:
        rows = pooled(lambda **opt: run_grid([s for _, s in points], progress=progress, **opt), long=True)
    labels = pd.DataFrame([dict(lab) for lab, _ in points], index=rows.index)
    return pd.concat([labels, point_stats(rows)], axis=1)


def run_points(points: Sequence[tuple[dict, Scenario]], label: str) -> pd.DataFrame:
    """The labels of every (labels, scenario) point plus its sweep statistics, from one ``run_grid`` call
    with a progress bar; a sweep run before (this server or the disk cache) is instant."""
    return _sweep(tuple((tuple(lab.items()), sc) for lab, sc in points), label)
