"""The verdict sentence of Explore (issue #12): which system wins Turn 2+ TTFT, TPOT (and goodput, once the
caller has it) here, and by how much. Pure text from run summaries, no Streamlit."""
from __future__ import annotations

import math
from types import MappingProxyType
from typing import Mapping

#: Figures the verdict compares: (key, summary path, label, lower is better). ``slo_joint`` (share of Turn 2+
#: within both first SLOs) is used when the summary has it.
METRICS = MappingProxyType({
    "ttft": ("groups.turn2plus.ttft_ms.mean", "Turn 2+ TTFT", True),
    "tpot": ("groups.turn2plus.tpot_ms.mean", "TPOT", True),
    "slo_joint": ("slo_joint", "both SLOs met", False),
})
TIE = 0.01          # relative differences under 1 % are called a tie


def value(summary: Mapping, path: str) -> float:
    cur = summary
    for p in path.split("."):
        if not isinstance(cur, Mapping) or p not in cur:
            return float("nan")
        cur = cur[p]
    try:
        return float(cur)
    except (TypeError, ValueError):
        return float("nan")


def rel(a: float, b: float) -> float:
    """a relative to b (a/b − 1); NaN when undefined."""
    return a / b - 1 if math.isfinite(a) and math.isfinite(b) and b > 0 else float("nan")


def _pct(r: float) -> str:
    return f"{abs(100 * r):.0f} %"


def _signed(r: float) -> str:
    return "±0 %" if abs(r) < 0.005 else f"{100 * r:+.0f} %".replace("-", "−")


def winner(summaries: Mapping[str, Mapping], metric: str) -> tuple[str | None, float]:
    """(the best system on ``metric``, its margin over the runner-up as a share); None for a tie or no data."""
    path, _, lower = METRICS[metric]
    vals = {n: value(s, path) for n, s in summaries.items()}
    vals = {n: v for n, v in vals.items() if math.isfinite(v)}
    if len(vals) < 2:
        return None, float("nan")
    ranked = sorted(vals, key=lambda n: vals[n], reverse=not lower)
    best, second = vals[ranked[0]], vals[ranked[1]]
    margin = abs(rel(best, second)) if second > 0 else float("nan")
    if not math.isfinite(margin) or margin < TIE:
        return None, margin
    return ranked[0], margin


def sentence(summaries: Mapping[str, Mapping], layouts: Mapping[str, str],
             goodput: Mapping[str, float] | None = None) -> str:
    """E.g. "PPD (2P_2pD) cuts Turn 2+ TTFT by 68 % vs PD (52.0 vs 161.8 ms) at +2 % TPOT; Replica (4R) is
    12 % faster still at −13 % TPOT. Wins here: Turn 2+ TTFT Replica (by 12 %), TPOT Replica (by 13 %)."
    ``goodput``: {system: highest conversation rate within both SLOs}, added to the wins when given."""
    ttft, _, _ = METRICS["ttft"]
    tpot, _, _ = METRICS["tpot"]
    me, pd_, rep = summaries.get("PPD"), summaries.get("PD"), summaries.get("Replica")
    parts = []
    if me is not None and pd_ is not None:
        a, b = value(me, ttft), value(pd_, ttft)
        r, rt = rel(a, b), rel(value(me, tpot), value(pd_, tpot))
        verb = ("matches PD's Turn 2+ TTFT" if not math.isfinite(r) or abs(r) < TIE else
                f"{'cuts' if r < 0 else 'raises'} Turn 2+ TTFT by {_pct(r)} vs PD")
        parts.append(f"PPD ({layouts.get('PPD', '')}) {verb} ({a:,.1f} vs {b:,.1f} ms) at {_signed(rt)} TPOT")
    if rep is not None and me is not None:
        r, rt = rel(value(rep, ttft), value(me, ttft)), rel(value(rep, tpot), value(me, tpot))
        how = ("matches PPD's Turn 2+ TTFT" if not math.isfinite(r) or abs(r) < TIE else
               f"is {_pct(r)} {'faster' if r < 0 else 'slower'} than PPD on Turn 2+ TTFT")
        parts.append(f"Replica ({layouts.get('Replica', '')}) {how} at {_signed(rt)} TPOT")
    wins = []
    for key in METRICS:
        name, margin = winner(summaries, key)
        if key == "slo_joint" and all(not math.isfinite(value(s, METRICS[key][0])) for s in summaries.values()):
            continue
        label = METRICS[key][1]
        wins.append(f"{label} {name} (by {_pct(margin)})" if name else f"{label} a tie")
    if goodput:
        g = goodput_win(goodput)
        if g:
            wins.append(g)
    text = "; ".join(parts) + "."
    if wins:
        text += " Wins here: " + ", ".join(wins) + "."
    close = within_error_note(summaries)
    if close:
        text += " " + close
    return text


def _effect_error(summaries: Mapping[str, Mapping]) -> float:
    """The expected error of a ratio of two systems' Turn 2+ TTFT here: the largest ``effect_ttft`` of their
    validation classes (``summary["expected_error"]``), NaN when no summary carries one."""
    errs = [float(s["expected_error"]["errors_pct"]["effect_ttft"]) for s in summaries.values()
            if isinstance(s.get("expected_error"), Mapping)]
    return max(errs) if errs else float("nan")


def within_error_note(summaries: Mapping[str, Mapping]) -> str | None:
    """"PPD and Replica are within the simulator's error here (±17 % on a Turn 2+ TTFT ratio)." for every pair
    whose Turn 2+ TTFT differs by less than that error, or None."""
    from ppd_core.metrics.fidelity import within_error
    err = _effect_error(summaries)
    if not math.isfinite(err):
        return None
    ttft = METRICS["ttft"][0]
    pairs = [(a, b) for a, b in (("PPD", "PD"), ("PPD", "Replica"), ("PD", "Replica"))
             if a in summaries and b in summaries
             and within_error(value(summaries[a], ttft), value(summaries[b], ttft), err)]
    if not pairs:
        return None
    names = "; ".join(f"{a} and {b}" for a, b in pairs)
    return (f"{names} {'are' if len(pairs) == 1 else 'are each'} within the simulator's error here "
            f"(±{err:.0f} % on a Turn 2+ TTFT ratio), so the simulator cannot say which is faster.")


def goodput_win(goodput: Mapping[str, float]) -> str | None:
    """"goodput Replica (10.8 vs 5.75 conv/s, by 88 %)"; "goodput PPD (5.75 conv/s; the others meet both SLOs at
    no rate tried)"; "goodput a tie"; None with fewer than two finite figures."""
    ranked = sorted((v, n) for n, v in goodput.items() if math.isfinite(v) and v >= 0)
    if len(ranked) < 2:
        return None
    (v2, _), (v1, n1) = ranked[-2], ranked[-1]
    if v1 <= 0:
        return "goodput none (no system meets both SLOs at the lowest rate tried)"
    if v2 <= 0:
        alone = "the other meets" if len(ranked) == 2 else "the others meet"
        return f"goodput {n1} ({v1:.3g} conv/s; {alone} both SLOs at no rate tried)"
    r = rel(v1, v2)
    return f"goodput {n1} ({v1:.3g} vs {v2:.3g} conv/s, by {_pct(r)})" if r >= TIE else "goodput a tie"
