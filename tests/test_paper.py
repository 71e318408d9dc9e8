"""The paper's figures and tables, reproduced (``ppd_core.paper``), and the Paper and Validation pages.

Every tolerance below is written next to its assertion with the reason. They are the same as the ones the
module's verdicts use, so a failing test is a simulator that is genuinely off, not a test that drifted.

Run time on 2 cores with a cold sweep cache: the grids (Table 1: 972 runs, the decision tables: 720 runs,
the quick Table 2 grid: 240 runs, of which 144 are Table 1's) dominate; the pages then read the same runs
from the disk cache. Table 2 is checked on the quick grid, not the 3,060-run study.
"""
from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ppd_core.config.errors import PPDError
from streamlit.testing.v1 import AppTest

from ppd_core import reproduce as P
from ppd_core.cli import main as cli_main

from conftest import APP

ROOT = Path(__file__).resolve().parents[1]
MEASURED = P.MEASURED_DEFAULT
HAVE_MEASURED = MEASURED.is_dir()
PAGE_TIMEOUT = 300      # first page run may simulate every non-grid item; 2-core CI with other jobs

logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").setLevel(logging.ERROR)
logging.getLogger("streamlit").setLevel(logging.ERROR)


def _row(item: P.Item, quantity: str, source: str) -> pd.Series:
    t = item.table
    row = t[(t["quantity"] == quantity) & (t["source"] == source)]
    assert len(row) == 1, f"{quantity!r} ({source}) not in {item.name}: {t['quantity'].tolist()}"
    return row.iloc[0]


def _value(item: P.Item, quantity: str, source: str = "paper") -> float:
    """The simulated value of a compared quantity."""
    return float(_row(item, quantity, source)["simulated"])


def _item_is_tidy(item: P.Item) -> None:
    assert list(item.table.columns) == ["quantity", "unit", "simulated", "published", "source", "diff", "tolerance",
                                        "within"]
    assert item.verdict and "\n" not in item.verdict
    assert item.tolerance
    assert len(item.data)
    json.dumps(item.to_json())          # machine-readable: no NaN objects, numpy scalars or frames left


# ---- 1. interference -----------------------------------------------------------------------------------------

def test_interference_fig2_slowdowns_at_batch_200():
    item = P.interference(MEASURED if HAVE_MEASURED else None)
    _item_is_tidy(item)
    full = _value(item, "+1 full prefill: TPOT slowdown at batch 200")
    append = _value(item, "+1 append-prefill: TPOT slowdown at batch 200")
    # The paper's append claim (section 4.1): +~2 % at batch 200 with one 1,024-token append-prefill. ±5 pp.
    assert abs(append - 2.0) <= 5.0, append
    # Full prefills follow the interference law fitted on the measured micro-benchmark (the older configuration:
    # +117 % client-side), not the paper's +48 %: engine-side the lost cascade read of 200 x 2,048 shared tokens
    # at eta_share is 1.5-2x the decode-only step; the verdict says why the paper's figure is not reproduced.
    assert 120.0 <= full <= 240.0, full
    assert "not bent" in item.verdict
    full4 = _value(item, "+4 full prefills: TPOT slowdown at batch 200")
    append4 = _value(item, "+4 append-prefills: TPOT slowdown at batch 200")
    assert full4 >= full and append4 >= append      # more prefills never cost less
    # Shape: decode-only TPOT grows with the batch; a full prefill hurts more than an append at every batch >= 50.
    sim = item.data[item.data["source"] == "simulated"]
    # (from batch 20: below 17 decodes vLLM's heuristic keeps cascade attention off, so at batch 10 every
    # decode reads its own copy of the shared 2,048-token prefix and the step is slower than at batch 20)
    dec = sim[sim["curve"] == "decode only"].sort_values("batch")
    base = dec[dec["batch"] >= 20]["tpot_ms"].to_numpy()
    assert (base[1:] >= base[:-1]).all()
    f = sim[sim["curve"] == "+1 full prefill"].set_index("batch")["slowdown_pct"]
    a = sim[sim["curve"] == "+1 append-prefill"].set_index("batch")["slowdown_pct"]
    assert (f.loc[50:] > a.loc[50:]).all()


@pytest.mark.skipif(not HAVE_MEASURED, reason="../shared/data/ppd-measured not present")
def test_interference_overlays_the_older_measured_configuration():
    item = P.interference(MEASURED)
    m = item.table[item.table["source"] == "measured (older config)"]
    # The measured CSV is the older configuration the README describes: +117 % / +9 % at batch 200, 38.4 ms.
    assert set(item.data["source"]) == {"simulated", "measured (older config)"}
    got = dict(zip(m["quantity"], m["published"]))
    assert got["+1 full prefill: TPOT slowdown at batch 200"] == pytest.approx(116.8, abs=1.0)
    assert got["+1 append-prefill: TPOT slowdown at batch 200"] == pytest.approx(9.1, abs=1.0)
    assert got["decode-only TPOT at batch 200"] == pytest.approx(38.4, abs=0.5)
    assert m["within"].isna().all() or all(w is None for w in m["within"])    # context only, not judged
    assert "older configuration" in " ".join(item.notes)


