"""The Turn 2+ policy axis: one interface, a small immutable registry.

A policy answers one question for a Turn 2+ request whose conversation lives on a D node: serve it
locally (append-prefill on D, no transfer: x=1) or through P (re-prefill + KV transfer: x=0)?
pD nodes always serve Turn 2+ locally and replicas serve everything; Turn 1 always takes the PD path.
A policy sees the cluster through a read-only ``ClusterView`` and the D node through a ``NodeView``.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping, Protocol

from .estimate import estimate

if TYPE_CHECKING:
    from .request import Request
    from .view import ClusterView, NodeView


class Policy(Protocol):
    def __call__(self, view: "ClusterView", req: "Request", node: "NodeView") -> bool: ...   # True -> local


def always_pd(view: "ClusterView", req: "Request", node: "NodeView") -> bool:
    return False


def always_local(view: "ClusterView", req: "Request", node: "NodeView") -> bool:
    return True


def score(view: "ClusterView", req: "Request", d: "NodeView") -> float:
    """Eq.1: S = w_ttft * dTTFT - w_tpot * dTPOT, both relative (``estimate``); S > 0 serves the request
    locally. The engine stores the estimates on the request before asking the policy (``req.est``)."""
    e = req.est if req.est is not None else estimate(view, req, d)
    return e["score"]


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
__all__ = ["Policy", "POLICIES", "estimate", "score"]
