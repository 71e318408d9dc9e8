"""Advisor: candidate enumeration, score and Pareto rules, an end-to-end run, the CLI and the page."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from helpers import check_invariants
from streamlit.testing.v1 import AppTest

from ppd_core.analysis import advisor as adv
from ppd_core.cli import main
from ppd_core.config.errors import ScenarioError
from ppd_core.config.layout import PAPER_LAYOUTS, parse_layout
from ppd_core.config.scenario import Scenario, parse

ROOT = Path(__file__).resolve().parents[1]
TINY = Scenario(workload="small_tiny", conversations=4)
TRACE_CSV = (b"conversation,turn,arrival,input_tokens,output_tokens\n"
             b"a,1,,100,40\na,2,,20,30\nb,1,,60,20\nb,2,,10,50\n")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Advisor runs go through the sweep cache: keep it out of the repository."""
    monkeypatch.setenv("PPD_CACHE_DIR", str(tmp_path / "cache"))


# ---- candidates ----------------------------------------------------------------------------------------

def test_four_nodes_give_the_papers_17_layouts_and_counts_grow_as_documented():
    lays, notes = adv.candidate_layouts(4)
    assert sorted(lays) == sorted(PAPER_LAYOUTS) and not notes
    assert adv.candidate_layouts(1)[0] == ["1R"]
    assert sorted(adv.candidate_layouts(2)[0]) == ["1P_1D", "1P_1pD", "2R"]
    assert len(adv.candidate_layouts(8)[0]) == 113           # hybrids kept up to 8 nodes
    lays16, notes16 = adv.candidate_layouts(16)
    assert len(lays16) == 136 and "above 8 nodes" in notes16[0]
    assert not any(parse_layout(t).n_R and parse_layout(t).nodes != parse_layout(t).n_R for t in lays16)
    for t in lays16:
        assert parse_layout(t).nodes == 16


def test_policies_only_where_d_nodes_exist():
    cands, notes = adv.candidates(adv.AdviseRequest(4, TINY, (1,)))
    by_layout: dict[str, list] = {}
    for c in cands:
        by_layout.setdefault(c.layout, []).append(c)
    assert len(by_layout["2P_2D"]) == 6
    assert {c.label for c in by_layout["2P_2D"]} == {"pd", "ppd", "dynamic w_tpot=0.5", "dynamic w_tpot=1",
                                                     "dynamic w_tpot=2", "dynamic w_tpot=4"}
    assert [c.label for c in by_layout["2P_2pD"]] == ["n/a (no D)"] and len(by_layout["4R"]) == 1
    assert len(cands) == 10 * 6 + 7 and "67 candidates" in notes[0]


def test_request_validation_names_the_input():
    with pytest.raises(ScenarioError) as e:
        adv.AdviseRequest(3, Scenario(tp="2"))
    assert e.value.key == "n_gpus" and "tp=2" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        adv.AdviseRequest(64, Scenario())
    assert e.value.key == "n_gpus" and "32" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        adv.AdviseRequest(4, Scenario(), qps=(1, -2))
    assert e.value.key == "qps"
    with pytest.raises(ScenarioError) as e:
        adv.AdviseRequest(4, Scenario(), weight_ttft=0, weight_tpot=0)
    assert e.value.key == "weight_tpot"
    assert adv.AdviseRequest(8, Scenario(tp="2"), qps="4,1,1").qps == (1.0, 4.0)
    assert adv.AdviseRequest(8, Scenario(tp="2")).nodes == 4


# ---- score and Pareto ----------------------------------------------------------------------------------

def test_pareto_mask():
    xs = [1.0, 2.0, 3.0, 2.0, 1.0, math.nan]
    ys = [5.0, 2.0, 1.0, 3.0, 5.0, 0.1]
    assert adv.pareto_mask(xs, ys) == [True, True, True, False, True, False]    # ties both stay
    assert adv.pareto_mask(xs, ys, [True, False, True, True, True, True]) == [True, False, True, True, True, False]


def _fake_runs(req, cands, figures):
    rows = []
    for c, per_q in zip(cands, figures):
        for q, (a_ttft, a_tpot, ok, tput, ttft, tpot) in zip(req.qps, per_q):
            sc = adv.scenario_for(req, c, q)
            rows.append({"query": sc.to_query(), "slo_attainment.ttft_200ms": a_ttft,
                         "slo_attainment.tpot_30ms": a_tpot, "success_rate": ok, "throughput.tokens_per_s": tput,
                         "turn2plus.ttft_ms.mean": ttft, "turn2plus.tpot_ms.mean": tpot,
                         # a lower bound of the joint attainment, enough for these fakes
                         "slo_joint.attainment": max(a_ttft + a_tpot - 1, 0) * ok})
    return pd.DataFrame(rows)


