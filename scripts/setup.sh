#!/usr/bin/env bash
# Set up everything on a fresh Debian machine: Chromium (browser tests, PNG export) and a venv with pinned packages.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian chromium (browser tests and PNG export)..."
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v "is ignored" || true
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt 2>&1 | grep -v "is ignored" || true
.venv/bin/python -c "import streamlit, plotly, pandas, numpy, simpy, scipy, pyarrow, dask, distributed, playwright, hypothesis" \
  || { echo "setup failed: packages missing"; exit 1; }
# bytecode for the project's own modules: with PYTHONDONTWRITEBYTECODE set (as on these machines) Python never
# writes it, and every process (CLI run, dashboard worker) would compile ~200 KB of sources again (~30 ms CPU)
.venv/bin/python -m compileall -q ppd_core ui pages app.py >/dev/null
# the compiled engine (mypyc, ~3x faster runs; scripts/build_engine.py). Optional: if it cannot be built, the
# pure-Python engine runs and the app says nothing different (ppd_core/config/accel.py)
if ! .venv/bin/python scripts/build_engine.py; then
  echo "compiled engine not built: the pure-Python engine will run (slower, same numbers)"
fi
