"""The package and the container (issue #30): the wheel carries the compiled engine and the dashboard, installs
into a fresh venv, runs at compiled speed with the checkout's numbers, and serves the dashboard with ``ppd app``;
the container image builds and passes its healthcheck (when a Docker daemon answers).

The tests marked ``package`` build the wheel once for the module (``python -m build --wheel`` with build
isolation, so PyPI must be reachable) and install it with its ``app`` extra into a fresh venv: about a minute
or two in all. The others are quick checks of the same code paths in the checkout.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest

from ppd_core.config import accel

from helpers import strip_wall

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ("layout=2P_2pD", "conversations=20")
IMAGE = "ppd-explorer:test"


def _env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH into the checkout, no PPD_COMPILED (the suite's 0)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", accel.ENV, "PPD_PUBLIC_URL")}
    return {**env, **extra}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode().strip()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace").strip()


def _wait_ok(url: str, proc: subprocess.Popen | None, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the server exited with status {proc.returncode} before {url} answered")
        try:
            if _get(url, timeout=2) == (200, "ok"):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer 'ok' within {seconds:g} s")
        time.sleep(0.3)


# ------------------------------------------------------------------------------------- quick, in the checkout

def _requirement_pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        spec = line.split("#", 1)[0].strip()
        if spec:
            name, _, version = spec.partition("==")
            assert version, f"{spec!r}: the build requirements are exact pins"
            pins[name.strip().lower()] = version.strip()
    return pins


def test_build_system_pins_are_requirements_build_pins():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    backend = _requirement_pins(conf["build-system"]["requires"])
    checkout = _requirement_pins((ROOT / "requirements-build.txt").read_text().splitlines())
    assert backend and set(backend) <= set(checkout), (backend, checkout)
    assert {k: checkout[k] for k in backend} == backend
    assert {"mypy", "setuptools"} <= set(backend)


def test_one_list_of_compiled_modules():
    """setup.py and scripts/build_engine.py compile accel.COMPILED: neither holds a list of its own."""
    setup_py = (ROOT / "setup.py").read_text()
    assert "accel.COMPILED" in setup_py and "ppd_core/sim/engine.py" not in setup_py
    script = (ROOT / "scripts" / "build_engine.py").read_text()
    assert "mypycify(" not in script and "engine_extensions(" in script and "ppd_core/sim/" not in script


def test_version_names_the_engine():
    for value, engine in (("0", "python"), ("1", "compiled")):
        if value == "1" and accel.build_problem():
            continue                    # no checkout build here: only the reference engine to name
        r = subprocess.run([sys.executable, "-m", "ppd_core", "--version"], cwd=ROOT, capture_output=True, text=True,
                           env=_env(**{accel.ENV: value, "PYTHONPATH": str(ROOT)}), timeout=60)
        assert r.returncode == 0, r.stderr
        assert re.fullmatch(rf"ppd-explorer \S.*, engine {engine} \(PPD_COMPILED={value}.*\)\n", r.stdout), r.stdout


@pytest.mark.parametrize("args, message", [
    (["--port", "0"], "error: --port: 0 is out of range; must be an integer in [1, 65535]"),
    (["--port", "70000"], "error: --port: 70000 is out of range; must be an integer in [1, 65535]"),
    (["--port", "x"], "error: argument --port: invalid int value: 'x'"),
    (["--address", "a b"], "error: --address: 'a b' is not an IP address or host name"),
    (["--address", "bad_host!"], "error: --address: 'bad_host!' is not an IP address or host name"),
    (["--address="], "error: --address: '' is not an IP address or host name"),
    (["--nope"], "error: unrecognized arguments: --nope"),
])
def test_app_bad_argument_is_one_line_and_status_2(args, message):
    r = subprocess.run([sys.executable, "-m", "ppd_core", "app", *args], cwd=ROOT, capture_output=True, text=True,
                       env=_env(PYTHONPATH=str(ROOT)), timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(message), r.stderr


def test_app_help_names_its_options_and_the_public_url():
    r = subprocess.run([sys.executable, "-m", "ppd_core", "app", "--help"], cwd=ROOT, capture_output=True,
                       text=True, env=_env(PYTHONPATH=str(ROOT)), timeout=60)
    assert r.returncode == 0
    assert "--port N" in r.stdout and "--address A" in r.stdout and "PPD_PUBLIC_URL" in r.stdout


def test_app_command_serves_this_checkouts_dashboard():
    from ppd_core.cli.app import streamlit_command
    cmd = streamlit_command(8600, "0.0.0.0")
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"] and Path(cmd[4]) == ROOT / "app.py"
    assert cmd[5:9] == ["--server.port", "8600", "--server.address", "0.0.0.0"]
    assert streamlit_command(1, "::1")[8] == "::1" and streamlit_command(65535, "ppd.example.org")[6] == "65535"


@pytest.mark.parametrize("raw, base", [
    ("https://ppd.example.org/", "https://ppd.example.org"),
    ("http://10.0.0.5:8501/ppd/", "http://10.0.0.5:8501/ppd"),
    ("  https://ppd.example.org  ", "https://ppd.example.org"),
    ("http://[::1]:8501", "http://[::1]:8501"),
])
def test_public_url_sets_the_base_of_share_links(monkeypatch, raw, base):
    from ui import urlstate
    monkeypatch.setenv(urlstate.PUBLIC_URL_ENV, raw)
    assert urlstate.public_base(raw) == base
    assert urlstate.link("sweep", {"qps": "2", "layout": "2P_2D"}) == f"{base}/sweep?qps=2&layout=2P_2D"
    assert urlstate.link("", {}) == f"{base}/"


@pytest.mark.parametrize("raw, why", [
    ("ftp://ppd.example.org/", "must start with http:// or https://"),
    ("ppd.example.org", "must start with http:// or https://"),
    ("https://", "names no host"),
    ("https://user:secret@ppd.example.org/", "must not carry a user name or password"),
    ("https://ppd.example.org/?embed=true", "must not carry a query"),
    ("https://ppd.example.org/#top", "must not carry a query"),
    ("https://ppd.example.org:99999/", "is not a URL"),
    ("https://ppd example.org/", "contains white space"),
])
def test_bad_public_url_is_one_log_line_and_ignored(monkeypatch, caplog, raw, why):
    from ui import urlstate
    urlstate.public_base.cache_clear()
    monkeypatch.setenv(urlstate.PUBLIC_URL_ENV, raw)
    with caplog.at_level(logging.WARNING, logger=urlstate.__name__):
        first = urlstate.link("learn", {"qps": "2"})
        second = urlstate.link("", {})
    assert first == "http://localhost:8501/learn?qps=2" and second == "http://localhost:8501/"   # the fallback
    lines = [r.getMessage() for r in caplog.records if r.name == urlstate.__name__]
    assert len(lines) == 1, lines                                        # once per process, not per link
    assert lines[0].startswith("PPD_PUBLIC_URL=") and "is ignored" in lines[0] and why in lines[0], lines[0]
    assert "\n" not in lines[0]


def test_unset_or_blank_public_url_uses_the_browser_address(monkeypatch):
    from ui import urlstate
    monkeypatch.delenv(urlstate.PUBLIC_URL_ENV, raising=False)
    assert urlstate.public_base(None) is None and urlstate.public_base("  ") is None
    assert urlstate.link("paper", {}) == "http://localhost:8501/paper"


# ---------------------------------------------------------------------------- the wheel in a fresh venv

@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built once from a copy of the repository's files (tracked or not ignored), so the build
    leaves nothing in the checkout and sees no local build output."""
    tmp = tmp_path_factory.mktemp("wheel")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    src = tmp / "src"
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp / "dist"), str(src)],
                       capture_output=True, text=True, timeout=600, env=_env())
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    wheels = sorted((tmp / "dist").glob("*.whl"))
    assert len(wheels) == 1, wheels
    print(f"wheel {wheels[0].name}: {wheels[0].stat().st_size / 1e6:.2f} MB, built in {time.monotonic() - t0:.0f} s")
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and its `app` extra (at the versions requirements.txt pins): its bin/."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    r = subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "-c", str(ROOT / "requirements.txt"), f"{wheel}[app]"],
                       capture_output=True, text=True, timeout=600, env=_env())
    assert r.returncode == 0, r.stderr[-3000:]
    return where / "bin"


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """A working directory outside the repository (and a home of its own: caches, Streamlit's files)."""
    return tmp_path_factory.mktemp("outside")


