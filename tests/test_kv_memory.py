"""KV memory like vLLM V1: blocks allocated as tokens are produced, preemption by recompute, a block-level
prefix cache evicted from the tail, ``max_num_seqs``; and the decode batch's closed-form block count that
keeps decode analytic (a segment is cut at the step where the batch outgrows its blocks)."""
from __future__ import annotations

import heapq
import itertools
import random

import pytest

import ppd_core
from ppd_core import Scenario, ScenarioError, parse
from ppd_core.sim.kvcache import BLOCK, BlockLRU, blocks_for
from ppd_core.sim.memory import DecodeBlocks
from ppd_core.sim.node import Node
from ppd_core.sim.request import Request
from helpers import check_drained, check_invariants, drain, simulate_checked


# ---- the prefix cache ------------------------------------------------------------------------------------
def test_tail_eviction_keeps_the_head_of_a_history():
    kv = BlockLRU()
    kv.put(1, 10)            # least recently used
    kv.put(2, 5)
    assert kv.evict(4) == 4 and kv.entries == {1: 6, 2: 5}
    assert kv.hit(1, 10 * BLOCK) == 6 * BLOCK          # the partly evicted history still hits its head
    assert kv.evict(8) == 8 and kv.entries == {2: 3}   # conversation 1 gone, then 2's tail
    assert kv.hit(2, 1000) == 3 * BLOCK and kv.hit(2, 40) == 2 * BLOCK   # whole blocks the prompt covers
    assert kv.blocks == 3 and kv.evicted == 12
    assert kv.evict(10) == 3 and kv.blocks == 0 and not kv.entries


def test_put_is_most_recently_used():
    kv = BlockLRU()
    kv.put(1, 4)
    kv.put(2, 4)
    kv.put(1, 4)             # conversation 1's next turn ended: it moves behind 2
    kv.evict(4)
    assert kv.entries == {1: 4}


# ---- the decode batch's blocks in closed form --------------------------------------------------------------
def test_decode_blocks_equal_the_per_decoder_sum_and_the_cut_step_is_the_first_that_does_not_fit():
    rnd = random.Random(7)
    for _ in range(200):
        cs = [rnd.randint(-3000, 3000) for _ in range(rnd.randint(1, 40))]
        d = DecodeBlocks()
        for c in cs:
            d.add(c)
        s0 = max(-min(cs), 0) + rnd.randint(0, 50)
        brute = lambda s: sum(blocks_for(c + s) for c in cs)
        for s in list(range(s0, s0 + 40)) + [s0 + 1000, s0 - 37, s0 + 3]:   # incremental, both ways
            assert d.at(s) == d.at_direct(s) == brute(s)
        room = brute(s0) + rnd.randint(0, 3 * len(cs))
        k = d.steps_within(s0, room)
        assert brute(s0 + k - 1) <= room < brute(s0 + k)
        d.remove(cs[0])
        assert d.at(s0) == d.at_direct(s0) == brute(s0) - blocks_for(cs[0] + s0)


# ---- one node driven by a stub host: exact fit, one block short --------------------------------------------
class _PM:
    p_send_s = 0.0

    def __init__(self, blocks: int):
        self.kv_capacity_tokens = blocks * BLOCK

    def iteration(self, spec, n_dec, ctx):
        return 1e-3 + 1e-6 * sum(n for n, _, _ in spec)

    def decode_coeffs(self, n):
        return 1e-3, 1e-7


class _Host:
    retok, spans = 1.0, None

    def __init__(self):
        self.heap, self.seq, self.now = [], itertools.count(), 0.0
        self.first, self.done = {}, {}

    def wake_node(self, t, node, version):
        heapq.heappush(self.heap, (t, next(self.seq), node, version))

    def first_token(self, req, t):
        assert req.rid not in self.first, "a preempted request emits its first token once"
        self.first[req.rid] = t

    def finished(self, req, t):
        self.done[req.rid] = t

    def reject(self, req, t, node):
        raise AssertionError("nothing here is too large")

    def run(self, node, reqs):
        for r in reqs:
            node.enqueue(r, 0.0)
        wakes = 0
        while self.heap:
            t, _, n, v = heapq.heappop(self.heap)
            self.now = t
            wakes += 1
            n.wake(t, v)
        return wakes


