#!/usr/bin/env bash
# One command: install, migrate, load the built-ins, create the admin (printed once), start web + worker.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh
.venv/bin/python manage.py setup   # migrate, load_builtin, ensure_admin, ensure_connections: one process
exec .venv/bin/python manage.py serve "$@"
