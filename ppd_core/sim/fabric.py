"""KV transfers from P to decode nodes.

``fair``: each node has one link of ``bandwidth`` per direction (``tp`` links in parallel for a TP node, as
each GPU ships its own KV shard). Concurrent transfers share them max-min fairly (progressive filling over
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
    __slots__ = ("req", "src", "dst", "remaining", "rate", "nbytes", "start")

    def __init__(self, req, src: int, dst: int, nbytes: float, start: float):
        self.req, self.src, self.dst = req, src, dst
        self.remaining = float(nbytes)
        self.nbytes = nbytes
        self.rate = 0.0
        self.start = start


class Fabric:
    __slots__ = ("sim", "bw", "latency", "fair", "flows", "last", "version", "bytes_moved", "transfers",
                 "busy_time", "on")

    def __init__(self, sim: "Host", bandwidth_Bps: float, latency_s: float, fair: bool):
        self.sim = sim
        self.bw = bandwidth_Bps
        self.latency = latency_s
        self.fair = fair
        self.flows: list[Flow] = []
        self.on: dict[int, int] = {}   # node id -> flows in progress from or to it (active_on)
        self.last = 0.0
        self.version = 0
        self.bytes_moved = 0
        self.transfers = 0
        self.busy_time = 0.0   # time with at least one flow in progress

    def start(self, req: "Request", src: int, dst: int, nbytes: int, now: float) -> None:
        self.transfers += 1
        self.bytes_moved += nbytes
        if not self.fair:
            duration = self.latency + nbytes / self.bw
            self.busy_time += nbytes / self.bw
            self.sim.transfer_done_at(now + duration, req, now)
            return
        self._advance(now)
        self.flows.append(Flow(req, src, dst, nbytes, now))
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
        """Max-min fair rates by progressive filling over egress (src) and ingress (dst) ports."""
        if len(self.flows) == 1:   # the common case: one transfer in flight gets the whole link
            self.flows[0].rate = self.bw
            return
        unfixed = list(self.flows)
        cap: dict[tuple[str, int], float] = {}
        for f in unfixed:
            cap[("o", f.src)] = self.bw
            cap[("i", f.dst)] = self.bw
        while unfixed:
            count: dict[tuple[str, int], int] = {}
            for f in unfixed:
                count[("o", f.src)] = count.get(("o", f.src), 0) + 1
                count[("i", f.dst)] = count.get(("i", f.dst), 0) + 1
            port = min(count, key=lambda p: (cap[p] / count[p], p))
            share = cap[port] / count[port]
            rest = []
            for f in unfixed:
                if ("o", f.src) == port or ("i", f.dst) == port:
                    f.rate = share
                    cap[("o", f.src)] -= share
                    cap[("i", f.dst)] -= share
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
            self.sim.transfer_done_at(now + self.latency, f.req, f.start)
        self._reschedule(now)

    def active_on(self, nid: int) -> int:
        return self.on.get(nid, 0)
