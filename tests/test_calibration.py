"""Calibration that is a fit (converges, reproduces from the literature defaults, no silent bound),
leave-one-layout-out, and the validation's effect-size / rank / seed figures on inputs with known answers."""
from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ppd_core.calibration.agreement import effect_size, rank_agreement
from ppd_core.calibration import calibrate as calibrate_mod
from ppd_core.calibration.calibrate import (Subsample, calibrate, fit_passes, literature_start, pass_change,
                                           physics_owned, write)
from ppd_core.calibration.fit import SCAN, fit_stage, get
from ppd_core.calibration.lolo import lolo
from ppd_core.calibration.measured import read_dir
from ppd_core.calibration.stages import NOT_FITTED, REPEAT, STAGES, FitParam, Stage
from ppd_core.calibration.validate import simulate_scenarios
from ppd_core.config.scenario import Scenario
from ppd_core.analysis.runs import run
from ppd_core.model.params import PerfParams, default_params

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT.parent / "shared" / "data" / "ppd-measured"
needs_data = pytest.mark.skipif(not MEASURED.is_dir() and not os.environ.get("CI"),
                                reason="../shared/data/ppd-measured not present (it is in CI)")
TINY = Subsample(workloads=("small_mid_bal",), qps=(2.0, 8.0), kinds=("comprehensive",))
T_ITER = Stage("t_iter", (FitParam("t_iter_ms", 0.2, 6.0, "a host cost"),), "turn2_tpot", max_nfev=8)


def test_fit_stage_converges_to_the_analytic_optimum():
    """log(t_iter / 2.5) has its zero at 2.5: the fit gets there, says it converged, and reports the change."""
    p, info = fit_stage(PerfParams(), T_ITER, lambda q: np.array([math.log(q.t_iter_ms / 2.5)]), lambda m: None)
    assert p.t_iter_ms == pytest.approx(2.5, rel=1e-3)
    assert info["converged"] and info["on_bound"] == {}
    assert info["change_pct"]["t_iter_ms"] == pytest.approx(100 * (2.5 / 1.8 - 1), abs=0.2)
    json.dumps(info)   # the report is plain JSON


def test_passes_run_coupled_stages_to_their_joint_fixed_point(monkeypatch):
    """Two stages whose optima depend on each other (t_iter = 1 + t_seq / 100, t_seq = 50 + 10 t_iter; joint
    solution 5/3 ms and 66.7 us): one pass stops short of it, repeated passes converge onto it, the report
    says how many passes ran and how much each moved, and a pass cap that is too small says "not converged"."""
    toy = {"a": lambda q: np.array([math.log(q.t_iter_ms / (1 + q.t_seq_us / 100))]),
           "b": lambda q: np.array([math.log(q.t_seq_us / (50 + 10 * q.t_iter_ms))])}
    monkeypatch.setattr(calibrate_mod, "_targets", lambda rows, name: [name])
    monkeypatch.setattr(calibrate_mod, "_residual_fun", lambda targets, cache: toy[targets[0]])
    a = Stage("a", (FitParam("t_iter_ms", 0.2, 6.0, "a host cost"),), "a", max_nfev=20)
    b = Stage("b", (FitParam("t_seq_us", 0.0, 400.0, "a host cost"),), "b", max_nfev=20)
    one, rep1 = fit_passes(PerfParams(), [], (a, b), None, lambda m: None, repeat=(a, b), max_passes=1)
    assert rep1["passes"] == {"n": 1, "repeat": ["a", "b"], "rtol": 0.01, "max_passes": 1, "converged": False,
                              "trail": []}
    assert abs(one.t_iter_ms / (5 / 3) - 1) > 0.02          # one pass is not at the joint optimum
    lines = []
    p, rep = fit_passes(PerfParams(), [], (a, b), None, lines.append, repeat=(a, b), max_passes=6)
    assert p.t_iter_ms == pytest.approx(5 / 3, rel=0.01) and p.t_seq_us == pytest.approx(200 / 3, rel=0.01)
    passes = rep["passes"]
    assert passes["converged"] and 2 <= passes["n"] < 6 and len(passes["trail"]) == passes["n"] - 1
    assert passes["trail"][-1]["max_change_pct"] <= 1.0 < passes["trail"][0]["max_change_pct"]
    assert {"a", "b", "a@2", "b@2"} <= set(rep)                 # every pass's stage report is kept
    assert any("converged at 1 %" in m for m in lines)
    json.dumps(rep)


