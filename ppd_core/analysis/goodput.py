"""Goodput (DistServe's capacity figure): the highest conversation rate at which at least ``attain`` of the
Turn 2+ requests meet both the TTFT and the TPOT SLO (``summary["slo_joint"]``; a failed request meets
neither), per system (PPD = the scenario, PD and Replica = ``baselines``), per GPU and per dollar.

Load: conversations arrive over a fixed window (the scenario's ``arrival_window_s``, else its
conversations / qps), so the number of conversations grows with the rate; rates whose window holds fewer than
20 conversations or more than the conversation cap are not tried.

Search: the attainment falls as the rate rises (tests/test_traffic.py checks latency is monotone in qps on a
fixed seed). The three systems are searched together in rounds; each round's probes (one per system still
searching, two in a warm start's first round) go through the sweep engine as one grid (disk cache; this process and a pool of workers - 1
processes kept for the whole search, or the caller's pool; Dask if asked). A system's next rate uses what
its probes measured, not only whether they passed:

* no probe yet: the scenario's ``qps`` (or the ``hint``: a previous answer, see below);
* only passes: x2, or x(1 + 2 rel_tol) when the last pass was close to the target (attainment below
  (1 + attain) / 2);
* only misses: /2, or the lowest judgeable rate at once when the miss was hopeless (attainment < 5 %;
  e.g. PD under a TTFT SLO its path cannot meet at any load), or the served rate of the saturation report
  when that is lower (a saturated run serves at most its capacity);
* a bracket (highest pass below the lowest miss): the rate where the line through the two ends' logit
  attainments against log rate crosses the target (regula falsi), kept inside the middle 80 % of the
  bracket and moved so that one outcome closes the bracket when the bracket is within two tolerances.

It stops when (lowest miss - highest pass) / highest pass <= ``rel_tol``, when the lowest judgeable rate
misses (goodput 0), when the highest one passes, or after ``max_runs`` probes. The reported rate is the
highest pass below the lowest miss; every probe is a full run over the window, so that rate attained and
the miss above it did not (no early stop, no shortened window: a probe's statistic is the final one).

Warm start (``hint``): a previous ``goodput`` answer (its ``brackets``) or {system: rate}. The first round
then probes the previous bracket's two ends (or the rate and the rate x (1 + rel_tol)), so an unchanged
scenario is settled in one round of two runs per system. Tolerance against a cold search: both end on a
bracket of relative width <= rel_tol around a rate where the attainment crosses the target, so where it
crosses once the two goodputs agree within 2 x rel_tol (tests/test_traffic.py, 2P_2D ShareGPT 150
conversations, hints 20-25 % off). Where the attainment wavers around the target over a band of rates
(TPOT p90 close to its SLO: Replica at the defaults attains 0.996 at 8.0 conv/s, 0.950 at 8.128, 0.994 at
8.5, 0.974 at 8.8, and a search started from 11 conv/s ends on the miss at 8.108 and reports 7.741 where
a cold one reports 8.8), a search reports some crossing in that band, cold or warm: the band, not
rel_tol, is then the figure's precision.

The search is deterministic: the probes of a round depend only on the results of the rounds before, never
on the worker count or on which run finished first.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..config.errors import ScenarioError
from ..config.scenario import MAX_CONVERSATIONS, SPEC, Scenario, baselines
from .pool import WorkerPool, local_workers
from .sweep import run_grid

MIN_CONVERSATIONS = 20     # a rate whose window holds fewer conversations is not judged (goodput 0 below it)
HOPELESS = 0.05            # a miss with less attainment than this jumps to the lowest judgeable rate
CLIP = 1e-3                # attainments clipped to [CLIP, 1 - CLIP] before the logit
KEEP_INSIDE = 0.1          # an interpolated rate stays this share of the (log) bracket away from its ends


def _check_fraction(name: str, x: float) -> float:
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or not 0 < x <= 1:
        raise ScenarioError(name, f"{x!r} is not allowed; must be a number in (0, 1]")
    return float(x)


def _logit(a: float) -> float:
    a = min(max(a, CLIP), 1 - CLIP)
    return math.log(a / (1 - a))


def _round(q: float) -> float:
    """4 significant digits: short scenario keys, and probe rates the cache can share."""
    return float(f"{q:.4g}")


@dataclass
class _Search:
    name: str
    sc: Scenario
    q_min: float
    q_max: float
    attain: float
    rel_tol: float
    rows: dict = field(default_factory=dict)      # rate -> flat figures of its run, in probe order
    kept: dict = field(default_factory=lambda: {"lo": 0, "hi": 0})   # rounds each bracket end stayed put

    def add(self, q: float, row: dict) -> None:
        before = self.bracket()
        self.rows[q] = row
        after = self.bracket()
        if None not in before and None not in after:
            for i, end in enumerate(("lo", "hi")):
                self.kept[end] = self.kept[end] + 1 if after[i] == before[i] else 0

    @property
    def runs(self) -> int:
        return len(self.rows)

    def passed(self, q: float) -> bool:
        return self.rows[q]["slo_joint.attainment"] >= self.attain

    def bracket(self) -> tuple[float | None, float | None]:
        """(highest rate that attained below the lowest that did not, lowest that did not)."""
        misses = [q for q in self.rows if not self.passed(q)]
        hi = min(misses) if misses else None
        ok = [q for q in self.rows if self.passed(q) and (hi is None or q < hi)]
        return (max(ok) if ok else None), hi

    def settled(self) -> bool:
        lo, hi = self.bracket()
        if lo is not None and hi is not None:
            return (hi - lo) / lo <= self.rel_tol
        if hi is not None:
            return hi <= self.q_min
        return lo is not None and lo >= self.q_max

    def _a(self, q: float) -> float:
        return float(self.rows[q]["slo_joint.attainment"])

    def _excess(self, q: float) -> float | None:
        """log of the worse of Turn 2+ TTFT and TPOT at the attainment's percentile over its SLO (> 0: that
        percentile misses): a guide for the next rate only, never the pass/fail test; None when unknown."""
        row, pct = self.rows[q], _percentile_key(self.attain)
        sc = self.sc
        ratios = []
        for col, slo in ((f"turn2plus.ttft_ms.{pct}", sc.slo_ttft_ms[0]), (f"turn2plus.tpot_ms.{pct}", sc.slo_tpot_ms[0])):
            v = row.get(col)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                return None
            ratios.append(v / slo)
        return math.log(max(ratios))

    def proposals(self, start: float, hint: tuple[float | None, float | None] | None) -> list[float]:
        """The rates to probe next (new ones only, clamped to the judgeable range)."""
        if not self.rows:
            if hint is None:
                want = [start]
            else:
                h_lo, h_hi = hint
                want = [h_lo if h_lo is not None else self.q_min, h_hi if h_hi is not None else self.q_max]
        else:
            want = [self._next()]
        out = []
        for q in want:
            q = _round(min(max(q, self.q_min), self.q_max))
            if q not in self.rows and q not in out:
                out.append(q)
        return out

    def _next(self) -> float:
        lo, hi = self.bracket()
        tol = math.log1p(self.rel_tol)
        if hi is None:                               # only passes so far
            f = self._excess(lo)
            near = self._a(lo) < (1 + self.attain) / 2 or (f is not None and f > math.log(0.85))
            return lo * (1 + 2 * self.rel_tol if near else 2.0)
        if lo is None:                               # only misses so far
            a_hi = self._a(hi)
            if a_hi < HOPELESS and self.q_min not in self.rows:
                return self.q_min
            guess = hi / 2
            sat = self.rows[hi]
            served = sat.get("saturation.served_qps")
            if sat.get("saturation.saturated") and isinstance(served, (int, float)) and 0 < served < guess:
                guess = served
            return guess
        u_lo, u_hi = math.log(lo), math.log(hi)
        width = u_hi - u_lo
        if width <= 2 * tol:                          # one probe in the middle closes it either way
            return math.exp(0.5 * (u_lo + u_hi))
        f_lo, f_hi = self._excess(lo), self._excess(hi)
        if f_lo is not None and f_hi is not None and f_lo < 0 < f_hi:
            y_lo, y_hi, y_t = -f_lo, -f_hi, 0.0       # latency percentile over the SLO: smooth far from the target
        else:
            y_lo, y_hi, y_t = _logit(self._a(lo)), _logit(self._a(hi)), _logit(min(self.attain, 1 - CLIP))
        # Illinois: an end kept two rounds running counts half as far from the target each further round, so
        # one end far from the crossing does not stall the search
        y_lo = y_t + (y_lo - y_t) * 0.5 ** max(0, self.kept["lo"] - 1)
        y_hi = y_t + (y_hi - y_t) * 0.5 ** max(0, self.kept["hi"] - 1)
        frac = (y_lo - y_t) / (y_lo - y_hi) if y_lo > y_hi else 0.5
        frac = min(max(frac, KEEP_INSIDE), 1 - KEEP_INSIDE)
        u = u_lo + frac * width
        # near an end: step just inside one tolerance, so the likely outcome closes the bracket
        u = min(max(u, u_lo + 0.95 * tol), u_hi - 0.95 * tol)
        return math.exp(u)


def _percentile_key(attain: float) -> str:
    """The summary's percentile (p50, p90, p99) nearest to the attainment target."""
    return min(("p50", 50), ("p90", 90), ("p99", 99), key=lambda p: abs(p[1] - 100 * attain))[0]


