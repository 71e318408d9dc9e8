"""Number formatting, metric definitions, headline cards and the all-systems table."""
from __future__ import annotations

import math
import re
from types import MappingProxyType
from typing import Any, Mapping

import pandas as pd
import streamlit as st

from ppd_core.config.scenario import Scenario

#: Metric definitions (the paper's / benchmark's), shown next to every chart.
DEFS = MappingProxyType({
    "ttft": "**TTFT** = first token time − request send time (Turn 1 includes waiting for a client "
            "connection slot).",
    "tpot": "**TPOT** = (E2E − TTFT) / (output tokens − 1).",
    "e2e": "**E2E** = last token time − send time.",
    "turn2": "**Turn 2+** = every turn with index ≥ 2.",
    "local": "**Local share** = share of Turn 2+ requests served without P (append-prefill on the decode "
             "node, or a replica).",
    "slo": "**SLO attainment** = share of successful Turn 2+ requests at or under the threshold.",
    "x": "**x** = fraction of Turn 2+ appends done on the decode node.",
    "s": "**S** = w_ttft·ΔTTFT − w_tpot·ΔTPOT (Eq.1; S > 0 → serve locally).",
    "kv": "**KV bytes moved** = bytes of KV cache sent P → D over the link (all turns).",
})


def defs(*names: str) -> str:
    """Definitions text for a chart caption."""
    return "  \n".join(DEFS[n] for n in names)


def fmt_ms(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:,.1f} ms"


def fmt_pct(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{100 * v:.1f} %"


def fmt_bytes(v: float) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:,.2f} {unit}"
    return f"{v:,.0f} B"


def _get(summary: dict, path: str) -> float:
    cur: Any = summary
    for p in path.split("."):
        cur = cur[p]
    return float(cur) if cur is not None else float("nan")


#: Headline cards: (label, summary path, formatter, lower is better, definition key)
CARDS = (
    ("Turn 2+ TTFT mean", "groups.turn2plus.ttft_ms.mean", "ms", True, "ttft"),
    ("Turn 2+ TTFT p90", "groups.turn2plus.ttft_ms.p90", "ms", True, "ttft"),
    ("Turn 2+ TPOT mean", "groups.turn2plus.tpot_ms.mean", "ms", True, "tpot"),
    ("Turn 2+ E2E mean", "groups.turn2plus.e2e_ms.mean", "ms", True, "e2e"),
    ("Local share", "local_share", "pct", False, "local"),
    ("KV bytes moved", "kv.bytes", "bytes", True, "kv"),
    ("Success rate", "success_rate", "pct", False, "slo"),
)
_FMT = MappingProxyType({"ms": fmt_ms, "pct": fmt_pct, "bytes": fmt_bytes})


def _delta(kind: str, d: float) -> str | None:
    if not math.isfinite(d):
        return None
    if kind == "ms":
        return f"{d:+,.1f} ms vs PD"
    if kind == "pct":
        return f"{100 * d:+.1f} pp vs PD"
    return ("+" if d >= 0 else "-") + fmt_bytes(abs(d)) + " vs PD"


def slo_label(key: str) -> str:
    """'ttft_100ms' -> 'TTFT ≤ 100 ms'."""
    metric, _, thr = key.partition("_")
    return f"{metric.upper()} ≤ {thr.removesuffix('ms')} ms"


def headline_cards(summaries: Mapping[str, dict], per_row: int = 4) -> None:
    """st.metric cards for the scenario with deltas against the PD baseline."""
    me, pd_ = summaries["PPD"], summaries.get("PD")
    cards = []
    for label, path, kind, lower_better, dkey in CARDS:
        v = _get(me, path)
        d = v - _get(pd_, path) if pd_ is not None else float("nan")
        cards.append((label, _FMT[kind](v), _delta(kind, d), "inverse" if lower_better else "normal", DEFS[dkey]))
    for k, v in me.get("slo_attainment", {}).items():
        d = float(v) - float(pd_["slo_attainment"].get(k, float("nan"))) if pd_ is not None else float("nan")
        cards.append((f"SLO {slo_label(k)}", fmt_pct(float(v)), _delta("pct", d), "normal", DEFS["slo"]))
    for i in range(0, len(cards), per_row):
        cols = st.columns(per_row)
        for col, (label, value, delta, color, help_) in zip(cols, cards[i:i + per_row]):
            flat = delta is not None and re.match(r"^[+-]0(\.0+)? ", delta) is not None
            col.metric(label, value, delta=delta, delta_color="off" if flat else color,
                       delta_arrow="off" if flat else "auto", help=help_.replace("**", ""), border=True)