def test_pass_change_is_relative_with_a_floor_near_zero():
    st = Stage("s", (FitParam("t_mix_ms", 0.0, 20.0, "a host cost"), FitParam("t_iter_ms", 0.2, 6.0, "x")), "s")
    before = PerfParams(t_mix_ms=0.001, t_iter_ms=2.0)
    ch = pass_change(before, replace(before, t_mix_ms=0.021, t_iter_ms=2.02), (st,))
    assert ch["t_iter_ms"] == pytest.approx(0.01)
    assert ch["t_mix_ms"] == pytest.approx(0.02 / 2.0)          # floor: 0.1 x the 20 ms interval


def test_fit_stage_names_a_bound_it_ends_on():
    lines = []
    _, info = fit_stage(PerfParams(), T_ITER, lambda q: np.array([math.log(q.t_iter_ms / 10.0)]), lines.append)
    assert "upper bound 6" in info["on_bound"]["t_iter_ms"] and "a host cost" in info["on_bound"]["t_iter_ms"]
    assert any("t_iter_ms ends on its upper bound" in s for s in lines)


def test_the_scan_finds_the_basin_a_local_fit_from_the_start_cannot_see():
    """A plateau around the start (the cost does not change there, as when a simulated metric is stuck on a
    discrete event) stops the trust-region fit where it began; the coarse scan finds the basin at 4 ms and
    the local fit then converges onto the optimum."""
    def fun(q):
        return np.array([1.0 if q.t_iter_ms < 2.5 else math.log(q.t_iter_ms / 4.0)])
    plain = replace(T_ITER, max_nfev=20)
    p0, info0 = fit_stage(PerfParams(), plain, fun, lambda m: None)
    assert p0.t_iter_ms == pytest.approx(PerfParams().t_iter_ms, rel=1e-6)     # stuck on the plateau
    # ... which least_squares calls "converged"; the report says it never moved
    assert info0["converged"] and not info0["local_moved"] and "did not move" in info0["status"]
    lines: list[str] = []
    p1, info = fit_stage(PerfParams(), replace(plain, scan=True), fun, lines.append)
    assert p1.t_iter_ms == pytest.approx(4.0, rel=1e-2)
    assert info["converged"] and info["local_moved"] and "did not move" not in info["status"]
    assert len(info["scan"]["t_iter_ms"]["tried"]) == len(SCAN)
    assert any("scan: local fit starts from t_iter_ms" in m for m in lines)


def test_the_compass_search_refines_where_finite_differences_see_only_jitter():
    """A cost with a basin at 4 ms under a fast ripple (discrete-event jitter): least_squares' finite-
    difference slope is the ripple's, so from the scan's point (3.68) it settles in the nearest ripple dip (3.66);
    the compass search steps over the ripple to within a few % of the interval of the optimum, to a cost
    less than half of that, and says it converged, in a bounded number of evaluations."""
    def fun(q):
        return np.array([math.log(q.t_iter_ms / 4.0) + 0.03 * math.sin(40.0 * q.t_iter_ms)])
    plain, refine = replace(T_ITER, scan=True, max_nfev=20), replace(T_ITER, scan=True, refine=True)
    lo, hi = T_ITER.params[0].lo, T_ITER.params[0].hi
    p1, info = fit_stage(PerfParams(), refine, fun, lambda m: None)
    assert abs(p1.t_iter_ms - 4.0) <= 0.05 * (hi - lo)
    assert info["converged"] and info["status"].startswith("converged (compass search")
    assert info["simulations"] <= 1 + len(SCAN) + 1 + 2 * 2 * 3
    p_ls, _ = fit_stage(PerfParams(), plain, fun, lambda m: None)     # from the same scan point (3.68)
    assert abs(fun(p1)[0]) < 0.5 * abs(fun(p_ls)[0])                   # 0.021 against 0.060: a ripple dip


