#!/usr/bin/env bash
# One command: install with the test extras and run the whole suite (SQLite unless DATABASE_URL is set) in parallel:
# pytest-xdist with one worker more than there are cores (the browser and worker-process tests spend much of their
# time waiting), each with its own test database. `scripts/test.sh -n 0` runs it in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh "${STEREOSCOPE_EXTRAS:-test}"
# Keep bytecode caches even where the environment turns them off (PYTHONDONTWRITEBYTECODE): otherwise every xdist
# worker rewrites every test module's asserts again, and every worker process the tests start compiles the project.
unset PYTHONDONTWRITEBYTECODE
exec .venv/bin/python -m pytest -n "$(($(nproc) + 1))" --dist loadgroup "$@"
