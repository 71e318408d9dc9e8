"""The dashboard tells its story (issue #12) without a browser: the verdict sentence, the Learn timeline's
phases, exports with context, readable log ticks."""
from __future__ import annotations

import io

import pandas as pd
import pytest

import ppd_core
from ppd_core import Scenario, baselines

from ui import exports, timeline, verdict
from ui.charts import _log_ticks, systems_figure


@pytest.fixture(scope="module")
def default_runs():
    scs = baselines(Scenario(conversations=200))
    return scs, {n: ppd_core.run(s) for n, s in scs.items()}


def test_verdict_names_the_winner_and_the_margins(default_runs):
    scs, runs = default_runs
    sums = {n: r.summary for n, r in runs.items()}
    text = verdict.sentence(sums, {n: s.layout for n, s in scs.items()})
    t2 = {n: s["groups"]["turn2plus"]["ttft_ms"]["mean"] for n, s in sums.items()}
    cut = round(100 * (1 - t2["PPD"] / t2["PD"]))
    assert text.startswith(f"PPD (2P_2pD) cuts Turn 2+ TTFT by {cut} % vs PD")
    best = min(t2, key=t2.get)
    assert f"Turn 2+ TTFT {best} (by " in text and "Replica (4R)" in text
    # goodput joins the wins when the caller has it
    assert "goodput PD (3 vs 2 conv/s, by 50 %)" in verdict.sentence(sums, {}, goodput={"PPD": 2.0, "PD": 3.0, "Replica": 1.0})


def test_verdict_says_tie_and_raises():
    s = {"groups": {"turn2plus": {"ttft_ms": {"mean": 100.0}, "tpot_ms": {"mean": 10.0}}}}
    worse = {"groups": {"turn2plus": {"ttft_ms": {"mean": 150.0}, "tpot_ms": {"mean": 10.0}}}}
    text = verdict.sentence({"PPD": worse, "PD": s, "Replica": s}, {"PPD": "x", "Replica": "y"})
    assert "raises Turn 2+ TTFT by 50 % vs PD" in text and "TPOT a tie" in text
    assert "Turn 2+ TTFT a tie" in text           # PD and Replica tie for best


def test_learn_phases_match_the_text(default_runs):
    """PD's D nodes only load KV and decode (no prefill of their own); PPD's pD nodes append-prefill Turn 2+;
    P nodes only full-prefill; replicas full-prefill once per conversation and append afterwards."""
    scs, _ = default_runs
    small = {n: ppd_core.run(s.with_(conversations=3), record_spans=True).spans for n, s in scs.items()}
    ph = {n: timeline.phases(sp) for n, sp in small.items()}
    pd_dec = ph["PD"][ph["PD"]["role"] == "D"]["phase"]
    assert set(pd_dec) == {"KV load", "decode"}
    assert set(ph["PD"][ph["PD"]["role"] == "P"]["phase"]) == {"full prefill"}
    ppd_dec = ph["PPD"][ph["PPD"]["role"] == "pD"]["phase"]
    assert {"KV load", "append-prefill", "decode"} <= set(ppd_dec)
    rep = ph["Replica"]
    firsts = rep[rep["phase"].isin(["full prefill", "append-prefill"])]
    assert (firsts.groupby("conversations")["phase"].first() == "full prefill").all()
    assert set(timeline.PHASE_COLORS) == {p for p, _, _ in timeline.PHASES} and len(set(
        timeline.PHASE_COLORS.values())) == len(timeline.PHASES)
    line = timeline.event_lines({"PPD": small["PPD"]}, float(small["PPD"]["start_s"].min()))[0]
    assert "starts the **full prefill** of conversation" in line


def test_window_follows_the_event():
    assert timeline.window(1.0, 10.0, 0.2) == pytest.approx((0.85, 1.05))
    assert timeline.window(0.01, 10.0, 0.2) == pytest.approx((0.0, 0.2))
    assert timeline.window(1.0, 10.0, None) == pytest.approx((0.0, 10.2))


def test_records_csv_carries_layout_policy_and_link(default_runs):
    scs, runs = default_runs
    res = {n: {"records": r.records} for n, r in runs.items()}
    raw = exports.records_csv(res, scs, "http://x/?qps=4").decode()
    assert raw.splitlines()[0] == "# link: http://x/?qps=4"
    df = pd.read_csv(io.StringIO(raw), comment="#")
    assert list(df.columns[:3]) == ["system", "layout", "policy"]
    assert set(zip(df["system"], df["layout"])) == {("PPD", "2P_2pD"), ("PD", "2P_2D"), ("Replica", "4R")}


def test_png_footer_names_the_scenario(default_runs):
    scs, runs = default_runs
    fig = systems_figure({n: r.summary for n, r in runs.items()}, {n: s.layout for n, s in scs.items()})
    ctx = exports.describe(scs["PPD"]) + "\nhttp://x/?conversations=200"
    out = exports.with_footer(fig, ctx)
    texts = [a.text for a in out.layout.annotations]
    assert any("2P_2pD" in t and "http://x/?conversations=200" in t for t in texts)
    assert not any("http://x" in (a.text or "") for a in fig.layout.annotations)   # the original is untouched


def test_log_ticks_are_1_2_5():
    assert _log_ticks(30, 900) == [20, 50, 100, 200, 500, 1000]
    assert all(str(t).lstrip("0.").rstrip("0.")[:1] in "125" for t in _log_ticks(0.5, 3000))
