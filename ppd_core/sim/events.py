"""The event kinds of the simulator's heap and what each carries.

A heap entry is the plain tuple ``(time, seq, kind, a, b)`` (tuples keep the hot loop fast); ``seq`` breaks
ties in insertion order, so simultaneous events run in the order they were scheduled. ``PAYLOAD`` names
``a`` and ``b`` for every kind. Nodes and the fabric schedule through the ``Host`` methods below, never
with bare integers.
"""
from __future__ import annotations

from enum import IntEnum
from types import MappingProxyType
from typing import Any, NamedTuple


class EventKind(IntEnum):
    ARRIVAL = 0        # a conversation arrives at the client
    AT_NODE = 1        # a request reaches a node's queue after its HTTP hop
    NODE_WAKE = 2      # a node's iteration or decode segment ends (if its version still matches)
    LINK_WAKE = 3      # the fair-shared fabric's next flow completes (if its version still matches)
    XFER_DONE = 4      # a KV transfer P -> D has fully arrived
    TIMEOUT = 5        # a request's timeout expires
    SEND = 6           # the client sends a Turn 2+ request (after the think time)
    HANDOFF = 7        # the proxy's PD request reached D: the KV transfer starts


class Payload(NamedTuple):
    a: str
    b: str | None


PAYLOAD = MappingProxyType({
    EventKind.ARRIVAL: Payload("conversation state", None),
    EventKind.AT_NODE: Payload("node", "request"),
    EventKind.NODE_WAKE: Payload("node", "node version when scheduled"),
    EventKind.LINK_WAKE: Payload("fabric", "fabric version when scheduled"),
    EventKind.XFER_DONE: Payload("request", "transfer start time"),
    EventKind.TIMEOUT: Payload("request", None),
    EventKind.SEND: Payload("request", None),
    EventKind.HANDOFF: Payload("request", None),
})


class Host:
    """What a node and the fabric may ask of the engine that owns them: schedule their own wake-ups and
    report results (``engine.Simulator`` is one, through ``client.Client``). A concrete base class rather
    than a Protocol so the compiled engine reaches these attributes and methods natively (mypyc goes through
    Python's generic attribute lookup for a Protocol); it lives here, below node.py and fabric.py, so typing
    them with it makes no import cycle. The methods are the engine's; these bodies only declare them."""

    spans: list | None          # recorded iteration spans (None: not recording)
    now: float                  # the simulated clock
    retok: float                # share of an answer the next turn's prompt still matches

    # the scheduler side (nodes and the fabric)
    def wake_node(self, t: float, node: Any, version: int) -> None:
        raise NotImplementedError

    def wake_fabric(self, t: float, fabric: Any, version: int) -> None:
        raise NotImplementedError

    def transfer_done_at(self, t: float, req: Any, start: float) -> None:
        raise NotImplementedError

    # the engine's side of a node's life cycle
    def span(self, node: Any, start: float, end: float, kind: str, chunks: Any) -> None:
        raise NotImplementedError

    def reject(self, req: Any, t: float, node: Any) -> None:
        raise NotImplementedError

    def decode_reserved(self, req: Any, t: float) -> None:
        raise NotImplementedError

    def prefill_done(self, req: Any, t: float, p: Any) -> None:
        raise NotImplementedError

    def first_token(self, req: Any, t: float) -> None:
        raise NotImplementedError

    def finished(self, req: Any, t: float) -> None:
        raise NotImplementedError

    # what the Turn 2+ policy's view asks (view.ClusterView)
    def pick_p(self) -> Any:
        raise NotImplementedError

    def observed_qps(self) -> float:
        raise NotImplementedError
