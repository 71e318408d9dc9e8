"""Sweep point statistics: the figures a sweep chart draws per point, read from ``run_grid`` rows (the
flattened run summaries), so a sweep is one ``run_grid`` call whatever draws it (the dashboard's Sweep page).

Per row: Turn 2+ TTFT and TPOT p10 / p50 / p90 and means (successful Turn 2+ requests, ``metrics.report``),
the local share (Turn 2+ requests served by their D / pD node), the success rate and the Turn 2+ request
count ``n`` (a point resting on few requests is noisy: ``metrics.report.MIN_SAMPLE``).
"""
from __future__ import annotations

BAND_METRICS = ("ttft_ms", "tpot_ms")
QUANTILES = ("p10", "p50", "p90")


def point_stats(rows):
    """``run_grid`` rows -> a frame (same index) with ``{metric}_{p10,p50,p90}``, ``ttft_mean``, ``tpot_mean``,
    ``local_share``, ``success_rate`` and ``n``; a point with no successful Turn 2+ request has NaN figures."""
    import pandas as pd
    out = pd.DataFrame(index=rows.index)
    for m in BAND_METRICS:
        for q in QUANTILES:
            out[f"{m}_{q}"] = pd.to_numeric(rows.get(f"turn2plus.{m}.{q}"), errors="coerce")
    out["ttft_mean"] = pd.to_numeric(rows.get("turn2plus.ttft_ms.mean"), errors="coerce")
    out["tpot_mean"] = pd.to_numeric(rows.get("turn2plus.tpot_ms.mean"), errors="coerce")
    out["local_share"] = rows["local_share"].astype(float)
    out["success_rate"] = rows["success_rate"].astype(float)
    out["n"] = rows["turn2plus.count"].astype(int)
    return out
