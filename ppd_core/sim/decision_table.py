"""The paper's offline decision table as data: Eq.1 decisions per (context class, Turn-2 class, QPS bin) cell.

The simulator only looks decisions up (policy ``dynamic-table``); ``ppd_core.analysis.table`` builds the table
by running each cell's benchmark and hands it to the run."""
from __future__ import annotations

from dataclasses import dataclass

from ..config.workload_catalog import classify_t2, context_class

QPS_BINS = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0)


@dataclass(frozen=True)
class DecisionTable:
    cells: tuple          # ((ctx, t2_type, qps), use_local, score) sorted
    w_ttft: float
    w_tpot: float

    def lookup(self, ctx: str, t2: str, qps: float) -> bool:
        ctx = "large" if ctx == "huge" else ctx
        q = nearest_qps(qps)
        for (c, t, qq), use, _ in self.cells:
            if c == ctx and t == t2 and qq == q:
                return use
        return True

    def decide(self, req, qps: float) -> bool:
        context = req.prompt - req.new_input
        return self.lookup(context_class(context), classify_t2(req.new_input, req.output), qps)

    def local_cells(self) -> int:
        return sum(1 for _, use, _ in self.cells if use)


def nearest_qps(qps: float) -> float:
    """The QPS bin nearest ``qps`` (clamped to the bins; ties go up, as in the reference code)."""
    q = min(max(qps, QPS_BINS[0]), QPS_BINS[-1])
    return min(QPS_BINS, key=lambda b: (abs(b - q), -b))
