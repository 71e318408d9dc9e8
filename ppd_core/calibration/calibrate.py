"""Calibration: fit the performance model's physically meaningful parameters to measured data.

``python -m ppd_core calibrate --measured ../shared/data/ppd-measured [--from-defaults] [--lolo]``
(the command line is ``ppd_core.cli.calibrate``).

The stages (which parameters, on which targets, within which bounds and why) are data in ``stages.py``; each
is a converging bounded least-squares fit (``fit.py``) of log(simulated / measured) with a soft-L1 loss, so a
few noisy points cannot dominate; parameters, never individual points. The targets are a fixed,
deterministic subsample of the calibration set (``Subsample``: six synthetic workloads x every QPS, the
ShareGPT runs, turn scaling); simulated points are cached per (parameters, scenario), so a stage's start
point costs nothing when the previous stage ended there. ``pd_fixed_ms`` is split into ``pd_handoff_ms``
(latency only) and ``p_send_ms`` (also occupies P) by ``p_send_share``. The full validation runs at the end.
From the literature defaults (``--from-defaults``, ``literature_start()``: ``model/params.py``'s defaults, with
the micro-benchmark fit ``data/physics_params.json`` for the parameters no stage here fits, i.e. ``eta_share``)
the result is a pure function of the measured data: that is what ``data/perf_params.json`` ships.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from ..config.errors import PPDError
from ..model.params import PerfParams, default_params, physics_values
from .fit import fit_stage, get
from .interference_stage import PAPER_INTERFERENCE, interference_residuals
from .measured import Row, read_dir
from .stages import MAX_PASSES, NOT_FITTED, PASS_RTOL, REPEAT, STAGES, TARGETS, Stage
from .validate import points, simulate_rows, summarize

__all__ = ["PAPER_INTERFERENCE", "Subsample", "SimCache", "calibrate", "fit_passes", "fit_stages", "literature_start",
           "pass_change", "physics_owned", "write"]
_interference_residuals = interference_residuals   # the name tests/test_validation.py imports


@dataclass(frozen=True)
class Subsample:
    """Which measured rows the fit uses (deterministic). ``kinds``: comprehensive / trace / scaling. Every
    measured QPS of the six synthetic workloads: the 1P layouts saturate between QPS 4 and 12, and with only
    QPS 1/2/4/8/12/20 the fit saw too few points near those knees to hold them (the one-pass fit on that
    grid moved 1P_3D's knee on the small workloads from the measured QPS 10 to 12)."""
    workloads: tuple[str, ...] = ("small_tiny", "small_mid_bal", "small_huge_paste", "large_mid_bal",
                                  "large_big_paste", "large_very_long_gen")
    qps: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0)
    kinds: tuple[str, ...] = ("comprehensive", "trace", "scaling")
    exclude_layouts: tuple[str, ...] = ()

    def rows(self, rows: list[Row]) -> list[Row]:
        keep = []
        for r in rows:
            if not r.usable or r.kind not in self.kinds or r.config in self.exclude_layouts:
                continue
            if r.kind == "comprehensive" and (r.workload not in self.workloads or r.qps not in self.qps):
                continue
            keep.append(r)
        return keep


class SimCache:
    """Simulated metrics per (parameters, scenario), for one calibration (no module-level state)."""

    def __init__(self, workers: int | None):
        self.workers = workers
        self._store: dict = {}
        self.runs = 0

    def get(self, rows: list[Row], params: PerfParams) -> dict:
        missing = [r for r in rows if (params, r.scenario) not in self._store]
        if missing:
            sims = simulate_rows(missing, params, self.workers)
            self.runs += len(sims)
            for sc, m in sims.items():
                self._store[(params, sc)] = m
        return {r.scenario: self._store[(params, r.scenario)] for r in rows}


def _fitted(stages: tuple[Stage, ...]) -> set[str]:
    fitted = {n for st in stages for n in st.names}
    if fitted & {"pd_fixed_ms", "p_send_share"}:
        fitted |= {"pd_handoff_ms", "p_send_ms"}
    return fitted