# ---- 2. Table 1 ----------------------------------------------------------------------------------------------

def test_table1_x1_advantage():
    item = P.table1(measured_dir=MEASURED if HAVE_MEASURED else None)
    _item_is_tidy(item)
    for (d, p) in P.TABLE1_PAIRS:
        for i, (band, qs) in enumerate(P.TABLE1_BANDS):
            q = f"{d}→{p} {band} (QPS {qs[0]:g}–{qs[-1]:g})"
            v = _value(item, q)
            # Every cell is a reduction: local append-prefill beats the P round trip at every load (paper, measured).
            assert v < 0, (q, v)
            if d != "3P_1D":
                # 1P and 2P within ±15 pp of the paper: a band pools 54 synthetic points, and the paper's own
                # numbers are not exactly reproducible from its data (ppd-paper.md 7.3: 2P medium -45.7 vs -51.6).
                assert abs(v - P.PUB_TABLE1[d][i]) <= 15.0, (q, v, P.PUB_TABLE1[d][i])
    # 3P_1D is judged on sign only: the paper's falling trend (-44/-38/-25) is not in the measured data either.
    assert "3P" in item.verdict and "sign only" in item.verdict
    if HAVE_MEASURED:
        meas = item.table[item.table["source"] != "paper"]
        assert len(meas) == 9 and meas["published"].notna().all()


# ---- 3. Fig.5 ------------------------------------------------------------------------------------------------

def test_fig5_bandwidth_hurts_pd_not_ppd():
    item = P.fig5()
    _item_is_tidy(item)
    rise = _value(item, "PD Turn 2+ TTFT rise, 150 → 10 GB/s")
    move = _value(item, "PPD Turn 2+ TTFT change, 150 → 10 GB/s")
    # Paper: PD 143.7 -> 170.6 ms (+26.9 ms) from NVLink to 100GbE. 10-45 ms: the transfer of a WildChat Turn 2+
    # context (~1-2k tokens x 128 KiB) at 10 GB/s takes ~15-30 ms, plus D's batch pausing while it arrives.
    assert 10.0 <= rise <= 45.0, rise
    # PPD's Turn 2+ never crosses the link: flat within 5 % (paper: "flat ~51 ms").
    assert abs(move) < 5.0, move
    # The TTFT reduction grows as the link slows (paper 64 % -> 70 %).
    assert _value(item, "TTFT reduction PPD vs PD at 10 GB/s") > _value(item, "TTFT reduction PPD vs PD at 150 GB/s")


# ---- 4. Fig.6 ------------------------------------------------------------------------------------------------

def test_fig6_weights_monotone_and_x1_end():
    item = P.fig6()
    _item_is_tidy(item)
    d = item.data
    for q in P.FIG6_QPS:
        dyn = d[(d["qps"] == q) & (d["policy"] == "dynamic")].sort_values("w_tpot")
        shares = dyn["local_share"].tolist()
        # A larger TPOT weight can only send more requests through P: local share non-increasing in w_tpot. Per
        # decision that is exact (same state, larger weight: local can only become PD), but each weight's run
        # then follows its own trajectory, so near saturation two close weights may differ by a few requests
        # either way (QPS 16 with the 2026-12-03 fit: 0.660 then 0.662 at the next weight): allowed
        # 0.5 pp, a tenth of the paper's smallest step between weights.
        assert all(b <= a + 0.005 for a, b in zip(shares, shares[1:])), (q, shares)
        assert shares[-1] < shares[0] - 0.2, (q, shares)          # and the weights do move it
        assert d[(d["qps"] == q) & (d["policy"] == "pd")]["local_share"].iloc[0] == 0.0
        assert d[(d["qps"] == q) & (d["policy"] == "ppd")]["local_share"].iloc[0] == 1.0
        # The x=1 end on a prefill-heavy workload at QPS 8/16: TTFT reduction > 80 % (paper 96 % / 94 %: the
        # single P is saturated by re-prefills under PD).
        assert _value(item, f"QPS {q:g}: x=1 end TTFT change") < -80.0


# ---- 5. Table 2 ----------------------------------------------------------------------------------------------

