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
from ..config.layout import parse_layout
from ..metrics.fidelity import CALIBRATED_LAYOUTS
from ..model.params import PerfParams
from .calibrate import SimCache, Subsample, fit_stages
from .measured import read_dir
from .stages import LOLO_STAGES, Stage
from .validate import _mape, points, simulate_rows, target_sets

CALIBRATION_LAYOUTS = CALIBRATED_LAYOUTS   # the seven layouts of the synthetic sweep
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


def _cell(d: dict) -> str:
    """One MAPE entry of a report: "4.2 (n=96)", "-" when nothing was scored."""
    return "-" if d["mape"] is None else f"{d['mape']:.1f} (n={d['n']})"


def format_lolo(res: dict) -> str:
    lines = ["Leave-one-layout-out (fit on six calibration layouts, test on the seventh), MAPE %",
             f"{'held out':<10} {'Turn-2 TPOT mean':>18} {'Turn-2 TTFT p50*':>18}"]

    for lay, d in res["folds"].items():
        lines.append(f"{lay:<10} {_cell(d[SETS[0]]):>18} {_cell(d[SETS[1]]):>18}")
    o = res["overall"]
    lines.append(f"{'overall':<10} {_cell(o[SETS[0]]):>18} {_cell(o[SETS[1]]):>18}")
    sub = res["subsample"]
    lines.append(f"refit per fold: {', '.join(res['refit_stages'])} (warm start: the current parameters) on "
                 f"{len(sub['workloads'])} workloads x QPS {'/'.join(f'{q:g}' for q in sub['qps'])} "
                 f"({', '.join(sub['kinds'])}); {res['seconds']} s")
    return "\n".join(lines)


# ---- leave one family out ----------------------------------------------------------------------------------
# A held-out layout still shares its family with the six it was fitted on (2P_2pD's mechanisms are all in
# 1P_3pD and 3P_1pD). Holding out a whole family asks the harder question a user's unseen layout poses: every
# layout with pD nodes; every layout where several P feed the D side; natural text (the ShareGPT runs) with
# nothing fitted on it.
FAMILIES = {
    "pD": "every layout with pD nodes (append-prefill on the decode side) held out; fitted on 4R and the PD layouts",
    "multi_P": "every layout with two or more P nodes held out; fitted on 4R, 1P_3D and 1P_3pD (and turn scaling's "
               "1R_1P_2pD)",
    "natural_text": "the ShareGPT runs held out: natural-text parameters at what the synthetic cells imply (no retok "
                    "fit, tokenising at the synthetic per-token cost), the rest refitted on synthetic cells",
}


def in_family(name: str, layout: str) -> bool:
    """Whether ``layout`` belongs to the layout family ``name`` (natural_text is a family of runs, not layouts)."""
    lay = parse_layout(layout)
    return {"pD": lay.n_pD > 0, "multi_P": lay.n_P >= 2}.get(name, False)
# parameters only natural text informs, and what they become when it is held out
NATURAL_ONLY = ("retok_hit", "api_us_per_token_natural")


def _natural_blind(p: PerfParams) -> PerfParams:
    """``p`` as if no natural-text run had been seen: the literature retok_hit, the synthetic tokenising cost."""
    return replace(p, retok_hit=PerfParams().retok_hit, api_us_per_token_natural=p.api_us_per_token)


def _is_natural_row(r) -> bool:
    return r.kind == "trace"


def families(measured_dir: str, base: PerfParams, workers: int | None = None,
             log: Callable[[str], None] = print, stages: tuple[Stage, ...] = LOLO_STAGES,
             subsample: Subsample = LOLO_SUBSAMPLE, names: tuple[str, ...] = tuple(FAMILIES),
             seeds: int = 1) -> dict:
    """Per family: refit ``stages`` on the rows outside it (``subsample``), simulate every usable row (held-out
    ones scored; the rest give the PD/PPD twins the effect size pairs a held-out layout with), and report the
    held-out Turn-2 TPOT and p50 TTFT MAPE, the effect size over pairs with a held-out side, and the seconds."""
    from .agreement import effect_size
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise PPDError(f"--families: unknown family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    rows, _ = read_dir(measured_dir)
    usable = [r for r in rows if r.usable and r.kind in ("comprehensive", "trace")]
    out = {}
    t0 = perf_counter()
    for name in names:
        doc = FAMILIES[name]
        t1 = perf_counter()
        if name == "natural_text":
            start = _natural_blind(base)
            fit_rows = [r for r in subsample.rows(rows) if not _is_natural_row(r)]
            held = [r for r in usable if _is_natural_row(r)]
        else:
            start = base
            fit_rows = [r for r in subsample.rows(rows) if not in_family(name, r.config)]
            held = [r for r in usable if in_family(name, r.config)]
        if not held:
            raise PPDError(f"--families: no usable measured rows of family {name} in {measured_dir}")
        log(f"family {name}: refitting {', '.join(s.name for s in stages)} on {len(fit_rows)} rows outside it")
        p, rep = fit_stages(start, fit_rows, stages, SimCache(workers), log)
        if name == "natural_text":
            p = _natural_blind(p)
            scored = held
        else:
            # the twins of held-out layouts (fitted side) so the PPD/PD ratio has both ends
            scored = [r for r in usable if r.kind == "comprehensive"] + [r for r in held if r.kind == "trace"]
        pts = points(scored, simulate_rows(scored, p, workers, seeds=seeds))
        held_pts = [q for q in pts if name == "natural_text" or in_family(name, q.config)]
        sets = target_sets(held_pts)
        eff = effect_size(pts if name != "natural_text" else [])
        out[name] = {"doc": doc, "held_out_layouts": sorted({r.config for r in held if name != "natural_text"}),
                     **{k: _mape(sets[k]) for k in SETS},
                     "effect_ttft": (eff.get("ttft") or {}).get("median_abs_pct") if eff else None,
                     "params": {k: v for st in rep.values() for k, v in st["params"].items()},
                     "converged": all(st["converged"] for st in rep.values()),
                     "seconds": round(perf_counter() - t1, 1)}
        log(f"family {name}: held-out Turn-2 TPOT MAPE {out[name][SETS[0]]['mape']} %, p50 TTFT MAPE "
            f"{out[name][SETS[1]]['mape']} %, effect {out[name]['effect_ttft']} %")
    return {"families": out, "refit_stages": [s.name for s in stages], "subsample": asdict(subsample),
            "seconds": round(perf_counter() - t0, 1)}


def format_families(res: dict) -> str:
    lines = ["Leave one family out (refit without the family, test on it), MAPE %",
             f"{'family':<14} {'Turn-2 TPOT mean':>18} {'Turn-2 TTFT p50*':>18} {'effect TTFT':>12}"]

    for name, d in res["families"].items():
        eff = "-" if d["effect_ttft"] is None else f"{d['effect_ttft']:.1f}"
        lines.append(f"{name:<14} {_cell(d[SETS[0]]):>18} {_cell(d[SETS[1]]):>18} {eff:>12}")
    lines.append("* points under 1 s with >= 95 % success; effect: median |simulated/measured - 1| of the "
                 "PPD/PD Turn-2 mean TTFT ratio over pairs with a held-out side")
    lines.append(f"{res['seconds']} s")
    return "\n".join(lines)
