"""What the Eq.1 weights do in the scenario on screen (issue #11, item 5), from the PPD run's per-request
estimates (``ppd_core.analysis.weights``): whether they can act, the local share, the distribution of the
estimated ΔTTFT / ΔTPOT, the w_tpot range where decisions change and how many requests other settings move."""
from __future__ import annotations

from typing import Mapping

import pandas as pd
import streamlit as st

from ppd_core.analysis.weights import moved, policy_can_act, w_tpot_range, weights_summary
from ppd_core.config.scenario import Scenario

from .cards import fmt_pct

#: w_tpot settings the "moved" table tries (the slider's range is [0, 100]), besides the current one.
TRY_W_TPOT = (0.0, 1.0, 3.0, 10.0, 30.0, 100.0)


def _dist(d: Mapping) -> str:
    if d.get("p50") is None:
        return "n/a"
    return f"p10 {d['p10']:.3f} · p50 {d['p50']:.3f} · p90 {d['p90']:.3f}"


def moved_table(records: pd.DataFrame, w_ttft: float, w_tpot: float, n: int) -> pd.DataFrame:
    """Per w_tpot tried (and the current one): the requests whose decision would flip, on their logged
    estimates, as a count and a share of the ``n`` decided requests (``weights_summary``'s ``decided``)."""
    rows = []
    for w in sorted(set(TRY_W_TPOT) | {float(w_tpot)}):
        k = moved(records, w_ttft, w)
        rows.append({"w_tpot": f"{w:g}" + (" (now)" if w == float(w_tpot) else ""),
                     "requests moved": k, "share moved": fmt_pct(k / n) if n else "n/a"})
    return pd.DataFrame(rows).set_index("w_tpot")


def label(ws: Mapping, rng: tuple[float, float] | None, can: bool) -> str:
    """The expander's title: the local share and the w_tpot range at a glance (``ws``: ``weights_summary``,
    ``rng``: ``w_tpot_range``, ``can``: ``policy_can_act``)."""
    if not ws["decided"]:
        return "SLO weights (Eq.1): no Turn 2+ decision to weigh here"
    where = f", decisions change at w_tpot ≈ {rng[0]:.3g}–{rng[1]:.3g}" if rng else ""
    return (f"SLO weights (Eq.1): {fmt_pct(ws['local_share'])} of Turn 2+ served locally{where}"
            + ("" if can else " (the weights cannot act)"))


def panel(sc: Scenario, records: pd.DataFrame) -> None:
    """The weights section of Explore (an expander below the headline)."""
    can, why = policy_can_act(sc)
    ws = weights_summary(records)
    rng = w_tpot_range(records, sc.w_ttft) if ws["decided"] else None
    with st.expander(label(ws, rng, can), icon=":material/balance:"):
        if not can:
            st.markdown(f"**The SLO weights do nothing here:** {why}.")
        if not ws["decided"]:
            st.caption("No Turn 2+ request of this run lives on a D node, so Eq.1 estimates nothing.")
            return
        st.markdown(
            f"**{ws['decided']:,}** Turn 2+ requests on D nodes carry Eq.1's estimates; "
            f"**{fmt_pct(ws['local_share'])}** were served locally. Estimated relative TTFT gain of serving "
            f"locally ΔTTFT: {_dist(ws['d_ttft'])}; relative TPOT loss ΔTPOT (summed over the co-batched "
            f"decodes): {_dist(ws['d_tpot'])}.")
        if rng:
            st.markdown(f"With w_ttft = {sc.w_ttft:g}, the decisions change between w_tpot ≈ **{rng[0]:.3g}** and "
                        f"**{rng[1]:.3g}** (5–95 % of the per-request switch points w_ttft·ΔTTFT/ΔTPOT)"
                        + ("; the slider stops at 100." if rng[1] > 100 else "."))
        else:
            st.markdown("No request has both a TTFT gain and a TPOT loss: no w_tpot changes a decision.")
        st.dataframe(moved_table(records, sc.w_ttft, sc.w_tpot, ws["decided"]), width="content")
        st.caption("Requests moved: Turn 2+ requests whose decision (S > 0: local) would differ from the path "
                   "they took, at that w_tpot, on their logged estimates (to first order: the cluster state "
                   "would itself change with the decisions)."
                   + ("" if can else " Under this policy the weights are not used; the table says what "
                                     "policy=dynamic would change."))
