"""Behaviour of the event engine: invariants over a spread of scenarios, closed-form cases (one request on an
idle replica, KV transfers on the fabric), the analytic decode segments against the step-by-step oracle, and
determinism (repeat runs and runs interleaved in threads)."""
from __future__ import annotations

import dataclasses
import heapq
import importlib.util
import json
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

import ppd_core
from ppd_core import Scenario
from ppd_core import model as perf
from ppd_core.sim.events import EventKind
from ppd_core.sim.fabric import Fabric
from ppd_core.sim.request import LOCAL, OK, PD, REJECTED, REPLICA, TIMEOUT

from helpers import check_drained, check_invariants, drain, simulate_checked, strip_wall

HAS_TABLE = importlib.util.find_spec("ppd_core.analysis.table") is not None

# name -> (scenario keys, what the run must exhibit). Small conversation counts keep the file fast.
SCENARIOS = {
    "4R-replica": (dict(layout="4R", conversations=40, qps=8), {"all_ok"}),
    "2P_2D-pd-small": (dict(layout="2P_2D", policy="pd", workload="small_mid_bal", conversations=40, qps=8),
                       {"all_ok", "transfers"}),
    "2P_2D-ppd-large": (dict(layout="2P_2D", policy="ppd", workload="large_big_paste", conversations=30, qps=6),
                        {"all_ok", "transfers"}),
    "2P_2pD-wildchat-think": (dict(layout="2P_2pD", policy="pd", workload="wildchat", conversations=40,
                                   think_time_s=0.5), {"all_ok"}),
    "1P_2D_1pD-dynamic-rehash": (dict(layout="1P_2D_1pD", policy="dynamic", conversations=40, qps=8,
                                      rehash_frac=0.3), {"all_ok"}),
    "1R_1P_1D_1pD-dynamic": (dict(layout="1R_1P_1D_1pD", conversations=40, qps=8), {"all_ok"}),
    # the paper's offline table (built once per cluster from synthetic runs, then cached on disk)
    "2P_2D-dynamic-table": (dict(layout="2P_2D", policy="dynamic-table", conversations=30, qps=8), {"all_ok"}),
    "4P_12pD-open-loop": (dict(layout="4P_12pD", qps=20, conversations=80, client_concurrency=0), {"all_ok"}),
    "tp2-Qwen14B": (dict(layout="2P_2D", model="Qwen2.5-14B", tp="2", conversations=30, qps=8), {"all_ok"}),
    "arrival-window": (dict(layout="3P_1D", policy="ppd", qps=6, arrival_window_s=5), {"all_ok"}),
    "turns3-cc5-think": (dict(layout="2P_2pD", workload="small_short_gen", turns=3, conversations=30,
                              client="benchmark", client_concurrency=5, think_time_s=1.0), {"all_ok"}),
    # 0.1 GB/s: 270-400 MB transfers queue on the links for seconds each, requests time out behind them
    "lowbw-fair-timeouts": (dict(layout="2P_2D", policy="pd", bandwidth_gbps=0.1, workload="large_huge_paste",
                                 conversations=30, qps=8, timeout_s=60), {"timeout", "transfers"}),
    "lowbw-independent": (dict(layout="2P_2D", policy="pd", bandwidth_gbps=0.5, link_sharing="independent",
                               workload="large_huge_paste", conversations=30, qps=8), {"all_ok", "transfers"}),
    # ~7.5k KV tokens per node: P's queue waits for memory that KV transfers free (the stratified ShareGPT
    # draw always holds its longest conversations, which need more than 0.235's ~5.6k)
    "tight-kv": (dict(layout="1P_2D_1pD", gpu_mem_util=0.238, conversations=40, qps=8), {"all_ok"}),
    # a bigger model squeezed into ~10k KV tokens
    "tight-kv-Qwen14B": (dict(layout="2P_2pD", model="Qwen2.5-14B", gpu_mem_util=0.42, conversations=40, qps=8),
                         {"all_ok"}),
    # ~3.8k KV tokens: the longest conversations cannot fit and are rejected
    "tiny-kv-rejections": (dict(layout="1P_2D_1pD", gpu_mem_util=0.232, conversations=40, qps=8), {"rejected"}),
    # D refuses Turn 2+ whose prompt + output cannot fit (P could hold the prompt): P's queue must move on
    "reject-on-D-frees-P": (dict(layout="1P_1D", policy="ppd", conversations=25, qps=30, gpu_mem_util=0.231,
                                 client_concurrency=0, rehash_frac=0.3, seed=644), {"rejected", "no_timeout"}),
    # a PD request prefilled on P times out while queued on a full D
    "tiny-kv-ppd-timeout": (dict(layout="2P_2D", policy="ppd", workload="large_very_long_gen", conversations=23,
                                 qps=30, gpu_mem_util=0.232, seed=173, timeout_s=60), {"timeout"}),
    # Turn 1s time out while waiting for a client connection slot (never sent)
    "short-timeout-cc1": (dict(layout="2P_2D", conversations=14, qps=30, client="benchmark", client_concurrency=1, timeout_s=10,
                               seed=3), {"timeout", "unsent"}),
    "short-timeout-cc5": (dict(layout="2P_2pD", conversations=40, qps=30, timeout_s=2, client="benchmark", client_concurrency=5),
                          {"timeout"}),
}


