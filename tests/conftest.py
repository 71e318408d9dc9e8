"""Shared fixtures: a Streamlit server on a free port, Playwright on Debian's Chromium, cache isolation.

Browser tests are marked ``@pytest.mark.browser``. Without Chromium they skip locally but FAIL in CI (``CI``
set). Playwright never downloads a browser here: it drives ``/usr/bin/chromium`` via ``executable_path``.
"""
from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run"]

logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").setLevel(logging.ERROR)
logging.getLogger("streamlit.runtime.caching.cache_data_api").setLevel(logging.ERROR)


def pytest_configure(config):
    # The suite runs the pure-Python engine, the reference: its test doubles (tests/helpers.py) subclass engine
    # classes, which mypyc-compiled classes forbid; tests/test_compiled.py runs the golden outputs through the
    # compiled build (ppd_core/config/accel.py). Set here, before any test module imports ppd_core, and only
    # under pytest: the benchmark scripts that import this file's helpers measure the engine users get.
    os.environ.setdefault("PPD_COMPILED", "0")
    config.addinivalue_line("markers", "browser: drives the real app in Debian's Chromium via Playwright")


@pytest.fixture(autouse=True)
def _clear_st_caches():
    """st.cache_data is process-global: clear it so every test starts uncached (only if Streamlit is loaded)."""
    if "streamlit" in sys.modules:
        import streamlit as st
        st.cache_data.clear()
        st.cache_resource.clear()
    yield


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(log_path: Path, port: int | None = None,
                 extra_args: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    """Start ``streamlit run app.py`` on a free port and wait for /_stcore/health. Returns (process, url).
    ``extra_args``: more ``streamlit run`` options (e.g. ``--server.disconnectedSessionTTL=2``)."""
    port = port or _free_port()
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless=true",
         "--server.address=127.0.0.1", f"--server.port={port}", "--browser.gatherUsageStats=false",
         "--server.fileWatcherType=none", *extra_args],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            log.close()
            raise RuntimeError(f"streamlit exited rc={proc.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200 and r.read().strip() == b"ok":
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_server(proc)
            log.close()
            raise TimeoutError(f"streamlit not healthy after 60 s; see {log_path}")
        time.sleep(0.2)
    proc._ppd_log = log  # closed by stop_server
    return proc, url


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log = getattr(proc, "_ppd_log", None)
    if log is not None:
        log.close()


def chromium_or_fail() -> str:
    """Path of Chromium; skip without it locally, fail in CI."""
    if not os.path.exists(CHROMIUM):
        msg = f"{CHROMIUM} missing: apt-get install -y chromium (or set CHROMIUM_PATH)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return CHROMIUM


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def st_server(artifacts):
    proc, url = start_server(artifacts / "streamlit-test-server.log")
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture(scope="session")
def browser():
    path = chromium_or_fail()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)          # 2-core CI: generous
    try:
        yield pg
    finally:
        ctx.close()


@pytest.fixture
def in_process_runs(monkeypatch):
    """AppTest runs the pages in this process: simulate here too, no worker pool."""
    monkeypatch.setenv("PPD_DASHBOARD_WORKERS", "0")


def open_app(query: dict | None = None, page: str | None = None, timeout: float = 120):
    """A fresh AppTest session opened on ``page`` with ``query`` in the URL (like opening a shared link);
    fails on any exception the page raised."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    if page:
        at.switch_page(page)    # before the first run: the page's url_path equals its file name
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at
