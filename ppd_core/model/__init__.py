"""Layer 2: the latency model (one ``LatencyModel`` protocol, a registry, today's dense roofline) and its
parameters."""
from __future__ import annotations

from .base import LATENCY_MODELS, LatencyModel, build, for_scenario
from .dense import TP_ALLREDUCE_US_PER_LAYER, PerfModel
from .interference import interference_tpot_ms
from .params import PerfParams, default_params, params_dict

__all__ = ["LATENCY_MODELS", "LatencyModel", "build", "for_scenario", "PerfModel", "TP_ALLREDUCE_US_PER_LAYER",
           "interference_tpot_ms", "PerfParams", "default_params", "params_dict"]
