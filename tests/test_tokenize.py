"""Natural chat text pays its own per-token hop cost (model/tokenize.py): the mechanism on its own, then what
it does to a run, then that the shipped fit found it on the ShareGPT runs."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ppd_core.analysis.runs import run
from ppd_core.config.scenario import Scenario
from ppd_core.config.workload_catalog import DATASETS, SYNTHETIC
from ppd_core.model.base import for_scenario
from ppd_core.model.params import default_params
from ppd_core.model.tokenize import is_natural_text


def test_which_workloads_are_natural_text():
    assert not any(is_natural_text(w) for w in SYNTHETIC)
    assert all(is_natural_text(w) for w in DATASETS)
    assert is_natural_text("trace")        # imported traces carry real prompts


def test_a_hop_charges_the_per_token_cost_of_its_text():
    p = replace(default_params(), api_us_per_token=6.0, api_us_per_token_natural=1.5, api_ms=20.0,
                api_us_per_seq=0.0)
    synth = for_scenario(Scenario(layout="2P_2pD", workload="small_mid_bal"), p)
    nat = for_scenario(Scenario(layout="2P_2pD", workload="sharegpt"), p)
    for prompt in (0, 1000, 4000):
        assert synth.hop(prompt) == pytest.approx(0.020 + 6.0e-6 * prompt)
        assert nat.hop(prompt) == pytest.approx(0.020 + 1.5e-6 * prompt)
    # the PD path's second hop (to D) pays it too
    assert synth.pd_handoff(2000) - nat.pd_handoff(2000) == pytest.approx(4.5e-6 * 2000)


def test_natural_text_cost_moves_only_natural_text_runs():
    """A cheaper natural-text tokenisation lowers a ShareGPT run's Turn 2+ TTFT by what its hop saves when the
    node is idle, by less (a request that arrives earlier still waits for the running iteration) but more than
    nothing under load, and leaves a synthetic run byte-identical."""
    base = default_params()
    cheap = replace(base, api_us_per_token_natural=0.0)
    sc_syn = Scenario(layout="4R", workload="large_mid_bal", qps=2.0, conversations=40, client="benchmark",
                      client_concurrency=50)
    a, b = run(sc_syn, params=base), run(sc_syn, params=cheap)
    assert a.records.equals(b.records)

    def saving(sc):
        r0, r1 = run(sc, params=base).records, run(sc, params=cheap).records
        t2 = r0.turn > 1
        saved_ms = 1e-3 * base.api_us_per_token_natural * r0.prompt_tokens[t2]      # one hop per R turn
        return float((r0.ttft_ms - r1.ttft_ms)[t2].sum()), float(saved_ms.sum())
    idle = Scenario(layout="4R", workload="sharegpt", qps=0.01, conversations=3, client="benchmark",
                    client_concurrency=50)
    d, saved = saving(idle)
    assert d == pytest.approx(saved, rel=0.1)
    d, saved = saving(Scenario(layout="4R", workload="sharegpt", qps=1.0, conversations=60, client="benchmark",
                               client_concurrency=50))
    assert 0.2 * saved < d <= 1.05 * saved


def test_shipped_fit_prices_chat_text_below_the_synthetic_prompts():
    """The ShareGPT runs (natural_text stage) find tokenising chat text cheaper per token than the synthetic
    prompts with their random letter strings, and within the bounds a tokenizer allows (>= 0)."""
    p = default_params()
    assert 0.0 <= p.api_us_per_token_natural < p.api_us_per_token
