"""Screenshots of the Advisor, Paper and Validation pages for the README (docs/screenshots/).

Starts its own streamlit server on a free loopback port, drives Debian's Chromium with Playwright, waits
until each page's script has finished (the Advisor shows its form until you press Rank), and writes one full-page PNG per page. (Explore, Sweep and Learn
are written by tests/test_browser.py with PPD_UPDATE_SCREENSHOTS=1.)
Usage: .venv/bin/python scripts/screenshots.py
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PAGES = (("advise", "advise"), ("paper", "paper"), ("validation", "validation"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    from playwright.sync_api import sync_playwright
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
                             "--server.address=127.0.0.1", f"--server.port={port}",
                             "--browser.gatherUsageStats=false"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                time.sleep(0.2)
        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url + "/")       # the entry page registers st.navigation first
            page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=180_000)
            for path, name in PAGES:
                page.goto(f"{url}/{path}")
                time.sleep(3)
                page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=300_000)
                time.sleep(2)
                page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
                print(f"wrote {OUT / (name + '.png')}")
            small = browser.new_page(viewport={"width": 1280, "height": 720})     # a projector: the fold
            small.goto(url + "/")
            time.sleep(3)
            small.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=300_000)
            small.wait_for_selector(".js-plotly-plot .main-svg", timeout=300_000)
            time.sleep(2)
            small.screenshot(path=str(OUT / "explore-1280x720.png"))
            print(f"wrote {OUT / 'explore-1280x720.png'}")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
