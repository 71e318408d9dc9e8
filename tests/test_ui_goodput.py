"""Pure helpers of issue #11's dashboard half: the verdict's goodput phrase, the name multi-select's URL
validation, the goodput search's progress over successive sweeps."""
from __future__ import annotations

import math

from ui import verdict
from ui.controls import Control
from ui.urlstate import validate_extra


def test_goodput_phrase_names_the_winner_and_its_margin():
    assert verdict.goodput_win({"PPD": 5.75, "PD": 0.0, "Replica": 10.8}) == \
        "goodput Replica (10.8 vs 5.75 conv/s, by 88 %)"
    assert verdict.goodput_win({"PPD": 3.0, "PD": 0.0, "Replica": 0.0}) == \
        "goodput PPD (3 conv/s; the others meet both SLOs at no rate tried)"        # not "a tie"
    assert verdict.goodput_win({"PPD": 4.0, "PD": 4.01}) == "goodput a tie"
    assert verdict.goodput_win({"PPD": 0.0, "PD": 0.0}).startswith("goodput none")
    assert verdict.goodput_win({"PPD": 4.0, "PD": math.nan}) is None


def test_sentence_with_goodput_ends_with_it():
    s = {"PPD": {"groups": {"turn2plus": {"ttft_ms": {"mean": 50.0}, "tpot_ms": {"mean": 10.0}}}},
         "PD": {"groups": {"turn2plus": {"ttft_ms": {"mean": 150.0}, "tpot_ms": {"mean": 9.8}}}}}
    text = verdict.sentence(s, {"PPD": "2P_2D", "PD": "2P_2D"}, {"PPD": 6.0, "PD": 2.0})
    assert text.endswith("goodput PPD (6 vs 2 conv/s, by 200 %).")
    assert "goodput" not in verdict.sentence(s, {"PPD": "2P_2D", "PD": "2P_2D"})


def test_name_multiselect_in_the_url():
    c = Control("adv_gpu_types", "GPU types", "multi", options=("H100-SXM", "A100-80GB", "L4"), default=())
    assert validate_extra(c, "l4,H100-SXM,l4") == (("L4", "H100-SXM"), None)
    vals, msg = validate_extra(c, "L4,nope")
    assert vals == ("L4",) and msg.startswith("`adv_gpu_types`: 'nope' is not allowed")
    assert validate_extra(c, "") == ((), None)


def test_search_progress_adds_the_sweeps_up(monkeypatch):
    import streamlit as st

    from ui import goodput_view
    drawn = []

    class Bar:
        def progress(self, frac, text=""):
            drawn.append((round(frac, 3), text))

        def empty(self):
            drawn.append("gone")

    monkeypatch.setattr(st, "progress", lambda *a, **k: Bar())
    p = goodput_view.SearchProgress("search", expected=4)
    for done, total in ((0, 1), (1, 1), (0, 2), (1, 2), (2, 2)):       # two steps of the search
        p(done, total)
    p.close()
    assert [t for _, t in drawn[:-1]][-1] == "search… 3 runs" and drawn[-1] == "gone"
    assert all(f < 1 for f, _ in drawn[:-1])
