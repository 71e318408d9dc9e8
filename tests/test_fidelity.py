"""The expected simulator error on every number (issue #28): which validation class a scenario falls into,
the error that class carries, and where the dashboard and the CLI show it."""
from __future__ import annotations

import json
import math

import pytest

from ppd_core.calibration import errors_file
from ppd_core.calibration.lolo import FAMILIES, in_family
from ppd_core.config.scenario import Scenario
from ppd_core.metrics import fidelity
from ppd_core.metrics.fidelity import CLASSES, METRICS, classify, error_classes, expected_error, within_error


def test_each_class_is_reached_by_what_defines_it():
    h, m = "H100-SXM", "Llama-3.1-8B"
    assert classify(h, m, 1, "2P_2pD", "sharegpt")[0] == ["calibrated"]
    assert classify(h, m, 1, "4R", "small_mid_bal")[0] == ["calibrated"]
    assert classify(h, m, 1, "2P_2pD", "wildchat")[0][0] == "unseen_trace"
    assert classify(h, m, 1, "1R_1P_2D", "sharegpt")[0][0] == "unseen_layout"
    assert classify(h, m, 1, "4P_12pD", "sharegpt")[0][0] == "unseen_layout"      # a larger cluster
    assert classify("H200", m, 1, "2P_2pD", "sharegpt")[0][0] == "extrapolated"
    assert classify(h, m, 2, "2P_2pD", "sharegpt")[0][0] == "extrapolated"
    assert classify(h, "Qwen2.5-14B", 1, "2P_2pD", "sharegpt")[0][0] == "extrapolated"


def test_worst_class_wins_and_each_metric_takes_the_largest_error_that_applies():
    both = expected_error("H100-SXM", "Llama-3.1-8B", 1, "1R_1P_2D", "wildchat")
    table = error_classes()
    assert both["class"] == "unseen_layout"
    for m in METRICS:
        assert both["errors_pct"][m] == max(table["unseen_layout"].errors[m], table["unseen_trace"].errors[m])
    assert len(both["reasons"]) == 2 and "1R_1P_2D" in both["reasons"][0] and "wildchat" in both["reasons"][1]


def test_shipped_errors_grow_from_calibrated_to_extrapolated():
    """The file's figures are held-out measurements; a class further from the calibration set must not claim a
    smaller error than a nearer one."""
    t = error_classes()
    for m in METRICS:
        assert 0 < t["calibrated"].errors[m] <= t["unseen_layout"].errors[m] <= t["extrapolated"].errors[m]
        assert t["calibrated"].errors[m] <= t["unseen_trace"].errors[m]
        assert all(t[c].source for c in CLASSES)
    # an extrapolated GPU on unseen text carries the larger of both errors, whatever the file's order
    e = expected_error("H200", "Llama-3.1-8B", 1, "2P_2pD", "wildchat")
    assert e["class"] == "extrapolated"
    for m in METRICS:
        assert e["errors_pct"][m] == max(t["extrapolated"].errors[m], t["unseen_trace"].errors[m])


@pytest.mark.parametrize("bad, msg", [
    ({}, "no 'classes'"),
    ({"classes": {"calibrated": {"errors": {}}}}, "turn2_tpot_mean"),
    ({"classes": {c: {"errors": {m: float("nan") for m in METRICS}} for c in CLASSES}}, "percentage"),
    ({"classes": {c: {"errors": {m: -1 for m in METRICS}} for c in CLASSES}}, "percentage"),
    ({"classes": {c: {"errors": {m: True for m in METRICS}} for c in CLASSES}}, "percentage"),
])
def test_a_broken_errors_file_is_named_with_what_is_wrong(tmp_path, monkeypatch, bad, msg):
    f = tmp_path / "expected_error.json"
    f.write_text(json.dumps(bad))
    monkeypatch.setattr(fidelity, "ERRORS_FILE", f)
    error_classes.cache_clear()
    try:
        with pytest.raises(fidelity.FidelityDataError, match=msg):
            error_classes()
    finally:
        error_classes.cache_clear()


def test_within_error_is_a_symmetric_ratio_test():
    assert within_error(100, 110, 15) and within_error(110, 100, 15)
    assert not within_error(100, 120, 15) and not within_error(120, 100, 15)
    assert not within_error(100, float("nan"), 15) and not within_error(0, 100, 15)


def test_a_run_summary_and_its_json_carry_the_expected_error():
    from ppd_core.analysis.runs import run
    r = run(Scenario(layout="1R_1P_1D_1pD", workload="sharegpt", conversations=20))
    e = r.summary["expected_error"]
    assert e["class"] == "unseen_layout" and set(e["errors_pct"]) == set(METRICS)
    assert json.loads(json.dumps(r.summary))["expected_error"] == e


