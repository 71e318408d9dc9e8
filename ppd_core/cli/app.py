"""``ppd app [--port N] [--address A]``: serve the dashboard with ``streamlit run``.

The dashboard is the installed wheel's ``ppd_core/dashboard/app.py`` (or, in a checkout, the repository's
``app.py``: ``ppd_core.config.paths.DASHBOARD_DIR``), with its ``.streamlit/config.toml`` beside it. Streamlit is
not imported here (ppd_core never imports it): this process becomes ``python -m streamlit run …``, so signals
(Ctrl-C, ``docker stop``) reach the server directly.
"""
from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import os
import re
import sys

from ..config.errors import PPDError
from ..config.paths import DASHBOARD_DIR

NAME = "app"
DEFAULT_PORT = 8501
DEFAULT_ADDRESS = "127.0.0.1"
# the dashboard's own packages: the `app` extra of pyproject.toml
NEEDS = ("streamlit", "plotly")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "app", help="serve the dashboard (streamlit run) on a port",
        description="Serve the PPD Explorer dashboard with `streamlit run` until stopped (Ctrl-C).\n"
                    "Needs the dashboard's packages: pip install 'ppd-explorer[app]'.\n"
                    "Share links use the address the browser shows; set PPD_PUBLIC_URL (e.g.\n"
                    "https://ppd.example.org/) to hand out another one, e.g. behind a reverse proxy.\n"
                    "Other Streamlit options come from STREAMLIT_* environment variables\n"
                    "(e.g. STREAMLIT_SERVER_BASE_URL_PATH=ppd).",
        epilog="examples:\n  ppd app                               # http://127.0.0.1:8501\n"
               "  ppd app --port 8600 --address 0.0.0.0 # every interface (as the container does)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N",
                   help=f"TCP port to listen on, 1-65535 (default {DEFAULT_PORT})")
    p.add_argument("--address", default=DEFAULT_ADDRESS, metavar="A",
                   help=f"address to listen on: an IP address or host name (default {DEFAULT_ADDRESS}, this "
                        "machine only; 0.0.0.0 for every interface)")


def check_address(address: str) -> str:
    """The address if it is an IP address or a host name, else ``PPDError`` saying what is allowed."""
    try:
        ipaddress.ip_address(address)
        return address
    except ValueError:
        pass
    if _HOSTNAME.match(address):
        return address
    raise PPDError(f"--address: {address[:60]!r} is not an IP address or host name (e.g. 127.0.0.1, 0.0.0.0, "
                   "localhost)")


def streamlit_command(port: int, address: str) -> list[str]:
    """The ``python -m streamlit run`` command line that serves the dashboard (checked arguments)."""
    if not 1 <= port <= 65535:
        raise PPDError(f"--port: {port} is out of range; must be an integer in [1, 65535]")
    address = check_address(address)
    script = DASHBOARD_DIR / "app.py"
    if not script.is_file():
        raise PPDError(f"the dashboard is not installed here: {script} is missing (build the wheel with "
                       "python -m build --wheel, or run from a checkout)")
    return [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
            "--server.address", address, "--server.headless", "true"]


def handle(args) -> int:
    cmd = streamlit_command(args.port, args.address)
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise PPDError(f"the dashboard needs {', '.join(missing)}, which this Python lacks: "
                       "pip install 'ppd-explorer[app]'")
    host = f"[{args.address}]" if ":" in args.address else args.address
    print(f"serving {cmd[4]} on http://{host}:{args.port} (stop with Ctrl-C)", file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    os.execv(sys.executable, cmd)
    return 0                            # not reached: execv replaces this process
