"""End-to-end: the real app in Debian's Chromium via Playwright (no browser download).

Shared links restore widgets and numbers (checked against ``ppd_core.run`` in-process), slider moves update the
URL and the numbers, bad links load with a warning per rejected parameter, and every page renders. Screenshots
go to ``artifacts/`` (gitignored); with ``PPD_UPDATE_SCREENSHOTS=1`` the page screenshots are also written to
``docs/screenshots/`` for the README.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

import ppd_core
from ppd_core.config.scenario import Scenario

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
SHARED = {"layout": "1P_3D", "qps": "6.5", "bandwidth_gbps": "25", "w_tpot": "2.5", "workload": "small_mid_bal",
          "turns": "3", "conversations": "200", "seed": "7"}


@pytest.fixture(autouse=True)
def _expect_timeout():
    from playwright.sync_api import expect
    expect.set_options(timeout=90_000)      # 2-core CI shared with the simulator: generous
    yield


def _query(d: dict) -> str:
    return "&".join(f"{k}={v}" for k, v in d.items())


def _thumb(page, label: str):
    return page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider")


def _select(page, label: str):
    return page.get_by_test_id("stSelectbox").filter(has_text=label).get_by_role("combobox")


def _wait_ready(page, charts: int = 1) -> None:
    """The run finished: metrics/charts present, nothing stale, Plotly drew its SVG."""
    from playwright.sync_api import expect
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
    page.wait_for_function(
        "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n && "
        "!document.querySelector('[data-stale=\"true\"]')", arg=charts)


def _metric_text(page, label: str) -> str:
    card = page.get_by_test_id("stMetric").filter(has_text=label).first
    return card.get_by_test_id("stMetricValue").inner_text().strip()


def _ms(v: float) -> str:
    return f"{v:,.1f} ms"


def _url_params(page) -> dict:
    return dict(parse_qsl(urlsplit(page.url).query))


def _shot(page, path: Path, full: bool = True) -> None:
    """Screenshot the whole app (Streamlit scrolls inside its main container, so grow the viewport)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if full:
        h = page.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"], "
                          "[data-testid=\"stSidebarContent\"]')].map(e => e.scrollHeight), 900)")
        page.set_viewport_size({"width": 1400, "height": min(int(h) + 40, 7000)})
        page.wait_for_timeout(800)           # let Plotly relayout to the new size
    page.screenshot(path=str(path), full_page=True)


def test_shared_link_restores_widgets_and_numbers(st_server, page, artifacts):
    from playwright.sync_api import expect
    page.goto(f"{st_server}/?{_query(SHARED)}")
    _wait_ready(page, 3)
    expect(_thumb(page, "conversation arrival rate")).to_have_value("6.5")
    expect(_thumb(page, "KV-transfer bandwidth")).to_have_value("25")
    expect(_thumb(page, "w_tpot")).to_have_value("2.5")
    expect(_select(page, "Layout")).to_have_value("1P_3D")
    expect(_select(page, "Workload")).to_have_value("small_mid_bal")
    expect(page.get_by_test_id("stAlert")).to_have_count(0)
    summary = ppd_core.run(ppd_core.parse(SHARED)).summary
    assert _metric_text(page, "Turn 2+ TTFT mean") == _ms(summary["groups"]["turn2plus"]["ttft_ms"]["mean"])
    assert _metric_text(page, "Turn 2+ TPOT mean") == _ms(summary["groups"]["turn2plus"]["tpot_ms"]["mean"])
    # the share box shows a link that parses to the same scenario
    link = page.get_by_test_id("stCode").filter(has_text="http").first.inner_text().strip()
    assert ppd_core.parse(link) == ppd_core.parse(SHARED)
    _shot(page, artifacts / "browser-shared-link.png")


