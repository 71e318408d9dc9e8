"""The event engine: the event loop, the proxy (routing a request to P or its decode node) and the PD path,
with the client (`client.py`), nodes and the KV fabric on one heap of timed events.

A run is a pure function of the scenario: everything random comes from numpy streams seeded by
``scenario.seed``, ties between simultaneous events are broken by insertion order, and no state outlives
the ``Simulator`` object.
"""
from __future__ import annotations

from heapq import heappop, heappush
from collections import deque
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

from ..config.catalog import links
from ..config.errors import ScenarioError
from ..config.layout import parse_layout
from ..workloads.conversation import Conversation
from .events import EventKind
from .fabric import Fabric
from .kvcache import BLOCK
from .node import Node
from .estimate import estimate
from .policies import POLICIES
from .request import LOCAL, OK, PD, REJECTED, REPLICA, TIMEOUT, Request
from .router import P_ROUTERS, PRouter
from .client import Client, ConvState
from .view import ClusterView

if TYPE_CHECKING:
    from ..model.dense import PerfModel

MAX_EVENTS: Final = 20_000_000   # hard stop; anything unfinished then is reported as status "unfinished"

# Final: mypyc keeps them in C statics (no module-dict lookup per comparison in the event loop)
ARRIVAL: Final = EventKind.ARRIVAL
AT_NODE: Final = EventKind.AT_NODE
NODE_WAKE: Final = EventKind.NODE_WAKE
LINK_WAKE: Final = EventKind.LINK_WAKE
XFER_DONE: Final = EventKind.XFER_DONE
TIMEOUT_EV: Final = EventKind.TIMEOUT
SEND: Final = EventKind.SEND
HANDOFF: Final = EventKind.HANDOFF


