"""One measured run: simulate a scenario and turn the simulation into records and a summary.

``simulate_scenario`` takes everything as data - the conversations of a trace, the latency-model
parameters, the decision table of policy ``dynamic-table`` - and builds nothing else (no pools, no disk
cache). ``ppd_core.run`` is the front door that also builds a missing decision table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import workloads as wl
from ..config.errors import ScenarioError
from ..config.scenario import Scenario
from ..model import PerfParams, for_scenario
from ..model.base import role_models
from ..sim.engine import simulate
from . import report
from .columns import Deferred, LazyTable, frame, rows_frame

if TYPE_CHECKING:
    import pandas as pd

    from ..sim.decision_table import DecisionTable


@dataclass(frozen=True)
class RunResult:
    """One run: its scenario, its summary (a dict, computed without pandas) and its tables. ``records`` (one
    row per request, ``report.RECORD_COLUMNS``), ``nodes`` and ``spans`` (None unless recorded) are DataFrames
    built on first access: a DataFrame, or a ``columns.Deferred`` one, may be passed for each."""
    scenario: Scenario
    summary: dict
    records: pd.DataFrame = LazyTable()
    nodes: pd.DataFrame = LazyTable()
    spans: pd.DataFrame | None = LazyTable()


def simulate_scenario(sc: Scenario, trace: tuple[wl.Conversation, ...] | None = None, *,
                      record_spans: bool = False, exact: bool = False, params: PerfParams | None = None,
                      table: DecisionTable | None = None) -> RunResult:
    """Simulate one scenario. ``trace``: conversations for ``workload=trace``. ``exact``: advance decode one
    step per event (the slow oracle used by tests). ``params``: override the calibrated latency-model
    parameters. ``table``: the decision table (required for ``policy=dynamic-table``)."""
    pm = for_scenario(sc, params)
    pms = role_models(sc, params, base=pm) if sc.heterogeneous else None
    rngs = wl.streams(sc.seed)
    convs = wl.generate(sc, rngs["arrivals"], rngs["lengths"], trace)
    for role, m in (pms or {"": pm}).items():
        if m.kv_capacity_tokens <= 0:
            where = f" on the {role} nodes" if role else ""
            raise ScenarioError("model", f"{sc.model} weights ({m.model.weight_bytes / 1e9:.0f} GB) do not fit{where} "
                                         f"in tp={m.tp} x {m.gpu.memory_gb:g} GB ({m.gpu.name}) x gpu_mem_util="
                                         f"{sc.gpu_mem_util:g}; raise tp or pick a larger GPU")
    sim = simulate(sc, convs, pm, rngs, record_spans=record_spans, exact=exact, table=table, pms=pms)
    cols = report.record_columns(sim)
    spans = None if sim.spans is None else Deferred(rows_frame, (sim.spans, report.SPAN_COLUMNS))
    return RunResult(sc, report.summary(sim, cols), Deferred(frame, (cols, report.RECORD_COLUMNS)),
                     Deferred(frame, (report.node_columns(sim),)), spans)