def test_slider_move_updates_url_and_numbers(st_server, page, artifacts):
    from playwright.sync_api import expect
    start = {**SHARED, "seed": "8", "workload": "sharegpt", "turns": "0", "qps": "3.9"}
    page.goto(f"{st_server}/?{_query(start)}")
    _wait_ready(page, 3)
    before = _metric_text(page, "Turn 2+ TTFT mean")
    assert before == _ms(ppd_core.run(ppd_core.parse(start)).summary["groups"]["turn2plus"]["ttft_ms"]["mean"])
    thumb = _thumb(page, "conversation arrival rate")
    thumb.focus()
    page.keyboard.press("ArrowRight")              # 3.9 -> 4.0, the default: the parameter leaves the URL
    expect(thumb).to_have_value("4")
    expect(page).not_to_have_url(re.compile(r"[?&]qps="))
    page.keyboard.press("ArrowRight")              # 4.0 -> 4.1
    expect(page).to_have_url(re.compile(r"[?&]qps=4\.1(&|$)"))
    moved = ppd_core.parse({**start, "qps": "4.1"})
    want = _ms(ppd_core.run(moved).summary["groups"]["turn2plus"]["ttft_ms"]["mean"])
    expect(page.get_by_test_id("stMetric").filter(has_text="Turn 2+ TTFT mean").first
           .get_by_test_id("stMetricValue")).to_have_text(want)
    _wait_ready(page, 3)
    assert ppd_core.parse(_url_params(page)) == moved
    link = page.get_by_test_id("stCode").filter(has_text="http").first.inner_text().strip()
    assert ppd_core.parse(link) == moved
    _shot(page, artifacts / "browser-slider-moved.png", full=False)


def test_preset_and_typed_layout(st_server, page):
    from playwright.sync_api import expect
    page.goto(f"{st_server}/?conversations=60&seed=9")
    _wait_ready(page, 3)
    page.get_by_role("button", name=re.compile(r"^IB HDR")).click()
    expect(_thumb(page, "KV-transfer bandwidth")).to_have_value("25")
    expect(page).to_have_url(re.compile(r"[?&]bandwidth_gbps=25(&|$)"))
    box = _select(page, "Layout")
    for text, ok in (("3P_1pD_2R", True), ("3P", False)):
        box.click()
        page.keyboard.type(text)
        page.keyboard.press("Enter")
        if ok:
            expect(page).to_have_url(re.compile(r"[?&]layout=2R_3P_1pD(&|$)"))
        else:
            expect(page.get_by_test_id("stAlert").filter(has_text="refused")).to_be_visible()
    _wait_ready(page, 3)
    assert ppd_core.parse(_url_params(page)).layout == "2R_3P_1pD"


BAD_URLS = [
    ("qps=abc", ["qps"]),
    ("layout=99P", ["layout"]),
    ("bandwidth_gbps=-5", ["bandwidth_gbps"]),
    ("turns=1000000", ["turns"]),
    ("unknown=1", ["unknown"]),
    ("qps=abc&layout=99P&bandwidth_gbps=-5&turns=1000000&unknown=1&conversations=50", ["qps", "layout",
                                                                                       "bandwidth_gbps", "turns",
                                                                                       "unknown"]),
    ("conversations=50&junk=" + "x" * 100_000, ["junk"]),
]


@pytest.mark.parametrize("query,keys", BAD_URLS, ids=[q[:24] for q, _ in BAD_URLS])
def test_bad_links_load_with_warnings(st_server, page, artifacts, query, keys):
    from playwright.sync_api import expect
    page.goto(f"{st_server}/?{query}")
    _wait_ready(page, 3)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    alerts = " ".join(a.inner_text() for a in page.get_by_test_id("stAlert").all())
    for k in keys:
        assert k in alerts, (k, alerts[:500])
    # the numbers on screen are those of the fixed scenario the share box names
    link = page.get_by_test_id("stCode").filter(has_text="http").first.inner_text().strip()
    sc = ppd_core.parse(link)
    assert _metric_text(page, "Turn 2+ TTFT mean") == _ms(
        ppd_core.run(sc).summary["groups"]["turn2plus"]["ttft_ms"]["mean"])
    _shot(page, artifacts / f"browser-bad-{re.sub(r'[^a-z0-9]+', '_', query[:30])}.png", full=False)


