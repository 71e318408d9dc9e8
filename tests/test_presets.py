"""Presets that teach (issue #12 item 2): each preset's claim holds in the run its link opens."""
from __future__ import annotations

import functools

import pytest

import ppd_core
from ppd_core import Scenario
from ppd_core.config.page_keys import is_page_key, parse_link

from ui import presets


@functools.lru_cache(maxsize=None)
def _summary(sc: Scenario) -> dict:
    return ppd_core.run(sc).summary


@pytest.mark.parametrize("preset", presets.PRESETS, ids=presets.PRESET_KEYS)
def test_preset_claim_holds_in_its_run(preset):
    verdicts = presets.check(preset, _summary)
    assert verdicts
    for v in verdicts:
        assert v.holds, v.text()


@pytest.mark.parametrize("preset", presets.PRESETS, ids=presets.PRESET_KEYS)
def test_preset_link_names_its_scenario(preset):
    """The preset's query is a valid link for the CLI too (its ``preset`` key is page-only)."""
    sc, dropped = parse_link(preset.query())
    assert sc == preset.scenario() and dropped == ["preset"]
    assert preset.look_at and preset.why and preset.title


def test_a_claim_can_fail():
    """The check is not vacuous: the paper claim reversed does not hold."""
    paper = presets.by_key("paper")
    rev = presets.Claim("ttft", paper.claims[0].b, paper.claims[0].a, 0.6)
    v = presets.check(presets.Preset("rev", "rev", paper.params, "x", "y", (rev,)), _summary)[0]
    assert not v.holds and "is not ≤" in v.text()


def test_preset_keys_are_unique_and_page_only():
    assert len(set(presets.PRESET_KEYS)) == len(presets.PRESETS)
    assert is_page_key("preset")
    with pytest.raises(ValueError, match="factor"):
        presets.Claim("ttft", presets.Point("PPD"), presets.Point("PD"), float("nan"))
