"""Traffic models, saturation and the Eq.1 estimator (issue #11): open vs benchmark client, QPS
monotonicity under open traffic, the saturated flag, and the estimates' bias against the outcomes."""
from __future__ import annotations

import numpy as np
import pytest

import ppd_core
from ppd_core import Scenario, baselines


def _run(**kw):
    return ppd_core.run(Scenario(**kw))


def test_open_is_the_default_and_client_concurrency_only_caps_the_benchmark_client():
    assert Scenario().client == "open"
    capped = dict(layout="2P_2pD", qps=20, conversations=120, client_concurrency=10)
    open_ = _run(**capped).records
    bench = _run(client="benchmark", **capped).records
    assert np.all(open_["client_wait_ms"].dropna() == 0)
    assert bench["client_wait_ms"].max() > 1000, "a 10-slot client at 20 conv/s must queue"


def test_open_and_benchmark_agree_when_the_cap_never_binds():
    kw = dict(layout="2P_2D", qps=0.5, conversations=30, client_concurrency=1000)
    a, b = _run(**kw), _run(client="benchmark", **kw)
    cols = ["ttft_ms", "tpot_ms", "e2e_ms", "path"]
    assert a.records[cols].equals(b.records[cols])


@pytest.mark.parametrize("qps", [4.0, 8.0, 16.0])
def test_open_turn1_never_slower_than_the_benchmark_clients_on_the_same_arrivals(qps):
    """Same seed -> same arrivals. What a user waits for Turn 1 (client clock: TTFT + client wait) is never
    longer under the open client, which sends at once, than under the 50-slot benchmark client."""
    kw = dict(layout="2P_2D", qps=qps, conversations=200)
    a = _run(**kw).records
    b = _run(client="benchmark", **kw).records
    assert np.allclose(a["arrival_s"][a.turn == 1].to_numpy(), b["arrival_s"][b.turn == 1].to_numpy())
    from ppd_core.metrics.report import client_clock
    ca, cb = client_clock(a), client_clock(b)
    for q in (50, 90):
        ta = np.nanpercentile(ca["ttft_ms"][ca.turn == 1], q)
        tb = np.nanpercentile(cb["ttft_ms"][cb.turn == 1], q)
        assert ta <= tb * 1.02, (qps, q, ta, tb)


QPS_GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


@pytest.mark.parametrize("system", ["PPD", "PD", "Replica"])
def test_turn2_latency_never_falls_as_open_load_rises(system):
    """Same seed: the arrivals at rate q are the same exponential draws scaled by 1/q and the conversations
    are identical, so a higher rate only compresses the same traffic. Turn 2+ p90 TTFT and mean TTFT (the
    queueing) must not fall (1 % slack for the flat low-load part)."""
    sc = baselines(Scenario(layout="2P_2D", conversations=120))[system]
    p90, mean = [], []
    for q in QPS_GRID:
        g = ppd_core.run(sc.with_(qps=q)).summary["groups"]["turn2plus"]["ttft_ms"]
        p90.append(g["p90"])
        mean.append(g["mean"])
    for series in (p90, mean):
        assert all(b >= a * 0.99 for a, b in zip(series, series[1:])), (system, series)
    assert p90[-1] > p90[0], (system, p90)


def test_saturated_flag_on_overloaded_and_idle():
    idle = _run(layout="2P_2D", policy="pd", qps=0.5, conversations=60).summary["saturation"]
    over = _run(layout="1P_3D", policy="pd", qps=12, conversations=400).summary["saturation"]
    assert idle["saturated"] is False and idle["resource"] is None
    assert over["saturated"] is True
    assert over["resource"] in ("P prefill", "D decode", "KV memory", "link")
    assert over["served_qps"] < over["offered_qps"]
    assert "steady" in idle["evidence"] and over["evidence"]


def test_slow_link_saturates_the_link():
    s = _run(layout="2P_2D", policy="pd", qps=8, conversations=300, bandwidth_gbps=0.05,
             workload="large_mid_bal").summary["saturation"]
    assert s["saturated"] and s["resource"] == "link", s


BIAS_CASES = [dict(layout=lay, bandwidth_gbps=bw, qps=q)
              for lay in ("2P_2D", "1P_3D") for bw in (150.0, 10.0) for q in (1.0, 4.0)]