class Simulator(Client):
    """One run's state: the client, the router, the nodes and the KV fabric on one heap of timed events.
    ``table``: the decision table of policy ``dynamic-table`` (built by ``ppd_core.analysis.table``)."""

    wall_s: float   # set by simulate()

    def __init__(self, sc, convs: tuple[Conversation, ...], pm: "PerfModel", rngs: dict, *, record_spans: bool = False,
                 exact: bool = False, table=None, router: PRouter | None = None,
                 pms: "dict[str, PerfModel] | None" = None):
        self.sc = sc
        self.pm = pm            # the fleet's model (gpu x tp); a heterogeneous fleet's nodes carry their own (pms)
        self.convs = [ConvState(c) for c in convs]
        self.by_id = {cs.conv.cid: cs for cs in self.convs}
        self.rng_route = rngs["routing"]
        self.rng_policy = rngs["policy"]
        if sc.policy == "dynamic-table" and table is None:
            raise ScenarioError("policy", "'dynamic-table' needs its decision table: run it through ppd_core.run "
                                          "(which builds the table) or pass table=")
        self.table = table
        self.retok = pm.retok(sc.workload)   # share of an answer the next turn's prompt still matches
        self.policy = POLICIES[sc.policy]
        self.router: PRouter = P_ROUTERS[sc.p_router]() if router is None else router
        lay = parse_layout(sc.layout)
        counters: dict[str, int] = {}
        self.nodes: list[Node] = []
        for role, hw in zip(lay.roles(), sc.node_roles()):   # hw: the node's hardware role (R@P: an R on P's GPUs)
            i = counters.get(role, 0)
            counters[role] = i + 1
            self.nodes.append(Node(len(self.nodes), role, f"{role}{i}", self, pms[hw] if pms else pm,
                                   sc.max_batched_tokens,
                                   max_seqs=sc.max_num_seqs, exact=exact))
        self.p_nodes = [n for n in self.nodes if n.role == "P"]
        self.serving = [n for n in self.nodes if n.role != "P"]
        self.slot_of = {n.nid: i for i, n in enumerate(self.serving)}   # the proxy's serving slot of a node
        self.p_key: dict[int, int] = {}      # conversation -> the proxy's routing key (rekeyed when rehashed)
        self._route = (0, 0)                 # (key, slot) of the request being routed
        self._picked: Node | None = None     # the router's answer for _route (asked by Eq.1, then by _send)
        tp = min(sc.tp_for("P"), sc.tp_for("D"))   # a node's link scales with its GPUs; the narrower end limits
        if sc.gpus_per_server and len(set(sc.servers())) > 1:    # nodes in several servers: NICs between them
            cross = links()[sc.cross_link]
            self.fabric = Fabric(self, sc.bandwidth_gbps * 1e9 * tp, sc.link_latency_us * 1e-6,
                                 sc.link_sharing == "fair", cross.bandwidth_gbps * 1e9 * tp,
                                 cross.latency_us * 1e-6, sc.servers())
        else:
            self.fabric = Fabric(self, sc.bandwidth_gbps * 1e9 * tp, sc.link_latency_us * 1e-6,
                                 sc.link_sharing == "fair")
        # entries (t, seq, kind, a, b), typed as plain objects: the compiled engine then stores and compares
        # the tuples as they are (typed, it unboxes them into C structs and boxes them anew to compare)
        self.heap: list[Any] = []
        # timeouts are mostly pushed in time order and rarely fire: they wait in a FIFO beside the heap (kept
        # sorted; one out of order goes to the heap) so the heap stays small; run() merges the two by (t, seq)
        self.timeouts: deque[Any] = deque()
        self._n_seq = 0                      # the next seq: simultaneous events run in insertion order
        self.now = 0.0
        self.events = 0
        self.requests: list[Request] = []
        self.active = 0
        self.cap = sc.client_concurrency if sc.client == "benchmark" else 0   # client connection slots (0: none)
        self.queue: deque[Request] = deque()
        self.arrived = 0
        self.open_convs = len(self.convs)   # the run ends when every conversation has ended
        self.spans: list | None = [] if record_spans else None
        self.view = ClusterView(self)        # what the Turn 2+ policy sees
        self.node_views = tuple(self.view.node(n.nid) for n in self.nodes)

    # ---- event plumbing --------------------------------------------------------------------------------
    def push(self, t: float, kind: EventKind, a, b=None) -> None:
        seq = self._n_seq
        self._n_seq = seq + 1
        heappush(self.heap, (t, seq, kind, a, b))

    def push_timeout(self, t: float, req: Request) -> None:
        seq = self._n_seq
        self._n_seq = seq + 1
        e: Any = (t, seq, TIMEOUT_EV, req, None)
        tq = self.timeouts
        if not tq or tq[-1] < e:
            tq.append(e)
        else:
            heappush(self.heap, e)

    # the scheduler side of events.Host (nodes and the fabric)
    def wake_node(self, t: float, node: Node, version: int) -> None:
        self.push(t, NODE_WAKE, node, version)

    def wake_fabric(self, t: float, fabric: Fabric, version: int) -> None:
        self.push(t, LINK_WAKE, fabric, version)

    def transfer_done_at(self, t: float, req: Request, start: float) -> None:
        self.push(t, XFER_DONE, req, start)

    def span(self, node: Node, start: float, end: float, kind: str, chunks) -> None:
        if self.spans is None:
            return
        if chunks is not None:
            convs = sorted({r.conv for r, _ in chunks})
        else:
            convs = sorted({e[2].conv for e in node.dec_heap})
        self.spans.append((node.name, node.role, start, end, kind, " ".join(map(str, convs))))

    def run(self) -> None:
        # every arrival is known up front: only the next one waits in the heap (keeping it ~30x smaller, every
        # push and pop cheaper); each has its seq from the start, so the events run in the same (t, seq) order
        n_arrivals, next_arrival, seq0 = len(self.convs), 1, self._n_seq
        arrivals: list[Any] = sorted([(cs.conv.arrival_s, seq0 + i, ARRIVAL, cs, None)
                                      for i, cs in enumerate(self.convs)])
        self._n_seq = seq0 + n_arrivals
        heap, tq = self.heap, self.timeouts
        if arrivals:
            heappush(heap, arrivals[0])
        pop, popleft = heappop, tq.popleft
        events = self.events
        while self.open_convs:
            if tq and (not heap or tq[0] < heap[0]):
                e: tuple[float, int, EventKind, Any, Any] = popleft()
            elif heap:
                e = pop(heap)
            else:
                break
            t, seq, kind, a, b = e
            self.now = t
            events += 1
            if events > MAX_EVENTS:
                break
            # the payloads are typed per kind (events.PAYLOAD) so the compiled engine calls them natively
            if kind is NODE_WAKE:
                node: Node = a
                version: int = b
                if version == node.version and node.busy:   # a stale wake-up (the node re-planned) is dropped
                    node.wake(t, version)
            elif kind is AT_NODE:
                req: Request = b
                if not req.aborted:
                    at: Node = a
                    at.enqueue(req, t)
            elif kind is TIMEOUT_EV:
                req = a
                if req.status != OK and not req.aborted:
                    self._timeout(req, t)
            elif kind is SEND:
                req = a
                if not req.aborted:
                    self._send(req, t)
            elif kind is LINK_WAKE:
                fabric: Fabric = a
                fabric.wake(t, b)
            elif kind is XFER_DONE:
                self._transfer_done(a, b, t)
            elif kind is HANDOFF:
                self._handoff(a, t)
            elif kind is ARRIVAL:
                if next_arrival < n_arrivals:
                    heappush(heap, arrivals[next_arrival])
                    next_arrival += 1
                self._arrival(a, t)
        self.events = events

    # ---- router ------------------------------------------------------------------------------------------
    def pick_p(self) -> Node:
        """The P node for the PD-path request being routed (the router's choice, scenario key p_router)."""
        if self._picked is None:   # a router is a pure function of the state, which _send does not change
            key, slot = self._route
            self._picked = self.router.pick(self.p_nodes, key, slot, len(self.serving))
        return self._picked

    def observed_qps(self) -> float:
        return self.arrived / self.now if self.now > 0 else self.sc.qps

    def _send(self, req: Request, t: float) -> None:
        req.sent = t                     # leaves the client: TTFT counts from here
        cs = self.by_id[req.conv]
        fresh = req.turn == 1 or (self.sc.rehash_frac > 0 and self.rng_policy.random() < self.sc.rehash_frac)
        if fresh or cs.node is None:
            cs.node = self.serving[int(self.rng_route.integers(len(self.serving)))]
            self.p_key[req.conv] = (req.conv << 7) | req.turn   # a new proxy key: hashed anew
        node = cs.node
        self._route = (self.p_key[req.conv], self.slot_of[node.nid])
        self._picked = None
        req.decode_node = node.nid
        if node.role == "R":
            req.path = REPLICA
        elif fresh:
            req.path = PD
        elif node.role == "pD":
            req.path = LOCAL
        else:   # Turn 2+ on D: Eq.1's estimates are kept on the request whatever the policy
            nv = self.node_views[node.nid]
            req.est = estimate(self.view, req, nv)
            req.path = LOCAL if self.policy(self.view, req, nv) else PD
        if req.path == PD:
            p = self.pick_p()
            req.prefill_node = p.nid
            self.push(t + p.pm.hop(req.prompt, p.active_seqs()), AT_NODE, p, req)
        else:
            self.push(t + node.pm.hop(req.prompt, node.active_seqs()), AT_NODE, node, req)

    # ---- PD path -----------------------------------------------------------------------------------------
    def prefill_done(self, req: Request, t: float, p: Node) -> None:
        req.prefill_done_at = t
        if req.aborted:
            p.release(req)
            return
        # D reserves KV for the request first (it may have to wait for memory), then the PD path runs in
        # series as in the measured system: P's 1-token response returns and the proxy hands the request to
        # D (pd_handoff), and D loads the KV inside its next step (P2pNccl's blocking per-layer receive)
        self.nodes[req.decode_node].enqueue(req, t)

    def decode_reserved(self, req: Request, t: float) -> None:
        """Called by D once it holds a KV reservation for a PD-path request."""
        d = self.nodes[req.decode_node]
        self.push(t + d.pm.pd_handoff(req.prompt, d.active_seqs()), HANDOFF, req)

    def _handoff(self, req: Request, t: float) -> None:
        """The proxy's request reached D: the KV moves P -> D now; D's batch pauses while it flows in."""
        p, d = self.nodes[req.prefill_node], self.nodes[req.decode_node]
        if req.aborted:
            for node in (p, d):
                node.release(req)
                node.try_admit(t)
            return
        req.kv_bytes = req.prompt * self.pm.kv_bytes_per_token
        if self.pm.p.kv_recv_blocks_decode >= 0.5:
            req.blocks_decode = True
            d.block_for_transfer(t)
        self.fabric.start(req, p.nid, d.nid, req.kv_bytes, t)

    def _transfer_done(self, req: Request, start: float, t: float) -> None:
        req.transfer_done_at = t
        p = self.nodes[req.prefill_node]
        p.release(req)
        p.cache_put(req.conv, (req.prompt // BLOCK) * BLOCK)
        p.try_admit(t)   # the freed KV may let P's waiting requests in
        d = self.nodes[req.decode_node]
        if self.spans is not None:
            self.spans.append((f"{p.name}->{d.name}", "link", start, t, "transfer", str(req.conv)))
        if req.blocks_decode:
            d.transfer_received()
        if req.aborted:
            d.release(req)
            d.try_admit(t)
            d.kick(t)
        else:
            d.ready_after_transfer(req, t)   # kicks D: the last prompt token is computed in its next step

    # ---- failures ----------------------------------------------------------------------------------------
    def reject(self, req: Request, t: float, node: Node) -> None:
        """The request's KV can never fit on ``node``: it fails at once, and so does its conversation."""
        if req.status != REJECTED:
            req.status = REJECTED
            req.aborted = True
            req.finish = t
            for nid in list(req.reserved_on):
                other = self.nodes[nid]
                other.release(req)
                if other is not node:
                    other.try_admit(t)   # e.g. P's KV of a request D refuses: P's queue may move on
            self._end_conversation(req.conv, t)

    def _timeout(self, req: Request, t: float) -> None:
        if req.status == OK or req.aborted:
            return
        req.status = TIMEOUT
        req.aborted = True
        req.finish = t
        for nid in (req.prefill_node, req.decode_node):
            if nid >= 0:
                self.nodes[nid].request_aborted(t)
        if req.path == PD and req.prefill_node in req.reserved_on and req.decode_node not in req.reserved_on \
                and req.prefill_done_at >= 0:
            # prefilled on P and waiting in D's queue for a KV reservation: D will drop it from the queue
            # without a reservation to release, so P's copy of the KV is freed here
            p = self.nodes[req.prefill_node]
            p.release(req)
            p.try_admit(t)
        # a Turn 1 still waiting for a client connection (never sent) holds no slot to give back
        self._end_conversation(req.conv, t, holds_slot=bool(req.path) or req.turn > 1)


def simulate(sc, convs, pm, rngs, *, record_spans=False, exact=False, table=None, pms=None) -> Simulator:
    sim = Simulator(sc, convs, pm, rngs, record_spans=record_spans, exact=exact, table=table, pms=pms)
    t0 = perf_counter()
    sim.run()
    sim.wall_s = perf_counter() - t0
    return sim
