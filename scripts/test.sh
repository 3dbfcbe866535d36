#!/usr/bin/env bash
# One command: install with the test extras and run the whole suite (SQLite unless DATABASE_URL is set), on every
# core (pytest-xdist; each xdist worker has its own test database). `scripts/test.sh -n 0` runs it in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh "${STEREOSCOPE_EXTRAS:-test}"
exec .venv/bin/python -m pytest -n auto --dist loadgroup "$@"