@pytest.mark.parametrize("case", BIAS_CASES, ids=lambda c: f"{c['layout']}-{c['bandwidth_gbps']:g}-{c['qps']:g}")
def test_eq1_estimates_match_the_outcome_on_the_path_taken(case):
    """Median of (estimated / realised - 1) of Turn 2+ TTFT within +-10 % under policy=pd (PD path) and
    policy=ppd (local path), the estimates logged per request when it was decided."""
    for policy, col in (("pd", "est_ttft_pd_ms"), ("ppd", "est_ttft_local_ms")):
        df = _run(policy=policy, conversations=100, **case).records
        d = df[(df.turn >= 2) & (df.status == "ok")]
        assert d[col].notna().all() and len(d) > 100
        bias = float(np.median(d[col] / d["ttft_ms"] - 1))
        assert abs(bias) <= 0.10, (case, policy, bias)


def test_estimates_only_on_d_nodes_and_score_is_eq1():
    df = _run(layout="1P_1D_1pD", policy="dynamic", qps=2, conversations=60, w_ttft=1.0, w_tpot=3.0).records
    t2 = df[df.turn >= 2]
    on_d = t2.decode_node.str.startswith("D")
    assert t2[on_d].est_score.notna().all() and t2[~on_d].est_score.isna().all()
    assert df[df.turn == 1].est_score.isna().all()
    d = t2[on_d]
    np.testing.assert_allclose(d.est_score, 1.0 * d.est_dttft - 3.0 * d.est_dtpot, rtol=1e-9, atol=1e-12)
    assert ((d.est_score > 0) == (d.path == "local")).all(), "S > 0 serves locally"


def test_goodput_brackets_the_capacity(tmp_path):
    """Just below the reported goodput (the rate that attained) the target is met, just above (the rate
    that missed, within rel_tol) it is not; per-GPU and per-dollar figures follow from the layout and the
    catalog price."""
    from ppd_core.analysis.goodput import goodput
    sc = Scenario(layout="1P_1pD", conversations=60, qps=2, workload="sharegpt")
    res = goodput(sc, 0.9, slo_ttft_ms=200, slo_tpot_ms=30, rel_tol=0.1, cache_dir=tmp_path)
    assert set(res["systems"]) == {"PPD", "PD", "Replica"}
    for name, r in res["systems"].items():
        b = res["brackets"][name]
        assert r["runs"] <= 14 and r["limit"] in ("ttft", "tpot", "success")
        if b["attained_qps"] is None or b["missed_qps"] is None:
            continue
        lo, hi = b["attained_qps"], b["missed_qps"]
        assert r["goodput_qps"] == lo and lo < hi <= lo * 1.1 + 1e-9
        base = baselines(sc.with_(slo_ttft_ms=(200,), slo_tpot_ms=(30,)))[name].with_(arrival_window_s=b["window_s"])
        below = ppd_core.run(base.with_(qps=lo)).summary["slo_joint"]["attainment"]
        above = ppd_core.run(base.with_(qps=hi)).summary["slo_joint"]["attainment"]
        assert below >= 0.9 > above, (name, lo, below, hi, above)
        assert r["goodput_qps_per_gpu"] == pytest.approx(lo / 2)
        assert r["goodput_qps_per_usd_hour"] == pytest.approx(lo / (2 * 3.78))
    assert res["systems"]["PPD"]["goodput_qps"] > 0