def _drive(blocks: int, exact: bool, n: int = 2, prompt: int = 32, output: int = 33):
    host = _Host()
    node = Node(0, "R", "R0", host, _PM(blocks), 8192, exact=exact)
    reqs = [Request(i, i, 1, 0.0, prompt, output, prompt) for i in range(n)]
    wakes = host.run(node, reqs)
    return node, host, reqs, wakes


def test_a_batch_that_fits_exactly_is_never_preempted():
    # each request ends needing ceil((32 + 33 - 1) / 16) = 4 blocks: two fit 8 blocks exactly
    node, host, reqs, wakes = _drive(8, exact=False)
    assert node.preemptions == 0 and len(host.done) == 2
    # prefill of 0, mixed step (1's prefill), a decode segment to 0's end, one to 1's end: no memory cut
    assert wakes == 4
    assert node.kv.blocks == 8 and node.used_blocks() == 0   # retok 1: every full block stays cached


@pytest.mark.parametrize("exact", [False, True])
def test_one_block_short_preempts_the_latest_and_both_finish(exact):
    node, host, reqs, _ = _drive(7, exact=exact)
    assert node.preemptions >= 1 and reqs[1].preemptions >= 1 and reqs[0].preemptions == 0
    assert set(host.done) == {0, 1} and host.done[1] > host.done[0]
    assert node.used == 0 and not node.alloc and node.dec_blocks.n == 0
    assert node.kv.blocks + node.free_blocks() == node.cap_blocks


def test_preemption_cut_is_analytic_and_equals_step_by_step():
    # three requests end at ceil((40 + 300 - 1) / 16) = 22 blocks each; 40 blocks hold fewer than two
    fast, hf, _, wakes_fast = _drive(40, exact=False, n=3, prompt=40, output=300)
    slow, hs, _, wakes_slow = _drive(40, exact=True, n=3, prompt=40, output=300)
    assert fast.preemptions == slow.preemptions > 0
    assert set(hf.done) == set(hs.done) == {0, 1, 2}
    for rid in hs.done:
        assert hf.done[rid] == pytest.approx(hs.done[rid], rel=1e-9)
        assert hf.first[rid] == pytest.approx(hs.first[rid], rel=1e-9)
    assert wakes_fast * 20 < wakes_slow    # the run-out step is computed, not stepped to


# ---- the engine: tight memory ----------------------------------------------------------------------------
TIGHT = dict(layout="1R", conversations=60, qps=20, client_concurrency=0, gpu_mem_util=0.25, timeout_s=3600)


def test_tight_memory_preempts_and_every_request_still_finishes():
    res, sim = simulate_checked(Scenario(**TIGHT))
    assert sim.capacity_checks > 0
    df = check_invariants(res, sim=sim)
    assert res.summary["preemptions"] > 10
    assert res.summary["success_rate"] == 1.0
    assert res.summary["preemptions"] == int(df["preemptions"].sum()) == int(res.nodes["preemptions"].sum())
    drain(sim)
    check_drained(sim)


def test_tight_memory_analytic_equals_step_by_step():
    sc = Scenario(**TIGHT)
    fast, slow = ppd_core.run(sc), ppd_core.run(sc, exact=True)
    assert fast.summary["preemptions"] == slow.summary["preemptions"] > 0
    for col in ("status", "cached_tokens", "prefill_tokens", "preemptions"):
        assert fast.records[col].tolist() == slow.records[col].tolist(), col
    for col in ("first_token_s", "finish_s"):
        assert fast.records[col].to_numpy() == pytest.approx(slow.records[col].to_numpy(), rel=1e-9)
    assert fast.summary["sim"]["events"] < slow.summary["sim"]["events"] / 5


def test_max_num_seqs_caps_the_running_batch():
    sc = Scenario(layout="1R", conversations=40, qps=40, client_concurrency=0, max_num_seqs=4, timeout_s=3600)
    res, sim = simulate_checked(sc)
    assert res.summary["success_rate"] == 1.0
    wide = ppd_core.run(sc.with_(max_num_seqs=1024))
    assert res.summary["groups"]["all"]["ttft_ms"]["mean"] > 2 * wide.summary["groups"]["all"]["ttft_ms"]["mean"]


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "1.5", "70000"])
def test_max_num_seqs_is_range_checked(bad):
    with pytest.raises(ScenarioError, match="max_num_seqs"):
        parse([f"max_num_seqs={bad}"])
