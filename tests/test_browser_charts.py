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


@pytest.mark.parametrize("query,charts", [("", 4), ("?present=1", 3)], ids=["explore", "classroom"])
@pytest.mark.parametrize("width,height", [(1400, 1000), (1280, 720)])
def test_explore_charts_fit_their_margins(st_server, browser, width, height, query, charts):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{st_server}/{query}")
        settle(page)
        page.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
                               arg=charts, timeout=180_000)
        page.wait_for_timeout(800)
        rows = page.evaluate(MARGINS_JS)
        assert len(rows) >= charts, rows
        assert not pushed(rows), pushed(rows)
    finally:
        ctx.close()


#: Draw a figure as Streamlit's chart element does on mount, then hand Plotly a JSON copy of it as the
#: element's effect does (``Plotly.react``); true when Plotly kept its computed data (no second calc and draw).
REDRAW_JS = """
async (fig) => {
  const gd = document.createElement('div');
  gd.style.width = '640px';
  document.body.appendChild(gd);
  await Plotly.newPlot(gd, fig.data, fig.layout, {displaylogo: false});
  const before = gd.calcdata;
  const copy = JSON.parse(JSON.stringify({data: gd.data, layout: gd.layout}));
  await Plotly.react(gd, copy.data, copy.layout, {displaylogo: false});
  const kept = gd.calcdata === before;
  Plotly.purge(gd); gd.remove();
  return kept;
}
"""


def test_a_shown_chart_is_not_computed_again_by_the_mount_effect(browser):
    """``specs.shown_figure``: Plotly's second pass over a mounted chart finds nothing new, so it neither
    recomputes nor redraws it; the plain figure of the same spec (numpy arrays, default template) is computed
    again, which shows the check can fail."""
    import json
    from pathlib import Path

    import plotly
    import plotly.io as pio
    import plotly.tools as ptools

    import ppd_core
    from ppd_core.config.scenario import Scenario
    from ui import charts, specs

    sc = Scenario(conversations=60)
    scs = dict(ppd_core.baselines(sc))
    results = {n: {"summary": (r := ppd_core.run(s)).summary, "records": r.records} for n, s in scs.items()}
    figs = specs.explore_specs(sc, False, results, scs)

    def sent(fig):          # what st.plotly_chart puts on the wire for a figure
        return json.loads(pio.to_json(ptools.return_figure_from_figure_or_data(fig, True), validate=False))

    page = browser.new_page()
    try:
        page.set_content("<html><body></body></html>")
        page.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"))
        for name, spec in figs.items():
            assert page.evaluate(REDRAW_JS, sent(specs.shown_figure(spec))), name
            assert not page.evaluate(REDRAW_JS, sent(specs.spec_figure(specs.readable_spec(spec)))), name
        band = charts.band_figure(sweep_frame(), "qps", "ttft_ms", "Turn 2+ TTFT vs QPS", "QPS (conv/s)")
        charts.readable(band)                   # a validated figure of the other pages, as charts.chart shows it
        assert page.evaluate(REDRAW_JS, sent(specs.browser_form(band.to_dict())))
        assert not page.evaluate(REDRAW_JS, sent(band))
    finally:
        page.close()


def sweep_frame():
    """A small Sweep-page frame (``charts.band_figure``'s input): p10/p50/p90 per system and QPS."""
    import pandas as pd
    rows = [{"system": name, "qps": q, "ttft_ms_p10": k * q, "ttft_ms_p50": 2 * k * q, "ttft_ms_p90": 3 * k * q}
            for k, name in enumerate(("PPD", "PD", "Replica"), start=1) for q in (1.0, 2.0, 4.0)]
    return pd.DataFrame(rows)