def test_warm_started_goodput_matches_the_cold_search_within_two_tolerances():
    """A search started from a previous answer (the dashboard passes it when a slider moves) ends on a
    bracket of the same width as a cold search; where the attainment falls through the target once, the two
    brackets hold the same crossing, so the goodputs agree within 2 x rel_tol. From the unchanged answer
    itself the search is settled in one round of two runs per system. Here the SLOs are loose enough to hold
    until 1P_1D saturates (over a 100 s window, PPD near 6.7 and PD near 7 conv/s), where attainment falls
    from ~1 to below 0.8 within 5 % of load. With tight ones (200 ms / 30 ms on 2P_2D) PD's attainment
    hovers at 0.89-0.92 from 3 to 4.6 conv/s: every point of that plateau is a crossing, and a warm start
    may rightly end on another one."""
    from ppd_core.analysis.goodput import goodput
    sc = Scenario(layout="1P_1D", conversations=100, qps=1, workload="sharegpt")
    kw = dict(slo_ttft_ms=1000, slo_tpot_ms=60, rel_tol=0.05, systems=("PPD", "PD"), cache=False)
    cold = goodput(sc, 0.9, **kw)
    for name in kw["systems"]:
        assert cold["systems"][name]["goodput_qps"] > 0, name
    same = goodput(sc, 0.9, hint=cold, **kw)
    for name, r in same["systems"].items():
        assert r["goodput_qps"] == cold["systems"][name]["goodput_qps"] and r["runs"] <= 2, (name, r)
    for off in (0.8, 1.25):                     # a previous answer 20-25 % off, as after a slider move
        warm = goodput(sc, 0.9, hint={n: r["goodput_qps"] * off for n, r in cold["systems"].items()}, **kw)
        for name, r in warm["systems"].items():
            c = cold["systems"][name]["goodput_qps"]
            assert abs(r["goodput_qps"] - c) <= 2 * 0.05 * c, (name, off, r["goodput_qps"], c)
            b = warm["brackets"][name]
            assert b["missed_qps"] <= b["attained_qps"] * 1.05 + 1e-9, (name, b)


def test_goodput_hint_and_inputs_are_checked():
    from ppd_core.analysis.goodput import goodput
    sc = Scenario(layout="1P_1pD", conversations=30)
    for bad in ({"PPD": float("nan")}, {"PPD": -1.0}, {"PPD": float("inf")}, "4"):
        with pytest.raises(ppd_core.ScenarioError, match="hint"):
            goodput(sc, hint=bad, cache=False)
    for kw in ({"rel_tol": 0.0}, {"rel_tol": float("nan")}, {"max_runs": 1}, {"attain": 0.0}):
        with pytest.raises(ppd_core.ScenarioError):
            goodput(sc, **kw, cache=False)


def test_gpu_price_key_overrides_the_catalog():
    assert Scenario().price_usd_h == pytest.approx(3.78)
    assert Scenario(gpu_price_usd_h=2.0).price_usd_h == 2.0
    with pytest.raises(ppd_core.ScenarioError, match="gpu_price_usd_h"):
        Scenario(gpu_price_usd_h=-1)


def test_weights_cannot_act_without_d_nodes_or_under_a_static_policy():
    from ppd_core.analysis.weights import policy_can_act
    assert policy_can_act(Scenario(layout="2P_2pD"))[0] is False
    assert "no D node" in policy_can_act(Scenario(layout="4R"))[1]
    assert policy_can_act(Scenario(layout="2P_2D", policy="pd"))[0] is False
    assert policy_can_act(Scenario(layout="2P_2D"))[0] is True
    # and indeed: on 2P_2pD the weights change nothing
    a = _run(layout="2P_2pD", conversations=40, w_tpot=0.0).summary
    b = _run(layout="2P_2pD", conversations=40, w_tpot=100.0).summary
    assert a["groups"] == b["groups"]


def test_computed_w_tpot_range_is_where_the_decision_changes():
    """The switch points w_ttft*dTTFT/dTPOT of a run bound the w_tpot interval over which the local share
    falls: below it nearly everything stays local, above it nearly nothing does."""
    from ppd_core.analysis.weights import moved, w_tpot_range, weights_summary
    base = Scenario(layout="1P_3D", qps=8, conversations=80, workload="small_huge_paste")
    lo, hi = w_tpot_range(ppd_core.run(base).records)
    assert 0 < lo < hi
    below = ppd_core.run(base.with_(w_tpot=lo / 2)).records
    above = ppd_core.run(base.with_(w_tpot=min(hi * 2, 100.0))).records
    assert weights_summary(below)["local_share"] >= 0.9
    assert weights_summary(above)["local_share"] <= 0.2
    assert moved(below, 1.0, lo / 2) == 0 and moved(below, 1.0, hi * 2) > 0


