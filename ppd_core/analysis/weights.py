"""Do the Eq.1 weights matter for this scenario, and where? (the core side of the dashboard's weight controls)

* ``policy_can_act``: the weights act only under ``policy=dynamic`` / ``dynamic-table`` and only on Turn 2+
  requests whose conversation lives on a D node; with no D node (e.g. 2P_2pD, 4R) they have no effect.
* ``weights_summary``: per run, the local share of those requests and the distribution of the estimated
  relative TTFT gain (dTTFT) and TPOT loss (dTPOT) of serving them locally (the ``est_*`` record columns).
* ``moved``: how many of them a different weight setting would decide the other way (on the logged
  estimates, i.e. to first order: the cluster state would itself change with the decisions).
* ``w_tpot_range``: the w_tpot values at which the decisions change, S = w_ttft*dTTFT - w_tpot*dTPOT = 0,
  i.e. w_tpot* = w_ttft*dTTFT/dTPOT per request, from a run (so a frontier sweep spans where things happen).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..config.errors import ScenarioError
from ..config.scenario import Scenario

DYNAMIC = ("dynamic", "dynamic-table")


def policy_can_act(sc: Scenario) -> tuple[bool, str]:
    """(True, "") when w_ttft / w_tpot can change a decision in this scenario, else (False, why)."""
    if sc.layout_obj.n_D == 0:
        return False, (f"{sc.layout} has no D node: Turn 2+ requests on pD nodes and replicas are always served "
                       "locally, so w_ttft and w_tpot have no effect")
    if sc.policy not in DYNAMIC:
        return False, f"policy={sc.policy} is static: w_ttft and w_tpot only act under policy=dynamic"
    return True, ""


def _decided(records: pd.DataFrame) -> pd.DataFrame:
    return records[(records["turn"] >= 2) & records["est_score"].notna()]


def _dist(x: np.ndarray) -> dict:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"p10": None, "p50": None, "p90": None, "mean": None}
    p10, p50, p90 = np.percentile(x, [10, 50, 90])
    return {"p10": float(p10), "p50": float(p50), "p90": float(p90), "mean": float(x.mean())}


def weights_summary(records: pd.DataFrame) -> dict:
    """Turn 2+ requests decided on D nodes: how many, the share served locally, dTTFT / dTPOT distributions."""
    d = _decided(records)
    n = len(d)
    return {"decided": n, "local_share": float((d["path"] == "local").mean()) if n else None,
            "d_ttft": _dist(d["est_dttft"].to_numpy()), "d_tpot": _dist(d["est_dtpot"].to_numpy())}


def _check_weight(name: str, w: float) -> float:
    if not isinstance(w, (int, float)) or isinstance(w, bool) or not math.isfinite(w) or w < 0:
        raise ScenarioError(name, f"{w!r} is not allowed; must be a finite number >= 0")
    return float(w)


def moved(records: pd.DataFrame, w_ttft: float, w_tpot: float) -> int:
    """Requests whose decision (S > 0: local) flips under (w_ttft, w_tpot), on their logged estimates."""
    w_ttft, w_tpot = _check_weight("w_ttft", w_ttft), _check_weight("w_tpot", w_tpot)
    d = _decided(records)
    new = w_ttft * d["est_dttft"].to_numpy() - w_tpot * d["est_dtpot"].to_numpy() > 0
    return int(np.sum(new != (d["path"].to_numpy() == "local")))


def w_tpot_range(records: pd.DataFrame, w_ttft: float = 1.0, quantiles: tuple[float, float] = (0.05, 0.95)
                 ) -> tuple[float, float] | None:
    """The w_tpot interval (``quantiles`` of the per-request switch points w_ttft*dTTFT/dTPOT) over which the
    decisions change; None when no request has a switch point (no decision can be moved by w_tpot)."""
    w_ttft = _check_weight("w_ttft", w_ttft)
    d = _decided(records)
    gain, loss = d["est_dttft"].to_numpy(), d["est_dtpot"].to_numpy()
    m = (gain > 0) & (loss > 0)
    if not m.any():
        return None
    w = w_ttft * gain[m] / loss[m]
    lo, hi = np.quantile(w, quantiles)
    return float(lo), float(hi)
