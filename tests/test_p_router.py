"""P routing as a choice: ``p_router=least_loaded`` (fewest tokens waiting) or ``affinity`` (the measured
proxy: P = hash % n_P with the serving slot = hash % n_serving taken from the same hash)."""
from __future__ import annotations

from collections import Counter

import pytest

import ppd_core
from ppd_core import Scenario, ScenarioError, parse
from ppd_core.sim.router import P_ROUTERS, Affinity, mix64
from helpers import check_invariants, simulate_checked


class _P:
    def __init__(self, i):
        self.nid = i

    def pending_prefill_tokens(self):
        return 0


def test_affinity_is_the_hash_rule_of_the_proxy():
    ps = [_P(i) for i in range(2)]
    aff = Affinity()
    for key in range(200):
        for slot in range(2):      # n_P == n_serving: slot i always pairs with P i (2P_2D = two 1P1D pipes)
            assert aff.pick(ps, key, slot, 2) is ps[slot]
    ps3 = [_P(i) for i in range(3)]
    seen = Counter()
    for key in range(3000):
        slot = key % 2
        p = aff.pick(ps3, key, slot, 2)
        assert aff.pick(ps3, key, slot, 2) is p                  # deterministic
        seen[(slot, p.nid)] += 1
    # with 3 P and 2 slots the hash mod 6 is uniform: every (slot, P) pair occurs about equally often
    assert len(seen) == 6 and max(seen.values()) < 1.2 * min(seen.values())
    assert mix64(1) != mix64(2) and mix64(5) == mix64(5)


@pytest.mark.parametrize("layout", ["2P_2D", "3P_1D", "2P_2pD"])
def test_affinity_pins_every_turn_of_a_conversation_to_one_p(layout):
    sc = Scenario(layout=layout, policy="pd", conversations=40, qps=8, p_router="affinity")
    res, sim = simulate_checked(sc)
    df = check_invariants(res, sim=sim)
    pd_rows = df[df["path"] == "pd"]
    assert pd_rows.groupby("conversation")["prefill_node"].nunique().max() == 1
    if layout == "2P_2D":   # two fixed pipes: D0 is fed by P0 only, D1 by P1 only
        pairs = set(zip(pd_rows["prefill_node"], pd_rows["decode_node"]))
        assert pairs <= {("P0", "D0"), ("P1", "D1")}


def test_affinity_rehashed_turns_hash_anew():
    sc = Scenario(layout="3P_1D", policy="pd", conversations=60, qps=8, p_router="affinity", rehash_frac=0.5)
    df = ppd_core.run(sc).records
    pd_rows = df[df["path"] == "pd"]
    assert pd_rows.groupby("conversation")["prefill_node"].nunique().max() > 1


def test_affinity_keeps_more_prefix_cache_on_p_than_least_loaded():
    """The point of pinning: Turn 2+ on the PD path finds its history on the same P and prefills less."""
    base = dict(layout="2P_2D", policy="pd", conversations=120, qps=4)
    ll = ppd_core.run(Scenario(**base, p_router="least_loaded")).records
    af = ppd_core.run(Scenario(**base, p_router="affinity")).records
    t2 = lambda df: df[(df["turn"] >= 2) & (df["status"] == "ok")]
    assert t2(af)["cached_tokens"].sum() > 1.2 * t2(ll)["cached_tokens"].sum()


def test_p_router_key_is_checked_and_registered():
    assert set(P_ROUTERS) == {"least_loaded", "affinity"}
    assert parse(["p_router=affinity"]).p_router == "affinity"
    with pytest.raises(ScenarioError, match="p_router"):
        parse(["p_router=random"])