def physics_owned(stages: tuple[Stage, ...] = STAGES, physics: Path | None = None) -> tuple[str, ...]:
    """Parameters that ``data/physics_params.json`` (``scripts/fit_physics.py``) fits and no stage here
    does (today ``eta_share``). ``write`` leaves them out of the calibrated file, so they keep coming from the
    micro-benchmark fit: that fit reads the calibrated engine parameters, and a copy of its value in the
    calibrated file would go stale on every refit of it (and ``--from-defaults`` would no longer reproduce
    the file, whose copy is of the refit before)."""
    return tuple(sorted(k for k in physics_values(physics) if k not in _fitted(stages)))


def literature_start(stages: tuple[Stage, ...] = STAGES, physics: Path | None = None) -> PerfParams:
    """The ``--from-defaults`` start: the literature defaults, except that a parameter no stage fits takes its
    value from the micro-benchmark fit (``data/physics_params.json``, or ``physics``), where that file has
    it (``physics_owned``)."""
    fitted = _fitted(stages)
    phys = default_params(Path(os.devnull), physics)      # literature < physics_params.json only
    return replace(PerfParams(), **{k: getattr(phys, k) for k in PerfParams.field_names() if k not in fitted})


def _targets(rows: list[Row], name: str) -> list[tuple[Row, str]]:
    select = TARGETS[name]
    return [(r, m) for r in rows for m in r.metrics if select(r, m)]


def _residual_fun(targets: list[tuple[Row, str]], cache: SimCache) -> Callable[[PerfParams], np.ndarray]:
    rows = list({id(r): r for r, _ in targets}.values())

    def fun(params: PerfParams) -> np.ndarray:
        sims = cache.get(rows, params)
        out = []
        for r, m in targets:
            s = sims[r.scenario].get(r.group, {}).get(m)
            out.append(math.log(max(s, 1e-6) / r.metrics[m]) if s is not None else 1.0)
        return np.asarray(out)
    return fun


def fit_stages(p: PerfParams, rows: list[Row], stages: tuple[Stage, ...], cache: SimCache,
               log: Callable[[str], None], suffix: str = "") -> tuple[PerfParams, dict]:
    """Run ``stages`` in order on ``rows`` from ``p``; each starts where the previous one ended. Each stage's
    report is keyed by its name + ``suffix`` (a later pass's ``@2``, ``@3``)."""
    report: dict = {}
    for st in stages:
        key = st.name + suffix
        if st.targets == "paper_interference":
            log(f"stage {key}: {', '.join(st.names)} on the paper's Fig.2/Fig.7 slowdowns")
            p, report[key] = fit_stage(p, st, interference_residuals, log)
            report[key]["residual_pp"] = [round(100 * float(x), 2) for x in interference_residuals(p)]
            continue
        targets = _targets(rows, st.targets)
        if not targets:
            raise PPDError(f"calibration stage {st.name}: no measured {st.targets} targets in the subsample")
        log(f"stage {key}: {', '.join(st.names)} on {len(targets)} measured values")
        p, report[key] = fit_stage(p, st, _residual_fun(targets, cache), log)
    return p, report


def pass_change(before: PerfParams, after: PerfParams, stages: tuple[Stage, ...]) -> dict[str, float]:
    """Each fitted coordinate's change over one pass, as a share of its value (of 0.1 x its bound interval
    when the value is smaller than that, so a parameter near 0 is not called unconverged for a tiny move)."""
    out = {}
    for st in stages:
        for fp in st.params:
            a, b = get(before, fp.name), get(after, fp.name)
            out[fp.name] = abs(b - a) / max(abs(a), 0.1 * (fp.hi - fp.lo))
    return out


