"""Screenshots of the pages for the README (docs/screenshots/) and for looking at the pages as a user would.

Starts its own streamlit server on a free loopback port (or uses ``--url`` of a running one), drives Debian's
Chromium with Playwright, waits until each page's script has finished, and writes:

* at 1400x1000, the whole page (the viewport grown to the page's height): Explore with its goodput computed,
  Sweep, the Advisor ranked by goodput per dollar over two GPU types, Learn, Paper, Validation;
* at 1280x720 (a projector), the fold of Explore (docs/screenshots/explore-1280x720.png), and of Sweep and the
  Advisor (artifacts/screenshots/, for checking only).

Usage: .venv/bin/python scripts/screenshots.py [--url http://127.0.0.1:8765] [--only explore,sweep,advise]
"""
from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHECK = ROOT / "artifacts" / "screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ADVISOR = "advise?adv_rank=goodput_per_usd&adv_gpu_types=H100-SXM,A100-80GB&adv_convs=100&adv_qps=4,8,16"
#: (name, path, charts to wait for, button to press first or None)
PAGES = (("explore", "", 4, "Compute goodput"), ("sweep", "sweep", 5, None), ("advise", ADVISOR, 1, "Run advisor"),
         ("learn", "learn", 2, None), ("paper", "paper", 1, None), ("validation", "validation", 0, None))
SMALL = ("explore", "sweep", "advise")
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str) -> None:
    for _ in range(300):
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} not healthy")


def settle(page, charts: int) -> None:
    time.sleep(2)
    page.wait_for_selector(IDLE, timeout=900_000)
    if charts:
        page.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
                               arg=charts, timeout=900_000)
    time.sleep(2)
    page.wait_for_selector(IDLE, timeout=900_000)


def open_page(page, url: str, path: str, charts: int, button: str | None) -> None:
    page.goto(f"{url}/{path}")
    settle(page, 0 if button else charts)
    if button:
        btn = page.get_by_role("button", name=re.compile(button))
        if btn.count():
            btn.first.click()
            settle(page, charts)
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")


def whole(page, path: Path) -> None:
    """The whole app: Streamlit scrolls inside its main container, so grow the viewport to its height."""
    h = page.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"], "
                      "[data-testid=\"stSidebarContent\"]')].map(e => e.scrollHeight), 1000)")
    page.set_viewport_size({"width": 1400, "height": min(int(h) + 40, 7000)})
    time.sleep(1.5)                       # let Plotly relayout to the new size
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a running server (default: start one)")
    ap.add_argument("--only", default="", help="comma-separated page names")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    from playwright.sync_api import sync_playwright
    proc = None
    url = args.url
    if not url:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
                                 "--server.address=127.0.0.1", f"--server.port={port}",
                                 "--browser.gatherUsageStats=false"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        OUT.mkdir(parents=True, exist_ok=True)
        CHECK.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
            for w, h in ((1400, 1000), (1280, 720)):
                page = browser.new_page(viewport={"width": w, "height": h})
                page.set_default_timeout(900_000)
                page.goto(url + "/")       # the entry page registers st.navigation first
                page.wait_for_selector(IDLE, timeout=300_000)
                for name, path, charts, button in PAGES:
                    if (only and name not in only) or (w == 1280 and name not in SMALL):
                        continue
                    open_page(page, url, path, charts, button)
                    if w == 1400:
                        out = OUT / f"{name}.png"
                        whole(page, out)
                    else:
                        out = (OUT if name == "explore" else CHECK) / f"{name}-1280x720.png"
                        page.screenshot(path=str(out))
                    print(f"wrote {out}")
                page.close()
            browser.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
