"""Issue #11's goodput display in the real browser: Explore's headline comes first, the goodput button computes
the three goodputs (table + verdict), and the Sweep's goodput markers and frontier labels do not overlap."""
from __future__ import annotations

import re

import pytest

from browser_util import settle
from test_browser_story import TEXT_BOXES_JS, overlaps

pytestmark = pytest.mark.browser


def test_explore_goodput_button_fills_the_table_and_the_verdict(st_server, page):
    page.goto(f"{st_server}/?conversations=60&layout=2P_2D")
    settle(page)
    verdict = page.locator("#ppd-verdict")
    assert "PPD (2P_2D)" in verdict.inner_text() and "goodput" not in verdict.inner_text()
    main = page.get_by_test_id("stMain")
    main.get_by_role("button", name=re.compile("Compute goodput")).click()
    main.get_by_text("goodput (conv/s)").wait_for(timeout=240_000)
    settle(page)
    text = verdict.inner_text()
    assert re.search(r"goodput (PPD|PD|Replica) \(", text) or "goodput a tie" in text, text
    table = main.get_by_test_id("stTable").filter(has_text="goodput (conv/s)")
    rows = table.inner_text()
    assert all(name in rows for name in ("PPD", "PD", "Replica")) and "per GPU" in rows
    assert main.get_by_role("button", name=re.compile("Compute goodput")).count() == 0


def test_sweep_goodput_markers_and_frontier_labels_do_not_overlap(st_server, page, artifacts):
    page.goto(f"{st_server}/sweep?conversations=40&layout=1P_3D")
    settle(page, timeout_ms=300_000)
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 5",
                           timeout=300_000)
    page.wait_for_timeout(800)
    texts = [b[1] for b in page.evaluate(TEXT_BOXES_JS)]
    assert any(t.startswith("PPD goodput") for t in texts), texts[:40]
    assert any(re.match(r"w_tpot [\d.–]+: local \d+%", t) for t in texts)
    bad = overlaps(page.evaluate(TEXT_BOXES_JS))
    if bad:
        page.screenshot(path=str(artifacts / "overlap-sweep-goodput.png"), full_page=True)
    assert not bad, bad[:10]
