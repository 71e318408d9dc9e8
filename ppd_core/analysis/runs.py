"""``ppd_core.run``: one scenario, with the decision table of ``policy=dynamic-table`` built here (through the
sweep cache) and handed to the simulator as data."""
from __future__ import annotations

from ..config.scenario import Scenario
from ..metrics.result import RunResult, simulate_scenario
from ..model.params import PerfParams
from ..workloads.conversation import Conversation


def run(sc: Scenario, trace: tuple[Conversation, ...] | None = None, *, record_spans: bool = False,
        exact: bool = False, params: PerfParams | None = None) -> RunResult:
    """Simulate one scenario. ``trace``: conversations for ``workload=trace``. ``exact``: advance decode one
    step per event (the slow oracle used by tests). ``params``: override the calibrated latency model (the
    decision table of ``dynamic-table`` is then built with them too)."""
    table = None
    if sc.policy == "dynamic-table":
        from .table import table_for       # the sweep machinery, imported only when a table is needed
        table = table_for(sc, params)
    return simulate_scenario(sc, trace, record_spans=record_spans, exact=exact, params=params, table=table)


def run_built(sc: Scenario, *, record_spans: bool = False) -> RunResult:
    """``run`` with its tables (records, nodes, spans) built as DataFrames before it returns. For a worker
    process whose caller reads the tables: the caller then unpickles DataFrames (~0.4 ms for a 500-conversation
    ShareGPT run) instead of building them from the columns (~20 ms of the caller's CPU: the dashboard's
    server, where 40 sessions share one interpreter). The same run, the same numbers."""
    res = run(sc, record_spans=record_spans)
    for table in (res.records, res.nodes, res.spans):
        del table                           # read once: built and kept (metrics.columns.LazyTable)
    return res
