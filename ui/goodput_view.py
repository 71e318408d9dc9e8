"""Goodput on the pages (issue #11): ``ppd_core.analysis.goodput.goodput`` run in the server's pool, cached,
with a progress bar, and the table / sentence / markers the pages show.

Goodput is the highest conversation rate at which at least ``ATTAIN`` of the Turn 2+ requests meet both the
first TTFT and the first TPOT SLO of the scenario (``slo_ttft_ms[0]``, ``slo_tpot_ms[0]``), per system
(PPD = the scenario, PD, Replica). The search takes about 6 runs per system, a few seconds to tens of seconds
at the dashboard's sizes, so Explore computes it on a button below the headline numbers and then remembers
it for the session (the verdict gains it); runs already in the sweep cache (any session, the CLI) are instant.
"""
from __future__ import annotations

import math
import time
from types import MappingProxyType
from typing import Any, Mapping

import pandas as pd
import streamlit as st

from ppd_core.analysis.goodput import goodput
from ppd_core.config.errors import PPDError
from ppd_core.config.scenario import Scenario

from .runner import WorkerLost, pooled

ATTAIN = 0.9                      # the CLI's default (--attain 0.9)
EXPECTED_RUNS = 6                 # a typical search per system (tests/golden: 4-7), for the progress bar
MEMO = "_goodput_memo"            # session_state: {(scenario, attain): result} computed in this session
MEMO_MAX = 32
LIMITS = MappingProxyType({"ttft": "TTFT SLO", "tpot": "TPOT SLO", "success": "success rate"})


class SearchProgress:
    """``progress(done, total)`` over the search's successive sweeps (each step restarts at 0): one bar of
    the runs done so far against an expected total, drawn at most once per finished run."""

    def __init__(self, label: str, expected: int):
        self.label, self.expected = label, max(int(expected), 1)
        self.before, self.last = 0, -1
        self.bar = st.progress(0.0, text=f"{label}…")

    def __call__(self, done: int, total: int) -> None:
        runs = self.before + done
        if done >= total:
            self.before += total
        if runs != self.last:
            self.last = runs
            self.expected = max(self.expected, runs + (0 if done >= total else total - done))
            self.bar.progress(min(runs / self.expected, 0.99), text=f"{self.label}… {runs} runs")

    def close(self) -> None:
        self.bar.empty()


def slos(sc: Scenario) -> tuple[float, float]:
    """The two thresholds goodput uses: the scenario's first TTFT and first TPOT SLO."""
    return float(sc.slo_ttft_ms[0]), float(sc.slo_tpot_ms[0])


@st.cache_data(max_entries=32, show_spinner=False)
def compute(sc: Scenario, attain: float = ATTAIN) -> dict:
    """The ``goodput --json`` document of ``sc`` (plus ``brackets`` and ``elapsed_s``), through the pool and
    the sweep cache; the progress bar is created here, so a cache hit replays it (ending empty)."""
    t0 = time.perf_counter()
    bar = SearchProgress("Goodput search (PPD first, then PD and Replica)", 3 * EXPECTED_RUNS)
    try:
        res = pooled(lambda **opt: goodput(sc, attain, progress=bar, **opt), long=True)
    finally:
        bar.close()
    return {**res, "elapsed_s": time.perf_counter() - t0}


def _key(sc: Scenario, attain: float) -> tuple:
    return (sc, float(attain))


def known(sc: Scenario, attain: float = ATTAIN) -> dict | None:
    """The goodput of ``sc`` if this session computed it (no run)."""
    return (st.session_state.get(MEMO) or {}).get(_key(sc, attain))


def remember(sc: Scenario, res: dict, attain: float = ATTAIN) -> None:
    memo = dict(st.session_state.get(MEMO) or {})
    memo[_key(sc, attain)] = res
    while len(memo) > MEMO_MAX:
        memo.pop(next(iter(memo)))
    st.session_state[MEMO] = memo


def get(sc: Scenario, attain: float = ATTAIN) -> dict:
    """Compute (or take from the cache) and remember for the session."""
    res = compute(sc, attain)
    remember(sc, res, attain)
    return res