def test_fit_stage_moves_a_parameter_that_starts_at_zero():
    """A parameter that starts at 0 (t_mix_ms here): the finite-difference step is a share of the bound
    interval, so the fit still sees the slope and reaches the analytic optimum of log((t_mix + 1) / 3), 2."""
    st = Stage("t_mix", (FitParam("t_mix_ms", 0.0, 20.0, "a host cost"),), "turn2_tpot", max_nfev=30)
    p, info = fit_stage(PerfParams(t_mix_ms=0.0), st, lambda q: np.array([math.log((q.t_mix_ms + 1.0) / 3.0)]), lambda m: None)
    assert p.t_mix_ms == pytest.approx(2.0, rel=1e-2) and info["converged"]


def test_literature_start_takes_unfitted_parameters_from_the_physics_fit(tmp_path):
    """--from-defaults: every parameter a stage fits starts at its literature default; one no stage fits
    (eta_share) takes the micro-benchmark fit's value, which the written file would otherwise overwrite; a
    stage's parameter does not, even when the physics file has it."""
    phys = tmp_path / "physics.json"
    phys.write_text(json.dumps({"params": {"eta_share": 0.3, "t_iter_ms": 4.0}}))
    start = literature_start(STAGES, phys)
    assert start.eta_share == 0.3
    assert start.t_iter_ms == PerfParams().t_iter_ms          # fitted by the decode stage
    assert replace(start, eta_share=PerfParams().eta_share) == PerfParams()


def test_every_parameter_is_fitted_by_a_stage_or_says_why_not():
    """The report lists what no stage fits with the reason (stages.NOT_FITTED): a parameter left out of both
    would silently keep its literature default. t_mix_ms and eta_attn are not fitted: the calibration set
    does not identify them (README Fidelity)."""
    fitted = calibrate_mod._fitted(STAGES)           # the PD-path split counts as its two fields
    for name in PerfParams.field_names():
        assert name in fitted or NOT_FITTED.get(name), name
        assert not (name in fitted and name in NOT_FITTED), name
    assert {"t_mix_ms", "eta_attn"} <= set(NOT_FITTED)


def test_every_stage_parameter_has_bounds_and_a_reason():
    """... and is a parameter of the model (a misspelt or removed one would fail an hour into a calibration),
    with the literature default inside its bounds; the repeated stages are stages of the list."""
    for st in STAGES:
        assert st.params and st.max_nfev > 0
        for fp in st.params:
            assert fp.lo < fp.hi and fp.why, (st.name, fp)
            assert fp.name in PerfParams.field_names() or fp.name in ("pd_fixed_ms", "p_send_share"), fp.name
            assert fp.lo <= get(PerfParams(), fp.name) <= fp.hi, fp.name
    assert set(REPEAT) <= set(STAGES)


@needs_data
def test_the_fit_subsample_covers_every_measured_qps():
    """The 1P layouts saturate between QPS 4 and 12: the fit sees every measured QPS of its workloads, so the
    points near each knee are targets (with six of the ten it moved 1P_3D's knee from QPS 10 to 12)."""
    rows, _ = read_dir(MEASURED)
    measured = {r.qps for r in rows if r.kind == "comprehensive" and r.usable}
    assert set(Subsample().qps) == measured
    fit = Subsample().rows(rows)
    for lay in ("1P_3D", "1P_3pD"):
        assert {6.0, 10.0, 16.0} <= {r.qps for r in fit if r.config == lay and r.kind == "comprehensive"}


