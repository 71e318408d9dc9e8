"""One calibration stage as a converging bounded least-squares fit (scipy ``least_squares``, trust-region
reflective, soft-L1 loss on log(simulated / measured)), and the report of what it did: iterations,
simulations, convergence status, each parameter's change, and any parameter that ended on a bound with the
physical reason for that bound.

Deterministic: the start point, the finite-difference steps and the simulations are pure functions of the
inputs, so the same stage list from the same start writes the same parameters."""
from __future__ import annotations

from dataclasses import replace
from time import perf_counter
from types import SimpleNamespace
from typing import Callable

import numpy as np

from ..model.params import PerfParams
from .stages import Stage

FTOL = 1e-3      # relative change of the cost: below the seed-to-seed noise of a simulated point
XTOL = 1e-3      # relative change of the parameters
GTOL = 1e-6
F_SCALE = 0.1    # soft-L1 scale of the log residuals: beyond ~10 % a point's pull grows linearly, not squared
DIFF_STEP = 0.02  # finite-difference step, a share of each parameter's bound interval (the fit runs on
                  # coordinates scaled to [0, 1]): large enough to step over discrete-event jitter even for a
                  # parameter that starts at 0 (a step relative to the value would be ~0 there)
# the coarse scan's levels, shares of each bound interval (see fit_stage). Nine, not five: on the bumpy
# simulated cost a minimum between two levels 20 % of the interval apart goes unseen and least_squares cannot
# reach it from the level either (every trial step rejected). From defaults on every QPS, the ttft stage
# picked p_send_share 0.9 of 0.7 / 0.9 while 0.8 cost 1.1 % less at the end of the fit (2026-12-02)
SCAN = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
REFINE = (0.1, 0.05, 0.025)        # the compass search's step sizes after the scan (``Stage.refine``), shares
REFINE_POLLS = 2                   # of each bound interval, and its polls per size: at most 2 x 2 x 3 x n evaluations
ON_BOUND = 5e-3  # a fitted value within this share of the bound interval from a bound is "on the bound"
STATUS = {-1: "improper input", 0: "evaluation budget exhausted (not converged)", 1: "converged (gtol)",
          2: "converged (ftol: cost no longer falls)", 3: "converged (xtol: parameters no longer move)",
          4: "converged (ftol and xtol)",
          5: f"converged (compass search: no step of {REFINE[-1]:.1%} of any bound interval lowers the cost)"}


def get(p: PerfParams, name: str) -> float:
    """A fitted coordinate of ``p``: a field, or pd_fixed_ms / p_send_share (the PD-path split)."""
    if name == "pd_fixed_ms":
        return p.pd_handoff_ms + p.p_send_ms
    if name == "p_send_share":
        return p.p_send_ms / max(p.pd_handoff_ms + p.p_send_ms, 1e-9)
    return getattr(p, name)


def with_values(base: PerfParams, names: tuple[str, ...], x) -> PerfParams:
    values = dict(zip(names, (float(v) for v in x)))
    if "pd_fixed_ms" in values or "p_send_share" in values:
        fixed = values.pop("pd_fixed_ms", get(base, "pd_fixed_ms"))
        share = values.pop("p_send_share", get(base, "p_send_share"))
        values["p_send_ms"] = fixed * share
        values["pd_handoff_ms"] = fixed * (1 - share)
    return replace(base, **values)


def _mape(r: np.ndarray) -> float:
    return round(100 * float(np.mean(np.abs(np.expm1(r)))), 2) if r.size else 0.0


def _cost(r: np.ndarray) -> float:
    """least_squares' soft-L1 cost of the residuals ``r``: 0.5 * sum f^2 * 2 (sqrt(1 + (r/f)^2) - 1), f = F_SCALE."""
    return float(np.sum(F_SCALE ** 2 * (np.sqrt(1.0 + (r / F_SCALE) ** 2) - 1.0)))


def _scan(u0: np.ndarray, r0: np.ndarray, f: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, list]:
    """One coordinate sweep over the scaled box: each parameter in turn at the ``SCAN`` levels, the others
    where the sweep has put them, keeping whichever point costs least (the start included). The simulated
    cost is a bumpy function of the parameters (discrete events), so a local trust-region fit from a
    literature start can stop in a shallow dip far from the basin: on the load stage it stopped at
    api_us_per_seq 11 us where 300 us costs 14 % less. The sweep finds the basin, least_squares refines."""
    u, best = u0.copy(), _cost(r0)
    trail = []
    for i in range(u.size):
        tried = []
        for level in SCAN:
            v = u.copy()
            v[i] = level
            c = _cost(f(v))
            tried.append((level, round(c, 5)))
            if c < best:
                best, u = c, v
        trail.append(tried)
    return u, trail