def _scenario(name: str) -> Scenario:
    kw, _ = SCENARIOS[name]
    if kw.get("policy") == "dynamic-table" and not HAS_TABLE:
        pytest.skip("ppd_core.analysis.table (policy=dynamic-table) is not available")
    return Scenario(**kw)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_invariants(name):
    sc = _scenario(name)
    expect = SCENARIOS[name][1]
    res = ppd_core.run(sc)
    df = check_invariants(res)

    # the same run with the engine exposed, node memory checked after every change and the client cap checked
    res2, sim = simulate_checked(sc)
    assert res2.records.equals(res.records)
    assert strip_wall(res2.summary) == strip_wall(res.summary)
    check_invariants(res2, sc, sim=sim)
    check_invariants(sim)
    assert sim.capacity_checks > len(df)
    if sc.client_concurrency:
        assert sim.max_in_flight <= sc.client_concurrency

    status = df["status"]
    if "all_ok" in expect:
        assert (status == OK).all(), status.value_counts().to_dict()
        for n in sim.nodes:   # nothing in flight when the last conversation ended
            assert n.used == 0, f"{n.name} reserves {n.used} KV tokens after the run"
    if "timeout" in expect:
        assert (status == TIMEOUT).any()
    if "no_timeout" in expect:
        assert not (status == TIMEOUT).any(), status.value_counts().to_dict()
    if "rejected" in expect:
        assert (status == REJECTED).any()
    if "unsent" in expect:
        assert (df["path"] == "none").any()
    if "transfers" in expect:
        assert res.summary["kv"]["transfers"] > 0

    # let the aborted requests' leftover work finish: every KV reservation must then be released
    drain(sim)
    check_drained(sim)


# ---- path rules --------------------------------------------------------------------------------------------
def test_policy_pd_on_d_only_layout_never_serves_locally():
    res = ppd_core.run(Scenario(layout="2P_2D", policy="pd", conversations=40, qps=8))
    df = check_invariants(res)
    assert res.summary["local_share"] == 0
    assert (df["path"] == PD).all()
    assert res.summary["kv"]["transfers"] == len(df)


def test_policy_ppd_serves_every_later_turn_locally():
    res = ppd_core.run(Scenario(layout="2P_2D", policy="ppd", conversations=40, qps=8))
    df = check_invariants(res)
    assert res.summary["local_share"] == 1
    later = df[df["turn"] >= 2]
    assert len(later) and (later["path"] == LOCAL).all() and (later["kv_bytes"] == 0).all()
    assert (df.loc[df["turn"] == 1, "path"] == PD).all()


