"""The heap engine against an independent SimPy model (``tests/simpy_oracle.py``) on replica-only layouts.

The oracle shares only ``perf``/``workload``/``scenario`` with ``ppd_core``: same conversations, same routing
RNG stream, same iteration/hop formulas, but its own client, router, batching, decode loop and prefix cache.
Both ``run(sc)`` (analytic decode segments) and ``run(sc, exact=True)`` (one event per step) must give every
request the oracle's send, first-token and finish times within 1e-6 relative.
"""
from __future__ import annotations

import math
from dataclasses import replace
from functools import cache

import numpy as np
import pytest

import ppd_core
from ppd_core import Scenario
from ppd_core import model as perf
from simpy_oracle import Oracle, run_oracle

REL = 1e-6
NEVER = 86_400.0      # timeout_s: nothing may fail, so every request has a first token and a finish

# The performance model as calibrated in data/perf_params.json (what ``run(sc)`` uses), except where a case
# pins it: PINNED makes the per-sequence hop cost and the partial prefix-cache hit matter whatever the
# calibration file says.
PINNED = replace(perf.PerfParams(), api_us_per_seq=300.0, retok_hit=0.6, retok_hit_synthetic=0.6)

CASES = {
    # name: (scenario keys, params)
    "1R-small_mid_bal-open-chunked": (dict(layout="1R", workload="small_mid_bal", turns=3, conversations=40, qps=2,
                                           client_concurrency=0, think_time_s=0.0, max_batched_tokens=96), None),
    "2R-large_huge_paste-cc5-think": (dict(layout="2R", workload="large_huge_paste", turns=3, conversations=40,
                                           qps=8, client="benchmark", client_concurrency=5, think_time_s=0.5,
                                           max_batched_tokens=2048), None),
    "4R-sharegpt-cc50": (dict(layout="4R", workload="sharegpt", conversations=60, qps=20, client="benchmark", client_concurrency=50,
                              think_time_s=0.0), None),
    "2R-wildchat-open-think-chunked": (dict(layout="2R", workload="wildchat", conversations=50, qps=1,
                                            client_concurrency=0, think_time_s=0.5, max_batched_tokens=512), None),
    "1R-sharegpt-cc5": (dict(layout="1R", workload="sharegpt", conversations=40, qps=10, client="benchmark", client_concurrency=5,
                             think_time_s=0.0), None),
    "4R-wildchat-cc50-think": (dict(layout="4R", workload="wildchat", conversations=80, qps=30,
                                    client="benchmark", client_concurrency=50, think_time_s=0.5, max_batched_tokens=1024), None),
    "2R-sharegpt-cc5-pinned": (dict(layout="2R", workload="sharegpt", conversations=50, qps=15,
                                    client="benchmark", client_concurrency=5, think_time_s=0.0, max_batched_tokens=1024), PINNED),
}


def _scenario(name: str) -> Scenario:
    return Scenario(timeout_s=NEVER, **CASES[name][0])


@cache
def _oracle(name: str) -> Oracle:
    o = Oracle(_scenario(name), CASES[name][1])
    o.records = o.run()
    return o


def assert_matches(engine_df, oracle_df, what: str) -> None:
    """Same requests, nodes and cache hits; send, first-token and finish times within ``REL``. A failure
    names the earliest-sent request that differs."""
    keys_e = list(zip(engine_df["conversation"], engine_df["turn"]))
    keys_o = list(zip(oracle_df["conversation"], oracle_df["turn"]))
    assert keys_e == keys_o, f"{what}: (conversation, turn) sets differ: " \
                             f"engine only {sorted(set(keys_e) - set(keys_o))[:5]}, " \
                             f"oracle only {sorted(set(keys_o) - set(keys_e))[:5]}"
    assert (engine_df["status"] == "ok").all(), f"{what}: a request failed in the engine"
    bad = []
    for col_e, col_o in (("arrival_s", "sent"), ("first_token_s", "first_token"), ("finish_s", "finish")):
        a, b = engine_df[col_e].to_numpy(float), oracle_df[col_o].to_numpy(float)
        off = ~np.isclose(a, b, rtol=REL, atol=0.0)
        bad += [(oracle_df["sent"].iat[i], col_o, i, b[i], a[i]) for i in np.flatnonzero(off)]
    for col_e, col_o in (("decode_node", "node"), ("cached_tokens", "cached")):
        a, b = engine_df[col_e].to_numpy(), oracle_df[col_o].to_numpy()
        bad += [(oracle_df["sent"].iat[i], col_o, i, b[i], a[i]) for i in np.flatnonzero(a != b)]
    if bad:
        sent, col, i, want, got = min(bad, key=lambda x: x[0])
        n = len({x[2] for x in bad})
        raise AssertionError(f"{what}: {n} of {len(oracle_df)} requests differ; earliest sent: conversation "
                             f"{oracle_df['conversation'].iat[i]} turn {oracle_df['turn'].iat[i]} (sent "
                             f"{sent:.9f} s): {col} oracle {want!r}, engine {got!r}")


