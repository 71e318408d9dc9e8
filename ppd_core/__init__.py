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

from .config.lazy import lazy_exports

# each name is imported from its module on first use: `import ppd_core` alone loads neither numpy nor the
# simulator, and `python -m ppd_core CMD` only what CMD needs (issue #13)
__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".analysis.runs": ("run",),
    ".metrics.result": ("RunResult",),
    ".config.scenario": ("baselines", "Scenario", "parse", "parse_lenient", "FIELDS", "SPEC"),
    ".config.errors": ("PPDError", "ScenarioError", "TraceError"),
    ".model": ("model",),
})