def test_pd_nodes_ignore_policy_and_replicas_never_transfer():
    res = ppd_core.run(Scenario(layout="2P_2pD", policy="pd", conversations=40, qps=8))
    check_invariants(res)
    assert res.summary["local_share"] == 1
    rep = ppd_core.run(Scenario(layout="4R", conversations=40, qps=8))
    df = check_invariants(rep)
    assert (df["path"] == REPLICA).all() and (df["prefill_node"] == "").all()
    assert rep.summary["kv"] == {"bytes": 0, "transfers": 0, "link_utilization": 0.0}


def test_rehash_sends_a_share_of_later_turns_through_p():
    sc = Scenario(layout="2P_2pD", conversations=150, qps=8, rehash_frac=0.3)
    df = check_invariants(ppd_core.run(sc))
    later = df[df["turn"] >= 2]
    share = float((later["path"] == PD).mean())
    n = len(later)
    sd = math.sqrt(0.3 * 0.7 / n)
    assert abs(share - 0.3) < 5 * sd, (share, n)
    # without rehashing, Turn 2+ on pD never goes through P
    res = ppd_core.run(sc.with_(rehash_frac=0.0))
    check_invariants(res)
    assert res.summary["local_share"] == 1


# ---- closed form: one request on an idle replica -------------------------------------------------------------
@pytest.mark.parametrize("workload", ["small_mid_bal", "large_tiny", "sharegpt"])
@pytest.mark.parametrize("exact", [False, True])
def test_single_request_on_idle_replica(workload, exact):
    sc = Scenario(layout="1R", workload=workload, turns=1, conversations=1, client_concurrency=0)
    res = ppd_core.run(sc, exact=exact)
    df = check_invariants(res)
    assert len(df) == 1
    r = df.iloc[0]
    prompt, out = int(r["prompt_tokens"]), int(r["output_tokens"])
    assert out > 2
    pm = perf.for_scenario(sc)
    ttft = pm.hop(prompt) + pm.iteration([(prompt, 0, True)], 0, 0)
    a, b = pm.decode_coeffs(1)
    # after the prefill emits token 1, decode step i (0-based) reads the prompt, token 1 and i more tokens
    decode = math.fsum(a + b * (prompt + 1 + i) for i in range(out - 1))
    assert r["status"] == OK and r["path"] == REPLICA
    assert math.isclose(r["first_token_s"] - r["arrival_s"], ttft, rel_tol=1e-9)
    assert math.isclose(r["finish_s"] - r["first_token_s"], decode, rel_tol=1e-9)
    assert math.isclose(r["ttft_ms"], ttft * 1e3, rel_tol=1e-9)
    assert math.isclose(r["tpot_ms"], decode * 1e3 / (out - 1), rel_tol=1e-9)


def test_second_turn_reuses_prefix_cache_on_replica():
    """Turn 2 on the same idle replica: only the new tokens past the cached whole blocks are prefilled
    (the cache holds Turn 1's prompt and the share of its answer that re-tokenises the same)."""
    sc = Scenario(layout="1R", workload="small_mid_bal", turns=2, conversations=1, client_concurrency=0,
                  think_time_s=1.5)
    df = check_invariants(ppd_core.run(sc))
    t1, t2 = df.iloc[0], df.iloc[1]
    pm = perf.for_scenario(sc)
    cached = ((128 + int(pm.retok(sc.workload) * 128)) // 16) * 16
    prompt = 128 + 128 + 128
    assert t2["prompt_tokens"] == prompt and t2["cached_tokens"] == cached and t2["prefill_tokens"] == prompt - cached
    assert math.isclose(t2["arrival_s"], t1["finish_s"] + 1.5, rel_tol=1e-12)
    ttft = pm.hop(prompt) + pm.iteration([(prompt - cached, cached, False)], 0, 0)
    a, b = pm.decode_coeffs(1)
    decode = math.fsum(a + b * (prompt + 1 + i) for i in range(128 - 1))
    assert math.isclose(t2["first_token_s"] - t2["arrival_s"], ttft, rel_tol=1e-9)
    assert math.isclose(t2["finish_s"] - t2["first_token_s"], decode, rel_tol=1e-9)


# ---- closed form: the KV fabric ---------------------------------------------------------------------------
class FakeSim:
    """Stands in for the Simulator (the fabric's ``events.Host``): records the fabric's wake-ups and
    completions and replays them in time order."""

    def __init__(self):
        self.heap, self.seq, self.done = [], 0, {}

    def push(self, t, kind, a, b=None):
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, a, b))

    def wake_fabric(self, t, fabric, version):
        self.push(t, EventKind.LINK_WAKE, fabric, version)

    def transfer_done_at(self, t, req, start):
        self.push(t, EventKind.XFER_DONE, req, start)

    def wake_node(self, t, node, version):
        raise AssertionError("the fabric never wakes a node")


