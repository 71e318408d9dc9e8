"""The library's front door: ``run(scenario) -> RunResult`` and the baselines of a scenario."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from . import metrics, perf
from . import workload as wl
from .engine import simulate
from .errors import ScenarioError
from .layout import pd_layout, replica_layout
from .scenario import Scenario


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    summary: dict
    records: pd.DataFrame
    nodes: pd.DataFrame
    spans: pd.DataFrame | None


def run(sc: Scenario, trace: tuple[wl.Conversation, ...] | None = None, *, record_spans: bool = False,
        exact: bool = False, params: perf.PerfParams | None = None) -> RunResult:
    """Simulate one scenario. ``trace``: conversations for ``workload=trace``. ``exact``: advance decode one
    step per event (the slow oracle used by tests). ``params``: override the calibrated performance model."""
    pm = perf.for_scenario(sc, params)
    longest = 0
    rngs = wl.streams(sc.seed)
    convs = wl.generate(sc, rngs["arrivals"], rngs["lengths"], trace)
    if pm.kv_capacity_tokens <= 0:
        raise ScenarioError("model", f"{sc.model} weights ({pm.model.weight_bytes / 1e9:.0f} GB) do not fit in "
                                     f"tp={sc.tp} x {pm.gpu.memory_gb:g} GB x gpu_mem_util={sc.gpu_mem_util:g}; "
                                     "raise tp or pick a larger GPU")
    for c in convs:
        longest = max(longest, c.prompt_len(len(c.turns) - 1) + c.turns[-1].output)
    table = None
    if sc.policy == "dynamic-table":
        from .table import table_for
        table = table_for(sc, params)
    sim = simulate(sc, convs, pm, rngs, record_spans=record_spans, exact=exact, table=table)
    df = metrics.records(sim)
    return RunResult(sc, metrics.summary(sim, df), df, metrics.node_table(sim), metrics.spans(sim))


def baselines(sc: Scenario) -> dict[str, Scenario]:
    """The scenario itself ("PPD"), the same GPUs as classic PD (pD -> D, x=0) and as replicas."""
    lay = sc.layout_obj
    return {"PPD": sc,
            "PD": sc.with_(layout=pd_layout(lay).text, policy="pd"),
            "Replica": sc.with_(layout=replica_layout(lay).text)}
