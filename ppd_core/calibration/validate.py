"""Validation against measured data: simulate every measured point and report the simulator's error
(the command line is ``ppd_core.cli.validate``)."""
from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from ..analysis.pool import WorkerPool, local_workers
from ..analysis.progress import Progress
from ..analysis.runs import run
from ..metrics import report
from ..config.errors import PPDError
from ..config.scenario import Scenario
from ..model.params import PerfParams
from .agreement import PAIRS, effect_size, format_agreement, rank_agreement
from .measured import Row, read_dir

_STAT = MappingProxyType({"avg": "mean", "p50": "p50", "p90": "p90", "p99": "p99"})


def _sim_metrics(args: tuple[Scenario, PerfParams | None, bool]) -> dict:
    """Worker: run one scenario, return {group: {csv metric name: value}} incl. per-turn groups."""
    sc, params, per_turn = args
    res = run(sc, params=params)
    out: dict[str, dict] = {}
    clock = report.client_clock(res.records)   # the benchmark measured TTFT / E2E from the request's creation
    for g, d in report.groups(clock).items():
        out[g] = _flatten(d)
    out["_point"] = {"success_rate": 100.0 * res.summary["success_rate"],
                     "throughput_tok_s": res.summary["throughput"]["tokens_per_s"]}
    if per_turn:
        df = clock[clock["status"] == "ok"]
        for k, sub in df.groupby("turn"):
            d = {}
            for col, name in (("ttft_ms", "ttft"), ("tpot_ms", "tpot"), ("e2e_ms", "e2e")):
                v = sub[col].dropna().to_numpy()
                if v.size:
                    d[f"avg_{name}_ms"] = float(v.mean())
                    d[f"p50_{name}_ms"] = float(np.percentile(v, 50))
                    d[f"p99_{name}_ms"] = float(np.percentile(v, 99))
            out[f"turn:{k}"] = d
    return out


def _flatten(group: dict) -> dict:
    d = {}
    for name in ("ttft", "tpot", "e2e"):
        stats = group[f"{name}_ms"]
        for prefix, key in _STAT.items():
            if stats[key] is not None:
                d[f"{prefix}_{name}_ms"] = stats[key]
    return d


def _seeded(sc: Scenario, i: int) -> Scenario:
    return sc if i == 0 else replace(sc, seed=sc.seed + i)


def _mean_over_seeds(runs: list[dict]) -> dict:
    """Mean of each (group, metric) over the seeds' runs; ``_spread`` holds the seed-to-seed standard
    deviation (ddof 1) of the same values (only with two or more seeds)."""
    if len(runs) == 1:
        return runs[0]
    out: dict[str, dict] = {}
    spread: dict[str, dict] = {}
    for g in runs[0]:
        vals: dict[str, list[float]] = defaultdict(list)
        for r in runs:
            for m, v in r.get(g, {}).items():
                vals[m].append(v)
        out[g] = {m: float(np.mean(v)) for m, v in vals.items()}
        spread[g] = {m: float(np.std(v, ddof=1)) for m, v in vals.items() if len(v) > 1}
    out["_spread"] = spread
    return out


def simulate_scenarios(jobs: list[tuple[Scenario, bool]], params: PerfParams | None = None,
                       workers: int | None = None, progress: Progress | None = None,
                       seeds: int = 1, pool: WorkerPool | None = None) -> dict[Scenario, dict]:
    """Simulate each (scenario, per-turn groups?) once per seed (seed, seed+1, ...; in parallel on all cores)
    and return the mean over seeds per scenario (with ``_spread`` when seeds > 1)."""
    if not 1 <= seeds <= 64:
        raise PPDError(f"--seeds: {seeds} is out of range; must be an integer in [1, 64]")
    runs = [(_seeded(sc, i), params, per_turn) for sc, per_turn in jobs for i in range(seeds)]
    workers = pool.workers if pool is not None else workers or local_workers()
    if pool is not None:
        outs = list(pool.map(_sim_metrics, runs, progress=progress, chunksize=8))
    elif workers <= 1 or len(runs) < 4:
        outs = []
        for i, job in enumerate(runs):
            outs.append(_sim_metrics(job))
            if progress:
                progress(i + 1, len(runs))
    else:
        with WorkerPool(workers) as pool:
            outs = list(pool.map(_sim_metrics, runs, progress=progress or None, chunksize=8))
    return {sc: _mean_over_seeds(outs[k * seeds:(k + 1) * seeds]) for k, (sc, _) in enumerate(jobs)}


def simulate_rows(rows: list[Row], params: PerfParams | None = None, workers: int | None = None,
                  progress: Progress | None = None, pool: WorkerPool | None = None,
                  seeds: int = 1) -> dict[Scenario, dict]:
    """Simulate each distinct scenario of the usable rows (per-turn groups for the scaling runs), in
    ``pool`` (a long-lived ``WorkerPool``, then not shut down) or on all local cores."""
    need: dict[Scenario, bool] = {}
    for r in rows:
        if r.usable:
            need[r.scenario] = need.get(r.scenario, False) or r.kind == "scaling" or r.group.startswith("turn:")
    return simulate_scenarios(list(need.items()), params, workers, progress, seeds, pool)