START = "start"   # the test's own event: a transfer begins


def run_fabric(transfers, bw=10e9, latency=0.0, fair=True):
    """transfers: (start time, name, src, dst, bytes). Returns ({name: completion time}, fabric)."""
    sim = FakeSim()
    fab = Fabric(sim, bw, latency, fair)
    for start, name, src, dst, nbytes in transfers:
        sim.push(start, START, name, (src, dst, nbytes))
    while sim.heap:
        t, _, kind, a, b = heapq.heappop(sim.heap)
        if kind == START:
            fab.start(a, b[0], b[1], b[2], t)
        elif kind is EventKind.LINK_WAKE:
            fab.wake(t, b)
        elif kind is EventKind.XFER_DONE:
            assert a not in sim.done
            sim.done[a] = t
        else:
            raise AssertionError(f"unexpected event kind {kind}")
    assert len(sim.done) == len(transfers)
    assert not fab.flows
    return sim.done, fab


N = 2e9     # bytes
B = 10e9    # bytes/s


def _close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("fair", [True, False])
@pytest.mark.parametrize("latency", [0.0, 5e-6, 0.25])
def test_single_transfer_takes_bytes_over_bandwidth_plus_latency(fair, latency):
    done, fab = run_fabric([(1.0, "x", 0, 1, N)], B, latency, fair)
    assert _close(done["x"], 1.0 + latency + N / B)
    assert fab.bytes_moved == N and fab.transfers == 1
    assert _close(fab.busy_time, N / B)


@pytest.mark.parametrize("fair,factor", [(True, 2.0), (False, 1.0)])
def test_two_flows_from_one_p(fair, factor):
    done, fab = run_fabric([(0.0, "a", 0, 1, N), (0.0, "b", 0, 2, N)], B, 1e-3, fair)
    assert _close(done["a"], factor * N / B + 1e-3) and _close(done["b"], factor * N / B + 1e-3)
    assert fab.bytes_moved == 2 * N and fab.transfers == 2


@pytest.mark.parametrize("fair,factor", [(True, 2.0), (False, 1.0)])
def test_two_senders_one_receiver(fair, factor):
    done, _ = run_fabric([(0.0, "a", 0, 2, N), (0.0, "b", 1, 2, N)], B, 0.0, fair)
    assert _close(done["a"], factor * N / B) and _close(done["b"], factor * N / B)


def test_disjoint_flows_do_not_share():
    done, _ = run_fabric([(0.0, "a", 0, 2, N), (0.0, "b", 1, 3, N)], B, 0.0, True)
    assert _close(done["a"], N / B) and _close(done["b"], N / B)


def test_max_min_fair_rates():
    """Three senders into one receiver (each B/3) plus sender 0 to a second receiver: max-min gives that
    flow the rest of sender 0's link, 2B/3 (not B/2)."""
    sim = FakeSim()
    fab = Fabric(sim, B, 0.0, True)
    for name, src, dst in (("a", 0, 9), ("b", 1, 9), ("c", 2, 9), ("d", 0, 8)):
        fab.start(name, src, dst, N, 0.0)
    rates = {f.req: f.rate for f in fab.flows}
    for k in "abc":
        assert _close(rates[k], B / 3)
    assert _close(rates["d"], 2 * B / 3)
    # and the completion times that follow
    done, _ = run_fabric([(0.0, "a", 0, 9, N), (0.0, "b", 1, 9, N), (0.0, "c", 2, 9, N), (0.0, "d", 0, 8, N)], B)
    assert _close(done["d"], 1.5 * N / B)
    for k in "abc":
        assert _close(done[k], 3 * N / B)