#: The few cards each system gets on Explore: (label, summary path, formatter, lower is better).
SYSTEM_CARDS = (
    ("Turn 2+ TTFT mean", "groups.turn2plus.ttft_ms.mean", "ms", True),
    ("Turn 2+ TPOT mean", "groups.turn2plus.tpot_ms.mean", "ms", True),
)


def system_cards(summaries: Mapping[str, dict], layouts: Mapping[str, str]) -> None:
    """One bordered column per system (PPD, PD, Replica) with its few cards; PPD and Replica carry the delta
    against PD; one line below each with throughput, local share and the first SLOs."""
    pd_ = summaries.get("PD")
    cols = st.columns(len(summaries))
    for col, (name, s) in zip(cols, summaries.items()):
        with col.container(border=True):
            st.markdown(f"**{name}** · {layouts.get(name, '')}")
            inner = st.container(horizontal=True, wrap=True, gap="medium")    # wraps rather than truncates
            for label, path, kind, lower_better in SYSTEM_CARDS:
                v = _get(s, path)
                delta = None
                if pd_ is not None and name != "PD":
                    delta = _delta(kind, v - _get(pd_, path))
                flat = delta is not None and re.match(r"^[+-]0(\.0+)? ", delta) is not None
                inner.metric(label, _FMT[kind](v), delta=delta, delta_color="off" if flat else
                             ("inverse" if lower_better else "normal"), delta_arrow="off" if flat else "auto",
                             help=DEFS["ttft" if "TTFT" in label else "tpot"].replace("**", ""), width="content")
            slo = s.get("slo_attainment", {})
            first = [k for k in slo if k.startswith("ttft")][:1] + [k for k in slo if k.startswith("tpot")][:1]
            st.caption(" · ".join([f"{s['throughput']['tokens_per_s']:,.0f} tok/s",
                                   f"local {fmt_pct(s['local_share'])}"] +
                                  [f"{slo_label(k)}: {fmt_pct(float(slo[k]))}" for k in first]))


def glossary() -> None:
    """Every metric definition, once, behind a toggle."""
    with st.expander("Definitions (TTFT, TPOT, Turn 2+, x, S, SLO …)", icon=":material/menu_book:"):
        st.markdown("  \n".join(DEFS.values()))


def summary_table(summaries: Mapping[str, dict], scenarios: Mapping[str, Scenario]) -> pd.DataFrame:
    rows = []
    for name, s in summaries.items():
        g = s["groups"]
        rows.append({
            "system": name, "layout": scenarios[name].layout, "policy": scenarios[name].policy,
            "T1 TTFT mean (ms)": g["turn1"]["ttft_ms"]["mean"],
            "T2+ TTFT mean (ms)": g["turn2plus"]["ttft_ms"]["mean"],
            "T2+ TTFT p90 (ms)": g["turn2plus"]["ttft_ms"]["p90"],
            "T2+ TPOT mean (ms)": g["turn2plus"]["tpot_ms"]["mean"],
            "T2+ E2E mean (ms)": g["turn2plus"]["e2e_ms"]["mean"],
            "local share": s["local_share"], "success": s["success_rate"],
            "tokens/s": s["throughput"]["tokens_per_s"], "KV GB": s["kv"]["bytes"] / 1e9,
            **{f"SLO {slo_label(k)}": float(v) for k, v in s.get("slo_attainment", {}).items()},
        })
    return pd.DataFrame(rows)


def summary_table_text(summaries: Mapping[str, dict], scenarios: Mapping[str, Scenario]) -> pd.DataFrame:
    """``summary_table`` formatted for reading: one column per system, one row per figure."""
    df = summary_table(summaries, scenarios).set_index("system")
    fmt = {"local share": fmt_pct, "success": fmt_pct, "KV GB": lambda v: f"{v:,.2f}",
           "tokens/s": lambda v: f"{v:,.0f}", **{c: fmt_pct for c in df.columns if c.startswith("SLO ")}}
    out = pd.DataFrame({col: [fmt.get(col, (lambda v: f"{v:,.1f}" if isinstance(v, float) else str(v)))(v)
                              for v in df[col]] for col in df.columns}, index=df.index)
    return out.T