@pytest.mark.package
def test_wheel_carries_the_compiled_engine_and_the_dashboard(wheel):
    assert re.fullmatch(r"ppd_explorer-[\w.]+-cp3\d+-cp3\d+-linux_\w+\.whl", wheel.name), wheel.name   # platform
    names = set(zipfile.ZipFile(wheel).namelist())
    build = f"ppd_core/{accel.WHEEL_BUILD}/"
    for rel in accel.COMPILED:
        stem = rel[:-3]
        assert any(re.fullmatch(rf"{re.escape(build + stem)}\.cpython-3\d+-[\w-]+\.so", n) for n in names), stem
        assert rel in names                                       # the reference source beside it
    assert any(re.fullmatch(rf"{re.escape(build)}\w+__mypyc\.cpython-3\d+-[\w-]+\.so", n) for n in names)
    assert build + accel.DIGEST_FILE in names
    stray = [n for n in names if n.endswith(".so") and not n.startswith(build)]
    assert not stray, stray                                      # no extension shadows its .py file
    dash = "ppd_core/dashboard/"
    assert {dash + "app.py", dash + ".streamlit/config.toml"} <= names
    for folder in ("pages", "ui"):
        want = {f"{dash}{p.relative_to(ROOT).as_posix()}" for p in (ROOT / folder).glob("*.py")}
        assert want and want == {n for n in names if n.startswith(f"{dash}{folder}/")}, folder
    want = {f"ppd_core/data/{p.name}" for p in (ROOT / "data").glob("*.json")}
    assert want and want <= names
    with zipfile.ZipFile(wheel) as z:
        digest = z.read(build + accel.DIGEST_FILE).decode().strip()
        assert digest == accel.sources_digest()                  # built from exactly these sources
        assert z.read(dash + "app.py") == (ROOT / "app.py").read_bytes()