def test_the_verdict_says_when_a_difference_is_inside_the_error():
    from ui.verdict import sentence

    def summ(ttft, cls="calibrated"):
        return {"groups": {"turn2plus": {"ttft_ms": {"mean": ttft}, "tpot_ms": {"mean": 10.0}}},
                "expected_error": expected_error("H100-SXM", "Llama-3.1-8B", 1,
                                                 "2P_2pD" if cls == "calibrated" else "1R_1P_2D", "sharegpt")}
    err = error_classes()["calibrated"].errors["effect_ttft"]
    close = {"PPD": summ(100.0), "PD": summ(300.0), "Replica": summ(100.0 * (1 + err / 200))}
    text = sentence(close, {"PPD": "2P_2pD", "PD": "2P_2D", "Replica": "4R"})
    assert "PPD and Replica are within the simulator's error here" in text and "PPD and PD" not in text
    far = {"PPD": summ(100.0), "PD": summ(300.0), "Replica": summ(200.0)}
    assert "within the simulator's error" not in sentence(far, {})


def test_explore_chart_draws_the_error_as_a_whisker_of_the_mean():
    from ui.specs import systems_spec
    e = expected_error("H100-SXM", "Llama-3.1-8B", 1, "2P_2pD", "sharegpt")
    g = {"ttft_ms": {"mean": 80.0, "p90": 120.0}, "tpot_ms": {"mean": 10.0, "p90": 12.0}}
    spec = systems_spec({"PPD": {"groups": {"turn2plus": g}, "expected_error": e}}, {"PPD": "2P_2pD"})
    whiskers = [t for t in spec["data"] if t.get("name") == "expected simulator error"]
    assert len(whiskers) == 2
    assert whiskers[0]["error_y"]["array"] == pytest.approx([80.0 * e["errors_pct"]["turn2_ttft_p50"] / 100])
    assert whiskers[1]["error_y"]["array"] == pytest.approx([10.0 * e["errors_pct"]["turn2_tpot_mean"] / 100])


def test_families_cover_what_the_issue_names():
    assert set(FAMILIES) == {"pD", "multi_P", "natural_text"}
    assert in_family("pD", "1R_1P_2pD") and not in_family("pD", "2P_2D")
    assert in_family("multi_P", "2P_2D") and not in_family("multi_P", "1P_3pD")


def _val(tpot, ttft, eff):
    return {"overall": {"turn2_tpot_mean": {"mape": tpot}, "turn2_ttft_p50_unsaturated": {"mape": ttft}},
            "effect_size": {"ttft": {"median_abs_pct": eff}}, "seeds": 4}


def _fam(tpot, ttft, eff):
    return {"doc": "", "held_out_layouts": [], "turn2_tpot_mean": {"mape": tpot},
            "turn2_ttft_p50_unsaturated": {"mape": ttft}, "effect_ttft": eff, "converged": True}


def test_errors_file_takes_the_worst_family_and_adds_the_anchor_error_in_quadrature(tmp_path):
    fams = {"families": {"pD": _fam(5.0, 12.0, 9.0), "multi_P": _fam(6.0, 11.0, 14.0),
                         "natural_text": _fam(4.5, 13.0, None)}, "seconds": 1.0}
    c = errors_file.classes(_val(3.8, 10.0, 8.0), fams, anchor_pct=10.0)
    assert c["calibrated"]["errors"] == {"turn2_tpot_mean": 3.8, "turn2_ttft_p50": 10.0, "effect_ttft": 8.0}
    assert c["unseen_layout"]["errors"] == {"turn2_tpot_mean": 6.0, "turn2_ttft_p50": 12.0, "effect_ttft": 14.0}
    assert c["unseen_trace"]["errors"] == {"turn2_tpot_mean": 4.5, "turn2_ttft_p50": 13.0, "effect_ttft": 14.0}
    assert c["extrapolated"]["errors"]["turn2_ttft_p50"] == pytest.approx(math.hypot(12.0, 10.0), abs=0.05)
    # a family better than the calibration set does not lower a class below it
    c = errors_file.classes(_val(7.0, 10.0, 8.0), fams, anchor_pct=10.0)
    assert c["unseen_layout"]["errors"]["turn2_tpot_mean"] == 7.0
    out = errors_file.write(tmp_path / "e.json", _val(3.8, 10.0, 8.0), fams, "test")
    assert set(out["classes"]) == set(CLASSES) and json.loads((tmp_path / "e.json").read_text()) == out
