"""The event kinds of the simulator's heap and what each carries.

A heap entry is the plain tuple ``(time, seq, kind, a, b)`` (tuples keep the hot loop fast); ``seq`` breaks
ties in insertion order, so simultaneous events run in the order they were scheduled. ``PAYLOAD`` names
``a`` and ``b`` for every kind. Nodes and the fabric schedule through the ``Scheduler`` methods below, never
with bare integers.
"""
from __future__ import annotations

from enum import IntEnum
from types import MappingProxyType
from typing import NamedTuple, Protocol


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


class Scheduler(Protocol):
    """What a node and the fabric may ask of the engine: schedule their own wake-ups and report results."""

    def wake_node(self, t: float, node, version: int) -> None: ...
    def wake_fabric(self, t: float, fabric, version: int) -> None: ...
    def transfer_done_at(self, t: float, req, start: float) -> None: ...


class NodeHost(Scheduler, Protocol):
    """What a node reports to the engine that owns it (the engine's side of the node's life cycle)."""

    spans: list | None          # recorded iteration spans (None: not recording)
    now: float                  # the simulated clock
    retok: float                # share of an answer the next turn's prompt still matches

    def span(self, node, start: float, end: float, kind: str, chunks) -> None: ...
    def reject(self, req, t: float, node) -> None: ...
    def decode_reserved(self, req, t: float) -> None: ...
    def prefill_done(self, req, t: float, p) -> None: ...
    def first_token(self, req, t: float) -> None: ...
    def finished(self, req, t: float) -> None: ...