def test_table2_quick_grid_has_no_static_optimum():
    item = P.table2(quick=True)
    _item_is_tidy(item)
    assert len(item.data) == len(P.QUICK_WORKLOADS) * len(P.QUICK_QPS)
    differ = _value(item, "cells where TTFT-best ≠ TPOT-best layout")
    # Paper: 92.2 % of cells have different TTFT- and TPOT-optimal layouts. >= 50 % on the quick grid: fewer
    # layouts compete (no hybrids), so fewer distinct winners are possible; and since issue 10 an ordinary
    # (no shared prefix) mixed batch costs its roofline + t_mix instead of a per-decode interference constant,
    # so layouts that prefill locally lose less TPOT and win both metrics more often (54 % here, was >= 60 %).
    assert differ >= 50.0, differ
    # Replica wins the most TTFT cells (paper 63.3 %): no hand-off, no transfer, prefix cache on the same GPU.
    counts = item.data["TTFT_category"].value_counts()
    assert counts.idxmax() == "Replica", counts.to_dict()


# ---- 6. headline ---------------------------------------------------------------------------------------------

def test_headline_reduction_with_competitive_tpot():
    item = P.headline(measured_dir=MEASURED if HAVE_MEASURED else None)
    _item_is_tidy(item)
    for q in P.HEADLINE_QPS:
        for name in ("2P_2pD (x=1)", "2P_2D dynamic (PPD)"):
            red = _value(item, f"QPS {q:g}: Turn 2+ TTFT reduction, {name} vs x=0")
            tpot = _value(item, f"QPS {q:g}: Turn 2+ TPOT change, {name} vs x=0")
            # Paper ~68 % on real workloads; measured ShareGPT 2P_2D 66-67 % at QPS 2/4. 55-80 %: the traces are
            # synthetic (lognormal lengths fitted to the repo's sample).
            assert 55.0 <= red <= 80.0, (q, name, red)
            # "Competitive TPOT": within ±10 % (measured -1 % to -6 %).
            assert abs(tpot) <= 10.0, (q, name, tpot)


# ---- 7. engines ----------------------------------------------------------------------------------------------

def test_engines_table_and_online_agree_with_the_reference():
    # Reduced for time: 2P_2D only (the layout whose table the measured ppd_lookup_table.csv holds; 360 table
    # runs instead of 720) and 200 ShareGPT conversations per run instead of 500. The CLI/page run both layouts.
    item = P.engines(measured_dir=MEASURED if HAVE_MEASURED else None, layouts=("2P_2D",), conversations=200)
    _item_is_tidy(item)
    for lay in ("2P_2D",):
        cells = _value(item, f"{lay}: table cells choosing local (of 180), w=(1,1)",
                       source="reference code on the repo data")
        # The reference code's table picks local in 178/180 cells at w=(1,1) on the repo's data (ppd-paper.md 2.3);
        # ±18 cells (10 %): the simulator builds its own table from its own x=0/x=1 runs.
        assert abs(cells - 178) <= 18, (lay, cells)
    d = item.data
    for q in P.ENGINE_QPS:
        g = d[(d["layout"] == "2P_2D") & (d["workload"] == "sharegpt") & (d["qps"] == q)].set_index("policy")
        # Measured: PPD-dynamic on 2P_2D matches static 2P_2pD on ShareGPT (41.8 vs 40.7 ms): within ±10 %.
        assert abs(g.loc["dynamic-table", "ttft_ms"] / g.loc["ppd", "ttft_ms"] - 1) <= 0.10
    for case, g in d.groupby("case"):
        g = g.set_index("policy")
        # Both engines answer the same question from the same model: local shares within 20 pp of each other.
        assert abs(g.loc["dynamic-table", "local_share"] - g.loc["dynamic", "local_share"]) <= 0.20, case
        assert g.loc["pd", "local_share"] == 0.0 and g.loc["ppd", "local_share"] == 1.0


# ---- CLI -----------------------------------------------------------------------------------------------------

def test_cli_report_and_json(capsys):
    assert cli_main(["paper", "--only", "interference,headline", "--measured", ""]) == 0
    out = capsys.readouterr().out
    assert out.count("== ") == 2 and "verdict:" in out and "tolerance:" in out
    assert cli_main(["paper", "--only", "interference", "--json", "--measured", ""]) == 0
    doc = json.loads(capsys.readouterr().out)
    it = doc["items"]["interference"]
    assert set(it) >= {"table", "data", "verdict", "tolerance", "ok"}
    assert {r["quantity"] for r in it["table"]} >= {"+1 full prefill: TPOT slowdown at batch 200"}


