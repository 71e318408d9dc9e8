"""Did a run reach a steady state, and if not, which resource saturated?

A finite run at overload never reaches a steady state: its numbers depend on the run's length and count only
the survivors. ``saturation(sim, df)`` compares the two halves of the arrival window (the conversations' Turn 1
arrivals; its first 20 % is left out while the system fills) and the offered with the served load:

* the median server TTFT of the requests made in each half, and the benchmark client's median Turn 1 wait;
* the median lifetime (arrival to last token) per generated token of the conversations arriving in each half;
* offered_qps = conversations / arrival window; served_qps = offered_qps x (conversations ending inside the
  window shifted by the first half's median lifetime / conversations arriving inside the window): in a steady
  state conversations end at the pace they arrive, one lifetime later;
* requests in the system (made by the client, not yet finished), averaged over 64 instants of each half
  (evidence only: a multi-turn workload fills up for a conversation's lifetime).

Saturated when the median TTFT grows by half (and by 100 ms), or the client's median Turn 1 wait grows by
half and 1 s, or the conversations' median lifetime per generated token grows by half, or served_qps < 0.7 x offered_qps (with >= 50 conversations in the window), or fewer than 90 % of the requests succeed.
The resource: the KV link if busy >= 80 % of the run, else P prefill if the P nodes are, else KV memory if on
some decode node the requests in the system need >= 95 % of its KV capacity at least half the time in the
second half, else D decode (the decode-capable nodes: D, pD, R).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..sim.request import OK
from .columns import Columns, Groups, as_columns, mean, share

if TYPE_CHECKING:
    import pandas as pd

SAMPLES = 64
BUSY = 0.8
WARMUP = 0.2   # share of the arrival window left out while the system fills


def _r(x: float) -> float:
    return float(f"{float(x):.6g}")


def busy_fractions(sim) -> dict[str, float]:
    """Mean busy fraction of the P nodes, of the decode-capable nodes, and of the KV fabric over the run."""
    dur = max(sim.now, 1e-9)
    p = [min(n.busy_time / dur, 1.0) for n in sim.nodes if n.role == "P"]
    d = [min(n.busy_time / dur, 1.0) for n in sim.nodes if n.role != "P"]
    return {"P prefill": _r(mean(np.array(p))) if p else 0.0, "D decode": _r(mean(np.array(d))) if d else 0.0,
            "link": _r(min(sim.fabric.busy_time / dur, 1.0))}


def _kv_demand(sim, df: Columns, ts: np.ndarray) -> float:
    """Highest share, over the decode-capable nodes, of the sample instants ``ts`` at which the KV its
    requests in the system need (prompt + output each) is at least 95 % of the node's KV capacity."""
    made = df["arrival_s"]
    fin = np.nan_to_num(df["finish_s"], nan=np.inf)
    need = df["prompt_tokens"] + df["output_tokens"]
    where = df["decode_node"]
    worst = 0.0
    for n in sim.nodes:
        if n.role == "P":
            continue
        m = where == n.name
        if not m.any():
            continue
        live = (made[m][None, :] <= ts[:, None]) & (fin[m][None, :] > ts[:, None])
        worst = max(worst, share(live @ need[m] >= 0.95 * n.capacity))
    return worst


