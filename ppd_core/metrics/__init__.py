"""Layer 5: what a run measured - per-request records, the run summary, node and span tables - and
``simulate_scenario`` (workload -> simulator -> these results)."""
from __future__ import annotations

from .report import (MIN_SAMPLE, RECORD_COLUMNS, is_finite_summary, node_table, records, sample_warnings, slo_label,
                     spans, summary)
from .result import RunResult, simulate_scenario

__all__ = ["MIN_SAMPLE", "RECORD_COLUMNS", "sample_warnings", "is_finite_summary", "node_table", "records", "slo_label", "spans", "summary",
           "RunResult", "simulate_scenario"]