def test_pages_render_and_screenshots(st_server, page, artifacts):
    """Explore, Sweep and Learn render without errors; the screenshots double as the README's (run with
    PPD_UPDATE_SCREENSHOTS=1 to write docs/screenshots/ on the default scenario)."""
    from playwright.sync_api import expect
    update_docs = os.environ.get("PPD_UPDATE_SCREENSHOTS") == "1"
    sweep_query = "" if update_docs else "?conversations=100"      # keep the 51-run sweep quick in CI
    for path, name, charts in (("", "explore", 3), (f"sweep{sweep_query}", "sweep", 5), ("learn", "learn", 2)):
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.goto(f"{st_server}/{path}")
        _wait_ready(page, charts)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        expect(page.get_by_test_id("stAlert")).to_have_count(0)
        _shot(page, artifacts / f"{name}.png")
        if update_docs:
            _shot(page, DOCS / f"{name}.png")


def test_learn_step_through_and_navigation_keeps_scenario(st_server, page):
    from playwright.sync_api import expect
    page.goto(f"{st_server}/learn?conversations=2&qps=2")
    _wait_ready(page, 2)
    thumb = _thumb(page, "Step through events")
    assert int(thumb.input_value()) == 0                       # Learn opens at event 1
    page.get_by_role("button", name="Next ▶").click()
    expect(thumb).to_have_value("1")
    expect(page).to_have_url(re.compile(r"[?&]learn_step=1(&|$)"))
    expect(page.get_by_text(re.compile(r"Event 2 of \d+"))).to_be_visible()
    # the sidebar page link carries the scenario (minus the Learn page's handful of conversations)
    page.get_by_test_id("stSidebar").get_by_role("link", name="Explore").last.click()
    expect(page.get_by_role("heading", name="Explore a scenario")).to_be_visible()
    expect(page).not_to_have_url(re.compile(r"/learn"))
    _wait_ready(page, 3)
    expect(_thumb(page, "conversation arrival rate")).to_have_value("2")
    sc = ppd_core.parse(page.get_by_test_id("stCode").filter(has_text="http").first.inner_text().strip())
    assert sc == Scenario(qps=2.0)


def test_downloads_csv_json_png(st_server, page, artifacts):
    """Exports of what is on screen: records CSV, summary JSON (the CLI's run --json per system), chart PNG
    rendered by kaleido on click."""
    import json
    query = {"conversations": "40", "seed": "11"}
    page.goto(f"{st_server}/?{_query(query)}")
    _wait_ready(page, 3)
    with page.expect_download() as dl:
        page.get_by_role("button", name=re.compile("Summary \\(JSON\\)")).click()
    payload = json.loads(Path(dl.value.path()).read_text())
    summary = ppd_core.run(ppd_core.parse(query)).summary
    assert payload["systems"]["PPD"]["groups"] == json.loads(json.dumps(summary))["groups"]
    assert set(payload["systems"]) == {"PPD", "PD", "Replica"}
    with page.expect_download() as dl:
        page.get_by_role("button", name=re.compile("records \\(CSV\\)")).click()
    link, head = Path(dl.value.path()).read_text().splitlines()[:2]
    assert link.startswith("# link: http") and "conversations=40" in link
    assert head.startswith("system,layout,policy,conversation,turn,path")
    with page.expect_download(timeout=120_000) as dl:
        page.get_by_test_id("stDownloadButton").filter(has_text="PNG").first.get_by_role("button").click()
    png = Path(dl.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    (artifacts / "download-ttft-cdf.png").write_bytes(png)
