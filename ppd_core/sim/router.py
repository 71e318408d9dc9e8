"""The P-node router axis: which P node prefills a PD-path request."""
from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from .node import Node


class PRouter(Protocol):
    def pick(self, p_nodes: Sequence["Node"]) -> "Node": ...


class LeastLoaded:
    """Fewest tokens waiting to be prefilled (ties: lowest index)."""

    __slots__ = ()

    def pick(self, p_nodes: Sequence["Node"]) -> "Node":
        best, best_load = None, None
        for p in p_nodes:
            load = p.pending_prefill_tokens()
            if best is None or load < best_load:
                best, best_load = p, load
        return best


P_ROUTERS: Mapping[str, type] = MappingProxyType({"least-loaded": LeastLoaded})
