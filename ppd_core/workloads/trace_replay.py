"""Timing an imported trace for a run at ``qps``: a time scale for timestamps, Poisson arrivals for the rest.

For a timestamped trace a run's ``qps`` is a time scale: ``assign_arrivals`` divides the arrivals by
``k = qps / native_rate`` (native rate = (conversations - 1) / arrival span), so the run offers ``qps``
conversations per second, k times the trace's own load (``describe_replay`` says so in one line).
When the user gives no ``qps``, a timestamped trace replays at its own rate (``replay_rate``: k = 1).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from ..config.errors import ScenarioError
from ..config.fields import SPEC
from .conversation import Conversation
from .trace_common import MAX_TRACE_SPAN_S, _renumber, _show

MAX_TRACE_QPS = SPEC["qps"].hi     # the scenario's own qps cap


def native_rate(convs: Iterable[Conversation]) -> float | None:
    """The trace's own conversation rate: ``(n - 1) / (last - first arrival)`` over the conversations that
    have an arrival; None when fewer than two have one or they all arrive at the same instant."""
    stamped = [c.arrival_s for c in convs if c.arrival_s >= 0]
    if len(stamped) < 2 or max(stamped) <= min(stamped):
        return None
    return (len(stamped) - 1) / (max(stamped) - min(stamped))


def time_scale(convs: Iterable[Conversation], qps: float) -> float | None:
    """The load factor ``k = qps / native_rate(convs)`` by which ``assign_arrivals`` speeds up the trace's
    timestamps (k > 1: arrivals k times denser, k < 1: sparser); None when the trace has no rate."""
    _check_qps(qps)
    rate = native_rate(convs)
    return None if rate is None else qps / rate


def describe_replay(convs: Iterable[Conversation], qps: float) -> str:
    """One line saying how ``assign_arrivals(convs, qps, ...)`` times the trace."""
    convs = tuple(convs)
    n_free = sum(1 for c in convs if c.arrival_s < 0)
    rate = native_rate(convs)
    parts = []
    if n_free < len(convs):
        if rate is None:
            parts.append("timestamped conversations all arrive at once, so qps cannot scale them")
        else:
            parts.append(f"timestamps replayed at qps={qps:g} conv/s: load x{qps / rate:.4g} of the trace's own "
                         f"{rate:.4g} conv/s (time scale k = qps / native rate; arrivals divided by k)")
    if n_free:
        parts.append(f"{n_free:,} conversations without a timestamp get Poisson arrivals at qps={qps:g} conv/s")
    return "; ".join(parts)


def assign_arrivals(convs: Iterable[Conversation], qps: float, seed: int) -> tuple[Conversation, ...]:
    """The conversations timed for a run at ``qps`` conversations per second.

    Timestamped conversations (arrival >= 0) keep their order and relative spacing, divided by the time
    scale ``k = qps / native_rate`` (``time_scale``), so their rate becomes ``qps``: different qps, different
    arrivals, and qps = the native rate replays the trace as recorded. (A trace with no rate, one
    conversation or all at one instant, keeps its arrivals.) Conversations whose arrival is unassigned
    (negative, -1.0 from the importer) get Poisson arrivals: exponential gaps with mean 1/qps from
    ``numpy.random.Generator(PCG64(seed))``, accumulated from 0 as in ``workloads.synthetic.arrival_times``,
    in the conversations' current order. Returns all of them sorted by arrival with cids renumbered 0..n-1;
    ``ScenarioError('qps')`` if the arrivals would span more than one simulated day.
    """
    _check_qps(qps)
    out = list(convs)
    k = time_scale(out, qps)
    if k is not None:
        t0 = min(c.arrival_s for c in out if c.arrival_s >= 0)
        out = [c if c.arrival_s < 0 else replace(c, arrival_s=t0 + (c.arrival_s - t0) / k) for c in out]
    todo = [i for i, c in enumerate(out) if c.arrival_s < 0]
    rng = np.random.Generator(np.random.PCG64(seed))
    times = np.cumsum(rng.exponential(1.0 / qps, size=len(todo)))
    for i, t in zip(todo, times, strict=True):
        out[i] = replace(out[i], arrival_s=float(t))
    last = max((c.arrival_s for c in out), default=0.0)
    if last > MAX_TRACE_SPAN_S:
        raise ScenarioError("qps", f"{qps:g} spreads the trace's {len(out):,} conversations over {last:,.0f} s, "
                                   f"past the cap of {MAX_TRACE_SPAN_S:,.0f} simulated seconds; raise qps")
    return _renumber((c.arrival_s, c.turns) for c in out)


def replay_rate(convs: Iterable[Conversation], qps: float | None, default_qps: float) -> dict[str, Any]:
    """The arrival rate a trace run uses, and why: ``qps`` when the user gave one (a timestamped trace is then
    scaled by k = qps / native rate); otherwise the trace's own rate (k = 1, replayed as recorded), or
    ``default_qps`` for a trace without a rate (its conversations get Poisson arrivals). Returns
    ``{"qps", "trace_qps", "load_factor", "rule"}`` (``trace_qps``/``load_factor`` None without a rate); the
    summary of a trace run carries it as ``arrivals``."""
    rate = native_rate(convs)
    if qps is not None:
        _check_qps(qps)
        rule = "given" if rate is None else "given: the trace's timestamps scaled to it"
        return {"qps": qps, "trace_qps": rate, "load_factor": None if rate is None else qps / rate, "rule": rule}
    if rate is None:
        return {"qps": default_qps, "trace_qps": None, "load_factor": None,
                "rule": "default: the trace has no arrival rate, its conversations get Poisson arrivals"}
    if rate > MAX_TRACE_QPS:
        raise ScenarioError("qps", f"the trace's own rate, {rate:.4g} conv/s, is past the cap of "
                                   f"{MAX_TRACE_QPS:g}; give qps to scale it")
    return {"qps": rate, "trace_qps": rate, "load_factor": 1.0, "rule": "the trace's own rate (no qps given)"}


def describe_rate(arrivals: dict[str, Any]) -> str:
    """One line for ``replay_rate``'s answer."""
    q = arrivals["qps"]
    if arrivals["load_factor"] is None:
        return f"arrivals at {q:.4g} conv/s ({arrivals['rule']})"
    if arrivals["load_factor"] == 1.0:
        return f"the trace replays at its own rate, {q:.4g} conv/s, as recorded (give qps=... to scale it)"
    return (f"the trace replays at {q:.4g} conv/s, x{arrivals['load_factor']:.3g} its own "
            f"{arrivals['trace_qps']:.4g} conv/s (qps given)")


def _check_qps(qps: Any) -> None:
    if isinstance(qps, bool) or not isinstance(qps, (int, float)) or not math.isfinite(qps) or qps <= 0:
        raise ScenarioError("qps", f"{_show(qps)} is not allowed; must be a number > 0")
