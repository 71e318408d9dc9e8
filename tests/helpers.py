"""Shared test helpers: run a scenario with a checked engine and assert the simulator's invariants.

``check_invariants(result_or_sim, scenario=None, *, sim=None, convs=None)`` accepts either a ``RunResult``
(from ``ppd_core.run``) or a finished ``Simulator`` (from ``ppd_core.engine.simulate`` or
``simulate_checked``); pass ``sim=`` alongside a ``RunResult`` to add the engine-level checks (KV fabric
counters, node memory after the run). It returns the records ``DataFrame`` it checked.

``simulate_checked(sc, ...)`` mirrors ``ppd_core.api.run`` step by step but swaps every node to
``CheckedNode``, which asserts after each admission / iteration start / cache insert that the node never
holds more KV than its capacity. It does not patch anything global (thread-safe); it returns
``(RunResult, Simulator)``. The simulator is a ``CheckedSimulator``, which also asserts the client's
concurrency cap. Call ``drain(sim)`` afterwards to let the in-flight work of aborted requests
finish (the engine stops as soon as the last conversation ends) before checking that memory is released.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np
import pandas as pd

from ppd_core import metrics
from ppd_core import model as perf
from ppd_core import workloads as wl
from ppd_core.metrics import RunResult
from ppd_core.sim.engine import Simulator
from ppd_core.sim.node import BLOCK, Node
from ppd_core.sim.request import LOCAL, OK, PD, REJECTED, REPLICA, TIMEOUT

FINAL_STATUSES = {OK, TIMEOUT, REJECTED}
PATHS = {PD, LOCAL, REPLICA}
REL = 1e-9


# ---- a node that checks its memory after every state change ---------------------------------------------
class CapacityViolation(AssertionError):
    pass


class CheckedNode(Node):
    """Same layout as ``Node`` (empty ``__slots__``), so live nodes can be switched with ``__class__``.
    The engine calls ``Node.wake`` directly, but every memory change goes through the methods below."""
    __slots__ = ()

    def _check(self, where: str) -> None:
        if where in ("release", "cache_put"):
            # inside a wake the batch's next-step blocks are not allocated yet (that is the next scheduling
            # point's job, which may preempt): check what holds at every instant only
            if self.used < 0 or self.used != sum(self.alloc.values()) or \
                    self.kv.blocks != sum(self.kv.entries.values()):
                raise CapacityViolation(f"{self.name} after {where}: used {self.used}, cached {self.kv.blocks}")
            return
        self._check_blocks(where)

    def _check_blocks(self, where: str) -> None:
        """Blocks are conserved: free + used + cached == capacity with none negative, ``used`` is the sum of
        the per-request allocations, and the decode batch's closed form equals the per-decoder sum."""
        sim = self.sim
        sim.capacity_checks = getattr(sim, "capacity_checks", 0) + 1
        used, cached = self.used_blocks(), self.kv.blocks
        if self.used < 0 or cached < 0 or min(self.kv.entries.values(), default=1) <= 0:
            raise CapacityViolation(f"{self.name} after {where} at t={sim.now}: used={self.used} cached={cached}")
        if self.free_blocks() + used + cached != self.cap_blocks or self.free_blocks() < 0:
            raise CapacityViolation(f"{self.name} after {where} at t={sim.now}: used {used} + cache "
                                    f"{cached} > capacity {self.cap_blocks} blocks")
        if cached != sum(self.kv.entries.values()):
            raise CapacityViolation(f"{self.name} after {where}: cached {cached} != "
                                    f"sum of entries {sum(self.kv.entries.values())}")
        if self.used != sum(self.alloc.values()):
            raise CapacityViolation(f"{self.name} after {where}: used {self.used} != allocations")
        per_decoder = sum(-(-(e[2].base + self.steps) // BLOCK) for e in self.dec_heap)
        if self.seg is None and self.dec_blocks.at(self.steps) != per_decoder:
            raise CapacityViolation(f"{self.name} after {where}: decode blocks {self.dec_blocks.at(self.steps)} "
                                    f"!= per-decoder sum {per_decoder}")

    def try_admit(self, now):
        super().try_admit(now)
        self._check("try_admit")

    def start_iteration(self, now):
        super().start_iteration(now)
        self._check("start_iteration")

    def cache_put(self, conv, tokens):
        super().cache_put(conv, tokens)
        self._check("cache_put")

    def release(self, req):
        super().release(req)
        self._check("release")


class CheckedSimulator(Simulator):
    """Asserts the closed-loop client cap: at most ``client_concurrency`` conversations in flight (from
    their Turn 1 leaving the client queue to their end). The cap binds only the benchmark client; the open
    client (production-like traffic) has none."""

    def _send(self, req, t):
        live = self.__dict__.setdefault("in_flight", set())
        if req.turn == 1:
            live.add(req.conv)
        cap = self.sc.client_concurrency if self.sc.client == "benchmark" else 0
        self.max_in_flight = max(getattr(self, "max_in_flight", 0), len(live))
        if cap and len(live) > cap:
            raise AssertionError(f"t={t}: {len(live)} conversations in flight > client_concurrency {cap}")
        super()._send(req, t)

    def _end_conversation(self, conv, t, *args, **kwargs):
        self.__dict__.setdefault("in_flight", set()).discard(conv)
        super()._end_conversation(conv, t, *args, **kwargs)


def conversations_for(sc, trace=None):
    rngs = wl.streams(sc.seed)
    return wl.generate(sc, rngs["arrivals"], rngs["lengths"], trace)


def simulate_checked(sc, *, trace=None, exact=False, params=None, record_spans=False, check_capacity=True):
    """``ppd_core.run`` with the engine exposed: returns ``(RunResult, Simulator)``."""
    from time import perf_counter
    pm = perf.for_scenario(sc, params)
    rngs = wl.streams(sc.seed)
    convs = wl.generate(sc, rngs["arrivals"], rngs["lengths"], trace)
    table = None
    if sc.policy == "dynamic-table":
        from ppd_core.analysis.table import table_for
        table = table_for(sc, params)
    sim = CheckedSimulator(sc, convs, pm, rngs, record_spans=record_spans, exact=exact, table=table)
    if check_capacity:
        for n in sim.nodes:
            n.__class__ = CheckedNode
    sim.capacity_checks = 0
    t0 = perf_counter()
    sim.run()
    sim.wall_s = perf_counter() - t0
    df = metrics.records(sim)
    return RunResult(sc, metrics.summary(sim, df), df, metrics.node_table(sim), metrics.spans(sim)), sim


def drain(sim) -> None:
    """Process the events left when the run stopped (the engine ends once every conversation has ended,
    possibly with aborted requests still holding KV). Arrivals are not re-pushed (no conversations)."""
    convs, sim.convs = sim.convs, []
    sim.open_convs = 1          # no conversation can end again, so this only keeps the loop going
    try:
        sim.run()
    finally:
        sim.convs = convs
        sim.open_convs = 0


def strip_wall(summary: dict) -> str:
    s = json.loads(json.dumps(summary))
    s["sim"].pop("wall_s")
    return json.dumps(s)


# ---- invariants ------------------------------------------------------------------------------------------
def _close(a, b, rel=REL, abs_=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def check_invariants(result_or_sim, scenario=None, *, sim=None, convs=None, trace=None) -> pd.DataFrame:
    """Assert every invariant of a finished run; returns the records checked."""
    if isinstance(result_or_sim, Simulator):
        sim = result_or_sim
        df = metrics.records(sim)
        summary = metrics.summary(sim, df)
        sc = scenario or sim.sc
    else:
        res = result_or_sim
        df, summary = res.records, res.summary
        sc = scenario or res.scenario
        assert res.scenario == sc
    if convs is None:
        convs = tuple(cs.conv for cs in sim.convs) if sim is not None else conversations_for(sc, trace)
    pm = perf.for_scenario(sc)
    kvpt = pm.kv_bytes_per_token
    lay = sc.layout_obj

    # -- shape of the records
    assert tuple(df.columns) == metrics.RECORD_COLUMNS
    keys = list(zip(df["conversation"].tolist(), df["turn"].tolist()))
    assert keys == sorted(keys), "records must be sorted by (conversation, turn)"
    assert len(set(keys)) == len(keys), "a (conversation, turn) appears twice"
    statuses = set(df["status"])
    assert statuses <= FINAL_STATUSES, f"unexpected statuses {statuses - FINAL_STATUSES}"
    if sim is not None:
        assert len(sim.requests) == len(df)

    # -- conservation of requests: every conversation sends turns 1..m, all but the last one ok,
    #    the last one failed or the conversation complete
    by_conv = {c.cid: c for c in convs}
    assert set(df["conversation"]) == set(by_conv), "every conversation sends its Turn 1 exactly once"
    expected_rows = 0
    rows = df.to_dict("records")
    per_conv: dict[int, list[dict]] = defaultdict(list)
    for r in rows:
        per_conv[r["conversation"]].append(r)
    for cid, conv in by_conv.items():
        rs = per_conv[cid]
        turns = [r["turn"] for r in rs]
        assert turns == list(range(1, len(rs) + 1)), f"conv {cid}: turns sent {turns}"
        assert len(rs) <= len(conv.turns)
        for r in rs[:-1]:
            assert r["status"] == OK, f"conv {cid} turn {r['turn']} failed but a later turn was sent"
        if rs[-1]["status"] == OK:
            assert len(rs) == len(conv.turns), f"conv {cid} stopped after a successful turn {len(rs)}"
        expected_rows += len(rs)
        for k, r in enumerate(rs):
            t = conv.turns[k]
            assert r["new_input_tokens"] == t.new_input
            assert r["output_tokens"] == t.output
            assert r["prompt_tokens"] == conv.prompt_len(k)
        # causality across turns
        assert _close(rs[0]["arrival_s"], conv.arrival_s), f"conv {cid}: Turn 1 sent at its arrival"
        for prev, nxt in zip(rs, rs[1:]):
            assert nxt["arrival_s"] >= prev["finish_s"] + sc.think_time_s - 1e-9
            assert _close(nxt["arrival_s"], prev["finish_s"] + sc.think_time_s), \
                f"conv {cid}: turn {nxt['turn']} not sent think_time after turn {prev['turn']} finished"
    assert len(df) == expected_rows

    ok = (df["status"] == OK).to_numpy()
    arrival = df["arrival_s"].to_numpy()
    first = df["first_token_s"].to_numpy()
    fin = df["finish_s"].to_numpy()
    ttft, tpot, e2e = (df[c].to_numpy() for c in ("ttft_ms", "tpot_ms", "e2e_ms"))
    out = df["output_tokens"].to_numpy()
    prompt = df["prompt_tokens"].to_numpy()

    # -- causality and finiteness of the metrics of successful requests
    assert np.all(np.isfinite(arrival)) and np.all(arrival >= 0)
    assert np.all(np.isfinite(fin)), "every request has a final time (finish, timeout or rejection)"
    assert np.all(fin >= arrival - 1e-12)
    assert np.all(arrival[ok] <= first[ok]) and np.all(first[ok] <= fin[ok])
    assert np.all(np.isfinite(ttft[ok])) and np.all(ttft[ok] > 0)
    assert np.all(np.isfinite(e2e[ok])) and np.all(e2e[ok] > 0)
    assert np.all(e2e[ok] >= ttft[ok])
    multi = ok & (out > 1)
    assert np.all(np.isfinite(tpot[multi])) and np.all(tpot[multi] > 0)
    assert np.all(np.isnan(tpot[ok & (out <= 1)]))
    assert np.all(np.isnan(ttft[~ok])) and np.all(np.isnan(e2e[~ok])) and np.all(np.isnan(tpot[~ok]))
    # TTFT / E2E count from when the request left the client: its arrival plus its wait for a client slot
    wait = df["client_wait_ms"].to_numpy()
    assert np.all(wait[ok] >= 0)
    if sc.client == "open" or not sc.client_concurrency:
        assert np.all(wait[ok] == 0), "only the benchmark client with a connection cap makes requests wait"
    assert np.all(wait[ok & (df["turn"].to_numpy() > 1)] == 0), "a later turn holds its conversation's slot"
    sent = arrival + wait / 1e3
    np.testing.assert_allclose(ttft[ok], (first[ok] - sent[ok]) * 1e3, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(e2e[ok], (fin[ok] - sent[ok]) * 1e3, rtol=1e-9, atol=1e-6)
    # a request that succeeded finished within the timeout; a timed-out one failed exactly at it
    assert np.all(fin[ok] - arrival[ok] <= sc.timeout_s + 1e-9)
    tmo = (df["status"] == TIMEOUT).to_numpy()
    np.testing.assert_allclose(fin[tmo] - arrival[tmo], sc.timeout_s, rtol=1e-9, atol=1e-9)

    # -- paths
    path = df["path"].to_numpy()
    turn = df["turn"].to_numpy()
    pnode = df["prefill_node"].to_numpy()
    dnode = df["decode_node"].to_numpy()
    assert set(path) <= PATHS | {"none"}
    unsent = path == "none"
    # never routed: only a Turn 1 that timed out waiting for a client connection slot
    assert np.all(tmo[unsent]) and np.all(turn[unsent] == 1) and np.all(dnode[unsent] == "")
    assert not np.any((turn == 1) & (path == LOCAL)), "Turn 1 is never served locally"
    role_of = {f"{r}{i}": r for r, n in (("R", lay.n_R), ("P", lay.n_P), ("D", lay.n_D), ("pD", lay.n_pD))
               for i in range(n)}
    for i in range(len(df)):
        if unsent[i]:
            continue
        drole = role_of[dnode[i]]
        assert drole != "P", "a P node never decodes"
        if drole == "R":
            assert path[i] == REPLICA and pnode[i] == ""
        else:
            assert path[i] in (PD, LOCAL)
            if path[i] == PD:
                assert role_of[pnode[i]] == "P"
            else:
                assert pnode[i] == ""
            if drole == "pD" and turn[i] >= 2 and sc.rehash_frac == 0:
                assert path[i] == LOCAL, "pD serves every Turn 2+ locally"
            if drole == "D" and turn[i] >= 2 and sc.rehash_frac == 0:
                if sc.policy == "pd":
                    assert path[i] == PD
                elif sc.policy == "ppd":
                    assert path[i] == LOCAL
            if turn[i] == 1:
                assert path[i] == PD
    if sc.rehash_frac == 0:
        # a conversation lives on the node its Turn 1 was sent to
        for cid, rs in per_conv.items():
            nodes = {r["decode_node"] for r in rs if r["path"] != "none"}
            assert len(nodes) <= 1, f"conv {cid} moved between decode nodes {nodes}"
    t2 = turn >= 2
    if t2.any():
        assert _close(summary["local_share"], float(np.mean(path[t2] != PD)), rel=1e-5, abs_=1e-6)
    if not lay.n_R and not lay.n_pD and sc.policy == "pd" and t2.any():
        assert summary["local_share"] == 0
    if sc.policy == "ppd" and sc.rehash_frac == 0 and t2.any():
        assert summary["local_share"] == 1
    if lay.n_R and not (lay.n_P or lay.n_D or lay.n_pD):
        assert set(path) <= {REPLICA, "none"}

    # -- prefix cache and prefill accounting
    cached = df["cached_tokens"].to_numpy()
    pre = df["prefill_tokens"].to_numpy()
    assert np.all(cached % BLOCK == 0) and np.all(cached >= 0) and np.all(cached <= prompt)
    assert np.all(cached[turn == 1] == 0), "a new conversation has nothing cached"
    again = df["preemptions"].to_numpy() > 0    # preempted requests prefill again (recompute)
    assert np.all(pre[ok & ~again] + cached[ok & ~again] == prompt[ok & ~again])
    assert np.all(pre[ok & again] + cached[ok & again] > prompt[ok & again])

    # -- KV bytes: moved only on the PD path, the whole prompt's KV, counted once
    kv = df["kv_bytes"].to_numpy()
    pd_path = path == PD
    assert np.all(kv[~pd_path] == 0), "KV moves only on the PD path"
    assert np.all(kv[pd_path & ok] == prompt[pd_path & ok] * kvpt)
    assert np.all((kv[pd_path] == 0) | (kv[pd_path] == prompt[pd_path] * kvpt))
    assert summary["kv"]["bytes"] == int(kv.sum())
    assert summary["kv"]["transfers"] == int((kv > 0).sum())
    if ok.all():
        assert summary["kv"]["transfers"] == int(pd_path.sum())
    if sim is not None:
        assert sim.fabric.bytes_moved == int(kv.sum())
        assert sim.fabric.transfers == int((kv > 0).sum())

    # -- summary
    assert metrics.is_finite_summary(summary)
    json.dumps(summary, allow_nan=False)
    assert summary["scenario"] == sc.to_dict()
    g = summary["groups"]
    assert g["turn1"]["count"] == int((ok & (turn == 1)).sum())
    assert g["turn2plus"]["count"] == int((ok & t2).sum())
    assert g["all"]["count"] == int(ok.sum()) == g["turn1"]["count"] + g["turn2plus"]["count"]
    assert _close(summary["success_rate"], ok.mean() if len(df) else 0.0, rel=1e-5, abs_=1e-6)
    for name in ("turn1", "turn2plus", "all"):
        for m in ("ttft_ms", "tpot_ms", "e2e_ms"):
            st = g[name][m]
            if st["mean"] is not None:
                assert st["p50"] <= st["p90"] <= st["p99"]
    for v in summary["slo_attainment"].values():
        assert 0.0 <= v <= 1.0
    assert 0.0 <= summary["local_share"] <= 1.0
    assert summary["throughput"]["requests_per_s"] >= 0

    # -- engine state
    if sim is not None:
        assert sim.open_convs == 0, "the run ended with conversations still open"
        assert all(cs.done for cs in sim.convs)
        for n in sim.nodes:
            # iterations with decodes never run faster than those decodes alone (Eq.1's step inflation >= 1)
            assert 0.0 <= n.dec_base <= n.dec_time * (1 + 1e-12), (n.name, n.dec_base, n.dec_time)
            assert n.kv.blocks == sum(n.kv.entries.values())
            assert 0 <= n.kv.blocks <= n.cap_blocks
            assert n.used >= 0
            # what a node still holds belongs to aborted requests only (drain() lets them finish)
            holders = {r.rid for r in sim.requests if n.nid in r.reserved_on}
            assert set(n.alloc) <= holders, f"{n.name}: blocks held by requests that hold no reservation"
        for r in sim.requests:
            if r.reserved_on:
                assert r.status != OK, f"request {r.conv}/{r.turn} finished ok but still holds KV"
    return df


def check_drained(sim) -> None:
    """After ``drain(sim)``: every node is idle and has released every reservation."""
    for n in sim.nodes:
        assert n.used == 0 and not n.alloc, f"{n.name} still holds {n.used} KV blocks after every request ended"
        assert n.dec_blocks.n == 0 and n.dec_blocks.at(n.steps) == 0
        assert not n.waiting and not n.prefill_q and not n.dec_heap and n.n_dec == 0, \
            f"{n.name} still holds work"
        assert not n.busy
        assert 0 <= n.kv.blocks <= n.cap_blocks
    assert not sim.fabric.flows
    for r in sim.requests:
        assert not r.reserved_on, f"request {r.conv}/{r.turn} ({r.status}) still holds KV on {r.reserved_on}"