def _hints(hint: Any, names: tuple[str, ...], rel_tol: float) -> dict[str, tuple[float | None, float | None]]:
    """{system: (rate expected to attain, rate expected to miss)} from a previous answer or {system: rate}."""
    if hint is None:
        return {}
    if not isinstance(hint, Mapping):
        raise ScenarioError("hint", "must be a previous goodput() answer or a mapping {system: rate}")
    out = {}
    brackets = hint.get("brackets") if isinstance(hint.get("brackets"), Mapping) else None
    for name in names:
        if brackets is not None:
            b = brackets.get(name)
            if isinstance(b, Mapping):
                out[name] = (_hint_rate(b.get("attained_qps")), _hint_rate(b.get("missed_qps")))
            continue
        q = _hint_rate(hint.get(name))
        if q is not None:
            out[name] = (q, q * (1 + 0.98 * rel_tol))
    return out


def _hint_rate(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
        raise ScenarioError("hint", f"{x!r} is not a rate; must be a finite number >= 0")
    return float(x) if x > 0 else None


def _limit(row: dict | None, attain: float) -> str:
    """What fails first above the goodput: too few requests succeed, or the TTFT or the TPOT SLO."""
    if row is None:
        return "success"
    if row["slo_joint.success"] < attain:
        return "success"
    return "ttft" if row["slo_joint.ttft"] <= row["slo_joint.tpot"] else "tpot"


def goodput(sc: Scenario, attain: float = 0.9, *, slo_ttft_ms: float | None = None,
            slo_tpot_ms: float | None = None, rel_tol: float = 0.05, max_runs: int = 14,
            systems: tuple[str, ...] = ("PPD", "PD", "Replica"), hint: Any = None,
            **grid_options: Any) -> dict:
    """Goodput of each system; ``grid_options`` go to ``sweep.run_grid`` (executor, scheduler, workers,
    cache, cache_dir, trace, pool). ``hint``: a previous answer of this function (or {system: rate}) to
    start from. Returns the ``goodput --json`` document plus ``brackets``: per system the arrival window
    and the final bracket (highest rate that attained, lowest that did not; None if never found)."""
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
    hints = _hints(hint, tuple(systems), rel_tol)
    # a fixed arrival window, so the offered load grows with the rate (a fixed conversation count would cap it)
    window = base.arrival_window_s or base.conversations / base.qps
    q_min = _round(MIN_CONVERSATIONS / window * 1.0001)
    q_max = min(SPEC["qps"].hi, _round(MAX_CONVERSATIONS / window * 0.9999))
    start = min(max(base.qps, q_min), q_max)
    searches = [_Search(name, table[name].with_(arrival_window_s=window, qps=start), q_min, q_max, attain, rel_tol)
                for name in systems]
    _run_rounds(searches, start, hints, max_runs, grid_options)
    out, brackets = {}, {}
    for s in searches:
        lo, hi = s.bracket()
        g = lo or 0.0
        gpus = s.sc.gpu_count
        price = s.sc.price_usd_h
        out[s.name] = {"goodput_qps": g, "goodput_qps_per_gpu": g / gpus,
                       "goodput_qps_per_usd_hour": g / (gpus * price) if price > 0 else 0.0,
                       "limit": _limit(s.rows.get(hi), attain), "runs": s.runs}
        brackets[s.name] = {"window_s": window, "attained_qps": lo, "missed_qps": hi}
    return {"scenario": base.to_dict(), "attain": attain, "systems": out, "brackets": brackets}


def _run_rounds(searches: list[_Search], start: float, hints: dict, max_runs: int, grid_options: dict) -> None:
    """Every system's next probes in one grid per round, until each is settled or out of runs. Without a
    given pool (or Dask), one pool of workers - 1 processes serves every round and this process runs
    probes too."""
    opts = dict(grid_options)
    own = None
    if opts.get("executor", "local") == "local" and opts.get("pool") is None:
        n = opts.pop("workers", None) or local_workers()
        if n > 1:
            own = opts["pool"] = WorkerPool(n - 1)
            opts["parent_runs"] = True
        else:
            opts["workers"] = 1
    try:
        while True:
            step: list[tuple[_Search, float]] = []
            for s in searches:
                if s.settled() or s.runs >= max_runs:
                    continue
                for q in s.proposals(start, hints.get(s.name))[:max_runs - s.runs]:
                    step.append((s, q))
            if not step:
                return
            df = run_grid([s.sc.with_(qps=q) for s, q in step], **opts)
            for (s, q), row in zip(step, df.to_dict("records")):
                s.add(q, row)
    finally:
        if own is not None:
            own.shutdown(wait=False)
