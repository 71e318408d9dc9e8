"""In the real browser: a results-only control on Explore (the load, a weight, the policy …) reruns the two
fragments it affects, not the page (issue #13 item 3), and what they show is what a full load of the same link
shows; a control the sidebar depends on (the layout: its paper category) still reruns the page. On Learn a
step reruns the timeline and the share box, an interference control its chart and the share box.

AppTest cannot run a fragment alone (ui.widgets._on_change), so this is checked here only."""
from __future__ import annotations

import re

import pytest

import ppd_core

from browser_util import bar, link_query, settle, share_link

pytestmark = pytest.mark.browser

START = "conversations=60&seed=11&qps=5.2"
#: counts the websocket messages the page receives: a rerun of the page sends every element again
COUNT_JS = """
(() => {
  window.__wsMessages = 0;
  const Orig = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Orig(...args);
    ws.addEventListener('message', () => { window.__wsMessages += 1; });
    return ws;
  };
  window.WebSocket.prototype = Orig.prototype;
  Object.assign(window.WebSocket, Orig);
})();
"""


@pytest.fixture(autouse=True)
def _expect_timeout():
    from playwright.sync_api import expect
    expect.set_options(timeout=90_000)
    yield


def _thumb(page, label: str):
    return page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider")


def _numbers(page) -> list[str]:
    """Every card, table cell and the verdict, as shown."""
    cards = page.get_by_test_id("stMetric").all_inner_texts()
    table = page.get_by_test_id("stTable").all_inner_texts()
    verdict = page.locator("#ppd-verdict").inner_text()
    return cards + table + [verdict]


def _messages_for(page, action) -> int:
    page.evaluate("() => { window.__wsMessages = 0; }")
    action()
    settle(page)
    return page.evaluate("() => window.__wsMessages")


def test_results_only_control_reruns_the_results_not_the_page(st_server, page, browser):
    from playwright.sync_api import expect
    page.add_init_script(COUNT_JS)
    page.goto(f"{st_server}/?{START}")
    settle(page)
    thumb = _thumb(page, "conversation arrival rate")

    def move():
        thumb.focus()
        page.keyboard.press("ArrowRight")               # 5.2 -> 5.3
        expect(page).to_have_url(re.compile(r"[?&]qps=5\.3(&|$)"))

    fast = _messages_for(page, move)
    assert bar(page)["qps"] == "5.3" and ppd_core.parse(share_link(page)).qps == 5.3
    sweep = page.get_by_test_id("stSidebarUserContent").get_by_role("link", name="Sweep", exact=True)
    assert "qps=5.3" in (sweep.get_attribute("href") or "")     # the sidebar's links follow the value
    shown = _numbers(page)

    # the same link opened fresh (a full run): the same numbers, to the character
    fresh = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        fresh.goto(share_link(page))
        settle(fresh)
        assert _numbers(fresh) == shown
    finally:
        fresh.close()
    want = ppd_core.run(ppd_core.parse(share_link(page))).summary["groups"]["turn2plus"]["ttft_ms"]["mean"]
    assert f"{want:,.1f} ms" in " ".join(shown)

    # the layout's paper category is in the sidebar: that control reruns the page, which sends far more
    def layout():
        box = page.get_by_test_id("stSelectbox").filter(has_text="Layout").get_by_role("combobox")
        box.click()
        page.keyboard.type("1P_3D")
        page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(r"[?&]layout=1P_3D(&|$)"))

    full = _messages_for(page, layout)
    expect(page.get_by_test_id("stSidebar").get_by_text("Paper category: PD (x=0)")).to_be_visible()
    assert fast + 25 < full, (fast, full)       # the sidebar's ~40 controls were not sent again


def test_learn_steps_rerun_the_timeline_and_the_share_box(st_server, page):
    from playwright.sync_api import expect
    page.add_init_script(COUNT_JS)
    page.goto(f"{st_server}/learn?conversations=2&qps=2")
    settle(page)
    thumb = _thumb(page, "Step through events")

    def next_step():
        page.get_by_role("button", name="Next ▶").click()
        expect(page).to_have_url(re.compile(r"[?&]learn_step=1(&|$)"))

    step = _messages_for(page, next_step)
    expect(thumb).to_have_value("1")                     # the slider follows the button
    expect(page.get_by_text(re.compile(r"Event 2 of \d+"))).to_be_visible()
    assert bar(page)["learn_step"] == "1" and link_query(share_link(page)) == bar(page)   # the share box too

    def interference():
        page.get_by_test_id("stRadio").filter(has_text="Prefills inserted").get_by_text("4", exact=True).click()
        expect(page).to_have_url(re.compile(r"[?&]learn_prefills=4(&|$)"))

    other = _messages_for(page, interference)
    assert link_query(share_link(page)) == bar(page) and bar(page)["learn_step"] == "1"

    def scenario():                                      # a sidebar control: the whole page
        thumb = _thumb(page, "conversation arrival rate")
        thumb.focus()
        page.keyboard.press("ArrowRight")
        expect(page).to_have_url(re.compile(r"[?&]qps=2\.1(&|$)"))

    full = _messages_for(page, scenario)
    assert step + 30 < full and other + 30 < full, (step, other, full)