def median(x: np.ndarray) -> float:
    """``float(np.median(x))`` for a non-empty 1-D array, the same floats (middle value, or the mean of the two
    middle ones; NaN if any value is NaN) without numpy's NaN check, which imports numpy.ma on first use."""
    s = np.sort(x)
    n = s.size
    if s[-1] != s[-1]:                       # NaN sorts last
        return float("nan")
    if n % 2:
        return float(s[n // 2])
    return (float(s[n // 2 - 1]) + float(s[n // 2])) / 2.0


def saturation(sim, df: pd.DataFrame | Columns) -> dict:
    df = as_columns(df)
    made = df["arrival_s"]
    turn1 = made[df["turn"] == 1]
    busy = busy_fractions(sim)
    if turn1.size < 2 or turn1.max() <= turn1.min():
        return {"saturated": False, "offered_qps": 0.0, "served_qps": 0.0, "resource": None,
                "busy": busy, "evidence": "fewer than two conversation arrivals: no window to compare"}
    t0, t1 = float(turn1.min()), float(turn1.max())
    w0 = t0 + WARMUP * (t1 - t0)            # the first part of the window fills the system: left out
    mid = 0.5 * (w0 + t1)
    fin = df["finish_s"]
    fin_sorted = np.sort(np.where(np.isnan(fin), np.inf, fin))
    made_sorted = np.sort(made)

    def in_system(a: float, b: float) -> float:
        ts = np.linspace(a, b, SAMPLES)
        return mean(np.searchsorted(made_sorted, ts, "right") - np.searchsorted(fin_sorted, ts, "right"))

    q1, q2 = in_system(w0, mid), in_system(mid, t1)
    ok = df["status"] == OK
    ttft = df["ttft_ms"]
    wait = np.nan_to_num(df["client_wait_ms"], nan=0.0)
    first, second = ok & (made >= w0) & (made < mid), ok & (made >= mid) & (made <= t1)

    def med(x, m):
        return median(x[m]) if m.any() else float("nan")
    m1, m2 = med(ttft, first), med(ttft, second)
    t1st = df["turn"] == 1
    c1, c2 = med(wait, first & t1st), med(wait, second & t1st)
    # conversations: arrival, end (last request's final time) and lifetime
    conv = df["conversation"]
    by_conv = Groups(conv)
    last = by_conv.reduce(np.nan_to_num(fin, nan=np.inf), np.maximum)
    arr = by_conv.reduce(made, np.minimum)
    life = last - arr
    # a conversation's lifetime per token it generated: comparable across conversations of any length
    per_tok = life / np.maximum(by_conv.reduce(df["output_tokens"], np.add), 1)
    l1 = med(life, (arr >= w0) & (arr < mid))
    k1, k2 = med(per_tok, (arr >= w0) & (arr < mid)), med(per_tok, arr >= mid)
    offered = turn1.size / (t1 - t0)
    # served: in a steady state conversations end at the pace they arrive, one lifetime later: count the ends in
    # the window shifted by the first half's median lifetime
    ends = last
    n_in = int(np.sum((arr >= w0) & (arr <= t1)))
    judged = n_in >= 50 and np.isfinite(l1)
    if judged:
        n_end = int(np.sum((ends >= w0 + l1) & (ends <= t1 + l1)))
        served = offered * min(n_end / n_in, 1.0)
    else:
        served = offered * share(np.isfinite(ends))
    success = share(ok) if ok.size else 0.0
    reasons = []
    if np.isfinite(m1) and np.isfinite(m2) and m2 >= 1.5 * m1 and m2 - m1 > 100:
        reasons.append(f"median TTFT grew {m1:.0f} -> {m2:.0f} ms from the first to the second half")
    if np.isfinite(m1) and not np.isfinite(m2):
        reasons.append("no request made in the second half succeeded")
    if np.isfinite(c2) and c2 > 1.5 * c1 + 1000:
        reasons.append(f"the benchmark client's queue grew: median client wait {c1:.0f} -> {c2:.0f} ms")
    if np.isfinite(k1) and np.isfinite(k2) and k2 >= 1.5 * k1:
        reasons.append(f"conversations take longer: median lifetime per generated token {1e3 * k1:.1f} -> "
                       f"{1e3 * k2:.1f} ms")
    if judged and served < 0.7 * offered:
        reasons.append(f"served {served:.2f} of {offered:.2f} conv/s offered")
    if success < 0.9:
        reasons.append(f"only {success:.0%} of requests succeeded")
    saturated = bool(reasons)
    resource = None
    if saturated:
        kv = _kv_demand(sim, df, np.linspace(mid, t1, SAMPLES))
        if busy["link"] >= BUSY:
            resource, why = "link", f"KV link busy {busy['link']:.0%} of the run"
        elif busy["P prefill"] >= BUSY:
            resource, why = "P prefill", f"P nodes busy {busy['P prefill']:.0%} of the run"
        elif kv >= 0.5:
            resource, why = "KV memory", f"a decode node's requests need >= 95 % of its KV memory {kv:.0%} of the time"
        else:
            resource, why = "D decode", (f"decode nodes busy {busy['D decode']:.0%} (P {busy['P prefill']:.0%}, "
                                         f"link {busy['link']:.0%}, KV memory full {kv:.0%} of the time)")
        reasons.append(why)
    reasons.append(f"in the system {q1:.1f} -> {q2:.1f} requests")
    if not judged:
        reasons.append("fewer than 50 conversations in the window: served load not judged")
    if not saturated:
        reasons.insert(0, f"steady: median TTFT {m1:.0f} -> {m2:.0f} ms, served {served:.2f} of {offered:.2f} conv/s")
    return {"saturated": saturated, "offered_qps": _r(offered), "served_qps": _r(served), "resource": resource,
            "busy": busy, "evidence": "; ".join(reasons)}