@pytest.mark.package
def test_installed_run_is_compiled_and_equals_the_checkout(venv, outside):
    env = _env(HOME=str(outside), XDG_CACHE_HOME=str(outside / "cache"))
    r = subprocess.run([str(venv / "ppd"), "--version"], cwd=outside, capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    site = str(venv.parent / "lib")
    assert re.fullmatch(rf"ppd-explorer [\d.]+, engine compiled \(PPD_COMPILED=auto, build {re.escape(site)}/\S+"
                        rf"/ppd_core/{accel.WHEEL_BUILD}\)\n", r.stdout), r.stdout
    runs = {}
    for value in ("auto", "0"):          # the wheel's compiled engine, and its pure-Python reference
        r = subprocess.run([str(venv / "ppd"), "run", *SCENARIO, "--json"], cwd=outside, capture_output=True,
                           text=True, env={**env, accel.ENV: value}, timeout=120)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        runs[value] = strip_wall(json.loads(r.stdout))
    probe = subprocess.run([str(venv / "python"), "-c", "import ppd_core.sim.engine as e; print(e.__file__)"],
                           cwd=outside, capture_output=True, text=True, env=env, timeout=60)
    assert f"/ppd_core/{accel.WHEEL_BUILD}/ppd_core/sim/engine." in probe.stdout and probe.stdout.strip().endswith(".so")
    # the checkout, in this (pure-Python) process: the reference every engine must equal byte for byte
    import ppd_core
    from ppd_core import Scenario
    reference = strip_wall(ppd_core.run(Scenario(layout="2P_2pD", conversations=20)).summary)
    assert runs["auto"] == reference
    assert runs["0"] == reference


@pytest.mark.package
def test_installed_app_answers_health_and_stops_cleanly(venv, outside):
    port = _free_port()
    log_path = outside / f"app-{port}.log"
    env = _env(HOME=str(outside), XDG_CACHE_HOME=str(outside / "cache"), PPD_PUBLIC_URL="ftp://not-http.example",
               STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED="true")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([str(venv / "ppd"), "app", "--port", str(port)], cwd=outside, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_ok(base + "/_stcore/health", proc, 90)
            # the script check runs app.py and the default page (Explore, a simulation and its share link)
            # in the server: 200 only if the installed dashboard imports and renders without an exception
            status, body = _get(base + "/_stcore/script-health-check", timeout=120)
            assert (status, body) == (200, "ok"), (status, body, log_path.read_text()[-3000:])
        finally:
            proc.terminate()
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise AssertionError("ppd app did not stop within 20 s of SIGTERM")
    text = log_path.read_text()
    assert rc == 0, (rc, text[-3000:])
    assert "Traceback" not in text, text[-3000:]
    served = str(venv.parent / "lib")
    assert re.search(rf"serving {re.escape(served)}/\S+/ppd_core/dashboard/app\.py on http://127\.0\.0\.1:{port}",
                     text), text[:1000]
    bad = [line for line in text.splitlines() if "PPD_PUBLIC_URL=" in line]
    assert len(bad) == 1 and "is ignored: it must start with http:// or https://" in bad[0], bad


# ------------------------------------------------------------------------------------------ the container

def _docker_daemon() -> str | None:
    """Why no Docker daemon can be used (None: `docker info` answered)."""
    if shutil.which("docker") is None:
        return "no Docker daemon is reachable: the docker command is not installed"
    try:
        r = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                           timeout=30)
    except subprocess.TimeoutExpired:
        return "no Docker daemon is reachable: `docker info` did not answer within 30 s"
    if r.returncode != 0:
        return f"no Docker daemon is reachable: `docker info` failed ({(r.stderr.strip().splitlines() or ['?'])[-1]})"
    return None


@pytest.mark.package
def test_container_builds_and_passes_its_healthcheck():
    why = _docker_daemon()
    if why:
        pytest.skip(why)
    r = subprocess.run(["docker", "build", "-t", IMAGE, str(ROOT)], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-4000:]
    port = _free_port()
    name = f"ppd-explorer-test-{port}"
    r = subprocess.run(["docker", "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:8501", IMAGE],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    try:
        deadline, health = time.monotonic() + 120, ""
        while time.monotonic() < deadline:
            health = subprocess.run(["docker", "inspect", "--format", "{{.State.Health.Status}}", name],
                                    capture_output=True, text=True, timeout=30).stdout.strip()
            if health in ("healthy", "unhealthy"):
                break
            time.sleep(2)
        assert health == "healthy", subprocess.run(["docker", "logs", name], capture_output=True, text=True).stdout
        assert _get(f"http://127.0.0.1:{port}/_stcore/health") == (200, "ok")
        user = subprocess.run(["docker", "exec", name, "id", "-u"], capture_output=True, text=True, timeout=30)
        assert user.stdout.strip() not in ("", "0")                # not root
        version = subprocess.run(["docker", "exec", name, "ppd", "--version"], capture_output=True, text=True,
                                 timeout=60)
        assert "engine compiled" in version.stdout, version.stdout + version.stderr
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
