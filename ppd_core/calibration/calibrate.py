"""Calibration: fit the performance model's physically meaningful parameters to measured data.

``python -m ppd_core calibrate --measured ../shared/data/ppd-measured [--out data/perf_params.json]``
(the command line is ``ppd_core.cli.calibrate``).

Stages (each a bounded least-squares fit of log(simulated / measured) with a soft-L1 loss, so a few noisy
points cannot dominate; parameters, never individual points):

1. decode     t_iter_ms, t_seq_us, eta_kv         <- Turn-2 mean TPOT (decode step time vs batch and context)
2. load       eta_compute, p_send_share, api_us_per_seq
                                                  <- Turn-2 p50 TTFT at QPS >= 4 and on the ShareGPT runs
                                                     (how fast P saturates, how busy nodes answer)
3. overheads  api_ms, api_us_per_token, pd_fixed_ms, pd_us_per_token, retok_hit_synthetic, eta_compute
                                                  <- Turn-1/Turn-2 p50 TTFT at low load (QPS <= 2) and the
                                                     sequential turn-scaling runs (growth with context)
   (load and overheads are then fitted once more, each starting from the other's result)
   natural_text retok_hit                         <- Turn 2+ p50 TTFT of the ShareGPT runs (natural text
                                                     re-tokenises differently from the synthetic prompts)
The interference law's ``eta_share`` (and the micro-benchmark's ``t_mix_ms`` estimate) are fitted on every
interference micro-benchmark row by ``scripts/fit_physics.py`` (``data/physics_params.json``), not here.
``pd_fixed_ms`` is split into ``pd_handoff_ms`` (latency only) and ``p_send_ms`` (also occupies P) by
``p_send_share``. Points from the same subsample are used throughout; the full validation runs at the end.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from pathlib import Path
from time import perf_counter

import numpy as np

from ..config.errors import PPDError
from ..model.params import PerfParams
from .measured import Row, read_dir
from .validate import points, simulate_rows, summarize

FIT_WORKLOADS = ("small_tiny", "small_mid_bal", "small_huge_paste", "large_mid_bal", "large_big_paste",
                 "large_very_long_gen")
FIT_QPS = (1.0, 2.0, 4.0, 8.0, 12.0, 20.0)


def _subsample(rows: list[Row]) -> list[Row]:
    keep = []
    for r in rows:
        if not r.usable:
            continue
        if r.kind == "comprehensive" and (r.workload not in FIT_WORKLOADS or r.qps not in FIT_QPS):
            continue
        keep.append(r)
    return keep


def _targets(rows: list[Row], select) -> list[tuple[Row, str]]:
    return [(r, m) for r in rows for m in r.metrics if select(r, m)]


def _residuals(params: PerfParams, targets: list[tuple[Row, str]], workers: int | None) -> np.ndarray:
    rows = list({id(r): r for r, _ in targets}.values())
    sims = simulate_rows(rows, params, workers)
    out = []
    for r, m in targets:
        s = sims[r.scenario].get(r.group, {}).get(m)
        out.append(math.log(max(s, 1e-6) / r.metrics[m]) if s is not None else 1.0)
    return np.asarray(out)


def _with(base: PerfParams, names: tuple[str, ...], x: np.ndarray) -> PerfParams:
    values = dict(zip(names, (float(v) for v in x)))
    if "pd_fixed_ms" in values or "p_send_share" in values:
        fixed = values.pop("pd_fixed_ms", base.pd_handoff_ms + base.p_send_ms)
        share = values.pop("p_send_share", base.p_send_ms / max(base.pd_handoff_ms + base.p_send_ms, 1e-9))
        values["p_send_ms"] = fixed * share
        values["pd_handoff_ms"] = fixed * (1 - share)
    return replace(base, **values)


def _get(base: PerfParams, name: str) -> float:
    if name == "pd_fixed_ms":
        return base.pd_handoff_ms + base.p_send_ms
    if name == "p_send_share":
        return base.p_send_ms / max(base.pd_handoff_ms + base.p_send_ms, 1e-9)
    return getattr(base, name)


def _fit(base: PerfParams, names, bounds, fun, log, max_nfev: int = 10) -> tuple[PerfParams, dict]:
    from scipy.optimize import least_squares
    x0 = np.array([min(max(_get(base, n), lo * 1.0001), hi * 0.9999) for n, (lo, hi) in zip(names, bounds)])
    t0 = perf_counter()
    r0 = fun(_with(base, names, x0))
    res = least_squares(lambda x: fun(_with(base, names, x)), x0, bounds=(np.array([b[0] for b in bounds]),
                        np.array([b[1] for b in bounds])), loss="soft_l1", f_scale=0.1, diff_step=0.05,
                        max_nfev=max_nfev, x_scale="jac")
    fitted = _with(base, names, res.x)
    info = {"params": {n: round(float(v), 6) for n, v in zip(names, res.x)}, "n_targets": int(r0.size),
            "mape_before": round(100 * float(np.mean(np.abs(np.expm1(r0)))), 2),
            "mape_after": round(100 * float(np.mean(np.abs(np.expm1(res.fun)))), 2),
            "evaluations": int(res.nfev), "seconds": round(perf_counter() - t0, 1)}
    log(f"  {info}")
    return fitted, info


def calibrate(measured_dir: str, base: PerfParams | None = None, workers: int | None = None,
              log=print) -> tuple[PerfParams, dict]:
    rows, _ = read_dir(measured_dir)
    fit_rows = _subsample(rows)
    if not fit_rows:
        raise PPDError(f"--measured: no usable measured rows in {measured_dir}")
    p = base or PerfParams()
    report: dict = {}

    def is_t2(r: Row) -> bool:
        return r.group == "turn2plus" or (r.group.startswith("turn:") and r.group != "turn:1")

    decode_t = _targets(fit_rows, lambda r, m: m == "avg_tpot_ms" and is_t2(r))
    low_t = _targets(fit_rows, lambda r, m: m == "p50_ttft_ms" and (
        (r.kind == "comprehensive" and r.qps <= 2 and r.group in ("turn1", "turn2plus"))
        or (r.kind == "scaling" and r.group.startswith("turn:"))))
    load_t = _targets(fit_rows, lambda r, m: m == "p50_ttft_ms" and r.group == "turn2plus" and (
        (r.kind == "comprehensive" and r.qps >= 4 and r.metrics[m] < 3000) or r.kind == "trace"))

    def fun_for(targets):
        return lambda params: _residuals(params, targets, workers)

    overheads = (("api_ms", "api_us_per_token", "pd_fixed_ms", "pd_us_per_token", "retok_hit_synthetic",
                  "eta_compute"),
                 ((0.0, 80.0), (0.0, 40.0), (0.0, 150.0), (0.0, 40.0), (0.0, 1.0), (0.2, 0.9)), low_t)
    natural_t = _targets(fit_rows, lambda r, m: m == "p50_ttft_ms" and r.group == "turn2plus" and r.kind == "trace")
    load = (("eta_compute", "p_send_share", "api_us_per_seq"), ((0.2, 0.9), (0.0, 1.0), (0.0, 2000.0)), load_t)
    stages = (
        ("decode", ("t_iter_ms", "t_seq_us", "eta_kv"), ((0.2, 6.0), (0.0, 400.0), (0.2, 0.95)), decode_t),
        ("load", *load),
        ("overheads", *overheads),
        ("load_refit", *load),
        ("overheads_refit", *overheads),
        ("natural_text", ("retok_hit",), ((0.0, 1.0),), natural_t),
    )
    for name, names, bounds, targets in stages:
        log(f"stage {name}: {', '.join(names)} on {len(targets)} measured values")
        p, report[name] = _fit(p, names, bounds, fun_for(targets), log)
    log("validating on every measured point ...")
    sims = simulate_rows(rows, p, workers)
    summary = summarize(points(rows, sims))
    report["validation"] = {"overall": summary["overall"], "winner_agreement": summary["winner_agreement"]}
    return p, report


def write(p: PerfParams, report: dict, out: Path, measured_dir: str) -> None:
    doc = {"_doc": "Performance-model parameters fitted by `python -m ppd_core calibrate` on the measured H100 "
                   "data; loaded by default by ppd_core.perf. See README 'Fidelity' for what each one means.",
           "measured_dir": str(Path(measured_dir).name),
           "params": {k: round(v, 6) for k, v in asdict(p).items()},
           "fit": report}
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
