"""Layer 2: the latency model (one ``LatencyModel`` protocol, a registry with the dense and MoE roofline
models), the step law behind them (interference, MoE, TP, PD path), its parameters and the extrapolation
labels."""
from __future__ import annotations

from .base import LATENCY_MODELS, LatencyModel, build, for_scenario, kind_for
from .checks import PhysicsInputError
from .dense import PerfModel
from .extrapolation import extrapolation_notes, is_extrapolated
from .microbench import interference_tpot_ms
from .moe import MoEPerfModel
from .params import HARDWARE_SCALED, HOST_SOFTWARE, PerfParams, default_params, params_dict

__all__ = ["LATENCY_MODELS", "LatencyModel", "build", "for_scenario", "kind_for", "PerfModel", "MoEPerfModel",
           "PhysicsInputError", "extrapolation_notes", "is_extrapolated", "interference_tpot_ms",
           "HARDWARE_SCALED", "HOST_SOFTWARE", "PerfParams", "default_params", "params_dict"]