def fit_passes(p: PerfParams, rows: list[Row], stages: tuple[Stage, ...], cache: SimCache,
               log: Callable[[str], None], repeat: tuple[Stage, ...] = REPEAT,
               max_passes: int = MAX_PASSES, rtol: float = PASS_RTOL) -> tuple[PerfParams, dict]:
    """``stages`` once, then ``repeat`` again until a pass changes none of its parameters by more than
    ``rtol`` (``pass_change``) or ``max_passes`` passes in all have run (``stages.REPEAT`` says why).
    ``report["passes"]``: how many ran, whether the last one moved nothing, and each pass's largest change."""
    p, report = fit_stages(p, rows, stages, cache, log)
    trail, converged = [], not repeat
    for k in range(2, max_passes + 1):
        if converged:
            break
        before = p
        log(f"pass {k}: {', '.join(st.name for st in repeat)} again from where pass {k - 1} ended")
        p, rep = fit_stages(p, rows, repeat, cache, log, suffix=f"@{k}")
        report.update(rep)
        change = pass_change(before, p, repeat)
        worst = max(change, key=change.get)
        trail.append({"pass": k, "max_change_pct": round(100 * change[worst], 3), "param": worst,
                      "change_pct": {n: round(100 * c, 3) for n, c in change.items()}})
        converged = change[worst] <= rtol
        log(f"pass {k}: largest change {worst} {100 * change[worst]:.2f} % "
            f"({'converged' if converged else 'not yet'} at {100 * rtol:g} %)")
    report["passes"] = {"n": 1 + len(trail), "repeat": [st.name for st in repeat], "rtol": rtol,
                        "max_passes": max_passes, "converged": converged, "trail": trail}
    return p, report


def calibrate(measured_dir: str, base: PerfParams | None = None, workers: int | None = None,
              log=print, stages: tuple[Stage, ...] = STAGES, subsample: Subsample = Subsample(),
              final_validation: bool = True, seeds: int = 4,
              repeat: tuple[Stage, ...] | None = None) -> tuple[PerfParams, dict]:
    """``repeat``: the stages run again after the first pass (``fit_passes``); default ``stages.REPEAT``
    when ``stages`` is the full list, none for any other list."""
    rows, _ = read_dir(measured_dir)
    fit_rows = subsample.rows(rows)
    if not fit_rows:
        raise PPDError(f"--measured: no usable measured rows in {measured_dir}")
    cache = SimCache(workers)
    if repeat is None:
        repeat = REPEAT if stages == STAGES else ()
    p, report = fit_passes(base or PerfParams(), fit_rows, stages, cache, log, repeat)
    report["not_fitted"] = dict(NOT_FITTED)
    report["subsample"] = {**asdict(subsample), "rows": len(fit_rows),
                           "scenarios": len({r.scenario for r in fit_rows}), "simulations": cache.runs}
    # every stage's local fit converged (each pass's too); whether the passes reached their fixed point is
    # report["passes"]["converged"], said apart: a bounded pass loop can stop while a pass still moves a scan level
    stage_keys = [k for k, v in report.items() if isinstance(v, dict) and "converged" in v and k != "passes"]
    report["converged"] = all(report[k]["converged"] for k in stage_keys)
    if final_validation:
        # the same measure as ``validate`` (each point the mean of ``seeds`` seeds), so the file's report and
        # README Fidelity quote one figure; a single seed adds its own noise (p50 TTFT ~0.3 pp)
        log(f"validating on every measured point ({seeds} seeds each) ...")
        summary = summarize(points(rows, simulate_rows(rows, p, workers, seeds=seeds)), seeds)
        report["validation"] = {"overall": summary["overall"], "winner_agreement": summary["winner_agreement"],
                                "seeds": seeds}
    return p, report


def write(p: PerfParams, report: dict, out: Path, measured_dir: str, stages: tuple[Stage, ...] = STAGES,
          physics: Path | None = None) -> None:
    """Write the calibrated parameters, without those the micro-benchmark fit owns (``physics_owned``)."""
    owned = physics_owned(stages, physics)
    doc = {"_doc": "Performance-model parameters fitted by `python -m ppd_core calibrate --from-defaults` on the "
                   "measured H100 data; loaded by default by ppd_core.perf. See docs/fidelity.md for what each "
                   "one means. Parameters listed under 'from_physics' are not here: they come from "
                   "data/physics_params.json (scripts/fit_physics.py).",
           "measured_dir": str(Path(measured_dir).name),
           "params": {k: round(v, 6) for k, v in asdict(p).items() if k not in owned},
           "from_physics": list(owned),
           "fit": report}
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
