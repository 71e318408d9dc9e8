"""The import rule of ppd_core, written down once (checked by tests/test_architecture.py).

Layers, bottom up. A module may import from its own layer and from the layers below it, never from a layer
above; there are no import cycles between modules (function-level imports count). ``ppd_core/__init__.py``
(the public front door), ``__main__.py`` and this file stand outside the layers. ppd_core never imports
Streamlit or Plotly (``FORBIDDEN``).
"""
from __future__ import annotations

LAYERS: tuple[str, ...] = (
    "config",        # errors, file locations, catalogs (GPUs, links, models, workload names), layout, Scenario
    "model",         # the latency model (LatencyModel protocol, registry, dense roofline) and its parameters
    "workloads",     # conversations: synthetic cells, chat-dataset models, imported traces
    "sim",           # the discrete-event simulator: events, engine, nodes, KV cache, router, fabric, policies
    "metrics",       # records and summary of one run; simulate_scenario
    "analysis",      # many runs: grids, sweep cache and executors, worker pool, decision tables, advisor
    "calibration",   # measured data, validation, calibration
    "reproduce",     # the paper's figures and tables
    "cli",           # the command line
)
OUTSIDE: tuple[str, ...] = ("__init__", "__main__", "_layers")
FORBIDDEN: tuple[str, ...] = ("streamlit", "plotly")
