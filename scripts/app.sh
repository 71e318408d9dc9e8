#!/usr/bin/env bash
# The README's run command: set everything up, then serve the app on its default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m streamlit run app.py "$@"
