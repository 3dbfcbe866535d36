#!/usr/bin/env bash
# One command: install, migrate, load the built-ins, create the admin (printed once), start web + worker.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py load_builtin
.venv/bin/python manage.py ensure_admin
.venv/bin/python manage.py ensure_connections
exec .venv/bin/python manage.py serve "$@"