def test_rates_recomputed_when_flows_end_or_start():
    # unequal sizes from one sender: the short one ends at 2N/B, then the long one gets the whole link
    done, _ = run_fabric([(0.0, "short", 0, 1, N), (0.0, "long", 0, 2, 2 * N)], B)
    assert _close(done["short"], 2 * N / B) and _close(done["long"], 3 * N / B)
    # a late joiner halves the first flow's rate from then on
    done, _ = run_fabric([(0.0, "first", 0, 1, 2 * N), (N / B, "late", 0, 2, N)], B)
    assert _close(done["first"], 3 * N / B) and _close(done["late"], 3 * N / B)


def test_engine_transfer_bytes_and_timing_on_an_idle_pd_pair():
    """One PD request on 1P_1D: KV bytes = prompt x KV bytes/token and its transfer lasts bytes/bandwidth +
    latency (tp links in parallel)."""
    sc = Scenario(layout="1P_1D", workload="large_tiny", turns=1, conversations=1, client_concurrency=0,
                  bandwidth_gbps=2.0, link_latency_us=300.0, model="Qwen2.5-14B", tp="2")
    res, sim = simulate_checked(sc)
    df = check_invariants(res, sc, sim=sim)
    req = sim.requests[0]
    pm = perf.for_scenario(sc)
    assert req.kv_bytes == 1024 * pm.kv_bytes_per_token == df["kv_bytes"].iloc[0] == sim.fabric.bytes_moved
    xfer = 300e-6 + req.kv_bytes / (2.0e9 * 2)
    # D is idle and empty: it reserves the KV when P's prefill ends, the proxy hands the request over, and
    # the transfer runs inside D's next step (in series, as the measured connector does)
    handoff = pm.pd_handoff(req.prompt, 0)
    assert math.isclose(req.transfer_done_at - req.prefill_done_at, handoff + xfer, rel_tol=1e-9)
    assert res.summary["kv"]["transfers"] == 1


# ---- analytic decode segments == the step-by-step oracle ------------------------------------------------------
EXACT_CASES = {
    "2P_2pD-loaded": dict(layout="2P_2pD", conversations=40, qps=8),
    "1P_2D_1pD-dynamic-wildchat": dict(layout="1P_2D_1pD", policy="dynamic", conversations=40, qps=8,
                                       workload="wildchat"),
    "2P_2D-pd-slow-link": dict(layout="2P_2D", policy="pd", conversations=30, qps=10, bandwidth_gbps=1,
                               workload="large_mid_paste"),
    "4R": dict(layout="4R", conversations=40, qps=10),
    "hybrid-tight-kv": dict(layout="1R_1P_1D_1pD", conversations=40, qps=8, gpu_mem_util=0.25, timeout_s=20),
    "dynamic-rehash-independent": dict(layout="2P_2D", policy="dynamic", conversations=30, qps=10,
                                       rehash_frac=0.3, link_sharing="independent", bandwidth_gbps=2),
    "timeouts-cc5": dict(layout="2P_2pD", conversations=40, qps=10, timeout_s=3, client="benchmark", client_concurrency=5),
}


@pytest.mark.parametrize("name", list(EXACT_CASES))
def test_analytic_decode_equals_step_by_step(name):
    sc = Scenario(**EXACT_CASES[name])
    fast = ppd_core.run(sc)
    slow = ppd_core.run(sc, exact=True)
    check_invariants(fast)
    check_invariants(slow)
    a, b = fast.records, slow.records
    assert len(a) == len(b)
    for col in ("conversation", "turn", "path", "prefill_node", "decode_node", "status", "cached_tokens",
                "prefill_tokens", "kv_bytes"):
        assert a[col].tolist() == b[col].tolist(), col
    for col in ("arrival_s", "first_token_s", "finish_s", "ttft_ms", "tpot_ms", "e2e_ms"):
        np.testing.assert_allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-6, atol=0, equal_nan=True,
                                   err_msg=col)
    assert slow.summary["sim"]["events"] > fast.summary["sim"]["events"]


