"""Goodput (DistServe's capacity figure): the highest conversation rate at which at least ``attain`` of the
Turn 2+ requests meet both the TTFT and the TPOT SLO (``summary["slo_joint"]``; a failed request meets
neither), per system (PPD = the scenario, PD and Replica = ``baselines``), per GPU and per dollar.

Load: conversations arrive over a fixed window (the scenario's ``arrival_window_s``, else its
conversations / qps), so the number of conversations grows with the rate; rates whose window holds fewer than
20 conversations or more than the conversation cap are not tried.

Search: the attainment falls as the rate rises (tests/test_traffic.py checks latency is monotone in qps on a
fixed seed), so each system's goodput is bracketed exponentially (x2 up while attained, /2 down while not)
from a start rate, then bisected until (hi - lo) / lo <= ``rel_tol``, at most ``max_runs`` runs per system.
PPD is searched first from the scenario's ``qps``; PD and Replica then start from PPD's goodput (brackets
reuse work) and move in lockstep, each step's runs going through the sweep engine together (cached on disk,
parallel on local cores or Dask). The reported rate is the highest one that attained.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..config.errors import ScenarioError
from ..config.scenario import SPEC, Scenario, baselines
from .sweep import run_grid

from ..config.scenario import MAX_CONVERSATIONS

MIN_CONVERSATIONS = 20     # a rate whose window holds fewer conversations is not judged (goodput 0 below it)


def _check_fraction(name: str, x: float) -> float:
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or not 0 < x <= 1:
        raise ScenarioError(name, f"{x!r} is not allowed; must be a number in (0, 1]")
    return float(x)


@dataclass
class _Search:
    name: str
    sc: Scenario
    q_min: float = 0.0
    q_max: float = 0.0
    lo: float | None = None      # highest rate that attained
    hi: float | None = None      # lowest rate that did not
    hi_row: dict | None = None
    runs: int = 0
    seen: dict = field(default_factory=dict)

    def next_qps(self, start: float, rel_tol: float) -> float | None:
        if self.lo is None and self.hi is None:
            return start
        if self.lo is None:
            q = self.hi / 2
            return q if q >= self.q_min else None
        if self.hi is None:
            q = self.lo * 2
            return q if q <= self.q_max else None
        if (self.hi - self.lo) / self.lo <= rel_tol:
            return None
        return math.sqrt(self.lo * self.hi) if self.hi / self.lo > 4 else 0.5 * (self.lo + self.hi)


def _passes(row: dict, attain: float) -> bool:
    return row["slo_joint.attainment"] >= attain


def _limit(row: dict | None, attain: float) -> str:
    """What fails first above the goodput: too few requests succeed, or the TTFT or the TPOT SLO."""
    if row is None:
        return "success"
    if row["slo_joint.success"] < attain:
        return "success"
    return "ttft" if row["slo_joint.ttft"] <= row["slo_joint.tpot"] else "tpot"


def goodput(sc: Scenario, attain: float = 0.9, *, slo_ttft_ms: float | None = None,
            slo_tpot_ms: float | None = None, rel_tol: float = 0.05, max_runs: int = 14,
            systems: tuple[str, ...] = ("PPD", "PD", "Replica"), **grid_options: Any) -> dict:
    """Goodput of each system; ``grid_options`` go to ``sweep.run_grid`` (executor, scheduler, workers,
    cache, cache_dir, trace). Returns the ``goodput --json`` document plus ``brackets``: per system the
    arrival window and the final bracket (highest rate that attained, lowest that did not; None if never
    found)."""
    attain = _check_fraction("attain", attain)
    if not isinstance(rel_tol, (int, float)) or not math.isfinite(rel_tol) or not 0 < rel_tol < 1:
        raise ScenarioError("rel_tol", f"{rel_tol!r} is not allowed; must be a number in (0, 1)")
    if isinstance(max_runs, bool) or not isinstance(max_runs, int) or not 2 <= max_runs <= 64:
        raise ScenarioError("max_runs", f"{max_runs!r} is not allowed; must be an integer in [2, 64]")
    slo = {}
    if slo_ttft_ms is not None:
        slo["slo_ttft_ms"] = (slo_ttft_ms,)
    if slo_tpot_ms is not None:
        slo["slo_tpot_ms"] = (slo_tpot_ms,)
    base = sc.with_(**slo) if slo else sc
    table = baselines(base)
    unknown = [s for s in systems if s not in table]
    if unknown:
        raise ScenarioError("systems", f"{unknown[0]!r} is not allowed; must be among {', '.join(table)}")
    # a fixed arrival window, so the offered load grows with the rate (a fixed conversation count would cap it)
    window = base.arrival_window_s or base.conversations / base.qps
    q_min = MIN_CONVERSATIONS / window
    q_max = min(SPEC["qps"].hi, MAX_CONVERSATIONS / window)
    searches = [_Search(name, table[name].with_(arrival_window_s=window, qps=min(max(base.qps, q_min), q_max)),
                        q_min, q_max) for name in systems]
    # the first system (PPD) from the scenario's rate, then the others together from its answer
    _bracket(searches[:1], base.qps, attain, rel_tol, max_runs, grid_options)
    first = searches[0].lo or searches[0].hi or base.qps
    _bracket(searches[1:], first, attain, rel_tol, max_runs, grid_options)
    out = {}
    for s in searches:
        g = s.lo or 0.0
        gpus = s.sc.gpu_count
        price = s.sc.price_usd_h
        out[s.name] = {"goodput_qps": g, "goodput_qps_per_gpu": g / gpus,
                       "goodput_qps_per_usd_hour": g / (gpus * price) if price > 0 else 0.0,
                       "limit": _limit(s.hi_row, attain), "runs": s.runs}
    return {"scenario": base.to_dict(), "attain": attain, "systems": out,
            "brackets": {s.name: {"window_s": window, "attained_qps": s.lo, "missed_qps": s.hi} for s in searches}}


def _round(q: float) -> float:
    """4 significant digits: short scenario keys, and bisection points the cache can share."""
    return float(f"{q:.4g}")


def _bracket(searches: list[_Search], start: float, attain: float, rel_tol: float, max_runs: int,
             grid_options: dict) -> None:
    """Run the searches in lockstep, one sweep per step (every system's next rate in one grid)."""
    while True:
        step: list[tuple[_Search, float]] = []
        for s in searches:
            q = s.next_qps(start, rel_tol) if s.runs < max_runs else None
            if q is not None:
                step.append((s, _round(q)))
        if not step:
            return
        df = run_grid([s.sc.with_(qps=q) for s, q in step], **grid_options)
        for (s, q), row in zip(step, df.to_dict("records")):
            s.runs += 1
            if _passes(row, attain):
                s.lo = q if s.lo is None else max(s.lo, q)
            elif s.hi is None or q < s.hi:
                s.hi, s.hi_row = q, row
