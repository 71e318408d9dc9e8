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


def frontier_points(base: Scenario) -> list[tuple[dict, Scenario]]:
    return [({"w_tpot": w}, base.with_(w_tpot=w)) for w in W_TPOT_GRID]


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
