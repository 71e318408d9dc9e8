"""Reductions of one run used by several pages. Pure pandas/numpy (no Streamlit): candidates to move into
``ppd_core``'s analysis layer once it exists."""
from __future__ import annotations

import numpy as np
import pandas as pd


def turn2_ok(records: pd.DataFrame) -> pd.DataFrame:
    return records[(records["turn"] >= 2) & (records["status"] == "ok")]


def sweep_point(result: dict) -> dict:
    """Sweep point: Turn 2+ TTFT/TPOT p10/p50/p90 (from the records), means, local share, SLO, success."""
    t2 = turn2_ok(result["records"])
    s = result["summary"]
    out = {"local_share": s["local_share"], "success_rate": s["success_rate"],
           "ttft_mean": s["groups"]["turn2plus"]["ttft_ms"]["mean"],
           "tpot_mean": s["groups"]["turn2plus"]["tpot_ms"]["mean"], "n": int(len(t2))}
    for m in ("ttft_ms", "tpot_ms"):
        q = t2[m].quantile([0.1, 0.5, 0.9]) if len(t2) else pd.Series([np.nan] * 3, index=[0.1, 0.5, 0.9])
        out[f"{m}_p10"], out[f"{m}_p50"], out[f"{m}_p90"] = (float(q[0.1]), float(q[0.5]), float(q[0.9]))
    return out


def has_d_nodes(sc) -> bool:
    return sc.layout_obj.n_D > 0
