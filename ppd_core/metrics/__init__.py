"""Layer 5: what a run measured - per-request records, the run summary, node and span tables - and
``simulate_scenario`` (workload -> simulator -> these results)."""
from __future__ import annotations

from ..config.lazy import lazy_exports

# imported on first use, like the other layers' re-exports (issue #13)
__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".report": ("MIN_SAMPLE", "RECORD_COLUMNS", "sample_warnings", "is_finite_summary", "node_table", "records",
                "slo_label", "spans", "summary"),
    ".result": ("RunResult", "simulate_scenario"),
})
