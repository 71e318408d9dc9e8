"""Helpers shared by the browser tests that check the address bar and fuzz the pages."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

SETTLED_JS = """
() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-stale="true"]')
    && !document.querySelector('[data-testid="stSkeleton"], [data-testid="stSkeletonElement"]')
    && !!document.querySelector('[data-testid="stMain"] h1');
}
"""


def settle(page, timeout_ms: int = 120_000, quiet_ms: int = 600) -> None:
    """Wait until the script run is over, nothing is stale and no element still shows its loading skeleton
    (the frontend loads an element's code on first use: a fresh session can finish its run before its metrics
    and sliders are drawn), twice ``quiet_ms`` apart (a rerun the URL sync or a callback started in between is
    waited for too)."""
    for _ in range(2):
        page.wait_for_function(SETTLED_JS, timeout=timeout_ms)
        page.wait_for_timeout(quiet_ms)
    page.wait_for_function(SETTLED_JS, timeout=timeout_ms)


def bar(page) -> dict:
    """The address bar's query as {key: last value}."""
    return dict(parse_qsl(urlsplit(page.url).query, keep_blank_values=True))


def share_link(page) -> str | None:
    codes = page.get_by_test_id("stCode").all_inner_texts()
    return next((t.strip() for t in codes if t.strip().startswith("http")), None)


def link_query(link: str) -> dict:
    return dict(parse_qsl(urlsplit(link).query, keep_blank_values=True))


def path(page) -> str:
    return urlsplit(page.url).path.strip("/")


def alerts(page) -> str:
    return " ".join(page.get_by_test_id("stAlert").all_inner_texts())
