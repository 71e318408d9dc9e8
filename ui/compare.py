"""Compare two shared links (issue #12): which scenario keys differ, and their results side by side with the
deltas. Pure functions of two links, no Streamlit."""
from __future__ import annotations

import math
from typing import Mapping

import pandas as pd

from ppd_core.config.errors import ScenarioError
from ppd_core.config.page_keys import split_page_keys
from ppd_core.config.scenario import SPEC, Scenario, parse_lenient, query_pairs

from .verdict import value

#: The figures compared: (label, summary path, unit).
ROWS = (
    ("Turn 2+ TTFT mean", "groups.turn2plus.ttft_ms.mean", "ms"),
    ("Turn 2+ TTFT p90", "groups.turn2plus.ttft_ms.p90", "ms"),
    ("Turn 2+ TPOT mean", "groups.turn2plus.tpot_ms.mean", "ms"),
    ("Turn 2+ E2E mean", "groups.turn2plus.e2e_ms.mean", "ms"),
    ("Turn 1 TTFT mean", "groups.turn1.ttft_ms.mean", "ms"),
    ("local share", "local_share", "%"),
    ("success rate", "success_rate", "%"),
    ("tokens/s", "throughput.tokens_per_s", ""),
    ("KV moved", "kv.bytes", "GB"),
)


def scenario_of(link: str) -> tuple[Scenario, list[str]]:
    """The scenario a pasted link names (page-only keys ignored) and one line per problem (bad values fall
    back as on the dashboard)."""
    try:
        pairs = query_pairs(link or "")
    except ScenarioError as exc:       # a length cap or a broken URL
        return Scenario(), [str(exc)]
    kept, _ = split_page_keys(pairs)
    sc, problems = parse_lenient(dict(kept))
    return sc, [str(p) for p in problems]


def diff(a: Scenario, b: Scenario) -> pd.DataFrame:
    """One row per scenario key whose value differs: key, A, B, unit."""
    pa, pb = a.to_params(include_defaults=True), b.to_params(include_defaults=True)
    # An unset per-role key (gpu_p, tp_d, ...) is never written: it means "the fleet's", shown as such.
    fleet = "(fleet's)"
    rows = [{"key": k, "A": pa.get(k, fleet), "B": pb.get(k, fleet), "unit": SPEC[k].unit}
            for k in SPEC if pa.get(k, fleet) != pb.get(k, fleet)]
    return pd.DataFrame(rows, columns=["key", "A", "B", "unit"])


def results_table(sa: Mapping, sb: Mapping) -> pd.DataFrame:
    """Figures of A and B side by side with B − A and B / A − 1 (text, for reading)."""
    rows = []
    for label, path, unit in ROWS:
        a, b = value(sa, path), value(sb, path)
        scale, fmt = (100.0, "{:,.1f} %") if unit == "%" else (1e-9, "{:,.2f} GB") if unit == "GB" else \
            (1.0, "{:,.1f} ms" if unit == "ms" else "{:,.0f}")
        d = (b - a) * scale
        rel = b / a - 1 if math.isfinite(a) and a != 0 and math.isfinite(b) else float("nan")
        delta = ("n/a" if not math.isfinite(d) else
                 (f"{d:+,.1f} pp" if unit == "%" else fmt.format(d) if d < 0 else "+" + fmt.format(d)))
        rows.append({"figure": label, "A": "n/a" if not math.isfinite(a) else fmt.format(a * scale),
                     "B": "n/a" if not math.isfinite(b) else fmt.format(b * scale), "B − A": delta,
                     "B vs A": "n/a" if not math.isfinite(rel) or unit == "%" else f"{100 * rel:+.1f} %"})
    return pd.DataFrame(rows).set_index("figure")


def describe_diff(d: pd.DataFrame) -> str:
    if d.empty:
        return "The two links name the same scenario."
    return "Differs in " + ", ".join(f"`{r.key}` ({r.A} → {r.B})" for r in d.itertuples()) + "."

