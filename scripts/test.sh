#!/usr/bin/env bash
# One command: install with the test extras and run the whole suite (SQLite unless DATABASE_URL is set).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh "${STEREOSCOPE_EXTRAS:-test}"
exec .venv/bin/python -m pytest "$@"
