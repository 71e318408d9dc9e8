"""AppTest (no browser) of issue #12's pages: the verdict and the three systems on Explore, presets, classroom
mode, the compare view."""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

import ppd_core
from ppd_core import Scenario

from conftest import APP, open_app
from ui import presets, verdict

TIMEOUT = 120


pytestmark = pytest.mark.usefixtures("in_process_runs")


def _app(query: dict | None = None, page: str | None = None) -> AppTest:
    return open_app(query, page, TIMEOUT)


def _verdict(at: AppTest) -> str:
    boxes = [m.value for m in at.markdown if 'id="ppd-verdict"' in m.value]
    assert len(boxes) == 1, "no verdict"
    return boxes[0]


def test_explore_verdict_is_the_sentence_of_the_three_runs():
    at = _app({"conversations": "150"})
    runs = {n: ppd_core.run(s).summary for n, s in ppd_core.baselines(Scenario(conversations=150)).items()}
    want = verdict.sentence(runs, {"PPD": "2P_2pD", "PD": "2P_2D", "Replica": "4R"})
    assert want.replace("'", "&#x27;") in _verdict(at)
    first = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert first["data"][0]["type"] == "bar" and len(first["data"][0]["x"]) == 3
    shapes = [s for s in first["layout"].get("shapes", []) if s.get("line", {}).get("dash") == "dash"]
    assert shapes, "no SLO line"
    labels = [m.label for m in at.metric]
    assert labels.count("Turn 2+ TTFT mean") == 3 and len(labels) == 6       # two cards per system


@pytest.mark.parametrize("preset", presets.PRESETS, ids=presets.PRESET_KEYS)
def test_every_preset_link_loads_and_shows_its_claim(preset):
    at = _app(preset.query())
    warnings = [w.value for w in at.warning]
    assert all(w.startswith("**Saturated:** ") for w in warnings), warnings   # only the saturation notice
    assert bool(warnings) == (preset.key == "overload"), warnings         # overload says who saturated
    md = [m.value for m in at.markdown]
    assert any(m.startswith(f"**Preset · {preset.title}.** Look at:") for m in md)
    checks = [m for m in md if m.startswith(("✅", "❌"))]
    assert len(checks) == len(preset.claims) and all(m.startswith("✅") for m in checks), checks
    assert dict(at.query_params)["preset"] in (preset.key, [preset.key])


def test_moving_a_control_leaves_the_preset():
    p = presets.by_key("slow-link")
    at = _app(p.query())
    at.slider(key="bandwidth_gbps").set_value(100.0).run()
    assert "preset" not in at.query_params
    assert not any(m.value.startswith("**Preset ·") for m in at.markdown)


def test_classroom_mode_large_fonts_fewer_controls():
    at = _app({"present": "1", "conversations": "100"})
    assert "font-size:1.9rem" in _verdict(at)
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert figs and all(f["layout"]["font"]["size"] >= 16 for f in figs)
    assert not at.metric and not at.table                          # the verdict and one chart per screen
    assert all(f["layout"]["height"] >= 540 for f in figs)


def test_compare_two_links():
    a = "http://localhost:8501/?conversations=80&qps=3"
    b = "http://localhost:8501/learn?conversations=80&qps=3&layout=2P_2D&policy=pd&learn_step=4"
    at = _app({"cmp_a": a, "cmp_b": b}, page="pages/compare.py")
    assert not [w.value for w in at.warning]
    diff, res = at.table[0].value, at.table[1].value
    assert list(diff.index) == ["layout", "policy"]
    sa = ppd_core.run(Scenario(conversations=80, qps=3)).summary
    sb = ppd_core.run(Scenario(conversations=80, qps=3, layout="2P_2D", policy="pd")).summary
    ta, tb = (s["groups"]["turn2plus"]["ttft_ms"]["mean"] for s in (sa, sb))
    assert res.loc["Turn 2+ TTFT mean", "A"] == f"{ta:,.1f} ms"
    assert res.loc["Turn 2+ TTFT mean", "B − A"] == f"+{tb - ta:,.1f} ms"
    assert "compare?cmp_a=" in [c.value for c in at.code][-1]


def test_compare_without_links_asks_for_them():
    at = _app(page="pages/compare.py")
    assert at.info and not at.table


def test_unmeasured_gpu_is_labelled_extrapolated_and_the_measured_pair_is_not():
    at = _app({"gpu": "A100-80GB", "conversations": "40"})
    side = [c.value for c in at.sidebar.caption if c.value.startswith("**Extrapolated:**")]
    assert side and "A100-80GB is not measured" in side[0]
    assert any(i.value.startswith("**Extrapolated**") for i in at.info)
    at = _app({"conversations": "40"})
    assert not [c for c in at.sidebar.caption if c.value.startswith("**Extrapolated")]
    assert not [i for i in at.info if i.value.startswith("**Extrapolated")]
