"""Turn 2+ routing on D nodes: one interface, a tiny registry.

A policy answers one question for a Turn 2+ request whose conversation lives on a D node: serve it
locally (append-prefill on D, no transfer: x=1) or through P (re-prefill + KV transfer: x=0)?
pD nodes always serve Turn 2+ locally and replicas serve everything; Turn 1 always takes the PD path.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .engine import Simulator
    from .node import Node
    from .request import Request

Policy = Callable[["Simulator", "Request", "Node"], bool]   # True -> local path


def always_pd(sim: "Simulator", req: "Request", node: "Node") -> bool:
    return False


def always_local(sim: "Simulator", req: "Request", node: "Node") -> bool:
    return True


def estimate(sim: "Simulator", req: "Request", d: "Node") -> dict[str, float]:
    """Predicted TTFT of both paths and the extra decode time each would add to D, from the live cluster
    state and the performance model (seconds)."""
    pm = sim.pm
    prompt = req.prompt
    a, b = pm.decode_coeffs(max(d.n_dec, 1))
    step = a + b * d.ctx_sum()
    per_token = pm.prefill_time(1024, 0) / 1024.0        # queued prefill work drains at about this rate
    # local: append-prefill of what D's prefix cache does not hold
    cached_d = d.cached_for(req.conv, prompt)
    new_d = prompt - cached_d
    it_local = pm.iteration([(new_d, cached_d, cached_d == 0)], d.n_dec, d.ctx_sum())
    ttft_local = pm.hop(prompt, d.active_seqs()) + d.pending_prefill_tokens() * per_token + 0.5 * step + it_local
    # PD: re-prefill on the least-loaded P, transfer the whole prompt, one iteration on D
    p = sim.pick_p()
    cached_p = p.cached_for(req.conv, prompt)
    t_p = p.pending_prefill_tokens() * per_token + pm.prefill_time(prompt - cached_p, cached_p)
    share = 1 + max(sim.fabric.active_on(p.nid), sim.fabric.active_on(d.nid))
    xfer = sim.fabric.latency + prompt * pm.kv_bytes_per_token * share / sim.fabric.bw
    it_one = pm.iteration([(1, prompt - 1, False)], d.n_dec, d.ctx_sum())
    ttft_pd = pm.hop(prompt) + t_p + xfer + pm.pd_handoff(prompt, d.active_seqs()) + 0.5 * step + it_one
    extra_local = max(it_local - step, 0.0)
    extra_pd = max(it_one - step, 0.0) + pm.p.kv_recv_blocks_decode * xfer
    return {"ttft_local": ttft_local, "ttft_pd": ttft_pd, "extra_local": extra_local, "extra_pd": extra_pd,
            "decode_time": max(req.output - 1, 1) * step}


def score(sim: "Simulator", req: "Request", d: "Node") -> float:
    """Eq.1: S = w_ttft * dTTFT - w_tpot * dTPOT, both relative; S > 0 serves the request locally."""
    e = estimate(sim, req, d)
    d_ttft = (e["ttft_pd"] - e["ttft_local"]) / e["ttft_pd"]
    d_tpot = (e["extra_local"] - e["extra_pd"]) / e["decode_time"]
    return sim.sc.w_ttft * d_ttft - sim.sc.w_tpot * d_tpot


def dynamic(sim: "Simulator", req: "Request", node: "Node") -> bool:
    return score(sim, req, node) > 0


def dynamic_table(sim: "Simulator", req: "Request", node: "Node") -> bool:
    """The paper's engine: the nearest cell of an offline table of Eq.1 decisions (see ppd_core.table)."""
    return sim.table.decide(req, sim.observed_qps())


REGISTRY: dict[str, Policy] = {
    "pd": always_pd,
    "ppd": always_local,
    "dynamic": dynamic,
    "dynamic-table": dynamic_table,
}
