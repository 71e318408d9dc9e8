"""Read-only views of the running cluster: what a Turn 2+ policy may look at (never the simulator itself)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .node import Node


class NodeView:
    """Queries on one node: its decode batch, queued prefill work and prefix cache."""

    __slots__ = ("_node", "nid", "role", "name")

    def __init__(self, node: "Node"):
        self._node = node
        self.nid, self.role, self.name = node.nid, node.role, node.name

    def decode_batch(self) -> int:
        """Requests in the decode batch."""
        return self._node.n_dec

    def ctx_sum(self) -> int:
        """Sum of the decode batch's context lengths (tokens)."""
        return self._node.ctx_sum()

    def active_seqs(self) -> int:
        return self._node.active_seqs()

    def pending_prefill_tokens(self) -> int:
        return self._node.pending_prefill_tokens()

    def cached_for(self, conv: int, prompt: int) -> int:
        return self._node.cached_for(conv, prompt)


class ClusterView:
    """The cluster as a policy sees it: node views, the P router's choice, fabric sharing, the observed load,
    the latency model, the Eq.1 weights and (policy ``dynamic-table``) the decision table."""

    __slots__ = ("_sim", "_nodes", "pm", "w_ttft", "w_tpot", "table", "link_latency_s", "link_bandwidth_Bps")

    def __init__(self, sim: Any):
        """``sim``: the engine (``engine.Simulator``); only the queries below reach it."""
        self._sim = sim
        self._nodes = tuple(NodeView(n) for n in sim.nodes)
        self.pm = sim.pm
        self.w_ttft, self.w_tpot = sim.sc.w_ttft, sim.sc.w_tpot
        self.table = sim.table
        self.link_latency_s = sim.fabric.latency
        self.link_bandwidth_Bps = sim.fabric.bw

    def node(self, nid: int) -> NodeView:
        return self._nodes[nid]

    def pick_p(self) -> NodeView:
        """The P node the router would pick for a PD-path request now."""
        return self._nodes[self._sim.pick_p().nid]

    def transfers_on(self, nid: int) -> int:
        """KV transfers in flight from or to node ``nid``."""
        return self._sim.fabric.active_on(nid)

    def observed_qps(self) -> float:
        return self._sim.observed_qps()
