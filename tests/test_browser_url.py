"""In the real browser: the address bar equals the share link after every load and every widget change on
each page, the sidebar navigation keeps the scenario, and a visitor's infeasible model is one line in that
session only (issue #8.3-#8.5)."""
from __future__ import annotations

import pytest

import ppd_core
from ppd_core.config.scenario import Scenario

from browser_util import alerts, bar, link_query, path, settle, share_link

pytestmark = pytest.mark.browser

SMALL = "conversations=40&seed=5"


def _thumb(page, label: str):
    return page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider")


def _check(page) -> dict:
    from playwright.sync_api import expect
    settle(page)
    expect(page.get_by_test_id("stCode").filter(has_text="http").first).to_be_visible(timeout=60_000)
    assert not page.get_by_test_id("stException").count()
    link = share_link(page)
    assert link is not None, "no share link"
    assert bar(page) == link_query(link), (page.url, link)
    assert path(page) == link.split("?")[0].split("/", 3)[-1].strip("/") if link.count("/") > 2 else True
    return bar(page)


@pytest.mark.parametrize("page_path", ["", "sweep", "learn"])
def test_address_bar_is_the_share_link_after_every_load_and_change(st_server, page, page_path):
    size = "conversations=2" if page_path == "learn" else ("conversations=20" if page_path == "sweep" else SMALL)
    page.goto(f"{st_server}/{page_path}?layout=2P_2D&policy=PD&turns=1000000&unknown=1&{size}")
    got = _check(page)
    assert got["policy"] == "pd" and got["layout"] == "2P_2D" and got["turns"] == "64" and "unknown" not in got
    assert "Parameter turns:" in alerts(page) and "64" in alerts(page)
    thumb = _thumb(page, "conversation arrival rate")
    thumb.focus()
    page.keyboard.press("ArrowRight")                      # 4.0 -> 4.1
    got = _check(page)
    assert got["qps"] == "4.1"
    page.get_by_test_id("stRadio").filter(has_text="Turn 2+ policy").get_by_text("ppd", exact=True).click()
    got = _check(page)
    assert got["policy"] == "ppd"
    thumb = _thumb(page, "conversation arrival rate")
    thumb.focus()
    page.keyboard.press("ArrowLeft")                       # back to the default: qps leaves the bar
    got = _check(page)
    assert "qps" not in got


def test_bad_layout_does_not_stay_in_the_bar(st_server, page):
    page.goto(f"{st_server}/?layout=99P&{SMALL}")
    got = _check(page)
    assert "layout" not in got and "Parameter layout:" in alerts(page)


@pytest.mark.parametrize("page_path,query,want", [
    ("advise", "adv_gpus=2&model=Qwen2.5-14B&bogus=1&qps=7", {"adv_gpus": "2", "model": "Qwen2.5-14B", "qps": "7"}),
    ("paper", "qps=7&paper_t2_full=maybe", {"qps": "7"}),
    ("validation", "qps=7&val_dir=/etc&val_source=upload", {"qps": "7", "val_source": "upload"}),
])
def test_pages_without_a_share_box_clean_the_bar(st_server, page, page_path, query, want):
    page.goto(f"{st_server}/{page_path}?{query}")
    settle(page, timeout_ms=300_000)
    assert not page.get_by_test_id("stException").count()
    assert bar(page) == want
    rejected = {"advise": "bogus", "paper": "paper_t2_full", "validation": "val_dir"}[page_path]
    assert f"Parameter {rejected}:" in alerts(page)


def test_sidebar_navigation_keeps_the_scenario(st_server, page):
    page.goto(f"{st_server}/?qps=6&layout=1P_3D&{SMALL}")
    _check(page)
    want = Scenario(qps=6.0, layout="1P_3D", conversations=40, seed=5)
    nav = page.get_by_test_id("stSidebarNav")
    for name, url_path in (("Sweep", "sweep"), ("Advisor", "advise"), ("Learn", "learn"), ("Explore", "")):
        nav.get_by_role("link", name=name).click()
        page.wait_for_url(lambda u, p=url_path: u.split("?")[0].rstrip("/").endswith("/" + p) if p
                          else "/sweep" not in u and "/learn" not in u and "/advise" not in u, timeout=60_000)
        settle(page, timeout_ms=300_000)
        assert not page.get_by_test_id("stException").count()
        got = ppd_core.parse({k: v for k, v in bar(page).items() if not k.startswith("adv_")})
        assert got == (want.with_(conversations=3) if url_path == "learn" else want), (name, page.url)


def test_infeasible_model_is_one_line_in_that_session_only(st_server, browser):
    """The issue's sequence: Explore at the defaults, then Model -> Llama-3.1-70B (tp=1): the message with the
    smallest TP that fits, no traceback; a second visitor meanwhile gets normal numbers."""
    a = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    b = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    try:
        a.goto(f"{st_server}/?{SMALL}")
        settle(a)
        box = a.get_by_test_id("stSelectbox").filter(has_text="Model").get_by_role("combobox")
        box.click()
        a.keyboard.type("Llama-3.1-70B")
        a.keyboard.press("Enter")
        settle(a)
        assert not a.get_by_test_id("stException").count()
        errs = a.get_by_test_id("stAlert").all_inner_texts()
        assert errs and all("smallest TP that fits is tp=4" in e for e in errs), errs
        assert not a.get_by_test_id("stPlotlyChart").count()
        assert bar(a).get("model") == "Llama-3.1-70B"
        b.goto(f"{st_server}/sweep?seed=11&conversations=20")
        settle(b, timeout_ms=300_000)
        assert not b.get_by_test_id("stException").count() and not alerts(b)
        assert b.get_by_test_id("stPlotlyChart").count() == 5
    finally:
        a.context.close()
        b.context.close()
