"""Layer 2: the latency model (one ``LatencyModel`` protocol, a registry with the dense and MoE roofline
models), the step law behind them (interference, MoE, TP, PD path), its parameters and the extrapolation
labels."""
from __future__ import annotations

from ..config.accel import extend
from ..config.lazy import lazy_exports

extend(__name__, __path__)    # the compiled build's modules first, when it is used (config/accel.py)

# imported on first use: a run needs neither the micro-benchmark drivers nor the step law (issue #13)
__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".base": ("LATENCY_MODELS", "LatencyModel", "build", "for_scenario", "kind_for"),
    ".dense": ("PerfModel",),
    ".moe": ("MoEPerfModel",),
    ".checks": ("PhysicsInputError",),
    ".extrapolation": ("extrapolation_notes", "is_extrapolated"),
    ".microbench": ("interference_tpot_ms",),
    ".params": ("HARDWARE_SCALED", "HOST_SOFTWARE", "PerfParams", "default_params", "params_dict"),
})