def test_cli_bad_arguments_are_one_line():
    r = subprocess.run([sys.executable, "-m", "ppd_core", "paper", "--only", "fig99"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "fig99" in r.stderr and "table1" in r.stderr
    r = subprocess.run([sys.executable, "-m", "ppd_core", "paper", "--only", "interference", "--measured", "/nope"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "/nope" in r.stderr


# ---- pages ---------------------------------------------------------------------------------------------------

def _page(page: str, timeout: float = PAGE_TIMEOUT, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    for k, v in (state or {}).items():
        at.session_state[k] = v
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_paper_page_shows_every_item_with_its_verdict():
    at = _page("pages/paper.py")
    assert not at.error, [e.value for e in at.error]
    titles = [h.value for h in at.header]
    assert len([t for t in titles if t[:1].isdigit()]) == 7
    charts = at.get("plotly_chart")
    assert len(charts) == 7           # Table 2 waits for its button
    verdicts = [m.value for m in (*at.success, *at.warning)]
    assert len(verdicts) == 6
    # the page shows the core's verdicts, not numbers of its own
    assert P.table1(measured_dir=MEASURED if HAVE_MEASURED else None).verdict in verdicts
    assert P.interference(MEASURED if HAVE_MEASURED else None).verdict in verdicts
    at.button(key="paper_t2_run").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.get("plotly_chart")) == 8
    assert P.table2(quick=True, measured_dir=MEASURED if HAVE_MEASURED else None).verdict in [
        m.value for m in (*at.success, *at.warning)]
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)          # Table 1: simulated vs paper bars
    names = {t.get("name") for t in spec["data"]}
    assert {"simulated", "paper"} <= names


@pytest.mark.skipif(not HAVE_MEASURED, reason="../shared/data/ppd-measured not present locally (present in CI)")
def test_validation_page_full_run_and_point_picker():
    at = _page("pages/validation.py", timeout=300)
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 4               # three target scatters + "any metric"
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["xaxis"]["type"] == "log" and spec["layout"]["yaxis"]["type"] == "log"
    assert any(t.get("name") == "y = x" for t in spec["data"])
    classes = at.dataframe[0].value                       # the expected error of each validation class first
    assert list(classes["class"])[0] == "calibrated layout and workload" and len(classes) == 4
    mape = next(d.value for d in at.dataframe if "layout" in d.value.columns)
    assert "overall" in set(mape["layout"]) and {"2P_2D", "2P_2pD", "4R"} <= set(mape["layout"])
    # pick a measured point: the ShareGPT 2P_2D run at QPS 4
    at.selectbox(key="val_pick_file").select("sharegpt.csv").run()
    at.selectbox(key="val_pick_config").select("2P_2D").run()
    at.selectbox(key="val_pick_qps").select(4.0).run()
    assert not at.exception, [e.message for e in at.exception]
    point = at.dataframe[-1].value
    row = point[(point["turn"] == "turn2plus") & (point["metric"] == "mean TTFT")]
    assert len(row) >= 1
    assert float(row["measured"].iloc[0]) == pytest.approx(141.5, abs=0.1)   # measured-data-findings section 8
    assert math.isfinite(float(row["simulated"].iloc[0]))


def test_validation_page_takes_no_server_path_from_visitors():
    """No free-text folder: a visitor's ``?val_dir=/etc`` is an unknown parameter, and the only choices are the
    bundled set or an upload (issue #8.6)."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["val_dir"] = "/etc"
    at.query_params["val_source"] = "upload"
    at.switch_page("pages/validation.py")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.text_input
    assert any("`val_dir`" in w.value and "unknown" in w.value for w in at.warning)
    assert at.radio(key="val_source").options == ["bundled", "upload"]
    assert "val_dir" not in at.query_params and at.query_params["val_source"] == "upload"
    assert not at.get("plotly_chart")


def _upload_page():
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params["val_source"] = "upload"
    at.switch_page("pages/validation.py")
    return at.run()


def test_validation_upload_is_size_and_schema_checked():
    from ui import uploads
    at = _upload_page()
    at.file_uploader(key="val_upload").set_value([("passwd.csv", b"root:x:0:0\n", "text/csv")]).run()
    assert not at.exception
    assert len(at.error) == 1 and "passwd.csv" in at.error[0].value and "columns not in" in at.error[0].value
    with pytest.raises(PPDError, match="over the cap of 50 MiB"):
        uploads.check_measured_csvs([("big.csv", b"config,scope,turn\n" + b"x" * (50 * 2**20))])
    with pytest.raises(PPDError, match="only .csv"):
        uploads.check_measured_csvs([("../../etc/passwd", b"a,b\n")])
    with pytest.raises(PPDError, match="not valid UTF-8"):
        uploads.check_measured_csvs([("x.csv", b"\xff\xfe")])


@pytest.mark.skipif(not HAVE_MEASURED, reason="../shared/data/ppd-measured not present locally (present in CI)")
def test_validation_upload_of_the_documented_schema_runs():
    lines = (MEASURED / "sharegpt.csv").read_bytes().splitlines(keepends=True)
    data = b"".join(lines[:9])                       # the header and 8 measured rows
    at = _upload_page()
    at.number_input(key="val_sample").set_value(2)
    at.file_uploader(key="val_upload").set_value([("mine.csv", data, "text/csv")]).run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.get("plotly_chart")
