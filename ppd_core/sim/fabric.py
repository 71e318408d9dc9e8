"""KV transfers from P to decode nodes.

``fair``: each node has one link of ``bandwidth`` per direction (``tp`` links in parallel for a TP node, as
each GPU ships its own KV shard) inside its server, and one NIC port of the cross-server class per direction
(``gpus_per_server``: nodes fill servers in layout order; a P and a D in two servers talk over
``cross_link``). A transfer uses the pair's class: the intra-server link or the NIC ports at both ends. Concurrent transfers share them max-min fairly (progressive filling over
every sender's egress and every receiver's ingress), recomputed whenever a transfer starts or ends.
``independent``: every transfer gets the full bandwidth, as the paper's Eq.2 delay model assumes.
Either way a transfer of N bytes alone takes ``latency + N / bandwidth``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .events import Host
    from .request import Request

EPS_BYTES: Final = 1e-3


class Flow:
    __slots__ = ("req", "src", "dst", "remaining", "rate", "nbytes", "start", "cross")

    def __init__(self, req, src: int, dst: int, nbytes: float, start: float, cross: bool = False):
        self.req, self.src, self.dst = req, src, dst
        self.cross = cross
        self.remaining = float(nbytes)
        self.nbytes = nbytes
        self.rate = 0.0
        self.start = start


class Fabric:
    __slots__ = ("sim", "bw", "latency", "fair", "flows", "last", "version", "bytes_moved", "transfers",
                 "busy_time", "on", "cross_bw", "cross_latency", "server")

    def __init__(self, sim: "Host", bandwidth_Bps: float, latency_s: float, fair: bool,
                 cross_bandwidth_Bps: float = 0.0, cross_latency_s: float = 0.0,
                 server: tuple[int, ...] = ()):
        """``bandwidth_Bps`` / ``latency_s``: a transfer inside one server; ``cross_*``: between two servers;
        ``server``: the server index of each node id (empty: every node in one server)."""
        self.sim = sim
        self.bw = bandwidth_Bps
        self.latency = latency_s
        self.fair = fair
        self.cross_bw = cross_bandwidth_Bps
        self.cross_latency = cross_latency_s
        self.server = server
        self.flows: list[Flow] = []
        self.on: dict[int, int] = {}   # node id -> flows in progress from or to it (active_on)
        self.last = 0.0
        self.version = 0
        self.bytes_moved = 0
        self.transfers = 0
        self.busy_time = 0.0   # time with at least one flow in progress

    def crosses(self, src: int, dst: int) -> bool:
        """True when nodes ``src`` and ``dst`` sit in two servers (the transfer goes over the NICs)."""
        server = self.server
        return len(server) > 0 and server[src] != server[dst]

    def pair(self, src: int, dst: int) -> tuple[float, float]:
        """(latency s, bandwidth B/s) of one transfer alone from ``src`` to ``dst``."""
        if self.crosses(src, dst):
            return self.cross_latency, self.cross_bw
        return self.latency, self.bw

    def start(self, req: "Request", src: int, dst: int, nbytes: int, now: float) -> None:
        self.transfers += 1
        self.bytes_moved += nbytes
        cross = self.crosses(src, dst)
        if not self.fair:
            lat, bw = self.pair(src, dst)
            self.busy_time += nbytes / bw
            self.sim.transfer_done_at(now + (lat + nbytes / bw), req, now)
            return
        self._advance(now)
        self.flows.append(Flow(req, src, dst, nbytes, now, cross))
        on = self.on
        on[src] = on.get(src, 0) + 1
        if dst != src:
            on[dst] = on.get(dst, 0) + 1
        self._reschedule(now)

    def _advance(self, now: float) -> None:
        dt = now - self.last
        if dt > 0 and self.flows:
            self.busy_time += dt
            for f in self.flows:
                f.remaining -= f.rate * dt
        self.last = now

    def _rates(self) -> None:
        """Max-min fair rates by progressive filling over egress (src) and ingress (dst) ports: a node's
        intra-server link ports ("o", "i") and its NIC ports ("O", "I") are separate."""
        if len(self.flows) == 1:   # the common case: one transfer in flight gets the whole link
            f0 = self.flows[0]
            f0.rate = self.cross_bw if f0.cross else self.bw
            return
        unfixed = list(self.flows)
        cap: dict[tuple[str, int], float] = {}
        for f in unfixed:
            if f.cross:
                cap[("O", f.src)] = self.cross_bw
                cap[("I", f.dst)] = self.cross_bw
            else:
                cap[("o", f.src)] = self.bw
                cap[("i", f.dst)] = self.bw
        while unfixed:
            count: dict[tuple[str, int], int] = {}
            for f in unfixed:
                out_p, in_p = (("O", f.src), ("I", f.dst)) if f.cross else (("o", f.src), ("i", f.dst))
                count[out_p] = count.get(out_p, 0) + 1
                count[in_p] = count.get(in_p, 0) + 1
            port = min(count, key=lambda p: (cap[p] / count[p], p))
            share = cap[port] / count[port]
            rest = []
            for f in unfixed:
                out_p, in_p = (("O", f.src), ("I", f.dst)) if f.cross else (("o", f.src), ("i", f.dst))
                if out_p == port or in_p == port:
                    f.rate = share
                    cap[out_p] -= share
                    cap[in_p] -= share
                else:
                    rest.append(f)
            unfixed = rest

    def _reschedule(self, now: float) -> None:
        self.version += 1
        if not self.flows:
            return
        self._rates()
        flows = self.flows
        t = flows[0].remaining / flows[0].rate if len(flows) == 1 else min(f.remaining / f.rate for f in flows)
        self.sim.wake_fabric(now + max(t, 0.0), self, self.version)

    def wake(self, now: float, version: int) -> None:
        if version != self.version:
            return
        self._advance(now)
        done = [f for f in self.flows if f.remaining <= EPS_BYTES + 1e-9 * f.nbytes]
        if not done:   # floating-point: finish the closest one
            done = [min(self.flows, key=lambda f: f.remaining / f.rate)]
        for f in done:
            self.flows.remove(f)
            self.on[f.src] -= 1
            if f.dst != f.src:
                self.on[f.dst] -= 1
            self.sim.transfer_done_at(now + (self.cross_latency if f.cross else self.latency), f.req, f.start)
        self._reschedule(now)

    def active_on(self, nid: int) -> int:
        return self.on.get(nid, 0)