@needs_data
def test_from_defaults_is_deterministic_and_the_written_file_reproduces(tmp_path):
    """The fast variant of 'calibrate --from-defaults reproduces the shipped file': a tiny stage on a tiny
    subsample, run twice from the literature defaults, gives identical parameters, and the written file
    loads back within 1 % per parameter."""
    log = []
    p1, r1 = calibrate(str(MEASURED), PerfParams(), 1, log.append, stages=(T_ITER,), subsample=TINY,
                       final_validation=False)
    p2, _ = calibrate(str(MEASURED), PerfParams(), 1, lambda m: None, stages=(T_ITER,), subsample=TINY,
                      final_validation=False)
    assert p1 == p2
    assert r1["t_iter"]["mape_after"] < r1["t_iter"]["mape_before"]
    assert r1["t_iter"]["converged"], r1["t_iter"]
    assert any("converged" in m for m in log)
    assert p1 != PerfParams()
    out = tmp_path / "p.json"
    write(p1, r1, out, str(MEASURED))
    back = default_params(out)
    for k, v in vars(p1).items():
        if k not in physics_owned():
            assert getattr(back, k) == pytest.approx(v, rel=0.01), k


def test_the_written_file_leaves_the_micro_benchmark_parameters_to_their_own_fit(tmp_path):
    """eta_share is fitted by scripts/fit_physics.py, which reads the calibrated engine parameters: the
    calibrated file does not copy it, so a refit of the micro-benchmark after a calibration cannot leave a
    stale copy behind that wins over it (and breaks the --from-defaults reproduction by its difference)."""
    physics = tmp_path / "physics.json"
    physics.write_text(json.dumps({"params": {"eta_share": 0.31}}))
    assert physics_owned(STAGES, physics) == ("eta_share",)
    start = literature_start(STAGES, physics)
    assert start.eta_share == 0.31 and start.t_mix_ms == PerfParams().t_mix_ms
    out = tmp_path / "p.json"
    write(replace(start, eta_share=0.5, t_iter_ms=2.5), {}, out, "m", STAGES, physics)
    doc = json.loads(out.read_text())
    assert "eta_share" not in doc["params"] and doc["from_physics"] == ["eta_share"]
    assert doc["params"]["t_iter_ms"] == 2.5
    physics.write_text(json.dumps({"params": {"eta_share": 0.42}}))      # the micro-benchmark refitted
    back = default_params(out, physics)
    assert back.eta_share == 0.42 and back.t_iter_ms == 2.5


@needs_data
@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("PPD_LONG_TESTS") != "1", reason="full calibration: PPD_LONG_TESTS=1")
@pytest.mark.timeout(5400)       # ~25 min on a quiet 2-core box, more on a loaded one: over the suite-wide 900 s
def test_full_calibration_from_defaults_reproduces_the_shipped_file():
    shipped = json.loads((ROOT / "data" / "perf_params.json").read_text())["params"]
    p, report = calibrate(str(MEASURED), literature_start(), None, lambda m: None, final_validation=False)
    loaded = default_params()        # what the file leaves out comes from data/physics_params.json
    for k, v in vars(p).items():
        assert v == pytest.approx(shipped.get(k, getattr(loaded, k)), rel=0.01, abs=1e-6), k
    for st in STAGES:
        assert report[st.name]["converged"] or report[st.name]["on_bound"], st.name
    assert report["passes"]["n"] >= 2 and "trail" in report["passes"]


@needs_data
def test_lolo_holds_the_layout_out_of_the_fit():
    rows, _ = read_dir(MEASURED)
    fit = replace(TINY, exclude_layouts=("4R",)).rows(rows)
    assert fit and all(r.config != "4R" for r in fit)
    res = lolo(str(MEASURED), PerfParams(), 1, lambda m: None, stages=(T_ITER,), subsample=TINY,
               layouts=("4R", "3P_1pD"), test=TINY)
    assert set(res["folds"]) == {"4R", "3P_1pD"}
    for d in res["folds"].values():
        assert d["turn2_tpot_mean"]["n"] >= 2 and d["turn2_tpot_mean"]["mape"] is not None
    n = sum(d["turn2_tpot_mean"]["n"] for d in res["folds"].values())
    assert res["overall"]["turn2_tpot_mean"]["n"] == n
    assert res["folds"]["4R"]["params"] != res["folds"]["3P_1pD"]["params"]