def test_step_inflation_is_what_prefills_beside_the_decodes_add():
    """Eq.1's TPOT is D's decode-only step times the node's step inflation: the time of its iterations that
    carried decodes over what decode-only steps of the same batches take. Under PD, D's only prefills are
    the 1-token first-token steps, so it stays ~1; served locally, Turn 2+ append-prefills run beside the
    decodes and it grows (by ~2 % here: most appends are a few dozen tokens); a P node, which never decodes,
    reports 1."""
    from ppd_core.sim.view import NodeView
    from helpers import check_invariants, simulate_checked
    infl = {}
    for policy in ("pd", "ppd"):
        sc = Scenario(layout="2P_2D", workload="sharegpt", qps=6.0, conversations=150, policy=policy)
        res, sim = simulate_checked(sc)
        check_invariants(res, sc, sim=sim)
        views = {n.role: NodeView(n) for n in sim.nodes}
        assert views["P"].step_inflation() == 1.0
        infl[policy] = views["D"].step_inflation()
    assert 1.0 <= infl["pd"] < 1.02, infl
    assert infl["ppd"] > infl["pd"] + 0.005, infl


@pytest.mark.parametrize("qps", [2.0, 6.0])
def test_eq1_dtpot_tracks_the_realised_class_effect(qps):
    """dTPOT is the paper's cell measure, (TPOT_ppd - TPOT_pd) / TPOT_pd of Turn 2+: the mean estimate logged
    under policy=ppd lies within [0.75, 1.25]x of what serving the class locally actually costs, below
    saturation (the earlier 'mean over the remaining decode' estimate was ~30x too small; without the batch
    feedback term it is ~0.65x). Both sides are means over three seeds: one seed's realised effect is a
    difference of two noisy means (at QPS 6 one seed's ratio ranges 1.12-1.23 over seeds 42-44)."""
    ests, realised = [], []
    for seed in (42, 43, 44):
        sc = Scenario(layout="2P_2D", workload="sharegpt", qps=qps, seed=seed)
        ppd, pd = (ppd_core.run(sc.with_(policy=p)) for p in ("ppd", "pd"))
        t_ppd, t_pd = (r.summary["groups"]["turn2plus"]["tpot_ms"]["mean"] for r in (ppd, pd))
        realised.append((t_ppd - t_pd) / t_pd)
        df = ppd.records
        ests.append(float(df[(df.turn >= 2) & df.est_dtpot.notna()].est_dtpot.mean()))
    est, real = float(np.mean(ests)), float(np.mean(realised))
    assert real > 0.005, realised
    assert 0.75 <= est / real <= 1.25, (ests, realised)


def test_w_tpot_moves_the_local_share_across_the_slider_on_2p_2d_sharegpt():
    """Issue #11's done-when, at the dashboard's ShareGPT load on 2P_2D: w_tpot in [0, 100] moves the local
    share from >= 0.9 to far below it (the switch points fall inside the slider)."""
    from ppd_core.analysis.weights import w_tpot_range
    sc = Scenario(layout="2P_2D", workload="sharegpt", qps=6.0)
    low = ppd_core.run(sc.with_(w_tpot=1.0))
    high = ppd_core.run(sc.with_(w_tpot=100.0))
    assert low.summary["local_share"] >= 0.9
    assert high.summary["local_share"] <= 0.2
    lo, hi = w_tpot_range(low.records)
    assert 0 < lo < 100 and lo < hi


def test_w_tpot_takes_the_local_share_from_above_nine_tenths_to_below_one_tenth_on_2p_2d_sharegpt():
    """Issue #11's done-when as stated: on 2P_2D at a ShareGPT load the saturation report calls steady
    (QPS 8, both ends), w_tpot 1 keeps >= 0.9 of Turn 2+ local and w_tpot 100 <= 0.1, as the mean over three
    seeds. What stays local at 100 is mostly appends whose estimated dTPOT is <= 0 (receiving their KV would
    pause D longer than the append-prefill does), which no weight should move."""
    shares = {}
    for w in (1.0, 100.0):
        vals = []
        for seed in (42, 43, 44):
            r = ppd_core.run(Scenario(layout="2P_2D", workload="sharegpt", qps=8.0, seed=seed, w_tpot=w))
            assert not r.summary["saturation"]["saturated"], (w, seed, r.summary["saturation"]["evidence"])
            vals.append(r.summary["local_share"])
        shares[w] = float(np.mean(vals))
    assert shares[1.0] >= 0.9, shares
    assert shares[100.0] <= 0.1, shares