@pytest.mark.parametrize("exact", [False, True], ids=["analytic", "exact"])
@pytest.mark.parametrize("name", list(CASES))
def test_engine_matches_simpy_oracle(name, exact):
    sc, params = _scenario(name), CASES[name][1]
    res = ppd_core.run(sc, exact=exact, params=params)
    assert_matches(res.records, _oracle(name).records, f"{name} exact={exact}")


def test_cases_exercise_what_the_oracle_models():
    """The comparison is only as good as the behaviour the cases reach: batches, chunked and mixed
    iterations, client-queue waits, prefix-cache hits, several nodes in use."""
    for name in CASES:
        o = _oracle(name)
        df, sc = o.records, o.sc
        assert max(n.max_batch for n in o.nodes) >= 4, f"{name}: no real batching"
        assert sum(n.mixed for n in o.nodes) > 0, f"{name}: never a prefill co-batched with decodes"
        # (a prompt + retok_hit x answer under one 16-token block caches nothing)
        assert (df.loc[df["turn"] >= 2, "cached"] > 0).mean() > 0.9, f"{name}: later turns miss the prefix cache"
        assert df["node"].nunique() == sc.layout_obj.n_R, f"{name}: a replica got no conversation"
        waited = int((df["granted"] > df["sent"]).sum())
        if sc.client_concurrency in (0, 5):
            assert (waited > 0) == (sc.client_concurrency == 5), f"{name}: {waited} client-queue waits"
        if sc.max_batched_tokens <= 1024:
            assert (df["prefill_chunks"] > 1).any(), f"{name}: no prompt was split across iterations"


def test_oracle_closed_form_two_turns_on_an_idle_replica():
    """The oracle alone, against hand arithmetic: Turn 1 = hop + full prefill + decode steps; Turn 2 sent
    think_time later, prefilling only past the cached whole blocks (prompt + retok_hit x answer)."""
    sc = Scenario(layout="1R", workload="small_mid_bal", turns=2, conversations=1, client_concurrency=0,
                  think_time_s=1.5, timeout_s=NEVER)
    df = run_oracle(sc, PINNED)
    pm = perf.for_scenario(sc, PINNED)
    a, b = pm.decode_coeffs(1)
    t = df.iloc[0]["sent"]
    for k, (prompt, out) in enumerate(((128, 128), (384, 128))):
        r = df.iloc[k]
        cached = 0 if k == 0 else ((128 + int(0.6 * 128)) // 16) * 16
        assert r["cached"] == cached
        assert math.isclose(r["sent"], t, rel_tol=1e-12)
        first = t + pm.hop(prompt, 0) + pm.iteration([(prompt - cached, cached, cached == 0)], 0, 0)
        finish = first + math.fsum(a + b * (prompt + 1 + i) for i in range(out - 1))
        assert math.isclose(r["first_token"], first, rel_tol=1e-12)
        assert math.isclose(r["finish"], finish, rel_tol=1e-12)
        t = finish + 1.5


def test_oracle_refuses_what_it_does_not_model():
    with pytest.raises(AssertionError, match="replica-only"):
        Oracle(Scenario(layout="1P_1pD", conversations=2))


# Several requests finishing in the same iteration, each ending a conversation, release queued
# conversations at the same instant; their hops must all see the batch after that iteration (the engine
# once completed the co-finishers one by one, so the first conversation released counted the others in
# api_us_per_seq and the FIFO order on the idle node flipped: conv 8 and 9 below, seen by the oracle).
COFINISH = dict(layout="2R", workload="large_mid_bal", turns=1, conversations=12, qps=300, client="benchmark", client_concurrency=6,
                timeout_s=NEVER)
HOP_PARAMS = replace(perf.PerfParams(), api_us_per_seq=300.0)


@pytest.mark.parametrize("exact", [False, True], ids=["analytic", "exact"])
def test_cofinishing_requests_release_queued_conversations_fifo(exact):
    sc = Scenario(**COFINISH)
    assert_matches(ppd_core.run(sc, exact=exact, params=HOP_PARAMS).records, run_oracle(sc, HOP_PARAMS),
                   f"co-finishers exact={exact}")
