#!/usr/bin/env bash
# The README's test command: set everything up, then run the whole suite (browser tests included).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
rc=$?
[ $rc -eq 5 ] && { echo "no tests collected"; exit 1; }
exit $rc
