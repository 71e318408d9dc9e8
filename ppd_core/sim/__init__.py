"""Layer 4: the discrete-event simulator - events, the engine (client + proxy), nodes with their KV cache, the
P router, the KV fabric, requests and the Turn 2+ policies."""
from __future__ import annotations

from ..config.accel import extend
from ..config.lazy import lazy_exports

extend(__name__, __path__)    # the compiled build's modules first, when it is used (config/accel.py)

# imported on first use: only policy=dynamic-table needs the decision table (issue #13)
__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".decision_table": ("DecisionTable",),
    ".engine": ("Simulator", "simulate"),
    ".events": ("EventKind",),
    ".kvcache": ("KV_CACHES", "KVCache"),
    ".policies": ("POLICIES", "Policy"),
    ".router": ("P_ROUTERS", "PRouter"),
    ".view": ("ClusterView", "NodeView"),
})
