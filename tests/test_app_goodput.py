"""AppTest (no browser) of issue #11's dashboard half: Explore's goodput and weights panel, the Sweep's goodput
markers and computed frontier range, the Advisor's goodput ranking and GPU-type comparison, and classroom mode
on every page."""
from __future__ import annotations

import json
import math

import pytest
from streamlit.testing.v1 import AppTest

import ppd_core
from ppd_core import Scenario
from ppd_core.analysis.goodput import goodput
from ppd_core.analysis.weights import moved, w_tpot_range, weights_summary

from conftest import open_app
from ui import goodput_view, sweeps

pytestmark = pytest.mark.usefixtures("in_process_runs")


def _app(query: dict | None = None, page: str | None = None) -> AppTest:
    return open_app(query, page, 240)


def _verdict(at: AppTest) -> str:
    return next(m.value for m in at.markdown if 'id="ppd-verdict"' in m.value)


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _array2d(v) -> list:
    """A Plotly JSON 2-D array: nested lists, or {"dtype", "bdata", "shape"} (base64 of a typed array)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64
        import numpy as np
        shape = tuple(int(x) for x in str(v["shape"]).split(","))
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).reshape(shape).tolist()
    return list(v)


def _bar(at: AppTest) -> dict:
    return {k: (v if isinstance(v, str) else v[-1]) for k, v in at.query_params.items()}


# ------------------------------------------------------------------------------------------------ Explore

def test_explore_goodput_on_a_button_then_in_the_verdict():
    q = {"conversations": "60", "layout": "2P_2D"}
    at = _app(q)
    assert "goodput" not in _verdict(at)                      # the headline does not wait for the search
    assert at.button(key="_goodput_go").label == "Compute goodput"
    at.button(key="_goodput_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    want = goodput(Scenario(conversations=60, layout="2P_2D"), goodput_view.ATTAIN)["systems"]
    table = next(t.value for t in at.table if "goodput (conv/s)" in t.value.columns)
    for name, r in want.items():
        assert table.loc[name, "goodput (conv/s)"] == f"{r['goodput_qps']:.3g}"
        assert table.loc[name, "per GPU (conv/s)"] == f"{r['goodput_qps_per_gpu']:.3g}"
        assert table.loc[name, "limit above it"] == goodput_view.LIMITS[r["limit"]]
    best = max(want, key=lambda n: want[n]["goodput_qps"])
    assert f"goodput {best} (" in _verdict(at)
    caption = " ".join(c.value for c in at.caption)
    assert "TTFT ≤ 100 ms and TPOT ≤ 15 ms" in caption and "≥ 90 %" in caption
    assert not [b for b in at.button if b.key == "_goodput_go"]      # kept for this scenario: no button
    at.slider(key="qps").set_value(3.0).run()                         # another scenario: the button again
    assert at.button(key="_goodput_go") and "goodput" not in _verdict(at)


def test_explore_weights_panel_counts_what_a_setting_moves():
    at = _app({"conversations": "80", "layout": "2P_2D"})
    rec = ppd_core.run(Scenario(conversations=80, layout="2P_2D")).records
    ws, rng = weights_summary(rec), w_tpot_range(rec)
    exp = next(e for e in at.expander if e.label.startswith("SLO weights (Eq.1)"))
    assert f"{100 * ws['local_share']:.1f} % of Turn 2+ served locally" in exp.label
    assert f"w_tpot ≈ {rng[0]:.3g}–{rng[1]:.3g}" in exp.label
    table = next(t.value for t in at.dataframe if "requests moved" in t.value.columns)
    assert table.loc["1 (now)", "requests moved"] == moved(rec, 1, 1) == 0      # dynamic: nothing moves at its own weights
    assert table.loc["100", "requests moved"] == moved(rec, 1, 100) > 0
    at = _app({"conversations": "40"})                                          # 2P_2pD: no D node
    exp = next(e for e in at.expander if e.label.startswith("SLO weights (Eq.1)"))
    assert "no Turn 2+ decision" in exp.label
    assert any("The SLO weights do nothing here" in c.value and "no D node" in c.value for c in at.caption)


# ------------------------------------------------------------------------------------------------ Sweep

def test_sweep_marks_goodput_and_spans_the_computed_w_tpot_range():
    at = _app({"conversations": "40", "layout": "1P_3D"}, page="pages/sweep.py")
    assert not at.warning, [w.value for w in at.warning]
    figs = _charts(at)
    sc = Scenario(conversations=40, layout="1P_3D")
    want = goodput(sc, goodput_view.ATTAIN)["systems"]
    for fig in figs[:2]:                                   # TTFT and TPOT against QPS
        xs = sorted(s["x0"] for s in fig["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash")
        assert xs == sorted(r["goodput_qps"] for r in want.values() if r["goodput_qps"] > 0)
        notes = [a for a in fig["layout"]["annotations"] if "goodput" in a["text"]]
        assert len({a["y"] for a in notes}) == len(notes)        # one label row per system
    lo, hi = w_tpot_range(ppd_core.run(sc).records, 1.0)
    front = figs[-1]
    w = [pt[0] for pt in _array2d(front["data"][0]["customdata"])]
    assert min(w) == 0 and max(w) == pytest.approx(min(hi, 100), rel=0.05) and len(w) == 7
    assert min(x for x in w if x > 0) == pytest.approx(lo, rel=0.05)
    labels = [a for a in front["layout"]["annotations"] if a["xref"] == "paper"]
    assert len(labels) >= 3 and len({round(a["y"], 6) for a in labels}) == len(labels)
    assert any("local" in a["text"] for a in labels)


def test_frontier_grid_clips_to_the_slider_and_falls_back():
    grid, note = sweeps.frontier_grid((12.0, 400.0))
    assert grid[0] == 0 and grid[1] == 12 and grid[-1] == 100 and "clipped" in note
    assert all(a < b for a, b in zip(grid, grid[1:]))
    grid, note = sweeps.frontier_grid(None)
    assert grid == sweeps.W_TPOT_GRID and "fixed grid" in note
    grid, _ = sweeps.frontier_grid((500.0, 900.0))         # all above the slider: still a range inside it
    assert 0 < grid[1] < grid[-1] <= 100


# ------------------------------------------------------------------------------------------------ Advisor

def test_advisor_ranks_by_goodput_per_dollar_across_gpu_types():
    q = {"adv_gpus": "2", "adv_qps": "1,4", "adv_convs": "40", "adv_rank": "goodput_per_usd",
         "adv_gpu_types": "h100-sxm,A100-80GB"}
    at = _app(q, "pages/advise.py")
    assert not at.warning, [w.value for w in at.warning]
    assert _bar(at)["adv_gpu_types"] == "H100-SXM,A100-80GB"          # canonical names in the link
    assert list(at.multiselect(key="adv_gpu_types").value) == ["H100-SXM", "A100-80GB"]
    at.button[0].click().run()
    assert not at.exception, [e.message for e in at.exception]
    df = at.dataframe[0].value
    assert set(df["gpu"]) == {"H100-SXM", "A100-80GB"}
    elig = df[df["eligible"]]
    keys = list(zip(-elig["goodput_per_usd_h"], -elig["score"]))
    assert keys == sorted(keys)                                      # by goodput per dollar, ties by the score
    assert at.success[0].value.startswith("Best by goodput per GPU-dollar-hour:")


def test_advisor_gpu_type_that_cannot_hold_the_model_is_one_line():
    at = _app({"adv_gpu_types": "L4", "model": "Qwen2.5-14B", "adv_convs": "20", "adv_qps": "1"},
              "pages/advise.py")
    at.button[0].click().run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "`adv_gpu_types`: L4" in errors[0] and "smallest TP that fits is tp=2" in errors[0]
    assert "\n" not in errors[0] and not at.dataframe
    bad = _app({"adv_gpu_types": "H100-SXM,Z80"}, "pages/advise.py")
    ws = [w.value for w in bad.warning]
    assert len(ws) == 1 and "`adv_gpu_types`" in ws[0] and "'Z80'" in ws[0]
    assert _bar(bad) == {"adv_gpu_types": "H100-SXM"}


# ------------------------------------------------------------------------------------------------ present=1

PRESENT_PAGES = (("pages/sweep.py", {"conversations": "8"}), ("pages/learn.py", {"conversations": "2"}),
                 ("pages/advise.py", {}), ("pages/compare.py", {}),
                 ("pages/validation.py", {"val_sample": "2"}))


@pytest.mark.parametrize("page,query", PRESENT_PAGES, ids=[p.split("/")[1][:-3] for p, _ in PRESENT_PAGES])
def test_classroom_mode_on_every_page(page, query):
    at = _app({**query, "present": "1"}, page)
    assert not [w.value for w in at.warning if "present" in w.value]
    assert _bar(at).get("present") == "1"                            # the link keeps it
    assert all(f["layout"]["font"]["size"] >= 16 for f in _charts(at))
    bad = _app({**query, "present": "2"}, page)                      # still validated
    assert any("`present`" in w.value for w in bad.warning)


def test_goodput_view_formats_zero_and_nan():
    assert goodput_view._num(0.0) == "0" and goodput_view._num(math.nan) == "n/a"
    assert goodput_view.markers({"systems": {"PPD": {"goodput_qps": 2.0}, "PD": {"goodput_qps": 0.0}}}) == \
        {"PPD": 2.0}