# ---- determinism --------------------------------------------------------------------------------------------
DET_A = Scenario(layout="1P_2D_1pD", conversations=60, qps=8, rehash_frac=0.2, think_time_s=0.3)
DET_B = Scenario(layout="2P_2D", policy="dynamic", workload="wildchat", conversations=60, qps=10,
                 bandwidth_gbps=5, timeout_s=8, client="benchmark", client_concurrency=10)


def _fingerprint(res):
    return strip_wall(res.summary), res.records.to_csv(index=False).encode()


def test_same_scenario_twice_is_identical():
    for sc in (DET_A, DET_B):
        r1, r2 = ppd_core.run(sc), ppd_core.run(sc)
        check_invariants(r1)
        assert r1.records.equals(r2.records)
        assert _fingerprint(r1) == _fingerprint(r2)
        s = json.loads(json.dumps(r1.summary))
        assert set(s["sim"]) == {"events", "simulated_s", "wall_s"}
    # and a different seed really changes the run
    other = ppd_core.run(DET_A.with_(seed=7))
    check_invariants(other)
    assert not other.records.equals(ppd_core.run(DET_A).records)


def test_runs_interleaved_in_threads_match_runs_alone():
    alone = {sc: _fingerprint(ppd_core.run(sc)) for sc in (DET_A, DET_B)}
    order = [DET_A, DET_B, DET_B, DET_A, DET_A, DET_B]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda sc: (sc, _fingerprint(ppd_core.run(sc))), order))
    for sc, fp in results:
        assert fp == alone[sc]
    assert alone[DET_A] != alone[DET_B]


# ---- the invariant checker itself catches broken runs ----------------------------------------------------------
def _tamper(kind, df, summary):
    ok_pd = df.index[(df["status"] == OK) & (df["path"] == PD)]
    t2 = df.index[df["turn"] == 2]
    if kind == "unfinished":
        df.loc[df.index[0], "status"] = "unfinished"
    elif kind == "duplicate":
        df = pd.concat([df, df.iloc[[3]]]).sort_values(["conversation", "turn"], kind="stable").reset_index(drop=True)
    elif kind == "missing-turn":
        df = df.drop(index=t2[0]).reset_index(drop=True)
    elif kind == "kv-bytes":
        df.loc[ok_pd[0], "kv_bytes"] += 1
        summary["kv"]["bytes"] += 1
    elif kind == "summary-kv":
        summary["kv"]["bytes"] += 1
    elif kind == "turn1-local":
        i = df.index[df["turn"] == 1][0]
        df.loc[i, "path"] = LOCAL
        df.loc[i, "prefill_node"] = ""
        df.loc[i, "kv_bytes"] = 0
    elif kind == "early-turn2":
        df.loc[t2[0], "arrival_s"] -= 0.01
    elif kind == "ttft-before-arrival":
        i = df.index[df["status"] == OK][0]
        df.loc[i, "first_token_s"] = df.loc[i, "arrival_s"] - 1e-3
    elif kind == "sent-after-failure":
        df.loc[df.index[df["turn"] == 1][0], "status"] = TIMEOUT
    return df, summary


@pytest.mark.parametrize("kind", ["unfinished", "duplicate", "missing-turn", "kv-bytes", "summary-kv", "turn1-local",
                                  "early-turn2", "ttft-before-arrival", "sent-after-failure"])
def test_check_invariants_rejects_broken_runs(kind):
    res = ppd_core.run(Scenario(layout="1P_2D_1pD", policy="pd", workload="small_mid_bal", turns=3,
                                conversations=6, think_time_s=0.2))
    check_invariants(res)
    df, summary = _tamper(kind, res.records.copy(), json.loads(json.dumps(res.summary)))
    with pytest.raises(AssertionError):
        check_invariants(dataclasses.replace(res, records=df, summary=summary))