def test_score_eligibility_and_tie_breaks():
    req = adv.AdviseRequest(4, TINY, (1, 2), 200, 30, weight_ttft=3, weight_tpot=1)
    cands = [adv.Candidate("4R", "dynamic"), adv.Candidate("2P_2D", "pd"), adv.Candidate("2P_2pD", "dynamic"),
             adv.Candidate("2P_2D", "ppd")]
    figs = [[(1.0, 1.0, 1.0, 100, 50, 9), (1.0, 1.0, 0.94, 100, 50, 9)],      # best SLOs but a 94 % point
            [(0.5, 1.0, 1.0, 100, 80, 8), (0.5, 1.0, 1.0, 100, 80, 8)],      # (3*.5+1)/4 = 0.625
            [(1.0, 0.0, 1.0, 100, 40, 12), (0.5, 0.0, 1.0, 90, 40, 12)],     # (3*.75)/4 = 0.5625
            [(0.5, 1.0, 1.0, 200, 90, 7), (0.5, 1.0, 1.0, 200, 90, 7)]]      # 0.625 again, more throughput
    ranked = adv.rank(req, cands, _fake_runs(req, cands, figs))
    assert list(ranked.columns) == list(adv.RANKED_COLUMNS)
    assert list(ranked["label"]) == ["ppd", "pd", "n/a (no D)", "n/a (no D)"]
    assert list(ranked["layout"]) == ["2P_2D", "2P_2D", "2P_2pD", "4R"]
    assert list(ranked["rank"]) == [1, 2, 3, 4]
    assert ranked["score"].tolist() == [0.625, 0.625, 0.5625, 1.0]
    assert ranked["eligible"].tolist() == [True, True, True, False]
    # front among eligible ones: (40, 12), (80, 8), (90, 7) -- the ineligible (50, 9) does not count
    assert ranked["pareto"].tolist() == [True, True, True, False]
    assert ranked.iloc[0]["explore"] == "/?" + adv.scenario_for(req, cands[3], 2).to_query()


# ---- end to end ----------------------------------------------------------------------------------------

def test_advise_runs_every_candidate_checked_and_links_back():
    req = adv.AdviseRequest(2, TINY, (1, 8), 200, 30)
    seen = []
    a = adv.advise(req, cache=False, check=check_invariants, progress=lambda d, t: seen.append((d, t)))
    assert len(a.ranked) == 8 and len(a.runs) == 16 and seen[-1] == (16, 16)
    assert a.ranked["rank"].tolist() == list(range(1, 9))
    assert a.ranked["score"].between(0, 1).all() and a.ranked["pareto"].any()
    assert a.runs["slo_ttft_ms"].eq("200").all() and a.runs["qps"].tolist() == [1.0, 8.0] * 8
    for row in a.ranked.itertuples():
        sc = parse(row.explore)
        assert sc.layout == row.layout and sc.policy == row.policy and sc.w_tpot == row.w_tpot
        assert sc.qps == 8 and sc.workload == "small_tiny" and sc.slo_tpot_ms == (30.0,)
        part = a.runs[(a.runs["layout"] == row.layout) & (a.runs["candidate"] == row.label)]
        want = (part["slo_attainment.ttft_200ms"] + part["slo_attainment.tpot_30ms"]).mean() / 2
        assert row.score == pytest.approx(want, abs=1e-6)
    assert list(a.pareto["ttft_ms"]) == sorted(a.pareto["ttft_ms"])