def rates(res: Mapping | None) -> dict[str, float] | None:
    """{system: goodput conv/s}: what the verdict's ``goodput=`` hook takes."""
    if not res:
        return None
    return {name: float(r["goodput_qps"]) for name, r in res["systems"].items()}


def table(res: Mapping, layouts: Mapping[str, str]) -> pd.DataFrame:
    """One row per system: goodput, per GPU, per GPU-dollar-hour, what limits it, runs searched."""
    rows = []
    for name, r in res["systems"].items():
        b = res.get("brackets", {}).get(name, {})
        rows.append({"system": name, "layout": layouts.get(name, ""),
                     "goodput (conv/s)": _num(r["goodput_qps"]),
                     "per GPU (conv/s)": _num(r["goodput_qps_per_gpu"]),
                     "per GPU-$/h (conv/s)": _num(r["goodput_qps_per_usd_hour"], 3),
                     "limit above it": LIMITS.get(r["limit"], r["limit"]),
                     "first rate missed": _num(b.get("missed_qps")) if b.get("missed_qps") else "none tried",
                     "runs": int(r["runs"])})
    return pd.DataFrame(rows).set_index("system")


def _num(v: Any, digits: int = 3) -> str:
    if v is None or not math.isfinite(float(v)):
        return "n/a"
    return f"{float(v):.{digits}g}"


def describe(res: Mapping, sc: Scenario) -> str:
    """What the numbers mean: the SLOs, the share, the load model, the price used."""
    s = res["scenario"]
    ttft, tpot = s["slo_ttft_ms"][0], s["slo_tpot_ms"][0]
    window = next(iter(res.get("brackets", {}).values()), {}).get("window_s")
    price = sc.price_usd_h
    src = "gpu_price_usd_h" if sc.gpu_price_usd_h else "the catalog's public price, data/gpus.json"
    return (f"Goodput = the highest conversation rate at which ≥ {100 * res['attain']:.0f} % of Turn 2+ requests "
            f"meet both TTFT ≤ {ttft:g} ms and TPOT ≤ {tpot:g} ms (the first `slo_ttft_ms` and `slo_tpot_ms`; "
            f"a failed request meets neither), conversations arriving over a fixed "
            + (f"{window:,.0f} s window" if window else "window")
            + f". Per GPU: ÷ {sc.gpu_count} GPUs; per GPU-$/h: ÷ GPUs × ${price:g}/GPU-h ({src}). "
              "Limit: what fails first just above the goodput.")


def markers(res: Mapping | None) -> dict[str, float]:
    """{system: goodput} for the Sweep's load axis (systems with a goodput > 0)."""
    return {n: v for n, v in (rates(res) or {}).items() if v > 0}


@st.fragment
def panel(sc: Scenario, layouts: Mapping[str, str]) -> None:
    """Explore's goodput section: the table once known, else a button that computes it (with progress) and
    reruns the page so the verdict names the goodput winner. A fragment: the button reruns only this part."""
    ttft, tpot = slos(sc)
    st.markdown(f"**Goodput** (≥ {100 * ATTAIN:.0f} % of Turn 2+ within TTFT {ttft:g} ms and TPOT {tpot:g} ms)")
    res = known(sc)
    if res is None:
        c1, c2 = st.columns([1, 3], vertical_alignment="center")
        go = c1.button("Compute goodput", key="_goodput_go", icon=":material/speed:",
                       help="A bracketing search over the conversation rate for PPD, PD and Replica "
                            "(ppd_core.analysis.goodput; `python -m ppd_core goodput` prints the same).")
        c2.caption(f"About {EXPECTED_RUNS} runs per system (a few seconds to half a minute on this server); "
                   "not run on every slider move, so the numbers above stay live. Once computed it is kept for "
                   "this scenario and the verdict includes it.")
        if go:
            try:
                get(sc)
            except (PPDError, WorkerLost) as exc:     # one line, this session only (WorkerLost first: a PPDError)
                st.error(f"Goodput not computed: {exc}")
                return
            st.rerun()                          # the whole page: the verdict gains the goodput
        return
    st.table(table(res, layouts))
    st.caption(describe(res, sc) + f" Search: {sum(r['runs'] for r in res['systems'].values())} runs, "
               f"{res['elapsed_s']:.1f} s when computed.")
