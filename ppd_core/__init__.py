"""ppd_core: a fast, deterministic simulator of multi-turn PD / PPD / replica LLM serving.

    >>> import ppd_core
    >>> res = ppd_core.run(ppd_core.Scenario(layout="2P_2pD"))
    >>> res.summary["groups"]["turn2plus"]["ttft_ms"]["mean"]

No Streamlit inside; a run is a pure function of one frozen ``Scenario`` (same scenario and seed ->
identical records and summary, apart from the measured ``sim.wall_s``). The layers, bottom up (a module
imports only from its own layer or below; ``ppd_core._layers`` and tests/test_architecture.py):
config -> model -> workloads -> sim -> metrics -> analysis -> calibration -> reproduce -> cli.
This package's front door re-exports the public API.
"""
from __future__ import annotations

from . import model
from .analysis.runs import run
from .config.errors import PPDError, ScenarioError, TraceError
from .config.scenario import FIELDS, SPEC, Scenario, baselines, parse, parse_lenient
from .metrics.result import RunResult

__all__ = ["run", "RunResult", "baselines", "Scenario", "parse", "parse_lenient", "FIELDS", "SPEC",
           "PPDError", "ScenarioError", "TraceError", "model"]