def test_cli_prints_top_n_writes_out_and_refuses_advisor_keys(tmp_path, capsys):
    out = tmp_path / "advice.csv"
    assert main(["advise", "--gpus", "2", "--qps", "1,4", "workload=small_tiny", "conversations=4", "--top", "3",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rank  layout" in text and "Pareto front" in text and "best:" in text and "/?layout=" in text
    assert "... 5 more candidates" in text
    df = pd.read_csv(out)
    assert len(df) == 8 and list(df.columns) == list(adv.RANKED_COLUMNS)
    assert main(["advise", "--gpus", "2", "layout=2P_2D"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: layout:") and err.count("\n") == 1
    assert main(["advise", "--gpus", "3", "tp=2"]) == 2
    assert capsys.readouterr().err.startswith("error: n_gpus:")


def test_cli_with_a_trace(tmp_path, capsys):
    f = tmp_path / "t.csv"
    f.write_bytes(TRACE_CSV)
    assert main(["advise", "--gpus", "2", "--qps", "2", "--trace", str(f), "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert "workload=trace" in text and "cannot carry the trace" in text
    assert "warning: the ranking rests on as few as 2 Turn 2+ requests in a run (fewer than 100)" in text
    f.write_bytes(TRACE_CSV + b"c,1,,x,5\n")
    assert main(["advise", "--gpus", "2", "--trace", str(f)]) == 2
    err = capsys.readouterr().err
    assert "line 6" in err and err.count("\n") == 1


# ---- page (AppTest) ------------------------------------------------------------------------------------

def _page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.switch_page("pages/advise.py")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    at.selectbox(key="adv_gpus").set_value("2")
    at.selectbox(key="workload").set_value("small_tiny")      # a shared scenario key
    at.number_input(key="adv_convs").set_value(4)
    at.multiselect(key="adv_qps").set_value([1, 4])
    return at


def test_page_ranks_links_and_plots():
    at = _page()
    at.button[0].click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error
    assert at.success[0].value.startswith("Best by ") and "(/?layout=" in at.success[0].value
    table = at.dataframe[0].value
    assert len(table) == 8 and table["explore"].str.startswith("/?layout=").all()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [t["name"] for t in spec["data"]] == ["other candidates", "Pareto front"]
    assert len(spec["data"][1]["text"]) == int(table["pareto"].sum()) >= 1   # x/y are binary-encoded
    at.run()                                    # a rerun keeps the (cached) result
    assert at.dataframe and not at.exception


def test_page_trace_upload_good_and_bad():
    at = _page()
    at.file_uploader(key="adv_trace").set_value(("bad.csv", TRACE_CSV + b"c,1,,x,5\n", "text/csv"))
    at.button[0].click().run()
    assert not at.exception
    assert len(at.error) == 1 and "bad.csv line 6" in at.error[0].value and "\n" not in at.error[0].value
    assert not at.dataframe
    at.file_uploader(key="adv_trace").set_value(("ok.csv", TRACE_CSV, "text/csv"))
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert any("workload=trace" in c.value for c in at.caption)
    assert len(at.dataframe[0].value) == 8


def test_page_reports_a_refused_run_in_one_line():
    at = _page()
    at.selectbox(key="model").set_value("Llama-3.1-70B")
    at.button[0].click().run()
    assert not at.exception and not at.dataframe
    assert len(at.error) == 1 and "do not fit" in at.error[0].value and "\n" not in at.error[0].value
    assert "smallest TP that fits is tp=4" in at.error[0].value          # said before running
    at.selectbox(key="tp").set_value("4")
    at.selectbox(key="adv_gpus").set_value("2")
    at.button[0].click().run()
    assert at.error[0].value.startswith("n_gpus:")


def test_rank_by_goodput_per_gpu_and_per_dollar_with_ties_on_attainment():
    req = adv.AdviseRequest(4, TINY, (1, 2, 4), 200, 30, rank_by="goodput_per_gpu")
    cands = [adv.Candidate("4R", "dynamic"), adv.Candidate("2P_2D", "pd"), adv.Candidate("2P_2D", "ppd")]
    figs = [[(1.0, 1.0, 1.0, 100, 50, 9), (1.0, 1.0, 1.0, 100, 50, 9), (0.5, 1.0, 1.0, 100, 50, 9)],  # goodput 2
            [(1.0, 1.0, 1.0, 100, 80, 8)] * 3,                                                       # goodput 4
            [(1.0, 0.95, 1.0, 100, 80, 8)] * 3]                                       # goodput 4, lower score
    ranked = adv.rank(req, cands, _fake_runs(req, cands, figs))
    assert ranked["goodput_qps"].tolist() == [4.0, 4.0, 2.0]
    assert ranked["label"].tolist() == ["pd", "ppd", "n/a (no D)"]     # tie at goodput 4: the higher score first
    assert ranked["goodput_per_gpu"].tolist() == [1.0, 1.0, 0.5]
    assert adv.grid_goodput((1, 2, 4), [0.95, 0.5, 0.99], 0.9) == 1.0   # contiguous from the lowest rate


def test_gpu_types_run_every_candidate_on_each_and_price_per_dollar():
    req = adv.AdviseRequest(2, TINY, (1,), 200, 30, rank_by="goodput_per_usd", gpu_types="H100-SXM,A100-80GB")
    cands, scenarios, _ = adv.plan(req)
    assert {s.gpu for s in scenarios} == {"H100-SXM", "A100-80GB"} and len(cands) % 2 == 0
    with pytest.raises(ScenarioError, match="gpu"):
        adv.AdviseRequest(2, TINY, (1,), 200, 30, gpu_types="H100-SXM,NoSuchGPU")
    with pytest.raises(ScenarioError, match="rank_by"):
        adv.AdviseRequest(2, TINY, (1,), 200, 30, rank_by="speed")


def test_page_trace_time_unit_and_stats():
    """A Mooncake trace with fractional timestamps is refused under auto (one line asking for the unit) and
    runs with time unit ms; the import's stats (TraceStats.describe) are shown above the ranking."""
    import re
    text = (ROOT / "data" / "traces" / "example_mooncake.jsonl").read_text()
    frac = re.sub(r'"timestamp": (\d+)', lambda m: f'"timestamp": {m.group(1)}.5', text).encode()
    at = _page()
    at.file_uploader(key="adv_trace").set_value(("frac.jsonl", frac, "application/jsonl"))
    at.button[0].click().run()
    assert not at.exception and not at.dataframe
    assert len(at.error) == 1 and "give the unit" in at.error[0].value and "\n" not in at.error[0].value
    at.selectbox(key="adv_time_unit").set_value("ms")
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    stats = [c.value for c in at.code if c.value.startswith("trace frac.jsonl (mooncake)")]
    assert stats and "timestamps in ms (given)" in stats[0] and "27 requests -> 12 conversations" in stats[0]
    assert "timestamps replayed at qps=" in stats[0] and "of the trace's own" in stats[0]   # the rate used
    assert len(at.dataframe[0].value) == 8
