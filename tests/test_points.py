"""Sweep point statistics (ppd_core.analysis.points) equal the quantiles of the run's own records."""
from __future__ import annotations

import numpy as np
import pytest

import ppd_core
from ppd_core import Scenario
from ppd_core.analysis.points import point_stats
from ppd_core.analysis.sweep import run_grid


def test_point_stats_are_the_turn2_quantiles_of_the_records(tmp_path):
    scs = [Scenario(conversations=40, qps=q, layout="2P_2D", policy="dynamic") for q in (1.0, 6.0)]
    stats = point_stats(run_grid(scs, cache_dir=tmp_path))
    for i, sc in enumerate(scs):
        rec = ppd_core.run(sc).records
        t2 = rec[(rec["turn"] >= 2) & (rec["status"] == "ok")]
        assert stats.loc[i, "n"] == len(t2) > 0
        for m in ("ttft_ms", "tpot_ms"):
            want = np.percentile(t2[m].dropna(), [10, 50, 90])
            got = [stats.loc[i, f"{m}_{q}"] for q in ("p10", "p50", "p90")]
            assert got == pytest.approx(want, rel=1e-5)
            assert got[0] <= got[1] <= got[2]
        assert stats.loc[i, "ttft_mean"] == pytest.approx(t2["ttft_ms"].mean(), rel=1e-5)
        assert 0.0 <= stats.loc[i, "local_share"] <= 1.0 and 0.0 < stats.loc[i, "success_rate"] <= 1.0