@dataclass(frozen=True)
class Point:
    file: str
    config: str
    workload: str
    qps: float
    turn: str
    metric: str
    measured: float
    simulated: float | None
    success: float
    reason: str = ""
    mode: str = ""          # "dynamic": a measured ppd_dynamic run simulated with policy=dynamic (own error rows)
    spread: float | None = None   # seed-to-seed standard deviation of the simulated value (seeds >= 2)


def points(rows: list[Row], sims: dict[Scenario, dict]) -> list[Point]:
    out = []
    for r in rows:
        sim = sims.get(r.scenario) if r.usable else None
        for m, v in r.metrics.items():
            s = sd = None
            if sim is not None:
                s = sim.get(r.group, {}).get(m)
                sd = sim.get("_spread", {}).get(r.group, {}).get(m)
            out.append(Point(r.file, r.config, r.workload, r.qps, r.turn, m, v, s, r.success,
                             r.reason if not r.usable else ("" if s is not None else "no simulated value"),
                             "dynamic" if r.scenario is not None and r.scenario.policy == "dynamic" else "", sd))
        if not r.metrics and not r.usable:
            out.append(Point(r.file, r.config, r.workload, r.qps, r.turn, "", float("nan"), None, r.success,
                             r.reason))
    return out


def _is_turn2(p: Point) -> bool:
    if p.turn in ("turn2", "turn2plus"):
        return True
    return p.turn.startswith("turn") and p.turn[4:].isdigit() and int(p.turn[4:]) >= 2


def _mape(ps: list[Point]) -> dict:
    errs = [abs(p.simulated - p.measured) / p.measured for p in ps if p.simulated is not None and p.measured > 0]
    return {"mape": round(100 * float(np.mean(errs)), 2) if errs else None, "n": len(errs)}


def target_sets(pts: list[Point]) -> dict[str, list[Point]]:
    t2 = [p for p in pts if _is_turn2(p) and p.simulated is not None]
    return {
        "turn2_tpot_mean": [p for p in t2 if p.metric == "avg_tpot_ms"],
        "turn2_ttft_p50_unsaturated": [p for p in t2 if p.metric == "p50_ttft_ms" and p.success >= 95
                                       and p.measured < 1000],
        "turn2_e2e_mean": [p for p in t2 if p.metric == "avg_e2e_ms"],
    }


def winner_agreement(pts: list[Point]) -> dict:
    """PD (x=0) vs its pD twin (x=1): does the simulator pick the same winner on Turn-2 mean TTFT?"""
    t2 = {(p.file, p.config, p.workload, p.qps): p for p in pts
          if p.turn == "turn2" and p.metric == "avg_ttft_ms" and p.simulated is not None}
    agree = total = 0
    misses = []
    for (f, cfg, wl, q), p in t2.items():
        twin = PAIRS.get(cfg)
        o = t2.get((f, twin, wl, q)) if twin else None
        if o is None:
            continue
        total += 1
        ok = (o.measured < p.measured) == (o.simulated < p.simulated)
        agree += ok
        if not ok:
            misses.append(f"{cfg}/{twin} {wl} qps={q:g}")
    return {"agreement": round(agree / total, 4) if total else None, "n": total, "misses": misses[:20]}


def saturation(pts: list[Point]) -> dict:
    """Per layout and context class: the lowest QPS where the median over workloads of Turn-2 mean TTFT
    exceeds twice its value at the lowest QPS (or no valid point remains), measured vs simulated."""
    by: dict[tuple, dict[float, list[Point]]] = defaultdict(lambda: defaultdict(list))
    for p in pts:
        if p.file.startswith("comprehensive") or p.turn == "turn2":
            if p.turn == "turn2" and p.metric == "avg_ttft_ms" and p.simulated is not None:
                by[(p.config, p.workload.split("_", 1)[0])][p.qps].append(p)
    out = {}
    for key, per_q in sorted(by.items()):
        qs = sorted(per_q)
        med_m = {q: float(np.median([p.measured for p in per_q[q]])) for q in qs}
        med_s = {q: float(np.median([p.simulated for p in per_q[q]])) for q in qs}
        out[f"{key[0]}/{key[1]}"] = {"measured": _knee(qs, med_m), "simulated": _knee(qs, med_s)}
    return out


def _knee(qs: list[float], med: dict[float, float]) -> float | None:
    base = med[qs[0]]
    for q in qs[1:]:
        if med[q] > 2 * base:
            return q
    return None


def noise_floor(sets: dict[str, list[Point]]) -> dict:
    """The simulator's own noise: per target set, the median and 90th percentile over points of the
    seed-to-seed coefficient of variation (%), None with a single seed."""
    out = {}
    for name, ps in sets.items():
        cv = [100 * p.spread / p.simulated for p in ps if p.spread is not None and p.simulated]
        out[name] = ({"median_cv_pct": round(float(np.median(cv)), 2),
                      "p90_cv_pct": round(float(np.percentile(cv, 90)), 2), "n": len(cv)} if cv else None)
    return out


