"""The Turn 2+ policy axis: one interface, a small immutable registry.

A policy answers one question for a Turn 2+ request whose conversation lives on a D node: serve it
locally (append-prefill on D, no transfer: x=1) or through P (re-prefill + KV transfer: x=0)?
pD nodes always serve Turn 2+ locally and replicas serve everything; Turn 1 always takes the PD path.
A policy sees the cluster through a read-only ``ClusterView`` and the D node through a ``NodeView``.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping, Protocol

if TYPE_CHECKING:
    from .request import Request
    from .view import ClusterView, NodeView


class Policy(Protocol):
    def __call__(self, view: "ClusterView", req: "Request", node: "NodeView") -> bool: ...   # True -> local


def always_pd(view: "ClusterView", req: "Request", node: "NodeView") -> bool:
    return False


def always_local(view: "ClusterView", req: "Request", node: "NodeView") -> bool:
    return True


def estimate(view: "ClusterView", req: "Request", d: "NodeView") -> dict[str, float]:
    """Predicted TTFT of both paths and the extra decode time each would add to D, from the live cluster
    state and the latency model (seconds)."""
    pm = view.pm
    prompt = req.prompt
    batch, ctx_sum, active = d.decode_batch(), d.ctx_sum(), d.active_seqs()   # D's state, read once
    a, b = pm.decode_coeffs(max(batch, 1))
    step = a + b * ctx_sum
    per_token = pm.prefill_time(1024, 0) / 1024.0        # queued prefill work drains at about this rate
    # local: append-prefill of what D's prefix cache does not hold
    cached_d = d.cached_for(req.conv, prompt)
    new_d = prompt - cached_d
    it_local = pm.iteration([(new_d, cached_d, cached_d == 0)], batch, ctx_sum)
    ttft_local = pm.hop(prompt, active) + d.pending_prefill_tokens() * per_token + 0.5 * step + it_local
    # PD: re-prefill on the P the router picks, transfer the whole prompt, one iteration on D
    p = view.pick_p()
    cached_p = p.cached_for(req.conv, prompt)
    t_p = p.pending_prefill_tokens() * per_token + pm.prefill_time(prompt - cached_p, cached_p)
    share = 1 + max(view.transfers_on(p.nid), view.transfers_on(d.nid))
    xfer = view.link_latency_s + prompt * pm.kv_bytes_per_token * share / view.link_bandwidth_Bps
    it_one = pm.iteration([(1, prompt - 1, False)], batch, ctx_sum)
    ttft_pd = pm.hop(prompt) + t_p + xfer + pm.pd_handoff(prompt, active) + 0.5 * step + it_one
    extra_local = max(it_local - step, 0.0)
    extra_pd = max(it_one - step, 0.0) + pm.p.kv_recv_blocks_decode * xfer
    return {"ttft_local": ttft_local, "ttft_pd": ttft_pd, "extra_local": extra_local, "extra_pd": extra_pd,
            "decode_time": max(req.output - 1, 1) * step}


def score(view: "ClusterView", req: "Request", d: "NodeView") -> float:
    """Eq.1: S = w_ttft * dTTFT - w_tpot * dTPOT, both relative; S > 0 serves the request locally."""
    e = estimate(view, req, d)
    d_ttft = (e["ttft_pd"] - e["ttft_local"]) / e["ttft_pd"]
    d_tpot = (e["extra_local"] - e["extra_pd"]) / e["decode_time"]
    return view.w_ttft * d_ttft - view.w_tpot * d_tpot


def dynamic(view: "ClusterView", req: "Request", node: "NodeView") -> bool:
    return score(view, req, node) > 0


def dynamic_table(view: "ClusterView", req: "Request", node: "NodeView") -> bool:
    """The paper's engine: the nearest cell of an offline table of Eq.1 decisions (built by
    ``ppd_core.analysis.table`` and handed to the run)."""
    return view.table.decide(req, view.observed_qps())


POLICIES: Mapping[str, Policy] = MappingProxyType({
    "pd": always_pd,
    "ppd": always_local,
    "dynamic": dynamic,
    "dynamic-table": dynamic_table,
})