def _pt(cfg, metric, measured, simulated, wl="small_tiny", qps=2.0):
    return SimpleNamespace(file="comprehensive.csv", config=cfg, workload=wl, qps=qps, turn="turn2",
                           metric=metric, measured=measured, simulated=simulated)


def test_effect_size_on_known_ratios():
    """Measured PPD/PD = 0.5, simulated 0.6: +20 %; a second cell exact: median 10 %, mean 10 %."""
    pts = [_pt("1P_3D", "avg_ttft_ms", 100, 100), _pt("1P_3pD", "avg_ttft_ms", 50, 60),
           _pt("2P_2D", "avg_ttft_ms", 80, 40), _pt("2P_2pD", "avg_ttft_ms", 40, 20)]
    e = effect_size(pts)["ttft"]
    assert e["n"] == 2 and e["mean_abs_pct"] == pytest.approx(10.0) and e["median_abs_pct"] == pytest.approx(10.0)
    assert e["per_pair_median_abs_pct"] == {"1P_3D": pytest.approx(20.0), "2P_2D": pytest.approx(0.0)}
    assert effect_size(pts)["tpot"] is None


def test_kendall_tau_on_known_orders():
    lays = ("4R", "1P_3D", "2P_2D", "3P_1D")
    same = [_pt(l, "avg_ttft_ms", m, m * 2) for l, m in zip(lays, (1, 2, 3, 4))]
    swap = [_pt(l, "avg_ttft_ms", m, s, qps=4.0) for l, m, s in zip(lays, (1, 2, 3, 4), (1, 2, 4, 3))]
    rev = [_pt(l, "avg_ttft_ms", m, -m + 10, qps=8.0) for l, m in zip(lays, (1, 2, 3, 4))]
    assert rank_agreement(same)["ttft"]["mean_tau"] == pytest.approx(1.0)
    assert rank_agreement(swap)["ttft"]["mean_tau"] == pytest.approx(4 / 6, abs=1e-3)
    assert rank_agreement(rev)["ttft"]["mean_tau"] == pytest.approx(-1.0)
    both = rank_agreement(same + swap + rev)["ttft"]
    assert both["n_cells"] == 3 and both["median_tau"] == pytest.approx(4 / 6, abs=1e-3)
    assert rank_agreement(same[:2])["ttft"] is None       # fewer than three layouts: no rank


def test_seeds_are_averaged_and_their_spread_reported():
    sc = Scenario(layout="1P_3pD", workload="small_mid_bal", qps=4.0, arrival_window_s=10.0, client_concurrency=50)
    res = simulate_scenarios([(sc, False)], seeds=3, workers=1)[sc]
    vals = [run(replace(sc, seed=sc.seed + i)).summary["groups"]["turn2plus"]["tpot_ms"]["mean"] for i in range(3)]
    assert res["turn2plus"]["avg_tpot_ms"] == pytest.approx(float(np.mean(vals)))
    assert res["_spread"]["turn2plus"]["avg_tpot_ms"] == pytest.approx(float(np.std(vals, ddof=1)))
    assert res["_spread"]["turn2plus"]["avg_tpot_ms"] > 0


@pytest.mark.parametrize("workload, turns, turn2, out_mean", [
    ("sharegpt", 2204, 1704, 308.9),    # measured README, ShareGPT / WildChat benchmark (500 conversations)
    ("wildchat", 2056, 1556, 274.5)])
@pytest.mark.parametrize("seed", [42, 43, 44, 45])
def test_dataset_generators_match_the_calibration_runs(workload, turns, turn2, out_mean, seed):
    from ppd_core.workloads.synthetic import generate, streams
    sc = Scenario(workload=workload, conversations=500, qps=2.0, client_concurrency=50, seed=seed)
    s = streams(sc.seed)
    convs = generate(sc, s["arrivals"], s["lengths"])
    n = sum(len(c.turns) for c in convs)
    outs = [t.output for c in convs for t in c.turns]
    assert len(convs) == 500
    assert n == pytest.approx(turns, rel=0.02)
    assert n - len(convs) == pytest.approx(turn2, rel=0.02)
    assert float(np.mean(outs)) == pytest.approx(out_mean, rel=0.02)
