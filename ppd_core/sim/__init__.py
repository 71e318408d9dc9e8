"""Layer 4: the discrete-event simulator - events, the engine (client + proxy), nodes with their KV cache, the
P router, the KV fabric, requests and the Turn 2+ policies."""
from __future__ import annotations

from .decision_table import DecisionTable
from .engine import Simulator, simulate
from .events import EventKind
from .kvcache import KV_CACHES, KVCache
from .policies import POLICIES, Policy
from .router import P_ROUTERS, PRouter
from .view import ClusterView, NodeView

__all__ = ["DecisionTable", "Simulator", "simulate", "EventKind", "KV_CACHES", "KVCache", "POLICIES", "Policy",
           "P_ROUTERS", "PRouter", "ClusterView", "NodeView"]
