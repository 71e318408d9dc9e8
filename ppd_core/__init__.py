"""ppd_core: a fast, deterministic simulator of multi-turn PD / PPD / replica LLM serving.

    >>> import ppd_core
    >>> res = ppd_core.run(ppd_core.Scenario(layout="2P_2pD"))
    >>> res.summary["groups"]["turn2plus"]["ttft_ms"]["mean"]

No Streamlit inside; a run is a pure function of one frozen ``Scenario`` (same scenario and seed ->
identical records and summary, apart from the measured ``sim.wall_s``).
"""
from __future__ import annotations

from .api import RunResult, baselines, run
from .errors import PPDError, ScenarioError, TraceError
from .scenario import FIELDS, SPEC, Scenario, parse, parse_lenient
from . import perf

__all__ = ["run", "RunResult", "baselines", "Scenario", "parse", "parse_lenient", "FIELDS", "SPEC",
           "PPDError", "ScenarioError", "TraceError", "perf"]
