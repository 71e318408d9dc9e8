"""The P-node router axis: which P node prefills a PD-path request.

``least-loaded``: the P with the fewest tokens waiting to be prefilled. ``affinity``: the measured proxy's
rule. It hashes a conversation key once per (re)keyed conversation and takes both the serving slot
(hash % n_serving) and the P (hash % n_P) from that one hash, so every turn of a conversation goes through
the same P (whose prefix cache holds its history) and P and slot are correlated as in the proxy (with
n_P = n_serving, slot i always pairs with P i). The engine draws the slot; given the slot, the hash is
uniform over the values that map to it, picked here by a fixed integer mix of the key (deterministic).
"""
from __future__ import annotations

from math import lcm
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    from .node import Node

MASK64 = (1 << 64) - 1


class PRouter:
    """A pure function of the cluster state: the engine asks it at most once per routed request. The routers
    subclass it (a concrete base, not a Protocol, so the compiled engine calls ``pick`` natively)."""

    __slots__ = ()

    def pick(self, p_nodes: Sequence["Node"], key: int = 0, slot: int = 0, n_slots: int = 1) -> "Node":
        raise NotImplementedError


class LeastLoaded(PRouter):
    """Fewest tokens waiting to be prefilled (ties: lowest index)."""

    __slots__ = ()

    def pick(self, p_nodes: Sequence["Node"], key: int = 0, slot: int = 0, n_slots: int = 1) -> "Node":
        best: "Node | None" = None
        best_load = 0
        for p in p_nodes:
            load = p.pending_prefill_tokens()
            if best is None or load < best_load:
                best, best_load = p, load
        return best  # type: ignore[return-value]  # p_nodes is never empty


def mix64(x: int) -> int:
    """splitmix64's finaliser: a fixed, well-spread 64-bit hash of an integer."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


class Affinity(PRouter):
    """The proxy's pinning: P = hash % n_P, with slot = hash % n_slots from the same hash."""

    __slots__ = ("_shape", "_span", "_residues")

    def __init__(self) -> None:
        self._shape = (0, 0)         # (n_P, n_slots) the memo below is for (a run's cluster keeps its shape)
        self._span = 1               # lcm(n_P, n_slots) // n_slots
        # key -> mix64(key) % span: a conversation keeps its key until rehashed and is routed on every turn
        # (and Eq.1 asks for its P too); mix64's 64-bit arithmetic is on arbitrary-size ints, costly
        self._residues: dict[int, int] = {}

    def pick(self, p_nodes: Sequence["Node"], key: int = 0, slot: int = 0, n_slots: int = 1) -> "Node":
        n_p = len(p_nodes)
        if self._shape != (n_p, n_slots):
            self._shape = (n_p, n_slots)
            self._span = lcm(n_p, n_slots) // n_slots
            self._residues.clear()
        r = self._residues.get(key)
        if r is None:
            r = self._residues[key] = mix64(key) % self._span
        h = slot + n_slots * r   # uniform among hashes with this slot
        return p_nodes[h % n_p]


P_ROUTERS: Mapping[str, type] = MappingProxyType({"least_loaded": LeastLoaded, "affinity": Affinity})
