"""Read-only views of the running cluster: what a Turn 2+ policy may look at (never the simulator itself)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.dense import PerfModel
    from .events import Host
    from .fabric import Fabric
    from .node import Node


class NodeView:
    """Queries on one node: its decode batch, queued prefill work and prefix cache."""

    __slots__ = ("_node", "nid", "role", "name", "pm")

    def __init__(self, node: "Node"):
        self._node = node
        self.nid, self.role, self.name = node.nid, node.role, node.name
        self.pm: PerfModel = node.pm        # the node's own latency model (its GPU x TP)

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

    def prefill_queue(self) -> list[tuple[int, int, bool]]:
        """Prefill work queued ahead of a new request, FIFO: (tokens left, context done, full prefill) of the
        admitted requests, then the requests still waiting for KV memory (with their prefix-cache hit; a PD-path
        request waiting on D will compute one token)."""
        n = self._node
        q = [(r.remaining_prefill, r.done_prefill, r.full_prefill) for r in n.prefill_q if not r.aborted]
        for r in n.waiting:   # priced with the prefix-cache hit they will get at admission (PD on D: none)
            if not r.aborted:
                c = 0 if (r.path == "pd" and n.role != "P") else n.kv.hit(r.conv, r.prompt)
                q.append((r.prompt - c, c, c == 0) if r.path != "pd" or n.role == "P" else (1, r.prompt - 1, False))
        return q

    def busy_left(self) -> float:
        """Seconds until the node's iteration in progress ends: exact for a decode step of a planned segment,
        half the iteration for a mixed / prefill iteration (its start is not kept), 0 when idle."""
        n = self._node
        if not n.busy:
            return 0.0
        seg = n.seg
        if seg is not None:
            dt = n.sim.now - seg.start
            a, b = seg.a, seg.b
            j = 0
            if dt > 0:   # the step in progress: the first j with (j+1) steps ending after dt
                j = int(dt / a) if b <= 0 else int(max(dt / (a + b * seg.steps), 0))
                while j + 1 < seg.steps and (j + 1) * a + b * (j + 1) * j * 0.5 <= dt:
                    j += 1
            end = (j + 1) * a + b * (j + 1) * j * 0.5
            return max(end - dt, 0.0)
        if n.iter is not None:
            spec = [(k, r.done_prefill, r.full_prefill) for r, k in n.iter]
            t = n.pm.iteration(spec, n.n_dec, n.ctx_sum())
            if n.role == "P":
                t += n.pm.p_send_s * sum(1 for r, k in n.iter if k == r.remaining_prefill)
            return 0.5 * t
        return 0.0

    def step_inflation(self) -> float:
        """How much longer this node's iterations with decodes have run than decode-only steps of the same
        batches would (prefill chunks beside them): >= 1, and 1 before any."""
        n = self._node
        return n.dec_time / n.dec_base if n.dec_base > 0 else 1.0

    def inverse_output_sum(self) -> float:
        """Sum over the decode batch of 1 / (output tokens): a stall of t seconds raises request i's TPOT by
        t / output_i, so t times this sum is the batch's summed TPOT increase (in seconds per token)."""
        # inv_output = 1 / max(output, 1); added in heap order from 0.0, as builtins.sum adds floats (3.11)
        total = 0.0
        for e in self._node.dec_heap:
            total += e[2].inv_output
        return total


class ClusterView:
    """The cluster as a policy sees it: node views, the P router's choice, fabric sharing, the observed load,
    the latency model, the Eq.1 weights and (policy ``dynamic-table``) the decision table."""

    __slots__ = ("_sim", "_fabric", "_nodes", "pm", "w_ttft", "w_tpot", "table", "link_latency_s", "link_bandwidth_Bps",
                 "max_batched_tokens")

    def __init__(self, sim: Any):
        """``sim``: the engine (``engine.Simulator``); only the queries below reach it."""
        self._sim: Host = sim
        self._fabric: Fabric = sim.fabric
        self._nodes = tuple(NodeView(n) for n in sim.nodes)
        # typed: read from ``sim`` (Any) they would be Any, and Eq.1's arithmetic on them generic when compiled
        self.pm: PerfModel = sim.pm
        self.w_ttft: float = sim.sc.w_ttft
        self.w_tpot: float = sim.sc.w_tpot
        self.table = sim.table
        self.link_latency_s: float = sim.fabric.latency
        self.link_bandwidth_Bps: float = sim.fabric.bw
        self.max_batched_tokens: int = sim.sc.max_batched_tokens

    def node(self, nid: int) -> NodeView:
        return self._nodes[nid]

    def pick_p(self) -> NodeView:
        """The P node the router would pick for a PD-path request now."""
        p: Node = self._sim.pick_p()
        return self._nodes[p.nid]

    def link(self, src: int, dst: int) -> tuple[float, float]:
        """(latency s, bandwidth B/s) of one KV transfer alone from node ``src`` to node ``dst``: the
        intra-server link, or the cross-server class when they sit in two servers."""
        return self._fabric.pair(src, dst)

    def transfers_on(self, nid: int) -> int:
        """KV transfers in flight from or to node ``nid``."""
        return self._fabric.active_on(nid)

    def observed_qps(self) -> float:
        return self._sim.observed_qps()
