"""Leave-one-layout-out: the honest error estimate for a layout the calibration never saw.

For each of the seven calibration layouts, refit the layout-dependent stages (``stages.LOLO_STAGES``: decode
and the joint TTFT stage, each once, with its coarse scan) on the other six layouts' subsample, warm-started
from ``base`` (the shipped fit), then simulate every usable measured row of the held-out layout with the
refitted parameters and report its Turn-2 TPOT mean MAPE and unsaturated p50 TTFT MAPE (the validation's
target sets), per held-out layout and pooled over all of them."""
from __future__ import annotations

from dataclasses import asdict, replace
from time import perf_counter
from typing import Callable

from ..config.errors import PPDError
from ..model.params import PerfParams
from .calibrate import SimCache, Subsample, fit_stages
from .measured import read_dir
from .stages import LOLO_STAGES, Stage
from .validate import _mape, points, simulate_rows, target_sets

CALIBRATION_LAYOUTS = ("4R", "1P_3D", "2P_2D", "3P_1D", "1P_3pD", "2P_2pD", "3P_1pD")
SETS = ("turn2_tpot_mean", "turn2_ttft_p50_unsaturated")
# the folds' fit subsample: three synthetic workloads x three QPS and turn scaling (no ShareGPT runs, the
# costliest scenarios), so seven folds of two stages (with their scans) run in about 20 min on 2 quiet cores
LOLO_SUBSAMPLE = Subsample(workloads=("small_mid_bal", "large_mid_bal", "large_big_paste"), qps=(2.0, 8.0, 20.0),
                           kinds=("comprehensive", "scaling"))


def lolo(measured_dir: str, base: PerfParams, workers: int | None = None, log: Callable[[str], None] = print,
         stages: tuple[Stage, ...] = LOLO_STAGES, subsample: Subsample = LOLO_SUBSAMPLE,
         layouts: tuple[str, ...] = CALIBRATION_LAYOUTS, seeds: int = 1, test: Subsample | None = None) -> dict:
    """``test``: which of the held-out layout's rows to score (default: every usable row of it)."""
    rows, _ = read_dir(measured_dir)
    folds = {}
    held_pts = []
    t0 = perf_counter()
    for lay in layouts:
        held = [r for r in (test.rows(rows) if test else rows) if r.usable and r.config == lay]
        if not held:
            raise PPDError(f"--lolo: no usable measured rows of layout {lay} in {measured_dir}")
        fit_rows = replace(subsample, exclude_layouts=subsample.exclude_layouts + (lay,)).rows(rows)
        log(f"fold {lay}: refitting {', '.join(s.name for s in stages)} on {len(fit_rows)} rows of the other "
            "layouts")
        t1 = perf_counter()
        p, rep = fit_stages(base, fit_rows, stages, SimCache(workers), log)
        pts = points(held, simulate_rows(held, p, workers, seeds=seeds))
        held_pts += pts
        sets = target_sets(pts)
        folds[lay] = {**{k: _mape(sets[k]) for k in SETS},
                      "params": {k: v for st in rep.values() for k, v in st["params"].items()},
                      "converged": all(st["converged"] for st in rep.values()),
                      "seconds": round(perf_counter() - t1, 1)}
        log(f"fold {lay}: held-out Turn-2 TPOT MAPE {folds[lay][SETS[0]]['mape']} %, "
            f"p50 TTFT MAPE {folds[lay][SETS[1]]['mape']} %")
    sets = target_sets(held_pts)
    return {"folds": folds, "overall": {k: _mape(sets[k]) for k in SETS},
            "refit_stages": [s.name for s in stages], "subsample": asdict(subsample),
            "seconds": round(perf_counter() - t0, 1)}


def format_lolo(res: dict) -> str:
    lines = ["Leave-one-layout-out (fit on six calibration layouts, test on the seventh), MAPE %",
             f"{'held out':<10} {'Turn-2 TPOT mean':>18} {'Turn-2 TTFT p50*':>18}"]

    def cell(d):
        return "-" if d["mape"] is None else f"{d['mape']:.1f} (n={d['n']})"
    for lay, d in res["folds"].items():
        lines.append(f"{lay:<10} {cell(d[SETS[0]]):>18} {cell(d[SETS[1]]):>18}")
    o = res["overall"]
    lines.append(f"{'overall':<10} {cell(o[SETS[0]]):>18} {cell(o[SETS[1]]):>18}")
    sub = res["subsample"]
    lines.append(f"refit per fold: {', '.join(res['refit_stages'])} (warm start: the current parameters) on "
                 f"{len(sub['workloads'])} workloads x QPS {'/'.join(f'{q:g}' for q in sub['qps'])} "
                 f"({', '.join(sub['kinds'])}); {res['seconds']} s")
    return "\n".join(lines)
