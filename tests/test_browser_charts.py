"""Explore's charts are drawn once per slider move: every label and legend fits the margins the spec sets.

When a tick label, axis title or legend overflows its margin, Plotly's ``automargin`` widens the margin and
draws the whole figure a second time; on Explore that was about a third of the browser's chart time per
slider move (issue #13). The graph div keeps both: ``layout.margin`` (what the spec asked for) and
``_fullLayout._size`` (what Plotly drew with)."""
from __future__ import annotations

import pytest

from browser_util import settle

pytestmark = pytest.mark.browser

#: [chart key, margin asked for, margin drawn with] of every Plotly chart on the page.
MARGINS_JS = """
() => [...document.querySelectorAll('.js-plotly-plot')].map(d => {
  const box = d.closest('[class*="st-key-"]');
  const key = box ? [...box.classList].find(c => c.startsWith('st-key-')) : '?';
  const m = d.layout.margin || {}, s = d._fullLayout._size;
  return [key, [m.l, m.r, m.t, m.b], [s.l, s.r, s.t, s.b]];
})
"""


def pushed(rows: list) -> list:
    """The charts whose drawn margins differ from the ones asked for."""
    return [r for r in rows if r[1] != r[2]]


def test_pushed_check_can_fail():
    assert pushed([["a", [50, 10, 60, 130], [54, 10, 60, 170]], ["b", [1, 2, 3, 4], [1, 2, 3, 4]]]) == [
        ["a", [50, 10, 60, 130], [54, 10, 60, 170]]]


@pytest.mark.parametrize("width,height", [(1400, 1000), (1280, 720)])
def test_explore_charts_fit_their_margins(st_server, browser, width, height):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{st_server}/")
        settle(page)
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4",
                               timeout=180_000)
        page.wait_for_timeout(800)
        rows = page.evaluate(MARGINS_JS)
        assert len(rows) >= 4, rows
        assert not pushed(rows), pushed(rows)
    finally:
        ctx.close()
