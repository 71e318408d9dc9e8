"""Issue #12 in the real browser: the story above the fold at 1280×720, preset links, Learn at event 1, the
compare view, and no overlapping text in any chart's SVG on any page."""
from __future__ import annotations

import itertools
import re
from urllib.parse import urlencode

import pytest

from browser_util import settle
from ui import presets

pytestmark = pytest.mark.browser

#: Every text box of every Plotly chart on the page: [chart index, text, left, top, right, bottom].
TEXT_BOXES_JS = """
() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((plot, i) =>
  [...plot.querySelectorAll('svg text')].filter(t => {
      const s = getComputedStyle(t);
      const r = t.getBoundingClientRect();
      return t.textContent.trim() && s.display !== 'none' && s.visibility !== 'hidden' &&
             parseFloat(s.opacity || '1') > 0 && r.width > 0 && r.height > 0;
  }).map(t => { const r = t.getBoundingClientRect();
                return [i, t.textContent.trim(), r.left, r.top, r.right, r.bottom]; }))
"""
TOLERANCE_PX = 2.0      # glyph boxes include line spacing: touching boxes are not an overlap


def overlaps(boxes: list) -> list[tuple[str, str]]:
    """Pairs of text boxes of one chart that overlap by more than TOLERANCE_PX in both directions."""
    out = []
    for a, b in itertools.combinations(boxes, 2):
        if a[0] != b[0]:
            continue
        dx = min(a[4], b[4]) - max(a[2], b[2])
        dy = min(a[5], b[5]) - max(a[3], b[3])
        if dx > TOLERANCE_PX and dy > TOLERANCE_PX:
            out.append((a[1], b[1]))
    return out


def test_overlap_check_can_fail():
    assert overlaps([[0, "a", 0, 0, 10, 10], [0, "b", 5, 5, 15, 15]]) == [("a", "b")]
    assert not overlaps([[0, "a", 0, 0, 10, 10], [0, "b", 11, 0, 20, 10], [1, "c", 0, 0, 10, 10]])


def _open(page, url: str, charts: int = 1) -> None:
    page.goto(url)
    settle(page)
    if charts:
        page.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
                               arg=charts, timeout=180_000)
        page.wait_for_timeout(800)


def test_explore_story_above_the_fold_at_1280x720(st_server, browser, artifacts):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    try:
        _open(page, st_server + "/")
        verdict = page.locator("#ppd-verdict")
        box = verdict.bounding_box()
        assert box and box["y"] + box["height"] <= 720, box
        assert re.match(r"PPD \(2P_2pD\) (cuts|raises) Turn 2\+ TTFT by \d+ % vs PD", verdict.inner_text())
        chart = page.get_by_test_id("stPlotlyChart").first.bounding_box()
        assert chart and chart["y"] + chart["height"] <= 720, chart
        replica = page.get_by_text("Replica", exact=False).first.bounding_box()
        assert replica and replica["y"] < 720
        page.screenshot(path=str(artifacts / "explore-1280x720.png"))
    finally:
        ctx.close()


@pytest.mark.parametrize("preset", presets.PRESETS, ids=presets.PRESET_KEYS)
def test_preset_link_loads_and_shows_its_effect(st_server, page, preset):
    _open(page, f"{st_server}/?{urlencode(preset.query())}")
    main = page.get_by_test_id("stMain")
    assert main.get_by_text(f"Preset · {preset.title}.").count() == 1
    text = main.inner_text()
    assert text.count("✅") == len(preset.claims) and "❌" not in text, text[:2000]


def test_learn_opens_at_event_1(st_server, page):
    _open(page, f"{st_server}/learn", charts=2)
    assert page.get_by_text(re.compile(r"^Event 1 of \d+ at t =")).count() == 1
    assert page.get_by_test_id("stSidebar").get_by_text("Conversations on the timeline").count() == 1


def test_compare_two_links(st_server, page):
    a = f"{st_server}/?conversations=60"
    b = f"{st_server}/learn?conversations=60&layout=2P_2D&policy=pd&learn_step=3"
    _open(page, f"{st_server}/compare?{urlencode({'cmp_a': a, 'cmp_b': b})}", charts=0)
    main = page.get_by_test_id("stMain")
    main.get_by_text("Results side by side").wait_for()
    assert "Differs in layout (2P_2pD → 2P_2D), policy (dynamic → pd)." in main.inner_text()
    assert page.get_by_test_id("stTable").count() == 2


PAGES = (("", 4), ("?present=1", 3), ("sweep?conversations=100", 5), ("learn", 2), ("advise", 0), ("paper", 1),
         ("validation", 0))


@pytest.mark.parametrize("path,charts", PAGES, ids=[p or "explore" for p, _ in PAGES])
def test_no_overlapping_chart_labels(st_server, page, artifacts, path, charts):
    _open(page, f"{st_server}/{path}", charts=charts)
    boxes = page.evaluate(TEXT_BOXES_JS)
    bad = overlaps(boxes)
    if bad:
        page.screenshot(path=str(artifacts / f"overlap-{re.sub(r'[^a-z0-9]+', '_', path or 'explore')}.png"),
                        full_page=True)
    assert not bad, bad[:10]