def summarize(pts: list[Point], seeds: int = 1) -> dict:
    everything = pts
    dyn = [p for p in pts if p.mode == "dynamic"]
    pts = [p for p in pts if p.mode != "dynamic"]
    sets = target_sets(pts)
    layouts = sorted({p.config for p in pts})
    per_layout = {}
    for lay in layouts:
        per_layout[lay] = {name: _mape([p for p in ps if p.config == lay]) for name, ps in sets.items()}
    return {
        "overall": {name: _mape(ps) for name, ps in sets.items()},
        "per_layout": per_layout,
        "winner_agreement": winner_agreement(pts),
        "effect_size": effect_size(pts),
        "rank_agreement": rank_agreement(pts),
        "seeds": seeds,
        "noise_floor": noise_floor(sets),
        "saturation_qps": saturation(pts),
        "dynamic": {name: _mape(ps) for name, ps in target_sets(dyn).items()},
        "points": {"total": len(everything), "simulated": sum(p.simulated is not None for p in everything),
                   "not_simulated": sum(p.simulated is None for p in everything)},
    }


def validate(measured_dir: str, sample: int | None = None, seed: int = 0, params: PerfParams | None = None,
             workers: int | None = None, progress=None, seeds: int = 4,
             pool: WorkerPool | None = None) -> tuple[list[Point], dict, list[str]]:
    """Simulate the measured points (each ``seeds`` times, compared by the mean) and summarise the error."""
    rows, notes = read_dir(measured_dir)
    if sample is not None:
        keys = sorted({(r.file, r.config, r.workload, r.qps) for r in rows})
        rng = random.Random(seed)
        pick = set(rng.sample(keys, min(sample, len(keys))))
        rows = [r for r in rows if (r.file, r.config, r.workload, r.qps) in pick]
    sims = simulate_rows(rows, params, workers, progress, pool, seeds)
    pts = points(rows, sims)
    return pts, summarize(pts, seeds), notes


def format_report(summary: dict, notes: list[str]) -> str:
    lines = ["Simulator error against measured points (MAPE, %; n = points)", ""]
    hdr = f"{'layout':<14} {'Turn-2 TPOT mean':>18} {'Turn-2 TTFT p50*':>18} {'Turn-2 E2E mean':>18}"
    lines.append(hdr)

    def cell(d):
        return "-" if d["mape"] is None else f"{d['mape']:.1f} (n={d['n']})"
    for lay, d in summary["per_layout"].items():
        lines.append(f"{lay:<14} {cell(d['turn2_tpot_mean']):>18} {cell(d['turn2_ttft_p50_unsaturated']):>18} "
                     f"{cell(d['turn2_e2e_mean']):>18}")
    o = summary["overall"]
    lines.append(f"{'overall':<14} {cell(o['turn2_tpot_mean']):>18} {cell(o['turn2_ttft_p50_unsaturated']):>18} "
                 f"{cell(o['turn2_e2e_mean']):>18}")
    d = summary.get("dynamic")
    if d:
        lines.append(f"{'dynamic Eq.1':<14} {cell(d['turn2_tpot_mean']):>18} {cell(d['turn2_ttft_p50_unsaturated']):>18} "
                     f"{cell(d['turn2_e2e_mean']):>18}")
        lines.append("  (measured ppd_dynamic ShareGPT runs, 1P_3D / 2P_2D at weights (1,1) (1,2) (2,1), simulated "
                     "with policy=dynamic; not in the rows above)")
    lines.append("* unsaturated points only: measured success >= 95 % and TTFT < 1 s")
    w = summary["winner_agreement"]
    if w["agreement"] is not None:
        lines.append(f"PD-vs-PPD winner on Turn-2 mean TTFT: simulator agrees on {w['agreement']:.1%} of {w['n']} "
                     "(workload, QPS) pairs")
    lines += format_agreement(summary)
    lines.append("Saturation QPS (Turn-2 TTFT median over workloads > 2x its low-load value), measured / simulated:")
    for k, v in summary["saturation_qps"].items():
        lines.append(f"  {k:<16} {_q(v['measured']):>6} / {_q(v['simulated']):<6}")
    pts = summary["points"]
    lines.append(f"points: {pts['simulated']} simulated, {pts['not_simulated']} listed with a reason (see --json)")
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)


def _q(x):
    return "none" if x is None else f"{x:g}"


def point_json(p: Point) -> dict:
    d = {"file": p.file, "config": p.config, "workload": p.workload, "qps": p.qps, "turn": p.turn,
         "metric": p.metric, "measured": None if math.isnan(p.measured) else p.measured, "simulated": p.simulated}
    if p.spread is not None:
        d["seed_spread"] = p.spread
    if p.reason:
        d["reason"] = p.reason
    return d