def _refine(u0: np.ndarray, f: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray, bool]:
    """Compass (pattern) search from ``u0`` on the scaled box: at each step size of ``REFINE`` in turn, try
    every parameter one step up and one step down, keep each move that lowers the cost, and poll again at
    the same size until a whole poll finds nothing (at most ``REFINE_POLLS`` polls per size). Derivative-free,
    so the discrete-event jitter that makes least_squares' finite-difference steps fail does not stop it.
    Converged when a whole poll at the finest size improves nothing. Returns (u, residuals at u, converged)."""
    u, r = u0.copy(), f(u0)
    best, improved = _cost(r), True
    for h in REFINE:
        for _ in range(REFINE_POLLS):
            improved = False
            for i in range(u.size):
                for step in (h, -h):
                    v = u.copy()
                    v[i] = min(1.0, max(0.0, v[i] + step))
                    if v[i] == u[i]:
                        continue
                    rv = f(v)
                    c = _cost(rv)
                    if c < best:
                        best, u, r, improved = c, v, rv, True
                        break
            if not improved:
                break
    return u, r, not improved


def fit_stage(base: PerfParams, stage: Stage, fun: Callable[[PerfParams], np.ndarray],
              log: Callable[[str], None]) -> tuple[PerfParams, dict]:
    """Fit ``stage.params`` of ``base`` so ``fun(params)`` (log residuals) is small; return the new
    parameters and the stage's report. A stage with ``scan`` first sweeps each parameter over ``SCAN``
    (``_scan``) and starts the local fit from the best point found."""
    from scipy.optimize import least_squares
    names = stage.names
    lo = np.array([p.lo for p in stage.params])
    hi = np.array([p.hi for p in stage.params])
    span = hi - lo
    x0 = np.clip(np.array([get(base, n) for n in names]), lo + 1e-4 * span, hi - 1e-4 * span)
    calls = [0]

    def f(u):
        calls[0] += 1
        return fun(with_values(base, names, lo + u * span))
    t0 = perf_counter()
    u0 = (x0 - lo) / span
    r0 = f(u0)
    u_fit, trail = (_scan(u0, r0, f) if stage.scan else (u0, []))
    if stage.refine:
        n0 = calls[0]
        x, r, done = _refine(u_fit, f)
        res = SimpleNamespace(x=x, fun=r, nfev=calls[0] - n0, njev=0, status=5 if done else 0)
    else:
        res = least_squares(f, u_fit, bounds=(0.0, 1.0), loss="soft_l1", f_scale=F_SCALE, diff_step=DIFF_STEP,
                            x_scale=1.0, ftol=FTOL, xtol=XTOL, gtol=GTOL, max_nfev=stage.max_nfev)
    # least_squares reports xtol "convergence" also when every trial step was rejected and the trust region
    # shrank to nothing: the report says when the local fit ended where it started
    local_moved = bool(np.max(np.abs(res.x - u_fit)) > XTOL)
    res.x = lo + res.x * span
    fitted = with_values(base, names, res.x)
    on_bound = {}
    for p, v, s in zip(stage.params, res.x, span):
        if min(v - p.lo, p.hi - v) <= ON_BOUND * s:
            side = "lower" if v - p.lo <= p.hi - v else "upper"
            on_bound[p.name] = f"{side} bound {p.lo if side == 'lower' else p.hi:g}: {p.why}"
    info = {
        "params": {n: round(float(v), 6) for n, v in zip(names, res.x)},
        "start": {n: round(float(v), 6) for n, v in zip(names, x0)},
        "change_pct": {n: (round(100 * (float(v) / float(a) - 1), 2) if a else None)
                       for n, v, a in zip(names, res.x, x0)},
        "scan": ({n: {"from": round(float(lo[i] + u_fit[i] * span[i]), 6),
                      "tried": [[round(float(lo[i] + lv * span[i]), 6), c] for lv, c in trail[i]]}
                  for i, n in enumerate(names)} if trail else None),
        "n_targets": int(r0.size), "mape_before": _mape(r0), "mape_after": _mape(np.asarray(res.fun)),
        "steps": int(res.nfev), "jacobians": int(res.njev or 0), "simulations": calls[0],
        "converged": bool(res.status > 0), "local_moved": local_moved,
        "status": STATUS.get(int(res.status), str(res.status)) + (
            "" if local_moved else "; the local fit did not move from its start (every trial step rejected)"),
        "on_bound": on_bound, "seconds": round(perf_counter() - t0, 1),
    }
    moves = ", ".join(f"{n} {info['start'][n]:g} -> {info['params'][n]:g}" for n in names)
    if trail:
        log("  scan: local fit starts from " + ", ".join(f"{n} {info['scan'][n]['from']:g}" for n in names))
    log(f"  {info['status']} after {info['steps']} steps, {info['jacobians']} Jacobians ({info['simulations']} evaluations, "
        f"{info['seconds']} s); MAPE {info['mape_before']} -> {info['mape_after']} %; {moves}")
    for n, why in on_bound.items():
        log(f"  {n} ends on its {why}")
    return fitted, info