# ---- speed work (issue #13) that must not move a number ------------------------------------------------------
def test_summary_percentiles_and_medians_equal_numpys():
    """The summary's own percentile / median (no numpy.ma import) give numpy's floats bit for bit."""
    from ppd_core.metrics.report import percentiles
    from ppd_core.metrics.saturation import median
    rng = np.random.default_rng(13)
    for trial in range(600):
        n = int(rng.integers(1, 40)) if trial % 5 else int(rng.integers(40, 3000))
        v = rng.lognormal(3, 1.5, n) if trial % 2 else rng.integers(0, 4, n) * 0.1   # ties too
        qs = (10, 50, 90, 99) if trial % 3 else tuple(int(q) for q in rng.integers(0, 101, 4))
        assert percentiles(v, qs) == [float(x) for x in np.percentile(v, qs)], (trial, n, qs)
        assert median(v) == float(np.median(v)), (trial, n)
    assert math.isnan(median(np.array([1.0, math.nan, 2.0])))


def test_summary_means_shares_and_groups_equal_numpys():
    """The summary's mean / share / Groups (no np.mean dispatch, one grouping for several reductions) give
    numpy's and the sorting group reduction's floats bit for bit, around numpy's pairwise-sum block sizes."""
    from ppd_core.metrics.columns import Groups, mean, share
    rng = np.random.default_rng(17)
    for n in (1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 256, 1000, 4097, 100_003):
        for v in (rng.lognormal(3, 2, n), rng.normal(0, 1e6, n), rng.integers(-50, 50, n),
                  rng.random(n) < 0.3):
            assert mean(v) == float(np.mean(v)), (n, v.dtype)
            if v.dtype == bool:
                assert share(v) == float(v.mean()), n
        keys = rng.integers(0, max(1, n // 3), n)
        for k in (keys, np.sort(keys)):                      # shuffled keys sort; ordered keys skip the sort
            order = np.argsort(k, kind="stable")
            starts = np.flatnonzero(np.concatenate(([True], k[order][1:] != k[order][:-1])))
            vals = rng.lognormal(0, 1, n)
            g = Groups(k)
            for uf in (np.maximum, np.minimum, np.add):
                assert np.array_equal(g.reduce(vals, uf), uf.reduceat(vals[order], starts)), (n, uf)
    assert Groups(np.array([], dtype=np.int64)).reduce(np.array([]), np.add).size == 0


def test_decode_block_bound_is_an_upper_bound_exact_at_the_cached_step():
    from ppd_core.sim.memory import DecodeBlocks
    rng = np.random.default_rng(5)
    for _ in range(200):
        db = DecodeBlocks()
        for c in rng.integers(0, 4000, int(rng.integers(1, 30))):
            db.add(int(c))
        for s in rng.integers(0, 2000, 30):
            s = int(s)
            assert db.bound(s) >= db.at_direct(s)
            db.at(s)
            assert db.bound(s) == db.at_direct(s) == db.at(s)


def test_timeouts_fire_on_time_when_they_are_queued_out_of_order():
    """Timeouts wait in a FIFO beside the heap; with think times (a later turn's deadline can precede an
    earlier arrival's) some go to the heap. Either way each fires exactly timeout_s after its request left."""
    sc = Scenario(layout="1P_3D", policy="pd", conversations=50, qps=40, timeout_s=2, think_time_s=0.7)
    res, sim = simulate_checked(sc)
    timed_out = [r for r in sim.requests if r.status == TIMEOUT]
    assert len(timed_out) >= 5
    assert all(r.finish == r.sent + sc.timeout_s for r in timed_out)
    assert all(r.finish >= 0 for r in sim.requests if r.status != "unfinished")
    check_invariants(res, sc)


def test_bench_run_events_per_request_no_higher_than_before():
    """Issue #13: the ShareGPT bench run on 2P_2D takes <= 9.5 events per request (21,021 for 2,221)."""
    res = ppd_core.run(Scenario(layout="2P_2D", policy="pd"))
    events, requests = res.summary["sim"]["events"], res.summary["groups"]["all"]["count"]
    assert requests > 2000 and events / requests <= 9.5
